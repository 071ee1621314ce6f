/*
 * par.h -- a part of a job on a thread of its own, or later on the caller's.
 *
 * The start-up passes over rows in memory split their work in fixed parts
 * (halves of the pages, one pilot chain each), run one part on the calling
 * thread while another runs on a thread started for it, and combine the
 * parts' results in a fixed order, so the results do not depend on how
 * the threads were scheduled.  When no thread can be started (resource
 * limits), the part runs on the calling thread at fly_par_join instead:
 * slower, the same results.
 *
 *   fly_par p;
 *   fly_par_start(&p, fn, &second);   // fn(&second) begins, on a new thread
 *   fn(&first);                       // the caller's part meanwhile
 *   fly_par_join(&p);                 // fn(&second) has returned
 *
 * fn's return value is ignored: a part reports through its argument.  A
 * started part must be joined exactly once before its argument goes away.
 */
#ifndef FLY_PAR_H
#define FLY_PAR_H

#include <pthread.h>

typedef struct fly_par {
  pthread_t th;
  int       started;            /* on a thread of its own */
  void   *(*fn)(void *);
  void     *arg;
} fly_par;

/* Run fn(arg) on a new thread, or record it for fly_par_join to run. */
void fly_par_start(fly_par *p, void *(*fn)(void *), void *arg);

/* Wait for fn(arg) to return, running it here if no thread was started. */
void fly_par_join(fly_par *p);

#endif
