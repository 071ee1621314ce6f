/*
 * test_stats.c -- src/stats against R: every diagnostic on fixed chains
 * (reference_data.h, written once by tools/make_stats_reference.R) must
 * match posterior 1.4.0 / coda 0.19 / base R to a relative tolerance per
 * quantity, NA where R says NA.  A mismatch prints both values.  Then:
 *  - the autocovariance paths (all lags direct, FFT from lag 2, the cost
 *    model) agree with R on every ESS,
 *  - fly_stats_summarise() equals the single functions bit for bit,
 *  - a workspace reused across shapes gives the same answers as NULL,
 *  - workspaces in several threads at once (FFTW planning) agree with one,
 *  - qnorm and qbeta at fixed points, error codes, and
 *  - the time of a summary of 4 chains x 10^5 draws (printed).
 * The largest relative error of each quantity is printed as a diagnostic.
 */
#include "stats/stats.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reference_data.h"
#include "stats/stats_int.h"
#include "tap.h"

static double max_rel[REF_COUNT];    /* over all cases */
static double max_rel_exact[REF_COUNT]; /* over cases R computes exactly */
static int    cancels;              /* current case: R loses digits */

/* Relative tolerance of each quantity (the brief asks for 1e-6 on ESS and
 * R-hat): everything agrees to rounding, 1e-12, except on draws near 1e6
 * with unit spread (big_*), where R's own ess_basic and rhat_basic lose
 * digits to cancellation (their chain means and FFT autocovariances):
 * there C and R differ by up to 3.5e-10, and C agrees to 1e-11 with R run
 * on the draws minus 1e6, which are exact, so 1e-9 there.  Order
 * statistics (quantiles, median, mad, mcse_quantile) are exact. */
static double tol_of(int q, const char *name)
{
  switch( q ){
  case REF_SPEC0_ORDER:
  case REF_MEDIAN: case REF_MAD: case REF_Q0: case REF_Q05: case REF_Q25:
  case REF_Q50: case REF_Q75: case REF_Q95: case REF_Q1:
  case REF_MCSE_Q05: case REF_MCSE_Q50: case REF_MCSE_Q95:
    return 0;
  default:
    return strncmp(name, "big_", 4) == 0 ? 1e-9 : 1e-12;
  }
}

static fly_rc value(fly_stats_ws *ws, const ref_case *c, int q, double *v,
                    fly_err *err)
{
  const double *x = c->x;
  size_t m = c->n_chains, n = c->n_iter, N = m * n;
  double p = 0;
  int order = -1;
  fly_rc rc;
  *v = NAN;
  switch( q ){
  case REF_RHAT:       return fly_stats_rhat(ws, x, m, n, v, err);
  case REF_RHAT_BASIC: return fly_stats_rhat_basic(ws, x, m, n, 1, v, err);
  case REF_RHAT_BASIC_NOSPLIT:
    return fly_stats_rhat_basic(ws, x, m, n, 0, v, err);
  case REF_ESS_BULK:   return fly_stats_ess_bulk(ws, x, m, n, v, err);
  case REF_ESS_TAIL:   return fly_stats_ess_tail(ws, x, m, n, v, err);
  case REF_ESS_BASIC:  return fly_stats_ess_basic(ws, x, m, n, 1, v, err);
  case REF_ESS_BASIC_NOSPLIT:
    return fly_stats_ess_basic(ws, x, m, n, 0, v, err);
  case REF_ESS_Q05: p = 0.05; goto essq;
  case REF_ESS_Q50: p = 0.5;  goto essq;
  case REF_ESS_Q95: p = 0.95; goto essq;
  case REF_ESS_Q0:  p = 0;    goto essq;
  case REF_ESS_Q1:  p = 1;
  essq:
    return fly_stats_ess_quantile(ws, x, m, n, p, v, err);
  case REF_MCSE_MEAN: return fly_stats_mcse_mean(ws, x, m, n, v, err);
  case REF_MCSE_Q05: p = 0.05; goto mcseq;
  case REF_MCSE_Q50: p = 0.5;  goto mcseq;
  case REF_MCSE_Q95: p = 0.95;
  mcseq:
    return fly_stats_mcse_quantile(ws, x, m, n, p, v, err);
  case REF_MEAN: *v = fly_stats_mean(x, N); return FLY_OK;
  case REF_SD:   *v = fly_stats_sd(x, N);   return FLY_OK;
  case REF_MEDIAN: return fly_stats_median(ws, x, N, v, err);
  case REF_MAD:    return fly_stats_mad(ws, x, N, v, err);
  case REF_Q0:  p = 0;    goto quant;
  case REF_Q05: p = 0.05; goto quant;
  case REF_Q25: p = 0.25; goto quant;
  case REF_Q50: p = 0.5;  goto quant;
  case REF_Q75: p = 0.75; goto quant;
  case REF_Q95: p = 0.95; goto quant;
  case REF_Q1:  p = 1;
  quant:
    return fly_stats_quantile(ws, x, N, &p, 1, v, err);
  case REF_ACF1: case REF_ACF2: case REF_ACF3: {
    double rho[4];
    size_t k = (size_t)(q - REF_ACF1) + 1;
    if( k >= n ) return FLY_OK;              /* R: lag.max truncated */
    rc = fly_stats_acf(ws, x, n, k, rho, err);
    *v = rho[k];
    return rc;
  }
  case REF_ESS_CODA: return fly_stats_ess_coda(ws, x, m, n, v, err);
  case REF_SPEC0:    return fly_stats_spectrum0_ar(ws, x, n, v, NULL, err);
  case REF_SPEC0_ORDER:
    rc = fly_stats_spectrum0_ar(ws, x, n, NULL, &order, err);
    *v = order < 0 ? NAN : order;
    return rc;
  }
  return FLY_MISUSE;
}

