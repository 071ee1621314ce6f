/*
 * trace.c -- a run's trace: batched writes, reads and the integrity check of
 * draws, diagnostics and checkpoints (see trace.h).
 *
 * Layout (schema/003_draw_block.sql, 004_iteration_in_block.sql): an
 * iteration's parameters go into ceil(P/64) rows of draw_block, 64 REAL
 * columns each, and its diagnostics into the columns log_joint ..
 * full_logpost of the row of blk = 0 (NULL in the others); the views `draw`
 * and `iteration` unpack them into the rows readers see.  Cost per kept
 * iteration: ceil(P/64) inserts, appended in key order, through one
 * prepared statement whose run and chain are bound once, inside one
 * transaction per batch.  A B-tree insert costs about as much as a FlyMC
 * iteration, so an iteration of up to 64 parameters, diagnostics
 * included, is one insert, not one per parameter.
 *
 * Readers scan draw_block in key order (run, chain, iter, blk): the draws of
 * a parameter range of one chain, or whole iterations for a streaming
 * export, cost one range scan of that chain's rows, ceil(P/64) rows an
 * iteration.  The integrity check reads the views draw and iteration, so
 * it states its findings in the rows users see.
 */
#include "store/trace.h"

#include <math.h>
#include <stdarg.h>
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
#define DIAG  12     /* diagnostics columns, bound as ?(5+BLOCK) .. */

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
                  "n_reads, accepted, step_size, full_logpost, treedepth, n_leapfrog, "
                  "divergent, energy, accept_stat) VALUES (?1,?2,?3,?4");
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
        if( w->has_kstats ){
          sqlite3_bind_int64(st, d + 7, w->treedepth);
          sqlite3_bind_int64(st, d + 8, w->n_leapfrog);
          sqlite3_bind_int64(st, d + 9, w->divergent);
          sqlite3_bind_double(st, d + 10, w->energy);
          sqlite3_bind_double(st, d + 11, w->accept_stat);
        }else{
          for(k = 7; k < DIAG; k++) sqlite3_bind_null(st, d + (int)k);
        }
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

/* ---- reading ------------------------------------------------------------ */

#define MAX_CHAINS ((int64_t)1 << 20)    /* beyond this n_chains is corrupt */

struct fly_trace_reader {
  fly_db        *db;          /* borrowed */
  fly_trace_run  run;
  char         **names;       /* [n_params] */
  size_t        *n_warm, *n_post;  /* [n_chains]; NULL until first asked */
  sqlite3_stmt  *scan;        /* the streaming scan, or NULL */
  int            have;        /* scan holds a row not yet consumed */
  int            ended;       /* scan stepped past its last row (a further
                                 sqlite3_step would restart it) */
  size_t         scan_chain;
};

static double col_real(sqlite3_stmt *st, int col)
{
  return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

static void col_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
  const char *s = (const char *)sqlite3_column_text(st, col);
  snprintf(dst, cap, "%s", s ? s : "");
}

/* " v0, v1, .., v63" */
static void value_cols(char *b, size_t cap)
{
  size_t n = 0;
  for(int k = 0; k < BLOCK && n < cap; k++)
    n += (size_t)snprintf(b + n, cap - n, ", v%d", k);
}

