/*
 * loo.c -- PSIS-LOO of a run on tall data, stored, and the comparison of
 * runs by it (loo.h).
 *
 * A run's posterior (run/posterior.h): its model resolved from the stored
 * settings, S draws pooled over the chains (evenly thinned) and their
 * mean.  The rows stream through a cursor (run/posterior.h) in blocks of
 * FLY_ROWWISE rows, so each row's log-likelihood has the same bits
 * whatever block it shares (models/model.h), in this pass and in a
 * comparison's.  Sampled rows wait in a buffer of B rows; a full buffer
 * is evaluated at every draw (S calls of at most FLY_ROWWISE rows each)
 * into B S-vectors, each given to PSIS with its row's own r_eff,
 * estimated from the chains (loo/reff.h) unless one is given.  The plpd
 * sums over all N rows are accumulated around the first row's value (the
 * estimators are invariant under that shift) in long double, so N = 10^8
 * rows lose nothing to cancellation.
 *
 * Estimators (R's loo 2.5.1, srs_diff_est and srs_est), with a_i = plpd_i
 * over all rows, y_j = elpd_loo_j and e_j = y_j - a_j over the m sampled:
 *   elpd = sum a + N mean(e),  subsampling_se^2 = N^2 (1 - m/N) var(e) / m,
 *   se^2 = sum a^2 + N mean(y^2 - a^2) - elpd^2 / N + subsampling_se^2 / N,
 *   p_loo = N mean(p),  p_loo_se^2 = N var(p)   (var: n - 1 denominator).
 * Exact (m = N): elpd = sum y, se^2 = N var(y), likewise p_loo.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "loo/loo.h"
#include "run/posterior.h"
#include "loo/reff.h"
#include "loo/psis.h"
#include "models/model.h"
#include "store/dataset.h"
#include "util/mem.h"
#include "util/rng.h"

#define BUF_ROWS 64   /* sampled rows evaluated together */

void fly_loo_opts_default(fly_loo_opts *o)
{
  o->m = 0;
  o->max_draws = 4000;
  o->seed = 1;
  o->r_eff = 0;
}

/* ---- estimators --------------------------------------------------------- */

/* A sampled row. */
typedef struct point { int64_t row; double y, p, k, a, r; } point;

static double mean_of(const double *v, size_t n)
{
  long double s = 0;
  for(size_t i = 0; i < n; i++) s += v[i];
  return (double)(s / (long double)n);
}

/* Sample variance (n - 1), two passes; 0 for n < 2. */
static double var_of(const double *v, size_t n)
{
  if( n < 2 ) return 0;
  double mu = mean_of(v, n);
  long double s = 0;
  for(size_t i = 0; i < n; i++) s += (long double)(v[i] - mu) * (v[i] - mu);
  return (double)(s / (long double)(n - 1));
}

/* srs_diff_est: approximations a over N rows given as sums around c
 * (s1 = sum(a - c), s2 = sum (a - c)^2); y and am = a on the m sampled.
 * e: m doubles of scratch. */
static void diff_est(double N, long double s1, long double s2, double c,
                     const double *y, const double *am, size_t m, double *e,
                     double *y_hat, double *hat_v_y, double *v_y_hat)
{
  long double q = 0;
  for(size_t j = 0; j < m; j++){
    e[j] = y[j] - am[j];
    q += (long double)(y[j] - c) * (y[j] - c) - (long double)(am[j] - c) * (am[j] - c);
  }
  double t_e = N * mean_of(e, m);
  double v = m < N ? N * N * (1 - (double)m / N) * var_of(e, m) / (double)m : 0;
  long double yh = s1 + t_e;           /* shifted by -N c */
  *y_hat = (double)(yh + (long double)N * c);
  *v_y_hat = v;
  *hat_v_y = (double)(s2 + (long double)N * (q / (long double)m) - yh * yh / N + v / N);
}

/* ---- one run ------------------------------------------------------------ */

typedef struct pass {
  const fly_posterior *p;
  fly_psis_ws *ws;
  double *work, *Xb, *ll, *tmp;
  int64_t rows[BUF_ROWS];
  double  a[BUF_ROWS];
  size_t  nb;
  point  *pt;
  size_t  n_pt;
  double  r_eff;        /* given, or 0: each row's from its chains (reff) */
  fly_reff_ws *reff;
} pass;

