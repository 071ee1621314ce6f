/*
 * test_zupdate.c -- the z updates in isolation at a fixed theta.
 *
 * Given theta the z_n are independent with p(z_n = 1) = p_n =
 * 1 - exp(-gap_n(theta)) (docs/design.md §3).  A small store (N = 300
 * rows, intercept + 2 features, 64-row pages) is tuned with MAP and with
 * fixed bounds; for each z mode (gibbs; implicit and explicit with MAP
 * bounds; implicit and explicit with fixed bounds) a chain is opened, theta
 * fixed with fly_chain_set_theta (the MAP, a point at Laplace distance 2
 * from it, and for gibbs a far point where the thinning falls back to a
 * scan), and after BURN z steps the fraction of K steps in which each row
 * is bright is compared with p_n computed here from the model's eval with
 * the xi read from the bound pages.
 *
 * Each row's z is then a two-state Markov chain with stationary
 * probability p_n and lag-1 autocorrelation lambda_n, which for the
 * designed kernels is
 *   gibbs     0 (a fresh draw every step);
 *   explicit  (1 - 1/N)^k, k = ceil(alpha N) draws with replacement (a
 *             row not drawn keeps its z, a drawn one gets a fresh draw);
 *   implicit  1 - a - b, a = P(dark -> bright) = min(q, Lt),
 *             b = P(bright -> dark) = min(1, q / Lt), Lt = p / (1 - p);
 * so the count c_n of K steps has mean K p_n and variance
 *   K p (1 - p) [(1 + l)/(1 - l) - 2 l (1 - l^K) / (K (1 - l)^2)].
 * Three checks per case, each at family-wise level ALPHA (two-sided):
 * per-row z-scores (rows with an effective expected count of at least 20
 * both ways; Bonferroni over them), a chi-square over bins of rows sorted
 * by p_n (each bin with an effective expected count >= 30 both ways, so the
 * normal approximation holds), and the total count.
 *
 * A flipped inequality in Algorithm 2 (the paper's typo) fails these
 * checks: at the MAP with MAP bounds Lt ~ 1e-12, so accepting dark->bright
 * when u < q/Lt brightens every proposed row, and accepting bright->dark
 * when u < Lt/q keeps every bright row bright (both verified by building a
 * private copy of src/ with the comparison flipped).
 *
 * Gibbs thinning: per step the candidate count n_cand is a sum of
 * independent indicators, row n a candidate with probability
 * (1 - p_n) pbar_b(n), pbar_b = 1 - exp(-fly_buckets_gap_upper(b, r)),
 * r = radius(theta) (the dark rows at the start of a step are a fresh draw
 * from the previous step); the mean over K steps must be within 5 standard
 * errors of the sum, n_viol must be 0 at every step, and the scan fallback
 * must happen exactly when the expected candidates exceed scan_frac N.
 * With a sketch (flymc/sketch.h) the same z checks hold, every row's
 * |x_n'(th - th_map)| is within its sketch's rho (long double), p_n is
 * below both row bounds at rho, and the rows read per step average
 * sum_n (1 - p_n) min(pbar_b(n), p_hat_n) within 5 standard errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flymc/buckets.h"
#include "flymc/chain.h"
#include "flymc/sketch.h"
#include "models/model.h"
#include "stats/stats.h"
#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "tap.h"
#include "store_fixture.h"
#include "logistic_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

#define N_ROWS    300
#define D_FEAT    3          /* intercept + 2 */
#define WID         (D_FEAT + 1)
#define PAGE_ROWS 64
#define BURN      300
#define K_STEPS   30000
#define ALPHA     1e-4       /* family-wise level of each check */
#define SCAN_FRAC 0.25
#define SEED      20250303u

static char path[256];

/* ---- the store (as ingest builds one; cf. tests/unit/tune) ---------- */

static int make_data(fly_db *db, double *X, int64_t *ds)
{
  fly_rng rng;
  const double beta[D_FEAT] = { -0.3, 1.0, -0.7 };

  fly_rng_seed(&rng, SEED, 0);
  for(size_t n = 0; n < N_ROWS; n++){
    double *x = X + n * WID, s = 0;
    x[0] = 1;
    for(size_t j = 1; j < D_FEAT; j++) x[j] = fly_rng_normal(&rng);
    for(size_t j = 0; j < D_FEAT; j++) s += beta[j] * x[j];
    x[D_FEAT] = fly_rng_uniform(&rng) < 1 / (1 + exp(-s)) ? 1 : 0;
  }
  return fx_store_rows(db, "z", X, N_ROWS, WID, PAGE_ROWS, ds);
}