static fly_rc load_header(fly_trace_reader *r, int64_t run_id, fly_err *err)
{
  fly_trace_run *ri = &r->run;
  sqlite3_stmt *st = NULL;
  char sql[640];
  snprintf(sql, sizeof sql, "SELECT r.id, n_chains, n_warmup, n_iters, thin, n_params, seed, "
           "sample_seconds, wall_seconds, model, sampler, z_mode, status, version, d.name, "
           "d.source, d.n_rows FROM run r JOIN dataset d ON d.id = r.dataset_id %s",
           run_id > 0 ? "WHERE r.id = ?1" : "ORDER BY r.id DESC LIMIT 1");
  fly_rc rc = fly_db_prepare(r->db, sql, &st, err);
  if( rc ) return rc;
  if( run_id > 0 ) sqlite3_bind_int64(st, 1, run_id);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    int64_t C = sqlite3_column_int64(st, 1), P = sqlite3_column_int64(st, 5);
    ri->id = sqlite3_column_int64(st, 0);
    ri->n_warmup = sqlite3_column_int64(st, 2);
    ri->n_iters = sqlite3_column_int64(st, 3);
    ri->thin = sqlite3_column_int64(st, 4);
    ri->seed = (uint64_t)sqlite3_column_int64(st, 6);
    ri->sample_seconds = col_real(st, 7);
    ri->wall_seconds = col_real(st, 8);
    col_text(ri->model, sizeof ri->model, st, 9);
    col_text(ri->sampler, sizeof ri->sampler, st, 10);
    col_text(ri->z_mode, sizeof ri->z_mode, st, 11);
    col_text(ri->status, sizeof ri->status, st, 12);
    col_text(ri->version, sizeof ri->version, st, 13);
    col_text(ri->dataset, sizeof ri->dataset, st, 14);
    col_text(ri->source, sizeof ri->source, st, 15);
    ri->n_rows = sqlite3_column_int64(st, 16);
    if( C < 1 || C > MAX_CHAINS || P < 1 || P > (int64_t)UINT32_MAX || ri->thin < 1
        || ri->n_warmup < 0 || ri->n_iters < 0 )
      rc = fly_fail(err, FLY_CORRUPT, "run %lld: bad shape (%lld chains, %lld parameters, "
                    "thin %lld)", (long long)ri->id, (long long)C, (long long)P,
                    (long long)ri->thin);
    ri->n_chains = (size_t)C;
    ri->n_params = (size_t)P;
  }else if( s != SQLITE_DONE ){
    rc = fly_db_fail(r->db, err, "reading the run");
  }else if( run_id > 0 ){
    rc = fly_fail(err, FLY_RANGE, "%s has no run %lld", fly_db_path(r->db), (long long)run_id);
  }else{
    rc = fly_fail(err, FLY_RANGE, "%s has no runs: run `flydb sample` first", fly_db_path(r->db));
  }
  sqlite3_finalize(st);
  return rc;
}

static fly_rc load_names(fly_trace_reader *r, fly_err *err)
{
  size_t P = r->run.n_params;
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  if( !(r->names = fly_alloc_array(P, sizeof *r->names)) )
    return fly_fail(err, FLY_NOMEM, "parameter names");
  if( (rc = fly_db_prepare(r->db, "SELECT idx, name FROM param WHERE run_id = ?1", &st, err)) )
    return rc;
  sqlite3_bind_int64(st, 1, r->run.id);
  while( rc == FLY_OK && sqlite3_step(st) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    const char *s = (const char *)sqlite3_column_text(st, 1);
    if( i < 0 || (size_t)i >= P || r->names[i] ) continue;
    if( !(r->names[i] = fly_strdup(s ? s : "")) ) rc = fly_fail(err, FLY_NOMEM, "parameter names");
  }
  sqlite3_finalize(st);
  for(size_t p = 0; rc == FLY_OK && p < P; p++){
    char b[32];
    if( r->names[p] ) continue;
    snprintf(b, sizeof b, "theta[%zu]", p + 1);
    if( !(r->names[p] = fly_strdup(b)) ) rc = fly_fail(err, FLY_NOMEM, "parameter names");
  }
  return rc;
}

fly_rc fly_trace_reader_open(fly_db *db, int64_t run_id, fly_trace_reader **pr,
                             fly_err *err)
{
  fly_trace_reader *r = fly_alloc_array(1, sizeof *r);
  fly_rc rc;
  *pr = NULL;
  if( !r ) return fly_fail(err, FLY_NOMEM, "trace reader");
  r->db = db;
  if( (rc = load_header(r, run_id, err)) == FLY_OK ) rc = load_names(r, err);
  if( rc ){
    fly_trace_reader_close(r);
    return rc;
  }
  *pr = r;
  return FLY_OK;
}