/* Exact PSIS-LOO of the buffered rows, appended to pt. */
static fly_rc flush(pass *ps, size_t W, fly_err *err)
{
  const fly_posterior *p = ps->p;
  size_t S = p->S;
  for(size_t s = 0; s < S; s++)
    for(size_t o = 0; o < ps->nb; o += FLY_ROWWISE){
      size_t n = ps->nb - o < FLY_ROWWISE ? ps->nb - o : FLY_ROWWISE;
      p->m.type->eval(&p->m, p->th + s * p->P, ps->Xb + o * W, W, NULL, n, ps->tmp,
                      NULL, ps->work);
      for(size_t j = 0; j < n; j++) ps->ll[(o + j) * S + s] = ps->tmp[j];
    }
  for(size_t j = 0; j < ps->nb; j++){
    const double *l = ps->ll + j * S;
    for(size_t s = 0; s < S; s++)
      if( !isfinite(l[s]) )
        return fly_fail(err, FLY_NUMERIC, "run %lld: log-likelihood of data row %lld at "
                        "draw %zu is %g", (long long)p->run_id, (long long)ps->rows[j] + 1,
                        s + 1, l[s]);
    double re = ps->r_eff;
    fly_rc rc;
    if( ps->reff && (rc = fly_reff_row(ps->reff, l, &re, err)) ) return rc;
    fly_psis_row r;
    fly_psis_loo_row(ps->ws, l, S, re, &r);
    point *q = &ps->pt[ps->n_pt++];
    q->row = ps->rows[j];
    q->y = r.elpd_loo;
    q->p = r.p_loo;
    q->k = r.pareto_k;
    q->a = ps->a[j];
    q->r = re;
  }
  ps->nb = 0;
  return FLY_OK;
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Resolve o->m against N: the rows to sample. */
static fly_rc rows_of(const fly_loo_opts *o, int64_t N, int64_t *m, fly_err *err)
{
  if( o->m < 0 ) *m = N;
  else if( o->m == 0 ) *m = N <= FLY_LOO_EXACT_ROWS ? N : FLY_LOO_DEFAULT_M;
  else *m = o->m;
  if( *m > N )
    return fly_fail(err, FLY_RANGE, "--subsample %lld: the data set has %lld rows",
                    (long long)*m, (long long)N);
  return FLY_OK;
}

static fly_rc store(fly_db *db, const fly_loo_result *r, const point *pt, size_t n,
                    fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  char sql[256];
  if( (rc = fly_db_begin(db, err)) ) return rc;
  snprintf(sql, sizeof sql, "DELETE FROM loo_point WHERE run_id = %lld;"
           "DELETE FROM loo WHERE run_id = %lld", (long long)r->run_id, (long long)r->run_id);
  if( (rc = fly_db_exec(db, sql, err)) ) goto done;
  if( (rc = fly_db_prepare(db, "INSERT INTO loo(run_id, method, n_rows, m, n_draws, seed, "
                           "r_eff, approximation, elpd_loo, se, subsampling_se, p_loo, "
                           "p_loo_se, looic, looic_se, k_good, k_ok, k_bad, k_verybad, "
                           "seconds, r_eff_source) VALUES (?,?,?,?,?,?,?,'plpd',?,?,?,?,?,?,?,"
                           "?,?,?,?,?,?)",
                           &st, err)) ) goto done;
  sqlite3_bind_int64(st, 1, r->run_id);
  sqlite3_bind_text(st, 2, r->exact ? "exact" : "subsample", -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, r->N);
  sqlite3_bind_int64(st, 4, r->m);
  sqlite3_bind_int64(st, 5, r->S);
  sqlite3_bind_int64(st, 6, (sqlite3_int64)r->seed);
  sqlite3_bind_double(st, 7, r->r_eff);
  const double v[] = { r->elpd_loo, r->se, r->subsampling_se, r->p_loo, r->p_loo_se,
                       r->looic, r->looic_se };
  for(int i = 0; i < 7; i++) sqlite3_bind_double(st, 8 + i, v[i]);
  const int64_t k[] = { r->k_good, r->k_ok, r->k_bad, r->k_verybad };
  for(int i = 0; i < 4; i++) sqlite3_bind_int64(st, 15 + i, k[i]);
  sqlite3_bind_double(st, 19, r->seconds);
  sqlite3_bind_text(st, 20, r->r_eff_chains ? "chains" : "given", -1, SQLITE_STATIC);
  if( sqlite3_step(st) != SQLITE_DONE ){ rc = fly_db_fail(db, err, "insert loo"); goto done; }
  sqlite3_finalize(st);
  st = NULL;
  if( (rc = fly_db_prepare(db, "INSERT INTO loo_point(run_id, row, elpd_loo, p_loo, "
                           "pareto_k, plpd, r_eff) VALUES (?,?,?,?,?,?,?)", &st, err)) ) goto done;
  for(size_t i = 0; i < n; i++){
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, pt[i].row);
    sqlite3_bind_double(st, 3, pt[i].y);
    sqlite3_bind_double(st, 4, pt[i].p);
    if( isfinite(pt[i].k) ) sqlite3_bind_double(st, 5, pt[i].k);
    else sqlite3_bind_null(st, 5);
    sqlite3_bind_double(st, 6, pt[i].a);
    sqlite3_bind_double(st, 7, pt[i].r);
    if( sqlite3_step(st) != SQLITE_DONE ){ rc = fly_db_fail(db, err, "insert loo_point"); goto done; }
  }
  sqlite3_finalize(st);
  st = NULL;
  rc = fly_db_commit(db, err);
done:
  sqlite3_finalize(st);
  if( rc ) fly_db_rollback(db);
  return rc;
}