/* xi[n] of every row of bound set id, as stored (f32). */
static int read_xi(fly_db *db, int64_t id, float *xi)
{
  fly_pages *bp = NULL;
  fly_err err = {0};
  double buf[PAGE_ROWS * 2];
  size_t n, got = 0;
  int ok = 0;
  if( fly_pages_open(db, FLY_TABLE_BOUND, id, 0, &bp, &err) ) goto done;
  const fly_pages_info *in = fly_pages_info_of(bp);
  if( in->width != 2 || in->page_rows != PAGE_ROWS || in->n_rows != N_ROWS ) goto done;
  for(int64_t k = 0; k < in->n_pages; k++){
    if( fly_pages_read_page(bp, k, buf, &n, &err) ) goto done;
    for(size_t i = 0; i < n && got < N_ROWS; i++) xi[got++] = (float)buf[2 * i];
  }
  ok = got == N_ROWS;
done:
  if( !ok ) TAP_DIAG("reading bound set %lld: %s", (long long)id, err.msg);
  fly_pages_close(bp);
  return ok;
}

/* ---- the statistics ------------------------------------------------- */

/* Variance of the sum of K steps of a stationary two-state chain. */
static double count_var(double p, double l, double K)
{
  if( l == 0 ) return K * p * (1 - p);
  double f = (1 + l) / (1 - l) - 2 * l * (1 - pow(l, K)) / (K * (1 - l) * (1 - l));
  return K * p * (1 - p) * f;
}

/* Upper ALPHA point of chi-square(df), Wilson-Hilferty. */
static double chi2_crit(double df)
{
  double z = -fly_stats_qnorm(ALPHA), a = 2 / (9 * df);
  double c = 1 - a + z * sqrt(a);
  return df * c * c * c;
}

typedef struct row_t { double p, lam, cnt; } row_t;

static int cmp_p(const void *a, const void *b)
{
  const row_t *x = a, *y = b;
  return (x->p > y->p) - (x->p < y->p);
}

/* The three frequency checks of one case; returns the number failed. */
static int check_counts(const char *name, row_t *r, double K)
{
  int fails = 0;
  /* per row */
  int n_t = 0;
  for(int n = 0; n < N_ROWS; n++){
    double v = count_var(r[n].p, r[n].lam, K), eff = K * r[n].p * (1 - r[n].p) / v;
    if( K * r[n].p * eff >= 20 && K * (1 - r[n].p) * eff >= 20 ) n_t++;
  }
  double zcrit = -fly_stats_qnorm(ALPHA / 2 / (n_t ? n_t : 1)), zmax = 0;
  int worst = -1;
  for(int n = 0; n < N_ROWS; n++){
    double v = count_var(r[n].p, r[n].lam, K), eff = K * r[n].p * (1 - r[n].p) / v;
    if( !(K * r[n].p * eff >= 20 && K * (1 - r[n].p) * eff >= 20) ) continue;
    double z = (r[n].cnt - K * r[n].p) / sqrt(v);
    if( fabs(z) > fabs(zmax) ){ zmax = z; worst = n; }
  }
  if( !TAP_OK(fabs(zmax) <= zcrit, "%s: per-row z-scores of %d rows, largest %+.2f "
              "(row %d; |z| <= %.2f)", name, n_t, zmax, worst, zcrit) && worst >= 0 )
    TAP_DIAG("  row %d: bright %.0f of %.0f steps, expected p = %.6g (lambda %.3f)",
             worst, r[worst].cnt, K, r[worst].p, r[worst].lam);
  fails += fabs(zmax) > zcrit;

  /* bins of rows sorted by p */
  row_t *s = malloc(N_ROWS * sizeof *s);
  memcpy(s, r, N_ROWS * sizeof *s);
  qsort(s, N_ROWS, sizeof *s, cmp_p);
  double X2 = 0, e1 = 0, e0 = 0, c = 0, e = 0, v = 0, smallest = INFINITY;
  double tc = 0, te = 0, tv = 0;
  int nb = 0;
  for(int n = 0; n < N_ROWS; n++){
    double vn = count_var(s[n].p, s[n].lam, K), f = vn > 0 ? K * s[n].p * (1 - s[n].p) / vn : 1;
    c += s[n].cnt; e += K * s[n].p; v += vn;
    e1 += K * s[n].p * f; e0 += K * (1 - s[n].p) * f;
    tc += s[n].cnt; te += K * s[n].p; tv += vn;
    int last = n == N_ROWS - 1;
    /* close the bin when it is big enough and the rest is too (else the
     * rest joins this bin) */
    if( (e1 >= 30 && e0 >= 30) || last ){
      double r1 = 0, r0 = 0;
      for(int m = n + 1; m < N_ROWS; m++){
        double vm = count_var(s[m].p, s[m].lam, K);
        double fm = vm > 0 ? K * s[m].p * (1 - s[m].p) / vm : 1;
        r1 += K * s[m].p * fm; r0 += K * (1 - s[m].p) * fm;
      }
      if( last || (r1 >= 30 && r0 >= 30) ){
        double z = (c - e) / sqrt(v + 1e-300);
        if( v == 0 && c == e ) z = 0;
        X2 += z * z;
        nb++;
        smallest = fmin(smallest, fmin(e1, e0));
        c = e = v = e1 = e0 = 0;
      }
    }
  }
  free(s);
  double crit = chi2_crit(nb);
  TAP_OK(X2 <= crit, "%s: chi-square over %d bins of rows by p = %.2f (<= %.2f; "
         "smallest effective count %.3g)", name, nb, X2, crit, smallest);
  fails += X2 > crit;
  double zt = tv > 0 ? (tc - te) / sqrt(tv) : (tc == te ? 0 : INFINITY);
  double zc = -fly_stats_qnorm(ALPHA / 2);
  TAP_OK(fabs(zt) <= zc, "%s: total bright-steps %.0f, expected %.1f: z = %+.2f "
         "(|z| <= %.2f)", name, tc, te, zt, zc);
  fails += fabs(zt) > zc;
  return fails;
}