void fly_trace_reader_close(fly_trace_reader *r)
{
  if( !r ) return;
  sqlite3_finalize(r->scan);
  if( r->names ) for(size_t p = 0; p < r->run.n_params; p++) fly_free(r->names[p]);
  fly_free(r->names);
  fly_free(r->n_warm);
  fly_free(r->n_post);
  fly_free(r);
}

const fly_trace_run *fly_trace_reader_run(const fly_trace_reader *r) { return &r->run; }

const char *fly_trace_param_name(const fly_trace_reader *r, size_t p)
{
  return p < r->run.n_params ? r->names[p] : "";
}

int fly_trace_option_default(fly_trace_reader *r, const char *key)
{
  sqlite3_stmt *st = NULL;
  int d = 1;
  if( fly_db_prepare(r->db, "SELECT is_default FROM run_config WHERE run_id = ?1 AND key = ?2",
                     &st, NULL) ) return 1;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  if( sqlite3_step(st) == SQLITE_ROW ) d = sqlite3_column_int(st, 0) != 0;
  sqlite3_finalize(st);
  return d;
}

static fly_rc bad_chain(const fly_trace_reader *r, size_t c, fly_err *err)
{
  return fly_fail(err, FLY_RANGE, "run %lld has chains 0..%zu, not %zu", (long long)r->run.id,
                  r->run.n_chains - 1, c);
}

fly_rc fly_trace_chain_len(fly_trace_reader *r, size_t c, size_t *n_warm, size_t *n_post,
                           fly_err *err)
{
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  if( !r->n_warm ){
    size_t C = r->run.n_chains;
    sqlite3_stmt *st = NULL;
    int s;
    r->n_warm = fly_alloc_array(C, sizeof *r->n_warm);
    r->n_post = fly_alloc_array(C, sizeof *r->n_post);
    if( !r->n_warm || !r->n_post ){
      fly_free(r->n_warm);
      fly_free(r->n_post);
      r->n_warm = r->n_post = NULL;
      return fly_fail(err, FLY_NOMEM, "chain lengths");
    }
    fly_rc rc = fly_db_prepare(r->db, "SELECT chain, sum(iter <= ?2), sum(iter > ?2) FROM "
                               "iteration WHERE run_id = ?1 GROUP BY chain", &st, err);
    if( rc == FLY_OK ){
      sqlite3_bind_int64(st, 1, r->run.id);
      sqlite3_bind_int64(st, 2, r->run.n_warmup);
      while( (s = sqlite3_step(st)) == SQLITE_ROW ){
        int64_t k = sqlite3_column_int64(st, 0);
        if( k < 0 || (size_t)k >= C ) continue;
        r->n_warm[k] = (size_t)sqlite3_column_int64(st, 1);
        r->n_post[k] = (size_t)sqlite3_column_int64(st, 2);
      }
      if( s != SQLITE_DONE ) rc = fly_db_fail(r->db, err, "counting iterations");
      sqlite3_finalize(st);
    }
    if( rc ){
      fly_free(r->n_warm);
      fly_free(r->n_post);
      r->n_warm = r->n_post = NULL;
      return rc;
    }
  }
  if( n_warm ) *n_warm = r->n_warm[c];
  if( n_post ) *n_post = r->n_post[c];
  return FLY_OK;
}

