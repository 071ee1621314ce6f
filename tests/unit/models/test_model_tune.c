/*
 * test_model_tune.c -- bound sets tuned at the MAP (fly_tune_get) for a
 * store of every model family, read back and checked against the model's
 * own hooks: the properties of test_model_props.c on the rows, parameters
 * and keys tuning writes.
 *
 * For one case of each family (model_cases.h) a store of heavy-tailed or
 * class-imbalanced rows in pages of 100 rows is tuned, then:
 *   the MAP: gradient of log prior + sum log L ~ 0; the stored precision
 *     = neg_hess + the prior's at the MAP; key_prec = prec when n_params = D
 *   bound rows: xi = xi_at(th_map) rounded to f32, keys = thin->key(xi,
 *     ||x||_P) rounded up to f32 (P = key_prec^-1), bounds tight at the MAP
 *   moments: the stored tables = moments_add of the stored xi, page by page;
 *     bound_sum(th) = sum_n log B_n(th) of the stored xi around the MAP
 *     (Laplace draws at 0.1 to 30 sds; shifts of every class row for
 *     softmax)
 *   keys: gap_n(th) <= gap_upper(key_n, radius(th, th_map, key_prec)) for
 *     every row and th, and the bound is not vacuous (gap/bound > 0.05)
 * and the parts only one model has: robust's model options; softmax's
 * bound_set row, class rows summing to 0 at the MAP, the precision against
 * the Hessian written out from the formulas, key_prec from the diagonal
 * blocks, fixed tuning (psi = 1.5, keys NaN).
 */
#include "models/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "tap.h"
#include "model_cases.h"
#include "store_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

#define PAGE_ROWS 100

typedef struct store {
  fly_db  *db;
  char     path[256];
  int64_t  ds;
  size_t   N, D, W;         /* target in column D: W = D + 1 */
  double  *X;
} store;

/* N rows of the case's family (x_j ~ N(0, j^2) beyond the intercept) as
 * data set `name`; 1 on success. */
static int make_store(store *s, const fly_model *m, const char *tag, size_t N, uint64_t seed)
{
  fly_err err = { 0 };
  fly_rng rng;
  fly_model mr = *m;
  const mfamily *f = family_of(m->type);
  size_t D = m->D, W = D + 1;
  double x[MAXD + 2];
  s->N = N; s->D = D; s->W = W;
  s->X = calloc(N * W, sizeof *s->X);
  fly_rng_seed(&rng, seed, 0);
  mr.tcol = D + 1;
  for( size_t n = 0; n < N; n++ ){
    x[0] = 1;
    for( size_t j = 1; j < D; j++ ) x[j] = fly_rng_normal(&rng) * (double)j;
    memcpy(s->X + n * W, x, D * sizeof *x);
    s->X[n * W + D] = f->target(&mr, &rng, x, n);
  }
  if( fx_create_db(tag, s->path, sizeof s->path, &s->db, &err) ){
    TAP_DIAG("create %s: %s", s->path, err.msg);
    return 0;
  }
  return fx_store_rows(s->db, tag, s->X, N, W, PAGE_ROWS, &s->ds);
}

static void close_store(store *s)
{
  fly_db_close(s->db);
  fx_unlink_db(s->path);
  free(s->X);
}

/* All bound rows: xi (N x n_xi, exactly f32 values) and keys (N). */
static int read_bounds(fly_db *db, int64_t id, size_t N, size_t nx, float *xi, double *key)
{
  fly_pages *bp = NULL;
  fly_err err = { 0 };
  double *buf = NULL;
  size_t n, got = 0, W = nx + 1;
  int ok = 0;
  if( fly_pages_open(db, FLY_TABLE_BOUND, id, 0, &bp, &err) ) return 0;
  const fly_pages_info *in = fly_pages_info_of(bp);
  if( in->width != W || in->page_rows != PAGE_ROWS || in->n_rows != (int64_t)N ) goto done;
  buf = calloc(PAGE_ROWS * W, sizeof *buf);
  for( int64_t k = 0; k < in->n_pages; k++ ){
    if( fly_pages_read_page(bp, k, buf, &n, &err) ) goto done;
    for( size_t i = 0; i < n; i++, got++ ){
      for( size_t c = 0; c < nx; c++ ){
        xi[got * nx + c] = (float)buf[i * W + c];
        if( (double)xi[got * nx + c] != buf[i * W + c] ) goto done;
      }
      key[got] = buf[i * W + nx];
    }
  }
  ok = got == N;
done:
  free(buf);
  fly_pages_close(bp);
  return ok;
}

