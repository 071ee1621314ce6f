/*
 * test_robust.c -- the robust (Student-t) regression model.
 *
 * Each check compares against something computed independently here:
 * long-double transcriptions of the likelihood and the tangent bound
 * (lgammal for the normaliser), direct sums over rows, central finite
 * differences, and a store tuned end to end by fly_tune_get.  Rows are
 * stored with a junk column between the features and the target
 * (ldx = D + 2) so a wrong stride or target column shows up.  Targets are
 * heavy-tailed (t_3 noise plus gross outliers) so residuals cover the
 * inward, outward and far regimes of the thinning bound.
 */
#include "models/model.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "coef_check.h"
#include "rowwise_check.h"
#include "fd_sums.h"
#include "tap.h"
#include "store_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

static fly_model mk(size_t D, double nu, double sigma)
{
  fly_model m;
  memset(&m, 0, sizeof m);
  m.type = &fly_model_robust;
  m.D = D;
  m.tcol = D + 1;
  m.K = 1;
  m.prior = FLY_PRIOR_NORMAL;
  m.prior_scale = 2.5;
  m.nu = nu;
  m.scale = sigma;
  return m;
}

/* Reference normaliser, log L and log B (without eps) in long double.
 * log Gamma(z + 1/2) - log Gamma(z) from lgammal up to z = 1000 (beyond,
 * lgammal's own size, ~z log z, costs digits): there the Bernoulli series
 * 1/2 log z - 1/(8z) + 1/(192z^3) - 1/(640z^5) + 17/(14336z^7)
 * - 5115/(3041280z^9). */
static long double ref_K(double nu, double sigma)
{
  long double n = nu, z = n / 2, d;
  if( z < 1000 ){
    d = lgammal(z + 0.5L) - lgammal(z);
  }else{
    long double i = 1 / z, i2 = i * i;
    d = 0.5L * logl(z) - i / 8 + i * i2 / 192 - i * i2 * i2 / 640
      + 17 * i * i2 * i2 * i2 / 14336 - 5115 * i * i2 * i2 * i2 * i2 / 3041280;
  }
  return d - 0.5L * logl(n * 3.14159265358979323846264338327950288L)
       - logl((long double)sigma);
}
static long double ref_logL(double nu, double sigma, long double r)
{
  return ref_K(nu, sigma) - ((long double)nu + 1) / 2 * log1pl(r * r / nu);
}
static long double ref_logB(double nu, double sigma, double xi_d, long double r)
{
  long double h = ((long double)nu + 1) / 2, b2 = (long double)xi_d * xi_d;
  long double a = -h / (nu + b2);
  long double c = -h * log1pl(b2 / nu) - a * b2;
  return ref_K(nu, sigma) + a * r * r + c;
}

/* A t_3 draw: heavy tails (infinite fourth moment). */
static double t3(fly_rng *r)
{
  double z = fly_rng_normal(r), q = 0;
  for( int k = 0; k < 3; k++ ){ double e = fly_rng_normal(r); q += e * e; }
  return z / sqrt(q / 3);
}

/* A random data block: n rows, x_0 = 1 (intercept), other features N(0,sd),
 * y = th_true'x + sigma t_3 (every 20th row a gross outlier, +-100 sigma),
 * junk in column D. */
static double *data(fly_rng *r, size_t n, size_t D, double sd, double sigma)
{
  size_t ldx = D + 2;
  double *X = calloc(n * ldx + 1, sizeof *X);
  for( size_t i = 0; i < n; i++ ){
    double eta = 0;
    for( size_t j = 0; j < D; j++ ){
      double x = j == 0 ? 1.0 : sd * fly_rng_normal(r);
      X[i * ldx + j] = x;
      eta += x * (j % 2 ? 0.7 : -0.4);
    }
    double e = sigma * t3(r);
    if( i % 20 == 7 ) e = (i % 40 == 7 ? 100 : -100) * sigma * (1 + fly_rng_uniform(r));
    X[i * ldx + D] = 1e30;                              /* junk */
    X[i * ldx + D + 1] = eta + e;
  }
  return X;
}

/* A random xi from a mix of regimes (zero, tiny, moderate, around sqrt(nu),
 * large, huge, negative, the f32 maximum). */
static float rand_xi(fly_rng *r)
{
  static const float fixed[] = { 0.0f, 1e-38f, 1e-20f, 1e-8f, 1e-4f, 0.5f,
                                 1.0f, 2.0f, 1.5f, 200.0f, 1e3f, 1e6f, 1e10f,
                                 -2.0f, -0.3f, 3e38f };
  uint64_t k = fly_rng_below(r, 40);
  if( k < 16 ) return fixed[k];
  if( k < 30 ) return (float)(5 * fly_rng_uniform(r) - 2.5);
  return (float)(50 * fly_rng_uniform(r));
}

static const double nus[] = { 0.3, 1, 4, 30, 1e6 };
enum { N_NU = 5 };

static void test_norm(void)
{
  /* eval at r = 0 gives log L = K exactly */
  static const double nv[] = { 1e-3, 0.3, 1, 4, 30, 39.9, 40.1, 200, 1e4, 1e8 };
  static const double sv[] = { 1, 0.01, 250 };
  double worst = 0;
  for( int i = 0; i < 10; i++ ){
    for( int s = 0; s < 3; s++ ){
      fly_model m = mk(1, nv[i], sv[s]);
      double X[3] = { 1.0, 1e30, 0.75 }, th = 0.75, lL, work[4];
      m.type->eval(&m, &th, X, 3, NULL, 1, &lL, NULL, work);
      long double want = ref_K(nv[i], sv[s]);
      worst = fmax(worst, (double)fabsl(lL - want) / (1 + (double)fabsl(want)));
    }
  }
  TAP_OK(worst < 1e-14, "normaliser K matches lgammal (series beyond nu = 2000) for nu "
         "1e-3..1e8, sigma 0.01..250 (rel %.2g)", worst);
  /* nu -> inf: K -> -log(2 pi sigma^2)/2 */
  fly_model m = mk(1, 1e12, 2.0);
  double X[3] = { 1.0, 1e30, 0.0 }, th = 0, lL, work[4];
  m.type->eval(&m, &th, X, 3, NULL, 1, &lL, NULL, work);
  double g = -0.5 * log(2 * 3.14159265358979323846) - log(2.0);
  TAP_OK(fabs(lL - g) < 1e-12, "nu = 1e12: K is the normal's (%.3g off)", lL - g);
}