fly_rc fly_trace_draws(fly_trace_reader *r, size_t c, size_t p0, size_t n_p, int64_t after,
                       size_t cap, double *x, int64_t *iters, size_t *n, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  char sql[1024], cols[512];
  size_t t = 0, b0 = p0 / BLOCK, b1, k0 = 0, k1 = BLOCK, m = 0;
  int64_t last = INT64_MIN;
  int s;
  *n = 0;
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  if( n_p == 0 || p0 >= r->run.n_params || n_p > r->run.n_params - p0 )
    return fly_fail(err, FLY_RANGE, "run %lld has parameters 0..%zu, not %zu..%zu",
                    (long long)r->run.id, r->run.n_params - 1, p0, p0 + n_p - 1);
  if( cap == 0 ) return FLY_OK;
  b1 = (p0 + n_p - 1) / BLOCK;
  /* within one block only the columns asked for: SQLite decodes a record
   * up to the last column read */
  if( b0 == b1 ){
    k0 = p0 % BLOCK;
    k1 = k0 + n_p;
  }
  for(size_t k = k0; k < k1; k++) m += (size_t)snprintf(cols + m, sizeof cols - m, ", v%zu", k);
  snprintf(sql, sizeof sql, "SELECT iter, blk%s FROM draw_block WHERE run_id = ?1 AND "
           "chain = ?2 AND iter > ?3 AND blk >= ?4 AND blk <= ?5 ORDER BY iter, blk", cols);
  fly_rc rc = fly_db_prepare(r->db, sql, &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_int64(st, 2, (int64_t)c);
  sqlite3_bind_int64(st, 3, after);
  sqlite3_bind_int64(st, 4, (int64_t)b0);
  sqlite3_bind_int64(st, 5, (int64_t)b1);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t it = sqlite3_column_int64(st, 0), b = sqlite3_column_int64(st, 1);
    if( it != last ){
      if( t == cap ) break;
      last = it;
      if( iters ) iters[t] = it;
      for(size_t k = 0; k < n_p; k++) x[k * cap + t] = NAN;
      t++;
    }
    /* parameters of block b within [p0, p0 + n_p) */
    size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK;
    if( lo < p0 ) lo = p0;
    if( hi > p0 + n_p ) hi = p0 + n_p;
    for(size_t p = lo; p < hi; p++)
      x[(p - p0) * cap + t - 1] = col_real(st, 2 + (int)(p % BLOCK - k0));
  }
  if( s != SQLITE_DONE && s != SQLITE_ROW ) rc = fly_db_fail(r->db, err, "reading draws");
  sqlite3_finalize(st);
  *n = t;
  return rc;
}

/* The kernel statistics in columns i .. i+4 (treedepth first; NULL there:
 * none). */
static void kstats_read(sqlite3_stmt *st, int i, fly_trace_row *w)
{
  w->has_kstats = sqlite3_column_type(st, i) != SQLITE_NULL;
  w->treedepth = (int)sqlite3_column_int64(st, i);
  w->n_leapfrog = sqlite3_column_int64(st, i + 1);
  w->divergent = (int)sqlite3_column_int64(st, i + 2);
  w->energy = col_real(st, i + 3);
  w->accept_stat = col_real(st, i + 4);
}

