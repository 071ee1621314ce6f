/*
 * bench_trace.c -- what writing draws costs a chain, isolated from sampling.
 *
 *   bench_trace [--params P] [--iters N] [--chains C] [--every K]
 *               [--work US] [--db PATH] [--keep]
 *
 * Creates a run of C chains of P parameters, and in C threads (one per
 * chain, each with its own trace writer, as `flydb sample` runs them) adds
 * N iterations of draws (a random walk: full 8-byte mantissas) with their
 * diagnostics, committing with a 200-byte checkpoint every K iterations
 * (flydb's default --checkpoint-every is 1000).  --work spins US
 * microseconds of thread CPU time per iteration in place of the sampler
 * (0: the writer alone).  Each chain hands its batches to the file's
 * writer thread (fly_trace_submit) and waits for the last (fly_trace_sync),
 * as `flydb sample` does.  Reports the writer's CPU time per iteration
 * (the process's CPU time less the sampler's part of the chains: the
 * chains' fly_trace_add and hand-off and the writer thread's SQLite
 * work), the chains' wall time in the writer calls per iteration, the
 * iterations per second of the whole loop and the writer calls' share of
 * its wall time, and the file's bytes per stored value after the WAL is
 * checkpointed.  At 10^4 iterations per second per chain an iteration has
 * 100 us, so the writer's cost at that rate is its CPU us per iteration
 * in percent.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "store/trace.h"
#include "util/mem.h"

static double clock_of(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct job {
  const char *path;
  int         chain;
  size_t      P;
  int64_t     N, K;
  double      work;         /* seconds of sampling simulated per iteration */
  double      samp;         /* thread CPU seconds of the sampler's part */
  double      wall;         /* seconds in fly_trace_add/submit/sync */
  double      loop;         /* seconds of the whole loop */
  fly_err     err;
} job;

static void *chain(void *arg)
{
  job *j = arg;
  fly_trace *t = NULL;
  double *th = fly_alloc_array(j->P, sizeof *th);
  char ckpt[200];
  uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(j->chain + 1);
  memset(ckpt, 7, sizeof ckpt);
  if( !th || fly_trace_open(j->path, 1, j->chain, j->P, (size_t)j->K + 1, &t, &j->err) )
    goto done;
  for(size_t p = 0; p < j->P; p++) th[p] = 0;
  double l0 = clock_of(CLOCK_MONOTONIC);
  for(int64_t it = 1; it <= j->N; it++){
    fly_trace_row row = { -1000.0 + (double)it / 7.0, 10, 50, 12, 1.0, 0.25, 0.0 / 0.0,
                          0, 0, 0, 0, 0, 0 };
    double t0 = clock_of(CLOCK_THREAD_CPUTIME_ID);
    do{                                  /* the sampler's part: not the writer's */
      for(size_t p = 0; p < j->P; p++){
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        th[p] += (double)(int64_t)(s >> 11) * 0x1p-60;
      }
    }while( j->work > 0 && clock_of(CLOCK_THREAD_CPUTIME_ID) - t0 < j->work );
    double w0 = clock_of(CLOCK_MONOTONIC);
    j->samp += clock_of(CLOCK_THREAD_CPUTIME_ID) - t0;
    if( fly_trace_add(t, it, th, &row, &j->err) ) goto done;
    if( (it % j->K == 0 || it == j->N) &&
        fly_trace_submit(t, it, ckpt, sizeof ckpt, &j->err) ) goto done;
    j->wall += clock_of(CLOCK_MONOTONIC) - w0;
  }
  double w0 = clock_of(CLOCK_MONOTONIC);
  if( fly_trace_sync(t, &j->err) ) goto done;
  j->wall += clock_of(CLOCK_MONOTONIC) - w0;
  j->loop = clock_of(CLOCK_MONOTONIC) - l0;
done:
  fly_trace_close(t);
  fly_free(th);
  return NULL;
}

