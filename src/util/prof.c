/*
 * prof.c -- starting, stopping and naming the parts of a profile (see
 * prof.h; push and pop are inline there).
 */
#include "util/prof.h"

#include <string.h>

void fly_prof_start(fly_prof *p)
{
  memset(p, 0, sizeof *p);
  p->stack[0] = FLY_PROF_OTHER;
  p->mark = fly_prof_now();
  p->on = 1;
}

void fly_prof_stop(fly_prof *p)
{
  if( !p->on ) return;
  fly_prof_charge(p);
  p->depth = 0;
  p->on = 0;
}

const char *fly_prof_name(fly_prof_part part)
{
  static const char *const names[FLY_PROF_N] = {
    "other", "theta", "z", "read", "decode", "write" };
  return (unsigned)part < FLY_PROF_N ? names[part] : "?";
}

double fly_prof_total(const fly_prof *p)
{
  double s = 0;
  for(int i = 0; i < FLY_PROF_N; i++) s += p->t[i];
  return s;
}
