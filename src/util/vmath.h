/*
 * vmath.h -- elementwise transcendental functions over arrays, vectorised
 * through glibc's libmvec where the build found it (x86-64).
 *
 * A FlyMC theta step evaluates log sigma and log Ltilde for each bright row:
 * four libm calls a row, the larger part of the step at moderate D.
 * libmvec evaluates 4 lanes at once (AVX2; 2 with SSE2 on older CPUs,
 * chosen when the program loads) to within 4 ulp, several times faster
 * than scalar libm.  Results may differ from the scalar libm functions in
 * the last bits, and between CPUs; every caller of a model's eval uses
 * these same functions, so bounds, moments and gaps stay consistent (eps
 * in the bounds is ~4500 ulp).  Without libmvec the same loops call scalar
 * libm.
 *
 * A value's result does not depend on its position in the array or on n
 * (every element goes through the same vector code), so one row evaluated
 * alone and inside a block get the same bits.
 *
 * No function allocates; in and out may be the same array.
 */
#ifndef FLY_VMATH_H
#define FLY_VMATH_H

#include <stddef.h>

/* out[i] = log sigma(s[i]) = -log(1 + exp(-s[i])), accurate for all s. */
void fly_vlogsig(const double *s, double *out, size_t n);

/* logsig[i] = log sigma(s[i]) (as fly_vlogsig) and dsig[i] = sigma(-s[i]),
 * its derivative in s, from one exp and one log1p per element: the
 * logistic likelihood and its gradient weight in one pass.  s may be the
 * same array as either output. */
void fly_vlogsig_dsig(const double *s, double *logsig, double *dsig, size_t n);

/* out[i] = exp(x[i]) (0 below ~-745, +inf past ~709.78). */
void fly_vexp(const double *x, double *out, size_t n);

/* out[i] = log(x[i]). */
void fly_vlog(const double *x, double *out, size_t n);

/* out[i] = log(1 + exp(x[i])), accurate for all x. */
void fly_vsoftplus(const double *x, double *out, size_t n);

/* out[i] = log(1 + x[i]), accurate for small |x|. */
void fly_vlog1p(const double *x, double *out, size_t n);

/* out[i] = exp(x[i]) - 1, accurate for small |x| (+inf past ~709.78). */
void fly_vexpm1(const double *x, double *out, size_t n);

/* out[i] = log(exp(gap[i]) - 1) (log Ltilde, see model.h), -inf when
 * gap[i] <= 0.  Absolute error a few ulp of max(1, |result|). */
void fly_vlog_ltilde(const double *gap, double *out, size_t n);

/* sum_i x[i] in a fixed order: four partial sums over i mod 4, then
 * (s0 + s1) + (s2 + s3); the same bits for the same array, whatever its
 * alignment.  Four independent additions a cycle instead of one chain:
 * a full-data sum adds N terms per evaluation. */
double fly_vsum(const double *x, size_t n);

#endif
