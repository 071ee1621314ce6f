/*
 * test_softmax.c -- the softmax model with Boehning's bound, and MAP tuning
 * of softmax bound sets.
 *
 * Each check compares against something computed independently here:
 * long-double transcriptions of log-softmax and of the bound in its
 * textbook (unshifted) form, direct sums over rows, central finite
 * differences, logistic regression for K = 2, and (for tuning) in-memory
 * gradients and Hessians written out from the formulas.  Rows are stored
 * with a junk column between the features and the target (ldx = D + 2) so
 * a wrong stride or target column shows up.
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
#include "coef_check.h"
#include "rowwise_check.h"
#include "fd_sums.h"
#include "tap.h"
#include "store_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

#define MAXK 8
#define MAXD 8
#define MAXP (MAXK * MAXD)

static fly_model mk(size_t K, size_t D)
{
  fly_model m;
  memset(&m, 0, sizeof m);
  m.type = &fly_model_softmax;
  m.D = D;
  m.tcol = D + 1;
  m.K = K;
  m.prior = FLY_PRIOR_NORMAL;
  m.prior_scale = 2.5;
  return m;
}

/* Reference log-softmax_y(s) and log B (without eps), long double, in the
 * plain form f(psi) + g'(s - psi) - (s - psi)'A(s - psi)/2. */
static long double ref_lse(const long double *a, size_t K)
{
  long double mx = a[0], t = 0;
  for( size_t k = 1; k < K; k++ ) if( a[k] > mx ) mx = a[k];
  for( size_t k = 0; k < K; k++ ) t += expl(a[k] - mx);
  return mx + logl(t);
}
static long double ref_logL(const double *s, size_t K, size_t y)
{
  long double a[MAXK] = { 0 };
  for( size_t k = 0; k < K; k++ ) a[k] = s[k];
  return a[y] - ref_lse(a, K);
}
static long double ref_logB(const double *s, const float *psi, size_t K,
                            size_t y)
{
  long double p[MAXK] = { 0 }, d[MAXK] = { 0 }, l, gd = 0, dbar = 0, q = 0;
  for( size_t k = 0; k < K; k++ ) p[k] = psi[k];
  l = ref_lse(p, K);
  for( size_t k = 0; k < K; k++ ){
    d[k] = (long double)s[k] - p[k];
    dbar += d[k] / K;
  }
  for( size_t k = 0; k < K; k++ ){
    long double g = (k == y) - expl(p[k] - l);
    gd += g * d[k];
  }
  for( size_t k = 0; k < K; k++ ) q += 0.5L * (d[k] - dbar) * (d[k] - dbar);
  return (p[y] - l) + gd - 0.5L * q;           /* q = d'Ad */
}

/* Random data: n rows, x_0 = 1, other features N(0, sd), y drawn from
 * softmax(beta x) with a fixed beta, junk in column D. */
static double *data(fly_rng *r, size_t n, size_t K, size_t D, double sd)
{
  size_t ldx = D + 2;
  double *X = calloc(n * ldx + 1, sizeof *X);
  for( size_t i = 0; i < n; i++ ){
    double eta[MAXK], mx = -INFINITY, t = 0;
    for( size_t j = 0; j < D; j++ )
      X[i * ldx + j] = j == 0 ? 1.0 : sd * fly_rng_normal(r);
    for( size_t k = 0; k < K; k++ ){
      eta[k] = 0;
      for( size_t j = 0; j < D; j++ )
        eta[k] += X[i * ldx + j] * 0.3 * (double)(((k + 2 * j) % 5)) - 0.5;
      if( eta[k] > mx ) mx = eta[k];
    }
    for( size_t k = 0; k < K; k++ ) t += exp(eta[k] - mx);
    double u = fly_rng_uniform(r) * t, c = 0;
    size_t y = K - 1;
    for( size_t k = 0; k < K; k++ ){
      c += exp(eta[k] - mx);
      if( u < c ){ y = k; break; }
    }
    X[i * ldx + D] = 1e30;                              /* junk */
    X[i * ldx + D + 1] = (double)y;
  }
  return X;
}

/* A random psi row from a mix of regimes. */
static void rand_psi(fly_rng *r, size_t K, float *psi)
{
  uint64_t c = fly_rng_below(r, 10);
  for( size_t k = 0; k < K; k++ ){
    double v;
    switch( c ){
    case 0:  v = 0; break;                              /* untuned */
    case 1:  v = 1.5; break;                            /* fixed = 1.5 */
    case 2:  v = 0.1 * fly_rng_normal(r); break;
    case 3:  v = 1e-30 * fly_rng_normal(r); break;
    case 4:  v = 20 * fly_rng_normal(r); break;
    case 5:  v = 1e3 * (fly_rng_uniform(r) - 0.5); break;
    default: v = 100 * fly_rng_uniform(r) - 50; break;  /* |psi| <= 50 */
    }
    psi[k] = (float)v;
  }
}

static double range_of(const float *psi, size_t K)
{
  double lo = psi[0], hi = psi[0];
  for( size_t k = 1; k < K; k++ ){
    if( psi[k] < lo ) lo = psi[k];
    if( psi[k] > hi ) hi = psi[k];
  }
  return hi - lo;
}

