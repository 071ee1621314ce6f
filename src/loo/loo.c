/*
 * loo.c -- PSIS-LOO of a run on tall data, stored, and the comparison of
 * runs by it (loo.h).
 *
 * A run's posterior (post): its model resolved from the stored settings,
 * S draws pooled over the chains (evenly thinned) and their mean.  The
 * rows stream through a cursor in blocks of FLY_ROWWISE rows, so each
 * row's log-likelihood has the same bits whatever block it shares
 * (models/model.h), in this pass and in a comparison's.  Sampled rows
 * wait in a buffer of B rows; a full buffer is evaluated at every draw
 * (S calls of at most FLY_ROWWISE rows each) into B S-vectors, each given
 * to PSIS.  The plpd sums over all N rows are accumulated around the first
 * row's value (the estimators are invariant under that shift) in long
 * double, so N = 10^8 rows lose nothing to cancellation.
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
#include "loo/psis.h"
#include "models/model.h"
#include "run/config.h"
#include "run/run.h"
#include "store/dataset.h"
#include "store/pages.h"
#include "store/run.h"
#include "store/trace.h"
#include "util/mem.h"
#include "util/rng.h"

#define BUF_ROWS 64   /* sampled rows evaluated together */

void fly_loo_opts_default(fly_loo_opts *o)
{
  o->m = 0;
  o->max_draws = 4000;
  o->seed = 1;
  o->r_eff = 1;
}

/* ---- a run's posterior -------------------------------------------------- */

typedef struct post {
  int64_t   run_id, ds;
  fly_model m;
  size_t    P, S;
  double   *th;      /* S x P, draw-major */
  double   *mean;    /* P */
} post;

static void post_free(post *p)
{
  fly_free(p->th);
  fly_free(p->mean);
  memset(p, 0, sizeof *p);
}

/* Load run_id's (0: latest) model and at most max_draws post-warm-up
 * draws, pooled over chains in chain order and thinned evenly. */
static fly_rc post_load(fly_db *db, int64_t run_id, int64_t max_draws, post *p,
                        fly_err *err)
{
  fly_trace_reader *tr = NULL;
  double *x = NULL;
  size_t *len = NULL;
  fly_run_rec rec;
  fly_run_cfg cfg;
  fly_rc rc;
  memset(p, 0, sizeof *p);
  if( (rc = fly_trace_reader_open(db, run_id, &tr, err)) ) goto done;
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  p->run_id = ri->id;
  if( (rc = fly_run_load(db, p->run_id, &rec, NULL, err)) ) goto done;
  p->ds = rec.dataset_id;
  if( (rc = fly_run_cfg_from_rec(&rec, &cfg, err)) ) goto done;
  if( (rc = fly_model_spec_resolve(&cfg.model, db, p->ds, &p->m, err)) ) goto done;
  p->P = ri->n_params;
  if( p->m.type->n_params(&p->m) != p->P ){
    rc = fly_fail(err, FLY_CORRUPT, "run %lld: %zu parameters stored, its %s model has %zu",
                  (long long)p->run_id, p->P, p->m.type->name, p->m.type->n_params(&p->m));
    goto done;
  }
  size_t C = ri->n_chains, T = 0, cap = 0;
  if( !(len = fly_alloc_array(C, sizeof *len)) ) goto nomem;
  for(size_t c = 0; c < C; c++){
    if( (rc = fly_trace_chain_len(tr, c, NULL, &len[c], err)) ) goto done;
    T += len[c];
    if( len[c] > cap ) cap = len[c];
  }
  if( T < 2 ){
    rc = fly_fail(err, FLY_MISUSE, "run %lld has %zu post-warm-up draws; loo needs at least 2",
                  (long long)p->run_id, T);
    goto done;
  }
  p->S = max_draws > 0 && (size_t)max_draws < T ? (size_t)max_draws : T;
  if( !(x = fly_alloc_array(cap, p->P * sizeof *x)) ||
      !(p->th = fly_alloc_array(p->S, p->P * sizeof *p->th)) ||
      !(p->mean = fly_alloc_array(p->P, sizeof *p->mean)) ) goto nomem;
  /* Pooled draw t (chain order) is kept when it is floor(j T / S) for some
   * j < S: the S kept are spread evenly over all chains. */
  size_t t0 = 0, j = 0;
  for(size_t c = 0; c < C && j < p->S; t0 += len[c], c++){
    size_t n;
    if( (rc = fly_trace_draws(tr, c, 0, p->P, ri->n_warmup, cap, x, NULL, &n, err)) ) goto done;
    for(; j < p->S; j++){
      size_t t = (size_t)((double)j * (double)T / (double)p->S);
      if( t >= t0 + n ) break;
      for(size_t k = 0; k < p->P; k++) p->th[j * p->P + k] = x[k * cap + (t - t0)];
    }
  }
  if( j < p->S ){
    rc = fly_fail(err, FLY_CORRUPT, "run %lld: draws missing from its stored chains",
                  (long long)p->run_id);
    goto done;
  }
  for(size_t k = 0; k < p->P; k++){
    long double s = 0;
    for(size_t i = 0; i < p->S; i++) s += p->th[i * p->P + k];
    p->mean[k] = (double)(s / (long double)p->S);
  }
  rc = FLY_OK;
  goto done;
nomem:
  rc = fly_fail(err, FLY_NOMEM, "run %lld: draws for loo", (long long)p->run_id);
done:
  if( rc ) post_free(p);
  fly_free(x);
  fly_free(len);
  fly_trace_reader_close(tr);
  return rc;
}

