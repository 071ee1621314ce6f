/*
 * vmath.c -- see vmath.h.
 *
 * Built as its own small library with -fopenmp-simd -fno-math-errno
 * -fno-trapping-math (src/util/meson.build): the loops below contain only
 * elementwise arithmetic, so those flags cannot reorder a sum or change a
 * result beyond the vector functions' own rounding.  The `declare simd`
 * lines tell the compiler that libmvec holds vector versions of these libm
 * functions (glibc's <math.h> says so itself only under -ffast-math, which
 * would also license reassociation here and in anything inlined).
 * target_clones builds an AVX2 copy of each function beside the baseline
 * one; the loader picks one for the CPU.
 *
 * Every element goes through the vector function, wherever it sits in the
 * array: arrays are processed in blocks of VW lanes and a short tail is
 * padded to a full block (a compiler's scalar epilogue would call scalar
 * libm for the last few elements).  So a value's result does not depend on
 * its position or on n, and a model's coefficients computed for one row
 * equal those computed for the same row inside a page.
 */
#include "util/vmath.h"

#include <math.h>
#include <string.h>

#ifdef FLY_HAVE_LIBMVEC
#pragma omp declare simd notinbranch
extern double exp(double);
#pragma omp declare simd notinbranch
extern double log(double);
#pragma omp declare simd notinbranch
extern double log1p(double);
#pragma omp declare simd notinbranch
extern double expm1(double);
#if defined(__SANITIZE_THREAD__)
/* target_clones' ifunc resolver runs while the dynamic loader relocates,
 * before ThreadSanitizer's runtime is set up, and its instrumented code
 * crashes there: a TSan build keeps the baseline copy only. */
#define CLONES
#else
#define CLONES __attribute__((target_clones("avx2", "default")))
#endif
#else
#define CLONES
#endif

#define VW 4    /* lanes of a block: AVX2 doubles */

/* name(in, out, n): out[i] = expr with x = in[i], block by block. */
#define ELEMENTWISE(name, x, expr)                                          \
  static inline void name##_block(const double *in, double *out)           \
  {                                                                         \
    _Pragma("omp simd")                                                     \
    for( int j_ = 0; j_ < VW; j_++ ){                                       \
      double x = in[j_];                                                    \
      out[j_] = (expr);                                                     \
    }                                                                       \
  }                                                                         \
  CLONES void name(const double *in, double *out, size_t n)                \
  {                                                                         \
    size_t i = 0;                                                           \
    for( ; i + VW <= n; i += VW ) name##_block(in + i, out + i);            \
    if( i < n ){                                                            \
      double a_[VW] = { 0 }, b_[VW];                                        \
      memcpy(a_, in + i, (n - i) * sizeof *a_);                             \
      name##_block(a_, b_);                                                 \
      memcpy(out + i, b_, (n - i) * sizeof *b_);                            \
    }                                                                       \
  }

/* log sigma(x) = min(x, 0) - log1p(exp(-|x|)) */
ELEMENTWISE(fly_vlogsig, x, (x < 0 ? x : 0.0) - log1p(exp(-fabs(x))))

/* softplus(x) = max(x, 0) + log1p(exp(-|x|)) */
ELEMENTWISE(fly_vsoftplus, x, (x > 0 ? x : 0.0) + log1p(exp(-fabs(x))))

/* e = exp(-|x|): log sigma(x) = min(x, 0) - log1p(e) and sigma(-x) =
 * e/(1 + e) for x >= 0, 1/(1 + e) below: no cancellation either side. */
static inline void logsig_dsig_block(const double *in, double *ls, double *ds)
{
  _Pragma("omp simd")
  for( int j = 0; j < VW; j++ ){
    double x = in[j], e = exp(-fabs(x));
    ls[j] = (x < 0 ? x : 0.0) - log1p(e);
    ds[j] = (x < 0 ? 1.0 : e) / (1.0 + e);
  }
}

CLONES void fly_vlogsig_dsig(const double *s, double *logsig, double *dsig,
                             size_t n)
{
  size_t i = 0;
  for( ; i + VW <= n; i += VW ) logsig_dsig_block(s + i, logsig + i, dsig + i);
  if( i < n ){
    double a[VW] = { 0 }, b[VW], d[VW];
    memcpy(a, s + i, (n - i) * sizeof *a);
    logsig_dsig_block(a, b, d);
    memcpy(logsig + i, b, (n - i) * sizeof *b);
    memcpy(dsig + i, d, (n - i) * sizeof *d);
  }
}

ELEMENTWISE(fly_vexp, x, exp(x))

ELEMENTWISE(fly_vlog, x, log(x))

ELEMENTWISE(fly_vexpm1, x, expm1(x))

ELEMENTWISE(fly_vlog1p, x, log1p(x))

/* log(e^g - 1) = g + log(1 - e^-g); for large g the log's argument is near
 * 1 and its absolute error stays an ulp, all a sum of log densities needs
 * (relative accuracy there would need a log1p(-e^-g) branch: a second vector
 * call).  This is flydb's one definition of log Ltilde. */
ELEMENTWISE(fly_vlog_ltilde, g, g > 0 ? g + log(-expm1(-g)) : -INFINITY)

double fly_vsum(const double *x, size_t n)
{
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for( ; i + 4 <= n; i += 4 ){
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  if( i < n ) s0 += x[i++];
  if( i < n ) s1 += x[i++];
  if( i < n ) s2 += x[i];
  return (s0 + s1) + (s2 + s3);
}