fly_rc fly_trace_diagnostics(fly_trace_reader *r, size_t c, int64_t after, size_t cap,
                             fly_trace_row *rows, int64_t *iters, size_t *n, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  size_t t = 0;
  int s;
  *n = 0;
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  fly_rc rc = fly_db_prepare(r->db, "SELECT iter, log_joint, n_bright, n_lik_evals, n_reads, "
                             "accepted, step_size, full_logpost, treedepth, n_leapfrog, "
                             "divergent, energy, accept_stat FROM iteration WHERE "
                             "run_id = ?1 AND chain = ?2 AND iter > ?3 ORDER BY iter", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_int64(st, 2, (int64_t)c);
  sqlite3_bind_int64(st, 3, after);
  while( t < cap && (s = sqlite3_step(st)) == SQLITE_ROW ){
    fly_trace_row *w = &rows[t];
    if( iters ) iters[t] = sqlite3_column_int64(st, 0);
    w->log_joint = col_real(st, 1);
    w->n_bright = sqlite3_column_int64(st, 2);
    w->n_lik = sqlite3_column_int64(st, 3);
    w->n_reads = sqlite3_column_int64(st, 4);
    w->accepted = sqlite3_column_double(st, 5);
    w->step_size = col_real(st, 6);
    w->full_logpost = col_real(st, 7);
    kstats_read(st, 8, w);
    t++;
  }
  if( t < cap && s != SQLITE_DONE ) rc = fly_db_fail(r->db, err, "reading diagnostics");
  sqlite3_finalize(st);
  *n = t;
  return rc;
}

fly_rc fly_trace_diagnostics_mean(fly_trace_reader *r, int64_t after, fly_trace_means *m,
                                  fly_err *err)
{
  sqlite3_stmt *st = NULL;
  m->n_bright = m->n_lik = m->n_reads = m->accepted = NAN;
  fly_rc rc = fly_db_prepare(r->db, "SELECT avg(n_bright), avg(n_lik_evals), avg(n_reads), "
                             "avg(accepted) FROM iteration WHERE run_id=?1 AND iter>?2", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_int64(st, 2, after);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ){
    m->n_bright = sqlite3_column_double(st, 0);
    m->n_lik = sqlite3_column_double(st, 1);
    m->n_reads = sqlite3_column_double(st, 2);
    m->accepted = sqlite3_column_double(st, 3);
  }else if( s != SQLITE_ROW ){
    rc = fly_db_fail(r->db, err, "averaging diagnostics");
  }
  sqlite3_finalize(st);
  return rc;
}

/* Scan columns: iter, blk, the diagnostics (2 .. 2+DIAG, n_bright first so
 * that NULL there says "no diagnostics"), then v0 .. v63. */
#define SCAN_V (2 + DIAG)

fly_rc fly_trace_scan_start(fly_trace_reader *r, size_t c, int64_t after, fly_err *err)
{
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  if( !r->scan ){
    char sql[1024], cols[512];
    value_cols(cols, sizeof cols);
    snprintf(sql, sizeof sql, "SELECT iter, blk, n_bright, log_joint, n_lik_evals, n_reads, "
             "accepted, step_size, full_logpost, treedepth, n_leapfrog, divergent, energy, "
             "accept_stat%s FROM draw_block WHERE run_id = ?1 AND "
             "chain = ?2 AND iter > ?3 ORDER BY iter, blk", cols);
    fly_rc rc = fly_db_prepare(r->db, sql, &r->scan, err);
    if( rc ) return rc;
  }
  sqlite3_reset(r->scan);
  sqlite3_bind_int64(r->scan, 1, r->run.id);
  sqlite3_bind_int64(r->scan, 2, (int64_t)c);
  sqlite3_bind_int64(r->scan, 3, after);
  r->scan_chain = c;
  r->have = r->ended = 0;
  return FLY_OK;
}

fly_rc fly_trace_scan_next(fly_trace_reader *r, int64_t *iter, fly_trace_row *row, double *th,
                           fly_err *err)
{
  sqlite3_stmt *st = r->scan;
  size_t P = r->run.n_params, got = 0;
  long long run = (long long)r->run.id, chain = (long long)r->scan_chain + 1;
  int64_t it;
  if( !st ) return fly_fail(err, FLY_MISUSE, "trace scan not started");
  if( r->ended ) return FLY_DONE;
  if( !r->have ){
    int s = sqlite3_step(st);
    if( s == SQLITE_DONE ){ r->ended = 1; return FLY_DONE; }
    if( s != SQLITE_ROW ) return fly_db_fail(r->db, err, "reading draws");
  }
  r->have = 0;
  it = sqlite3_column_int64(st, 0);
  if( sqlite3_column_int64(st, 1) != 0 || sqlite3_column_type(st, 2) == SQLITE_NULL )
    return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld: draws of iteration %lld have no "
                    "row in table iteration", run, chain, (long long)it);
  *iter = it;
  row->n_bright = sqlite3_column_int64(st, 2);
  row->log_joint = col_real(st, 3);
  row->n_lik = sqlite3_column_int64(st, 4);
  row->n_reads = sqlite3_column_int64(st, 5);
  row->accepted = sqlite3_column_double(st, 6);
  row->step_size = col_real(st, 7);
  row->full_logpost = col_real(st, 8);
  kstats_read(st, 9, row);
  for(;;){
    size_t lo = (size_t)sqlite3_column_int64(st, 1) * BLOCK;
    for(size_t p = lo; p < P && p < lo + BLOCK; p++, got++)
      th[p] = col_real(st, SCAN_V + (int)(p - lo));
    int s = sqlite3_step(st);
    if( s == SQLITE_DONE ){ r->ended = 1; break; }
    if( s != SQLITE_ROW ){ r->ended = 1; return fly_db_fail(r->db, err, "reading draws"); }
    if( sqlite3_column_int64(st, 0) != it ){ r->have = 1; break; }
  }
  if( got != P )
    return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld, iteration %lld: %zu draws, want "
                    "%zu", run, chain, (long long)it, got, P);
  return FLY_ROW;
}