/* The loo of posterior p, stored. */
static fly_rc run_post(fly_db *db, const fly_posterior *p, const fly_loo_opts *o,
                       fly_loo_result *res, fly_err *err)
{
  fly_posterior_rows cu = {0};
  pass ps;
  double *X = NULL, *a = NULL, *y = NULL, *am = NULL, *e = NULL;
  double t0 = now();
  fly_rc rc;
  fly_rng rng;
  int64_t m = 0;
  memset(&ps, 0, sizeof ps);
  ps.p = p;
  ps.r_eff = o->r_eff > 0 ? o->r_eff : 0;
  if( (rc = fly_posterior_rows_open(db, p->ds, &cu, err)) ) goto done;
  int64_t N = cu.N;
  size_t W = cu.W;
  if( (rc = rows_of(o, N, &m, err)) ) goto done;
  if( (rc = fly_psis_ws_new(p->S, &ps.ws, err)) ) goto done;
  if( !ps.r_eff && (rc = fly_reff_ws_new(p->chain_len, p->C, &ps.reff, err)) ) goto done;
  size_t wl = p->m.type->work_len(&p->m, FLY_ROWWISE);
  if( !(X = fly_alloc_array(FLY_ROWWISE, W * sizeof *X)) ||
      !(a = fly_alloc_array(FLY_ROWWISE, sizeof *a)) ||
      !(ps.work = fly_alloc_array(wl, sizeof *ps.work)) ||
      !(ps.Xb = fly_alloc_array(BUF_ROWS, W * sizeof *ps.Xb)) ||
      !(ps.ll = fly_alloc_array(BUF_ROWS, p->S * sizeof *ps.ll)) ||
      !(ps.tmp = fly_alloc_array(FLY_ROWWISE, sizeof *ps.tmp)) ||
      !(ps.pt = fly_alloc_array((size_t)m, sizeof *ps.pt)) ){
    rc = fly_fail(err, FLY_NOMEM, "loo of run %lld: buffers for %lld rows",
                  (long long)p->run_id, (long long)m);
    goto done;
  }
  fly_rng_seed(&rng, o->seed, 0);
  long double s1 = 0, s2 = 0;
  double c = 0;
  int64_t r = 0, picked = 0;
  int began = fly_db_read_begin(db);
  for(;;){
    size_t n;
    if( (rc = fly_posterior_rows_block(&cu, X, FLY_ROWWISE, &n, err)) ) break;
    if( n == 0 ) break;
    p->m.type->eval(&p->m, p->mean, X, W, NULL, n, a, NULL, ps.work);
    for(size_t j = 0; j < n; j++, r++){
      if( !isfinite(a[j]) ){
        rc = fly_fail(err, FLY_NUMERIC, "run %lld: log-likelihood of data row %lld at the "
                      "posterior mean is %g", (long long)p->run_id, (long long)r + 1, a[j]);
        break;
      }
      if( r == 0 ) c = a[j];
      s1 += a[j] - c;
      s2 += (long double)(a[j] - c) * (a[j] - c);
      /* selection sampling: row r is taken with probability
       * (rows still wanted) / (rows left) */
      if( picked < m && (m == N || (double)(N - r) * fly_rng_uniform(&rng) < (double)(m - picked)) ){
        picked++;
        memcpy(ps.Xb + ps.nb * W, X + j * W, W * sizeof *X);
        ps.rows[ps.nb] = r;
        ps.a[ps.nb++] = a[j];
        if( ps.nb == BUF_ROWS && (rc = flush(&ps, W, err)) ) break;
      }
    }
    if( rc ) break;
  }
  if( !rc && ps.nb ) rc = flush(&ps, W, err);
  fly_db_read_end(db, began);
  if( rc ) goto done;
  if( r != N || (int64_t)ps.n_pt != m ){
    rc = fly_fail(err, FLY_CORRUPT, "data set %lld: %lld rows read of %lld",
                  (long long)p->ds, (long long)r, (long long)N);
    goto done;
  }

  memset(res, 0, sizeof *res);
  res->run_id = p->run_id;
  res->exact = m == N;
  res->N = N;
  res->m = m;
  res->S = (int64_t)p->S;
  res->seed = o->seed;
  res->r_eff_chains = ps.r_eff == 0;
  size_t M = (size_t)m;
  if( !(y = fly_alloc_array(M, sizeof *y)) || !(am = fly_alloc_array(M, sizeof *am)) ||
      !(e = fly_alloc_array(M, sizeof *e)) ){
    rc = fly_fail(err, FLY_NOMEM, "loo of run %lld", (long long)p->run_id);
    goto done;
  }
  long double rs = 0;
  for(size_t j = 0; j < M; j++){
    const point *q = &ps.pt[j];
    rs += q->r;
    y[j] = q->y;
    am[j] = q->a;
    double k = q->k;
    if( k <= 0.5 ) res->k_good++;
    else if( k <= 0.7 ) res->k_ok++;
    else if( k <= 1 ) res->k_bad++;
    else res->k_verybad++;     /* +inf and NaN too */
  }
  res->r_eff = (double)(rs / (long double)M);
  double dN = (double)N;
  if( res->exact ){
    long double t = 0;
    for(size_t j = 0; j < M; j++) t += y[j];
    res->elpd_loo = (double)t;
    res->se = sqrt(dN * var_of(y, M));
  }else{
    double hv;
    diff_est(dN, s1, s2, c, y, am, M, e, &res->elpd_loo, &hv, &res->subsampling_se);
    res->se = sqrt(hv);
    res->subsampling_se = sqrt(res->subsampling_se);
  }
  for(size_t j = 0; j < M; j++) y[j] = ps.pt[j].p;
  res->p_loo = dN * mean_of(y, M);
  res->p_loo_se = sqrt(dN * var_of(y, M));
  res->looic = -2 * res->elpd_loo;
  res->looic_se = 2 * res->se;
  res->seconds = now() - t0;
  rc = store(db, res, ps.pt, ps.n_pt, err);
done:
  fly_posterior_rows_close(&cu);
  fly_psis_ws_free(ps.ws);
  fly_reff_ws_free(ps.reff);
  fly_free(ps.work);
  fly_free(ps.Xb);
  fly_free(ps.ll);
  fly_free(ps.tmp);
  fly_free(ps.pt);
  fly_free(X);
  fly_free(a);
  fly_free(y);
  fly_free(am);
  fly_free(e);
  return rc;
}