/* ---- rows in blocks ----------------------------------------------------- */

typedef struct cursor {
  fly_pages *pg;
  int64_t    N, page_no, n_pages;
  size_t     W, nr, i;   /* width; rows in the current page; next of them */
  double    *page;
} cursor;

static void cur_close(cursor *c)
{
  fly_pages_close(c->pg);
  fly_free(c->page);
  memset(c, 0, sizeof *c);
}

static fly_rc cur_open(fly_db *db, int64_t ds, cursor *c, fly_err *err)
{
  fly_rc rc;
  memset(c, 0, sizeof *c);
  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &c->pg, err)) ) return rc;
  const fly_pages_info *in = fly_pages_info_of(c->pg);
  c->N = in->n_rows;
  c->W = in->width;
  c->n_pages = in->n_pages;
  if( !(c->page = fly_alloc_array((size_t)in->page_rows, c->W * sizeof(double))) ){
    cur_close(c);
    return fly_fail(err, FLY_NOMEM, "a page of data set %lld", (long long)ds);
  }
  return FLY_OK;
}

/* Copy the next up to `want` rows into X; *got 0 at the end. */
static fly_rc cur_block(cursor *c, double *X, size_t want, size_t *got, fly_err *err)
{
  size_t n = 0;
  fly_rc rc;
  while( n < want ){
    if( c->i == c->nr ){
      if( c->page_no == c->n_pages ) break;
      if( (rc = fly_pages_read_page(c->pg, c->page_no++, c->page, &c->nr, err)) ) return rc;
      c->i = 0;
      continue;
    }
    size_t k = c->nr - c->i < want - n ? c->nr - c->i : want - n;
    memcpy(X + n * c->W, c->page + c->i * c->W, k * c->W * sizeof *X);
    c->i += k;
    n += k;
  }
  *got = n;
  return FLY_OK;
}

/* ---- estimators --------------------------------------------------------- */

/* A sampled row. */
typedef struct point { int64_t row; double y, p, k, a; } point;

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
  const post *p;
  fly_psis_ws *ws;
  double *work, *Xb, *ll, *tmp;
  int64_t rows[BUF_ROWS];
  double  a[BUF_ROWS];
  size_t  nb;
  point  *pt;
  size_t  n_pt;
  double  r_eff;
} pass;