static void test_bound_le(void)
{
  static const size_t Ks[3] = { 2, 3, 5 };
  fly_rng r;
  fly_rng_seed(&r, 21, 0);
  for( int ki = 0; ki < 3; ki++ ){
    size_t K = Ks[ki];
    fly_model m = mk(K, 1);                     /* x = 1: th_k = s_k */
    double work[256];
    long n = 0, viol = 0, far = 0, tightbad = 0;
    double worst = -INFINITY, worst_tight = 0, worst_ref = 0;
    for( int rep = 0; rep < 2000; rep++ ){
      float psi[MAXK];
      rand_psi(&r, K, psi);
      size_t y = (size_t)fly_rng_below(&r, K);
      double rg = range_of(psi, K);
      for( int c = 0; c < 14; c++ ){
        double s[MAXK];
        for( size_t k = 0; k < K; k++ ){
          double p = psi[k], e = fly_rng_normal(&r);
          switch( c ){
          case 0:  s[k] = p; break;                      /* tight */
          case 1:  s[k] = p + 37.25; break;              /* tight: shift */
          case 2:  s[k] = p - 1e3; break;
          case 3:  s[k] = p + 1e-8 * e; break;
          case 4:  s[k] = p + 1e-4 * e; break;
          case 5:  s[k] = p + 0.1 * e; break;
          case 6:  s[k] = 0; break;
          case 7:  s[k] = 1e3 * (fly_rng_uniform(&r) - 0.5) * 2; break;
          case 8:  s[k] = k == y ? -50 : 50; break;
          case 9:  s[k] = k == y ? 50 : -50; break;
          default: s[k] = 100 * fly_rng_uniform(&r) - 50; break;
          }
        }
        double X[3] = { 1.0, 1e30, (double)y }, lL, lB;
        m.type->eval(&m, s, X, 3, psi, 1, &lL, &lB, work);
        n++;
        if( !(lB <= lL) || !isfinite(lB) || !isfinite(lL) ) viol++;
        if( lB - lL > worst ) worst = lB - lL;
        long double rb = ref_logB(s, psi, K, y), rl = ref_logL(s, K, y);
        double d2 = 0;
        for( size_t k = 0; k < K; k++ ) d2 += (s[k] - psi[k]) * (s[k] - psi[k]);
        double e1 = (double)fabsl((long double)lB - rb) /
                    (1 + rg + d2 + (double)fabsl(rb));
        double e2 = (double)fabsl((long double)lL - rl) / (1 + (double)fabsl(rl));
        if( e1 > worst_ref ) worst_ref = e1;
        if( e2 > worst_ref ) worst_ref = e2;
        if( e1 > 1e-10 || e2 > 1e-14 ) far++;
        if( c <= 1 ){                                   /* tight points */
          double gap = lL - lB;
          if( gap > worst_tight ) worst_tight = gap;
          if( !(gap > 0 && gap < 1e-12 * (1 + 2 * rg + 2 * log((double)K))
                + (c ? 1e-13 : 0)) ) tightbad++;
        }
      }
    }
    TAP_OK(viol == 0, "K=%zu: B <= L on %ld (psi, s) pairs, |s| <= 1e3 (worst "
           "logB-logL %.3g)", K, n, worst);
    TAP_OK(tightbad == 0, "K=%zu: tight at s = psi and s = psi + t1: 0 < gap "
           "~ eps (worst %.3g)", K, worst_tight);
    if( tap_long_double_exact() )
      TAP_OK(far == 0, "K=%zu: log L, log B match the long-double reference "
             "(worst rel %.3g)", K, worst_ref);
    else
      TAP_SKIP("K=%zu: long double is only double precision here (valgrind): "
               "no long-double reference (worst rel %.3g)", K, worst_ref);
  }

  /* random D = 4 data, random theta and psi */
  for( size_t K = 3; K <= 5; K += 2 ){
    enum { D = 4 };
    fly_model m = mk(K, D);
    size_t N = 400, ldx = D + 2;
    double *X = data(&r, N, K, D, 3.0);
    float *xi = malloc(N * K * sizeof *xi);
    double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
    double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
    long v = 0, bad = 0;
    for( int rep = 0; rep < 40; rep++ ){
      double th[MAXP], sc = rep < 20 ? 1.0 : 10.0;
      for( size_t j = 0; j < K * D; j++ ) th[j] = sc * fly_rng_normal(&r);
      for( size_t i = 0; i < N; i++ ) rand_psi(&r, K, xi + i * K);
      m.type->eval(&m, th, X, ldx, xi, N, lL, lB, w);
      for( size_t i = 0; i < N; i++ ){
        double s[MAXK];
        for( size_t k = 0; k < K; k++ ){
          long double t = 0;
          for( size_t j = 0; j < D; j++ )
            t += (long double)th[k * D + j] * X[i * ldx + j];
          s[k] = (double)t;
        }
        long double rl = ref_logL(s, K, (size_t)X[i * ldx + D + 1]);
        v += !(lB[i] <= lL[i]);
        bad += fabsl(lL[i] - rl) > 1e-12L * (1 + fabsl(rl));
      }
    }
    TAP_OK(v == 0, "K=%zu: B <= L on random D=4 rows, random theta and psi "
           "(%ld bad)", K, v);
    TAP_OK(bad == 0, "K=%zu: eval log L uses the features, stride and target "
           "(%ld bad)", K, bad);
    double th[MAXP] = { 0.3, -0.2, 0.1, 0, 1 };
    lB[0] = 12345;
    m.type->eval(&m, th, X, ldx, xi, 3, lL, NULL, w);
    TAP_OK(lB[0] == 12345 && lL[0] < 0, "K=%zu: eval with logB NULL", K);
    free(X); free(xi); free(lL); free(lB); free(w);
  }

  /* fixed tuning stores psi = c 1: the same bound as psi = 0, bit for bit */
  {
    enum { K = 3, D = 4 };
    fly_model m = mk(K, D);
    size_t N = 50;
    double *X = data(&r, N, K, D, 1.0), th[K * D];
    float *x0 = calloc(N * K, sizeof *x0), *x1 = calloc(N * K, sizeof *x1);
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    double *lL = malloc(N * sizeof *lL), *w = malloc(m.type->work_len(&m, N) * sizeof *w);
    double *m0 = calloc(m.type->n_moments(&m), sizeof *m0);
    double *m1 = calloc(m.type->n_moments(&m), sizeof *m1);
    for( size_t i = 0; i < N * K; i++ ) x1[i] = 1.5f;
    for( int j = 0; j < K * D; j++ ) th[j] = fly_rng_normal(&r);
    m.type->eval(&m, th, X, D + 2, x0, N, lL, a, w);
    m.type->eval(&m, th, X, D + 2, x1, N, lL, b, w);
    m.type->moments_add(&m, X, D + 2, x0, N, m0, w);
    m.type->moments_add(&m, X, D + 2, x1, N, m1, w);
    TAP_OK(memcmp(a, b, N * sizeof *a) == 0 &&
           memcmp(m0, m1, m.type->n_moments(&m) * sizeof *m0) == 0,
           "psi = 1.5 (fixed tuning) is the bound of psi = 0, bit for bit");
    free(X); free(x0); free(x1); free(a); free(b); free(lL); free(w);
    free(m0); free(m1);
  }
}

