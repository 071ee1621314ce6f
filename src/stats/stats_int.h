/*
 * stats_int.h -- what the files of src/stats share and callers never see:
 * the workspace layout and the steps that several diagnostics reuse.
 *
 * Split layout: posterior splits each chain into a first and a last half of
 * h = floor(n_iter/2) draws (the middle draw of an odd chain is dropped), so
 * the 2*n_chains half-chains sit one after another, half-chain j at
 * y[j*h .. j*h + h).  With n_iter == 1 nothing is split (h = 1).  The map
 * takes a draw's index c*n_iter + t to its position in that layout, or
 * FLYS_DROP.  Every diagnostic here is invariant to the order of chains.
 */
#ifndef FLY_STATS_INT_H
#define FLY_STATS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "stats/stats.h"

#define FLYS_DROP UINT32_MAX
#define FLYS_FFT_PLANS 64  /* FFT lengths 2^0 .. 2^63 */

struct fly_stats_ws {
  size_t    cap;       /* draws the per-draw arrays hold */
  uint64_t *key, *key2; /* radix sort keys, ping-pong */
  uint32_t *idx, *idx2; /* tags carried by the sort */
  double   *xs;        /* sorted draws */
  uint32_t *xi;        /* tag of xs[k]: its split position or FLYS_DROP */
  double   *fs;        /* sorted |x - median| */
  uint32_t *fi;        /* tag of fs[k] */
  double   *y;         /* split layout values for ESS and R-hat */
  uint32_t *map;       /* draw -> split position, or FLYS_DROP */
  size_t    map_m, map_n; /* shape the map was built for (0: none) */
  double   *ztab;      /* qnorm((r - 3/8)/(S + 1/4)) for r = 1..S */
  size_t    ztab_S;    /* S the table holds (0: none) */

  size_t    cap_lag;   /* lags acov and rho hold */
  double   *acov;      /* mean autocovariance over chains, by lag */
  double   *rho;       /* Geyer's autocorrelation estimates */
  size_t    cap_ch;    /* chains cm holds */
  double   *cm;        /* chain means */

  size_t    cap_fft;   /* points the FFT buffers hold (fft.c) */
  double   *fr;        /* L reals: a padded chain, then the sums by lag */
  double   *pw;        /* L/2 + 1 summed power spectrum values */
  double   *fc;        /* L/2 + 1 complex coefficients, interleaved */
  struct fftw_plan_s *fwd[FLYS_FFT_PLANS]; /* r2c plans by log2 L */
  struct fftw_plan_s *inv[FLYS_FFT_PLANS]; /* c2r plans by log2 L */

  size_t    cap_ar;    /* coefficients the AR arrays hold */
  double   *ar_r;      /* autocovariances 0..order.max */
  double   *ar_phi;    /* Levinson-Durbin coefficients */
  double   *ar_tmp;    /* previous order's coefficients */

  size_t    direct_lags; /* 0: cost model; else lags done directly
                            before switching to FFT (tests force paths) */
};

/* Make room for n_chains x n_iter draws (per-draw arrays, lags, chains). */
fly_rc flys_reserve(fly_stats_ws *ws, size_t n_chains, size_t n_iter,
                    fly_err *err);
/* Check x/out/shape; FLY_MISUSE or FLY_RANGE with a message naming fn. */
fly_rc flys_check(const char *fn, const void *x, const void *out,
                  size_t n_chains, size_t n_iter, fly_err *err);

/* The prologue of a public diagnostic: flys_check(), then a temporary
 * workspace in *tmp (to free at the end) if *pws is NULL, then
 * flys_reserve(). */
fly_rc flys_begin(const char *fn, fly_stats_ws **pws, fly_stats_ws **tmp,
                  const void *x, const void *out, size_t n_chains,
                  size_t n_iter, fly_err *err);

/* posterior's should_return_NA: a non-finite value, or max - min below
 * DBL_EPSILON. */
