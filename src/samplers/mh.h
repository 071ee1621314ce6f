/*
 * mh.h -- random-walk Metropolis-Hastings with Gaussian proposals
 * th' = th + eps * L * e, e ~ N(0, I), where L is a fixed lower-triangular
 * shape (the Cholesky factor of the Laplace covariance; identity for the
 * paper's isotropic proposals) and eps a scalar step size.
 *
 * During warm-up eps adapts toward acceptance rate 0.234 by a Robbins-Monro
 * recursion on log eps; fly_mh_step(..., adapt = 0) leaves eps frozen, so
 * post-warm-up draws come from a fixed, exact MH kernel.
 */
#ifndef FLY_MH_H
#define FLY_MH_H

#include <stddef.h>
#include <stdint.h>

#include "samplers/target.h"
#include "util/err.h"
#include "util/rng.h"

typedef struct fly_mh_state {  /* everything a checkpoint needs */
  double  log_eps;     /* log step size */
  double  n_adapt;     /* adaptation steps taken */
} fly_mh_state;

typedef struct fly_mh {
  size_t       P;
  const double *L;     /* P x P lower triangular, row-major; NULL = identity */
  double       target_accept;
  fly_mh_state st;
  double      *prop;   /* workspace P */
  double      *e;      /* workspace P */
} fly_mh;

/* Sizes workspaces; L is borrowed and must outlive the kernel.  eps0 > 0. */
fly_rc fly_mh_init(fly_mh *k, size_t P, const double *L, double eps0,
                   fly_err *err);
void   fly_mh_free(fly_mh *k);

/* One MH step from th (in/out) with current log density *lp (in/out).
 * *accepted = 1 if the proposal was taken.  Calls tgt->logp exactly once. */
fly_rc fly_mh_step(fly_mh *k, fly_target *tgt, fly_rng *rng, double *th,
                   double *lp, int adapt, int *accepted, fly_err *err);

#endif