static void test_bound_le(void)
{
  fly_rng r;
  fly_rng_seed(&r, 21, 0);
  double work[64];
  long n = 0, viol = 0, far = 0, tightbad = 0;
  double worst = -INFINITY, worst_tight = 0, worst_ref = 0;
  for( int v = 0; v < N_NU; v++ ){
    double sigma = v % 2 ? 0.5 : 3.0;
    fly_model m = mk(1, nus[v], sigma);
    for( int rep = 0; rep < 600; rep++ ){
      float xi = rand_xi(&r);
      double xd = fabs((double)xi);
      double rvals[40];
      int ns = 0;
      rvals[ns++] = xd; rvals[ns++] = -xd;
      rvals[ns++] = xd * (1 + 1e-8); rvals[ns++] = xd * (1 - 1e-8);
      rvals[ns++] = -xd * (1 + 1e-8); rvals[ns++] = xd + 1e-6;
      rvals[ns++] = 0; rvals[ns++] = 1e-10; rvals[ns++] = -1e-10;
      rvals[ns++] = 50; rvals[ns++] = -50; rvals[ns++] = 1e3; rvals[ns++] = -1e3;
      while( ns < 40 ) rvals[ns++] = 100 * fly_rng_uniform(&r) - 50;
      for( int k = 0; k < ns; k++ ){
        double y = 0.7;
        double th = y - rvals[k] * sigma;         /* x = 1 */
        double X[3] = { 1.0, 1e30, y };
        double rc = (y - th) / sigma;             /* the residual eval sees */
        double lL, lB;
        m.type->eval(&m, &th, X, 3, &xi, 1, &lL, &lB, work);
        n++;
        if( !(lB <= lL) || !isfinite(lB) || !isfinite(lL) ) viol++;
        if( lB - lL > worst ) worst = lB - lL;
        long double rb = ref_logB(nus[v], sigma, xi, rc);
        long double rl = ref_logL(nus[v], sigma, rc);
        /* log B differs from the reference by eps = 1e-12 T, T the size of
         * the terms added near the tight point (plus |a| r^2 away from it) */
        double h = 0.5 * (nus[v] + 1), b2 = xd * xd;
        double T = 1 + fabs((double)ref_K(nus[v], sigma)) + h * log1p(b2 / nus[v])
                 + h * (b2 / (nus[v] + b2));
        double e1 = (double)fabsl((long double)lB - rb) /
                    (T + h * (rc * rc / (nus[v] + b2)));
        double e2 = (double)fabsl((long double)lL - rl) / (1 + (double)fabsl(rl));
        if( xd < 1e30 ) worst_ref = fmax(worst_ref, e1);
        worst_ref = fmax(worst_ref, e2);
        if( (xd < 1e30 && e1 > 1e-10) || e2 > 1e-14 ) far++;
        if( k < 2 ){                              /* the tight points */
          double gap = lL - lB;
          worst_tight = fmax(worst_tight, gap / T);
          if( !(gap < 1e-10 * T) ) tightbad++;
        }
      }
    }
  }
  TAP_OK(viol == 0, "B <= L on %ld (nu, xi, r) triples, |r| <= 1e3 (worst "
         "logB-logL %.3g)", n, worst);
  TAP_OK(tightbad == 0, "tight at r = +-xi: gap < 1e-10 T, T the size of the "
         "terms (worst gap/T %.3g)", worst_tight);
  TAP_OK(far == 0, "log L, log B match the long-double reference (worst rel %.3g; log B "
         "relative to T)", worst_ref);

  /* random D = 5 heavy-tailed data, random theta, random xi */
  fly_model m5 = mk(5, 4, 0.8);
  size_t N = 400;
  double *X = data(&r, N, 5, 3.0, 0.8);
  float *xi = malloc(N * sizeof *xi);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m5.type->work_len(&m5, N) * sizeof *w);
  long v5 = 0, bad5 = 0;
  for( int rep = 0; rep < 50; rep++ ){
    double th[5];
    double sc = rep < 25 ? 1.0 : 10.0;
    for( int j = 0; j < 5; j++ ) th[j] = sc * fly_rng_normal(&r);
    for( size_t i = 0; i < N; i++ ) xi[i] = rand_xi(&r);
    m5.type->eval(&m5, th, X, 7, xi, N, lL, lB, w);
    for( size_t i = 0; i < N; i++ ){
      v5 += !(lB[i] <= lL[i]);
      long double s = 0;
      for( int j = 0; j < 5; j++ ) s += (long double)th[j] * X[i * 7 + j];
      long double rl = ref_logL(4, 0.8, (X[i * 7 + 6] - s) / 0.8L);
      bad5 += fabsl(lL[i] - rl) > 1e-12L * (1 + fabsl(rl));
    }
  }
  TAP_OK(v5 == 0, "B <= L on random D=5 rows, random theta and xi (%ld bad)", v5);
  TAP_OK(bad5 == 0, "eval log L uses the features, stride and target (%ld bad)", bad5);

  double th[5] = { 0.3, -0.2, 0.1, 0, 1 };
  lB[0] = 12345;
  m5.type->eval(&m5, th, X, 7, xi, 3, lL, NULL, w);
  TAP_OK(lB[0] == 12345 && isfinite(lL[0]), "eval with logB NULL (xi unused)");
  m5.type->eval(&m5, th, X, 7, NULL, 3, lL, NULL, w);
  TAP_OK(isfinite(lL[2]), "eval with xi NULL and logB NULL (MAP search)");
  free(X); free(xi); free(lL); free(lB); free(w);
}

