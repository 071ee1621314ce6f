/*
 * progress.h -- a one-line progress display on stderr, drawn only when
 * stderr is a terminal and at most ~8 times a second.
 */
#ifndef FLY_PROGRESS_H
#define FLY_PROGRESS_H

#include <stdint.h>

typedef struct fly_progress {
  int    on;        /* stderr is a TTY and not disabled */
  double t0;        /* start, seconds */
  double last;      /* last draw, seconds */
  int    drawn;     /* something is on the line */
} fly_progress;

double fly_now(void);                         /* monotonic seconds */
void   fly_progress_start(fly_progress *p);
/* 1 if it is time to redraw (cheap to call in a loop). */
int    fly_progress_due(fly_progress *p);
/* Redraw the line with printf-style text (adds elapsed time). */
void   fly_progress_draw(fly_progress *p, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
/* Clear the line. */
void   fly_progress_end(fly_progress *p);

#endif
