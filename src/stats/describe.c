/*
 * describe.c -- mean, sd, quantiles, median and MAD of pooled draws, with
 * R's definitions.
 *
 * mean() as R's summary.c computes it: the sum divided by n, then a second
 * pass adds the mean of the residuals x - mean (R accumulates in long
 * double; here four double accumulators, which differ from R only in the
 * last bits and run several times faster).  sd() is
 * sqrt(var()), var() as in R's cov.c: the sum of squared deviations from
 * that mean over n - 1.
 *
 * quantile(type = 7) (Hyndman & Fan 1996, R's quantile.default): with the
 * order statistics x(1) <= ... <= x(n) and index = 1 + (n - 1) p, lo =
 * floor(index), hi = ceiling(index), h = index - lo, the quantile is x(lo),
 * or (1 - h) x(lo) + h x(hi) when h > 0 and x(hi) != x(lo).
 * median() is x((n+1)/2), or for even n R's mean() of the middle two.
 * mad() is 1.4826 * median(|x - median(x)|).
 *
 * The folded draws |x - m| come sorted without a second sort: the draws
 * below m, read downwards, give increasing m - x, and those at or above m,
 * read upwards, give increasing x - m; merging the two runs is O(n).
 * Floating subtraction is sign-symmetric, so fl(m - x) == |fl(x - m)| and
 * the merged values are exactly R's abs(x - median(x)).
 */
#include <float.h>
#include <math.h>

#include "stats/stats_int.h"

/* sum of x[0..n) - c, four accumulators (pairwise-like error, vectorisable
 * dependency chains) */
static double sum_dev(const double *x, size_t n, double c)
{
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for( ; i + 4 <= n; i += 4 ){
    s0 += x[i] - c;
    s1 += x[i+1] - c;
    s2 += x[i+2] - c;
    s3 += x[i+3] - c;
  }
  for( ; i < n; i++ ) s0 += x[i] - c;
  return (s0 + s1) + (s2 + s3);
}

double flys_mean(const double *x, size_t n)
{
  double m = sum_dev(x, n, 0) / (double)n;
  if( isfinite(m) ) m += sum_dev(x, n, m) / (double)n;
  return m;
}

double fly_stats_mean(const double *x, size_t n)
{
  if( !x || n == 0 ) return NAN;
  return flys_mean(x, n);
}

double fly_stats_sd(const double *x, size_t n)
{
  double m, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  if( !x || n < 2 ) return NAN;
  m = flys_mean(x, n);
  for( ; i + 4 <= n; i += 4 ){
    double d0 = x[i] - m, d1 = x[i+1] - m, d2 = x[i+2] - m, d3 = x[i+3] - m;
    s0 += d0 * d0;
    s1 += d1 * d1;
    s2 += d2 * d2;
    s3 += d3 * d3;
  }
  for( ; i < n; i++ ) s0 += (x[i] - m) * (x[i] - m);
  return sqrt(((s0 + s1) + (s2 + s3)) / (double)(n - 1));
}

void flys_sum_range(const double *y, size_t n, double *sum, double *lo,
                    double *hi)
{
  double s[4] = {0, 0, 0, 0}, a[4], b[4];
  size_t i = 0;
  for( int l = 0; l < 4; l++ ){
    a[l] = INFINITY;
    b[l] = -INFINITY;
  }
  for( ; i + 4 <= n; i += 4 )
    for( int l = 0; l < 4; l++ ){
      double v = y[i + (size_t)l];
      s[l] += v;
      a[l] = v < a[l] ? v : a[l];
      b[l] = v > b[l] ? v : b[l];
    }
  for( ; i < n; i++ ){
    s[0] += y[i];
    a[0] = y[i] < a[0] ? y[i] : a[0];
    b[0] = y[i] > b[0] ? y[i] : b[0];
  }
  *sum = (s[0] + s[1]) + (s[2] + s[3]);
  *lo = fmin(fmin(a[0], a[1]), fmin(a[2], a[3]));
  *hi = fmax(fmax(b[0], b[1]), fmax(b[2], b[3]));
}

int flys_is_na(const double *y, size_t n)
{
  double lo = INFINITY, hi = -INFINITY;
  for( size_t i = 0; i < n; i++ ){
    if( !isfinite(y[i]) ) return 1;
    if( y[i] < lo ) lo = y[i];
    if( y[i] > hi ) hi = y[i];
  }
  return fabs(hi - lo) < DBL_EPSILON;
}

int flys_has_nan(const double *x, size_t n)
{
  for( size_t i = 0; i < n; i++ )
    if( isnan(x[i]) ) return 1;
  return 0;
}

double flys_median_sorted(const double *s, size_t n)
{
  long double a, b, m;
  if( n == 0 ) return NAN;
  if( n % 2 ) return s[(n - 1)/2];
  a = s[n/2 - 1];
  b = s[n/2];
  m = (a + b) / 2;                      /* R's mean() of two values */
  if( isfinite((double)m) ) m += ((a - m) + (b - m)) / 2;
  return (double)m;
}

