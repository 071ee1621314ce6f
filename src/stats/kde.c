/*
 * kde.c -- R's density() with its defaults, as `flydb plot` draws it: a
 * Gaussian kernel density estimate on an equally spaced grid, with
 * Silverman's rule-of-thumb bandwidth (R's bw.nrd0).
 *
 * bw.nrd0: 0.9 min(sd, IQR/1.34) n^-1/5, falling back as R does to sd,
 * then |x[0]|, then 1 when the spread is 0.  The estimate bins the draws
 * linearly onto the grid (R bins too) and convolves the bin weights with
 * the kernel cut at 4 bandwidths directly (R uses an FFT): O(n + G K) for G
 * grid points and K grid steps within 4 bandwidths, at most G^2.  Draws
 * outside the grid are left out, as R's do when `cut` trims the range.
 */
#include <math.h>
#include <string.h>

#include "stats/stats.h"
#include "util/mem.h"

fly_rc fly_stats_bw_nrd0(fly_stats_ws *ws, const double *x, size_t n, double *bw,
                         fly_err *err)
{
  static const double probs[2] = { 0.25, 0.75 };
  double q[2], a, sd;
  fly_rc rc;
  *bw = NAN;
  if( n < 2 ) return FLY_OK;
  if( (rc = fly_stats_quantile(ws, x, n, probs, 2, q, err)) ) return rc;
  sd = fly_stats_sd(x, n);
  a = fmin(sd, (q[1] - q[0]) / 1.34);
  if( !(a > 0) ) a = sd;
  if( !(a > 0) ) a = fabs(x[0]);
  if( !(a > 0) ) a = 1;
  *bw = 0.9 * a * pow((double)n, -0.2);
  return FLY_OK;
}

fly_rc fly_stats_kde(const double *x, size_t n, double bw, double lo, double hi,
                     size_t G, double *dens, fly_err *err)
{
  double *bins = NULL, *kern = NULL, d;
  size_t K;
  if( G < 2 || !(hi > lo) || !(bw > 0) || n == 0 )
    return fly_fail(err, FLY_MISUSE, "kde: %zu draws, %zu grid points over [%g, %g], "
                    "bandwidth %g", n, G, lo, hi, bw);
  d = (hi - lo) / (double)(G - 1);
  K = (size_t)fmin((double)(G - 1), ceil(4 * bw / d));
  bins = fly_alloc_array(G, sizeof *bins);
  kern = fly_alloc_array(K + 1, sizeof *kern);
  if( !bins || !kern ){
    fly_free(bins);
    fly_free(kern);
    return fly_fail(err, FLY_NOMEM, "kde of %zu grid points", G);
  }
  for(size_t i = 0; i < n; i++){
    double pos = (x[i] - lo) / d;
    if( !(pos >= 0) || pos > (double)(G - 1) ) continue;
    size_t j = (size_t)pos;
    double w = pos - (double)j;
    bins[j] += 1 - w;
    if( j + 1 < G ) bins[j + 1] += w;
  }
  for(size_t k = 0; k <= K; k++){
    double u = (double)k * d / bw;
    kern[k] = exp(-0.5 * u * u) / (sqrt(2 * M_PI) * bw * (double)n);
  }
  for(size_t i = 0; i < G; i++){
    double sum = bins[i] * kern[0];
    for(size_t k = 1; k <= K; k++){
      if( i >= k ) sum += bins[i - k] * kern[k];
      if( i + k < G ) sum += bins[i + k] * kern[k];
    }
    dens[i] = sum;
  }
  fly_free(bins);
  fly_free(kern);
  return FLY_OK;
}
