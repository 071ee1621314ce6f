/*
 * trace_fixture.h -- unit tests' way to make a finished run with a trace,
 * as `flydb sample` would leave it: rows of dataset (n_rows N), run (model
 * logistic, sampler mh, z gibbs, status done, sample_seconds 2), param
 * (names "b0", "b1", ..) and the draws and diagnostics of every kept
 * iteration (thin, 2 thin, .. of 1..warm+iters) through the trace writer.
 * fx_draw(c, it, p) is the draw, fx_diag(c, it) the diagnostics.  Include
 * after tap.h.
 */
#ifndef FLY_TRACE_FIXTURE_H
#define FLY_TRACE_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "store/db.h"
#include "store/trace.h"

#define FX_MAX_P 16
#define FX_N     1000

/* A draw that is not a simple function of the iteration: a hash in [-1, 1)
 * plus a drift that differs between chains, exactly representable. */
static inline double fx_draw(int c, int64_t it, size_t p)
{
  uint64_t h = (uint64_t)it * 0x9E3779B97F4A7C15u ^ (uint64_t)(c * 131 + (int)p) * 0xBF58476D1CE4E5B9u;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBu;
  h ^= h >> 29;
  return (double)(h >> 11) / 4503599627370496.0 - 1.0 + 0.125 * c * (double)p;
}

static inline fly_trace_row fx_diag(int c, int64_t it)
{
  fly_trace_row row = { -100.0 - (double)it, 10 + (it + c) % 7, 50 + it % 3, 12 + it % 5,
                        (it + c) % 3 ? 1.0 : 0.0, 0.5, NAN, 0, 0, 0, 0, 0, 0 };
  return row;
}

/* Write run 1 of the new database at path: C chains of P <= FX_MAX_P
 * parameters.  1 on success; a TAP diagnostic on failure. */
static inline int fx_write_run(const char *path, int C, size_t P, int64_t warm, int64_t iters,
                               int64_t thin)
{
  fly_err err = {0};
  fly_db *db = NULL;
  char q[512];
  int ok = 0;
  if( fly_db_open(path, FLY_DB_CREATE, &db, &err) ){ TAP_DIAG("%s", err.msg); return 0; }
  snprintf(q, sizeof q, "INSERT INTO dataset(id, name, source, n_rows, width, n_features, "
           "has_intercept, target_name, page_rows, n_pages, prec, raw_bytes, stored_bytes) "
           "VALUES (1, 'toy', 'toy.csv', %d, %zu, %zu, 0, 'y', 10, 100, 8, 0, 0)",
           FX_N, P + 1, P);
  if( fly_db_exec(db, q, &err) ) goto done;
  snprintf(q, sizeof q, "INSERT INTO run(id, dataset_id, model, sampler, z_mode, n_chains, "
           "n_warmup, n_iters, thin, seed, n_params, status, version, sample_seconds) VALUES "
           "(1, 1, 'logistic', 'mh', 'gibbs', %d, %lld, %lld, %lld, 7, %zu, 'done', 'test', 2)",
           C, (long long)warm, (long long)iters, (long long)thin, P);
  if( fly_db_exec(db, q, &err) ) goto done;
  for(size_t p = 0; p < P; p++){
    snprintf(q, sizeof q, "INSERT INTO param VALUES (1, %zu, 'b%zu')", p, p);
    if( fly_db_exec(db, q, &err) ) goto done;
  }
  ok = 1;
done:
  fly_db_close(db);
  if( !ok ){ TAP_DIAG("%s", err.msg); return 0; }
  for(int c = 0; c < C; c++){
    fly_trace *t = NULL;
    double th[FX_MAX_P];
    size_t cap = (size_t)((warm + iters) / thin) + 1;
    if( fly_trace_open(path, 1, c, P, cap, &t, &err) ){ TAP_DIAG("%s", err.msg); return 0; }
    for(int64_t it = thin; it <= warm + iters && !err.code; it += thin){
      fly_trace_row row = fx_diag(c, it);
      for(size_t p = 0; p < P; p++) th[p] = fx_draw(c, it, p);
      fly_trace_add(t, it, th, &row, &err);
    }
    if( !err.code ) fly_trace_commit(t, warm + iters, "ckpt", 4, &err);
    fly_trace_close(t);
    if( err.code ){ TAP_DIAG("%s", err.msg); return 0; }
  }
  return 1;
}

/* Remove the database at path with its WAL and shared-memory files. */
static inline void fx_unlink_db(const char *path)
{
  char side[300];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

#endif