fly_rc fly_loo_run(fly_db *db, int64_t run_id, const fly_loo_opts *o,
                   fly_loo_result *res, fly_err *err)
{
  fly_posterior p;
  fly_rc rc = fly_posterior_load(db, run_id, o->max_draws, 2, "loo", &p, err);
  if( rc ) return rc;
  rc = run_post(db, &p, o, res, err);
  fly_posterior_free(&p);
  return rc;
}

fly_rc fly_loo_load(fly_db *db, int64_t run_id, fly_loo_result *res, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT method = 'exact', n_rows, m, n_draws, seed, r_eff, "
                             "elpd_loo, se, subsampling_se, p_loo, p_loo_se, looic, looic_se, "
                             "k_good, k_ok, k_bad, k_verybad, coalesce(seconds, 0), "
                             "r_eff_source = 'chains' "
                             "FROM loo WHERE run_id = ?", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    memset(res, 0, sizeof *res);
    res->run_id = run_id;
    res->exact = sqlite3_column_int(st, 0);
    res->N = sqlite3_column_int64(st, 1);
    res->m = sqlite3_column_int64(st, 2);
    res->S = sqlite3_column_int64(st, 3);
    res->seed = (uint64_t)sqlite3_column_int64(st, 4);
    res->r_eff = sqlite3_column_double(st, 5);
    double *v[] = { &res->elpd_loo, &res->se, &res->subsampling_se, &res->p_loo,
                    &res->p_loo_se, &res->looic, &res->looic_se };
    for(int i = 0; i < 7; i++) *v[i] = sqlite3_column_double(st, 6 + i);
    int64_t *k[] = { &res->k_good, &res->k_ok, &res->k_bad, &res->k_verybad };
    for(int i = 0; i < 4; i++) *k[i] = sqlite3_column_int64(st, 13 + i);
    res->seconds = sqlite3_column_double(st, 17);
    res->r_eff_chains = sqlite3_column_int(st, 18);
  }else if( s == SQLITE_DONE ){
    rc = fly_fail(err, FLY_RANGE, "run %lld has no loo result", (long long)run_id);
  }else{
    rc = fly_db_fail(db, err, "read loo");
  }
  sqlite3_finalize(st);
  return rc;
}