static void test_grad(void)
{
  enum { D = 4 };
  fly_model m = mk(D, 3.5, 0.6);
  fly_rng r;
  fly_rng_seed(&r, 22, 0);
  size_t N = 60;
  double *X = data(&r, N, D, 1.5, 0.6);
  float *xi = malloc(N * sizeof *xi);
  double *wL = malloc(N * sizeof *wL), *wB = malloc(N * sizeof *wB);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  const char *names[] = { "wL=1, wB=NULL", "wL=0, wB=1", "random wL, wB",
                          "Ltilde weights" };
  for( int c = 0; c < 4; c++ ){
    double worst = 0;
    for( int rep = 0; rep < 5; rep++ ){
      double th[D], g[D], fd[D];
      for( int j = 0; j < D; j++ ) th[j] = fly_rng_normal(&r);
      for( size_t i = 0; i < N; i++ ){
        xi[i] = (float)(6 * fly_rng_uniform(&r) - 3);
        wL[i] = c == 1 ? 0 : c == 0 ? 1 : fly_rng_normal(&r);
        wB[i] = c == 1 ? 1 : fly_rng_normal(&r);
      }
      if( c == 3 ){
        m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
        for( size_t i = 0; i < N; i++ ){
          wL[i] = 1 / fly_p_bright(lL[i] - lB[i]);
          wB[i] = -wL[i];
        }
      }
      const double *pB = c == 0 ? NULL : wB;
      for( int j = 0; j < D; j++ ) g[j] = 0.25 * j;     /* g += ... */
      m.type->grad(&m, th, X, D + 2, xi, N, wL, pB, g, w);
      for( int j = 0; j < D; j++ ) g[j] -= 0.25 * j;
      for( int j = 0; j < D; j++ ){
        double h = 1e-5, f[4];
        static const double off[4] = { -2, -1, 1, 2 };
        for( int q = 0; q < 4; q++ ){
          double tq[D];
          memcpy(tq, th, sizeof tq);
          tq[j] += off[q] * h;
          f[q] = c == 3 ? ltsum(&m, tq, X, xi, N, lL, lB, w)
                        : wsum(&m, tq, X, xi, N, wL, pB, lL, lB, w);
        }
        fd[j] = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h);
      }
      worst = fmax(worst, relerr(g, fd, D));
    }
    TAP_OK(worst < 1e-6, "grad vs finite differences, %s (rel %.2g)", names[c], worst);
  }

  /* neg_hess: per row, the finite-difference Hessian of log L_i is
   * -w_i x_i x_i'/sigma^2; neg_hess must sum it over the rows with w_i >= 0
   * (|r_i| <= sqrt(nu)) and leave out the others. */
  double worst = 0, asym = 0, negq = 0, obsq = 0;
  long n_in = 0, n_out = 0;
  for( int rep = 0; rep < 5; rep++ ){
    double th[D], H[D * D], want[D * D] = { 0 }, obs[D * D] = { 0 };
    for( int j = 0; j < D; j++ ) th[j] = 0.5 * fly_rng_normal(&r);
    for( int j = 0; j < D; j++ ) for( int k = 0; k < D; k++ )
      H[j * D + k] = 0.1 * (j + k);
    m.type->neg_hess(&m, th, X, D + 2, N, H, w);
    for( int j = 0; j < D; j++ ) for( int k = 0; k < D; k++ )
      H[j * D + k] -= 0.1 * (j + k);
    for( int j = 0; j < D; j++ ) for( int k = 0; k < D; k++ )
      asym = fmax(asym, fabs(H[j * D + k] - H[k * D + j]));
    double one = 1;
    for( size_t i = 0; i < N; i++ ){
      const double *x = X + i * (D + 2);
      double F[D * D], s = 0;
      for( int k = 0; k < D; k++ ){
        double hh = 1e-5, tp[D], tm[D], gp[D] = { 0 }, gm[D] = { 0 };
        memcpy(tp, th, sizeof tp); memcpy(tm, th, sizeof tm);
        tp[k] += hh; tm[k] -= hh;
        m.type->grad(&m, tp, x, D + 2, xi, 1, &one, NULL, gp, w);
        m.type->grad(&m, tm, x, D + 2, xi, 1, &one, NULL, gm, w);
        for( int j = 0; j < D; j++ ) F[j * D + k] = -(gp[j] - gm[j]) / (2 * hh);
      }
      for( int j = 0; j < D; j++ ) s += x[j] * th[j];
      double res = (x[D + 1] - s) / m.scale;
      if( fabs(res * res - m.nu) < 1e-3 ) continue;   /* at the kink */
      int in = res * res < m.nu;
      n_in += in; n_out += !in;
      for( int j = 0; j < D * D; j++ ){
        obs[j] += F[j];
        if( in ) want[j] += F[j];
      }
    }
    worst = fmax(worst, relerr(H, want, D * D));
    /* H is PSD and H - observed is PSD: v'Hv >= 0, v'(H - obs)v >= 0 */
    for( int t = 0; t < 50; t++ ){
      double v[D], q = 0, qo = 0;
      for( int j = 0; j < D; j++ ) v[j] = fly_rng_normal(&r);
      for( int j = 0; j < D; j++ ) for( int k = 0; k < D; k++ ){
        q += v[j] * H[j * D + k] * v[k];
        qo += v[j] * (H[j * D + k] - obs[j * D + k]) * v[k];
      }
      negq = fmin(negq, q);
      obsq = fmin(obsq, qo);
    }
  }
  TAP_OK(worst < 1e-6 && n_in > 100 && n_out > 20,
         "neg_hess = sum of FD Hessians of the rows with |r| < sqrt(nu) (rel %.2g; "
         "%ld rows in, %ld clipped)", worst, n_in, n_out);
  TAP_OK(asym < 1e-12, "neg_hess is full and symmetric (%.2g)", asym);
  TAP_OK(negq >= 0 && obsq >= -1e-8, "neg_hess is PSD and dominates the observed "
         "information (min v'Hv %.3g, min v'(H-obs)v %.3g)", negq, obsq);

  /* xi_at: the signed residual, and the bound is then tight at th */
  double th[D] = { 0.5, -1, 0.25, 2 }, xo[60];
  m.type->xi_at(&m, th, X, D + 2, N, xo, w);
  int ok = 1, neg = 0;
  double gmax = 0;
  for( size_t i = 0; i < N; i++ ){
    double s = 0;
    for( int j = 0; j < D; j++ ) s += th[j] * X[i * (D + 2) + j];
    double res = (X[i * (D + 2) + D + 1] - s) / m.scale;
    ok &= fabs(xo[i] - res) <= 1e-13 * (1 + fabs(res));
    neg += xo[i] < 0;
    xi[i] = (float)xo[i];
  }
  m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
  for( size_t i = 0; i < N; i++ ) gmax = fmax(gmax, lL[i] - lB[i]);
  TAP_OK(ok && neg > 0, "xi_at = (y - th'x)/sigma, signed (%d negative)", neg);
  TAP_OK(gmax < 1e-9, "bounds tuned by xi_at are tight there (max gap %.2g)", gmax);
  free(X); free(xi); free(wL); free(wB); free(lL); free(lB); free(w);
}