/* 1 if c agrees with r within tol (relative); updates the tally. */
static int agree(double c, double r, double tol, int q, double *relp)
{
  double rel;
  *relp = 0;
  if( isnan(r) || isnan(c) ) return isnan(r) && isnan(c);
  if( isinf(r) || isinf(c) ) return c == r;
  rel = r == 0 ? fabs(c) : fabs(c - r) / fabs(r);
  *relp = rel;
  if( q >= 0 && rel > max_rel[q] ) max_rel[q] = rel;
  if( q >= 0 && !cancels && rel > max_rel_exact[q] ) max_rel_exact[q] = rel;
  return rel <= tol;
}

static void against_r(fly_stats_ws *ws)
{
  size_t n_cases = sizeof ref_cases / sizeof ref_cases[0];
  for( size_t i = 0; i < n_cases; i++ ){
    const ref_case *c = &ref_cases[i];
    cancels = strncmp(c->name, "big_", 4) == 0;
    for( int q = 0; q < REF_COUNT; q++ ){
      fly_err err = {0};
      double v, rel = 0;
      fly_rc rc = value(ws, c, q, &v, &err);
      int ok = rc == FLY_OK
               && agree(v, c->v[q], tol_of(q, c->name), q, &rel);
      if( !TAP_OK(ok, "%s %s", c->name, ref_quantity[q]) )
        TAP_DIAG("C %.17g  R %.17g  rel %.3g  rc %s %s", v, c->v[q], rel,
                 fly_rc_str(rc), err.msg);
    }
  }
}

