/*
 * test_vmath.c -- the vectorised log sigma and log Ltilde against long
 * double references, over every regime a chain meets: |s| from 0 to 1e300
 * and the infinities for log sigma; gaps from subnormal to 1e6, zero,
 * negative and infinite for log Ltilde.  Array lengths that are not a
 * multiple of the vector width check the loops' tails, and in-place calls
 * (in == out) are checked too.
 */
#include "util/vmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util/rng.h"

static long double ref_logsig(long double s)
{
  return s >= 0 ? -log1pl(expl(-s)) : s - log1pl(expl(s));
}

/* log(e^g - 1): log(expm1(g)) keeps tiny gaps exact; past 50 the long
 * double expm1 would overflow for the largest gaps, and g + log1p(-e^-g)
 * loses nothing there. */
static long double ref_ltilde(long double g)
{
  return g < 50 ? logl(expm1l(g)) : g + log1pl(-expl(-g));
}

/* x[0..n): the fixed values first, then +-exp(spread * N(0,1)) with
 * alternating signs (signed) or positive. */
static void fill(fly_rng *r, const double *fixed, size_t nf, double spread,
                 int signed_, double *x, size_t n)
{
  for( size_t i = 0; i < n; i++ )
    x[i] = i < nf ? fixed[i]
         : (signed_ && i % 2 ? -1 : 1) * exp(spread * fly_rng_normal(r));
}

/* Largest |out - ref(x)| / max(|ref|, floor) over x <= x_max; NaN counts
 * as the worst. */
static double worst_rel(const double *x, const double *out, size_t n,
                        long double (*ref)(long double), long double floor,
                        double x_max)
{
  double worst = 0;
  for( size_t i = 0; i < n; i++ ){
    if( x[i] > x_max ) continue;
    long double v = ref(x[i]);
    double e = (double)(fabsl(out[i] - v) / fmaxl(fabsl(v), floor));
    if( !(e <= worst) ) worst = e;
  }
  return worst;
}

static void test_logsig(void)
{
  fly_rng r;
  fly_rng_seed(&r, 3, 0);
  enum { N = 1003 };
  double *s = malloc(N * sizeof *s), *o = malloc(N * sizeof *o);
  static const double fixed[] = { 0.0, -0.0, 1e-300, -1e-300, 1e-8, -1e-8, 0.5,
                                  -0.5, 36.0, -36.0, 40.0, -40.0, 700.0, -700.0,
                                  746.0, -746.0, 1e300, -1e300 };
  fill(&r, fixed, sizeof fixed / sizeof fixed[0], 12, 1, s, N);
  fly_vlogsig(s, o, N);
  /* relative error, measured against at least 1e-290: below that (s > 667)
   * exp(-s) runs into subnormals in any libm, and such terms are nothing
   * to a sum of log densities */
  double worst = worst_rel(s, o, N, ref_logsig, 1e-290L, INFINITY);
  TAP_OK(worst <= 1e-14, "log sigma: relative error %.3g over %d values "
         "(|s| to 1e300)", worst, N);
  double inf[2] = { INFINITY, -INFINITY }, oi[2];
  fly_vlogsig(inf, oi, 2);
  TAP_OK(oi[0] == 0 && oi[1] == -INFINITY, "log sigma(+inf) = 0, (-inf) = -inf");
  /* in place, odd length: the tail of the loop */
  double a[7], b[7];
  for( int i = 0; i < 7; i++ ) a[i] = b[i] = 3.0 * i - 10.0;
  fly_vlogsig(a, a, 7);
  int same = 1;
  for( int i = 0; i < 7; i++ ) same &= fabsl(a[i] - ref_logsig(b[i])) <= 1e-14L * fabsl(ref_logsig(b[i])) + 1e-300L;
  TAP_OK(same, "log sigma in place over 7 values");
  free(s);
  free(o);
}

static void test_ltilde(void)
{
  fly_rng r;
  fly_rng_seed(&r, 4, 0);
  enum { N = 1001 };
  double *g = malloc(N * sizeof *g), *o = malloc(N * sizeof *o);
  static const double fixed[] = { 5e-324, 1e-300, 1e-20, 1e-8, 0.01, 0.69314718,
                                  0.6931472, 1.0, 30.0, 36.0, 40.0, 700.0,
                                  710.0, 1e6 };
  fill(&r, fixed, sizeof fixed / sizeof fixed[0], 8, 0, g, N);
  fly_vlog_ltilde(g, o, N);
  /* absolute error in units of max(1, |result|): what a sum of log
   * densities sees */
  double worst = worst_rel(g, o, N, ref_ltilde, 1.0L, INFINITY);
  TAP_OK(worst <= 1e-14, "log Ltilde: error %.3g of max(1, |value|) over %d gaps "
         "(5e-324 to 1e6)", worst, N);
  double sp[5] = { 0.0, -0.0, -1.0, -INFINITY, INFINITY }, os[5];
  fly_vlog_ltilde(sp, os, 5);
  TAP_OK(os[0] == -INFINITY && os[1] == -INFINITY && os[2] == -INFINITY &&
         os[3] == -INFINITY, "log Ltilde = -inf for gaps 0, -0, -1, -inf");
  TAP_OK(os[4] == INFINITY, "log Ltilde(+inf) = +inf");
  /* log(expm1(g)) to 25 digits (mpmath, 40-digit working precision), and
   * log Ltilde(ln 2) = 0 */
  static const double gk[6] = { 1e-300, 1e-10, 1, 50, 800, 0.6931471805599453 };
  static const double want[6] = { -690.7755278982137052053974, -23.0258509298904568401795,
                                  0.5413248546129181089783564, 49.99999999999999999999981,
                                  800.0, 0.0 };
  double ok[6];
  fly_vlog_ltilde(gk, ok, 6);
  for( int i = 0; i < 6; i++ )
    TAP_OK(fabs(ok[i] - want[i]) <= 4e-16 * fmax(1, fabs(want[i])),
           "log Ltilde(%.17g) = %.17g", gk[i], ok[i]);
  free(g);
  free(o);
}

