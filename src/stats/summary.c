/*
 * summary.c -- every column of a posterior table for one parameter from one
 * sort of its draws: what `flydb summary` prints for each parameter.
 *
 * The fields are defined by the single functions (describe.c, rank.c,
 * rhat.c, ess.c); this file only shares their work.  The sorted draws give
 * the median and quantiles, the tail indicators (the first k sorted draws
 * are those <= q) and the order statistics of mcse_quantile; their ranks
 * give the bulk normal scores; merging the two runs below and above the
 * median gives the folded draws sorted, hence mad and the tail normal
 * scores.  So per parameter: one O(N) radix sort, O(N) passes, and four
 * ESS evaluations (bulk, basic, two tail indicators) that each cost O(N)
 * per autocovariance lag Geyer's truncation needs, capped by an FFT; a
 * slowly mixing parameter needs more lags than a well-mixing one.  The rank
 * scores are cached in the workspace, so only the first parameter of a run
 * pays for them.  test_stats prints the time of 4 chains x 10^5 draws.
 * Parameters are independent: a caller may summarise them in parallel, one
 * workspace per thread.
 */
#include <math.h>

#include "stats/stats_int.h"

fly_rc fly_stats_summarise(fly_stats_ws *ws, const double *x, size_t n_chains,
                           size_t n_iter, fly_stats_summary *out,
                           fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2, h;
  double bulk, tail, e5, e95;
  fly_rc rc;

  if( out ){
    out->mean = out->sd = out->median = out->mad = NAN;
    out->q5 = out->q95 = out->mcse_mean = out->mcse_q5 = out->mcse_q95 = NAN;
    out->ess_bulk = out->ess_tail = out->ess_basic = out->rhat = NAN;
  }
  rc = flys_begin("summarise", &ws, &tmp, x, out, n_chains, n_iter, err);
  if( rc != FLY_OK ) goto done;
  out->mean = fly_stats_mean(x, N);
  out->sd = fly_stats_sd(x, N);
  if( flys_has_nan(x, N) ) goto done;

  h = flys_split_map(ws, n_chains, n_iter, &m2);
  flys_sort(ws, x, N, ws->map);
  out->median = flys_median_sorted(ws->xs, N);
  out->q5 = flys_quantile_sorted(ws->xs, N, 0.05);
  out->q95 = flys_quantile_sorted(ws->xs, N, 0.95);

  /* bulk: rank-normalised split chains */
  flys_zscale(ws, ws->xs, ws->xi, N, m2 * h);
  bulk = flys_rhat(ws, ws->y, m2, h);
  rc = flys_ess(ws, m2, h, &out->ess_bulk, err);
  if( rc != FLY_OK ) goto done;

  /* tail R-hat and mad: folded draws */
  flys_fold_sorted(ws, N, out->median);
  out->mad = 1.4826 * flys_median_sorted(ws->fs, N);
  flys_zscale(ws, ws->fs, ws->fi, N, m2 * h);
  tail = flys_rhat(ws, ws->y, m2, h);
  if( !isnan(bulk) && !isnan(tail) ) out->rhat = bulk > tail ? bulk : tail;

  /* raw split chains: ess_basic, mcse_mean */
  flys_split_copy(ws, x, N);
  rc = flys_ess(ws, m2, h, &out->ess_basic, err);
  if( rc != FLY_OK ) goto done;
  out->mcse_mean = out->sd / sqrt(out->ess_basic);

  /* tails: quantile indicators */
  if( flys_is_na(x, N) ) goto done;
  rc = flys_ess_quantile_sorted(ws, N, m2, h, 0.05, &e5, err);
  if( rc == FLY_OK )
    rc = flys_ess_quantile_sorted(ws, N, m2, h, 0.95, &e95, err);
  if( rc != FLY_OK ) goto done;
  if( !isnan(e5) && !isnan(e95) ) out->ess_tail = e5 < e95 ? e5 : e95;
  out->mcse_q5 = flys_mcse_quantile_sorted(ws->xs, N, 0.05, e5);
  out->mcse_q95 = flys_mcse_quantile_sorted(ws->xs, N, 0.95, e95);
done:
  fly_stats_ws_free(tmp);
  return rc;
}