static void test_collapsed(void)
{
  enum { D = 5 };
  fly_model m = mk(D, 2.5, 1.7);
  fly_rng r;
  fly_rng_seed(&r, 23, 0);
  size_t N = 700;
  double *X = data(&r, N, D, 2.0, 1.7);
  float *xi = malloc(N * sizeof *xi);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  size_t nm = m.type->n_moments(&m);
  double *mom = calloc(nm, sizeof *mom);
  fly_moment_section sec[8];
  size_t ns = m.type->moment_layout(&m, sec), tot = 0;
  for( size_t k = 0; k < ns; k++ ) tot += sec[k].rows * sec[k].cols;
  TAP_OK(ns == 4 && tot == nm && strcmp(sec[0].name, "S") == 0 &&
         strcmp(sec[1].name, "b") == 0 && strcmp(sec[2].name, "q") == 0 &&
         strcmp(sec[3].name, "c") == 0 && sec[1].rows == D && sec[3].rows == 1,
         "moment layout S, b, q, c covers %zu moments", nm);
  TAP_OK(m.type->n_params(&m) == D && m.type->n_xi(&m) == 1, "n_params, n_xi");
  TAP_OK(m.type->work_len(&m, 10) >= 10 * D + 10 + D * D, "work_len covers n D + n + D^2");

  double worst = 0, gworst = 0, fdworst = 0, asym = 0;
  for( int rep = 0; rep < 6; rep++ ){
    for( size_t i = 0; i < N; i++ ){
      xi[i] = rand_xi(&r);
      if( fabsf(xi[i]) > 1e3f ) xi[i] = 1e3f;
    }
    memset(mom, 0, nm * sizeof *mom);
    size_t cuts[] = { 0, 1, 8, 300, N };
    for( int b = 0; b < 4; b++ )
      m.type->moments_add(&m, X + cuts[b] * (D + 2), D + 2, xi + cuts[b],
                          cuts[b + 1] - cuts[b], mom, w);
    for( int j = 0; j < D; j++ ) for( int k = 0; k < D; k++ )
      asym = fmax(asym, fabs(mom[j * D + k] - mom[k * D + j]));
    for( int t = 0; t < 4; t++ ){
      double th[D], g[D] = { 0 }, g2[D] = { 0 }, fd[D];
      double sc = t < 2 ? 0.5 : 5;
      for( int j = 0; j < D; j++ ) th[j] = sc * fly_rng_normal(&r);
      double bs = m.type->bound_sum(&m, mom, th, g, w);
      m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
      double direct = 0, mag = 0;
      for( size_t i = 0; i < N; i++ ){ direct += lB[i]; mag += fabs(lB[i]); }
      worst = fmax(worst, fabs(bs - direct) / mag);
      double *wB = lL;
      for( size_t i = 0; i < N; i++ ) wB[i] = 1;
      m.type->grad(&m, th, X, D + 2, xi, N, NULL, wB, g2, w);
      gworst = fmax(gworst, relerr(g, g2, D));
      for( int j = 0; j < D; j++ ){
        double h = 1e-5 * (1 + fabs(th[j])), tp[D], tm[D];
        memcpy(tp, th, sizeof tp); memcpy(tm, th, sizeof tm);
        tp[j] += h; tm[j] -= h;
        fd[j] = (m.type->bound_sum(&m, mom, tp, NULL, w) -
                 m.type->bound_sum(&m, mom, tm, NULL, w)) / (2 * h);
      }
      fdworst = fmax(fdworst, relerr(g, fd, D));
    }
  }
  TAP_OK(worst < 1e-10, "bound_sum equals sum of eval's log B (rel %.2g)", worst);
  TAP_OK(gworst < 1e-10, "bound_sum gradient equals grad with wB = 1 (rel %.2g)", gworst);
  TAP_OK(fdworst < 1e-6, "bound_sum gradient vs finite differences (rel %.2g)", fdworst);
  TAP_OK(asym == 0, "S is full and symmetric");

  double *m1 = calloc(nm, sizeof *m1), *m2 = calloc(nm, sizeof *m2);
  m.type->moments_add(&m, X, D + 2, xi, N, m1, w);
  m.type->moments_add(&m, X, D + 2, xi, 100, m2, w);
  m.type->moments_add(&m, X + 100 * (D + 2), D + 2, xi + 100, N - 100, m2, w);
  TAP_OK(relerr(m2, m1, nm) < 1e-12, "moments_add accumulates");
  free(m1); free(m2);
  free(X); free(xi); free(lL); free(lB); free(w); free(mom);
}