int    flys_is_na(const double *y, size_t n);
/* Sum, min and max of y[0..n) (four lanes: no serial dependency). */
void   flys_sum_range(const double *y, size_t n, double *sum, double *lo,
                      double *hi);
/* Any NaN (not +-Inf). */
int    flys_has_nan(const double *x, size_t n);

/* Sort the n draws of x (no NaN) into ws->xs, with ws->xi their tags
 * (tag[i] of draw i, or i if tag is NULL).  Stable LSD radix sort; -0 and
 * +0 compare equal. */
void   flys_sort(fly_stats_ws *ws, const double *x, size_t n,
                 const uint32_t *tag);
/* R's median of the sorted s[0..n). */
double flys_median_sorted(const double *s, size_t n);
/* R's type-7 quantile of the sorted s[0..n); prob in [0, 1]. */
double flys_quantile_sorted(const double *s, size_t n, double prob);
/* ws->fs/fi: |x - med| sorted, merged from ws->xs (which must be sorted). */
void   flys_fold_sorted(fly_stats_ws *ws, size_t n, double med);

/* Build ws->map for the shape; returns h, sets *m2 (number of halves). */
size_t flys_split_map(fly_stats_ws *ws, size_t n_chains, size_t n_iter,
                      size_t *m2);
/* Copy x into ws->y in split layout. */
void   flys_split_copy(fly_stats_ws *ws, const double *x, size_t n_draws);
/* Normal scores of the average ranks of s[0..n) (sorted, tagged with split
 * positions pos) among the S kept draws, written to ws->y[pos]. */
void   flys_zscale(fly_stats_ws *ws, const double *s, const uint32_t *pos,
                   size_t n, size_t S);

/* posterior's .ess on the m2 half-chains of h values in ws->y (which it
 * centres in place).  NaN where posterior gives NA. */
fly_rc flys_ess(fly_stats_ws *ws, size_t m2, size_t h, double *ess,
                fly_err *err);
/* posterior's .rhat on the m2 chains of h values y (ws->cm scratch). */
double flys_rhat(fly_stats_ws *ws, const double *y, size_t m2, size_t h);

/* Destroy the FFT plans and free the FFT buffers of ws (fft.c). */
void   flys_fft_free(fly_stats_ws *ws);

/* Mean autocovariance over the m2 centred chains y (h values each) at lags
 * k0..k1-1 into acov[k0..k1): direct sums. */
void   flys_acov_direct(const double *y, size_t m2, size_t h, size_t k0,
                        size_t k1, double *acov);
/* The same for lags k0..k1-1 via FFTW (of length the power of two >= h +
 * k1 - 1, so the circular sums are the linear ones; fft.c).  FLY_NOMEM if
 * the buffers or the plans cannot be made. */
fly_rc flys_acov_fft(fly_stats_ws *ws, const double *y, size_t m2, size_t h,
                     size_t k0, size_t k1, double *acov, fly_err *err);
/* The lags 0..k1-1 an FFT of the smallest sufficient length gives when at
 * least want lags are wanted (k1 >= want unless k1 == h). */
size_t flys_fft_lags(size_t h, size_t want);
/* How many lags are cheaper directly than by FFT for this shape. */
size_t flys_direct_lags(const fly_stats_ws *ws, size_t m2, size_t h);

/* ESS of the indicator x <= quantile(prob), x already sorted into ws. */
fly_rc flys_ess_quantile_sorted(fly_stats_ws *ws, size_t n_draws, size_t m2,
                                size_t h, double prob, double *ess,
                                fly_err *err);
/* mcse_quantile from its ESS and the sorted draws. */
double flys_mcse_quantile_sorted(const double *s, size_t n, double prob,
                                 double ess);

/* R's mean(): the sum over n plus the mean residual (a second pass). */
double flys_mean(const double *x, size_t n);

#endif