static void test_expm1(void)
{
  fly_rng r;
  fly_rng_seed(&r, 6, 0);
  enum { N = 1005 };
  double *x = malloc(N * sizeof *x), *o = malloc(N * sizeof *o);
  static const double fixed[] = { 0.0, 5e-324, -5e-324, 1e-300, 1e-20, -1e-20,
                                  1e-8, 0.5, -0.5, 30, -30, 700, 709.7, -745,
                                  -1e300 };
  fill(&r, fixed, sizeof fixed / sizeof fixed[0], 4, 1, x, N);
  fly_vexpm1(x, o, N);
  /* overflow (x > 709.7) is checked below */
  double worst = worst_rel(x, o, N, expm1l, 1e-300L, 709.7);
  TAP_OK(worst <= 1e-14, "expm1: relative error %.3g over %d values", worst, N);
  double sp[3] = { 710.0, INFINITY, -INFINITY }, os[3];
  fly_vexpm1(sp, os, 3);
  TAP_OK(os[0] == INFINITY && os[1] == INFINITY && os[2] == -1.0,
         "expm1(710) = expm1(inf) = inf, expm1(-inf) = -1");
  free(x);
  free(o);
}

static long double ref_softplus(long double x)
{
  return x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x));
}

static void test_log1p_softplus(void)
{
  fly_rng r;
  fly_rng_seed(&r, 7, 0);
  enum { N = 1007 };
  double *x = malloc(N * sizeof *x), *o = malloc(N * sizeof *o);
  static const double f1[] = { 0.0, 5e-324, -5e-324, 1e-300, 1e-20, -1e-20,
                               -0.5, -0.999999, 1.0, 1e10, 1e300 };
  fill(&r, f1, sizeof f1 / sizeof f1[0], 6, 0, x, N);
  for( size_t i = 1; i < N; i += 3 )                /* some in (-1, 0) */
    if( i >= sizeof f1 / sizeof f1[0] ) x[i] = -x[i] / (1 + x[i]);
  fly_vlog1p(x, o, N);
  double worst = worst_rel(x, o, N, log1pl, 1e-300L, INFINITY);
  TAP_OK(worst <= 1e-14, "log1p: relative error %.3g over %d values in (-1, 1e300]",
         worst, N);
  static const double f2[] = { 0.0, -0.0, 1e-300, -1e-300, 36.0, -36.0, 700.0,
                               -700.0, 746.0, -746.0, 1e300, -1e300 };
  fill(&r, f2, sizeof f2 / sizeof f2[0], 12, 1, x, N);
  fly_vsoftplus(x, o, N);
  worst = worst_rel(x, o, N, ref_softplus, 1e-290L, INFINITY);
  TAP_OK(worst <= 1e-14, "softplus: relative error %.3g over %d values "
         "(|x| to 1e300)", worst, N);
  free(x);
  free(o);
}

/* A value's result must not depend on where it sits in the array or on the
 * array's length: the chain evaluates a row alone and inside a page. */
typedef void (*vfun)(const double *, double *, size_t);
static void test_position(void)
{
  static const struct { const char *name; vfun f; } fs[] = {
    { "logsig", fly_vlogsig }, { "softplus", fly_vsoftplus },
    { "expm1", fly_vexpm1 }, { "log1p", fly_vlog1p },
    { "log_ltilde", fly_vlog_ltilde } };
  fly_rng r;
  fly_rng_seed(&r, 8, 0);
  enum { N = 13 };
  double x[N], whole[N], part[N];
  for( size_t i = 0; i < N; i++ ) x[i] = 0.3 + 4 * fly_rng_uniform(&r);
  for( size_t k = 0; k < sizeof fs / sizeof fs[0]; k++ ){
    int same = 1;
    fs[k].f(x, whole, N);
    for( size_t i = 0; i < N; i++ ){           /* alone */
      fs[k].f(x + i, part + i, 1);
      same &= memcmp(part + i, whole + i, sizeof *part) == 0;
    }
    for( size_t off = 1; off < 5; off++ ){       /* shifted, shorter */
      fs[k].f(x + off, part, N - off);
      same &= memcmp(part, whole + off, (N - off) * sizeof *part) == 0;
    }
    TAP_OK(same, "%s: same bits alone, shifted and in a block of %d", fs[k].name, N);
  }
}

int main(void)
{
  test_logsig();
  test_ltilde();
  test_expm1();
  test_log1p_softplus();
  test_position();
  return tap_done();
}