/* Cholesky of an SPD matrix, then the inverse. */
static void spd_inverse(int D, const double *H, double *P)
{
  double L[64], Li[64];
  memset(L, 0, sizeof L); memset(Li, 0, sizeof Li);
  for( int j = 0; j < D; j++ ){
    double s = H[j * D + j];
    for( int k = 0; k < j; k++ ) s -= L[j * D + k] * L[j * D + k];
    L[j * D + j] = sqrt(s);
    for( int i = j + 1; i < D; i++ ){
      double t = H[i * D + j];
      for( int k = 0; k < j; k++ ) t -= L[i * D + k] * L[j * D + k];
      L[i * D + j] = t / L[j * D + j];
    }
  }
  for( int c = 0; c < D; c++ ){
    for( int i = 0; i < D; i++ ){
      double t = i == c ? 1 : 0;
      for( int k = 0; k < i; k++ ) t -= L[i * D + k] * Li[k * D + c];
      Li[i * D + c] = t / L[i * D + i];
    }
  }
  for( int i = 0; i < D; i++ ) for( int j = 0; j < D; j++ ){
    double t = 0;
    for( int k = 0; k < D; k++ ) t += Li[k * D + i] * Li[k * D + j];
    P[i * D + j] = t;
  }
}

static double q_of(int D, const double *P, const double *x)   /* x'Px */
{
  double q = 0;
  for( int a = 0; a < D; a++ ) for( int b = 0; b < D; b++ )
    q += x[a] * P[a * D + b] * x[b];
  return q;
}

/* The key as tuning stores it: rounded up to f32. */
static double key_f32(const fly_model *m, const float *xi, double xnorm)
{
  double key = m->type->gap_key(m, xi, xnorm);
  float kf = (float)key;
  if( (double)kf < key ) kf = nextafterf(kf, INFINITY);
  return kf;
}

