/*
 * shard_map.c -- the sharded MAP search and Hessian (see shard_map.h).
 *
 * Invariant: after every gather all ranks hold the same table of per-shard
 * values, and every sum over shards is the loop k = 0..S-1 over that
 * table, so f, g and H are the same bits on every rank and for every R.
 * A per-shard value is the sum over that shard's pages in page order,
 * starting from zero.  A rank that fails (a bad page, a bad target) says
 * so through fly_comm_any before the gather, so all ranks stop together.
 *
 * Cost per evaluation: one scan of the rank's own rows and one gather of
 * S (P + 1) doubles; the Hessian gathers S P^2.  Memory: one page per
 * owned shard buffer, the gathered table.
 */
#include "shard/shard_map.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shard/shard.h"
#include "store/dataset.h"
#include "store/db.h"
#include "store/pages.h"
#include "tune/lbfgs.h"
#include "tune/tune.h"
#include "util/blas.h"
#include "util/mem.h"

/* The L-BFGS settings of tune/tune.c, so a sharded MAP stops where an
 * unsharded one would. */
#define MAP_LBFGS_M  8
#define MAP_MAX_ITER 500
#define MAP_G_TOL    1e-9
#define MAP_F_TOL    1e-14
#define MAP_DEC_TOL  1e-15

typedef struct own {                /* a shard this rank reads */
  fly_db    *db;
  fly_pages *pg;
} own;

typedef struct job {
  fly_comm        *c;
  const fly_model *m;
  size_t           P, ldx;
  int64_t          S, k0, k1;       /* all shards; this rank's k0..k1-1 */
  own             *own;             /* k1 - k0 of them */
  double          *X, *logL, *ones, *work;
  size_t           page_rows;       /* the largest page of any owned shard */
  double          *mine, *all;      /* own and gathered per-shard values */
  int              checked;         /* a full scan has validated every row */
  int              verbose;
} job;

/* fly_shard_verify's callback: collect the resolved paths. */
typedef struct paths { char (*p)[4096]; size_t n, cap; int nomem; } paths;

static void collect(void *u, const fly_shard_info *s)
{
  paths *ps = u;
  if( ps->n == ps->cap ){
    size_t nc = ps->cap ? 2 * ps->cap : 8;
    char (*g)[4096] = fly_realloc_array(ps->p, nc, sizeof *g);
    if( !g ){ ps->nomem = 1; return; }
    ps->p = g;
    ps->cap = nc;
  }
  memcpy(ps->p[ps->n++], s->path, sizeof s->path);
}

/* One page of shard j (of this rank) into jb->X; on the first scan, every
 * value finite and every target the model's, as tune.c requires. */
static fly_rc page(job *jb, size_t j, int64_t pg, size_t *n, fly_err *err)
{
  fly_rc rc = fly_pages_read_page(jb->own[j].pg, pg, jb->X, n, err);
  for(size_t i = 0; rc == FLY_OK && !jb->checked && i < *n; i++){
    const double *x = jb->X + i * jb->ldx;
    for(size_t q = 0; q < jb->ldx && rc == FLY_OK; q++)
      if( !isfinite(x[q]) )
        rc = fly_fail(err, FLY_CORRUPT, "page %lld, column %zu: value %g is "
                      "not finite", (long long)pg, q + 1, x[q]);
    if( rc == FLY_OK )
      rc = jb->m->type->check_target(jb->m, x[jb->m->tcol], (int64_t)i, err);
  }
  if( rc ) fly_err_prefix(err, "shard %lld", (long long)(jb->k0 + (int64_t)j));
  return rc;
}

/* Gather len values per shard from jb->mine into jb->all, after every rank
 * said whether it failed. */
static fly_rc gather(job *jb, fly_rc rc, size_t len, fly_err *err)
{
  if( (rc = fly_comm_sync(jb->c, rc, "another rank failed (its message is above)", err)) )
    return rc;
  return fly_comm_gather(jb->c, jb->S, len, jb->mine, jb->all, err);
}

