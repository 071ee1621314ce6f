/*
 * par.c -- a part of a job on a thread of its own (see par.h).
 */
#include "util/par.h"

void fly_par_start(fly_par *p, void *(*fn)(void *), void *arg)
{
  p->fn = fn;
  p->arg = arg;
  p->started = pthread_create(&p->th, NULL, fn, arg) == 0;
}

void fly_par_join(fly_par *p)
{
  if( p->started ) pthread_join(p->th, NULL);
  else p->fn(p->arg);
  p->started = 0;
}