/* Every ESS through each autocovariance path. */
static void paths(void)
{
  static const int ess_q[] = { REF_ESS_BULK, REF_ESS_TAIL, REF_ESS_BASIC,
    REF_ESS_BASIC_NOSPLIT, REF_ESS_Q05, REF_ESS_Q50, REF_ESS_Q95,
    REF_MCSE_MEAN, REF_ACF1, REF_ACF3 };
  static const size_t forced[] = { SIZE_MAX, 2 };
  size_t n_cases = sizeof ref_cases / sizeof ref_cases[0];
  fly_stats_ws *ws = NULL;
  fly_rc rc = fly_stats_ws_new(0, 0, &ws, NULL);
  TAP_OK(rc == FLY_OK && ws, "ws_new(0, 0)");
  if( !ws ) return;
  for( size_t f = 0; f < 2; f++ ){
    ws->direct_lags = forced[f];
    for( size_t i = 0; i < n_cases; i++ ){
      const ref_case *c = &ref_cases[i];
      int ok = 1;
      for( size_t j = 0; j < sizeof ess_q / sizeof ess_q[0]; j++ ){
        int q = ess_q[j];
        double v, rel = 0;
        rc = value(ws, c, q, &v, NULL);
        if( rc != FLY_OK
            || !agree(v, c->v[q], tol_of(q, c->name), -1, &rel) ){
          ok = 0;
          TAP_DIAG("%s %s: C %.17g  R %.17g  rel %.3g", c->name,
                   ref_quantity[q], v, c->v[q], rel);
        }
      }
      TAP_OK(ok, "%s: ESS with %s autocovariances", c->name,
             f == 0 ? "direct" : "FFT");
    }
  }
  fly_stats_ws_free(ws);
}

static int same(double a, double b)
{
  return (isnan(a) && isnan(b)) || a == b;
}

/* The summary equals the single functions exactly. */
static void summary(fly_stats_ws *ws)
{
  size_t n_cases = sizeof ref_cases / sizeof ref_cases[0];
  for( size_t i = 0; i < n_cases; i++ ){
    const ref_case *c = &ref_cases[i];
    const double *x = c->x;
    size_t m = c->n_chains, n = c->n_iter, N = m * n;
    fly_stats_summary s;
    double v[13], pr[2] = { 0.05, 0.95 };
    fly_rc rc = fly_stats_summarise(ws, x, m, n, &s, NULL);
    fly_stats_median(NULL, x, N, &v[0], NULL);
    fly_stats_mad(NULL, x, N, &v[1], NULL);
    fly_stats_quantile(NULL, x, N, pr, 2, &v[2], NULL);
    fly_stats_mcse_mean(NULL, x, m, n, &v[4], NULL);
    fly_stats_mcse_quantile(NULL, x, m, n, 0.05, &v[5], NULL);
    fly_stats_mcse_quantile(NULL, x, m, n, 0.95, &v[6], NULL);
    fly_stats_ess_bulk(NULL, x, m, n, &v[7], NULL);
    fly_stats_ess_tail(NULL, x, m, n, &v[8], NULL);
    fly_stats_ess_basic(NULL, x, m, n, 1, &v[9], NULL);
    fly_stats_rhat(NULL, x, m, n, &v[10], NULL);
    TAP_OK(rc == FLY_OK && same(s.mean, fly_stats_mean(x, N))
           && same(s.sd, fly_stats_sd(x, N)) && same(s.median, v[0])
           && same(s.mad, v[1]) && same(s.q5, v[2]) && same(s.q95, v[3])
           && same(s.mcse_mean, v[4]) && same(s.mcse_q5, v[5])
           && same(s.mcse_q95, v[6]) && same(s.ess_bulk, v[7])
           && same(s.ess_tail, v[8]) && same(s.ess_basic, v[9])
           && same(s.rhat, v[10]),
           "%s: summarise == single functions", c->name);
    TAP_OK(same(s.rhat, c->v[REF_RHAT]) || fabs(s.rhat - c->v[REF_RHAT])
           <= 1e-10 * fabs(c->v[REF_RHAT]), "%s: summarise rhat vs R",
           c->name);
  }
}