fly_rc fly_trace_checkpoint(fly_db *db, int64_t run_id, int chain, int64_t *iter,
                            void **state, size_t *len, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  *iter = 0;
  *state = NULL;
  *len = 0;
  fly_rc rc = fly_db_prepare(db, "SELECT iter, state FROM checkpoint WHERE run_id = ?1 AND "
                             "chain = ?2", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, chain);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    size_t n = (size_t)sqlite3_column_bytes(st, 1);
    void *p = fly_alloc_array(n ? n : 1, 1);
    if( !p ) rc = fly_fail(err, FLY_NOMEM, "checkpoint of chain %d", chain);
    else{
      if( n ) memcpy(p, sqlite3_column_blob(st, 1), n);
      *iter = sqlite3_column_int64(st, 0);
      *state = p;
      *len = n;
    }
  }else if( s != SQLITE_DONE ){
    rc = fly_db_fail(db, err, "reading the checkpoint");
  }
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_trace_truncate(fly_db *db, int64_t run_id, int chain, int64_t after, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  /* draw_block holds the diagnostics too (the view `iteration`) */
  fly_rc rc = fly_db_prepare(db, "DELETE FROM draw_block WHERE run_id = ?1 AND chain = ?2 AND "
                             "iter > ?3", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, chain);
  sqlite3_bind_int64(st, 3, after);
  if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "deleting draws");
  sqlite3_finalize(st);
  return rc;
}

/* ---- checking ----------------------------------------------------------- */

typedef struct checker {
  fly_db               *db;
  const fly_trace_shape *s;
  fly_trace_problem_fn  problem;
  void                 *u;
} checker;

static void problem(checker *ck, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
static void problem(checker *ck, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck->problem(ck->u, msg);
}

/* A statement that cannot be prepared or stepped is a problem too (a
 * damaged file, a missing table). */
static sqlite3_stmt *prep(checker *ck, const char *sql)
{
  sqlite3_stmt *st = NULL;
  fly_err e = {0};
  if( fly_db_prepare(ck->db, sql, &st, &e) ) problem(ck, "%s", e.msg);
  return st;
}

static void step_failed(checker *ck, const char *what)
{
  problem(ck, "%s: %s", what, sqlite3_errmsg(fly_db_sqlite(ck->db)));
}

/* "a" or "a..b" into buf. */
static const char *span(char *buf, size_t n, int64_t a, int64_t b)
{
  if( a == b ) snprintf(buf, n, "%lld", (long long)a);
  else snprintf(buf, n, "%lld..%lld", (long long)a, (long long)b);
  return buf;
}

static void check_params(checker *ck)
{
  const fly_trace_shape *r = ck->s;
  sqlite3_stmt *st = prep(ck, "SELECT idx FROM param WHERE run_id = ?1"
                          " ORDER BY idx");
  int64_t next = 0;
  char buf[48];
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->run_id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    if( i < 0 || i >= r->n_params ){
      problem(ck, "param idx %lld: the run has parameters 0..%lld",
              (long long)i, (long long)r->n_params - 1);
      continue;
    }
    if( i > next )
      problem(ck, "param rows of idx %s missing", span(buf, sizeof buf, next, i - 1));
    next = i + 1;
  }
  if( s != SQLITE_DONE ) step_failed(ck, "reading table param");
  else if( next < r->n_params )
    problem(ck, "param rows of idx %s missing",
            span(buf, sizeof buf, next, r->n_params - 1));
  sqlite3_finalize(st);
}

