/*
 * test_par.c -- util/par.h: a started part runs once, on a thread other
 * than the caller's, and has returned when fly_par_join does; a part
 * recorded without a thread (as when pthread_create fails) runs at the
 * join, on the caller's thread.
 */
#include "util/par.h"

#include <stdatomic.h>
#include <string.h>

#include "tap.h"

typedef struct part {
  atomic_int runs;
  pthread_t  who;
  int        done;        /* set last: the join must see it */
} part;

static void *run(void *u)
{
  part *p = u;
  atomic_fetch_add(&p->runs, 1);
  p->who = pthread_self();
  p->done = 1;
  return NULL;
}

int main(void)
{
  part a, b;
  fly_par par;
  int ok = 1, other = 1;

  for(int i = 0; i < 200 && ok; i++){
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    fly_par_start(&par, run, &b);
    run(&a);
    fly_par_join(&par);
    ok = atomic_load(&a.runs) == 1 && atomic_load(&b.runs) == 1 && b.done;
    other &= !par.started && (pthread_equal(b.who, pthread_self()) == 0);
  }
  TAP_OK(ok, "200 start/join pairs: each part ran once and had returned at the join");
  TAP_OK(other, "the started part ran on a thread of its own");

  /* no thread: the part runs at the join, here */
  memset(&b, 0, sizeof b);
  par = (fly_par){ .started = 0, .fn = run, .arg = &b };
  TAP_OK(atomic_load(&b.runs) == 0, "a part without a thread has not run before the join");
  fly_par_join(&par);
  TAP_OK(atomic_load(&b.runs) == 1 && pthread_equal(b.who, pthread_self()),
         "it runs at the join, on the caller's thread");
  return tap_done();
}