/* Exact PSIS-LOO of the buffered rows, appended to pt. */
static fly_rc flush(pass *ps, size_t W, fly_err *err)
{
  const post *p = ps->p;
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
    fly_psis_row r;
    fly_psis_loo_row(ps->ws, l, S, ps->r_eff, &r);
    point *q = &ps->pt[ps->n_pt++];
    q->row = ps->rows[j];
    q->y = r.elpd_loo;
    q->p = r.p_loo;
    q->k = r.pareto_k;
    q->a = ps->a[j];
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
                           "seconds) VALUES (?,?,?,?,?,?,?,'plpd',?,?,?,?,?,?,?,?,?,?,?,?)",
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
  if( sqlite3_step(st) != SQLITE_DONE ){ rc = fly_db_fail(db, err, "insert loo"); goto done; }
  sqlite3_finalize(st);
  st = NULL;
  if( (rc = fly_db_prepare(db, "INSERT INTO loo_point(run_id, row, elpd_loo, p_loo, "
                           "pareto_k, plpd) VALUES (?,?,?,?,?,?)", &st, err)) ) goto done;
  for(size_t i = 0; i < n; i++){
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_int64(st, 2, pt[i].row);
    sqlite3_bind_double(st, 3, pt[i].y);
    sqlite3_bind_double(st, 4, pt[i].p);
    if( isfinite(pt[i].k) ) sqlite3_bind_double(st, 5, pt[i].k);
    else sqlite3_bind_null(st, 5);
    sqlite3_bind_double(st, 6, pt[i].a);
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
static fly_rc run_post(fly_db *db, const post *p, const fly_loo_opts *o,
                       fly_loo_result *res, fly_err *err)
{
  cursor cu = {0};
  pass ps;
  double *X = NULL, *a = NULL, *y = NULL, *am = NULL, *e = NULL;
  double t0 = now();
  fly_rc rc;
  fly_rng rng;
  int64_t m = 0;
  memset(&ps, 0, sizeof ps);
  ps.p = p;
  ps.r_eff = o->r_eff > 0 ? o->r_eff : 1;
  if( (rc = cur_open(db, p->ds, &cu, err)) ) goto done;
  int64_t N = cu.N;
  size_t W = cu.W;
  if( (rc = rows_of(o, N, &m, err)) ) goto done;
  if( (rc = fly_psis_ws_new(p->S, &ps.ws, err)) ) goto done;
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
    if( (rc = cur_block(&cu, X, FLY_ROWWISE, &n, err)) ) break;
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
  res->r_eff = ps.r_eff;
  size_t M = (size_t)m;
  if( !(y = fly_alloc_array(M, sizeof *y)) || !(am = fly_alloc_array(M, sizeof *am)) ||
      !(e = fly_alloc_array(M, sizeof *e)) ){
    rc = fly_fail(err, FLY_NOMEM, "loo of run %lld", (long long)p->run_id);
    goto done;
  }
  for(size_t j = 0; j < M; j++){
    const point *q = &ps.pt[j];
    y[j] = q->y;
    am[j] = q->a;
    double k = q->k;
    if( k <= 0.5 ) res->k_good++;
    else if( k <= 0.7 ) res->k_ok++;
    else if( k <= 1 ) res->k_bad++;
    else res->k_verybad++;     /* +inf and NaN too */
  }
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
  cur_close(&cu);
  fly_psis_ws_free(ps.ws);
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
  post p;
  fly_rc rc = post_load(db, run_id, o->max_draws, &p, err);
  if( rc ) return rc;
  rc = run_post(db, &p, o, res, err);
  post_free(&p);
  return rc;
}

fly_rc fly_loo_load(fly_db *db, int64_t run_id, fly_loo_result *res, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT method = 'exact', n_rows, m, n_draws, seed, r_eff, "
                             "elpd_loo, se, subsampling_se, p_loo, p_loo_se, looic, looic_se, "
                             "k_good, k_ok, k_bad, k_verybad, coalesce(seconds, 0) "
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
static fly_rc same_rows(fly_db *db, const post *a, const post *b, fly_err *err)
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
static fly_rc plpd_pairs(fly_db *db, const post *p, size_t K, long double *d1,
                         long double *d2, fly_err *err)
{
  cursor cu[FLY_LOO_MAX_RUNS];
  double *X[FLY_LOO_MAX_RUNS] = {0}, *work[FLY_LOO_MAX_RUNS] = {0};
  double a[FLY_LOO_MAX_RUNS][FLY_ROWWISE];
  fly_rc rc = FLY_OK;
  memset(cu, 0, sizeof cu);
  for(size_t k = 0; k < K && !rc; k++){
    if( (rc = cur_open(db, p[k].ds, &cu[k], err)) ) break;
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
      if( (rc = cur_block(&cu[k], X[k], FLY_ROWWISE, &n, err)) ) break;
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
    cur_close(&cu[k]);
    fly_free(X[k]);
    fly_free(work[k]);
  }
  return rc;
}

fly_rc fly_loo_compare(fly_db *db, const int64_t *ids, size_t K,
                       const fly_loo_opts *o, fly_loo_diff *out, fly_err *err)
{
  post p[FLY_LOO_MAX_RUNS];
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
    rc = post_load(db, ids[k], o->max_draws, &p[k], err);
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
                                           r[k].r_eff != (o->r_eff > 0 ? o->r_eff : 1))) )
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
    post_free(&p[k]);
    fly_free(pt[k]);
  }
  fly_free(y);
  fly_free(am);
  fly_free(e);
  return rc;
}