static double max_abs(const double *a, size_t n)
{
  double m = 0;
  for( size_t i = 0; i < n; i++ ) m = fmax(m, fabs(a[i]));
  return m;
}

/* grad of log prior + sum log L at th */
static void post_grad(const fly_model *m, const store *s, const double *th, double *g,
                      double *ones, double *work)
{
  size_t P = P_of(m);
  for( size_t j = 0; j < P; j++ ) g[j] = 0;
  for( size_t i = 0; i < s->N; i++ ) ones[i] = 1;
  m->type->grad(m, th, s->X, s->W, NULL, s->N, ones, NULL, g, work);
  fly_model_log_prior(m, th, g);
}

/* The properties every tuned bound set has; *pb gets it (NULL on failure). */
static int64_t tuned_props(const char *name, const fly_model *m, store *s, fly_bounds **pb)
{
  const size_t N = s->N, D = s->D, W = s->W, P = P_of(m), NX = NX_of(m);
  const mfamily *f = family_of(m->type);
  fly_err err = { 0 };
  int64_t id = -1;
  *pb = NULL;
  fly_rc rc = fly_tune_get(s->db, s->ds, m, NULL, &id, &err);
  TAP_OK(rc == FLY_OK && id > 0, "%s: MAP tuning builds bound set %lld (%s)", name,
         (long long)id, err.msg);
  if( rc ) return -1;
  fly_bounds *b = NULL;
  rc = fly_bounds_load(s->db, id, m, &b, &err);
  TAP_OK(rc == FLY_OK && b && b->tuned && b->P == P && b->n_xi == NX &&
         b->n_mom == m->type->n_moments(m), "%s: load: tuned, P = %zu, n_xi = %zu, "
         "%zu moments (%s)", name, P, NX, m->type->n_moments(m), err.msg);
  if( !b ) return -1;
  *pb = b;

  double *work = calloc(m->type->work_len(m, N), sizeof *work);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *H = calloc(P * P, sizeof *H), g[MAXP], g0[MAXP], zero[MAXP] = { 0 };
  float *xi = malloc(N * NX * sizeof *xi);
  double *key = malloc(N * sizeof *key), *mom = calloc(b->n_mom, sizeof *mom);

  /* the MAP */
  post_grad(m, s, b->theta_map, g, lL, work);
  post_grad(m, s, zero, g0, lL, work);
  TAP_OK(max_abs(g, P) <= 1e-6 * max_abs(g0, P) && max_abs(g, P) < 1e-4,
         "%s: MAP gradient ~ 0 (|g| %.3g, |g(0)| %.3g)", name, max_abs(g, P), max_abs(g0, P));
  m->type->neg_hess(m, b->theta_map, s->X, W, N, H, work);
  fly_model_prior_neg_hess(m, H);
  double dh = 0, dk = 0;
  for( size_t i = 0; i < P * P; i++ ) dh = fmax(dh, fabs(b->prec[i] - H[i]));
  if( P == D )
    for( size_t i = 0; i < D * D; i++ ) dk = fmax(dk, fabs(b->key_prec[i] - b->prec[i]));
  TAP_OK(dh <= 1e-9 * max_abs(H, P * P) && dk == 0, "%s: precision = neg_hess + the prior's "
         "at the MAP (%.3g of %.3g)%s", name, dh, max_abs(H, P * P),
         P == D ? ", key_prec a copy of it" : "");

  /* bound rows */
  double Pk[MAXD * MAXD], worst_xi = 0, xo[MAXK];
  int keys_ok = 1;
  spd_inverse(D, b->key_prec, Pk);
  TAP_OK(read_bounds(s->db, id, N, NX, xi, key), "%s: read back %zu bound rows of n_xi + 1 "
         "values, xi exactly f32", name, N);
  for( size_t n = 0; n < N; n++ ){
    const double *x = s->X + n * W;
    m->type->xi_at(m, b->theta_map, x, W, 1, xo, work);
    for( size_t k = 0; k < NX; k++ )
      worst_xi = fmax(worst_xi, fabs(xi[n * NX + k] - xo[k]) / fmax(fabs(xo[k]), 1e-30));
    double kk = m->type->thin->key(m, xi + n * NX, sqrt(q_of(D, Pk, x)));
    if( !(key[n] >= (double)(float)kk * (1 - 1e-6)) || !isfinite(key[n]) || key[n] > 2 * kk )
      keys_ok = 0;
  }
  TAP_OK(worst_xi <= 0x1.0p-24 * 1.0001, "%s: xi = xi_at(th_map) rounded to f32 (worst "
         "relative %.3g)", name, worst_xi);
  TAP_OK(keys_ok, "%s: stored keys = thin->key(xi, |x|_P), P = key_prec^-1, rounded up to f32",
         name);
  m->type->eval(m, b->theta_map, s->X, W, xi, N, lL, lB, work);
  double gmax = -INFINITY;
  for( size_t n = 0; n < N; n++ )
    gmax = fmax(gmax, (lL[n] - lB[n]) / fmax(1e-9, f->tight_tol(m, xi + n * NX, 0)));
  TAP_OK(gmax >= 0 && gmax < 1, "%s: bounds tight at the MAP (largest gap / max(1e-9, eps "
         "scale) %.3g)", name, gmax);

  /* moments from the stored xi, page by page */
  for( size_t n0 = 0; n0 < N; n0 += PAGE_ROWS ){
    size_t n = N - n0 < PAGE_ROWS ? N - n0 : PAGE_ROWS;
    m->type->moments_add(m, s->X + n0 * W, W, xi + n0 * NX, n, mom, work);
  }
  double dm = 0;
  for( size_t i = 0; i < b->n_mom; i++ )
    dm = fmax(dm, fabs(mom[i] - b->mom[i]) / fmax(fabs(mom[i]), 1e-300));
  TAP_OK(dm <= 1e-12, "%s: stored moments = moments from the stored xi (relative %.3g)",
         name, dm);

  /* collapsed sum and keys at theta around the MAP */
  fly_rng rng;
  fly_rng_seed(&rng, 77, 1);
  double worst_sum = 0, worst_ratio = 0;
  long viol = 0;
  static const double scales[] = { 0.1, 0.5, 1, 2, 4, 30 };
  for( size_t t = 0; t < 6; t++ )
    for( int rep = 0; rep < 6; rep++ ){
      double th[MAXP], z[MAXP];
      for( size_t j = 0; j < P; j++ ) z[j] = fly_rng_normal(&rng) * scales[t];
      for( size_t i = 0; i < P; i++ ){
        th[i] = b->theta_map[i];
        for( size_t j = 0; j <= i; j++ ) th[i] += b->chol_cov[i * P + j] * z[j];
      }
      if( m->type->thin->dirs && rep % 3 == 2 )           /* plus a large shift */
        for( size_t j = 0; j < D; j++ ){
          double v = 20 * fly_rng_normal(&rng);
          for( size_t k = 0; k < m->K; k++ ) th[k * D + j] += v;
        }
      double col = m->type->bound_sum(m, b->mom, th, NULL, work), exs = 0;
      m->type->eval(m, th, s->X, W, xi, N, lL, lB, work);
      for( size_t n = 0; n < N; n++ ) exs += lB[n];
      worst_sum = fmax(worst_sum, fabs(col - exs) / fabs(exs));
      double r = m->type->thin->radius(m, th, b->theta_map, b->key_prec, work);
      for( size_t n = 0; n < N; n++ ){
        double gap = lL[n] - lB[n], up = m->type->thin->upper(m, key[n], r);
        if( !(gap <= up) ) viol++;
        if( up > 0 ) worst_ratio = fmax(worst_ratio, gap / up);
      }
    }
  TAP_OK(worst_sum <= 1e-10, "%s: bound_sum(th) = sum_n log B_n from the stored xi "
         "(relative %.3g)", name, worst_sum);
  TAP_OK(viol == 0, "%s: gap_n(th) <= gap_upper(key_n, radius(th, th_map, key_prec)) for "
         "every row and th (%ld violations)", name, viol);
  TAP_OK(worst_ratio > 0.05, "%s: ... and the thinning bound is not vacuous (largest "
         "gap/bound %.3g)", name, worst_ratio);
  free(work); free(lL); free(lB); free(H); free(xi); free(key); free(mom);
  return id;
}

