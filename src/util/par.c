/*
 * par.c -- a part of a job on a thread of its own (see par.h).
 */
#include "util/par.h"

#include <stdlib.h>

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

/* ---- parts from a shared counter, combined in order ------------------- */

enum { PENDING = 0, OK = 1, FAILED = 2 };

typedef struct run_state {
  const fly_par_job *job;
  pthread_mutex_t    mu;
  pthread_cond_t     cv;         /* a part finished */
  int64_t            next;       /* the next part to claim */
  int                stop;       /* a failure: claim no more */
  unsigned char     *state;      /* each part's PENDING, OK or FAILED */
} run_state;

typedef struct worker {
  run_state *rs;
  int        t;
} worker;

/* The next part, or job->n when none is left or the job stopped. */
static int64_t claim(run_state *rs)
{
  pthread_mutex_lock(&rs->mu);
  int64_t i = rs->stop || rs->next >= rs->job->n ? rs->job->n : rs->next++;
  pthread_mutex_unlock(&rs->mu);
  return i;
}

static void finish(run_state *rs, int64_t i, int bad)
{
  pthread_mutex_lock(&rs->mu);
  rs->state[i] = bad ? FAILED : OK;
  if( bad ) rs->stop = 1;
  pthread_cond_broadcast(&rs->cv);
  pthread_mutex_unlock(&rs->mu);
}

static void *run_parts(void *u)
{
  worker *w = u;
  run_state *rs = w->rs;
  const fly_par_job *j = rs->job;
  for(int64_t i; (i = claim(rs)) < j->n; )
    finish(rs, i, j->part(j->arg, i, w->t) != 0);
  return NULL;
}

/* Every part and done in order on the calling thread. */
static int64_t run_serial(const fly_par_job *j)
{
  for(int64_t i = 0; i < j->n; i++)
    if( j->part(j->arg, i, 0) || (j->done && j->done(j->arg, i)) ) return i + 1;
  return 0;
}

int64_t fly_par_run(const fly_par_job *j, int threads)
{
  if( j->n <= 0 ) return 0;
  int nt = threads < 1 ? 1 : threads > FLY_PAR_MAX_THREADS ? FLY_PAR_MAX_THREADS : threads;
  if( nt == 1 ) return run_serial(j);
  run_state rs = { .job = j };
  if( !(rs.state = calloc((size_t)j->n, 1)) ) return run_serial(j);
  pthread_mutex_init(&rs.mu, NULL);
  pthread_cond_init(&rs.cv, NULL);
  fly_par par[FLY_PAR_MAX_THREADS];
  worker w[FLY_PAR_MAX_THREADS];
  /* a worker whose thread could not start runs at its join, when every
   * part has been claimed: it finds none */
  for(int t = 1; t < nt; t++){
    w[t] = (worker){ &rs, t };
    fly_par_start(&par[t], run_parts, &w[t]);
  }
  int64_t handed = 0, done_failed = -1;
  for(;;){
    /* hand the finished parts over in order */
    pthread_mutex_lock(&rs.mu);
    while( handed < j->n && rs.state[handed] == OK && !rs.stop ){
      pthread_mutex_unlock(&rs.mu);
      int bad = j->done && j->done(j->arg, handed);
      pthread_mutex_lock(&rs.mu);
      if( bad ){
        done_failed = handed;
        rs.stop = 1;
      }
      handed++;
    }
    int stop = rs.stop;
    pthread_mutex_unlock(&rs.mu);
    if( stop || handed == j->n ) break;
    int64_t i = claim(&rs);
    if( i < j->n ){
      finish(&rs, i, j->part(j->arg, i, 0) != 0);
      continue;
    }
    /* none left to claim: wait for the next to hand over (claimed, so
     * some thread finishes it) */
    pthread_mutex_lock(&rs.mu);
    while( rs.state[handed] == PENDING && !rs.stop ) pthread_cond_wait(&rs.cv, &rs.mu);
    pthread_mutex_unlock(&rs.mu);
  }
  for(int t = 1; t < nt; t++) fly_par_join(&par[t]);
  int64_t first = done_failed;
  for(int64_t i = 0; i < j->n && (first < 0 || i < first); i++)
    if( rs.state[i] == FAILED ){ first = i; break; }
  pthread_cond_destroy(&rs.cv);
  pthread_mutex_destroy(&rs.mu);
  free(rs.state);
  return first < 0 ? 0 : first + 1;
}