static void distributions(void)
{
  size_t nq = sizeof ref_qnorm / sizeof ref_qnorm[0];
  size_t nb = sizeof ref_qbeta / sizeof ref_qbeta[0];
  double worst_n = 0, worst_b = 0;
  for( size_t i = 0; i < nq; i++ ){
    double c = fly_stats_qnorm(ref_qnorm[i][0]), rel;
    if( !TAP_OK(agree(c, ref_qnorm[i][1], 4e-16, -1, &rel), "qnorm(%g)",
                ref_qnorm[i][0]) )
      TAP_DIAG("C %.17g  R %.17g  rel %.3g", c, ref_qnorm[i][1], rel);
    worst_n = rel > worst_n ? rel : worst_n;
  }
  for( size_t i = 0; i < nb; i++ ){
    const double *b = ref_qbeta[i];
    double c = fly_stats_qbeta(b[0], b[1], b[2]), rel;
    if( !TAP_OK(agree(c, b[3], 1e-10, -1, &rel), "qbeta(%g, %g, %g)",
                b[0], b[1], b[2]) )
      TAP_DIAG("C %.17g  R %.17g  rel %.3g", c, b[3], rel);
    worst_b = rel > worst_b ? rel : worst_b;
  }
  TAP_DIAG("max relative error vs R  qnorm %.3g  qbeta %.3g", worst_n,
           worst_b);
  TAP_OK(fly_stats_qnorm(0) == -INFINITY && fly_stats_qnorm(1) == INFINITY
         && isnan(fly_stats_qnorm(-0.1)) && isnan(fly_stats_qnorm(NAN)),
         "qnorm edges");
  TAP_OK(fly_stats_qbeta(0, 2, 3) == 0 && fly_stats_qbeta(1, 2, 3) == 1
         && isnan(fly_stats_qbeta(0.5, 0, 3))
         && isnan(fly_stats_qbeta(2, 1, 1)),
         "qbeta edges");
}

static void errors(void)
{
  double x[6] = { 1, 2, 3, 4, 5, 6 }, v = 0, p = 1.5, rho[8];
  fly_err err = {0};
  fly_stats_summary s;
  TAP_OK(fly_stats_ess_bulk(NULL, NULL, 1, 6, &v, &err) == FLY_MISUSE
         && err.code == FLY_MISUSE && isnan(v), "NULL draws: MISUSE");
  TAP_OK(fly_stats_rhat(NULL, x, 1, 6, NULL, NULL) == FLY_MISUSE,
         "NULL output: MISUSE");
  TAP_OK(fly_stats_ess_tail(NULL, x, 0, 6, &v, &err) == FLY_MISUSE
         && fly_stats_summarise(NULL, x, 2, 0, &s, &err) == FLY_MISUSE
         && isnan(s.ess_bulk), "no chains or draws: MISUSE");
  TAP_OK(fly_stats_ess_quantile(NULL, x, 1, 6, 1.5, &v, &err) == FLY_RANGE
         && fly_stats_mcse_quantile(NULL, x, 1, 6, -0.1, &v, &err) == FLY_RANGE
         && fly_stats_quantile(NULL, x, 6, &p, 1, &v, &err) == FLY_RANGE
         && isnan(v), "prob outside [0, 1]: RANGE");
  TAP_DIAG("message: %s", err.msg);
  TAP_OK(fly_stats_acf(NULL, x, 6, 6, rho, &err) == FLY_RANGE,
         "acf lag >= n: RANGE");
  TAP_OK(fly_stats_ess_bulk(NULL, x, SIZE_MAX / 2, 4, &v, &err) == FLY_RANGE,
         "too many draws: RANGE");
  x[2] = NAN;
  TAP_OK(fly_stats_summarise(NULL, x, 2, 3, &s, &err) == FLY_OK
         && isnan(s.mean) && isnan(s.rhat) && isnan(s.ess_bulk)
         && isnan(s.q5) && isnan(s.mad), "NaN draw: every field NaN");
  x[2] = INFINITY;
  TAP_OK(fly_stats_ess_basic(NULL, x, 1, 6, 1, &v, NULL) == FLY_OK && isnan(v)
         && fly_stats_ess_tail(NULL, x, 1, 6, &v, NULL) == FLY_OK && isnan(v)
         && fly_stats_ess_coda(NULL, x, 1, 6, &v, NULL) == FLY_OK && isnan(v),
         "Inf draw: ess_basic, ess_tail, ess_coda NaN");
}