/* ---- only one model ---------------------------------------------------------- */

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

/* Gradient and -Hessian of the log posterior written out from the
 * formulas: g_k = sum_n (e_y - p)_k x_n - th_k/s^2, H = sum_n
 * (diag p - pp') (x) x x' + I/s^2. */
static void sm_post_derivs(const store *d, size_t K, double s2, const double *th,
                           double *g, double *H)
{
  const size_t D = d->D, W = d->W, P = K * D;
  for( size_t j = 0; j < P; j++ ){
    g[j] = -th[j] / s2;
    for( size_t k = 0; k < P; k++ ) H[j * P + k] = j == k ? 1 / s2 : 0;
  }
  for( size_t n = 0; n < d->N; n++ ){
    const double *x = d->X + n * W;
    double s[MAXK], p[MAXK], mx = -INFINITY, t = 0;
    for( size_t k = 0; k < K; k++ ){
      s[k] = 0;
      for( size_t j = 0; j < D; j++ ) s[k] += th[k * D + j] * x[j];
      mx = fmax(mx, s[k]);
    }
    for( size_t k = 0; k < K; k++ ){ p[k] = exp(s[k] - mx); t += p[k]; }
    for( size_t k = 0; k < K; k++ ) p[k] /= t;
    for( size_t k = 0; k < K; k++ ){
      double e = ((size_t)x[D] == k) - p[k];
      for( size_t j = 0; j < D; j++ ) g[k * D + j] += e * x[j];
    }
    for( size_t k = 0; k < K; k++ ) for( size_t l = 0; l < K; l++ ){
      double c = (k == l ? p[k] : 0) - p[k] * p[l];
      for( size_t a = 0; a < D; a++ ) for( size_t b = 0; b < D; b++ )
        H[(k * D + a) * P + l * D + b] += c * x[a] * x[b];
    }
  }
}