/* ---- one case -------------------------------------------------------- */

typedef struct ctx {
  fly_db *db;
  int64_t ds;
  const double *X;
  fly_model m;
  fly_bounds *bmap, *bfix;
  float xi_map[N_ROWS], xi_fix[N_ROWS];
  fly_buckets bk;
  fly_sketch sk;
  double *work;
} ctx;

static int run_case(ctx *cx, const char *name, fly_zmode zm, double zp, int fixed,
                    int sketch, const double *th, uint64_t seed)
{
  const fly_model *m = &cx->m;
  const fly_bounds *bd = fixed ? cx->bfix : cx->bmap;
  const float *xi = fixed ? cx->xi_fix : cx->xi_map;
  fly_chain_cfg cfg;
  fly_chain *ch = NULL;
  fly_err err = {0};
  fly_iter_stats s;
  static row_t r[N_ROWS];
  double logL[N_ROWS], logB[N_ROWS];
  char label[200];
  int fails = 0;
  fly_rc rc;

  snprintf(label, sizeof label, "%s", name);
  memset(&cfg, 0, sizeof cfg);
  cfg.db_path = path;
  cfg.dataset_id = cx->ds;
  cfg.m = m;
  cfg.bounds = bd;
  cfg.buckets = zm == FLY_Z_GIBBS ? &cx->bk : NULL;
  cfg.sketch = sketch ? &cx->sk : NULL;
  cfg.sketch_all = 1;             /* reads as a function of theta alone */
  cfg.N = N_ROWS;
  cfg.W = WID;
  cfg.z = zm;
  cfg.z_param = zp;
  cfg.scan_frac = SCAN_FRAC;
  cfg.eps0 = 1;
  cfg.init_map = 1;
  cfg.cache_bytes = 1 << 20;

  rc = fly_chain_open(&cfg, 0, seed, &ch, &err);
  if( rc == FLY_OK ) rc = fly_chain_init(ch, &err);
  if( rc == FLY_OK ) rc = fly_chain_set_theta(ch, th, &err);
  if( !TAP_OK(rc == FLY_OK, "%s: chain open/init/set_theta, seed %llu (%s)", label,
              (unsigned long long)seed, err.msg) ){
    fly_chain_close(ch);
    return 1;
  }

  /* p_n and lambda_n */
  m->type->eval(m, th, cx->X, WID, xi, N_ROWS, logL, logB, cx->work);
  double kexp = ceil(zp * N_ROWS);
  for(int n = 0; n < N_ROWS; n++){
    double gap = logL[n] - logB[n], p = fly_p_bright(gap);
    r[n].p = p;
    r[n].cnt = 0;
    if( zm == FLY_Z_GIBBS ) r[n].lam = 0;
    else if( zm == FLY_Z_EXPLICIT ) r[n].lam = pow(1 - 1.0 / N_ROWS, kexp);
    else{
      double lt = expm1(fmax(gap, 0));     /* Ltilde = e^gap - 1 */
      double a = fmin(zp, lt), b = lt > 0 ? fmin(1, zp / lt) : 1;
      r[n].lam = 1 - a - b;
    }
  }

  /* thinning expectations (gibbs) */
  double rad = m->type->thin->radius(m, th, bd->theta_map, bd->key_prec, cx->work);
  double e_cand = 0, v_cand = 0, e_read = 0, v_read = 0, expect_all = 0;
  int bound_ok = 1, rho_ok = 1, row_ok = 1;
  fly_sketch_at at = {0};
  if( sketch ){
    fly_err e2 = {0};
    if( !TAP_OK(fly_sketch_at_init(&cx->sk, &at, &e2) == FLY_OK, "%s: sketch "
                "directions (%s)", label, e2.msg) ) return 1;
    fly_sketch_prep(&cx->sk, m, th, bd->theta_map, &at);
  }
  if( zm == FLY_Z_GIBBS ){
    const fly_buckets *bk = &cx->bk;
    for(size_t b = 0; b < bk->nb; b++){
      double pb = -expm1(-fly_buckets_gap_upper(bk, b, m, rad));
      expect_all += pb * (double)(bk->start[b + 1] - bk->start[b]);
      for(int64_t i = bk->start[b]; i < bk->start[b + 1]; i++){
        int n = (int)fly_buckets_row(bk, i);
        double q = (1 - r[n].p) * fmin(pb, 1), qr = q;
        e_cand += q;
        v_cand += q * (1 - q);
        if( r[n].p > pb ) bound_ok = 0;
        if( sketch ){
          /* the sketch's rho against x_n'(th - th_map) in long double, and
           * the row's bound against its exact p_n */
          long double t = 0;
          for(int j = 0; j < D_FEAT; j++)
            t += (long double)cx->X[n * WID + j] * ((long double)th[j] - bd->theta_map[j]);
          double rho = fly_sketch_rho(&cx->sk, i, &at);   /* placed: by position */
          /* kept when u pbar < the bucket's box at rho and < the row's own
           * bound at rho (the chain checks them in that order) */
          double ph = fmin(-expm1(-fly_buckets_row_upper(bk, b, m, &xi[n], rho)),
                           -expm1(-fly_model_gap_upper_rho(m, &xi[n], rho)));
          if( !(fabsl(t) <= rho) ) rho_ok = 0;
          if( r[n].p > ph ) row_ok = 0;
          qr = (1 - r[n].p) * fmin(pb, ph);
        }
        e_read += qr;
        v_read += qr * (1 - qr);
      }
    }
    TAP_OK(bound_ok, "%s: p_n <= pbar of its bucket for every row (r = %.3g)", label, rad);
    if( sketch ){
      TAP_OK(rho_ok, "%s: |x_n'(th - th_map)| <= the sketch's rho for every row", label);
      TAP_OK(row_ok, "%s: p_n <= the sketch's row bounds for every row", label);
      fails += !rho_ok + !row_ok;
      fly_sketch_at_free(&at);
    }
  }

  int64_t viol = 0, scanned = 0;
  double cand = 0, reads = 0;
  for(int k = 0; k < BURN + K_STEPS && rc == FLY_OK; k++){
    rc = fly_chain_zstep(ch, &s, &err);
    if( rc ) break;
    viol += s.n_viol;
    if( k < BURN ) continue;
    scanned += s.scanned;
    cand += (double)s.n_cand;
    reads += (double)s.n_reads;
    for(int n = 0; n < N_ROWS; n++) r[n].cnt += fly_chain_is_bright(ch, n);
  }
  TAP_OK(rc == FLY_OK, "%s: %d z steps (%s)", label, BURN + K_STEPS, err.msg);
  fly_chain_close(ch);
  if( rc ) return 1;

  fails += check_counts(label, r, K_STEPS);
  if( zm == FLY_Z_GIBBS ){
    int want_scan = expect_all > SCAN_FRAC * N_ROWS;
    TAP_OK(viol == 0, "%s: n_viol = 0 at every step (%lld)", label, (long long)viol);
    TAP_OK(scanned == (want_scan ? K_STEPS : 0), "%s: scan fallback in %lld of %d "
           "steps (expected candidates %.1f, scan when > %.0f)", label,
           (long long)scanned, K_STEPS, expect_all, SCAN_FRAC * N_ROWS);
    fails += viol != 0;
    if( !want_scan ){
      double mean = cand / K_STEPS, se = sqrt(v_cand / K_STEPS);
      double z = (mean - e_cand) / se;
      TAP_OK(fabs(z) <= 5, "%s: mean candidates per step %.4f, expected %.4f "
             "(z = %+.2f, |z| <= 5)", label, mean, e_cand, z);
      fails += fabs(z) > 5;
      /* rows read: each dark row with probability min(pbar, p_hat) */
      mean = reads / K_STEPS;
      se = sqrt(v_read / K_STEPS);
      z = se > 0 ? (mean - e_read) / se : (mean == e_read ? 0 : INFINITY);
      TAP_OK(fabs(z) <= 5, "%s: mean rows read per step %.4f, expected %.4f "
             "(z = %+.2f, |z| <= 5)", label, mean, e_read, z);
      fails += fabs(z) > 5;
    }
  }
  return fails;
}