/* L-BFGS objective: f = -(log prior + sum_k sum log L), g = grad f. */
static fly_rc objective(void *u, const double *th, double *f, double *g,
                        fly_err *err)
{
  job *jb = u;
  const fly_model *m = jb->m;
  const size_t P = jb->P, len = P + 1;
  fly_rc rc = FLY_OK;

  for(size_t j = 0; rc == FLY_OK && j < (size_t)(jb->k1 - jb->k0); j++){
    double *v = jb->mine + j * len, ll = 0;
    memset(v, 0, len * sizeof *v);
    const fly_pages_info *in = fly_pages_info_of(jb->own[j].pg);
    int began = fly_db_read_begin(jb->own[j].db);
    for(int64_t pg = 0; rc == FLY_OK && pg < in->n_pages; pg++){
      size_t n = 0;
      if( (rc = page(jb, j, pg, &n, err)) ) break;
      m->type->eval(m, th, jb->X, jb->ldx, NULL, n, jb->logL, NULL, jb->work);
      double s = 0;
      for(size_t i = 0; i < n; i++) s += jb->logL[i];
      ll += s;
      m->type->grad(m, th, jb->X, jb->ldx, NULL, n, jb->ones, NULL, v + 1, jb->work);
    }
    fly_db_read_end(jb->own[j].db, began);
    v[0] = ll;
  }
  if( (rc = gather(jb, rc, len, err)) ) return rc;
  jb->checked = 1;
  memset(g, 0, P * sizeof *g);
  double lp = fly_model_log_prior(m, th, g), ll = 0;
  for(int64_t k = 0; k < jb->S; k++){
    const double *v = jb->all + (size_t)k * len;
    ll += v[0];
    for(size_t q = 0; q < P; q++) g[q] += v[1 + q];
  }
  *f = -(lp + ll);
  for(size_t q = 0; q < P; q++) g[q] = -g[q];
  return FLY_OK;
}

/* H = -hess log posterior at th, summed over shards in order. */
static fly_rc hessian(job *jb, const double *th, double *H, fly_err *err)
{
  const fly_model *m = jb->m;
  const size_t PP = jb->P * jb->P;
  fly_rc rc = FLY_OK;
  for(size_t j = 0; rc == FLY_OK && j < (size_t)(jb->k1 - jb->k0); j++){
    double *v = jb->mine + j * PP;
    memset(v, 0, PP * sizeof *v);
    const fly_pages_info *in = fly_pages_info_of(jb->own[j].pg);
    int began = fly_db_read_begin(jb->own[j].db);
    for(int64_t pg = 0; rc == FLY_OK && pg < in->n_pages; pg++){
      size_t n = 0;
      if( (rc = page(jb, j, pg, &n, err)) == FLY_OK )
        m->type->neg_hess(m, th, jb->X, jb->ldx, n, v, jb->work);
    }
    fly_db_read_end(jb->own[j].db, began);
  }
  if( (rc = gather(jb, rc, PP, err)) ) return rc;
  memset(H, 0, PP * sizeof *H);
  for(int64_t k = 0; k < jb->S; k++)
    for(size_t q = 0; q < PP; q++) H[q] += jb->all[(size_t)k * PP + q];
  fly_model_prior_neg_hess(m, H);
  return FLY_OK;
}

/* The bound set of one shard at the MAP r: its own if it is ready and at
 * those bits, else built (tune/tune.h with a given MAP: xi, keys and the
 * shard's moments from its rows); its moments into mom. */
static fly_rc shard_bounds(const char *path, const fly_model *m,
                           const fly_shard_map *r, double *mom, fly_err *err)
{
  fly_db *db = NULL;
  fly_bounds *b = NULL;
  fly_tune_opts o;
  fly_tune_given g = { r->theta, r->H, r->logpost, r->iters, r->g_norm };
  int64_t ds = 0, id = 0;
  fly_tune_opts_default(&o);
  o.given = &g;
  fly_rc rc = fly_db_open(path, 0, &db, err);
  if( rc == FLY_OK ) rc = fly_dataset_find(db, NULL, &ds, err);
  for(int pass = 0; rc == FLY_OK && pass < 2; pass++){
    o.force = pass;
    rc = fly_tune_get(db, ds, m, &o, &id, err);
    if( rc == FLY_OK ) rc = fly_bounds_load(db, id, m, &b, err);
    if( rc == FLY_OK && memcmp(b->theta_map, r->theta, r->P * sizeof *r->theta) == 0
        && memcmp(b->prec, r->H, r->P * r->P * sizeof *r->H) == 0 ){
      if( b->n_mom != r->n_mom )
        rc = fly_fail(err, FLY_CORRUPT, "bound set %lld: %zu moments, want %zu",
                      (long long)id, b->n_mom, r->n_mom);
      else memcpy(mom, b->mom, r->n_mom * sizeof *mom);
      break;
    }
    if( rc == FLY_OK && pass == 1 )
      rc = fly_fail(err, FLY_CORRUPT, "bound set %lld is not at the MAP it was "
                    "built at", (long long)id);
    fly_bounds_free(b);
    b = NULL;
  }
  fly_bounds_free(b);
  fly_db_close(db);
  return rc;
}