/* ---- comparison --------------------------------------------------------- */

/* Run run_id's stored points (m of them, by row) into pt. */
static fly_rc points_load(fly_db *db, int64_t run_id, point *pt, size_t m, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  size_t n = 0;
  int s;
  fly_rc rc = fly_db_prepare(db, "SELECT row, elpd_loo, plpd FROM loo_point "
                             "WHERE run_id = ? ORDER BY row", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW && n < m ){
    pt[n].row = sqlite3_column_int64(st, 0);
    pt[n].y = sqlite3_column_double(st, 1);
    pt[n].a = sqlite3_column_double(st, 2);
    n++;
  }
  if( s != SQLITE_ROW && s != SQLITE_DONE ) rc = fly_db_fail(db, err, "read loo_point");
  else if( n != m || s == SQLITE_ROW )
    rc = fly_fail(err, FLY_CORRUPT, "run %lld: loo_point holds other than its %zu rows",
                  (long long)run_id, m);
  sqlite3_finalize(st);
  return rc;
}

/* Whether the data sets of runs a and b hold the same rows: the same data
 * set, or as many rows read from the same file. */
static fly_rc same_rows(fly_db *db, const fly_posterior *a, const fly_posterior *b, fly_err *err)
{
  fly_dataset *da = NULL, *db_ = NULL;
  if( a->ds == b->ds ) return FLY_OK;
  fly_rc rc = fly_dataset_load(db, a->ds, &da, err);
  if( !rc ) rc = fly_dataset_load(db, b->ds, &db_, err);
  if( !rc && !(da->n_rows == db_->n_rows && da->source && db_->source &&
               strcmp(da->source, "<stdin>") && !strcmp(da->source, db_->source)) )
    rc = fly_fail(err, FLY_MISUSE, "runs %lld and %lld model different rows: data sets "
                  "'%s' (%lld rows from %s) and '%s' (%lld rows from %s)",
                  (long long)a->run_id, (long long)b->run_id, da->name ? da->name : "?",
                  (long long)da->n_rows, da->source ? da->source : "?",
                  db_->name ? db_->name : "?", (long long)db_->n_rows,
                  db_->source ? db_->source : "?");
  fly_dataset_free(da);
  fly_dataset_free(db_);
  return rc;
}

/* Pairwise sums over all rows of d = plpd_j - plpd_k (j < k): one pass with
 * a cursor per run.  d1, d2: K x K. */
