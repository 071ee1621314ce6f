/*
 * progress.c -- terminal progress line (see progress.h).  Quiet when stderr
 * is not a TTY, so logs and CI output stay clean.
 */
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

double fly_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fly_progress_start(fly_progress *p)
{
  const char *off = getenv("FLYDB_NO_PROGRESS");
  p->on = isatty(STDERR_FILENO) && !(off && *off);
  p->t0 = p->last = fly_now();
  p->drawn = 0;
}

int fly_progress_due(fly_progress *p)
{
  if( !p->on ) return 0;
  double t = fly_now();
  if( t - p->last < 0.125 ) return 0;
  p->last = t;
  return 1;
}

void fly_progress_draw(fly_progress *p, const char *fmt, ...)
{
  char line[200];
  va_list ap;
  if( !p->on ) return;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r\033[K%s  [%.0fs]", line, fly_now() - p->t0);
  fflush(stderr);
  p->drawn = 1;
}

void fly_progress_end(fly_progress *p)
{
  if( p->on && p->drawn ){
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
  p->drawn = 0;
}
