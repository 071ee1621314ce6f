/*
 * trace.c -- batched writes of draws and diagnostics (see trace.h).
 *
 * Layout (schema/003_draw_block.sql, 004_iteration_in_block.sql): an
 * iteration's parameters go into ceil(P/64) rows of draw_block, 64 REAL
 * columns each, and its diagnostics into the columns log_joint ..
 * full_logpost of the row of blk = 0 (NULL in the others); the views `draw`
 * and `iteration` unpack them into the rows readers see.  Cost per kept
 * iteration: ceil(P/64) inserts, appended in key order, through one
 * prepared statement whose run and chain are bound once, inside one
 * transaction per batch.  The long table of version 2 took one insert per
 * parameter, 2-4 us each, more than a FlyMC iteration, and version 3 one
 * more insert for the diagnostics (docs/archive/benchmarks.md, "Writing
 * draws").
 */
#include "store/trace.h"

#include <stdio.h>
#include <string.h>

#include "store/db.h"
#include "util/mem.h"

struct fly_trace {
  fly_db       *db;
  int64_t       run_id;
  int           chain;
  size_t        P, cap, n;
  int64_t      *iter;
  double       *th;        /* cap x P */
  fly_trace_row *rows;
  sqlite3_stmt *ins_draw, *put_ckpt;
};

#define BLOCK 64     /* parameters per draw_block row (columns v0..v63) */
#define DIAG  7      /* diagnostics columns, bound as ?(5+BLOCK) .. */

fly_rc fly_trace_open(const char *db_path, int64_t run_id, int chain, size_t P,
                      size_t max_rows, fly_trace **pt, fly_err *err)
{
  fly_trace *t = NULL;
  fly_rc rc;
  *pt = NULL;
  t = fly_alloc_array(1, sizeof *t);
  if( !t ) return fly_fail(err, FLY_NOMEM, "trace writer");
  t->run_id = run_id;
  t->chain = chain;
  t->P = P;
  t->cap = max_rows ? max_rows : 1;
  t->iter = fly_alloc_array(t->cap, sizeof *t->iter);
  t->th = fly_alloc_array(t->cap, P * sizeof *t->th);
  t->rows = fly_alloc_array(t->cap, sizeof *t->rows);
  if( !t->iter || !t->th || !t->rows ){ rc = fly_fail(err, FLY_NOMEM, "trace buffer"); goto done; }
  if( (rc = fly_db_open(db_path, 0, &t->db, err)) ) goto done;
  {
    char sql[1536];
    int n = snprintf(sql, sizeof sql, "INSERT INTO draw_block(run_id, chain, iter, blk");
    for(int k = 0; k < BLOCK; k++) n += snprintf(sql + n, sizeof sql - (size_t)n, ", v%d", k);
    n += snprintf(sql + n, sizeof sql - (size_t)n, ", log_joint, n_bright, n_lik_evals, "
                  "n_reads, accepted, step_size, full_logpost) VALUES (?1,?2,?3,?4");
    for(int k = 0; k < BLOCK + DIAG; k++) n += snprintf(sql + n, sizeof sql - (size_t)n, ",?%d", 5 + k);
    snprintf(sql + n, sizeof sql - (size_t)n, ")");
    if( (rc = fly_db_prepare(t->db, sql, &t->ins_draw, err)) ) goto done;
  }
  rc = fly_db_prepare(t->db, "INSERT OR REPLACE INTO checkpoint(run_id, chain, iter, state) "
                      "VALUES (?1,?2,?3,?4)", &t->put_ckpt, err);
  if( rc == FLY_OK ){
    /* bindings survive sqlite3_reset: the run and chain are bound once */
    sqlite3_stmt *st[2] = { t->ins_draw, t->put_ckpt };
    for(int i = 0; i < 2; i++){
      sqlite3_bind_int64(st[i], 1, run_id);
      sqlite3_bind_int(st[i], 2, chain);
    }
  }
done:
  if( rc ){
    fly_trace_close(t);
    return rc;
  }
  *pt = t;
  return FLY_OK;
}

