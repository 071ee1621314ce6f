/*
 * posterior.h -- a run's posterior as the commands that use a fitted model
 * read it: its model resolved from the stored settings, and S of its
 * post-warm-up draws, chains pooled and thinned evenly.
 *
 * The draws kept are pooled draws t = floor(j T / S), j = 0..S-1, of the T
 * post-warm-up draws in chain order (chain 0's first): spread evenly over
 * every chain, the same draws loo takes for the same S.  Memory: S x P
 * doubles and one chain's draws while loading.
 */
#ifndef FLY_RUN_POSTERIOR_H
#define FLY_RUN_POSTERIOR_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "store/db.h"
#include "util/err.h"

typedef struct fly_posterior {
  int64_t   run_id;   /* resolved (0 asked for the latest) */
  int64_t   ds;       /* the data set the run modelled */
  fly_model m;        /* its model, as the run resolved it */
  size_t    P, S;     /* parameters; draws kept */
  double   *th;       /* S x P, draw-major */
  double   *mean;     /* P: the mean of the kept draws */
} fly_posterior;

/* Load run run_id's (0: the latest) model and at most max_draws (<= 0:
 * all) post-warm-up draws into *p (free with fly_posterior_free).
 * FLY_RANGE for no such run; FLY_MISUSE for fewer than min_draws
 * post-warm-up draws (the message names `what`, the command needing them);
 * FLY_CORRUPT when the stored parameters do not fit the model or draws are
 * missing; the store's errors.  *p is zeroed on failure. */
fly_rc fly_posterior_load(fly_db *db, int64_t run_id, int64_t max_draws,
                          size_t min_draws, const char *what,
                          fly_posterior *p, fly_err *err);
void   fly_posterior_free(fly_posterior *p);   /* zeroed p: no-op */

#endif
