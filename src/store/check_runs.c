/*
 * check_runs.c -- the run tables' integrity check and listing (see
 * check_runs.h): every run's shape, parameter rows, checkpoints and the
 * draw and iteration rows each chain must have.
 *
 * Memory: one iteration number per chain; time: one pass over each run's
 * draw, iteration and checkpoint rows (grouped by iteration in SQLite).
 */
#include "store/check_runs.h"

#include <stdio.h>
#include <string.h>

#include "flymc/ckpt.h"
#include "util/mem.h"

#define MAX_CHAINS   (1 << 20)     /* beyond this n_chains is corrupt */


typedef struct runinfo {
  int64_t id, n_chains, n_warmup, n_iters, thin, P;
  int64_t N;                       /* rows of the data set, -1 if unknown */
  int     regular;                 /* z_mode 'regular': no bright rows */
  int     done;                    /* status 'done' */
} runinfo;

static void check_params(fly_db *db, fly_checker *ck, const runinfo *r)
{
  sqlite3_stmt *st = fly_check_prepare(db, ck,
      "SELECT idx FROM param WHERE run_id = ?1"
      " ORDER BY idx");
  int64_t next = 0;
  char buf[48];
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    if( i < 0 || i >= r->P ){
      fly_check_problem(ck, "param idx %lld: the run has parameters 0..%lld",
              (long long)i, (long long)r->P - 1);
      continue;
    }
    if( i > next )
      fly_check_problem(ck, "param rows of idx %s missing", fly_check_span(buf, sizeof buf, next, i - 1));
    next = i + 1;
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "reading table param");
  else if( next < r->P )
    fly_check_problem(ck, "param rows of idx %s missing",
            fly_check_span(buf, sizeof buf, next, r->P - 1));
  sqlite3_finalize(st);
}

/* A checkpoint blob: the checks of fly_chain_restore (the shared parser of
 * flymc/ckpt.h), plus the run's kernel and mode. */
static void check_ckpt(fly_db *db, fly_checker *ck, const runinfo *r, int64_t c,
                       const unsigned char *p, size_t len)
{
  fly_ckpt_view v;
  fly_err e = {0};
  if( fly_ckpt_parse(p, len, (size_t)r->P, r->N >= 0 ? r->N : 0, &v, &e) ){
    fly_check_problem(ck, "chain %lld: %s", (long long)c, e.msg);
    return;
  }
  if( r->regular && v.head.B != 0 )
    fly_check_problem(ck, "chain %lld: checkpoint holds %lld bright rows; a regular run has none",
            (long long)c, (long long)v.head.B);
}

/* Rows of view draw (is_draw) or iteration of chain c: exactly the
 * iterations thin, 2 thin, .. up to last, each draw iteration with all P
 * parameters.  beyond says what last is, for rows past it. */
static void check_chain_rows(fly_db *db, fly_checker *ck, const runinfo *r, int64_t c,
                             int is_draw, int64_t last, const char *beyond)
{
  const char *tab = is_draw ? "draw" : "iteration";
  sqlite3_stmt *st = fly_check_prepare(db, ck, is_draw
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
  sqlite3_bind_int64(st, 1, r->id);
  sqlite3_bind_int64(st, 2, c);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t it = sqlite3_column_int64(st, 0);
    int64_t cnt = sqlite3_column_int64(st, 1);
    int64_t lo = sqlite3_column_int64(st, 2), hi = sqlite3_column_int64(st, 3);
    if( it < 1 || it % r->thin != 0 ){
      fly_check_problem(ck, "chain %lld: %s rows at iteration %lld, which is not a "
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
      fly_check_problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
              (long long)c, tab, it - r->thin > next ? "s" : "",
              fly_check_span(buf, sizeof buf, next, it - r->thin), thin);
    next = it + r->thin;
    if( is_draw && (cnt != r->P || lo != 0 || hi != r->P - 1) )
      fly_check_problem(ck, "chain %lld, iteration %lld: %lld draw row%s (idx %s), want "
              "one for each idx 0..%lld", (long long)c, (long long)it,
              (long long)cnt, cnt == 1 ? "" : "s", fly_check_span(buf, sizeof buf, lo, hi),
              (long long)r->P - 1);
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, is_draw ? "reading table draw"
                                                 : "reading table iteration");
  else if( next <= end )
    fly_check_problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
            (long long)c, tab, end > next ? "s" : "",
            fly_check_span(buf, sizeof buf, next, end), thin);
  if( n_beyond )
    fly_check_problem(ck, "chain %lld: %s rows at %lld iteration%s (%s) %s",
            (long long)c, tab, (long long)n_beyond, n_beyond > 1 ? "s" : "",
            fly_check_span(buf, sizeof buf, lo_beyond, hi_beyond), beyond);
  sqlite3_finalize(st);
}

