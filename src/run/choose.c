/*
 * choose.c -- FlyMC or full-data NUTS, by estimated row evaluations per
 * effective draw (see choose.h for the cost model and its reasons).
 *
 * The pilot is an ordinary chain on a stream of its own; its draws are kept
 * in memory only and it leaves no trace in the database.  Memory: its
 * P x FLY_CHOOSE_ITERS draws.
 */
#include "run/choose.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats/stats.h"
#include "util/mem.h"

static int64_t clamp(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

fly_rc fly_run_choose(const fly_chain_cfg *cc, uint64_t seed, int64_t run_iters, int64_t N,
                      size_t P, int in_memory, fly_choice *ch, fly_err *err)
{
  fly_chain *c = NULL;
  fly_stats_ws *ws = NULL;
  double *draws = NULL;   /* parameter-major: draw t of parameter j at j*S + t */
  const int64_t W = clamp(run_iters / 4, 0, FLY_CHOOSE_WARMUP);
  const size_t S = (size_t)clamp(run_iters / 2, FLY_CHOOSE_MIN, FLY_CHOOSE_ITERS);
  double work = 0, screened = 0;
  fly_rc rc;

  memset(ch, 0, sizeof *ch);
  if( !(draws = fly_alloc_array(P, S * sizeof *draws)) ){
    rc = fly_fail(err, FLY_NOMEM, "pilot draws");
    goto done;
  }
  if( (rc = fly_chain_open(cc, FLY_CHOOSE_STREAM, seed, &c, err)) ||
      (rc = fly_chain_init(c, err)) ) goto done;
  for(int64_t it = 1; it <= W + (int64_t)S; it++){
    fly_iter_stats s;
    int adapt = it <= W;
    int64_t out0, ev0, out1, ev1;
    fly_chain_screen_counts(c, &out0, &ev0);
    if( (rc = fly_chain_step(c, adapt, &s, err)) ){
      fly_err_prefix(err, "choosing the sampler: pilot iteration %lld", (long long)it);
      goto done;
    }
    if( it % 4 == 0 ) fly_chain_release(c);
    if( adapt ) continue;
    fly_chain_screen_counts(c, &out1, &ev1);
    size_t t = (size_t)(it - W - 1);
    const double *th = fly_chain_theta(c);
    for(size_t j = 0; j < P; j++) draws[j * S + t] = th[j];
    screened += (double)(out1 - out0) + (double)s.n_cand;
    work += (double)s.n_lik + (double)s.n_reads;
  }
  fly_chain_release(c);

  if( (rc = fly_stats_ws_new(1, S, &ws, err)) ) goto done;
  double ess = INFINITY;
  for(size_t j = 0; j < P; j++){
    double e;
    if( (rc = fly_stats_ess_bulk(ws, draws + j * S, 1, S, &e, err)) ) goto done;
    if( isfinite(e) && e < ess ) ess = e;
  }
  if( !isfinite(ess) ) ess = 1;       /* no estimate (constant draws): the worst */
  if( ess > (double)S ) ess = (double)S;
  int64_t steps = cc->theta_steps > 0 ? cc->theta_steps : 1;
  ch->pilot_iters = (int64_t)S;
  ch->pilot_ess = ess;
  ch->pilot_work = (work + 0.25 * screened) / (double)S + (double)steps * 0.5 * (double)P;
  ch->flymc_cost = ch->pilot_work / (ess / (double)S);
  ch->leapfrogs = 3.0 * pow((double)P, 0.25);
  ch->nuts_cost = (double)N * (in_memory ? 1.5 : 2.5) * ch->leapfrogs;
  ch->regular = ch->nuts_cost < ch->flymc_cost;
  snprintf(ch->why, sizeof ch->why,
           "default: %s, by row evaluations per effective draw: full-data NUTS %.3g "
           "(%lld rows x %.1f leapfrogs), FlyMC %.3g (pilot: %.3g an iteration, bulk ESS "
           "%.1f of %zu)%s",
           ch->regular ? "full-data NUTS (--regular --sampler nuts)"
                       : "FlyMC (--z gibbs --sampler mh)",
           ch->nuts_cost, (long long)N, ch->leapfrogs, ch->flymc_cost, ch->pilot_work,
           ch->pilot_ess, S, "; force either with --regular or --z");
done:
  fly_stats_ws_free(ws);
  fly_chain_close(c);
  fly_free(draws);
  return rc;
}