static void test_gap_bound(void)
{
  enum { D = 4 };
  fly_rng r;
  fly_rng_seed(&r, 24, 0);
  size_t N = 300;
  double *xo = malloc(N * sizeof *xo), *xn = malloc(N * sizeof *xn);
  double *key = malloc(N * sizeof *key);
  float *xi = malloc(N * sizeof *xi);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  long n = 0, viol = 0, ratio_n = 0, loose = 0, caught = 0;
  double worst = 0, ratio_max = 0, ratio_min = INFINITY;
  for( int v = 0; v < N_NU; v++ ){
    double sigma = v % 2 ? 0.4 : 2.0;
    fly_model m = mk(D, nus[v], sigma);
    double *X = data(&r, N, D, 2.0, sigma);
    double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
    for( int rep = 0; rep < 12; rep++ ){
      double A[D * D], H[D * D], P[D * D], thm[D];
      for( int j = 0; j < D * D; j++ ) A[j] = fly_rng_normal(&r);
      double scale = rep < 6 ? 1.0 : 1e4;
      for( int i = 0; i < D; i++ ) for( int j = 0; j < D; j++ ){
        double t = i == j ? 0.05 : 0;
        for( int k = 0; k < D; k++ ) t += A[k * D + i] * A[k * D + j];
        H[i * D + j] = scale * t;
      }
      spd_inverse(D, H, P);
      for( int j = 0; j < D; j++ ) thm[j] = 2 * fly_rng_normal(&r);
      /* some rows with a residual of (about) 0 at the MAP */
      for( size_t i = 0; i < N; i += 17 ){
        double s = 0;
        for( int j = 0; j < D; j++ ) s += thm[j] * X[i * (D + 2) + j];
        X[i * (D + 2) + D + 1] = s;
      }
      m.type->xi_at(&m, thm, X, D + 2, N, xo, w);
      for( size_t i = 0; i < N; i++ ){
        xi[i] = (float)xo[i];
        double q = q_of(D, P, X + i * (D + 2));
        xn[i] = (i % 2) ? (double)(float)sqrt(q) : sqrt(q);
        key[i] = key_f32(&m, &xi[i], xn[i]);
      }
      static const double scales[] = { 0, 1e-14, 1e-10, 1e-6, 1e-3, 1e-1, 1, 3, 30, 1e3 };
      for( int si = 0; si < 10; si++ ){
        for( int dir = 0; dir < 8; dir++ ){
          double th[D];
          for( int j = 0; j < D; j++ )
            th[j] = thm[j] + scales[si] * fly_rng_normal(&r) / sqrt(scale);
          double rad = m.type->radius(&m, th, thm, H, w);
          m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
          for( size_t i = 0; i < N; i++ ){
            double gap = lL[i] - lB[i];
            double ub = m.type->gap_upper(&m, key[i], rad);
            n++;
            if( !(gap <= ub) ){
              viol++;
              worst = fmax(worst, gap - ub);
            }
          }
        }
      }
      /* along d = +-P x_i / ||x_i||_P Cauchy-Schwarz is an equality (r = 1,
       * |d'x_i| = ||x_i||_P): move the residual outward.  For nu = 4, rows with
       * 1 <= |xi| <= 5 and a small step, the key is within 3x of the gap. */
      if( nus[v] != 4 || scale != 1e4 ) continue;
      for( size_t i = 0; i < N; i++ ){
        double b = fabs((double)xi[i]);
        if( !(b >= 1 && b <= 5) ) continue;
        const double *x = X + i * (D + 2);
        double th[D], nx = sqrt(q_of(D, P, x));
        double lam = xi[i] > 0 ? -1 : 1;          /* r = (y - th'x)/sigma */
        for( int a = 0; a < D; a++ ){
          double t = 0;
          for( int c = 0; c < D; c++ ) t += P[a * D + c] * x[c];
          th[a] = thm[a] + lam * t / nx;
        }
        double rad = m.type->radius(&m, th, thm, H, w);
        m.type->eval(&m, th, x, D + 2, &xi[i], 1, lL, lB, w);
        double ub = m.type->gap_upper(&m, key[i], rad);
        double ratio = ub / (lL[0] - lB[0]);
        ratio_max = fmax(ratio_max, ratio);
        ratio_min = fmin(ratio_min, ratio);
        ratio_n++;
        loose += !(ratio >= 1 && ratio < 3);
        caught += ratio < 2;                /* a halved bound fails here */
      }
    }
    free(X); free(w);
  }
  TAP_OK(viol == 0, "gap <= gap_upper(f32 key, radius) on %ld rows x theta x nu "
         "(%ld bad, worst excess %.3g)", n, viol, worst);
  TAP_OK(ratio_n > 100 && loose == 0,
         "gap upper bound within 3x where Cauchy-Schwarz is tight (%ld rows, ratio "
         "%.3g..%.3g)", ratio_n, ratio_min, ratio_max);
  TAP_OK(caught > 0, "sensitivity: gap_upper halved is violated at %ld of those "
         "rows", caught);

  /* D = 1, x = 1: Cauchy-Schwarz is an equality (radius sqrt(H)|d|,
   * xnorm 1/sqrt(H), the residual moves by exactly |d|/sigma), so sweeping
   * the move t over a fine grid, inward (through 0 and beyond) and outward,
   * probes the supremum the key must cover for each (nu, xi). */
  {
    static const double nv[] = { 0.01, 0.3, 1, 4, 30, 1e4 };
    static const double Hs[] = { 1e-2, 1, 1e4 };
    long bad1 = 0, n1 = 0;
    double tight1 = 0, w1[4];
    for( int v = 0; v < 6; v++ ) for( int hi = 0; hi < 3; hi++ ){
      double sigma = 0.7, H1 = Hs[hi];
      fly_model mv = mk(1, nv[v], sigma);
      for( int bi = 0; bi < 60; bi++ ){
        double y = 1.25, thm = y - sigma * (bi == 0 ? 0 : 1e-3 * pow(1.3, bi));
        double X1[3] = { 1.0, 1e30, y }, res;
        mv.type->xi_at(&mv, &thm, X1, 3, 1, &res, w1);
        float x1 = (float)res;
        double k1 = key_f32(&mv, &x1, 1 / sqrt(H1));
        for( int ti = -400; ti <= 400; ti++ ){
          /* t from 1e-6 to 3e4 times sigma, both signs */
          double t = ti == 0 ? 0 : (ti > 0 ? 1 : -1) * 1e-6 * pow(1.05, abs(ti));
          double th = thm + sigma * t, l1, b1;
          double rad = mv.type->radius(&mv, &th, &thm, &H1, w1);
          mv.type->eval(&mv, &th, X1, 3, &x1, 1, &l1, &b1, w1);
          double ub = mv.type->gap_upper(&mv, k1, rad);
          n1++;
          bad1 += !(l1 - b1 <= ub);
          if( ub > 0 && l1 - b1 > 1e-6 ) tight1 = fmax(tight1, (l1 - b1) / ub);
        }
      }
    }
    TAP_OK(bad1 == 0 && tight1 > 0.4, "D = 1 sweep over nu, xi and the residual "
           "move, both directions: gap <= gap_upper on %ld points (%ld bad; "
           "largest gap/bound %.3g)", n1, bad1, tight1);
  }

  /* P -> 0 (xnorm = 0, radius 0 at the MAP): the key alone must cover the
   * gap left by eps and rounding at the tight point */
  {
    long bad0 = 0;
    for( int v = 0; v < N_NU; v++ ){
      fly_model mv = mk(1, nus[v], 0.3);
      for( int rep = 0; rep < 2000; rep++ ){
        double X1[3] = { 1.0, 1e30, 100 * fly_rng_normal(&r) }, thm = 0, w1[4];
        thm = X1[2] - 0.3 * (rep % 2 ? 1e3 : 3) * fly_rng_normal(&r);
        double res;
        mv.type->xi_at(&mv, &thm, X1, 3, 1, &res, w1);
        float x1 = (float)res;
        double l1, b1;
        mv.type->eval(&mv, &thm, X1, 3, &x1, 1, &l1, &b1, w1);
        bad0 += !(l1 - b1 <= mv.type->gap_upper(&mv, key_f32(&mv, &x1, 0.0), 0.0));
      }
    }
    TAP_OK(bad0 == 0, "xnorm = 0: the key covers eps and rounding at the MAP "
           "(%ld bad)", bad0);
  }

  /* the key in closed form at xi = 0: a^2 sqrt(h/2)/nu + 2 eps */
  fly_model m = mk(D, 4, 1.0);
  float z0 = 0;
  double k0 = m.type->gap_key(&m, &z0, 1.0);
  double a = 1.001 + 1e-9, want = a * a * sqrt(1.25) / 4;
  TAP_OK(k0 >= want && k0 < want * (1 + 1e-9), "gap_key at xi = 0 is "
         "(1.001 xnorm)^2 sqrt(h/2)/nu (%.9g)", k0);
  float big = 3e38f, nan = NAN;
  TAP_OK(m.type->gap_key(&m, &big, 1.0) == FLT_MAX &&
         m.type->gap_key(&m, &nan, 1.0) == FLT_MAX,
         "gap_key saturates at FLT_MAX (read always)");
  double H2[4] = { 4, 1, 1, 2 }, a2[2] = { 1, 2 }, b2[2] = { 0, 1 }, w2[8];
  fly_model m2 = mk(2, 4, 1.0);
  double rr = m2.type->radius(&m2, a2, b2, H2, w2);
  TAP_OK(fabs(rr - sqrt(8.0)) < 1e-15, "radius on a 2x2 case (%.17g)", rr);
  TAP_OK(m.type->gap_upper(&m, 2e-3, 2.0) > m.type->gap_upper(&m, 1e-3, 2.0) &&
         m.type->gap_upper(&m, 1e-3, 3.0) > m.type->gap_upper(&m, 1e-3, 2.0) &&
         m.type->gap_upper(&m, 1e-3, 0.5) == m.type->gap_upper(&m, 1e-3, 1.0),
         "gap_upper increasing in key and r, flat below r = 1");
  free(xo); free(xn); free(key); free(xi); free(lL); free(lB);
}