/* One workspace across growing and shrinking shapes == a fresh one. */
static void reuse(void)
{
  static const size_t order[] = { 28, 0, 5, 22, 9, 28, 3 };
  size_t n_cases = sizeof ref_cases / sizeof ref_cases[0];
  fly_stats_ws *ws = NULL;
  int ok = fly_stats_ws_new(4, 10, &ws, NULL) == FLY_OK;
  for( size_t i = 0; ok && i < sizeof order / sizeof order[0]; i++ ){
    const ref_case *c = &ref_cases[order[i] % n_cases];
    fly_stats_summary a, b;
    ok &= fly_stats_summarise(ws, c->x, c->n_chains, c->n_iter, &a, NULL)
          == FLY_OK;
    ok &= fly_stats_summarise(NULL, c->x, c->n_chains, c->n_iter, &b, NULL)
          == FLY_OK;
    ok &= same(a.rhat, b.rhat) && same(a.ess_bulk, b.ess_bulk)
          && same(a.ess_tail, b.ess_tail) && same(a.mad, b.mad)
          && same(a.mcse_q95, b.mcse_q95);
  }
  TAP_OK(ok, "workspace reused across shapes");
  fly_stats_ws_free(ws);
}

/* Workspaces in threads at once: FFTW's planner is not thread-safe and
 * fft.c serialises it.  Each thread makes a workspace per job, forced onto
 * the FFT path, so plans are made and destroyed concurrently; the answers
 * must be those of one thread. */
#define TH_THREADS 4
#define TH_SHAPES  12
#define TH_JOBS    48

typedef struct th_job {
  const double *x;               /* 2 chains of TH_MAXN draws per shape */
  const double *want;            /* ess_basic by shape, one thread */
  int id, ok;
} th_job;

#define TH_MAXN 6000

static size_t th_len(int k) { return 1000 + (size_t)k * 431; }

static double th_ess(fly_stats_ws *ws, const double *x, int k)
{
  double e = NAN;
  ws->direct_lags = 2;
  if( fly_stats_ess_basic(ws, x + (size_t)k * 2 * TH_MAXN, 2, th_len(k), 1,
                          &e, NULL) != FLY_OK ) return -1;
  return e;
}

static void *th_run(void *arg)
{
  th_job *j = arg;
  j->ok = 1;
  for( int r = 0; r < TH_JOBS; r++ ){
    int k = (j->id * 5 + r) % TH_SHAPES;
    fly_stats_ws *ws = NULL;
    if( fly_stats_ws_new(0, 0, &ws, NULL) != FLY_OK ){ j->ok = 0; break; }
    j->ok &= same(th_ess(ws, j->x, k), j->want[k]);
    fly_stats_ws_free(ws);
  }
  return NULL;
}

