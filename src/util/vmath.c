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
 * target_clones builds an AVX2 copy of each loop beside the baseline one;
 * the loader picks one for the CPU.
 */
#include "util/vmath.h"

#include <math.h>

#ifdef FLY_HAVE_LIBMVEC
#pragma omp declare simd notinbranch
extern double exp(double);
#pragma omp declare simd notinbranch
extern double log(double);
#pragma omp declare simd notinbranch
extern double log1p(double);
#pragma omp declare simd notinbranch
extern double expm1(double);
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

CLONES
void fly_vlogsig(const double *s, double *out, size_t n)
{
#pragma omp simd
  for( size_t i = 0; i < n; i++ ){
    double x = s[i];
    /* log sigma(x) = min(x, 0) - log1p(exp(-|x|)) */
    out[i] = (x < 0 ? x : 0.0) - log1p(exp(-fabs(x)));
  }
}

CLONES
void fly_vexpm1(const double *x, double *out, size_t n)
{
#pragma omp simd
  for( size_t i = 0; i < n; i++ ) out[i] = expm1(x[i]);
}

CLONES
void fly_vlog_ltilde(const double *gap, double *out, size_t n)
{
#pragma omp simd
  for( size_t i = 0; i < n; i++ ){
    double g = gap[i];
    /* log(e^g - 1) = g + log(1 - e^-g); for large g the log's argument is
     * near 1 and its absolute error stays an ulp, all a sum of log
     * densities needs (the scalar fly_log_ltilde keeps relative accuracy
     * with a log1p branch, which would cost a second vector call here). */
    double l = g + log(-expm1(-g));
    out[i] = g > 0 ? l : -INFINITY;
  }
}