/* Tuning's third pass: each rank's shards get their bound set at the MAP;
 * the per-shard moments are gathered and summed in shard order into
 * r->mom. */
static fly_rc bounds(job *jb, char (*path)[4096], fly_shard_map *r,
                     fly_err *err)
{
  fly_rc rc = FLY_OK;
  for(int64_t k = jb->k0; rc == FLY_OK && k < jb->k1; k++){
    rc = shard_bounds(path[k], jb->m, r, jb->mine + (size_t)(k - jb->k0) * r->n_mom, err);
    if( rc ) fly_err_prefix(err, "shard %lld (%s)", (long long)k, path[k]);
  }
  if( (rc = gather(jb, rc, r->n_mom, err)) ) return rc;
  memset(r->mom, 0, r->n_mom * sizeof *r->mom);
  for(int64_t k = 0; k < jb->S; k++)
    for(size_t q = 0; q < r->n_mom; q++) r->mom[q] += jb->all[(size_t)k * r->n_mom + q];
  return FLY_OK;
}

static fly_rc store(const char *manifest_path, const fly_model *m,
                    const fly_shard_map *r, fly_err *err)
{
  static const char sql[] =
    "CREATE TABLE IF NOT EXISTS shard_map ("
    "  model TEXT NOT NULL, model_opts TEXT NOT NULL,"
    "  theta_map BLOB NOT NULL,"          /* f64[P] */
    "  laplace_prec BLOB NOT NULL,"       /* f64[P^2], H */
    "  map_logpost REAL NOT NULL, map_iters INTEGER NOT NULL,"
    "  map_grad_norm REAL NOT NULL,"
    "  moments BLOB NOT NULL,"            /* f64[n_mom]: sum over shards in order */
    "  PRIMARY KEY (model, model_opts)) WITHOUT ROWID";
  char mopts[256];
  fly_db *db = NULL;
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_tune_model_opts(m, mopts, sizeof mopts, err);
  if( rc == FLY_OK ) rc = fly_db_open(manifest_path, 0, &db, err);
  if( rc == FLY_OK ) rc = fly_db_begin(db, err);
  if( rc == FLY_OK ) rc = fly_db_exec(db, sql, err);
  if( rc == FLY_OK )
    rc = fly_db_prepare(db, "INSERT OR REPLACE INTO shard_map VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                        &st, err);
  if( rc == FLY_OK ){
    sqlite3_bind_text(st, 1, m->type->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, mopts, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 3, r->theta, r->P * sizeof *r->theta, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 4, r->H, r->P * r->P * sizeof *r->H, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, r->logpost);
    sqlite3_bind_int(st, 6, r->iters);
    sqlite3_bind_double(st, 7, r->g_norm);
    sqlite3_bind_blob64(st, 8, r->mom, r->n_mom * sizeof *r->mom, SQLITE_STATIC);
    if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "storing the sharded MAP");
  }
  sqlite3_finalize(st);
  if( rc == FLY_OK ) rc = fly_db_commit(db, err);
  else fly_db_rollback(db);
  fly_db_close(db);
  return rc;
}

void fly_shard_map_free(fly_shard_map *r)
{
  if( !r ) return;
  fly_free(r->mom);
  fly_free(r->theta);
  fly_free(r->H);
  fly_free(r);
}

