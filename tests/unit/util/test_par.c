/*
 * test_par.c -- util/par.h: a started part runs once, on a thread other
 * than the caller's, and has returned when fly_par_join does; a part
 * recorded without a thread (as when pthread_create fails) runs at the
 * join, on the caller's thread.  fly_par_run: every part runs once, done
 * sees them in order and only finished, the sums combined in order have
 * the same bits on 1 and 2 threads, and a failing part or done stops the
 * job with its index.
 */
#include "util/par.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

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

/* ---- fly_par_run ---- */
enum { NPARTS = 600 };

typedef struct job {
  atomic_int runs[NPARTS];
  int        finished[NPARTS];   /* set by the part, read by done */
  int        thread[NPARTS];
  double     partial[NPARTS];
  double     sum;
  int64_t    next_done;          /* the part done expects next */
  int        order_ok, fail_part, fail_done;
  int        wait_other;         /* the caller's first part waits for the other thread */
  atomic_int other_began;
} job;

static int part_fn(void *u, int64_t i, int t)
{
  job *j = u;
  atomic_fetch_add(&j->runs[i], 1);
  if( t == 1 ) atomic_store(&j->other_began, 1);
  /* on a loaded machine the started thread may be scheduled only after the
   * caller has taken every part: the caller's first part waits for it
   * (up to 2 s), so "the started thread ran parts" tests fly_par_run, not
   * the scheduler */
  if( t == 0 && j->wait_other ){
    j->wait_other = 0;
    struct timespec ms = { 0, 1000000 };
    for(int k = 0; k < 2000 && !atomic_load(&j->other_began); k++) nanosleep(&ms, NULL);
  }
  /* about 20 us of work, so both threads get parts */
  double s = 0;
  for(int k = 1; k <= 2000; k++) s += 1.0 / ((double)k * (double)(i + 1) + 0.1 * k);
  j->partial[i] = s;
  j->thread[i] = t;
  j->finished[i] = 1;
  return i == j->fail_part;
}

static int done_fn(void *u, int64_t i)
{
  job *j = u;
  if( i != j->next_done || !j->finished[i] ) j->order_ok = 0;
  j->next_done = i + 1;
  j->sum += j->partial[i];
  return i == j->fail_done;
}

static int64_t run_job(job *j, int threads, int fail_part, int fail_done)
{
  memset(j, 0, sizeof *j);
  j->order_ok = 1;
  j->fail_part = fail_part;
  j->fail_done = fail_done;
  j->wait_other = threads == 2;
  fly_par_job pj = { NPARTS, part_fn, done_fn, j };
  return fly_par_run(&pj, threads);
}

static void test_run(void)
{
  static job a, b;
  int once = 1, other = 0;
  int64_t rc = run_job(&a, 1, -1, -1);
  TAP_OK(rc == 0 && a.order_ok && a.next_done == NPARTS, "one thread: every part done in order");
  double serial = a.sum;
  int same = 1;
  for(int rep = 0; rep < 5; rep++){
    rc = run_job(&b, 2, -1, -1);
    for(int i = 0; i < NPARTS; i++){
      once &= atomic_load(&b.runs[i]) == 1;
      other |= b.thread[i] == 1;
    }
    same &= rc == 0 && b.order_ok && b.next_done == NPARTS && memcmp(&b.sum, &serial, sizeof serial) == 0;
  }
  TAP_OK(same, "two threads, 5 times: done in order, finished parts only, the sum's bits "
         "those of one thread");
  TAP_OK(once, "every part ran exactly once");
  TAP_OK(other, "the started thread ran parts");

  rc = run_job(&b, 2, 300, -1);
  TAP_OK(rc == 301, "a part failing stops the job with 1 + its index (%lld)", (long long)rc);
  TAP_OK(b.order_ok && b.next_done <= 300, "done saw parts before it only, in order (%lld)",
         (long long)b.next_done);
  rc = run_job(&b, 2, -1, 200);
  TAP_OK(rc == 201 && b.next_done == 201, "done failing at 200 stops the job there (%lld, %lld)",
         (long long)rc, (long long)b.next_done);
  rc = run_job(&b, 1, 100, -1);
  TAP_OK(rc == 101 && b.next_done == 100 && atomic_load(&b.runs[101]) == 0,
         "one thread: a failing part stops the job before the next part");
  fly_par_job empty = { 0, part_fn, NULL, &b };
  TAP_OK(fly_par_run(&empty, 2) == 0, "no parts: nothing to do");
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
  test_run();
  return tap_done();
}