static void test_target(void)
{
  fly_model m = mk(3, 4, 1);
  fly_err err;
  fly_err_clear(&err);
  TAP_OK(m.type->check_target(&m, 0.0, 0, &err) == FLY_OK &&
         m.type->check_target(&m, -1e300, 5, &err) == FLY_OK &&
         m.type->check_target(&m, 3.25, 5, &err) == FLY_OK &&
         m.type->check_target(&m, 4.9e-324, 5, &err) == FLY_OK,
         "finite targets accepted");
  fly_rc rc = m.type->check_target(&m, NAN, 7, &err);
  TAP_OK(rc == FLY_RANGE && err.code == FLY_RANGE &&
         strcmp(err.msg, "row 8: target nan is not a finite number") == 0,
         "target NaN: FLY_RANGE, \"%s\"", err.msg);
  TAP_OK(m.type->check_target(&m, INFINITY, 0, NULL) == FLY_RANGE &&
         m.type->check_target(&m, -INFINITY, 0, NULL) == FLY_RANGE,
         "targets +-inf rejected (err NULL)");
  TAP_OK(fly_model_find("robust") == &fly_model_robust, "fly_model_find(\"robust\")");
}

/* ---- a tuned store -------------------------------------------------- */

#define PAGE_ROWS 100

/* A store of N rows: x_0 = 1, x_j ~ N(0, 1), y = beta'x + 0.5 t_3, every
 * 25th row an outlier at +-50; stored row [x, y] (target in column D). */
static int64_t make_store(fly_db *db, size_t N, size_t D, double *X)
{
  fly_rng rng;
  size_t W = D + 1;
  int64_t ds = -1;
  fly_rng_seed(&rng, 31, 0);
  for( size_t n = 0; n < N; n++ ){
    double *x = X + n * W, s = 0;
    x[0] = 1;
    for( size_t j = 1; j < D; j++ ) x[j] = fly_rng_normal(&rng);
    for( size_t j = 0; j < D; j++ ) s += x[j] * (0.5 - 0.3 * (double)j);
    x[D] = s + 0.5 * t3(&rng) + (n % 25 == 3 ? (n % 50 == 3 ? 50 : -50) : 0);
  }
  return fx_store_rows(db, "heavy", X, N, W, PAGE_ROWS, &ds) ? ds : -1;
}

static int read_bounds(fly_db *db, int64_t id, size_t N, float *xi, double *key)
{
  fly_pages *bp = NULL;
  fly_err err = {0};
  double buf[PAGE_ROWS * 2];
  size_t n, got = 0;
  int ok = 0;
  if( fly_pages_open(db, FLY_TABLE_BOUND, id, 0, &bp, &err) ) return 0;
  const fly_pages_info *in = fly_pages_info_of(bp);
  if( in->width != 2 || in->n_rows != (int64_t)N ) goto done;
  for( int64_t k = 0; k < in->n_pages; k++ ){
    if( fly_pages_read_page(bp, k, buf, &n, &err) ) goto done;
    for( size_t i = 0; i < n; i++, got++ ){
      xi[got] = (float)buf[2 * i];
      key[got] = buf[2 * i + 1];
    }
  }
  ok = got == N;
done:
  fly_pages_close(bp);
  return ok;
}

