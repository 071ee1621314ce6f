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
#include <stdint.h>

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

/*
 * Parts of a job taken from a shared counter, their results combined in
 * part order.
 *
 * Fixed halves leave one thread waiting whenever the other is held up
 * (another process, a page fault); parts taken one at a time do not, and
 * combining each part's results in part order keeps the sums' bits
 * independent of which thread ran which part.  The calling thread is one
 * of the `threads`; between its parts it hands the finished ones, in
 * order, to `done` (so work that must be serial, such as inserting the
 * parts' pages in order, overlaps the other threads' parts), and after
 * the last it waits for and hands over the rest.
 *
 *   part(arg, i, t)  computes part i (0 <= i < n) on thread t (0: the
 *                    caller, 1 .. threads-1: threads started for the job,
 *                    so per-thread buffers can be indexed by t); 0 on
 *                    success; non-zero stops the job: no part is started
 *                    after it;
 *   done(arg, i)     on the calling thread, for i = 0, 1, ... in order,
 *                    once part i and every part before it has returned 0,
 *                    and not after any failure; may be NULL; non-zero
 *                    stops the job as part does.
 *
 * Returns 0 when every part and done returned 0, else 1 + the index of
 * the first part (in part order) that failed or whose done failed; every
 * started part has returned by then.  When no thread can be started, or
 * the per-part flags cannot be allocated, the caller runs every part and
 * done in order: slower, the same results.
 */
typedef struct fly_par_job {
  int64_t n;
  int   (*part)(void *arg, int64_t i, int thread);
  int   (*done)(void *arg, int64_t i);
  void   *arg;
} fly_par_job;

#define FLY_PAR_MAX_THREADS 16

int64_t fly_par_run(const fly_par_job *job, int threads);

#endif