/* Rows of `table` in chains the run does not have. */
static void check_stray_chains(fly_db *db, fly_checker *ck, const runinfo *r, const char *sql,
                               const char *tab)
{
  sqlite3_stmt *st = fly_check_prepare(db, ck, sql);
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->id);
  sqlite3_bind_int64(st, 2, r->n_chains);
  while( (s = sqlite3_step(st)) == SQLITE_ROW )
    fly_check_problem(ck, "%lld %s row%s of chain %lld, but the run has chains 0..%lld",
            (long long)sqlite3_column_int64(st, 1), tab,
            sqlite3_column_int64(st, 1) == 1 ? "" : "s",
            (long long)sqlite3_column_int64(st, 0), (long long)r->n_chains - 1);
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, tab);
  sqlite3_finalize(st);
}

static void check_run(fly_db *db, fly_checker *ck, sqlite3_stmt *row, fly_dataset_checked *dss,
                      size_t n_ds)
{
  runinfo r;
  const char *zm = (const char *)sqlite3_column_text(row, 3);
  const char *status = (const char *)sqlite3_column_text(row, 9);
  int64_t *ck_iter = NULL;
  sqlite3_stmt *st = NULL;
  int s;

  memset(&r, 0, sizeof r);
  r.id = sqlite3_column_int64(row, 0);
  r.n_chains = sqlite3_column_int64(row, 4);
  r.n_warmup = sqlite3_column_int64(row, 5);
  r.n_iters = sqlite3_column_int64(row, 6);
  r.thin = sqlite3_column_int64(row, 7);
  r.P = sqlite3_column_int64(row, 8);
  r.done = status && strcmp(status, "done") == 0;
  const fly_dataset_checked *ds = fly_dataset_checked_find(dss, n_ds, sqlite3_column_int64(row, 1));
  r.N = ds ? ds->n_rows : -1;
  fly_check_scope(ck, "run %lld", (long long)r.id);

  if( r.n_chains < 1 || r.n_chains > MAX_CHAINS || r.thin < 1
      || r.thin > INT64_MAX / 4
      || r.n_warmup < 0 || r.n_iters < 0 || r.P < 1 || r.P > UINT32_MAX
      || r.n_warmup > INT64_MAX / 2 || r.n_iters > INT64_MAX / 2 ){
    fly_check_problem(ck, "bad shape (n_chains %lld, n_warmup %lld, n_iters %lld, thin "
            "%lld, n_params %lld): draws not checked", (long long)r.n_chains,
            (long long)r.n_warmup, (long long)r.n_iters, (long long)r.thin,
            (long long)r.P);
    goto done;
  }
  if( !zm || (strcmp(zm, "regular") && strcmp(zm, "explicit")
              && strcmp(zm, "implicit") && strcmp(zm, "gibbs")) )
    fly_check_problem(ck, "unknown z_mode '%s'", zm ? zm : "NULL");
  r.regular = zm && strcmp(zm, "regular") == 0;
  if( sqlite3_column_type(row, 10) != SQLITE_NULL
      && sqlite3_column_int64(row, 10) != r.P )
    fly_check_problem(ck, "n_params is %lld, its bound set %lld has %lld",
            (long long)r.P, (long long)sqlite3_column_int64(row, 2),
            (long long)sqlite3_column_int64(row, 10));
  check_params(db, ck, &r);

  int64_t total = r.n_warmup + r.n_iters;
  ck_iter = fly_alloc_array((size_t)r.n_chains, sizeof *ck_iter);
  if( !ck_iter ){ fly_check_problem(ck, "out of memory for %lld chains",
                          (long long)r.n_chains); goto done; }
  for(int64_t c = 0; c < r.n_chains; c++) ck_iter[c] = -1;
  if( (st = fly_check_prepare(db, ck, "SELECT chain, iter, state FROM checkpoint"
                 " WHERE run_id = ?1 ORDER BY chain")) ){
    sqlite3_bind_int64(st, 1, r.id);
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      int64_t c = sqlite3_column_int64(st, 0), it = sqlite3_column_int64(st, 1);
      const unsigned char *p = sqlite3_column_blob(st, 2);
      size_t len = (size_t)sqlite3_column_bytes(st, 2);
      if( c < 0 || c >= r.n_chains ){
        fly_check_problem(ck, "checkpoint of chain %lld, but the run has chains "
                "0..%lld", (long long)c, (long long)r.n_chains - 1);
        continue;
      }
      if( it < 1 || it > total ){
        fly_check_problem(ck, "chain %lld: checkpoint at iteration %lld, outside "
                "1..%lld", (long long)c, (long long)it, (long long)total);
        it = -2;
      }
      ck_iter[c] = it;
      check_ckpt(db, ck, &r, c, p, len);
    }
    if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "reading table checkpoint");
    sqlite3_finalize(st);
  }

  /* ck_iter: -1 none, -2 out of range (reported), else the iteration.  A
   * running chain's rows go up to its checkpoint, a done one's to the end. */
  for(int64_t c = 0; c < r.n_chains; c++){
    int64_t it = ck_iter[c], last = it < 0 ? 0 : it;
    char beyond[96];
    if( r.done ){
      if( it == -1 )
        fly_check_problem(ck, "chain %lld: status 'done', but the chain has no "
                "checkpoint", (long long)c);
      else if( it >= 0 && it != total )
        fly_check_problem(ck, "chain %lld: status 'done', but its checkpoint is at "
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
    check_chain_rows(db, ck, &r, c, 1, last, beyond);
    check_chain_rows(db, ck, &r, c, 0, last, beyond);
  }
  check_stray_chains(db, ck, &r, "SELECT chain, count(*) FROM draw WHERE run_id = ?1"
                     " AND (chain < 0 OR chain >= ?2) GROUP BY chain", "draw");
  check_stray_chains(db, ck, &r, "SELECT chain, count(*) FROM iteration WHERE"
                     " run_id = ?1 AND (chain < 0 OR chain >= ?2) GROUP BY chain",
                     "iteration");
done:
  fly_free(ck_iter);
  fly_check_scope(ck, "%s", "");
}

fly_rc fly_runs_check(fly_db *db, fly_dataset_checked *ds, size_t n_ds,
                      fly_checker *ck, int64_t *n_runs, fly_err *err)
{
  sqlite3_stmt *st;
  int s;
  *n_runs = 0;
  if( !ck ) return fly_fail(err, FLY_MISUSE, "fly_runs_check: no checker");
  fly_check_scope(ck, "table run");
  st = fly_check_prepare(db, ck,
      "SELECT r.id, r.dataset_id, r.bound_set_id, r.z_mode,"
      " r.n_chains, r.n_warmup, r.n_iters, r.thin, r.n_params, r.status,"
      " b.n_params FROM run r LEFT JOIN bound_set b"
      " ON b.id = r.bound_set_id ORDER BY r.id");
  if( !st ){ fly_check_scope(ck, "%s", ""); return FLY_OK; }
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    check_run(db, ck, st, ds, n_ds);
    ++*n_runs;
  }
  if( s != SQLITE_DONE ){
    fly_check_scope(ck, "table run");
    fly_check_step_failed(db, ck, "reading table run");
  }
  fly_check_scope(ck, "%s", "");
  sqlite3_finalize(st);
  return FLY_OK;
}

fly_rc fly_runs_list(fly_db *db, fly_run_brief_fn *fn, void *ctx,
                     fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT run_id, dataset, model, sampler, z_mode, n_chains, "
      "n_warmup, n_iters, status, wall_seconds FROM runs ORDER BY run_id", &st, err);
  if( rc ) return rc;
  while( sqlite3_step(st) == SQLITE_ROW ){
    fly_run_brief r;
    r.id = sqlite3_column_int64(st, 0);
    r.dataset = (const char *)sqlite3_column_text(st, 1);
    r.model = (const char *)sqlite3_column_text(st, 2);
    r.sampler = (const char *)sqlite3_column_text(st, 3);
    r.z_mode = (const char *)sqlite3_column_text(st, 4);
    r.n_chains = sqlite3_column_int(st, 5);
    r.n_warmup = sqlite3_column_int(st, 6);
    r.n_iters = sqlite3_column_int(st, 7);
    r.status = (const char *)sqlite3_column_text(st, 8);
    r.has_wall = sqlite3_column_type(st, 9) != SQLITE_NULL;
    r.wall_seconds = sqlite3_column_double(st, 9);
    fn(ctx, &r);
  }
  sqlite3_finalize(st);
  return FLY_OK;
}