static void test_grad(size_t K)
{
  enum { D = 3 };
  const size_t P = K * D;
  fly_model m = mk(K, D);
  fly_rng r;
  fly_rng_seed(&r, 22, K);
  size_t N = 60;
  double *X = data(&r, N, K, D, 1.5);
  float *xi = malloc(N * K * sizeof *xi);
  double *wL = malloc(N * sizeof *wL), *wB = malloc(N * sizeof *wB);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  const char *names[] = { "wL=1, wB=NULL", "wL=0, wB=1", "random wL, wB",
                          "Ltilde weights" };
  for( int c = 0; c < 4; c++ ){
    double worst = 0;
    for( int rep = 0; rep < 5; rep++ ){
      double th[MAXP], g[MAXP], fd[MAXP];
      for( size_t j = 0; j < P; j++ ) th[j] = fly_rng_normal(&r);
      for( size_t i = 0; i < N; i++ ){
        for( size_t k = 0; k < K; k++ ) xi[i * K + k] = (float)(2 * fly_rng_normal(&r));
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
      for( size_t j = 0; j < P; j++ ) g[j] = 0.25 * (double)j;     /* g += */
      m.type->grad(&m, th, X, D + 2, xi, N, wL, pB, g, w);
      for( size_t j = 0; j < P; j++ ) g[j] -= 0.25 * (double)j;
      for( size_t j = 0; j < P; j++ ){
        double h = 1e-5, f[4];
        static const double off[4] = { -2, -1, 1, 2 };
        for( int q = 0; q < 4; q++ ){
          double tq[MAXP];
          memcpy(tq, th, P * sizeof *tq);
          tq[j] += off[q] * h;
          f[q] = c == 3 ? ltsum(&m, tq, X, xi, N, lL, lB, w)
                        : wsum(&m, tq, X, xi, N, wL, pB, lL, lB, w);
        }
        fd[j] = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h);
      }
      double e = relerr(g, fd, P);
      if( e > worst ) worst = e;
    }
    TAP_OK(worst < 1e-6, "K=%zu: grad vs finite differences, %s (rel %.2g)",
           K, names[c], worst);
  }

  /* neg_hess vs finite differences of the gradient, onto a non-zero H, and
   * vs the long-double formula sum_n (diag p - pp') (x) x x' (also where a
   * class saturates and the curvature is ~1e-9: finite differences cannot
   * resolve that, the formula can) */
  double worst = 0, asym = 0, worst_ld = 0;
  double *H = malloc(P * P * sizeof *H), *fdh = malloc(P * P * sizeof *fdh);
  for( int rep = 0; rep < 6; rep++ ){
    double th[MAXP];
    for( size_t j = 0; j < P; j++ ) th[j] = 1.5 * fly_rng_normal(&r);
    if( rep >= 4 ) th[0] = rep == 4 ? 12 : 30;  /* a saturated class */
    for( size_t j = 0; j < P; j++ ) for( size_t k = 0; k < P; k++ )
      H[j * P + k] = 0.1 * (double)(j + k);
    m.type->neg_hess(&m, th, X, D + 2, N, H, w);
    for( size_t j = 0; j < P; j++ ) for( size_t k = 0; k < P; k++ )
      H[j * P + k] -= 0.1 * (double)(j + k);
    for( size_t j = 0; j < P; j++ ) for( size_t k = 0; k < P; k++ )
      asym = fmax(asym, fabs(H[j * P + k] - H[k * P + j]));
    if( rep < 4 ){
      for( size_t i = 0; i < N; i++ ) wL[i] = 1;
      for( size_t k = 0; k < P; k++ ){
        double h = 1e-5, tp[MAXP], tm[MAXP], gp[MAXP] = { 0 }, gm[MAXP] = { 0 };
        memcpy(tp, th, P * sizeof *tp); memcpy(tm, th, P * sizeof *tm);
        tp[k] += h; tm[k] -= h;
        m.type->grad(&m, tp, X, D + 2, xi, N, wL, NULL, gp, w);
        m.type->grad(&m, tm, X, D + 2, xi, N, wL, NULL, gm, w);
        for( size_t j = 0; j < P; j++ ) fdh[j * P + k] = -(gp[j] - gm[j]) / (2 * h);
      }
      worst = fmax(worst, relerr(H, fdh, P * P));
    }
    /* long double: the exact weights; each entry relative to the sum of the
     * magnitudes of its terms (onto H = 0: the offset above costs ulps of
     * 0.1 where the curvature is 1e-11) */
    memset(H, 0, P * P * sizeof *H);
    m.type->neg_hess(&m, th, X, D + 2, N, H, w);
    double wld = 0;
    for( size_t a = 0; a < P; a++ ) for( size_t c = 0; c < P; c++ ){
      size_t k = a / D, l = c / D;
      long double t = 0, tabs = 0;
      for( size_t i = 0; i < N; i++ ){
        const double *x = X + i * (D + 2);
        long double s[MAXK], mx = -INFINITY, z = 0;
        for( size_t q = 0; q < K; q++ ){
          s[q] = 0;
          for( size_t j = 0; j < D; j++ ) s[q] += (long double)th[q * D + j] * x[j];
          if( s[q] > mx ) mx = s[q];
        }
        for( size_t q = 0; q < K; q++ ) z += expl(s[q] - mx);
        long double pk = expl(s[k] - mx) / z, pl = expl(s[l] - mx) / z, qk = 0;
        for( size_t q = 0; q < K; q++ ) if( q != k ) qk += expl(s[q] - mx) / z;
        long double cw = k == l ? pk * qk : -pk * pl;   /* qk = 1 - pk */
        t += cw * x[a % D] * x[c % D];
        tabs += fabsl(cw * x[a % D] * x[c % D]);
      }
      wld = fmax(wld, (double)(fabsl((long double)H[a * P + c] - t) /
                               (tabs + 1e-300L)));
    }
    worst_ld = fmax(worst_ld, wld);
  }
  TAP_OK(worst < 1e-6, "K=%zu: neg_hess vs finite differences of grad (rel %.2g)",
         K, worst);
  TAP_OK(worst_ld < 1e-9, "K=%zu: neg_hess entries vs the long-double formula, "
         "saturated classes included (rel %.2g)", K, worst_ld);
  TAP_OK(asym < 1e-12, "K=%zu: neg_hess is full and symmetric (%.2g)", K, asym);
  free(H); free(fdh);

  /* xi_at: psi = th x, and the bound is then tight at th */
  double th[MAXP], *xo = malloc(N * K * sizeof *xo), gmax = 0;
  int ok = 1;
  for( size_t j = 0; j < P; j++ ) th[j] = fly_rng_normal(&r);
  m.type->xi_at(&m, th, X, D + 2, N, xo, w);
  for( size_t i = 0; i < N; i++ )
    for( size_t k = 0; k < K; k++ ){
      double s = 0;
      for( size_t j = 0; j < D; j++ ) s += th[k * D + j] * X[i * (D + 2) + j];
      ok &= fabs(xo[i * K + k] - s) <= 1e-14 * (1 + fabs(s));
      xi[i * K + k] = (float)xo[i * K + k];
    }
  m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
  for( size_t i = 0; i < N; i++ ) gmax = fmax(gmax, lL[i] - lB[i]);
  TAP_OK(ok, "K=%zu: xi_at = th x", K);
  TAP_OK(gmax < 1e-9, "K=%zu: bounds tuned by xi_at are tight there (max gap "
         "%.2g)", K, gmax);
  free(xo);
  free(X); free(xi); free(wL); free(wB); free(lL); free(lB); free(w);
}