/* theta = MAP + chol_cov u: Laplace distance |u| from the MAP. */
static void theta_at(const fly_bounds *b, double dist, double *th)
{
  const double u0[D_FEAT] = { 1, -1, 1 };
  double u[D_FEAT];
  for(int j = 0; j < D_FEAT; j++) u[j] = dist * u0[j] / sqrt((double)D_FEAT);
  for(int i = 0; i < D_FEAT; i++){
    th[i] = b->theta_map[i];
    for(int j = 0; j <= i; j++) th[i] += b->chol_cov[i * D_FEAT + j] * u[j];
  }
}

int main(void)
{
  static ctx cx;
  static double X[N_ROWS * WID];
  fly_err err = {0};
  fly_tune_opts o;
  int64_t id_map = -1, id_fix = -1;
  fly_rc rc;

  printf("# seed %u, N = %d, K = %d z steps after %d\n", SEED, N_ROWS, K_STEPS, BURN);
  rc = fx_create_db("zupdate", path, sizeof path, &cx.db, &err);
  if( !TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg) ) return tap_done();
  cx.X = X;
  if( !TAP_OK(make_data(cx.db, X, &cx.ds), "store of %d rows", N_ROWS) ) goto out;

  memset(&cx.m, 0, sizeof cx.m);
  cx.m.type = &fly_model_logistic;
  cx.m.D = D_FEAT;
  cx.m.tcol = D_FEAT;
  cx.m.K = 1;
  cx.m.prior = FLY_PRIOR_NORMAL;
  cx.m.prior_scale = 1;
  cx.work = calloc(cx.m.type->work_len(&cx.m, N_ROWS), sizeof *cx.work);

  fly_tune_opts_default(&o);
  o.tuning = "map";
  rc = fly_tune_get(cx.db, cx.ds, &cx.m, &o, &id_map, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(cx.db, id_map, &cx.m, &cx.bmap, &err);
  if( !TAP_OK(rc == FLY_OK, "MAP bounds (%s)", err.msg) ) goto out;
  o.tuning = "fixed";
  rc = fly_tune_get(cx.db, cx.ds, &cx.m, &o, &id_fix, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(cx.db, id_fix, &cx.m, &cx.bfix, &err);
  if( !TAP_OK(rc == FLY_OK, "fixed bounds (%s)", err.msg) ) goto out;
  if( !TAP_OK(read_xi(cx.db, id_map, cx.xi_map) && read_xi(cx.db, id_fix, cx.xi_fix),
              "read the stored xi of both bound sets") ) goto out;
  {
    rc = fx_index(cx.db, id_map, cx.ds, &cx.m, cx.bmap->chol_key, &cx.bk, &cx.sk, &err);
    if( !TAP_OK(rc == FLY_OK && cx.sk.n_none == 0, "buckets (%zu) of the MAP keys with "
                "sketches of every row placed in them (%s)", cx.bk.nb, err.msg) )
      goto out;
  }
  {
    /* gibbs candidates take their xi from the index: it must be the stored one */
    int64_t bad = -1;
    for(int64_t i = 0; i < N_ROWS && bad < 0; i++){
      float x;
      uint32_t n = fly_buckets_row(&cx.bk, i);
      fly_buckets_xi(&cx.bk, i, &x);
      if( n >= N_ROWS || memcmp(&x, &cx.xi_map[n], sizeof(float)) ) bad = i;
    }
    TAP_OK(cx.bk.nxi == 1 && bad < 0, "the bucket index holds every row's stored xi "
           "(nxi %zu, first mismatch at position %lld)", cx.bk.nxi, (long long)bad);
  }

  double th0[D_FEAT], th2[D_FEAT], thf[D_FEAT];
  memcpy(th0, cx.bmap->theta_map, sizeof th0);
  theta_at(cx.bmap, 2, th2);
  /* far: the smallest distance whose expected candidates exceed N / 2 */
  double far = 0;
  for(double d = 4; d <= 64 && far == 0; d *= 1.25){
    double e = 0;
    theta_at(cx.bmap, d, thf);
    double rad = cx.m.type->thin->radius(&cx.m, thf, cx.bmap->theta_map, cx.bmap->key_prec, cx.work);
    for(size_t b = 0; b < cx.bk.nb; b++)
      e += -expm1(-cx.m.type->thin->upper(&cx.m, cx.bk.key[b], rad))
           * (double)(cx.bk.start[b + 1] - cx.bk.start[b]);
    if( e > 0.5 * N_ROWS ) far = d;
  }
  TAP_OK(far > 0, "a far theta (Laplace distance %.1f) makes gibbs scan", far);

  struct { const char *name; fly_zmode z; double zp; int fixed; const double *th; } cases[] = {
    { "gibbs, MAP bounds, theta = MAP",        FLY_Z_GIBBS,    0,   0, th0 },
    { "gibbs, MAP bounds, theta at 2 sd",      FLY_Z_GIBBS,    0,   0, th2 },
    { "gibbs, MAP bounds, far theta (scan)",   FLY_Z_GIBBS,    0,   0, thf },
    { "gibbs + sketch, theta = MAP",           FLY_Z_GIBBS,    1,   0, th0 },
    { "gibbs + sketch, theta at 2 sd",         FLY_Z_GIBBS,    1,   0, th2 },
    { "gibbs + sketch, far theta (scan)",      FLY_Z_GIBBS,    1,   0, thf },
    { "implicit=0.1, MAP bounds, theta = MAP", FLY_Z_IMPLICIT, 0.1, 0, th0 },
    { "implicit=0.1, MAP bounds, theta at 2 sd", FLY_Z_IMPLICIT, 0.1, 0, th2 },
    { "explicit=0.2, MAP bounds, theta = MAP", FLY_Z_EXPLICIT, 0.2, 0, th0 },
    { "explicit=0.2, MAP bounds, theta at 2 sd", FLY_Z_EXPLICIT, 0.2, 0, th2 },
    { "implicit=0.1, fixed bounds, theta = MAP", FLY_Z_IMPLICIT, 0.1, 1, th0 },
    { "implicit=0.1, fixed bounds, theta at 2 sd", FLY_Z_IMPLICIT, 0.1, 1, th2 },
    { "implicit=0.5, fixed bounds, theta at 2 sd", FLY_Z_IMPLICIT, 0.5, 1, th2 },
    { "explicit=0.2, fixed bounds, theta = MAP", FLY_Z_EXPLICIT, 0.2, 1, th0 },
    { "explicit=0.2, fixed bounds, theta at 2 sd", FLY_Z_EXPLICIT, 0.2, 1, th2 },
  };
  for(size_t i = 0; i < sizeof cases / sizeof cases[0]; i++){
    if( cases[i].th == thf && far == 0 ) continue;
    /* gibbs' z_param is unused: 1 there marks the cases with a sketch */
    int sk = cases[i].z == FLY_Z_GIBBS && cases[i].zp == 1;
    run_case(&cx, cases[i].name, cases[i].z, sk ? 0 : cases[i].zp, cases[i].fixed, sk,
             cases[i].th, SEED + 1 + i);
  }

out:
  fly_buckets_free(&cx.bk);
  fly_sketch_free(&cx.sk);
  fly_bounds_free(cx.bmap);
  fly_bounds_free(cx.bfix);
  free(cx.work);
  fly_db_close(cx.db);
  fx_unlink_db(path);
  return tap_done();
}