static fly_rc plpd_pairs(fly_db *db, const fly_posterior *p, size_t K, long double *d1,
                         long double *d2, fly_err *err)
{
  fly_posterior_rows cu[FLY_LOO_MAX_RUNS];
  double *X[FLY_LOO_MAX_RUNS] = {0}, *work[FLY_LOO_MAX_RUNS] = {0};
  double a[FLY_LOO_MAX_RUNS][FLY_ROWWISE];
  fly_rc rc = FLY_OK;
  memset(cu, 0, sizeof cu);
  for(size_t k = 0; k < K && !rc; k++){
    if( (rc = fly_posterior_rows_open(db, p[k].ds, &cu[k], err)) ) break;
    size_t wl = p[k].m.type->work_len(&p[k].m, FLY_ROWWISE);
    if( !(X[k] = fly_alloc_array(FLY_ROWWISE, cu[k].W * sizeof(double))) ||
        !(work[k] = fly_alloc_array(wl, sizeof(double))) )
      rc = fly_fail(err, FLY_NOMEM, "compare: buffers");
  }
  int began = fly_db_read_begin(db);
  while( !rc ){
    size_t n0 = 0;
    for(size_t k = 0; k < K && !rc; k++){
      size_t n;
      if( (rc = fly_posterior_rows_block(&cu[k], X[k], FLY_ROWWISE, &n, err)) ) break;
      if( k == 0 ) n0 = n;
      else if( n != n0 ) rc = fly_fail(err, FLY_CORRUPT, "compare: data sets end apart");
      p[k].m.type->eval(&p[k].m, p[k].mean, X[k], cu[k].W, NULL, n, a[k], NULL, work[k]);
    }
    if( rc || n0 == 0 ) break;
    for(size_t j = 0; j < K; j++)
      for(size_t k = j + 1; k < K; k++)
        for(size_t i = 0; i < n0; i++){
          double d = a[j][i] - a[k][i];
          d1[j * K + k] += d;
          d2[j * K + k] += (long double)d * d;
        }
  }
  fly_db_read_end(db, began);
  for(size_t k = 0; k < K; k++){
    fly_posterior_rows_close(&cu[k]);
    fly_free(X[k]);
    fly_free(work[k]);
  }
  return rc;
}

