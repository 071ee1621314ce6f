/*
 * test_tune.c -- tuning bound sets on small synthetic logistic stores.
 *
 * Each store is built the way ingest builds one (a dataset row, then pages
 * through fly_pagewriter in a transaction) with 100-row pages, so every scan
 * crosses many pages and a partial last page.  The data are also kept in
 * memory for independent checks: the MAP against Newton's method, the
 * Hessian, xi tight at the MAP, moments against the stored xi, the
 * collapsed bound sum against the explicit sum, and the thinning keys
 * against actual gaps.  Then reuse, --force, fixed tuning, and failures
 * that must leave nothing behind (an aborting trigger, a process killed
 * mid-build, bad data).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "models/model.h"
#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "tap.h"
#include "store_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

#define PAGE_ROWS 100
#define MAXD 8

static char path[256];

typedef struct data {
  int64_t ds;     /* dataset id */
  size_t  N, D;   /* rows, features (intercept first); target in column D */
  double *X;      /* N x (D+1) */
} data;

static int64_t count(fly_db *db, const char *sql)
{
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if( sqlite3_prepare_v2(fly_db_sqlite(db), sql, -1, &st, NULL) == SQLITE_OK
      && sqlite3_step(st) == SQLITE_ROW )
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

static double query_double(fly_db *db, const char *sql)
{
  sqlite3_stmt *st = NULL;
  double v = NAN;
  if( sqlite3_prepare_v2(fly_db_sqlite(db), sql, -1, &st, NULL) == SQLITE_OK
      && sqlite3_step(st) == SQLITE_ROW )
    v = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* Synthetic logistic rows: x_0 = 1, x_j ~ N(0, j^2/4), y ~ Bern(sigma(b'x)).
 * bad: 1 puts a NaN in a feature of row 1234, 2 a target of 2 there, 3
 * makes feature 2 a copy of feature 1 (collinear). */
static int make_data(fly_db *db, const char *name, size_t N, size_t D,
                     uint64_t seed, double bscale, int bad, data *d)
{
  fly_rng rng;
  double beta[MAXD];
  size_t W = D + 1;

  d->N = N;
  d->D = D;
  d->X = calloc(N * W, sizeof(double));
  fly_rng_seed(&rng, seed, 0);
  for(size_t j = 0; j < D; j++) beta[j] = bscale * fly_rng_normal(&rng);
  for(size_t n = 0; n < N; n++){
    double *x = d->X + n * W, s = 0;
    x[0] = 1;
    for(size_t j = 1; j < D; j++) x[j] = fly_rng_normal(&rng) * (double)j / 2;
    if( bad == 3 ) x[2] = x[1];
    for(size_t j = 0; j < D; j++) s += beta[j] * x[j];
    x[D] = fly_rng_uniform(&rng) < 1 / (1 + exp(-s)) ? 1 : 0;
  }
  if( bad == 1 ) d->X[1234 * W + 2] = NAN;
  if( bad == 2 ) d->X[1234 * W + D] = 2;

  return fx_store_rows(db, name, d->X, N, W, PAGE_ROWS, &d->ds);
}

static fly_model model_of(const data *d, fly_prior prior, double scale)
{
  fly_model m;
  memset(&m, 0, sizeof m);
  m.type = &fly_model_logistic;
  m.D = d->D;
  m.tcol = d->D;
  m.K = 1;
  m.prior = prior;
  m.prior_scale = scale;
  return m;
}

/* ---- in-memory logistic regression with a N(0, s^2) prior ---------- */

static double sigm(double s) { return 1 / (1 + exp(-s)); }

/* grad and -hessian of the log posterior at th (hess may be NULL). */
static void post_derivs(const data *d, double s2, const double *th, double *g,
                        double *H)
{
  const size_t D = d->D, W = D + 1;
  for(size_t j = 0; j < D; j++){
    g[j] = -th[j] / s2;
    if( H ) for(size_t k = 0; k < D; k++) H[j * D + k] = j == k ? 1 / s2 : 0;
  }
  for(size_t n = 0; n < d->N; n++){
    const double *x = d->X + n * W;
    double s = 0;
    for(size_t j = 0; j < D; j++) s += x[j] * th[j];
    double p = sigm(s), r = x[D] - p;
    for(size_t j = 0; j < D; j++) g[j] += r * x[j];
    if( H )
      for(size_t j = 0; j < D; j++)
        for(size_t k = 0; k < D; k++) H[j * D + k] += p * (1 - p) * x[j] * x[k];
  }
}

/* Solve A x = b for SPD A (D x D), A and b overwritten. */
static void spd_solve(double *A, double *b, size_t n)
{
  for(size_t j = 0; j < n; j++){
    for(size_t k = 0; k < j; k++) A[j * n + j] -= A[j * n + k] * A[j * n + k];
    A[j * n + j] = sqrt(A[j * n + j]);
    for(size_t i = j + 1; i < n; i++){
      for(size_t k = 0; k < j; k++) A[i * n + j] -= A[i * n + k] * A[j * n + k];
      A[i * n + j] /= A[j * n + j];
    }
  }
  for(size_t i = 0; i < n; i++){
    for(size_t k = 0; k < i; k++) b[i] -= A[i * n + k] * b[k];
    b[i] /= A[i * n + i];
  }
  for(size_t i = n; i-- > 0;){
    for(size_t k = i + 1; k < n; k++) b[i] -= A[k * n + i] * b[k];
    b[i] /= A[i * n + i];
  }
}

static void newton_map(const data *d, double s2, double *th)
{
  double g[MAXD], H[MAXD * MAXD];
  for(size_t j = 0; j < d->D; j++) th[j] = 0;
  for(int it = 0; it < 40; it++){
    post_derivs(d, s2, th, g, H);
    spd_solve(H, g, d->D);
    for(size_t j = 0; j < d->D; j++) th[j] += g[j];
  }
}

static double max_abs(const double *a, size_t n)
{
  double m = 0;
  for(size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
  return m;
}

/* Read all bound rows of bound set id: xi[n] and key[n]. */
static int read_bounds(fly_db *db, int64_t id, size_t N, float *xi,
                       double *key)
{
  fly_pages *bp = NULL;
  fly_err err = {0};
  double *buf = NULL;
  size_t n, got = 0;
  int ok = 0;
  if( fly_pages_open(db, FLY_TABLE_BOUND, id, 0, &bp, &err) ){
    TAP_DIAG("bound pages of %lld: %s", (long long)id, err.msg);
    return 0;
  }
  const fly_pages_info *in = fly_pages_info_of(bp);
  if( in->width != 2 || in->page_rows != PAGE_ROWS || in->n_rows != (int64_t)N )
    goto done;
  buf = calloc(PAGE_ROWS * 2, sizeof *buf);
  for(int64_t k = 0; k < in->n_pages; k++){
    if( fly_pages_read_page(bp, k, buf, &n, &err) ) goto done;
    for(size_t i = 0; i < n; i++, got++){
      xi[got] = (float)buf[2 * i];
      key[got] = buf[2 * i + 1];
      if( (double)xi[got] != buf[2 * i] ) goto done;  /* f32 exactly */
    }
  }
  ok = got == N;
done:
  free(buf);
  fly_pages_close(bp);
  return ok;
}

/* sum_n log B_n(th) from eval with the stored xi, and the moments
 * recomputed page by page from the stored xi. */
static double explicit_bound_sum(const fly_model *m, const data *d,
                                 const double *th, const float *xi,
                                 double *work, double *lb, double *ll)
{
  double s = 0;
  m->type->eval(m, th, d->X, d->D + 1, xi, d->N, ll, lb, work);
  for(size_t n = 0; n < d->N; n++) s += lb[n];
  return s;
}

/* ---- the main MAP-tuned checks -------------------------------------- */

/* htol: H's largest deviation from the in-memory Hessian at the MAP,
 * relative to its largest entry (a subsample start's H is from the last
 * Newton iterate, within 1e-3 sds of the MAP). */
static void check_map_set(fly_db *db, const data *d, int64_t id, double s2,
                          double htol)
{
  fly_model m = model_of(d, FLY_PRIOR_NORMAL, sqrt(s2));
  fly_bounds *b = NULL;
  fly_err err = {0};
  const size_t D = d->D, N = d->N, W = D + 1;
  double thn[MAXD], g[MAXD], g0[MAXD], H[MAXD * MAXD], zero[MAXD] = {0};
  double *work = calloc(m.type->work_len(&m, N), sizeof *work);
  double *lb = calloc(N, sizeof *lb), *ll = calloc(N, sizeof *ll);
  double *key = calloc(N, sizeof *key), *mom = NULL;
  float *xi = calloc(N, sizeof *xi);
  fly_rng rng;

  fly_rc rc = fly_bounds_load(db, id, &m, &b, &err);
  TAP_OK(rc == FLY_OK && b, "load bound set %lld (%s)", (long long)id, err.msg);
  if( !b ) goto done;
  TAP_OK(b->tuned == 1 && b->P == D && b->n_xi == 1 && b->n_rows == (int64_t)N
         && b->page_rows == PAGE_ROWS && b->n_pages == ((int64_t)N + 99) / 100
         && b->map_iters > 0 && b->tune_seconds > 0,
         "bound set shape: tuned, P=%zu, %lld pages, %d MAP iterations",
         b->P, (long long)b->n_pages, b->map_iters);

  /* MAP: gradient ~ 0, equal to Newton. */
  newton_map(d, s2, thn);
  post_derivs(d, s2, b->theta_map, g, NULL);
  post_derivs(d, s2, zero, g0, NULL);
  double dth = 0;
  for(size_t j = 0; j < D; j++) dth = fmax(dth, fabs(b->theta_map[j] - thn[j]));
  TAP_OK(max_abs(g, D) <= 1e-7 * max_abs(g0, D),
         "MAP gradient ~ 0 (|g| %.3g, |g(0)| %.3g, stored %.3g)",
         max_abs(g, D), max_abs(g0, D), b->map_grad_norm);
  TAP_OK(dth <= 1e-6, "MAP equals the in-memory Newton solution (%.3g)", dth);

  /* Laplace matrices. */
  post_derivs(d, s2, b->theta_map, g, H);
  double dh = 0, di = 0, dc = 0, up = 0;
  for(size_t i = 0; i < D * D; i++) dh = fmax(dh, fabs(b->prec[i] - H[i]));
  for(size_t i = 0; i < D; i++)
    for(size_t j = 0; j < D; j++){
      double s = 0, c = 0;
      for(size_t k = 0; k < D; k++){
        s += b->cov[i * D + k] * b->prec[k * D + j];
        c += b->chol_cov[i * D + k] * b->chol_cov[j * D + k];
      }
      di = fmax(di, fabs(s - (i == j)));
      dc = fmax(dc, fabs(c - b->cov[i * D + j]));
      if( j > i ) up = fmax(up, fabs(b->chol_cov[i * D + j]) +
                                fabs(b->chol_prec[i * D + j]));
    }
  TAP_OK(dh <= htol * max_abs(H, D * D), "H equals the in-memory Hessian "
         "(%.3g of %.3g)", dh, max_abs(H, D * D));
  TAP_OK(di <= 1e-10 && dc <= 1e-12 * max_abs(b->cov, D * D) && up == 0,
         "cov = H^-1 (%.3g), chol_cov lower with L L' = cov (%.3g)", di, dc);

  /* Bound rows: xi tight at the MAP, keys rounded up. */
  TAP_OK(read_bounds(db, id, N, xi, key), "read back %zu bound rows", N);
  double worst_xi = 0, worst_gap = 0;
  int keys_ok = 1;
  for(size_t n = 0; n < N; n++){
    const double *x = d->X + n * W;
    double s = 0, q = 0;
    for(size_t j = 0; j < D; j++) s += x[j] * b->theta_map[j];
    worst_xi = fmax(worst_xi, fabs(xi[n] - fabs(s)) / fmax(fabs(s), 1e-30));
    for(size_t i = 0; i < D; i++)
      for(size_t j = 0; j < D; j++) q += x[i] * b->cov[i * D + j] * x[j];
    double k = m.type->thin->key(&m, &xi[n], sqrt(q));
    if( !(key[n] >= (double)(float)k * (1 - 1e-6)) || !isfinite(key[n])
        || key[n] > 2 * k ) keys_ok = 0;
  }
  TAP_OK(worst_xi <= 0x1.0p-24 * 1.0001, "xi = |s| at the MAP rounded to f32 "
         "(worst relative %.3g)", worst_xi);
  m.type->eval(&m, b->theta_map, d->X, W, xi, N, ll, lb, work);
  for(size_t n = 0; n < N; n++) worst_gap = fmax(worst_gap, ll[n] - lb[n]);
  TAP_OK(worst_gap >= 0 && worst_gap < 1e-9, "bounds tight at the MAP (largest "
         "gap %.3g)", worst_gap);
  TAP_OK(keys_ok, "stored keys = model keys for |x|_P, rounded up to f32");

  /* Moments from the stored xi, page by page as the tuner does. */
  mom = calloc(b->n_mom, sizeof *mom);
  for(size_t n0 = 0; n0 < N; n0 += PAGE_ROWS){
    size_t n = N - n0 < PAGE_ROWS ? N - n0 : PAGE_ROWS;
    m.type->moments_add(&m, d->X + n0 * W, W, xi + n0, n, mom, work);
  }
  double dm = 0;
  for(size_t i = 0; i < b->n_mom; i++)
    dm = fmax(dm, fabs(mom[i] - b->mom[i]) / fmax(fabs(mom[i]), 1e-300));
  TAP_OK(dm <= 1e-12, "stored moments = moments from the stored xi "
         "(relative %.3g)", dm);

  /* Collapsed sum = explicit sum; keys bound the gaps near the MAP. */
  fly_rng_seed(&rng, 99, 3);
  double worst_sum = 0, worst_ratio = 0;
  long violations = 0;
  double scales[] = { 0.1, 0.5, 1, 2, 4, 30 };
  for(size_t t = 0; t < sizeof scales / sizeof scales[0]; t++){
    for(int rep = 0; rep < 4; rep++){
      double th[MAXD], z[MAXD];
      for(size_t j = 0; j < D; j++) z[j] = fly_rng_normal(&rng) * scales[t];
      for(size_t i = 0; i < D; i++){
        th[i] = b->theta_map[i];
        for(size_t j = 0; j <= i; j++) th[i] += b->chol_cov[i * D + j] * z[j];
      }
      double col = m.type->bound_sum(&m, b->mom, th, NULL, work);
      double exs = explicit_bound_sum(&m, d, th, xi, work, lb, ll);
      worst_sum = fmax(worst_sum, fabs(col - exs) / fabs(exs));
      double r = m.type->thin->radius(&m, th, b->theta_map, b->prec, work);
      for(size_t n = 0; n < N; n++){
        double gap = ll[n] - lb[n], up_n = m.type->thin->upper(&m, key[n], r);
        if( gap > up_n ) violations++;
        if( up_n > 0 ) worst_ratio = fmax(worst_ratio, gap / up_n);
      }
    }
  }
  TAP_OK(worst_sum <= 1e-10, "bound_sum(th) = sum_n log B_n from the stored "
         "xi (relative %.3g)", worst_sum);
  TAP_OK(violations == 0, "gap_n(th) <= gap_upper(key_n, radius(th)) for "
         "every row and th (%ld violations, largest ratio %.3g)", violations,
         worst_ratio);
  TAP_OK(worst_ratio > 0.05, "... and the thinning bound is not vacuous "
         "(largest gap/bound %.3g)", worst_ratio);

done:
  fly_bounds_free(b);
  free(work); free(lb); free(ll); free(key); free(mom); free(xi);
}

static int64_t tune(fly_db *db, const data *d, fly_prior prior, double scale,
                    const char *tuning, int force, fly_rc *prc, fly_err *err)
{
  fly_model m = model_of(d, prior, scale);
  fly_tune_opts o;
  int64_t id = -1;
  fly_tune_opts_default(&o);
  o.tuning = tuning;
  o.force = force;
  fly_err_clear(err);
  *prc = fly_tune_get(db, d->ds, &m, &o, &id, err);
  return id;
}

/* ---- the subsample start on tall data ------------------------------ */

/* 100,000 rows (4 x 20,000: every 5th page is the subsample): the MAP from
 * the subsample start and full-data Newton steps must be the MAP of
 * L-BFGS on the full data (fly_tune_opts.full_lbfgs) to within 1e-3
 * posterior sds, with the same log posterior to 1e-10 relative and H to
 * 1e-4, and the set must pass every check of a MAP-tuned set. */
static void test_sub_newton(fly_db *db)
{
  data d;
  fly_err err = {0};
  fly_bounds *bs = NULL, *bl = NULL;
  int64_t is = -1, il = -1;
  fly_rc rc;
  TAP_OK(make_data(db, "tall", 100000, 4, 21, 0.5, 0, &d),
         "store of 100000 rows x 4 features in 1000 pages");
  fly_model m = model_of(&d, FLY_PRIOR_NORMAL, 1);
  fly_tune_opts o;
  fly_tune_opts_default(&o);
  rc = fly_tune_get(db, d.ds, &m, &o, &is, &err);
  TAP_OK(rc == FLY_OK && fly_bounds_load(db, is, &m, &bs, &err) == FLY_OK,
         "tall: tuned from a subsample start (%s)", err.msg);
  if( bs ) check_map_set(db, &d, is, 1.0, 1e-4);
  o.full_lbfgs = 1;
  o.force = 1;
  rc = fly_tune_get(db, d.ds, &m, &o, &il, &err);
  TAP_OK(rc == FLY_OK && fly_bounds_load(db, il, &m, &bl, &err) == FLY_OK,
         "tall: tuned by L-BFGS on the full data (%s)", err.msg);
  if( bs && bl ){
    double dsd = 0, dh = 0;
    for(size_t j = 0; j < d.D; j++)
      dsd = fmax(dsd, fabs(bs->theta_map[j] - bl->theta_map[j]) /
                      sqrt(bl->cov[j * d.D + j]));
    for(size_t i = 0; i < d.D * d.D; i++) dh = fmax(dh, fabs(bs->prec[i] - bl->prec[i]));
    TAP_OK(dsd <= 1e-3, "tall: the same MAP as full L-BFGS (%.3g sds apart)", dsd);
    TAP_OK(fabs(bs->map_logpost - bl->map_logpost) <= 1e-10 * fabs(bl->map_logpost),
           "tall: the same log posterior at the MAP (%.17g, %.17g)", bs->map_logpost,
           bl->map_logpost);
    TAP_OK(dh <= 1e-4 * max_abs(bl->prec, d.D * d.D), "tall: the same Laplace "
           "precision (%.3g of %.3g)", dh, max_abs(bl->prec, d.D * d.D));
  }
  /* The rows in memory (fly_tune_opts.X) instead of the pages: the same
   * values, so the same MAP (the Newton scans sum them in other blocks). */
  fly_bounds *bx = NULL;
  int64_t ix = -1;
  o.full_lbfgs = 0;
  o.X = d.X;
  rc = fly_tune_get(db, d.ds, &m, &o, &ix, &err);
  TAP_OK(rc == FLY_OK && fly_bounds_load(db, ix, &m, &bx, &err) == FLY_OK,
         "tall: tuned from the rows in memory (%s)", err.msg);
  if( bs && bx ){
    double dsd = 0;
    for(size_t j = 0; j < d.D; j++)
      dsd = fmax(dsd, fabs(bs->theta_map[j] - bx->theta_map[j]) /
                      sqrt(bs->cov[j * d.D + j]));
    TAP_OK(dsd <= 1e-9, "tall: the same MAP from the rows in memory (%.3g sds "
           "apart)", dsd);
    check_map_set(db, &d, ix, 1.0, 1e-4);
  }
  /* A value that is not finite on a page the subsample skips (page 751:
   * 751 is not a multiple of the stride 5), in a later part of the rows
   * in memory: the first full scan, in parts on two threads, names it. */
  {
    size_t at = (size_t)75150 * (d.D + 1) + 2;
    double keep = d.X[at];
    int64_t ib = -1;
    d.X[at] = NAN;
    o.force = 1;
    rc = fly_tune_get(db, d.ds, &m, &o, &ib, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "row 75151") && strstr(err.msg, "column 3") &&
           strstr(err.msg, "not finite"),
           "tall: a value that is not finite in the second half is reported (%s)", err.msg);
    d.X[at] = keep;
    fly_err_clear(&err);
    o.force = 0;
  }
  fly_bounds_free(bs);
  fly_bounds_free(bl);
  fly_bounds_free(bx);
  free(d.X);

  /* Short data (full L-BFGS, page by page either way): bit for bit. */
  TAP_OK(make_data(db, "short", 3000, 4, 22, 0.5, 0, &d), "store of 3000 rows");
  m = model_of(&d, FLY_PRIOR_NORMAL, 1);
  fly_tune_opts_default(&o);
  rc = fly_tune_get(db, d.ds, &m, &o, &is, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(db, is, &m, &bs, &err);
  o.X = d.X;
  o.force = 1;
  if( rc == FLY_OK ) rc = fly_tune_get(db, d.ds, &m, &o, &ix, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(db, ix, &m, &bx, &err);
  TAP_OK(rc == FLY_OK && bs && bx
         && memcmp(bs->theta_map, bx->theta_map, d.D * sizeof(double)) == 0
         && memcmp(bs->prec, bx->prec, d.D * d.D * sizeof(double)) == 0
         && memcmp(bs->mom, bx->mom, bs->n_mom * sizeof(double)) == 0,
         "short: the rows in memory give the pages' bound set bit for bit (%s)",
         err.msg);
  fly_bounds_free(bs);
  fly_bounds_free(bx);
  free(d.X);
}

/* ---- scans in parts: the same bits on every run ---------------------- */

/* The bound pages of set id as one string of their page numbers, row
 * counts and checksums (sqlite3's own: the test's view of the table). */
static void page_sums(fly_db *db, int64_t id, char *out, size_t n)
{
  sqlite3_stmt *st = NULL;
  out[0] = 0;
  if( sqlite3_prepare_v2(fly_db_sqlite(db), "SELECT group_concat(page_no || ':' || "
                         "n_rows || ':' || checksum, ',') FROM (SELECT * FROM bound_page "
                         "WHERE bound_set_id = ?1 ORDER BY page_no)", -1, &st, NULL) )
    return;
  sqlite3_bind_int64(st, 1, id);
  if( sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) )
    snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
}

/* Rows in memory, tall: the subsample search, Newton steps and bounds'
 * scan run in parts on two threads (util/par.h), each part's sums added
 * in part order.  Tuned four times, the set must be the same bits every
 * time: MAP, precision, moments and every bound page, the short last page
 * (100,037 rows: 37 on page 1000) included; and it must pass every check
 * of a MAP-tuned set. */
static void test_parts(fly_db *db)
{
  data d;
  fly_err err = {0};
  fly_bounds *b0 = NULL;
  static char p0[1 << 16], pi[1 << 16];
  int same = 1;
  TAP_OK(make_data(db, "parts", 100037, 4, 23, 0.5, 0, &d),
         "store of 100037 rows x 4 features in 1001 pages");
  fly_model m = model_of(&d, FLY_PRIOR_NORMAL, 1);
  fly_tune_opts o;
  fly_tune_opts_default(&o);
  o.X = d.X;
  o.force = 1;
  for(int rep = 0; rep < 4; rep++){
    fly_bounds *b = NULL;
    int64_t id = -1;
    fly_rc rc = fly_tune_get(db, d.ds, &m, &o, &id, &err);
    if( rc == FLY_OK ) rc = fly_bounds_load(db, id, &m, &b, &err);
    if( rc ){
      TAP_OK(0, "parts: tuning %d failed (%s)", rep, err.msg);
      same = 0;
      break;
    }
    page_sums(db, id, rep ? pi : p0, sizeof p0);
    if( rep == 0 ){
      b0 = b;
      TAP_OK(strstr(p0, ",1000:37:") != NULL, "parts: page 1000 holds the last 37 rows");
      check_map_set(db, &d, id, 1.0, 1e-4);
      continue;
    }
    same &= memcmp(b->theta_map, b0->theta_map, d.D * sizeof(double)) == 0 &&
            memcmp(b->prec, b0->prec, d.D * d.D * sizeof(double)) == 0 &&
            b->n_mom == b0->n_mom &&
            memcmp(b->mom, b0->mom, b0->n_mom * sizeof(double)) == 0 &&
            strcmp(pi, p0) == 0 && p0[0];
    fly_bounds_free(b);
  }
  TAP_OK(same, "parts: four tunings give the same MAP, precision, moments and bound "
         "pages, bit for bit");
  fly_bounds_free(b0);
  free(d.X);
}

/* ---- a process killed in the middle of a build ---------------------- */

/* A real SIGKILL: nothing runs after it (not even valgrind's leak check,
 * which would report the build's abandoned memory and change the status). */
static void die(sqlite3_context *c, int argc, sqlite3_value **v)
{
  (void)c; (void)argc; (void)v;
  kill(getpid(), SIGKILL);
  _exit(9);  /* not reached */
}

static void test_kill(fly_db *db, const data *d)
{
  pid_t pid = fork();
  if( pid == 0 ){
    fly_db *cdb = NULL;
    fly_err err = {0};
    fly_rc rc;
    if( fly_db_open(path, 0, &cdb, &err) ) _exit(2);
    sqlite3_create_function(fly_db_sqlite(cdb), "die", 0, SQLITE_UTF8, NULL,
                            die, NULL, NULL);
    if( fly_db_exec(cdb, "CREATE TEMP TRIGGER kill_me BEFORE INSERT ON"
                    " bound_page WHEN NEW.page_no = 7 BEGIN SELECT die(); END",
                    &err) ) _exit(3);
    tune(cdb, d, FLY_PRIOR_NORMAL, 0.25, "map", 0, &rc, &err);
    _exit(4);  /* not reached: killed at page 7 */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  TAP_OK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
         "child killed mid-build by SIGKILL (status %d)", status);
  TAP_OK(count(db, "SELECT count(*) FROM bound_set WHERE model_opts ="
               " 'prior=normal;scale=0.25'") == 0
         && count(db, "SELECT count(*) FROM bound_page WHERE bound_set_id"
                  " NOT IN (SELECT id FROM bound_set)") == 0,
         "killed build left no bound set and no bound pages");
  TAP_OK(count(db, "SELECT count(*) FROM pragma_integrity_check WHERE"
               " integrity_check = 'ok'") == 1, "database intact after the kill");
}

int main(void)
{
  fly_db *db = NULL;
  fly_err err = {0};
  fly_rc rc;
  data d, dn, dt;

  rc = fx_create_db("tune", path, sizeof path, &db, &err);
  TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg);
  if( rc ) return tap_done();
  TAP_OK(make_data(db, "synth", 2537, 4, 11, 1.0, 0, &d),
         "store of 2537 rows x 4 features in 26 pages");

  /* Model options and tuning strings. */
  {
    fly_model m = model_of(&d, FLY_PRIOR_NORMAL, 2);
    char s[64];
    fly_tune_opts o;
    fly_tune_opts_default(&o);
    TAP_OK(fly_tune_model_opts(&m, s, sizeof s, &err) == FLY_OK
           && strcmp(s, "prior=normal;scale=2") == 0, "model opts '%s'", s);
    TAP_OK(fly_tune_model_opts(&m, s, 8, &err) == FLY_RANGE,
           "model opts: short buffer is FLY_RANGE");
    o.tuning = "fixed";
    TAP_OK(fly_tune_tuning_string(&o, s, sizeof s, &err) == FLY_OK
           && strcmp(s, "fixed=1.5") == 0, "tuning string '%s'", s);
    o.tuning = "fixed=-1";
    TAP_OK(fly_tune_tuning_string(&o, s, sizeof s, &err) == FLY_MISUSE,
           "negative fixed xi refused (%s)", err.msg);
  }

  /* MAP tuning. */
  int64_t id = tune(db, &d, FLY_PRIOR_NORMAL, 2, "map", 0, &rc, &err);
  TAP_OK(rc == FLY_OK && id > 0, "tune map: bound set %lld (%s)",
         (long long)id, err.msg);
  TAP_OK(count(db, "SELECT count(*) FROM bound_set WHERE status = 'ready' AND"
               " model = 'logistic' AND model_opts = 'prior=normal;scale=2'"
               " AND tuning = 'map' AND n_pages = 26 AND width = 2 AND"
               " page_rows = 100") == 1
         && count(db, "SELECT count(*) FROM bound_page") == 26
         && count(db, "SELECT count(*) FROM moment") == 4 * 4 + 4 + 1,
         "bound_set row, 26 bound pages, 21 moment rows");
  check_map_set(db, &d, id, 4.0, 1e-10);

  /* Reuse, then --force. */
  double secs = query_double(db, "SELECT tune_seconds FROM bound_set");
  int64_t id2 = tune(db, &d, FLY_PRIOR_NORMAL, 2, "map", 0, &rc, &err);
  TAP_OK(rc == FLY_OK && id2 == id
         && count(db, "SELECT count(*) FROM bound_set") == 1
         && count(db, "SELECT count(*) FROM bound_page") == 26
         && query_double(db, "SELECT tune_seconds FROM bound_set") == secs,
         "second tune reuses bound set %lld, writes nothing", (long long)id2);
  fly_db_exec(db, "UPDATE bound_set SET map_iters = -7", &err);
  id2 = tune(db, &d, FLY_PRIOR_NORMAL, 2, "map", 1, &rc, &err);
  TAP_OK(rc == FLY_OK && id2 > 0
         && count(db, "SELECT count(*) FROM bound_set WHERE map_iters > 0") == 1
         && count(db, "SELECT count(*) FROM bound_set") == 1
         && count(db, "SELECT count(*) FROM bound_page") == 26
         && count(db, "SELECT count(*) FROM moment") == 21,
         "--force rebuilds (bound set %lld), old rows replaced", (long long)id2);
  id = id2;

  /* Fixed tuning. */
  {
    fly_model m = model_of(&d, FLY_PRIOR_NORMAL, 2);
    fly_bounds *b = NULL, *bm = NULL;
    float *xi = calloc(d.N, sizeof *xi);
    double *key = calloc(d.N, sizeof *key), *lb = calloc(d.N, sizeof *lb);
    double *ll = calloc(d.N, sizeof *ll);
    double *work = calloc(m.type->work_len(&m, d.N), sizeof *work);
    int64_t fid = tune(db, &d, FLY_PRIOR_NORMAL, 2, "fixed", 0, &rc, &err);
    TAP_OK(rc == FLY_OK && fid > 0 && fid != id
           && count(db, "SELECT count(*) FROM bound_set WHERE tuning ="
                    " 'fixed=1.5' AND status = 'ready'") == 1,
           "tune fixed: bound set %lld (%s)", (long long)fid, err.msg);
    rc = fly_bounds_load(db, fid, &m, &b, &err);
    fly_bounds_load(db, id, &m, &bm, &err);
    TAP_OK(rc == FLY_OK && b && b->tuned == 0 && b->fixed_xi == 1.5,
           "fixed set loads with tuned = 0");
    int all = read_bounds(db, fid, d.N, xi, key);
    for(size_t n = 0; all && n < d.N; n++)
      if( xi[n] != 1.5f || !isnan(key[n]) ) all = 0;
    TAP_OK(all, "fixed: xi = 1.5 on every row, keys NaN");
    if( b && bm ){
      double dth = 0, worst = 0;
      for(size_t j = 0; j < d.D; j++)
        dth = fmax(dth, fabs(b->theta_map[j] - bm->theta_map[j]));
      TAP_OK(dth < 1e-9, "fixed: same MAP as map tuning (%.3g)", dth);
      double th[MAXD];
      fly_rng rng;
      fly_rng_seed(&rng, 5, 5);
      for(int rep = 0; rep < 5; rep++){
        for(size_t j = 0; j < d.D; j++)
          th[j] = b->theta_map[j] + fly_rng_normal(&rng);
        double col = m.type->bound_sum(&m, b->mom, th, NULL, work);
        double exs = explicit_bound_sum(&m, &d, th, xi, work, lb, ll);
        worst = fmax(worst, fabs(col - exs) / fabs(exs));
      }
      TAP_OK(worst < 1e-10, "fixed: bound_sum = explicit sum (%.3g)", worst);
    }
    fly_bounds_free(b);
    fly_bounds_free(bm);
    free(xi); free(key); free(lb); free(ll); free(work);
  }

  /* Failures inside the write transaction leave nothing behind. */
  int64_t n_bp = count(db, "SELECT count(*) FROM bound_page");
  int64_t n_mo = count(db, "SELECT count(*) FROM moment");
  fly_db_exec(db, "CREATE TEMP TRIGGER boom BEFORE INSERT ON bound_page WHEN"
              " NEW.page_no = 5 BEGIN SELECT RAISE(ABORT, 'injected'); END",
              &err);
  id2 = tune(db, &d, FLY_PRIOR_NORMAL, 2, "map", 1, &rc, &err);
  TAP_OK(rc == FLY_SQL && strstr(err.msg, "injected"),
         "failure at bound page 5 reported (%s)", err.msg);
  TAP_OK(count(db, "SELECT count(*) FROM bound_set WHERE tuning = 'map' AND"
               " status = 'ready'") == 1
         && count(db, "SELECT map_iters > 0 FROM bound_set WHERE tuning ="
                  " 'map'") == 1
         && count(db, "SELECT count(*) FROM bound_page") == n_bp
         && count(db, "SELECT count(*) FROM moment") == n_mo,
         "failed --force rebuild rolled back: the old set is intact");
  tune(db, &d, FLY_PRIOR_NORMAL, 3, "map", 0, &rc, &err);
  TAP_OK(rc == FLY_SQL && count(db, "SELECT count(*) FROM bound_set WHERE"
                                " model_opts = 'prior=normal;scale=3'") == 0
         && count(db, "SELECT count(*) FROM bound_page") == n_bp,
         "failed new build left no bound_set row");
  fly_db_exec(db, "DROP TRIGGER boom; CREATE TEMP TRIGGER boom BEFORE INSERT"
              " ON moment WHEN NEW.name = 'mu' BEGIN SELECT RAISE(ABORT,"
              " 'injected'); END", &err);
  tune(db, &d, FLY_PRIOR_NORMAL, 3, "map", 0, &rc, &err);
  TAP_OK(rc == FLY_SQL && count(db, "SELECT count(*) FROM bound_set WHERE"
                                " model_opts = 'prior=normal;scale=3'") == 0
         && count(db, "SELECT count(*) FROM bound_page") == n_bp
         && count(db, "SELECT count(*) FROM moment") == n_mo,
         "failure while storing moments left nothing (%s)", err.msg);
  fly_db_exec(db, "DROP TRIGGER boom", &err);
  tune(db, &d, FLY_PRIOR_NORMAL, 3, "map", 0, &rc, &err);
  TAP_OK(rc == FLY_OK, "same build succeeds without the trigger (%s)", err.msg);

  test_kill(db, &d);
  test_sub_newton(db);
  test_parts(db);

  /* --force on a set a run uses. */
  fly_db_exec(db, "INSERT INTO run(dataset_id, bound_set_id, model, sampler,"
              " z_mode, n_chains, n_warmup, n_iters, thin, seed, n_params,"
              " status, version) SELECT dataset_id, id, 'logistic', 'mh',"
              " 'gibbs', 1, 1, 1, 1, 1, 4, 'done', 'test' FROM bound_set WHERE"
              " model_opts = 'prior=normal;scale=3'", &err);
  tune(db, &d, FLY_PRIOR_NORMAL, 3, "map", 1, &rc, &err);
  TAP_OK(rc == FLY_MISUSE && strstr(err.msg, "run"),
         "--force on a set a run uses is refused (%s)", err.msg);

  /* Laplace prior: not differentiable at 0, still tunes. */
  {
    int64_t lid = tune(db, &d, FLY_PRIOR_LAPLACE, 0.05, "map", 0, &rc, &err);
    fly_model m = model_of(&d, FLY_PRIOR_LAPLACE, 0.05);
    fly_bounds *b = NULL;
    TAP_OK(rc == FLY_OK && fly_bounds_load(db, lid, &m, &b, &err) == FLY_OK,
           "Laplace prior tunes (%s)", err.msg);
    if( b ){
      /* Local optimality: f(th_map) <= f(th_map +- 1e-4 e_j). */
      double f0 = 0, worse = 1;
      for(int sgn = -1; sgn <= 1; sgn += 2)
        for(size_t j = 0; j < d.D; j++){
          double th[MAXD], f = 0;
          memcpy(th, b->theta_map, d.D * sizeof *th);
          th[j] += sgn * 1e-4;
          for(int pass = 0; pass < 2; pass++){
            const double *t = pass ? th : b->theta_map;
            double s = -fly_model_log_prior(&m, t, NULL);
            for(size_t n = 0; n < d.N; n++){
              const double *x = d.X + n * (d.D + 1);
              double e = 0;
              for(size_t k = 0; k < d.D; k++) e += x[k] * t[k];
              e *= x[d.D] > 0.5 ? 1 : -1;
              s += e > 0 ? log1p(exp(-e)) : -e + log1p(exp(e));
            }
            if( pass ) f = s; else f0 = s;
          }
          if( f < f0 - 1e-9 * fabs(f0) ) worse = 0;
        }
      TAP_OK(worse, "Laplace MAP is a local optimum along every axis");
    }
    fly_bounds_free(b);
  }

  /* Bad data and misuse: nothing written. */
  int64_t n_sets = count(db, "SELECT count(*) FROM bound_set");
  TAP_OK(make_data(db, "nan", 2000, 3, 12, 1.0, 1, &dn), "store with a NaN");
  tune(db, &dn, FLY_PRIOR_NORMAL, 1, "map", 0, &rc, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "row 1235"),
         "NaN in the data: FLY_CORRUPT naming the row (%s)", err.msg);
  TAP_OK(make_data(db, "target2", 2000, 3, 13, 1.0, 2, &dt), "store with y=2");
  tune(db, &dt, FLY_PRIOR_NORMAL, 1, "map", 0, &rc, &err);
  TAP_OK(rc == FLY_RANGE && strstr(err.msg, "row 1235"),
         "target 2: FLY_RANGE naming the row (%s)", err.msg);
  {
    data dc;
    TAP_OK(make_data(db, "collinear", 1500, 4, 14, 1.0, 3, &dc),
           "store with collinear features");
    tune(db, &dc, FLY_PRIOR_LAPLACE, 1, "map", 0, &rc, &err);
    TAP_OK(rc == FLY_NUMERIC && strstr(err.msg, "not positive definite")
           && strstr(err.msg, "collinear"),
           "collinear features, Laplace prior: FLY_NUMERIC explained (%s)",
           err.msg);
    tune(db, &dc, FLY_PRIOR_NORMAL, 1, "map", 0, &rc, &err);
    TAP_OK(rc == FLY_OK, "... the normal prior makes it identifiable (%s)",
           err.msg);
    n_sets++;
    free(dc.X);
  }
  {
    fly_model m = model_of(&d, FLY_PRIOR_NORMAL, 1);
    fly_tune_opts o;
    int64_t x = -1;
    m.D = 3;
    rc = fly_tune_get(db, d.ds, &m, NULL, &x, &err);
    TAP_OK(rc == FLY_MISUSE && x == -1, "model/data mismatch: FLY_MISUSE (%s)",
           err.msg);
    m.D = 4;
    fly_tune_opts_default(&o);
    o.tuning = "magic";
    TAP_OK(fly_tune_get(db, d.ds, &m, &o, &x, &err) == FLY_MISUSE,
           "unknown tuning: FLY_MISUSE (%s)", err.msg);
    TAP_OK(fly_tune_get(db, 999, &m, NULL, &x, &err) == FLY_RANGE,
           "unknown data set: FLY_RANGE (%s)", err.msg);
    fly_bounds *b = NULL;
    TAP_OK(fly_bounds_load(db, 999, &m, &b, &err) == FLY_RANGE && !b,
           "unknown bound set: FLY_RANGE");
  }
  TAP_OK(count(db, "SELECT count(*) FROM bound_set") == n_sets,
         "failed tunes wrote no bound set");

  /* Verbose on a fresh build (progress lines go to stderr). */
  {
    fly_model m = model_of(&d, FLY_PRIOR_NORMAL, 10);
    fly_tune_opts o;
    int64_t x = -1;
    fly_tune_opts_default(&o);
    o.verbose = 1;
    TAP_OK(fly_tune_get(db, d.ds, &m, &o, &x, &err) == FLY_OK && x > 0,
           "verbose tune");
  }

  free(d.X); free(dn.X); free(dt.X);
  fly_db_close(db);
  unlink(path);
  return tap_done();
}