static void softmax_tune(void)
{
  enum { K = 3, D = 3, P = K * D };
  mcase c = *case_of(&fly_model_softmax);
  c.K = K;
  c.prior_scale = 2;
  fly_model m = mk(&c, D);
  m.tcol = D;
  store s;
  fly_bounds *b = NULL, *bf = NULL;
  if( !TAP_OK(make_store(&s, &m, "softmax", 1537, 31),
              "softmax: 3-class store of 1537 rows x 3 features in 16 pages") ){
    close_store(&s);
    return;
  }
  int64_t id = tuned_props("softmax K=3", &m, &s, &b);
  if( !b ){ close_store(&s); return; }
  TAP_OK(count(s.db, "SELECT count(*) FROM bound_set WHERE model = 'softmax' AND"
               " model_opts = 'prior=normal;scale=2;K=3' AND width = 4 AND"
               " n_params = 9 AND n_pages = 16 AND length(key_prec) = 72") == 1
         && count(s.db, "SELECT count(*) FROM moment") == D * D + 2 * K * D + 1,
         "softmax: bound_set row (width K+1, key_prec 3x3), %d moment rows",
         D * D + 2 * K * D + 1);

  double g[P], *H = malloc(P * P * sizeof *H), sum = 0, dh = 0, dk = 0, HD[D * D];
  sm_post_derivs(&s, K, 4, b->theta_map, g, H);
  for( size_t j = 0; j < D; j++ )
    sum = fmax(sum, fabs(b->theta_map[j] + b->theta_map[D + j] + b->theta_map[2 * D + j]));
  TAP_OK(sum < 1e-6, "softmax: MAP class rows sum to 0 (normal prior, shift invariance: "
         "%.3g)", sum);
  for( size_t i = 0; i < P * P; i++ ) dh = fmax(dh, fabs(b->prec[i] - H[i]));
  TAP_OK(dh <= 1e-9 * max_abs(H, P * P), "softmax: H equals the Hessian written out from "
         "the formulas (%.3g of %.3g)", dh, max_abs(H, P * P));
  /* key_prec = (K/(K-1))^2 (1/K) sum_k H_kk */
  for( size_t a = 0; a < D; a++ ) for( size_t cc = 0; cc < D; cc++ ){
    double t = 0;
    for( size_t k = 0; k < K; k++ ) t += b->prec[(k * D + a) * P + k * D + cc];
    HD[a * D + cc] = t * K / ((K - 1.0) * (K - 1.0));
    dk = fmax(dk, fabs(HD[a * D + cc] - b->key_prec[a * D + cc]));
  }
  TAP_OK(dk <= 1e-12 * max_abs(HD, D * D), "softmax: key_prec = (K/(K-1))^2 x the average "
         "diagonal block of H (%.3g)", dk);

  /* fixed tuning */
  fly_tune_opts o;
  fly_err err = { 0 };
  int64_t fid = -1;
  fly_tune_opts_default(&o);
  o.tuning = "fixed";
  fly_rc rc = fly_tune_get(s.db, s.ds, &m, &o, &fid, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(s.db, fid, &m, &bf, &err);
  TAP_OK(rc == FLY_OK && bf && !bf->tuned && fid != id, "softmax: fixed tuning (%s)", err.msg);
  if( bf ){
    size_t N = s.N;
    float *xi = malloc(N * K * sizeof *xi);
    double *key = malloc(N * sizeof *key), *lL = malloc(N * sizeof *lL);
    double *lB = malloc(N * sizeof *lB), *work = calloc(m.type->work_len(&m, N), sizeof *work);
    int all = read_bounds(s.db, fid, N, K, xi, key);
    for( size_t n = 0; all && n < N; n++ ){
      if( !isnan(key[n]) ) all = 0;
      for( size_t k = 0; k < K; k++ ) if( xi[n * K + k] != 1.5f ) all = 0;
    }
    TAP_OK(all, "softmax: fixed: psi = 1.5 in every slot, keys NaN");
    fly_rng rng;
    fly_rng_seed(&rng, 78, 0);
    double th[P], ws = 0;
    for( int rep = 0; rep < 5; rep++ ){
      for( size_t j = 0; j < P; j++ ) th[j] = bf->theta_map[j] + fly_rng_normal(&rng);
      double col = m.type->bound_sum(&m, bf->mom, th, NULL, work), exs = 0;
      m.type->eval(&m, th, s.X, s.W, xi, N, lL, lB, work);
      for( size_t n = 0; n < N; n++ ) exs += lB[n];
      ws = fmax(ws, fabs(col - exs) / fabs(exs));
    }
    TAP_OK(ws < 1e-10, "softmax: fixed: bound_sum = explicit sum (%.3g)", ws);
    free(xi); free(key); free(lL); free(lB); free(work);
  }
  fly_bounds_free(bf);
  fly_bounds_free(b);
  free(H);
  close_store(&s);
}

static void robust_tune(void)
{
  enum { D = 4 };
  mcase c = *case_of(&fly_model_robust);
  c.nu = 3; c.scale = 0.5;
  fly_model m = mk(&c, D);
  m.tcol = D;
  char mopts[256];
  fly_err err = { 0 };
  fly_rc rc = fly_tune_model_opts(&m, mopts, sizeof mopts, &err);
  TAP_OK(rc == FLY_OK && strstr(mopts, ";nu=3;sigma=0.5"), "robust: model options '%s'", mopts);
  store s;
  fly_bounds *b = NULL;
  if( TAP_OK(make_store(&s, &m, "robust", 2345, 31), "robust: store of 2345 heavy-tailed "
             "rows in 24 pages") )
    tuned_props("robust nu=3 s=0.5", &m, &s, &b);
  fly_bounds_free(b);
  close_store(&s);
}

static void logistic_tune(void)
{
  enum { D = 4 };
  fly_model m = mk(case_of(&fly_model_logistic), D);
  m.tcol = D;
  store s;
  fly_bounds *b = NULL;
  if( TAP_OK(make_store(&s, &m, "logistic", 1789, 31), "logistic: store of 1789 rows in "
             "18 pages") )
    tuned_props("logistic", &m, &s, &b);
  fly_bounds_free(b);
  close_store(&s);
}

int main(void)
{
  logistic_tune();
  robust_tune();
  softmax_tune();
  return tap_done();
}