void fly_trace_close(fly_trace *t)
{
  if( !t ) return;
  sqlite3_finalize(t->ins_draw);
  sqlite3_finalize(t->put_ckpt);
  fly_db_close(t->db);
  fly_free(t->iter);
  fly_free(t->th);
  fly_free(t->rows);
  fly_free(t);
}

fly_rc fly_trace_add(fly_trace *t, int64_t iter, const double *th,
                     const fly_trace_row *row, fly_err *err)
{
  if( t->n >= t->cap )
    return fly_fail(err, FLY_RANGE, "trace buffer full (%zu rows)", t->cap);
  t->iter[t->n] = iter;
  memcpy(t->th + t->n * t->P, th, t->P * sizeof *th);
  t->rows[t->n] = *row;
  t->n++;
  return FLY_OK;
}

size_t fly_trace_pending(const fly_trace *t) { return t->n; }

static fly_rc step_done(fly_trace *t, sqlite3_stmt *st, const char *what, fly_err *err)
{
  int s = sqlite3_step(st);
  sqlite3_reset(st);
  if( s != SQLITE_DONE ) return fly_db_fail(t->db, err, what);
  return FLY_OK;
}

fly_rc fly_trace_commit(fly_trace *t, int64_t iter, const void *ckpt,
                        size_t ckpt_len, fly_err *err)
{
  fly_rc rc = fly_db_begin(t->db, err);
  if( rc ) return rc;
  for(size_t r = 0; r < t->n && rc == FLY_OK; r++){
    const double *th = t->th + r * t->P;
    const fly_trace_row *w = &t->rows[r];
    sqlite3_stmt *st = t->ins_draw;
    const int d = 5 + BLOCK;      /* first diagnostics parameter */
    sqlite3_bind_int64(st, 3, t->iter[r]);
    for(size_t b = 0; b * BLOCK < t->P && rc == FLY_OK; b++){
      size_t k, nk = t->P - b * BLOCK < BLOCK ? t->P - b * BLOCK : BLOCK;
      sqlite3_bind_int64(st, 4, (int64_t)b);
      for(k = 0; k < nk; k++) sqlite3_bind_double(st, 5 + (int)k, th[b * BLOCK + k]);
      /* past the last parameter: NULL (only a full block before set them) */
      for(k = b ? nk : BLOCK; k < BLOCK; k++) sqlite3_bind_null(st, 5 + (int)k);
      if( b == 0 ){
        sqlite3_bind_double(st, d, w->log_joint);
        sqlite3_bind_int64(st, d + 1, w->n_bright);
        sqlite3_bind_int64(st, d + 2, w->n_lik);
        sqlite3_bind_int64(st, d + 3, w->n_reads);
        sqlite3_bind_double(st, d + 4, w->accepted);
        sqlite3_bind_double(st, d + 5, w->step_size);
        if( w->full_logpost == w->full_logpost ) sqlite3_bind_double(st, d + 6, w->full_logpost);
        else sqlite3_bind_null(st, d + 6);
      }else if( b == 1 ){
        for(k = 0; k < DIAG; k++) sqlite3_bind_null(st, d + (int)k);
      }
      rc = step_done(t, st, "writing draws and diagnostics", err);
    }
  }
  if( rc == FLY_OK && ckpt ){
    sqlite3_bind_int64(t->put_ckpt, 3, iter);
    sqlite3_bind_blob(t->put_ckpt, 4, ckpt, (int)ckpt_len, SQLITE_STATIC);
    rc = step_done(t, t->put_ckpt, "writing the checkpoint", err);
  }
  if( rc == FLY_OK ) rc = fly_db_commit(t->db, err);
  if( rc ) fly_db_rollback(t->db);
  else t->n = 0;
  return rc;
}