fly_rc fly_shard_map_run(const char *manifest_path, const fly_model_spec *s,
                         fly_comm *c, int verbose, fly_shard_map **pr,
                         fly_err *err)
{
  paths ps = { NULL, 0, 0, 0 };
  job jb;
  fly_model m;
  fly_shard_map *r = NULL;
  fly_lbfgs *lb = NULL;
  fly_lbfgs_opts lo;
  fly_lbfgs_result lr;
  int64_t n_rows = 0, id = 0;
  fly_rc rc;

  *pr = NULL;
  memset(&jb, 0, sizeof jb);
  /* OpenBLAS's results (the Laplace covariance's dpotri) depend on its
   * thread count, which mpirun's core binding changes: one everywhere, so
   * every shard's bound set holds the same bits on any rank */
  fly_blas_serial();
  rc = fly_shard_verify(manifest_path, 0, collect, &ps, &n_rows, err);
  if( rc == FLY_OK && ps.nomem ) rc = fly_fail(err, FLY_NOMEM, "shard paths");
  if( rc ) goto setup;
  jb.c = c;
  jb.S = (int64_t)ps.n;
  jb.verbose = verbose;
  if( fly_comm_size(c) > jb.S ){
    rc = fly_fail(err, FLY_MISUSE, "%d ranks for %lld shards: at most one rank "
                  "per shard", fly_comm_size(c), (long long)jb.S);
    goto setup;
  }
  jb.k0 = fly_comm_shard_first(jb.S, fly_comm_size(c), fly_comm_rank(c));
  jb.k1 = fly_comm_shard_first(jb.S, fly_comm_size(c), fly_comm_rank(c) + 1);
  {
    fly_db *db0 = NULL;
    rc = fly_db_open(ps.p[0], FLY_DB_READONLY, &db0, err);
    if( rc == FLY_OK ) rc = fly_dataset_find(db0, NULL, &id, err);
    if( rc == FLY_OK ) rc = fly_model_spec_resolve(s, db0, id, &m, err);
    fly_db_close(db0);
    if( rc ) goto setup;
  }
  if( strcmp(m.type->name, "logistic") != 0 ){
    rc = fly_fail(err, FLY_MISUSE, "sharded tuning takes --model logistic only so "
                  "far (%s resolves options from the whole data set)", m.type->name);
    goto setup;
  }
  jb.m = &m;
  jb.P = m.type->n_params(&m);
  jb.ldx = m.D + 1;
  size_t n_own = (size_t)(jb.k1 - jb.k0);
  jb.own = fly_alloc_array(n_own, sizeof *jb.own);
  if( !jb.own ){ rc = fly_fail(err, FLY_NOMEM, "shard handles"); goto setup; }
  for(size_t j = 0; j < n_own; j++){
    const char *p = ps.p[jb.k0 + (int64_t)j];
    rc = fly_db_open(p, FLY_DB_READONLY, &jb.own[j].db, err);
    if( rc == FLY_OK ) rc = fly_dataset_find(jb.own[j].db, NULL, &id, err);
    if( rc == FLY_OK ) rc = fly_pages_open(jb.own[j].db, FLY_TABLE_DATA, id, 0, &jb.own[j].pg, err);
    if( rc ){ fly_err_prefix(err, "shard %lld (%s)", (long long)(jb.k0 + (int64_t)j), p); goto setup; }
    size_t pr_j = (size_t)fly_pages_info_of(jb.own[j].pg)->page_rows;
    if( pr_j > jb.page_rows ) jb.page_rows = pr_j;
  }
  size_t wl = m.type->work_len(&m, jb.page_rows), n_mom = m.type->n_moments(&m);
  size_t len = jb.P * jb.P > jb.P + 1 ? jb.P * jb.P : jb.P + 1;
  if( n_mom > len ) len = n_mom;
  jb.X = fly_alloc_array(jb.page_rows, jb.ldx * sizeof *jb.X);
  jb.logL = fly_alloc_array(jb.page_rows, sizeof *jb.logL);
  jb.ones = fly_alloc_array(jb.page_rows, sizeof *jb.ones);
  jb.work = fly_alloc_array(wl ? wl : 1, sizeof *jb.work);
  jb.mine = fly_alloc_array(n_own, len * sizeof *jb.mine);
  jb.all = fly_alloc_array((size_t)jb.S, len * sizeof *jb.all);
  r = fly_alloc_array(1, sizeof *r);
  if( r ){
    r->theta = fly_alloc_array(jb.P, sizeof *r->theta);
    r->H = fly_alloc_array(jb.P * jb.P, sizeof *r->H);
    r->mom = fly_alloc_array(n_mom, sizeof *r->mom);
  }
  if( !jb.X || !jb.logL || !jb.ones || !jb.work || !jb.mine || !jb.all || !r
      || !r->theta || !r->H || !r->mom ){
    rc = fly_fail(err, FLY_NOMEM, "sharded tuning buffers");
    goto setup;
  }
  for(size_t i = 0; i < jb.page_rows; i++) jb.ones[i] = 1;
  r->P = jb.P;
  r->n_shards = jb.S;
  r->n_rows = n_rows;
  r->n_mom = n_mom;

setup:
  /* Every rank passes here, so a rank that failed stops the others. */
  if( (rc = fly_comm_sync(c, rc, "another rank failed (its message is above)", err)) )
    goto done;
  fly_lbfgs_opts_default(&lo);
  lo.m = MAP_LBFGS_M;
  lo.g_tol = MAP_G_TOL;
  lo.f_tol = MAP_F_TOL;
  lo.dec_tol = MAP_DEC_TOL;
  lo.max_iter = MAP_MAX_ITER;
  lo.max_evals = 4 * MAP_MAX_ITER + 20;
  if( (rc = fly_lbfgs_new(jb.P, MAP_LBFGS_M, &lb, err)) ) goto done;
  rc = fly_lbfgs_run(lb, objective, &jb, r->theta, &lo, &lr, err);
  if( rc == FLY_NUMERIC && lr.stop == FLY_LBFGS_LINESEARCH
      && lr.g_norm <= 1e-6 * fmax(1, lr.g_norm0) ){
    fly_err_clear(err);   /* at the precision of the sum, as tune.c */
    rc = FLY_OK;
  }
  if( rc ) goto done;
  r->logpost = -lr.f;
  r->g_norm = lr.g_norm;
  r->iters = lr.iters;
  r->evals = lr.evals;
  if( (rc = hessian(&jb, r->theta, r->H, err)) ) goto done;
  if( (rc = bounds(&jb, ps.p, r, err)) ) goto done;
  if( verbose && fly_comm_rank(c) == 0 )
    fprintf(stderr, "shard tune: %lld shards on %d ranks: MAP in %d iterations "
            "(%d evaluations), log posterior %.12g, |grad| %.3g\n", (long long)jb.S,
            fly_comm_size(c), lr.iters, lr.evals, r->logpost, r->g_norm);
  if( fly_comm_rank(c) == 0 ) rc = store(manifest_path, &m, r, err);
  rc = fly_comm_sync(c, rc, "rank 0 failed to store the result", err);

done:
  fly_lbfgs_free(lb);
  for(size_t j = 0; jb.own && j < (size_t)(jb.k1 - jb.k0); j++){
    fly_pages_close(jb.own[j].pg);
    fly_db_close(jb.own[j].db);
  }
  fly_free(jb.own);
  fly_free(jb.X);
  fly_free(jb.logL);
  fly_free(jb.ones);
  fly_free(jb.work);
  fly_free(jb.mine);
  fly_free(jb.all);
  fly_free(ps.p);
  if( rc ){ fly_shard_map_free(r); r = NULL; }
  *pr = r;
  return rc;
}

