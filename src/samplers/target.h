/*
 * target.h -- what a theta kernel sees: a log density (and its gradient).
 *
 * The kernels (MH, later MALA, slice, HMC) know nothing of z, bounds or
 * SQLite.  The FlyMC chain implements this interface with the conditional
 * log p(theta | z); the regular chain with the full-data log posterior.
 *
 * A target caches per-datum work for the last point it evaluated; when a
 * kernel makes that point the chain's current state it calls accept(), so
 * the chain can keep the bright rows' gaps without evaluating them again.
 */
#ifndef FLY_TARGET_H
#define FLY_TARGET_H

#include <stddef.h>

#include "util/err.h"

typedef struct fly_target {
  void  *ctx;
  size_t P;   /* dimension of theta */
  /* *lp = log density at th (may be -INFINITY); if grad is non-NULL it
   * receives the gradient.  FLY_NUMERIC on NaN, with the message naming
   * what went wrong. */
  fly_rc (*logp)(void *ctx, const double *th, double *lp, double *grad,
                 fly_err *err);
  /* The point of the last logp call is now the current state. */
  void   (*accept)(void *ctx);
} fly_target;

#endif