/* Rows of view draw (is_draw) or iteration of chain c: exactly the
 * iterations thin, 2 thin, .. up to last, each draw iteration with all P
 * parameters.  beyond says what last is, for rows past it. */
static void check_chain_rows(checker *ck, int64_t c, int is_draw, int64_t last,
                             const char *beyond)
{
  const fly_trace_shape *r = ck->s;
  const char *tab = is_draw ? "draw" : "iteration";
  sqlite3_stmt *st = prep(ck, is_draw
    ? "SELECT iter, count(value), min(idx), max(idx) FROM draw"
      " WHERE run_id = ?1 AND chain = ?2 GROUP BY iter ORDER BY iter"
    : "SELECT iter, 1, 0, 0 FROM iteration WHERE run_id = ?1 AND chain = ?2"
      " ORDER BY iter");
  int64_t next = r->thin, end = last - last % r->thin;
  int64_t n_beyond = 0, lo_beyond = 0, hi_beyond = 0;
  char buf[48], thin[48] = "";
  int s;

  if( !st ) return;
  if( r->thin > 1 ) snprintf(thin, sizeof thin, " (multiples of thin %lld)",
                             (long long)r->thin);
  sqlite3_bind_int64(st, 1, r->run_id);
  sqlite3_bind_int64(st, 2, c);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t it = sqlite3_column_int64(st, 0);
    int64_t cnt = sqlite3_column_int64(st, 1);
    int64_t lo = sqlite3_column_int64(st, 2), hi = sqlite3_column_int64(st, 3);
    if( it < 1 || it % r->thin != 0 ){
      problem(ck, "chain %lld: %s rows at iteration %lld, which is not a "
              "positive multiple of thin %lld", (long long)c, tab,
              (long long)it, (long long)r->thin);
      continue;
    }
    if( it > last ){
      if( n_beyond++ == 0 ) lo_beyond = it;
      hi_beyond = it;
      continue;
    }
    if( it > next )
      problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
              (long long)c, tab, it - r->thin > next ? "s" : "",
              span(buf, sizeof buf, next, it - r->thin), thin);
    next = it + r->thin;
    if( is_draw && (cnt != r->n_params || lo != 0 || hi != r->n_params - 1) )
      problem(ck, "chain %lld, iteration %lld: %lld draw row%s (idx %s), want "
              "one for each idx 0..%lld", (long long)c, (long long)it,
              (long long)cnt, cnt == 1 ? "" : "s", span(buf, sizeof buf, lo, hi),
              (long long)r->n_params - 1);
  }
  if( s != SQLITE_DONE ) step_failed(ck, is_draw ? "reading table draw"
                                                 : "reading table iteration");
  else if( next <= end )
    problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
            (long long)c, tab, end > next ? "s" : "",
            span(buf, sizeof buf, next, end), thin);
  if( n_beyond )
    problem(ck, "chain %lld: %s rows at %lld iteration%s (%s) %s",
            (long long)c, tab, (long long)n_beyond, n_beyond > 1 ? "s" : "",
            span(buf, sizeof buf, lo_beyond, hi_beyond), beyond);
  sqlite3_finalize(st);
}

/* Rows of `tab` in chains the run does not have. */
static void check_stray_chains(checker *ck, const char *sql, const char *tab)
{
  const fly_trace_shape *r = ck->s;
  sqlite3_stmt *st = prep(ck, sql);
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->run_id);
  sqlite3_bind_int64(st, 2, r->n_chains);
  while( (s = sqlite3_step(st)) == SQLITE_ROW )
    problem(ck, "%lld %s row%s of chain %lld, but the run has chains 0..%lld",
            (long long)sqlite3_column_int64(st, 1), tab,
            sqlite3_column_int64(st, 1) == 1 ? "" : "s",
            (long long)sqlite3_column_int64(st, 0), (long long)r->n_chains - 1);
  if( s != SQLITE_DONE ) step_failed(ck, tab);
  sqlite3_finalize(st);
}