static void test_collapsed(size_t K)
{
  enum { D = 4 };
  const size_t P = K * D;
  fly_model m = mk(K, D);
  fly_rng r;
  fly_rng_seed(&r, 23, K);
  size_t N = 700;
  double *X = data(&r, N, K, D, 2.0);
  float *xi = malloc(N * K * sizeof *xi);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  size_t nm = m.type->n_moments(&m);
  double *mom = calloc(nm, sizeof *mom);
  fly_moment_section sec[8];
  size_t ns = m.type->moment_layout(&m, sec), tot = 0;
  for( size_t k = 0; k < ns; k++ ) tot += sec[k].rows * sec[k].cols;
  TAP_OK(ns == 4 && tot == nm && strcmp(sec[0].name, "S") == 0 &&
         sec[0].rows == D && sec[0].cols == D && strcmp(sec[1].name, "Y") == 0 &&
         sec[1].rows == K && sec[1].cols == D && strcmp(sec[2].name, "Bx") == 0 &&
         sec[2].rows == K && strcmp(sec[3].name, "c") == 0,
         "K=%zu: moment layout S (DxD), Y (KxD), Bx (KxD), c covers %zu moments",
         K, nm);
  TAP_OK(m.type->n_params(&m) == P && m.type->n_xi(&m) == K, "K=%zu: n_params, "
         "n_xi", K);
  TAP_OK(m.type->work_len(&m, 10) >= 10 * K && m.type->work_len(&m, 1) >= D,
         "K=%zu: work_len covers n K and radius' D", K);

  double worst = 0, gworst = 0, fdworst = 0, asym = 0, yworst = 0;
  for( int rep = 0; rep < 6; rep++ ){
    for( size_t i = 0; i < N; i++ ) rand_psi(&r, K, xi + i * K);
    memset(mom, 0, nm * sizeof *mom);
    size_t cuts[] = { 0, 1, 8, 300, N };
    for( int b = 0; b < 4; b++ )
      m.type->moments_add(&m, X + cuts[b] * (D + 2), D + 2, xi + cuts[b] * K,
                          cuts[b + 1] - cuts[b], mom, w);
    for( int j = 0; j < D; j++ ) for( int k = 0; k < D; k++ )
      asym = fmax(asym, fabs(mom[j * D + k] - mom[k * D + j]));
    /* Y: per-class sums of x */
    for( size_t k = 0; k < K; k++ )
      for( size_t j = 0; j < D; j++ ){
        double t = 0;
        for( size_t i = 0; i < N; i++ )
          if( X[i * (D + 2) + D + 1] == (double)k ) t += X[i * (D + 2) + j];
        yworst = fmax(yworst, fabs(t - mom[D * D + k * D + j]) / (1 + fabs(t)));
      }
    for( int t = 0; t < 4; t++ ){
      double th[MAXP], g[MAXP] = { 0 }, g2[MAXP] = { 0 }, fd[MAXP];
      double sc = t < 2 ? 0.5 : 5;
      for( size_t j = 0; j < P; j++ ) th[j] = sc * fly_rng_normal(&r);
      if( t == 3 ) for( size_t j = 0; j < P; j++ ) th[j] += 40 * (double)(j % D);
      double bs = m.type->bound_sum(&m, mom, th, g, w);
      m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
      double direct = 0, mag = 0;
      for( size_t i = 0; i < N; i++ ){ direct += lB[i]; mag += fabs(lB[i]); }
      worst = fmax(worst, fabs(bs - direct) / mag);
      double *wB = lL;
      for( size_t i = 0; i < N; i++ ) wB[i] = 1;
      m.type->grad(&m, th, X, D + 2, xi, N, NULL, wB, g2, w);
      gworst = fmax(gworst, relerr(g, g2, P));
      for( size_t j = 0; j < P; j++ ){
        double h = 1e-5 * (1 + fabs(th[j])), tp[MAXP], tm[MAXP];
        memcpy(tp, th, P * sizeof *tp); memcpy(tm, th, P * sizeof *tm);
        tp[j] += h; tm[j] -= h;
        fd[j] = (m.type->bound_sum(&m, mom, tp, NULL, w) -
                 m.type->bound_sum(&m, mom, tm, NULL, w)) / (2 * h);
      }
      fdworst = fmax(fdworst, relerr(g, fd, P));
    }
  }
  TAP_OK(worst < 1e-10, "K=%zu: bound_sum equals sum of eval's log B (rel %.2g)",
         K, worst);
  TAP_OK(gworst < 1e-10, "K=%zu: bound_sum gradient equals grad with wB = 1 "
         "(rel %.2g)", K, gworst);
  TAP_OK(fdworst < 1e-6, "K=%zu: bound_sum gradient vs finite differences "
         "(rel %.2g)", K, fdworst);
  TAP_OK(asym == 0 && yworst < 1e-13, "K=%zu: S full and symmetric, Y the "
         "per-class sums of x", K);

  double *m1 = calloc(nm, sizeof *m1), *m2 = calloc(nm, sizeof *m2);
  m.type->moments_add(&m, X, D + 2, xi, N, m1, w);
  m.type->moments_add(&m, X, D + 2, xi, 100, m2, w);
  m.type->moments_add(&m, X + 100 * (D + 2), D + 2, xi + 100 * K, N - 100, m2, w);
  TAP_OK(relerr(m2, m1, nm) < 1e-12, "K=%zu: moments_add accumulates", K);
  free(m1); free(m2);
  free(X); free(xi); free(lL); free(lB); free(w); free(mom);
}

