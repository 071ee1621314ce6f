/*
 * test_lbfgs.c -- the L-BFGS minimiser on problems with known minimisers:
 * Rosenbrock (D = 2, 10), an anisotropic rotated quadratic (condition 1e6),
 * logistic regressions against an in-memory Newton solution, a NaN region
 * the line search must back off from, and failures: NaN at the start, NaN
 * everywhere after a while, a failing callback.
 */
#include <math.h>
#include <string.h>

#include "tap.h"
#include "tune/lbfgs.h"
#include "util/rng.h"

/* ---- Rosenbrock, extended: pairs (x_{2i}, x_{2i+1}) ---- */
static fly_rc rosen(void *u, const double *x, double *f, double *g,
                    fly_err *err)
{
  size_t n = *(const size_t *)u;
  *f = 0;
  for(size_t i = 0; i + 1 < n; i += 2){
    double a = x[i + 1] - x[i] * x[i], b = 1 - x[i];
    *f += 100 * a * a + b * b;
    g[i] = -400 * a * x[i] - 2 * b;
    g[i + 1] = 200 * a;
  }
  return FLY_OK;
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
  double m = 0;
  for(size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
  return m;
}

static void test_rosenbrock(size_t n)
{
  fly_lbfgs *l = NULL;
  fly_lbfgs_opts o;
  fly_lbfgs_result r;
  fly_err err = {0};
  double x[10], one[10];
  fly_lbfgs_opts_default(&o);
  o.g_tol = 1e-12;
  o.f_tol = 0;
  for(size_t i = 0; i < n; i++){
    x[i] = i % 2 ? 1.0 : -1.2;
    one[i] = 1;
  }
  fly_rc rc = fly_lbfgs_new(n, o.m, &l, &err);
  TAP_OK(rc == FLY_OK, "rosenbrock D=%zu: new", n);
  rc = fly_lbfgs_run(l, rosen, &n, x, &o, &r, &err);
  TAP_OK(rc == FLY_OK && r.stop == FLY_LBFGS_GRAD,
         "rosenbrock D=%zu: converged (rc %d, %s, %d iters, %d evals)", n,
         rc, fly_lbfgs_stop_str(r.stop), r.iters, r.evals);
  TAP_OK(max_abs_diff(x, one, n) < 1e-8, "rosenbrock D=%zu: x = 1 (err %.3g)",
         n, max_abs_diff(x, one, n));
  TAP_OK(r.iters < 200 && r.evals <= 2 * r.iters + 10,
         "rosenbrock D=%zu: %d iterations, %d evaluations", n, r.iters,
         r.evals);
  TAP_OK(r.g_norm <= 1e-12 * fmax(1, r.g_norm0) && r.f < 1e-20,
         "rosenbrock D=%zu: reported |g| %.3g, f %.3g", n, r.g_norm, r.f);
  fly_lbfgs_free(l);
}

/* ---- f = 1/2 (x-c)' A (x-c), A = Q diag(lam) Q', lam log-spaced over
 * [1, 1e6], Q a random rotation.  L-BFGS has no finite termination here
 * (the Wolfe steps are not exact), so this exercises many iterations. ---- */
#define QMAX 20
typedef struct { int D; double A[QMAX * QMAX], c[QMAX]; int evals; } quad;

static fly_rc quadf(void *u, const double *x, double *f, double *g,
                    fly_err *err)
{
  quad *q = u;
  const int D = q->D;
  double r[QMAX];
  q->evals++;
  for(int i = 0; i < D; i++) r[i] = x[i] - q->c[i];
  *f = 0;
  for(int i = 0; i < D; i++){
    double s = 0;
    for(int j = 0; j < D; j++) s += q->A[i * D + j] * r[j];
    g[i] = s;
    *f += 0.5 * r[i] * s;
  }
  return FLY_OK;
}

static void test_quadratic(int D, size_t m)
{
  static quad q;
  double Q[QMAX * QMAX], x[QMAX];
  fly_rng rng;
  fly_lbfgs *l = NULL;
  fly_lbfgs_result r;
  fly_lbfgs_opts o;
  fly_err err = {0};

  /* Random orthogonal Q by Gram-Schmidt on normal vectors. */
  memset(&q, 0, sizeof q);
  q.D = D;
  fly_rng_seed(&rng, 42, 0);
  for(int i = 0; i < D * D; i++) Q[i] = fly_rng_normal(&rng);
  for(int k = 0; k < D; k++){
    for(int j = 0; j < k; j++){
      double d = 0;
      for(int i = 0; i < D; i++) d += Q[k * D + i] * Q[j * D + i];
      for(int i = 0; i < D; i++) Q[k * D + i] -= d * Q[j * D + i];
    }
    double nn = 0;
    for(int i = 0; i < D; i++) nn += Q[k * D + i] * Q[k * D + i];
    for(int i = 0; i < D; i++) Q[k * D + i] /= sqrt(nn);
  }
  for(int i = 0; i < D; i++)
    for(int j = 0; j < D; j++){
      double s = 0;
      for(int k = 0; k < D; k++)
        s += Q[k * D + i] * pow(1e6, (double)k / (D - 1)) * Q[k * D + j];
      q.A[i * D + j] = s;
    }
  for(int i = 0; i < D; i++){
    q.c[i] = fly_rng_normal(&rng);
    x[i] = 0;
  }
  fly_lbfgs_opts_default(&o);
  o.g_tol = 1e-12;
  o.f_tol = 0;
  o.m = m;
  o.max_iter = 20000;
  o.max_evals = 40000;
  fly_rc rc = fly_lbfgs_new((size_t)D, m, &l, &err);
  rc = rc ? rc : fly_lbfgs_run(l, quadf, &q, x, &o, &r, &err);
  TAP_OK(rc == FLY_OK && r.stop == FLY_LBFGS_GRAD,
         "quadratic D=%d cond 1e6, m=%zu: converged (rc %d, %s, %d iters, "
         "%d evals)", D, m, rc, fly_lbfgs_stop_str(r.stop), r.iters, r.evals);
  /* |x - c| <= |g| / lam_min = |g| <= 1e-12 * |g_0| ~ 1e-6. */
  TAP_OK(max_abs_diff(x, q.c, (size_t)D) < 1e-6,
         "quadratic D=%d: x = c (err %.3g)", D,
         max_abs_diff(x, q.c, (size_t)D));
  TAP_OK(q.evals == r.evals && r.evals < 2 * r.iters,
         "quadratic D=%d: evaluations counted (%d vs %d)", D, q.evals, r.evals);
  fly_lbfgs_free(l);
}

/* ---- logistic regression with a normal prior, in memory ---- */
#define LN 2000
#define LD 6
typedef struct { double X[LN * LD]; double t[LN]; double s2; } logi;

static double log1pexp(double a)  /* log(1 + e^a) */
{
  return a > 0 ? a + log1p(exp(-a)) : log1p(exp(a));
}

/* Negative log posterior: sum log(1 + exp(-t x'th)) + |th|^2 / (2 s2). */
static fly_rc logif(void *u, const double *th, double *f, double *g,
                    fly_err *err)
{
  logi *p = u;
  *f = 0;
  for(int j = 0; j < LD; j++){
    *f += th[j] * th[j] / (2 * p->s2);
    g[j] = th[j] / p->s2;
  }
  for(int n = 0; n < LN; n++){
    double s = 0;
    for(int j = 0; j < LD; j++) s += p->X[n * LD + j] * th[j];
    s *= p->t[n];
    *f += log1pexp(-s);
    double w = -p->t[n] / (1 + exp(s));  /* d/ds_n of log(1+e^{-ts}) */
    for(int j = 0; j < LD; j++) g[j] += w * p->X[n * LD + j];
  }
  return FLY_OK;
}

/* Solve A x = b (LD x LD, SPD) by Cholesky, in place. */
static void spd_solve(double *A, double *b, int n)
{
  for(int j = 0; j < n; j++){
    for(int k = 0; k < j; k++) A[j * n + j] -= A[j * n + k] * A[j * n + k];
    A[j * n + j] = sqrt(A[j * n + j]);
    for(int i = j + 1; i < n; i++){
      for(int k = 0; k < j; k++) A[i * n + j] -= A[i * n + k] * A[j * n + k];
      A[i * n + j] /= A[j * n + j];
    }
  }
  for(int i = 0; i < n; i++){
    for(int k = 0; k < i; k++) b[i] -= A[i * n + k] * b[k];
    b[i] /= A[i * n + i];
  }
  for(int i = n; i-- > 0;){
    for(int k = i + 1; k < n; k++) b[i] -= A[k * n + i] * b[k];
    b[i] /= A[i * n + i];
  }
}

static void newton(logi *p, double *th)
{
  double H[LD * LD], g[LD], f;
  for(int j = 0; j < LD; j++) th[j] = 0;
  for(int it = 0; it < 50; it++){
    logif(p, th, &f, g, NULL);
    memset(H, 0, sizeof H);
    for(int j = 0; j < LD; j++) H[j * LD + j] = 1 / p->s2;
    for(int n = 0; n < LN; n++){
      double s = 0;
      for(int j = 0; j < LD; j++) s += p->X[n * LD + j] * th[j];
      double pr = 1 / (1 + exp(-s)), w = pr * (1 - pr);
      for(int i = 0; i < LD; i++)
        for(int j = 0; j < LD; j++)
          H[i * LD + j] += w * p->X[n * LD + i] * p->X[n * LD + j];
    }
    spd_solve(H, g, LD);
    for(int j = 0; j < LD; j++) th[j] -= g[j];
  }
}

static void test_logistic(double s2, double sep, const char *what)
{
  static logi p;
  double th[LD], thn[LD], beta[LD];
  fly_rng rng;
  fly_lbfgs *l = NULL;
  fly_lbfgs_result r;
  fly_lbfgs_opts o;
  fly_err err = {0};

  fly_rng_seed(&rng, 7, 1);
  p.s2 = s2;
  for(int j = 0; j < LD; j++) beta[j] = sep * fly_rng_normal(&rng);
  for(int n = 0; n < LN; n++){
    double s = 0;
    p.X[n * LD] = 1;
    for(int j = 1; j < LD; j++) p.X[n * LD + j] = fly_rng_normal(&rng) * j;
    for(int j = 0; j < LD; j++) s += p.X[n * LD + j] * beta[j];
    p.t[n] = fly_rng_uniform(&rng) < 1 / (1 + exp(-s)) ? 1 : -1;
  }
  newton(&p, thn);
  for(int j = 0; j < LD; j++) th[j] = 0;
  fly_lbfgs_opts_default(&o);
  o.g_tol = 1e-10;
  fly_rc rc = fly_lbfgs_new(LD, o.m, &l, &err);
  rc = rc ? rc : fly_lbfgs_run(l, logif, &p, th, &o, &r, &err);
  TAP_OK(rc == FLY_OK && (r.stop == FLY_LBFGS_GRAD || r.stop == FLY_LBFGS_FCHANGE),
         "logistic %s: converged (rc %d %s, %s, %d iters, %d evals, |g| %.3g)",
         what, rc, err.msg, fly_lbfgs_stop_str(r.stop), r.iters, r.evals,
         r.g_norm);
  TAP_OK(max_abs_diff(th, thn, LD) < 1e-6 * fmax(1, fabs(thn[0])),
         "logistic %s: equals Newton (err %.3g, |th| ~ %.3g)", what,
         max_abs_diff(th, thn, LD), fabs(thn[1]));
  fly_lbfgs_free(l);
}

/* ---- pseudo-Huber, not finite beyond x_i > 3: the flat start makes the
 * quasi-Newton step overshoot into the NaN region ---- */
static fly_rc huber(void *u, const double *x, double *f, double *g,
                    fly_err *err)
{
  int *nan_hits = u;
  *f = 0;
  for(int i = 0; i < 2; i++){
    double d = x[i] - 1, q = sqrt(1 + d * d);
    *f += q;
    g[i] = d / q;
    if( x[i] > 3 ){
      *f = NAN;
      g[i] = NAN;
    }
  }
  if( isnan(*f) ) (*nan_hits)++;
  return FLY_OK;
}

typedef struct { int calls, bad_after; fly_rc fail; } flaky;

static fly_rc flakyf(void *u, const double *x, double *f, double *g,
                     fly_err *err)
{
  flaky *k = u;
  k->calls++;
  *f = 0;
  for(int i = 0; i < 3; i++){
    *f += (x[i] - 2) * (x[i] - 2) * (i + 1);
    g[i] = 2 * (x[i] - 2) * (i + 1);
  }
  if( k->calls > k->bad_after ){
    if( k->fail ) return fly_fail(err, k->fail, "page 3 unreadable");
    *f = NAN;
  }
  return FLY_OK;
}

static void test_failures(void)
{
  fly_lbfgs *l = NULL;
  fly_lbfgs_result r;
  fly_err err = {0};
  double x[3];
  int nan_hits = 0;

  TAP_OK(fly_lbfgs_new(0, 5, &l, &err) == FLY_MISUSE && !l, "n = 0: misuse");
  fly_lbfgs_new(3, 5, &l, &err);

  x[0] = x[1] = x[2] = -50;
  fly_err_clear(&err);
  fly_rc rc = fly_lbfgs_run(l, huber, &nan_hits, x, NULL, &r, &err);
  TAP_OK(rc == FLY_OK && fabs(x[0] - 1) < 1e-5 && fabs(x[1] - 1) < 1e-5,
         "NaN region: backs off and converges (rc %d %s, x %.6g %.6g, "
         "%d NaN hits, %d evals)", rc, err.msg, x[0], x[1], nan_hits, r.evals);
  TAP_OK(nan_hits > 0, "NaN region was actually hit (%d)", nan_hits);

  flaky k = { 0, 0, FLY_OK };
  x[0] = x[1] = x[2] = 0;
  fly_err_clear(&err);
  rc = fly_lbfgs_run(l, flakyf, &k, x, NULL, &r, &err);
  TAP_OK(rc == FLY_NUMERIC && r.stop == FLY_LBFGS_NONFINITE && r.evals == 1,
         "NaN at the start: FLY_NUMERIC (%s)", err.msg);

  k = (flaky){ 0, 2, FLY_OK };
  x[0] = x[1] = x[2] = 0;
  fly_err_clear(&err);
  rc = fly_lbfgs_run(l, flakyf, &k, x, NULL, &r, &err);
  TAP_OK(rc == FLY_NUMERIC && r.stop == FLY_LBFGS_NONFINITE,
         "NaN everywhere after 2 evaluations: FLY_NUMERIC (rc %d, %s)", rc,
         err.msg);
  TAP_OK(isfinite(x[0]) && isfinite(r.f) && r.f <= 4 + 8 + 12,
         "... x left at the best finite point (f %g)", r.f);

  k = (flaky){ 0, 3, FLY_IO };
  x[0] = x[1] = x[2] = 0;
  fly_err_clear(&err);
  rc = fly_lbfgs_run(l, flakyf, &k, x, NULL, &r, &err);
  TAP_OK(rc == FLY_IO && strstr(err.msg, "page 3") && r.evals == 4,
         "callback failure passed through (rc %d, %s, %d evals)", rc, err.msg,
         r.evals);

  /* Limits. */
  fly_lbfgs_opts o;
  fly_lbfgs_opts_default(&o);
  o.max_iter = 2;
  o.f_tol = 0;
  o.g_tol = 0;
  size_t n2 = 2;
  fly_lbfgs *l2 = NULL;
  fly_lbfgs_new(2, 4, &l2, &err);
  x[0] = -1.2; x[1] = 1;
  rc = fly_lbfgs_run(l2, rosen, &n2, x, &o, &r, &err);
  TAP_OK(rc == FLY_OK && r.stop == FLY_LBFGS_MAXITER && r.iters == 2,
         "max_iter: stops, not converged (%s)", fly_lbfgs_stop_str(r.stop));

  fly_lbfgs_free(l2);
  fly_lbfgs_free(l);
  fly_lbfgs_free(NULL);
}

/* ---- a sum of 10^8 terms is rounded at ~1e-16 |f| sqrt(N): f = F0 +
 * 1/2 sum lam_i (x_i - 1)^2 plus a deterministic "rounding" term of size
 * 1e-6, exact gradient.  Near the minimum the line search cannot see a
 * decrease; the Newton-decrement test must stop it there, converged. ---- */
static fly_rc noisyf(void *u, const double *x, double *f, double *g,
                     fly_err *err)
{
  int *evals = u;
  uint64_t h = 1469598103934665603u;
  (void)err;
  ++*evals;
  *f = 1e10;
  for(int i = 0; i < 4; i++){
    double lam = pow(10.0, i), r = x[i] - 1;
    *f += 0.5 * lam * r * r;
    g[i] = lam * r;
    uint64_t b;
    memcpy(&b, &x[i], sizeof b);
    h = (h ^ b) * 1099511628211u;
  }
  *f += 1e-6 * ((double)(h >> 11) / 9007199254740992.0 - 0.5);
  return FLY_OK;
}

static void test_precision_limit(void)
{
  fly_lbfgs *l = NULL;
  fly_lbfgs_result r;
  fly_lbfgs_opts o;
  fly_err err = {0};
  double x[4] = { -3, 5, 0, 2 };
  int evals = 0;

  fly_lbfgs_new(4, 8, &l, &err);
  fly_lbfgs_opts_default(&o);
  o.g_tol = 1e-14;
  o.f_tol = 0;
  o.dec_tol = 1e-15;
  fly_rc rc = fly_lbfgs_run(l, noisyf, &evals, x, &o, &r, &err);
  double e = 0;
  for(int i = 0; i < 4; i++) e = fmax(e, fabs(x[i] - 1));
  /* stopped when g'H^-1 g <= 1e-5, so each |x_i - 1| <= sqrt(1e-5 / lam_i) */
  TAP_OK(rc == FLY_OK && r.stop == FLY_LBFGS_DECREMENT && e < 4e-3,
         "f at its rounding level: stops by the Newton decrement (rc %d, %s, "
         "max |x - 1| %.3g, %d iters, %d evals)", rc,
         fly_lbfgs_stop_str(r.stop), e, r.iters, r.evals);
  TAP_OK(r.evals <= 40, "... without a long futile line search (%d evals)",
         r.evals);
  int with = r.evals;
  /* the same without the test: it spends evaluations on noise */
  x[0] = -3; x[1] = 5; x[2] = 0; x[3] = 2;
  o.dec_tol = 0;
  fly_err_clear(&err);
  evals = 0;
  rc = fly_lbfgs_run(l, noisyf, &evals, x, &o, &r, &err);
  TAP_OK(r.stop != FLY_LBFGS_DECREMENT && r.evals > with,
         "without it the minimiser runs on (%s, %d evals, %d with it)",
         fly_lbfgs_stop_str(r.stop), r.evals, with);
  fly_lbfgs_free(l);
}

int main(void)
{
  test_rosenbrock(2);
  test_rosenbrock(10);
  test_quadratic(10, 10);
  test_quadratic(20, 8);
  test_logistic(1.0, 1.0, "moderate");
  test_logistic(100.0, 4.0, "near-separable, weak prior");
  test_failures();
  test_precision_limit();
  return tap_done();
}