fly_rc fly_trace_check(fly_db *db, const fly_trace_shape *r, fly_trace_problem_fn fn,
                       fly_trace_ckpt_fn ckpt, void *u, fly_err *err)
{
  checker ck = { db, r, fn, u };
  int64_t *ck_iter = NULL, total = r->n_warmup + r->n_iters;
  sqlite3_stmt *st = NULL;
  int s;

  check_params(&ck);
  ck_iter = fly_alloc_array((size_t)r->n_chains, sizeof *ck_iter);
  if( !ck_iter ){
    problem(&ck, "out of memory for %lld chains", (long long)r->n_chains);
    return fly_fail(err, FLY_NOMEM, "checking run %lld", (long long)r->run_id);
  }
  for(int64_t c = 0; c < r->n_chains; c++) ck_iter[c] = -1;
  if( (st = prep(&ck, "SELECT chain, iter, state FROM checkpoint"
                 " WHERE run_id = ?1 ORDER BY chain")) ){
    sqlite3_bind_int64(st, 1, r->run_id);
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      int64_t c = sqlite3_column_int64(st, 0), it = sqlite3_column_int64(st, 1);
      const void *p = sqlite3_column_blob(st, 2);
      size_t len = (size_t)sqlite3_column_bytes(st, 2);
      if( c < 0 || c >= r->n_chains ){
        problem(&ck, "checkpoint of chain %lld, but the run has chains "
                "0..%lld", (long long)c, (long long)r->n_chains - 1);
        continue;
      }
      if( it < 1 || it > total ){
        problem(&ck, "chain %lld: checkpoint at iteration %lld, outside "
                "1..%lld", (long long)c, (long long)it, (long long)total);
        it = -2;
      }
      ck_iter[c] = it;
      if( ckpt ) ckpt(u, c, p, len);
    }
    if( s != SQLITE_DONE ) step_failed(&ck, "reading table checkpoint");
    sqlite3_finalize(st);
  }

  /* ck_iter: -1 none, -2 out of range (reported), else the iteration.  A
   * running chain's rows go up to its checkpoint, a done one's to the end. */
  for(int64_t c = 0; c < r->n_chains; c++){
    int64_t it = ck_iter[c], last = it < 0 ? 0 : it;
    char beyond[96];
    if( r->done ){
      if( it == -1 )
        problem(&ck, "chain %lld: status 'done', but the chain has no "
                "checkpoint", (long long)c);
      else if( it >= 0 && it != total )
        problem(&ck, "chain %lld: status 'done', but its checkpoint is at "
                "iteration %lld of %lld", (long long)c, (long long)it,
                (long long)total);
      last = total;
      snprintf(beyond, sizeof beyond, "beyond the run's last iteration %lld",
               (long long)total);
    }else if( it == -2 ){
      continue;                 /* no telling where its rows should end */
    }else if( it == -1 ){
      snprintf(beyond, sizeof beyond, "but the chain has no checkpoint");
    }else{
      snprintf(beyond, sizeof beyond, "beyond its checkpoint at iteration %lld",
               (long long)it);
    }
    check_chain_rows(&ck, c, 1, last, beyond);
    check_chain_rows(&ck, c, 0, last, beyond);
  }
  check_stray_chains(&ck, "SELECT chain, count(*) FROM draw WHERE run_id = ?1"
                     " AND (chain < 0 OR chain >= ?2) GROUP BY chain", "draw");
  check_stray_chains(&ck, "SELECT chain, count(*) FROM iteration WHERE"
                     " run_id = ?1 AND (chain < 0 OR chain >= ?2) GROUP BY chain",
                     "iteration");
  fly_free(ck_iter);
  return FLY_OK;
}