int main(int argc, char **argv)
{
  size_t P = 51;
  int64_t N = 20000, K = 1000;
  int C = 2, keep = 0;
  double work = 0;
  const char *path = "/tmp/bench_trace.db";
  for(int i = 1; i < argc; i++){
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if( !strcmp(a, "--keep") ){ keep = 1; continue; }
    if( !v ){ fprintf(stderr, "bench_trace: %s needs a value\n", a); return 2; }
    if( !strcmp(a, "--params") ) P = (size_t)atol(v);
    else if( !strcmp(a, "--iters") ) N = atoll(v);
    else if( !strcmp(a, "--chains") ) C = atoi(v);
    else if( !strcmp(a, "--every") ) K = atoll(v);
    else if( !strcmp(a, "--db") ) path = v;
    else if( !strcmp(a, "--work") ) work = 1e-6 * atof(v);
    else { fprintf(stderr, "bench_trace: unknown option %s\n", a); return 2; }
    i++;
  }
  if( P < 1 || N < 1 || C < 1 || C > 64 || K < 1 ){ fprintf(stderr, "bench_trace: bad sizes\n"); return 2; }
  char side[1100], q[512];
  fly_err err = {0};
  fly_db *db = NULL;
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path); unlink(side);
  snprintf(side, sizeof side, "%s-shm", path); unlink(side);
  if( fly_db_open(path, FLY_DB_CREATE, &db, &err) || fly_db_wal(db, &err) ) goto fail;
  snprintf(q, sizeof q, "INSERT INTO dataset(id, name, source, n_rows, width, n_features, "
           "has_intercept, target_name, page_rows, n_pages, prec, raw_bytes, stored_bytes) "
           "VALUES (1, 'bench', 'bench.csv', 1000, %zu, %zu, 0, 'y', 10, 100, 8, 0, 0)", P + 1, P);
  if( fly_db_exec(db, q, &err) ) goto fail;
  snprintf(q, sizeof q, "INSERT INTO run(id, dataset_id, model, sampler, z_mode, n_chains, "
           "n_warmup, n_iters, thin, seed, n_params, status, version) VALUES (1, 1, 'logistic', "
           "'mh', 'gibbs', %d, 0, %lld, 1, 1, %zu, 'running', 'bench')", C, (long long)N, P);
  if( fly_db_exec(db, q, &err) ) goto fail;
  if( fly_db_exec(db, "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s"
                  " LIMIT (SELECT n_params FROM run WHERE id = 1))"
                  " INSERT INTO param SELECT 1, i, 'x' || i FROM s", &err) ) goto fail;
  fly_db_close(db);
  db = NULL;

  job *jobs = fly_alloc_array((size_t)C, sizeof *jobs);
  pthread_t *th = fly_alloc_array((size_t)C, sizeof *th);
  if( !jobs || !th ){ fprintf(stderr, "bench_trace: out of memory\n"); return 1; }
  double pc0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
  for(int c = 0; c < C; c++){
    jobs[c] = (job){ path, c, P, N, K, work, 0, 0, 0, {0} };
    pthread_create(&th[c], NULL, chain, &jobs[c]);
  }
  for(int c = 0; c < C; c++) pthread_join(th[c], NULL);
  double cpu = clock_of(CLOCK_PROCESS_CPUTIME_ID) - pc0, wr = 0, loop = 0;
  for(int c = 0; c < C; c++){
    if( jobs[c].err.code ){ fprintf(stderr, "bench_trace: chain %d: %s\n", c, jobs[c].err.msg); return 1; }
    cpu -= jobs[c].samp;
    wr += jobs[c].wall;
    loop += jobs[c].loop;
  }
  int64_t bytes = 0;
  if( fly_db_open(path, 0, &db, &err) ) goto fail;
  if( fly_db_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", &err) ) goto fail;
  sqlite3_stmt *st = NULL;
  if( fly_db_prepare(db, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
                     &st, &err) ) goto fail;
  if( sqlite3_step(st) == SQLITE_ROW ) bytes = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  fly_db_close(db);
  printf("params %zu chains %d iters %lld every %lld work %.0f us: writer cpu %.2f us/iter, "
         "wall in writer calls %.2f us/iter (per chain), %.0f it/s/chain, their share of wall %.1f%%, "
         "file %.2f bytes/value\n", P, C, (long long)N, (long long)K, 1e6 * work,
         1e6 * cpu / (double)(C * N), 1e6 * wr / (double)(C * N), (double)(C * N) / loop,
         100 * wr / loop, (double)bytes / (double)((int64_t)C * N * (int64_t)P));
  fly_free(jobs);
  fly_free(th);
  if( !keep ){
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path); unlink(side);
    snprintf(side, sizeof side, "%s-shm", path); unlink(side);
  }
  return 0;
fail:
  fprintf(stderr, "bench_trace: %s\n", err.msg);
  fly_db_close(db);
  return 1;
}