fly_rc fly_shard_map_load(const char *manifest_path, const fly_model *m,
                          fly_shard_map **pr, fly_err *err)
{
  char mopts[256];
  fly_db *db = NULL;
  sqlite3_stmt *st = NULL;
  fly_shard_map *r = NULL;
  size_t P = m->type->n_params(m), n_mom = m->type->n_moments(m);
  *pr = NULL;
  fly_rc rc = fly_tune_model_opts(m, mopts, sizeof mopts, err);
  if( rc == FLY_OK ) rc = fly_db_open(manifest_path, FLY_DB_READONLY, &db, err);
  if( rc == FLY_OK && sqlite3_prepare_v2(fly_db_sqlite(db), "SELECT theta_map, laplace_prec, "
                     "map_logpost, map_iters, map_grad_norm, moments FROM shard_map "
                     "WHERE model = ?1 AND model_opts = ?2", -1, &st, NULL) != SQLITE_OK ){
    fly_db_close(db);
    return FLY_OK;                 /* never tuned: no table */
  }
  if( rc == FLY_OK ){
    sqlite3_bind_text(st, 1, m->type->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, mopts, -1, SQLITE_STATIC);
    if( sqlite3_step(st) == SQLITE_ROW ){
      if( (size_t)sqlite3_column_bytes(st, 0) != P * sizeof(double) ||
          (size_t)sqlite3_column_bytes(st, 1) != P * P * sizeof(double) ||
          (size_t)sqlite3_column_bytes(st, 5) != n_mom * sizeof(double) )
        rc = fly_fail(err, FLY_CORRUPT, "%s: table shard_map: a row of the wrong size",
                      manifest_path);
      else if( !(r = fly_alloc_array(1, sizeof *r)) || !(r->theta = fly_alloc_array(P, sizeof *r->theta))
               || !(r->H = fly_alloc_array(P * P, sizeof *r->H))
               || !(r->mom = fly_alloc_array(n_mom, sizeof *r->mom)) )
        rc = fly_fail(err, FLY_NOMEM, "sharded MAP");
      else{
        r->P = P;
        r->n_mom = n_mom;
        memcpy(r->theta, sqlite3_column_blob(st, 0), P * sizeof *r->theta);
        memcpy(r->H, sqlite3_column_blob(st, 1), P * P * sizeof *r->H);
        r->logpost = sqlite3_column_double(st, 2);
        r->iters = sqlite3_column_int(st, 3);
        r->g_norm = sqlite3_column_double(st, 4);
        memcpy(r->mom, sqlite3_column_blob(st, 5), n_mom * sizeof *r->mom);
      }
    }
  }
  sqlite3_finalize(st);
  fly_db_close(db);
  if( rc ) fly_shard_map_free(r);
  else *pr = r;
  return rc;
}

