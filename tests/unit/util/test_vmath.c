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

static void test_logsig(void)
{
  fly_rng r;
  fly_rng_seed(&r, 3, 0);
  enum { N = 1003 };
  double *s = malloc(N * sizeof *s), *o = malloc(N * sizeof *o);
  static const double fixed[] = { 0.0, -0.0, 1e-300, -1e-300, 1e-8, -1e-8, 0.5,
                                  -0.5, 36.0, -36.0, 40.0, -40.0, 700.0, -700.0,
                                  746.0, -746.0, 1e300, -1e300 };
  size_t nf = sizeof fixed / sizeof fixed[0];
  for( size_t i = 0; i < N; i++ )
    s[i] = i < nf ? fixed[i] : (i % 2 ? -1 : 1) * exp(12 * fly_rng_normal(&r));
  fly_vlogsig(s, o, N);
  /* relative error, measured against at least 1e-290: below that (s > 667)
   * exp(-s) runs into subnormals in any libm, and such terms are nothing
   * to a sum of log densities */
  double worst = 0;
  for( size_t i = 0; i < N; i++ ){
    long double ref = ref_logsig(s[i]);
    double e = (double)(fabsl(o[i] - ref) / fmaxl(fabsl(ref), 1e-290L));
    if( !(e <= worst) ) worst = e;                  /* NaN counts as worst */
  }
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
  size_t nf = sizeof fixed / sizeof fixed[0];
  for( size_t i = 0; i < N; i++ )
    g[i] = i < nf ? fixed[i] : exp(8 * fly_rng_normal(&r));
  fly_vlog_ltilde(g, o, N);
  double worst = 0;
  for( size_t i = 0; i < N; i++ ){
    long double ref = ref_ltilde(g[i]);
    /* absolute error in units of max(1, |result|): what a sum of log
     * densities sees */
    double e = (double)(fabsl(o[i] - ref) / fmaxl(1.0L, fabsl(ref)));
    if( !(e <= worst) ) worst = e;
  }
  TAP_OK(worst <= 1e-14, "log Ltilde: error %.3g of max(1, |value|) over %d gaps "
         "(5e-324 to 1e6)", worst, N);
  double sp[5] = { 0.0, -0.0, -1.0, -INFINITY, INFINITY }, os[5];
  fly_vlog_ltilde(sp, os, 5);
  TAP_OK(os[0] == -INFINITY && os[1] == -INFINITY && os[2] == -INFINITY &&
         os[3] == -INFINITY, "log Ltilde = -inf for gaps 0, -0, -1, -inf");
  TAP_OK(os[4] == INFINITY, "log Ltilde(+inf) = +inf");
  free(g);
  free(o);
}

int main(void)
{
  test_logsig();
  test_ltilde();
  return tap_done();
}