static void threads(void)
{
  double *x = malloc(TH_SHAPES * 2 * TH_MAXN * sizeof *x), want[TH_SHAPES];
  th_job job[TH_THREADS];
  pthread_t th[TH_THREADS];
  fly_stats_ws *ws = NULL;
  uint64_t s = 7;
  int ok = x && fly_stats_ws_new(0, 0, &ws, NULL) == FLY_OK, started = 0;
  for( size_t i = 0; ok && i < TH_SHAPES * 2 * TH_MAXN; i++ ){
    double a = i % TH_MAXN ? x[i-1] : 0;   /* AR(1), phi 0.99 */
    s = s * 6364136223846793005u + 1442695040888963407u;
    x[i] = 0.99 * a + ((double)(s >> 11) / 9007199254740992.0 - 0.5);
  }
  for( int k = 0; ok && k < TH_SHAPES; k++ ){
    want[k] = th_ess(ws, x, k);
    ok &= want[k] > 0;                    /* an estimate, no failure */
  }
  for( int t = 0; ok && t < TH_THREADS; t++ ){
    job[t] = (th_job){ x, want, t, 0 };
    if( pthread_create(&th[t], NULL, th_run, &job[t]) != 0 ) ok = 0;
    else started++;
  }
  for( int t = 0; t < started; t++ ){
    pthread_join(th[t], NULL);
    ok &= job[t].ok;
  }
  TAP_OK(ok && started == TH_THREADS, "%d threads, a workspace each, FFT "
         "plans made at once: the answers of one thread", TH_THREADS);
  fly_stats_ws_free(ws);
  free(x);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The radix sort against qsort on data that take each of its paths: short
 * runs (normal draws), long runs of distinct keys (1e6 + tiny noise), ties
 * (integers), signed zeros and infinities; the tags follow their draws. */
static void sort_paths(void)
{
  size_t n = 20000;
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  uint32_t *tag = malloc(n * sizeof *tag);
  fly_stats_ws *ws = NULL;
  uint64_t s = 0x9E3779B97F4A7C15u;
  if( !x || !y || !tag || fly_stats_ws_new(1, n, &ws, NULL) != FLY_OK ){
    TAP_OK(0, "sort setup");
    goto done;
  }
  for( int kind = 0; kind < 4; kind++ ){
    int ok = 1;
    for( size_t i = 0; i < n; i++ ){
      double u;
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      u = ((double)(s >> 11) + 0.5) / 9007199254740992.0 - 0.5;
      x[i] = kind == 0 ? u * 7
           : kind == 1 ? 1e6 + u * 1e-3
           : kind == 2 ? floor(u * 9)
           : (i % 5 == 0 ? -0.0 : i % 5 == 1 ? 0.0 : i % 5 == 2 ? INFINITY
              : i % 5 == 3 ? -INFINITY : u);
      tag[i] = (uint32_t)(n - 1 - i);
    }
    memcpy(y, x, n * sizeof *y);
    qsort(y, n, sizeof *y, cmp_double);
    flys_sort(ws, x, n, tag);
    for( size_t k = 0; k < n; k++ ){
      ok &= ws->xs[k] == y[k];
      ok &= x[n - 1 - ws->xi[k]] == ws->xs[k];
    }
    TAP_OK(ok, "radix sort == qsort, data kind %d", kind);
  }
done:
  fly_stats_ws_free(ws);
  free(x);
  free(y);
  free(tag);
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Summaries of 4 chains x 10^5 draws: AR(1) at phi 0.3 (a good sampler)
 * and 0.99 (a poor one, whose ESS needs the FFT). */
static void timing(void)
{
  size_t m = 4, n = 100000, reps = 3;
  double *x = malloc(m * n * sizeof *x), phis[2] = { 0.3, 0.99 };
  fly_stats_ws *ws = NULL;
  uint64_t s = 88172645463325252u;
  if( !x || fly_stats_ws_new(m, n, &ws, NULL) != FLY_OK ){
    TAP_OK(0, "timing setup");
    free(x);
    return;
  }
  for( int f = 0; f < 2; f++ ){
    double t0, dt, sum = 0;
    for( size_t c = 0; c < m; c++ ){
      double prev = 0;
      for( size_t t = 0; t < n; t++ ){
        double u1, u2, e;
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        u1 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        u2 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        e = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
        prev = phis[f] * prev + sqrt(1 - phis[f] * phis[f]) * e;
        x[c*n + t] = prev;
      }
    }
    {                                    /* warm up: rank score table */
      fly_stats_summary o;
      fly_stats_summarise(ws, x, m, n, &o, NULL);
    }
    t0 = now();
    for( size_t r = 0; r < reps; r++ ){
      fly_stats_summary o;
      fly_stats_summarise(ws, x, m, n, &o, NULL);
      sum += o.ess_bulk;
    }
    dt = (now() - t0) / (double)reps;
    TAP_OK(sum > 0, "summary of 4 x 10^5 draws, phi %.2f", phis[f]);
    TAP_DIAG("phi %.2f: %.1f ms a parameter (%.2f s for 50), ess_bulk %.0f",
             phis[f], 1e3 * dt, 50 * dt, sum / (double)reps);
  }
  fly_stats_ws_free(ws);
  free(x);
}

int main(void)
{
  fly_stats_ws *ws = NULL;
  against_r(NULL);
  if( fly_stats_ws_new(1, 1, &ws, NULL) == FLY_OK ) against_r(ws);
  for( int q = 0; q < REF_COUNT; q++ )
    TAP_DIAG("max relative error vs R  %-20s %.3g  (%.3g without big_1e6)",
             ref_quantity[q], max_rel[q], max_rel_exact[q]);
  paths();
  summary(ws);
  fly_stats_ws_free(ws);
  distributions();
  errors();
  reuse();
  threads();
  sort_paths();
  timing();
  return tap_done();
}