fly_rc fly_shard_paths(const char *manifest_path, char (**out)[4096], size_t *n,
                       int64_t *n_rows, fly_err *err)
{
  paths ps = { NULL, 0, 0, 0 };
  fly_rc rc = fly_shard_verify(manifest_path, 0, collect, &ps, n_rows, err);
  if( rc == FLY_OK && (ps.nomem || ps.n == 0) ) rc = fly_fail(err, FLY_NOMEM, "shard paths");
  if( rc ){
    fly_free(ps.p);
    ps.p = NULL;
    ps.n = 0;
  }
  *out = ps.p;
  *n = ps.n;
  return rc;
}

fly_rc fly_shard_bounds_at(fly_db *db, int64_t ds, const fly_model *m,
                           const fly_shard_map *r, int64_t *bs, fly_err *err)
{
  fly_tune_opts o;
  fly_tune_given g = { r->theta, r->H, r->logpost, r->iters, r->g_norm };
  fly_tune_opts_default(&o);
  o.given = &g;
  return fly_tune_get(db, ds, m, &o, bs, err);
}

int fly_shard_is_manifest(fly_db *db)
{
  sqlite3_stmt *st = NULL;
  int yes = 0;
  if( sqlite3_prepare_v2(fly_db_sqlite(db), "SELECT 1 FROM sqlite_schema WHERE"
                         " type = 'table' AND name = 'shard_set'", -1, &st, NULL) == SQLITE_OK )
    yes = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return yes;
}

fly_rc fly_shard_tune_bounds(fly_db *manifest, const fly_model_spec *s,
                             const fly_tune_opts *o, fly_bounds **pb,
                             fly_err *err)
{
  fly_comm *c = NULL;
  fly_shard_map *r = NULL;
  fly_db *db0 = NULL;
  fly_bounds *b = NULL;
  fly_model m;
  paths ps = { NULL, 0, 0, 0 };
  int64_t id = 0, bs = 0;
  struct timespec t0, t1;
  fly_rc rc;

  *pb = NULL;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if( o && o->tuning && strcmp(o->tuning, "map") != 0 )
    return fly_fail(err, FLY_MISUSE, "a shard manifest is tuned with --bounds map only so far");
  rc = fly_comm_open(&c, err);
  if( rc == FLY_OK ) rc = fly_shard_map_run(fly_db_path(manifest), s, c, o ? o->verbose : 0, &r, err);
  if( rc == FLY_OK ) rc = fly_shard_verify(fly_db_path(manifest), 0, collect, &ps, NULL, err);
  if( rc == FLY_OK && (ps.nomem || ps.n == 0) ) rc = fly_fail(err, FLY_NOMEM, "shard paths");
  if( rc == FLY_OK ) rc = fly_db_open(ps.p[0], FLY_DB_READONLY, &db0, err);
  if( rc == FLY_OK ) rc = fly_dataset_find(db0, NULL, &id, err);
  if( rc == FLY_OK ) rc = fly_model_spec_resolve(s, db0, id, &m, err);
  if( rc == FLY_OK ){
    fly_tune_opts q;
    fly_tune_opts_default(&q);
    rc = fly_tune_get(db0, id, &m, &q, &bs, err);   /* ready: found, not built */
  }
  if( rc == FLY_OK ) rc = fly_bounds_load(db0, bs, &m, &b, err);
  if( rc == FLY_OK && b->n_mom != r->n_mom )
    rc = fly_fail(err, FLY_CORRUPT, "shard 0: %zu moments, want %zu", b->n_mom, r->n_mom);
  if( rc == FLY_OK ){
    memcpy(b->mom, r->mom, r->n_mom * sizeof *r->mom);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    b->tune_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  }
  if( rc ){ fly_bounds_free(b); b = NULL; }
  *pb = b;
  fly_db_close(db0);
  fly_free(ps.p);
  fly_shard_map_free(r);
  fly_comm_close(c);
  return rc;
}