fly_rc fly_loo_compare(fly_db *db, const int64_t *ids, size_t K,
                       const fly_loo_opts *o, fly_loo_diff *out, fly_err *err)
{
  fly_posterior p[FLY_LOO_MAX_RUNS];
  fly_loo_result r[FLY_LOO_MAX_RUNS];
  point *pt[FLY_LOO_MAX_RUNS] = {0};
  double *y = NULL, *am = NULL, *e = NULL;
  long double d1[FLY_LOO_MAX_RUNS * FLY_LOO_MAX_RUNS] = {0};
  long double d2[FLY_LOO_MAX_RUNS * FLY_LOO_MAX_RUNS] = {0};
  int64_t m = 0;
  fly_rc rc = FLY_OK;
  memset(p, 0, sizeof p);
  if( K < 2 || K > FLY_LOO_MAX_RUNS )
    return fly_fail(err, FLY_MISUSE, "compare takes 2 to %d runs, not %zu",
                    FLY_LOO_MAX_RUNS, K);
  for(size_t k = 0; k < K && !rc; k++){
    rc = fly_posterior_load(db, ids[k], o->max_draws, 2, "compare", &p[k], err);
    for(size_t j = 0; j < k && !rc; j++)
      if( p[j].run_id == p[k].run_id )
        rc = fly_fail(err, FLY_MISUSE, "run %lld is named twice", (long long)p[k].run_id);
    if( !rc && k ) rc = same_rows(db, &p[0], &p[k], err);
  }
  if( rc ) goto done;
  int64_t N;
  {
    fly_dataset *ds = NULL;
    if( (rc = fly_dataset_load(db, p[0].ds, &ds, err)) ) goto done;
    N = ds->n_rows;
    fly_dataset_free(ds);
  }
  if( (rc = rows_of(o, N, &m, err)) ) goto done;
  size_t M = (size_t)m;
  for(size_t k = 0; k < K; k++){
    fly_rc s = fly_loo_load(db, p[k].run_id, &r[k], err);
    /* the seed picks the rows only when they are sampled */
    if( s == FLY_RANGE || (s == FLY_OK && ((m < N && r[k].seed != o->seed) || r[k].m != m ||
                                           r[k].S != (int64_t)p[k].S || r[k].N != N ||
                                           (o->r_eff > 0 ? r[k].r_eff_chains || r[k].r_eff != o->r_eff
                                                         : !r[k].r_eff_chains))) )
      s = run_post(db, &p[k], o, &r[k], err);
    if( (rc = s) ) goto done;
    if( !(pt[k] = fly_alloc_array(M, sizeof *pt[k])) ){
      rc = fly_fail(err, FLY_NOMEM, "compare: %zu rows", M);
      goto done;
    }
    if( (rc = points_load(db, p[k].run_id, pt[k], M, err)) ) goto done;
    for(size_t j = 0; j < M; j++)
      if( pt[k][j].row != pt[0][j].row ){
        rc = fly_fail(err, FLY_CORRUPT, "runs %lld and %lld: loo on different rows",
                      (long long)p[0].run_id, (long long)p[k].run_id);
        goto done;
      }
  }
  if( m < N && (rc = plpd_pairs(db, p, K, d1, d2, err)) ) goto done;

  size_t best = 0;
  for(size_t k = 1; k < K; k++) if( r[k].elpd_loo > r[best].elpd_loo ) best = k;
  if( !(y = fly_alloc_array(M, sizeof *y)) || !(am = fly_alloc_array(M, sizeof *am)) ||
      !(e = fly_alloc_array(M, sizeof *e)) ){
    rc = fly_fail(err, FLY_NOMEM, "compare: %zu rows", M);
    goto done;
  }
  size_t n_out = 0;
  out[n_out++] = (fly_loo_diff){ p[best].run_id, r[best].elpd_loo, r[best].se, 0, 0, 0 };
  for(size_t k = 0; k < K; k++){
    if( k == best ) continue;
    fly_loo_diff *d = &out[n_out++];
    d->run_id = p[k].run_id;
    d->elpd_loo = r[k].elpd_loo;
    d->se = r[k].se;
    /* the best minus this one, as loo's srs_diff_est takes it */
    for(size_t j = 0; j < M; j++){
      y[j] = pt[best][j].y - pt[k][j].y;
      am[j] = pt[best][j].a - pt[k][j].a;
    }
    if( m == N ){
      long double t = 0;
      for(size_t j = 0; j < M; j++) t += y[j];
      d->elpd_diff = -(double)t;
      d->se_diff = sqrt((double)N * var_of(y, M));
      d->subsampling_se_diff = 0;
    }else{
      size_t lo = best < k ? best : k, hi = best < k ? k : best;
      long double s1 = best < k ? d1[lo * K + hi] : -d1[lo * K + hi];
      double yh, hv, v;
      diff_est((double)N, s1, d2[lo * K + hi], 0, y, am, M, e, &yh, &hv, &v);
      d->elpd_diff = -yh;
      d->se_diff = sqrt(hv);
      d->subsampling_se_diff = sqrt(v);
    }
  }
  /* best first, then by elpd_loo descending (loo_compare's order) */
  for(size_t i = 2; i < n_out; i++)
    for(size_t j = i; j > 1 && out[j].elpd_loo > out[j - 1].elpd_loo; j--){
      fly_loo_diff t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
done:
  for(size_t k = 0; k < K; k++){
    fly_posterior_free(&p[k]);
    fly_free(pt[k]);
  }
  fly_free(y);
  fly_free(am);
  fly_free(e);
  return rc;
}

/* ---- flydb check ---------------------------------------------------------- */

void fly_loo_check(fly_db *db, fly_checker *ck, int64_t *n_results)
{
  sqlite3_stmt *st;
  int s;
  *n_results = 0;
  st = fly_check_prepare(db, ck,
    "SELECT l.run_id, l.method = 'exact', l.n_rows, l.m, l.k_good, l.k_ok, l.k_bad, "
    "  l.k_verybad, l.elpd_loo, l.p_loo, l.r_eff, l.r_eff_source = 'chains', "
    "  (SELECT d.n_rows FROM run r JOIN dataset d ON d.id = r.dataset_id WHERE r.id = l.run_id), "
    "  count(p.row), min(p.row), max(p.row), total(p.elpd_loo), total(abs(p.elpd_loo)), "
    "  total(p.p_loo), total(abs(p.p_loo)), "
    "  count(CASE WHEN p.pareto_k <= 0.5 THEN 1 END), "
    "  count(CASE WHEN p.pareto_k > 0.5 AND p.pareto_k <= 0.7 THEN 1 END), "
    "  count(CASE WHEN p.pareto_k > 0.7 AND p.pareto_k <= 1 THEN 1 END), "
    "  avg(p.r_eff), count(CASE WHEN p.r_eff IS NOT NULL AND p.r_eff <> l.r_eff THEN 1 END), "
    "  count(p.r_eff) "
    "FROM loo l LEFT JOIN loo_point p ON p.run_id = l.run_id GROUP BY l.run_id ORDER BY l.run_id");
  if( !st ) return;
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t run = sqlite3_column_int64(st, 0);
    int exact = sqlite3_column_int(st, 1), chains = sqlite3_column_int(st, 11);
    int64_t N = sqlite3_column_int64(st, 2), m = sqlite3_column_int64(st, 3);
    int64_t k[4], kp[3];
    for(int i = 0; i < 4; i++) k[i] = sqlite3_column_int64(st, 4 + i);
    double elpd = sqlite3_column_double(st, 8), p_loo = sqlite3_column_double(st, 9);
    double r_eff = sqlite3_column_double(st, 10);
    int64_t n_pt = sqlite3_column_int64(st, 13);
    int64_t lo = sqlite3_column_int64(st, 14), hi = sqlite3_column_int64(st, 15);
    for(int i = 0; i < 3; i++) kp[i] = sqlite3_column_int64(st, 20 + i);
    (*n_results)++;
    fly_check_scope(ck, "run %lld loo", (long long)run);
    if( sqlite3_column_type(st, 12) == SQLITE_NULL )
      fly_check_problem(ck, "a loo result of a run that does not exist");
    else if( sqlite3_column_int64(st, 12) != N )
      fly_check_problem(ck, "n_rows %lld, the run's data set has %lld rows", (long long)N,
                        (long long)sqlite3_column_int64(st, 12));
    if( exact != (m == N) )
      fly_check_problem(ck, "method %s with m = %lld of %lld rows", exact ? "exact" : "subsample",
                        (long long)m, (long long)N);
    if( n_pt != m )
      fly_check_problem(ck, "loo_point holds %lld rows; the header's m is %lld",
                        (long long)n_pt, (long long)m);
    if( n_pt && (lo < 0 || hi >= N) )
      fly_check_problem(ck, "loo_point rows %lld..%lld outside the data set's 0..%lld",
                        (long long)lo, (long long)hi, (long long)N - 1);
    if( k[0] + k[1] + k[2] + k[3] != m )
      fly_check_problem(ck, "Pareto k counts add up to %lld, not m = %lld",
                        (long long)(k[0] + k[1] + k[2] + k[3]), (long long)m);
    if( kp[0] != k[0] || kp[1] != k[1] || kp[2] != k[2] ||
        n_pt - kp[0] - kp[1] - kp[2] != k[3] )
      fly_check_problem(ck, "Pareto k counts %lld/%lld/%lld/%lld; loo_point's pareto_k give "
                        "%lld/%lld/%lld/%lld", (long long)k[0], (long long)k[1], (long long)k[2],
                        (long long)k[3], (long long)kp[0], (long long)kp[1], (long long)kp[2],
                        (long long)(n_pt - kp[0] - kp[1] - kp[2]));
    if( exact && n_pt == m ){
      double se = sqlite3_column_double(st, 16), sa = sqlite3_column_double(st, 17);
      double sp = sqlite3_column_double(st, 18), spa = sqlite3_column_double(st, 19);
      if( !fly_check_close(elpd, se, sa) )
        fly_check_problem(ck, "elpd_loo %.17g; its rows' values add up to %.17g", elpd, se);
      if( !fly_check_close(p_loo, sp, spa) )
        fly_check_problem(ck, "p_loo %.17g; its rows' values add up to %.17g", p_loo, sp);
    }
    if( chains && sqlite3_column_int64(st, 25) == n_pt && n_pt &&
        !fly_check_close(r_eff, sqlite3_column_double(st, 23), 1) )
      fly_check_problem(ck, "r_eff %.17g is not the mean of its rows' %.17g", r_eff,
                        sqlite3_column_double(st, 23));
    if( !chains && sqlite3_column_int64(st, 24) )
      fly_check_problem(ck, "%lld rows have an r_eff other than the given %g",
                        (long long)sqlite3_column_int64(st, 24), r_eff);
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "read loo");
  sqlite3_finalize(st);
  fly_check_scope(ck, "%s", "");
}
