/*
 * fd_sums.h -- the scalar sums the model tests differentiate by finite
 * differences: sum wL logL + wB logB, and sum log Ltilde as the chain forms
 * it (fly_vlog_ltilde over the rows' gaps); and the error measure they use.
 * Shared by the model tests; rows are stored with stride D + 2.
 */
#ifndef FLY_TEST_FD_SUMS_H
#define FLY_TEST_FD_SUMS_H

#include <math.h>

#include "models/model.h"
#include "util/vmath.h"

/* Sum of wL logL + wB logB over rows. */
static double wsum(const fly_model *m, const double *th, const double *X,
                   const float *xi, size_t n, const double *wL, const double *wB,
                   double *lL, double *lB, double *w)
{
  m->type->eval(m, th, X, m->D + 2, xi, n, lL, lB, w);
  double s = 0;
  for( size_t i = 0; i < n; i++ )
    s += (wL ? wL[i] * lL[i] : 0) + (wB ? wB[i] * lB[i] : 0);
  return s;
}

/* Sum of log Ltilde = log(e^gap - 1) over rows; lL is overwritten. */
static double ltsum(const fly_model *m, const double *th, const double *X,
                    const float *xi, size_t n, double *lL, double *lB, double *w)
{
  m->type->eval(m, th, X, m->D + 2, xi, n, lL, lB, w);
  for( size_t i = 0; i < n; i++ ) lL[i] -= lB[i];
  fly_vlog_ltilde(lL, lL, n);
  double s = 0;
  for( size_t i = 0; i < n; i++ ) s += lL[i];
  return s;
}

/* max |a - b| relative to max |b| (guarded near 0). */
static double relerr(const double *a, const double *b, size_t n)
{
  double num = 0, den = 0;
  for( size_t i = 0; i < n; i++ ){
    num = fmax(num, fabs(a[i] - b[i]));
    den = fmax(den, fabs(b[i]));
  }
  return num / (1e-8 + den);
}

#endif
