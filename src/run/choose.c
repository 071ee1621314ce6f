/*
 * choose.c -- FlyMC or full-data NUTS, by estimated row evaluations per
 * effective draw (see choose.h for the cost model and its reasons).
 *
 * The pilot is an ordinary chain on a stream of its own; its draws are kept
 * in memory only and it leaves no trace in the database.  The two pilots
 * run at the same time, the NUTS one on a thread of its own.  Memory: each
 * pilot's P x FLY_CHOOSE_ITERS draws and its chain's caches.
 */
#include "run/choose.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats/stats.h"
#include "util/mem.h"
#include "util/par.h"

static int64_t clamp(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* One pilot: chain configuration cc for W adapting and S counted
 * iterations; *work = row evaluations per counted iteration, *ess = the
 * smallest bulk ESS of its draws over the parameters (in 1..S).  draws:
 * P x S scratch. */
static fly_rc pilot(const fly_chain_cfg *cc, uint64_t seed, int64_t W, size_t S, size_t P,
                    double *draws, fly_stats_ws *ws, double *work, double *ess, fly_err *err)
{
  fly_chain *c = NULL;
  double lik = 0, screened = 0, leap = 0;
  fly_rc rc;
  if( (rc = fly_chain_open(cc, FLY_CHOOSE_STREAM, seed, &c, err)) ||
      (rc = fly_chain_init(c, err)) ) goto done;
  for(int64_t it = 1; it <= W + (int64_t)S; it++){
    fly_iter_stats s;
    int adapt = it <= W;
    int64_t out0, ev0, out1, ev1;
    fly_chain_screen_counts(c, &out0, &ev0);
    if( (rc = fly_chain_step(c, adapt, &s, err)) ){
      fly_err_prefix(err, "choosing the sampler: %s pilot iteration %lld",
                     fly_kernel_name(cc->kernel), (long long)it);
      goto done;
    }
    if( it % 4 == 0 ) fly_chain_release(c);
    if( adapt ) continue;
    fly_chain_screen_counts(c, &out1, &ev1);
    size_t t = (size_t)(it - W - 1);
    const double *th = fly_chain_theta(c);
    for(size_t j = 0; j < P; j++) draws[j * S + t] = th[j];
    screened += (double)(out1 - out0) + (double)s.n_cand;
    lik += (double)s.n_lik + (double)s.n_reads;
    /* the O(P^2) collapsed bound (and for gradients the whitening) of
     * every target evaluation: an MH update makes one, NUTS one a leapfrog */
    leap += s.has_kstats ? (double)s.kstats.n_leapfrog
                         : (double)(cc->theta_steps > 0 ? cc->theta_steps : 1);
  }
  fly_chain_release(c);
  *ess = INFINITY;
  for(size_t j = 0; j < P; j++){
    double e;
    if( (rc = fly_stats_ess_bulk(ws, draws + j * S, 1, S, &e, err)) ) goto done;
    if( isfinite(e) && e < *ess ) *ess = e;
  }
  if( !isfinite(*ess) || *ess < 1 ) *ess = 1;   /* no estimate: the worst */
  if( *ess > (double)S ) *ess = (double)S;
  *work = (lik + 0.25 * screened + leap * 0.5 * (double)P) / (double)S;
done:
  fly_chain_close(c);
  return rc;
}

/* A pilot on a thread of its own. */
typedef struct pilot_job {
  const fly_chain_cfg *cc;
  uint64_t seed;
  int64_t  W;
  size_t   S, P;
  double  *draws;          /* P x S */
  fly_stats_ws *ws;
  double   work, ess;
  fly_rc   rc;
  fly_err  err;
} pilot_job;

static void *pilot_thread(void *u)
{
  pilot_job *j = u;
  j->rc = pilot(j->cc, j->seed, j->W, j->S, j->P, j->draws, j->ws, &j->work, &j->ess,
                &j->err);
  return NULL;
}

fly_rc fly_run_choose(const fly_chain_cfg *cc, uint64_t seed, int64_t run_iters, int64_t N,
                      size_t P, int in_memory, fly_choice *ch, fly_err *err)
{
  const int64_t W = clamp(run_iters / 4, 0, FLY_CHOOSE_WARMUP);
  const size_t S = (size_t)clamp(run_iters / 2, FLY_CHOOSE_MIN, FLY_CHOOSE_ITERS);
  pilot_job jobs[2];
  fly_par par;
  fly_rc rc = FLY_OK;

  memset(ch, 0, sizeof *ch);
  memset(jobs, 0, sizeof jobs);
  /* FlyMC with MH x theta_steps (cc as given), then with one NUTS update */
  fly_chain_cfg cn = *cc;
  cn.kernel = FLY_K_NUTS;
  cn.theta_steps = 1;
  cn.eps0 = fly_kernel_default_step(FLY_K_NUTS, P, 0, 0);
  cn.n_warmup = W;
  fly_chain_cfg cm = *cc;
  cm.n_warmup = W;
  const fly_chain_cfg *cfgs[2] = { &cm, &cn };
  for(int k = 0; k < 2; k++){
    jobs[k] = (pilot_job){ .cc = cfgs[k], .seed = seed, .W = W, .S = S, .P = P };
    if( !(jobs[k].draws = fly_alloc_array(P, S * sizeof *jobs[k].draws)) ){
      rc = fly_fail(err, FLY_NOMEM, "pilot draws");
      goto done;
    }
    if( (rc = fly_stats_ws_new(1, S, &jobs[k].ws, err)) ) goto done;
  }
  /* The pilots are independent chains (each its own RNG, reading the
   * shared index and bounds only): the NUTS one runs on a thread of its
   * own beside the MH one, with the same draws as one after the other. */
  fly_par_start(&par, pilot_thread, &jobs[1]);
  pilot_thread(&jobs[0]);
  fly_par_join(&par);
  for(int k = 0; k < 2; k++)
    if( jobs[k].rc ){
      rc = jobs[k].rc;
      *err = jobs[k].err;
      goto done;
    }
  for(int k = 0; k < 2; k++){
    ch->pilot_work[k] = jobs[k].work;
    ch->pilot_ess[k] = jobs[k].ess;
    ch->flymc_cost[k] = ch->pilot_work[k] / (ch->pilot_ess[k] / (double)S);
  }
  ch->pilot_iters = (int64_t)S;
  ch->leapfrogs = 3.0 * pow((double)P, 0.25);
  ch->nuts_cost = (double)N * (in_memory ? 1.5 : 2.5) * ch->leapfrogs;
  double best = ch->nuts_cost;
  ch->choice = FLY_CHOOSE_REGULAR_NUTS;
  if( ch->flymc_cost[0] <= best ){ best = ch->flymc_cost[0]; ch->choice = FLY_CHOOSE_FLYMC_MH; }
  if( ch->flymc_cost[1] < best ){ best = ch->flymc_cost[1]; ch->choice = FLY_CHOOSE_FLYMC_NUTS; }
  static const char *what[] = { "FlyMC (--z gibbs --sampler mh)",
                                "FlyMC with NUTS (--z gibbs --sampler nuts)",
                                "full-data NUTS (--regular --sampler nuts)" };
  snprintf(ch->why, sizeof ch->why,
           "default: %s, by row evaluations per effective draw: full-data NUTS %.3g "
           "(%lld rows x %.1f leapfrogs), FlyMC with MH %.3g (pilot: %.3g an iteration, "
           "bulk ESS %.1f of %zu), with NUTS %.3g (%.3g, %.1f)%s",
           what[ch->choice], ch->nuts_cost, (long long)N, ch->leapfrogs, ch->flymc_cost[0],
           ch->pilot_work[0], ch->pilot_ess[0], S, ch->flymc_cost[1], ch->pilot_work[1],
           ch->pilot_ess[1], "; force any with --regular, --z or --sampler");
done:
  for(int k = 0; k < 2; k++){
    fly_stats_ws_free(jobs[k].ws);
    fly_free(jobs[k].draws);
  }
  return rc;
}