double flys_quantile_sorted(const double *s, size_t n, double prob)
{
  double index, lo, hi, h, q;
  if( n == 0 ) return NAN;
  index = 1 + (double)(n - 1) * prob;
  lo = floor(index);
  hi = ceil(index);
  q = s[(size_t)lo - 1];
  if( index > lo && s[(size_t)hi - 1] != q ){
    h = index - lo;
    q = (1 - h) * q + h * s[(size_t)hi - 1];
  }
  return q;
}

void flys_fold_sorted(fly_stats_ws *ws, size_t n, double med)
{
  const double *xs = ws->xs;
  const uint32_t *xi = ws->xi;
  double *fs = ws->fs;
  uint32_t *fi = ws->fi;
  size_t lo = 0, hi = n, i, j, k = 0;
  while( lo < hi ){                      /* first draw >= med */
    size_t mid = lo + (hi - lo)/2;
    if( xs[mid] < med ) lo = mid + 1; else hi = mid;
  }
  i = lo;                                /* left run: xs[i-1] going down */
  j = lo;                                /* right run: xs[j] going up */
  while( i > 0 && j < n ){               /* branch-free merge */
    double f[2];
    uint32_t g[2];
    size_t left;
    f[0] = fabs(xs[j] - med);
    f[1] = fabs(xs[i-1] - med);
    g[0] = xi[j];
    g[1] = xi[i-1];
    left = f[1] <= f[0];
    fs[k] = f[left];
    fi[k++] = g[left];
    i -= left;
    j += 1 - left;
  }
  while( i > 0 ){
    fs[k] = fabs(xs[i-1] - med);
    fi[k++] = xi[--i];
  }
  while( j < n ){
    fs[k] = fabs(xs[j] - med);
    fi[k++] = xi[j++];
  }
}

/* Sort the pooled draws into ws unless they hold a NaN (*sorted = 0). */
static fly_rc sort_pooled(fly_stats_ws **pws, fly_stats_ws **tmp,
                          const double *x, size_t n, int *sorted, fly_err *err)
{
  fly_rc rc;
  *sorted = 0;
  if( !*pws ){
    rc = fly_stats_ws_new(1, n, tmp, err);
    if( rc != FLY_OK ) return rc;
    *pws = *tmp;
  }
  rc = flys_reserve(*pws, 1, n, err);
  if( rc != FLY_OK ) return rc;
  if( flys_has_nan(x, n) ) return FLY_OK;
  flys_sort(*pws, x, n, NULL);
  *sorted = 1;
  return FLY_OK;
}

fly_rc fly_stats_quantile(fly_stats_ws *ws, const double *x, size_t n,
                          const double *probs, size_t n_probs, double *q,
                          fly_err *err)
{
  fly_stats_ws *tmp = NULL;
  fly_rc rc;
  int sorted;
  if( q ) for( size_t k = 0; k < n_probs; k++ ) q[k] = NAN;
  if( n_probs == 0 ) return FLY_OK;
  rc = flys_check("quantile", x, probs && q ? q : NULL, 1, n, err);
  if( rc != FLY_OK ) return rc;
  for( size_t k = 0; k < n_probs; k++ )
    if( !(probs[k] >= 0 && probs[k] <= 1) )
      return fly_fail(err, FLY_RANGE, "quantile: probs[%zu] = %g, want a "
                      "value in [0, 1]", k, probs[k]);
  rc = sort_pooled(&ws, &tmp, x, n, &sorted, err);
  if( rc == FLY_OK && sorted )
    for( size_t k = 0; k < n_probs; k++ )
      q[k] = flys_quantile_sorted(ws->xs, n, probs[k]);
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_median(fly_stats_ws *ws, const double *x, size_t n,
                        double *med, fly_err *err)
{
  fly_stats_ws *tmp = NULL;
  fly_rc rc;
  int sorted;
  if( med ) *med = NAN;
  rc = flys_check("median", x, med, 1, n, err);
  if( rc != FLY_OK ) return rc;
  rc = sort_pooled(&ws, &tmp, x, n, &sorted, err);
  if( rc == FLY_OK && sorted ) *med = flys_median_sorted(ws->xs, n);
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_mad(fly_stats_ws *ws, const double *x, size_t n,
                     double *mad, fly_err *err)
{
  fly_stats_ws *tmp = NULL;
  fly_rc rc;
  int sorted;
  if( mad ) *mad = NAN;
  rc = flys_check("mad", x, mad, 1, n, err);
  if( rc != FLY_OK ) return rc;
  rc = sort_pooled(&ws, &tmp, x, n, &sorted, err);
  if( rc == FLY_OK && sorted ){
    flys_fold_sorted(ws, n, flys_median_sorted(ws->xs, n));
    *mad = 1.4826 * flys_median_sorted(ws->fs, n);
  }
  fly_stats_ws_free(tmp);
  return rc;
}
