/*
 * acf.c -- autocovariances averaged over chains, directly or by FFT.
 *
 * For m centred chains y_c of h values the quantity every ESS needs is
 *
 *   acov[k] = (1/m) sum_c (1/h) sum_{t=0}^{h-1-k} y_c[t] y_c[t+k],
 *
 * the biased (divide by h) autocovariance at lag k that posterior's
 * autocovariance() returns (it rescales the FFT output ac by
 * var(y)*(h-1)/h / ac[0], which is 1/h), averaged over chains as .ess does
 * with rowMeans.  A constant chain contributes zeros, as posterior returns
 * rep(0, h) for it (the caller centres it to exact zeros).
 *
 * Two ways to compute it, equal up to rounding (about 1e-15 relative to
 * acov[0]):
 *  - direct: O(m h) per lag.  Geyer's truncation (ess.c) usually stops
 *    after a few lags for a well-mixing chain, so the lags are produced on
 *    demand and this is what a summary of a good sampler costs.
 *  - FFT: O(m L log L) for many lags at once, one real transform per
 *    chain and one inverse of the summed power spectra (fft.c, FFTW).
 * flys_direct_lags() is the crossover from a cost model: a lag costs m h
 * multiply-adds (8 lags a sweep, vectorised across lags), the FFT about
 * (m + 1)/2 L log2 L point-stages (m + 1 real transforms, each half a
 * complex one) of FFT_COST multiply-adds each, with L the transform length
 * for a quarter of the lags.  The FFT length is the
 * power of two >= h + K for the K lags wanted (circular sums then equal the
 * linear ones up to lag L - h), and the lags are asked for 8 times as many
 * as needed so far, so a sticky chain costs one or two transforms.
 *
 * fly_stats_acf() is R's acf(x, lag.max)$acf for one chain: the same
 * biased autocovariances of x - mean(x), divided as R divides them
 * (by sqrt(c0) sqrt(c0)) and clamped to [-1, 1].
 */
#include <math.h>

#include "stats/stats_int.h"

/* Cost of an FFT (per complex point and stage) relative to a direct
 * multiply-add, fitted to where FFTW's transforms overtake the direct sums
 * for the shapes summaries see: 2-8 half-chains of 5 10^3 - 2 10^5 draws. */
#define FFT_COST 2.5

#define LAGS 8              /* lags a sweep computes (vectorises over lags) */

/* s[j] = sum_t a[t] a[t+k0+j], j < LAGS, k0 + LAGS <= h: one sweep, the
 * lags in independent lanes. */
static void dot_lags(const double *a, size_t h, size_t k0, double *s)
{
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  size_t t = 0, end = h - k0 - (LAGS - 1);    /* all lanes valid */
  for( ; t < end; t++ ){
    double at = a[t];
    const double *b = a + t + k0;
    s0 += at * b[0];  s1 += at * b[1];  s2 += at * b[2];  s3 += at * b[3];
    s4 += at * b[4];  s5 += at * b[5];  s6 += at * b[6];  s7 += at * b[7];
  }
  s[0] = s0; s[1] = s1; s[2] = s2; s[3] = s3;
  s[4] = s4; s[5] = s5; s[6] = s6; s[7] = s7;
  for( ; t < h - k0; t++ )
    for( size_t j = 0; j < LAGS && t + k0 + j < h; j++ )
      s[j] += a[t] * a[t + k0 + j];
}

void flys_acov_direct(const double *y, size_t m2, size_t h, size_t k0,
                      size_t k1, double *acov)
{
  for( size_t k = k0; k < k1; k++ ) acov[k] = 0;
  for( size_t c = 0; c < m2; c++ ){
    const double *yc = y + c*h;
    for( size_t k = k0; k < k1; k += LAGS ){
      double s[LAGS];
      if( k + LAGS <= h ){
        dot_lags(yc, h, k, s);
      }else{                           /* the last lags of a short chain */
        for( size_t j = 0; j < LAGS; j++ ){
          s[j] = 0;
          for( size_t t = 0; k + j < h && t < h - k - j; t++ )
            s[j] += yc[t] * yc[t + k + j];
        }
      }
      for( size_t j = 0; j < LAGS && k + j < k1; j++ )
        acov[k + j] += s[j] / (double)h;
    }
  }
  for( size_t k = k0; k < k1; k++ ) acov[k] /= (double)m2;
}

static size_t pow2_at_least(size_t v)
{
  size_t L = 2;
  while( L < v ) L <<= 1;
  return L;
}

size_t flys_fft_lags(size_t h, size_t want)
{
  size_t k1 = pow2_at_least(h + want - 1) - h + 1;
  return k1 < h ? k1 : h;
}

size_t flys_direct_lags(const fly_stats_ws *ws, size_t m2, size_t h)
{
  size_t L = pow2_at_least(h + h/4), lg = 0, K;
  double cost;
  if( ws->direct_lags ) return ws->direct_lags < h ? ws->direct_lags : h;
  while( ((size_t)1 << lg) < L ) lg++;
  cost = FFT_COST * (double)(m2 + 1) / 2 * (double)L * (double)lg
         / ((double)m2 * (double)h);
  K = cost < 8 ? 8 : (size_t)cost;
  return K < h ? K : h;
}

fly_rc fly_stats_acf(fly_stats_ws *ws, const double *x, size_t n,
                     size_t max_lag, double *rho, fly_err *err)
{
  fly_stats_ws *tmp = NULL;
  fly_rc rc;
  double m, se;
  int constant = 1;
  if( rho && max_lag < n ) for( size_t k = 0; k <= max_lag; k++ ) rho[k] = NAN;
  rc = flys_check("acf", x, rho, 1, n, err);
  if( rc != FLY_OK ) return rc;
  if( max_lag >= n )
    return fly_fail(err, FLY_RANGE, "acf: lag %zu of a chain of %zu draws, "
                    "want at most %zu", max_lag, n, n - 1);
  if( !ws ){
    rc = fly_stats_ws_new(1, n, &tmp, err);
    if( rc != FLY_OK ) return rc;
    ws = tmp;
  }
  rc = flys_reserve(ws, 1, n, err);
  if( rc != FLY_OK ) goto done;
  for( size_t t = 1; t < n; t++ ) constant &= x[t] == x[0];
  if( constant || flys_has_nan(x, n) ) goto done;
  m = flys_mean(x, n);
  for( size_t t = 0; t < n; t++ ) ws->y[t] = x[t] - m;
  if( max_lag + 1 <= flys_direct_lags(ws, 1, n) ){
    flys_acov_direct(ws->y, 1, n, 0, max_lag + 1, ws->acov);
  }else{
    rc = flys_acov_fft(ws, ws->y, 1, n, 0, max_lag + 1, ws->acov, err);
    if( rc != FLY_OK ) goto done;
  }
  se = sqrt(ws->acov[0]);
  for( size_t k = 0; k <= max_lag; k++ ){
    double a = ws->acov[k] / (se * se);
    rho[k] = a > 1 ? 1 : a < -1 ? -1 : a;
  }
done:
  fly_stats_ws_free(tmp);
  return rc;
}
