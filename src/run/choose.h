/*
 * choose.h -- inside the run driver: the default that chooses the cheapest
 * of three exact methods by their estimated cost per effective draw: FlyMC
 * with MH (gibbs z step, 32 MH updates a z step), FlyMC with NUTS (gibbs,
 * one NUTS update a z step), and full-data NUTS (--regular --sampler nuts).
 *
 * Costs are counted in row evaluations (one row's log-likelihood), not
 * seconds, so the choice is a function of the seed and the data alone:
 * the same command on another machine, or under another load, chooses the
 * same way (docs/design.md §16).
 *
 *  - FlyMC: a pilot chain of each kind (its own RNG stream,
 *    FLY_CHOOSE_STREAM, which no run chain uses) runs adapting and counted
 *    iterations (below) from the run's start; its work per iteration is the
 *    likelihood evaluations and row reads it made, plus a quarter of a row
 *    for each row its z step screened or bounded without evaluating, plus
 *    P/2 per target evaluation (an MH update, a NUTS leapfrog) for the
 *    collapsed bound product (O(P^2)); its effective draws per iteration
 *    are the smallest bulk ESS of the pilot's draws over the parameters,
 *    divided by the iterations (at most 1).  A short pilot overestimates the
 *    ESS of a slowly mixing chain, so the estimate errs towards FlyMC.
 *  - NUTS: N rows per gradient, 1.5 row evaluations each (a gradient row
 *    costs a second matrix-vector product), 2.5 if the rows must be streamed
 *    from the pages (decoding them), times the expected leapfrog steps per
 *    iteration, 3 P^(1/4) (a near-Gaussian posterior in the Laplace metric:
 *    the step size for 0.8 acceptance shrinks as P^(-1/4) and the trajectory
 *    turns after half a period), at one effective draw per iteration.
 */
#ifndef FLY_RUN_CHOOSE_H
#define FLY_RUN_CHOOSE_H

#include <stdint.h>

#include "flymc/chain.h"
#include "util/err.h"

/* The pilot: FLY_CHOOSE_WARMUP adapting and FLY_CHOOSE_ITERS counted
 * iterations, each at most a fraction of the run's own iterations per chain
 * (a quarter and a half), so a short run pays for a short pilot, and at
 * least FLY_CHOOSE_MIN counted. */
#define FLY_CHOOSE_WARMUP 100
#define FLY_CHOOSE_ITERS  200
#define FLY_CHOOSE_MIN    20
#define FLY_CHOOSE_STREAM 64     /* FLY_RUN_MAX_CHAINS: chains use 0..63 */

typedef enum {
  FLY_CHOOSE_FLYMC_MH = 0,     /* --z gibbs --sampler mh (K = 32) */
  FLY_CHOOSE_FLYMC_NUTS = 1,   /* --z gibbs --sampler nuts */
  FLY_CHOOSE_REGULAR_NUTS = 2  /* --regular --sampler nuts */
} fly_choose_method;

typedef struct fly_choice {
  fly_choose_method choice;  /* the cheapest */
  double flymc_cost[2];    /* row evaluations per effective draw: MH, NUTS */
  double nuts_cost;        /* full-data NUTS */
  int64_t pilot_iters;     /* counted iterations of each pilot */
  double pilot_ess[2];     /* of those draws, MH and NUTS pilots */
  double pilot_work[2];    /* row evaluations per pilot iteration */
  double leapfrogs;        /* expected per full-data NUTS iteration */
  char   why[512];         /* one line: the choice and its figures */
} fly_choice;

/* Run the FlyMC pilots with cc (a gibbs configuration as the run would use
 * it, MH) and with NUTS in its place, seed and run_iters (the run's warm-up + iterations per chain),
 * estimate both costs for N rows of P parameters (in_memory: the rows fit in
 * memory for full-data NUTS) and fill *ch. */
fly_rc fly_run_choose(const fly_chain_cfg *cc, uint64_t seed, int64_t run_iters, int64_t N,
                      size_t P, int in_memory, fly_choice *ch, fly_err *err);

#endif