static void test_tune(void)
{
  enum { D = 4 };
  const size_t N = 2345, W = D + 1;
  char path[256];
  fly_db *db = NULL;
  fly_bounds *b = NULL;
  fly_err err = {0};
  double *X = calloc(N * W, sizeof *X), *lL = calloc(N, sizeof *lL);
  double *lB = calloc(N, sizeof *lB), *key = calloc(N, sizeof *key);
  float *xi = calloc(N, sizeof *xi);
  fly_model m = mk(D, 3, 0.5);
  double *work = calloc(m.type->work_len(&m, N), sizeof *work);
  int64_t id = -1;
  char mopts[256];

  m.tcol = D;
  fly_rc rc = fx_create_db("robust", path, sizeof path, &db, &err);
  TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg);
  if( rc ) goto done;
  int64_t ds = make_store(db, N, D, X);
  TAP_OK(ds > 0, "store of %zu heavy-tailed rows in %zu pages", N,
         (N + PAGE_ROWS - 1) / PAGE_ROWS);
  if( ds <= 0 ) goto done;
  rc = fly_tune_model_opts(&m, mopts, sizeof mopts, &err);
  TAP_OK(rc == FLY_OK && strstr(mopts, ";nu=3;sigma=0.5"), "model options '%s'",
         mopts);
  rc = fly_tune_get(db, ds, &m, NULL, &id, &err);
  TAP_OK(rc == FLY_OK && id > 0, "fly_tune_get: bound set %lld (%s)", (long long)id,
         err.msg);
  if( rc ) goto done;
  rc = fly_bounds_load(db, id, &m, &b, &err);
  TAP_OK(rc == FLY_OK && b && b->n_mom == D * D + D + 2, "bound set loads (%s)",
         err.msg);
  if( rc ) goto done;
  TAP_OK(read_bounds(db, id, N, xi, key), "read %zu bound rows", N);

  /* the MAP: gradient of the log posterior ~ 0 */
  double g[D] = { 0 }, gmax = 0;
  for( size_t i = 0; i < N; i++ ) lL[i] = 1;
  m.type->grad(&m, b->theta_map, X, W, NULL, N, lL, NULL, g, work);
  fly_model_log_prior(&m, b->theta_map, g);
  for( int j = 0; j < D; j++ ) gmax = fmax(gmax, fabs(g[j]));
  TAP_OK(gmax < 1e-4, "MAP gradient ~ 0 (%.3g)", gmax);

  /* xi = residual at the MAP (f32); bounds tight there */
  double wx = 0, wg = 0;
  for( size_t i = 0; i < N; i++ ){
    double s = 0;
    for( int j = 0; j < D; j++ ) s += b->theta_map[j] * X[i * W + j];
    double res = (X[i * W + D] - s) / m.scale;
    wx = fmax(wx, fabs(xi[i] - res) / fmax(fabs(res), 1e-30));
  }
  m.type->eval(&m, b->theta_map, X, W, xi, N, lL, lB, work);
  for( size_t i = 0; i < N; i++ ) wg = fmax(wg, lL[i] - lB[i]);
  TAP_OK(wx <= 0x1.0p-24 * 1.0001 && wg < 1e-9, "xi = MAP residual in f32 "
         "(rel %.3g), tight at the MAP (max gap %.3g)", wx, wg);

  /* stored moments: bound_sum = sum of log B from the stored xi; keys hold */
  fly_rng rng;
  fly_rng_seed(&rng, 32, 0);
  double worst = 0, ratio = 0;
  long viol = 0;
  static const double sc[] = { 0.1, 1, 3, 30 };
  for( int t = 0; t < 4; t++ ){
    for( int rep = 0; rep < 4; rep++ ){
      double th[D], z[D];
      for( int j = 0; j < D; j++ ) z[j] = sc[t] * fly_rng_normal(&rng);
      for( int i = 0; i < D; i++ ){
        th[i] = b->theta_map[i];
        for( int j = 0; j <= i; j++ ) th[i] += b->chol_cov[i * D + j] * z[j];
      }
      double col = m.type->bound_sum(&m, b->mom, th, NULL, work), ex = 0;
      m.type->eval(&m, th, X, W, xi, N, lL, lB, work);
      for( size_t i = 0; i < N; i++ ) ex += lB[i];
      worst = fmax(worst, fabs(col - ex) / fabs(ex));
      double rad = m.type->radius(&m, th, b->theta_map, b->prec, work);
      for( size_t i = 0; i < N; i++ ){
        double gap = lL[i] - lB[i], ub = m.type->gap_upper(&m, key[i], rad);
        viol += !(gap <= ub);
        if( ub > 0 ) ratio = fmax(ratio, gap / ub);
      }
    }
  }
  TAP_OK(worst < 1e-10, "stored moments: bound_sum = sum_n log B_n from the "
         "stored xi (rel %.3g)", worst);
  TAP_OK(viol == 0 && ratio > 0.05, "stored keys bound every gap (%ld bad, "
         "largest gap/bound %.3g)", viol, ratio);

done:
  fly_bounds_free(b);
  fly_db_close(db);
  unlink(path);
  free(X); free(lL); free(lB); free(key); free(xi); free(work);
}

/* Kept coefficients (the tangent's a, c) give the same bits as eval / grad
 * with xi, with and without logB / wB. */
static void test_coef(void)
{
  enum { D = 4 };
  fly_model m = mk(D, 4.0, 0.7);
  fly_rng r;
  fly_rng_seed(&r, 41, 0);
  size_t N = 300;
  TAP_OK(m.type->coef && m.type->n_coef(&m) == 2, "robust has bound coefficients (2 a row)");
  double *X = data(&r, N, D, 1.5, 0.7);
  float *xi = malloc(N * sizeof *xi);
  double *wL = malloc(N * sizeof *wL), *wB = malloc(N * sizeof *wB);
  int bad = 0;
  for( int rep = 0; rep < 10; rep++ ){
    double th[D];
    for( int j = 0; j < D; j++ ) th[j] = 2 * fly_rng_normal(&r);
    for( size_t i = 0; i < N; i++ ){
      xi[i] = rand_xi(&r);
      wL[i] = fly_rng_normal(&r);
      wB[i] = rep % 3 ? fly_rng_normal(&r) : 0.0;
    }
    bad |= coef_mismatch(&m, th, X, D + 2, xi, N, wL, wB);
  }
  TAP_OK(bad == 0, "eval_coef/grad_coef == eval/grad bit for bit (mismatch mask %d)", bad);
  free(X); free(xi); free(wL); free(wB);
}

/* Up to FLY_ROWWISE rows, a row's values do not depend on its company.
 * D = 21: there OpenBLAS's dgemv rounds a row by its place in a block. */
static void draw_xi(fly_rng *r, float *xi) { *xi = rand_xi(r); }

static void test_rowwise(void)
{
  fly_model m = mk(21, 4.0, 0.7);
  fly_rng r;
  fly_rng_seed(&r, 43, 0);
  double *X = data(&r, 60, 21, 1.0, 0.7);
  size_t nbad = rowwise_reps(&m, X, 23, 60, &r, 5, draw_xi);
  TAP_OK(nbad == 0, "eval of <= %d rows: %zu of 300 rows differ from the row alone",
         FLY_ROWWISE, nbad);
  free(X);
}

int main(void)
{
  test_norm();
  test_bound_le();
  test_grad();
  test_coef();
  test_rowwise();
  test_collapsed();
  test_gap_bound();
  test_target();
  test_tune();
  return tap_done();
}