/* Inverse of SPD H (D x D) by Cholesky. */
static void spd_inverse(int D, const double *H, double *P)
{
  double L[MAXD * MAXD], Li[MAXD * MAXD];
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
static double key_f32(double k)
{
  float f = (float)k;
  if( (double)f < k ) f = nextafterf(f, INFINITY);
  return f;
}

static void test_gap_bound(size_t K)
{
  enum { D = 4 };
  const size_t P = K * D;
  fly_model m = mk(K, D);
  fly_rng r;
  fly_rng_seed(&r, 24, K);
  size_t N = 300;
  double *X = data(&r, N, K, D, 2.0);
  float *xi = malloc(N * K * sizeof *xi);
  double *xo = malloc(N * K * sizeof *xo), *xn = malloc(N * sizeof *xn);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  long n = 0, viol = 0, ratio_n = 0, loose = 0, caught = 0;
  double worst = 0, ratio_max = 0, ratio_min = INFINITY;
  for( int rep = 0; rep < 20; rep++ ){
    double A[D * D], H[D * D], Pm[D * D], thm[MAXP];
    for( int j = 0; j < D * D; j++ ) A[j] = fly_rng_normal(&r);
    double scale = rep < 10 ? 1.0 : 1e4;
    for( int i = 0; i < D; i++ ) for( int j = 0; j < D; j++ ){
      double t = i == j ? 0.05 : 0;
      for( int k = 0; k < D; k++ ) t += A[k * D + i] * A[k * D + j];
      H[i * D + j] = scale * t;
    }
    spd_inverse(D, H, Pm);
    for( size_t j = 0; j < P; j++ ) thm[j] = 2 * fly_rng_normal(&r);
    if( rep % 5 == 4 ) thm[0] = 40;             /* large |psi| */
    m.type->xi_at(&m, thm, X, D + 2, N, xo, w);
    for( size_t i = 0; i < N; i++ ){
      for( size_t k = 0; k < K; k++ ) xi[i * K + k] = (float)xo[i * K + k];
      double q = q_of(D, Pm, X + i * (D + 2));
      xn[i] = (i % 2) ? (double)(float)sqrt(q) : sqrt(q);
    }
    static const double scales[] = { 0, 1e-14, 1e-10, 1e-6, 1e-3, 1e-1, 1, 3, 30 };
    for( int si = 0; si < 9; si++ ){
      for( int dir = 0; dir < 8; dir++ ){
        double th[MAXP];
        for( size_t j = 0; j < P; j++ )
          th[j] = thm[j] + scales[si] * fly_rng_normal(&r) / sqrt(scale);
        if( dir % 2 ){                          /* plus a shift of all rows */
          double v[D];
          for( int j = 0; j < D; j++ ) v[j] = 50 * fly_rng_normal(&r);
          for( size_t k = 0; k < K; k++ )
            for( int j = 0; j < D; j++ ) th[k * D + (size_t)j] += v[j];
        }
        double rad = m.type->radius(&m, th, thm, H, w);
        m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
        for( size_t i = 0; i < N; i++ ){
          double gap = lL[i] - lB[i];
          double key = key_f32(m.type->gap_key(&m, xi + i * K, xn[i]));
          double ub = m.type->gap_upper(&m, key, rad);
          n++;
          if( !(gap <= ub) ){
            viol++;
            worst = fmax(worst, gap - ub);
          }
        }
      }
    }
    /* Along d_k = t a_k P x / ||x||_P with sum_k a_k = 0, Cauchy-Schwarz is
     * an equality for every class row; far out the gap is |C ds|^2/4 minus
     * a term linear in t, so the bound must be within 10% of it. */
    for( size_t i = 0; i < N; i += 3 ){
      const double *x = X + i * (D + 2);
      double th[MAXP], a[MAXK], abar = 0, a2 = 0, nx = sqrt(q_of(D, Pm, x));
      double Px[D];
      for( size_t k = 0; k < K; k++ ){
        a[k] = fly_rng_normal(&r);
        abar += a[k] / (double)K;
      }
      for( size_t k = 0; k < K; k++ ){ a[k] -= abar; a2 += a[k] * a[k]; }
      for( int b = 0; b < D; b++ ){
        Px[b] = 0;
        for( int c = 0; c < D; c++ ) Px[b] += Pm[b * D + c] * x[c];
      }
      double t = 1000 / (sqrt(a2) * nx);       /* |C ds| = 1000 */
      for( size_t k = 0; k < K; k++ )
        for( int b = 0; b < D; b++ )
          th[k * D + (size_t)b] = thm[k * D + (size_t)b] + t * a[k] * Px[b] / nx;
      double rad = m.type->radius(&m, th, thm, H, w);
      m.type->eval(&m, th, x, D + 2, xi + i * K, 1, lL, lB, w);
      double ub = m.type->gap_upper(&m, key_f32(m.type->gap_key(&m, xi + i * K, nx)),
                                    rad);
      double ratio = ub / (lL[0] - lB[0]);
      ratio_max = fmax(ratio_max, ratio);
      ratio_min = fmin(ratio_min, ratio);
      ratio_n++;
      loose += !(ratio >= 1 && ratio < 1.1);
      caught += ratio < 2;                  /* a halved bound fails here */
    }
  }
  TAP_OK(viol == 0, "K=%zu: gap <= gap_upper(gap_key, radius) on %ld rows x "
         "theta, shifts included (%ld bad, worst excess %.3g)", K, n, viol, worst);
  TAP_OK(ratio_n > 500 && loose == 0, "K=%zu: gap upper bound within 10%% "
         "where Cauchy-Schwarz is tight (%ld rows, ratio %.4f..%.4f)", K,
         ratio_n, ratio_min, ratio_max);
  TAP_OK(caught > 0, "K=%zu: sensitivity: gap_upper halved is violated at %ld "
         "of those rows", K, caught);

  /* radius: centred rows, sqrt(sum_k d_k'H d_k), on a hand case */
  fly_model m2 = mk(2, 2);
  double H2[4] = { 4, 1, 1, 2 }, a2[4] = { 1, 2, 0, 1 }, b2[4] = { 0 };
  double rr = m2.type->radius(&m2, a2, b2, H2, w);   /* d = +-(.5,.5): 2 x 2 */
  double s2[4] = { 1 + 3, 2 - 7, 0 + 3, 1 - 7 };
  double rs = m2.type->radius(&m2, s2, b2, H2, w);
  TAP_OK(fabs(rr - 2.0) < 1e-15 && fabs(rs - 2.0) < 1e-14,
         "radius on a 2x2 case, shift invariant (%.17g, %.17g)", rr, rs);
  TAP_OK(m.type->gap_upper(&m, 2e-3, 2.0) > m.type->gap_upper(&m, 1e-3, 2.0) &&
         m.type->gap_upper(&m, 1e-3, 3.0) > m.type->gap_upper(&m, 1e-3, 2.0),
         "gap_upper increasing in key and r");
  float z0[MAXK] = { 0 };
  double k0 = m.type->gap_key(&m, z0, 1.0);
  TAP_OK(k0 >= 0.25 && k0 < 0.2503, "K=%zu: gap_key at psi = 0, |x|_P = 1 is "
         "about 1/4 (%.6g)", K, k0);
  free(X); free(xi); free(xo); free(xn); free(lL); free(lB); free(w);
}

static void test_target(void)
{
  fly_model m = mk(3, 2);
  fly_err err;
  fly_err_clear(&err);
  TAP_OK(m.type->check_target(&m, 0.0, 0, &err) == FLY_OK &&
         m.type->check_target(&m, 1.0, 5, &err) == FLY_OK &&
         m.type->check_target(&m, 2.0, 5, &err) == FLY_OK &&
         m.type->check_target(&m, -0.0, 5, &err) == FLY_OK,
         "targets 0, 1, 2, -0 accepted for K = 3");
  fly_rc rc = m.type->check_target(&m, 0.5, 7, &err);
  TAP_OK(rc == FLY_RANGE && err.code == FLY_RANGE &&
         strcmp(err.msg, "row 8: target 0.5 is not a class 0..2") == 0,
         "target 0.5: FLY_RANGE, \"%s\"", err.msg);
  int ok = 1;
  const double bad[] = { -1, 3, 2.0000001, 1e-300, NAN, INFINITY, -INFINITY };
  for( int i = 0; i < 7; i++ )
    ok &= m.type->check_target(&m, bad[i], 0, NULL) == FLY_RANGE;
  TAP_OK(ok, "targets -1, 3, 2.0000001, 1e-300, NaN, +-inf rejected (err NULL)");
  TAP_OK(fly_model_find("softmax") == &fly_model_softmax &&
         fly_model_find("logistic") == &fly_model_logistic, "fly_model_find");
}

/* K = 2: log L_softmax(th) = log L_logistic(th_1 - th_0), and the gradients
 * agree: d/dth_1 = logistic gradient, d/dth_0 = its negative. */
static void test_vs_logistic(void)
{
  enum { D = 3 };
  fly_model ms = mk(2, D), ml = ms;
  ml.type = &fly_model_logistic;
  ml.K = 1;
  fly_rng r;
  fly_rng_seed(&r, 25, 0);
  size_t N = 500;
  double *X = data(&r, N, 2, D, 2.0);
  double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  double *ones = malloc(N * sizeof *ones);
  size_t wl = ms.type->work_len(&ms, N);
  if( ml.type->work_len(&ml, N) > wl ) wl = ml.type->work_len(&ml, N);
  double *w = malloc(wl * sizeof *w);
  double worst = 0, gworst = 0;
  for( size_t i = 0; i < N; i++ ) ones[i] = 1;
  for( int rep = 0; rep < 10; rep++ ){
    double th[2 * D], d[D], gs[2 * D] = { 0 }, gl[D] = { 0 }, ref[2 * D];
    for( int j = 0; j < 2 * D; j++ ) th[j] = (rep < 5 ? 1 : 8) * fly_rng_normal(&r);
    for( int j = 0; j < D; j++ ) d[j] = th[D + j] - th[j];
    ms.type->eval(&ms, th, X, D + 2, NULL, N, a, NULL, w);
    ml.type->eval(&ml, d, X, D + 2, NULL, N, b, NULL, w);
    for( size_t i = 0; i < N; i++ )
      worst = fmax(worst, fabs(a[i] - b[i]) / (1 + fabs(b[i])));
    ms.type->grad(&ms, th, X, D + 2, NULL, N, ones, NULL, gs, w);
    ml.type->grad(&ml, d, X, D + 2, NULL, N, ones, NULL, gl, w);
    for( int j = 0; j < D; j++ ){ ref[j] = -gl[j]; ref[D + j] = gl[j]; }
    gworst = fmax(gworst, relerr(gs, ref, 2 * D));
  }
  TAP_OK(worst < 1e-13, "K=2: log L equals logistic at th_1 - th_0 (rel %.2g)",
         worst);
  TAP_OK(gworst < 1e-12, "K=2: gradients equal +-the logistic gradient (rel %.2g)",
         gworst);
  free(X); free(a); free(b); free(ones); free(w);
}

/* ---- MAP tuning of a 3-class store -------------------------------------- */

#define PAGE_ROWS 100

typedef struct sdata {
  int64_t ds;
  size_t  N, K, D;    /* target in column D: W = D + 1 */
  double *X;
} sdata;

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

static int make_store(fly_db *db, const char *name, size_t N, size_t K,
                      size_t D, uint64_t seed, sdata *d)
{
  fly_rng rng;
  size_t W = D + 1;
  double beta[MAXK * MAXD];

  d->N = N; d->K = K; d->D = D;
  d->X = calloc(N * W, sizeof(double));
  fly_rng_seed(&rng, seed, 0);
  for( size_t j = 0; j < K * D; j++ ) beta[j] = fly_rng_normal(&rng);
  for( size_t n = 0; n < N; n++ ){
    double *x = d->X + n * W, eta[MAXK], mx = -INFINITY, t = 0, c = 0;
    x[0] = 1;
    for( size_t j = 1; j < D; j++ ) x[j] = fly_rng_normal(&rng) * (double)j;
    for( size_t k = 0; k < K; k++ ){
      eta[k] = 0;
      for( size_t j = 0; j < D; j++ ) eta[k] += beta[k * D + j] * x[j];
      mx = fmax(mx, eta[k]);
    }
    for( size_t k = 0; k < K; k++ ) t += exp(eta[k] - mx);
    double u = fly_rng_uniform(&rng) * t;
    x[D] = (double)(K - 1);
    for( size_t k = 0; k < K; k++ ){
      c += exp(eta[k] - mx);
      if( u < c ){ x[D] = (double)k; break; }
    }
  }
  return fx_store_rows(db, name, d->X, N, W, PAGE_ROWS, &d->ds);
}

/* All bound rows: psi (N x K) and keys (N). */
static int read_bounds(fly_db *db, int64_t id, size_t N, size_t K, float *xi,
                       double *key)
{
  fly_pages *bp = NULL;
  fly_err err = { 0 };
  double *buf = NULL;
  size_t n, got = 0, W = K + 1;
  int ok = 0;
  if( fly_pages_open(db, FLY_TABLE_BOUND, id, 0, &bp, &err) ) return 0;
  const fly_pages_info *in = fly_pages_info_of(bp);
  if( in->width != W || in->page_rows != PAGE_ROWS || in->n_rows != (int64_t)N )
    goto done;
  buf = calloc(PAGE_ROWS * W, sizeof *buf);
  for( int64_t k = 0; k < in->n_pages; k++ ){
    if( fly_pages_read_page(bp, k, buf, &n, &err) ) goto done;
    for( size_t i = 0; i < n; i++, got++ ){
      for( size_t c = 0; c < K; c++ ){
        xi[got * K + c] = (float)buf[i * W + c];
        if( (double)xi[got * K + c] != buf[i * W + c] ) goto done;
      }
      key[got] = buf[i * W + K];
    }
  }
  ok = got == N;
done:
  free(buf);
  fly_pages_close(bp);
  return ok;
}

/* Gradient and -Hessian of the log posterior written out from the
 * formulas: g_k = sum_n (e_y - p)_k x_n - th_k/s^2, H = sum_n
 * (diag p - pp') (x) x x' + I/s^2. */
static void post_derivs(const sdata *d, double s2, const double *th,
                        double *g, double *H)
{
  const size_t K = d->K, D = d->D, W = D + 1, P = K * D;
  for( size_t j = 0; j < P; j++ ){
    g[j] = -th[j] / s2;
    if( H ) for( size_t k = 0; k < P; k++ ) H[j * P + k] = j == k ? 1 / s2 : 0;
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
    if( H )
      for( size_t k = 0; k < K; k++ ) for( size_t l = 0; l < K; l++ ){
        double c = (k == l ? p[k] : 0) - p[k] * p[l];
        for( size_t a = 0; a < D; a++ ) for( size_t b = 0; b < D; b++ )
          H[(k * D + a) * P + l * D + b] += c * x[a] * x[b];
      }
  }
}

static double max_abs(const double *a, size_t n)
{
  double m = 0;
  for( size_t i = 0; i < n; i++ ) m = fmax(m, fabs(a[i]));
  return m;
}

static void test_tune(void)
{
  enum { K = 3, D = 3, P = K * D };
  char path[256];
  fly_db *db = NULL;
  fly_err err = { 0 };
  sdata d;
  fly_rc rc = fx_create_db("softmax", path, sizeof path, &db, &err);
  TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg);
  if( rc ) return;
  if( !TAP_OK(make_store(db, "three", 1537, K, D, 31, &d),
              "3-class store of 1537 rows x 3 features in 16 pages") ){
    fly_db_close(db);
    return;
  }
  const size_t N = d.N, W = D + 1;
  fly_model m;
  memset(&m, 0, sizeof m);
  m.type = &fly_model_softmax;
  m.K = K; m.D = D; m.tcol = D;
  m.prior = FLY_PRIOR_NORMAL;
  m.prior_scale = 2;
  const double s2 = 4;

  fly_tune_opts o;
  fly_tune_opts_default(&o);
  int64_t id = -1;
  rc = fly_tune_get(db, d.ds, &m, &o, &id, &err);
  TAP_OK(rc == FLY_OK && id > 0, "softmax K=3: MAP tuning builds bound set %lld "
         "(%s)", (long long)id, err.msg);
  TAP_OK(count(db, "SELECT count(*) FROM bound_set WHERE model = 'softmax' AND"
               " model_opts = 'prior=normal;scale=2;K=3' AND width = 4 AND"
               " n_params = 9 AND n_pages = 16 AND length(key_prec) = 72") == 1
         && count(db, "SELECT count(*) FROM moment") == D * D + 2 * K * D + 1,
         "bound_set row (width K+1, key_prec 3x3), %d moment rows",
         D * D + 2 * K * D + 1);
  fly_bounds *b = NULL;
  rc = fly_bounds_load(db, id, &m, &b, &err);
  TAP_OK(rc == FLY_OK && b && b->tuned && b->P == P && b->n_xi == K,
         "load: tuned, P = 9, n_xi = 3 (%s)", err.msg);
  if( !b ){ fly_db_close(db); free(d.X); unlink(path); return; }

  double g[P], g0[P], zero[P] = { 0 }, *H = malloc(P * P * sizeof *H);
  post_derivs(&d, s2, b->theta_map, g, H);
  post_derivs(&d, s2, zero, g0, NULL);
  double sum = 0;
  for( size_t j = 0; j < D; j++ )
    sum = fmax(sum, fabs(b->theta_map[j] + b->theta_map[D + j] +
                         b->theta_map[2 * D + j]));
  TAP_OK(max_abs(g, P) <= 1e-6 * max_abs(g0, P), "MAP gradient ~ 0 (|g| %.3g, "
         "|g(0)| %.3g)", max_abs(g, P), max_abs(g0, P));
  TAP_OK(sum < 1e-6, "MAP class rows sum to 0 (normal prior, shift "
         "invariance: %.3g)", sum);
  double dh = 0;
  for( size_t i = 0; i < P * P; i++ ) dh = fmax(dh, fabs(b->prec[i] - H[i]));
  TAP_OK(dh <= 1e-9 * max_abs(H, P * P), "H equals the in-memory Hessian "
         "(%.3g of %.3g)", dh, max_abs(H, P * P));

  /* key_prec = (K/(K-1))^2 (1/K) sum_k H_kk */
  double HD[D * D], PD[D * D], dk = 0;
  for( size_t a = 0; a < D; a++ ) for( size_t c = 0; c < D; c++ ){
    double t = 0;
    for( size_t k = 0; k < K; k++ ) t += b->prec[(k * D + a) * P + k * D + c];
    HD[a * D + c] = t * K / ((K - 1.0) * (K - 1.0));
    dk = fmax(dk, fabs(HD[a * D + c] - b->key_prec[a * D + c]));
  }
  TAP_OK(dk <= 1e-12 * max_abs(HD, D * D), "key_prec = (K/(K-1))^2 x the "
         "average diagonal block of H (%.3g)", dk);
  spd_inverse(D, b->key_prec, PD);

  /* bound rows: psi = th_map x rounded to f32, keys rounded up */
  float *xi = malloc(N * K * sizeof *xi);
  double *key = malloc(N * sizeof *key), *xn = malloc(N * sizeof *xn);
  TAP_OK(read_bounds(db, id, N, K, xi, key), "read back %zu bound rows of "
         "K + 1 values", N);
  double worst_psi = 0;
  int keys_ok = 1;
  for( size_t n = 0; n < N; n++ ){
    const double *x = d.X + n * W;
    for( size_t k = 0; k < K; k++ ){
      double s = 0;
      for( size_t j = 0; j < D; j++ ) s += b->theta_map[k * D + j] * x[j];
      worst_psi = fmax(worst_psi, fabs(xi[n * K + k] - s) / fmax(fabs(s), 1e-30));
    }
    xn[n] = sqrt(q_of(D, PD, x));
    double kk = m.type->gap_key(&m, xi + n * K, xn[n]);
    if( !(key[n] >= (double)(float)kk * (1 - 1e-6)) || !isfinite(key[n])
        || key[n] > 2 * kk ) keys_ok = 0;
  }
  TAP_OK(worst_psi <= 0x1.0p-24 * 1.0001, "psi = th_map x rounded to f32 "
         "(worst relative %.3g)", worst_psi);
  TAP_OK(keys_ok, "stored keys = gap_key(psi, |x|_P), P = key_prec^-1, "
         "rounded up to f32");

  /* moments from the stored psi, page by page */
  double *work = calloc(m.type->work_len(&m, N), sizeof *work);
  double *mom = calloc(b->n_mom, sizeof *mom);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  for( size_t n0 = 0; n0 < N; n0 += PAGE_ROWS ){
    size_t n = N - n0 < PAGE_ROWS ? N - n0 : PAGE_ROWS;
    m.type->moments_add(&m, d.X + n0 * W, W, xi + n0 * K, n, mom, work);
  }
  double dm = 0;
  for( size_t i = 0; i < b->n_mom; i++ )
    dm = fmax(dm, fabs(mom[i] - b->mom[i]) / fmax(fabs(mom[i]), 1e-300));
  TAP_OK(dm <= 1e-12, "stored moments = moments from the stored psi "
         "(relative %.3g)", dm);
  m.type->eval(&m, b->theta_map, d.X, W, xi, N, lL, lB, work);
  double gmax = 0;
  for( size_t n = 0; n < N; n++ ) gmax = fmax(gmax, lL[n] - lB[n]);
  TAP_OK(gmax >= 0 && gmax < 1e-9, "bounds tight at the MAP (largest gap %.3g)",
         gmax);

  /* collapsed sum and keys at theta around the MAP */
  fly_rng rng;
  fly_rng_seed(&rng, 77, 1);
  double worst_sum = 0, worst_ratio = 0, r2sum = 0;
  long viol = 0, nr2 = 0;
  static const double scales[] = { 0.1, 0.5, 1, 2, 4, 30 };
  for( size_t t = 0; t < 6; t++ ){
    for( int rep = 0; rep < 6; rep++ ){
      double th[P], z[P];
      for( size_t j = 0; j < P; j++ ) z[j] = fly_rng_normal(&rng) * scales[t];
      for( size_t i = 0; i < P; i++ ){
        th[i] = b->theta_map[i];
        for( size_t j = 0; j <= i; j++ ) th[i] += b->chol_cov[i * P + j] * z[j];
      }
      if( rep % 3 == 2 )                      /* plus a large shift */
        for( size_t j = 0; j < D; j++ ){
          double v = 20 * fly_rng_normal(&rng);
          for( size_t k = 0; k < K; k++ ) th[k * D + j] += v;
        }
      double col = m.type->bound_sum(&m, b->mom, th, NULL, work), exs = 0;
      m.type->eval(&m, th, d.X, W, xi, N, lL, lB, work);
      for( size_t n = 0; n < N; n++ ) exs += lB[n];
      worst_sum = fmax(worst_sum, fabs(col - exs) / fabs(exs));
      double r = m.type->radius(&m, th, b->theta_map, b->key_prec, work);
      if( t == 2 ){ r2sum += r * r; nr2++; }
      for( size_t n = 0; n < N; n++ ){
        double gap = lL[n] - lB[n], up = m.type->gap_upper(&m, key[n], r);
        if( !(gap <= up) ) viol++;
        if( up > 0 ) worst_ratio = fmax(worst_ratio, gap / up);
      }
    }
  }
  TAP_OK(worst_sum <= 1e-10, "bound_sum(th) = sum_n log B_n from the stored "
         "psi (relative %.3g)", worst_sum);
  TAP_OK(viol == 0, "gap_n(th) <= gap_upper(key_n, radius(th, th_map, "
         "key_prec)) for every row and th (%ld violations, largest ratio %.3g)",
         viol, worst_ratio);
  TAP_OK(worst_ratio > 0.05, "... and the thinning bound is not vacuous "
         "(largest gap/bound %.3g)", worst_ratio);
  TAP_DIAG("mean r^2 at Laplace draws: %.3g (K D = %d)", r2sum / (double)nr2, P);

  /* fixed tuning */
  fly_bounds *bf = NULL;
  int64_t fid = -1;
  o.tuning = "fixed";
  rc = fly_tune_get(db, d.ds, &m, &o, &fid, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(db, fid, &m, &bf, &err);
  TAP_OK(rc == FLY_OK && bf && !bf->tuned && fid != id, "softmax fixed tuning "
         "(%s)", err.msg);
  if( bf ){
    int all = read_bounds(db, fid, N, K, xi, key);
    for( size_t n = 0; all && n < N; n++ ){
      if( !isnan(key[n]) ) all = 0;
      for( size_t k = 0; k < K; k++ ) if( xi[n * K + k] != 1.5f ) all = 0;
    }
    TAP_OK(all, "fixed: psi = 1.5 in every slot, keys NaN");
    double th[P], ws = 0;
    for( int rep = 0; rep < 5; rep++ ){
      for( size_t j = 0; j < P; j++ )
        th[j] = bf->theta_map[j] + fly_rng_normal(&rng);
      double col = m.type->bound_sum(&m, bf->mom, th, NULL, work), exs = 0;
      m.type->eval(&m, th, d.X, W, xi, N, lL, lB, work);
      for( size_t n = 0; n < N; n++ ) exs += lB[n];
      ws = fmax(ws, fabs(col - exs) / fabs(exs));
    }
    TAP_OK(ws < 1e-10, "fixed: bound_sum = explicit sum (%.3g)", ws);
  }
  fly_bounds_free(bf);
  fly_bounds_free(b);
  free(H); free(xi); free(key); free(xn); free(work); free(mom); free(lL);
  free(lB); free(d.X);
  fly_db_close(db);
  unlink(path);
}

/* Kept coefficients (v, p, lv, eps of each row; they depend on the row's
 * class) give the same bits as eval / grad with psi, for every class and
 * with and without logB / wB. */
static void test_coef(size_t K)
{
  enum { D = 4 };
  fly_model m = mk(K, D);
  fly_rng r;
  fly_rng_seed(&r, 31, K);
  size_t N = 300, P = K * D;
  TAP_OK(m.type->coef && m.type->n_coef(&m) == 2 * K + 2,
         "K=%zu: softmax has bound coefficients (2K + 2 a row)", K);
  double *X = data(&r, N, K, D, 1.5);
  float *xi = malloc(N * K * sizeof *xi);
  double *wL = malloc(N * sizeof *wL), *wB = malloc(N * sizeof *wB);
  double th[MAXP];
  int bad = 0;
  for( int rep = 0; rep < 10; rep++ ){
    for( size_t j = 0; j < P; j++ ) th[j] = 2 * fly_rng_normal(&r);
    for( size_t i = 0; i < N; i++ ){
      rand_psi(&r, K, xi + i * K);
      wL[i] = fly_rng_normal(&r);
      wB[i] = rep % 3 ? fly_rng_normal(&r) : 0.0;
    }
    bad |= coef_mismatch(&m, th, X, D + 2, xi, N, wL, wB);
  }
  TAP_OK(bad == 0, "K=%zu: eval_coef/grad_coef == eval/grad bit for bit "
         "(mismatch mask %d)", K, bad);
  free(X); free(xi); free(wL); free(wB);
}

/* Up to FLY_ROWWISE rows, a row's values do not depend on its company. */
static void draw_psi5(fly_rng *r, float *xi) { rand_psi(r, 5, xi); }

static void test_rowwise(void)
{
  fly_model m = mk(5, MAXD);
  fly_rng r;
  fly_rng_seed(&r, 33, 0);
  double *X = data(&r, 60, 5, MAXD, 1.0);
  size_t nbad = rowwise_reps(&m, X, MAXD + 2, 60, &r, 5, draw_psi5);
  TAP_OK(nbad == 0, "eval of <= %d rows: %zu of 300 rows differ from the row alone",
         FLY_ROWWISE, nbad);
  free(X);
}

int main(void)
{
  test_bound_le();
  for( size_t K = 2; K <= 5; K += K == 2 ? 1 : 2 ){
    test_grad(K);
    test_collapsed(K);
    test_gap_bound(K);
    test_coef(K);
  }
  test_rowwise();
  test_target();
  test_vs_logistic();
  test_tune();
  return tap_done();
}
