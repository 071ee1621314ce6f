/*
 * mala.h -- the Metropolis-adjusted Langevin algorithm (MALA; Roberts &
 * Tweedie 1996), preconditioned by a fixed metric M = L L^T (the Laplace
 * covariance from tuning; L NULL = identity):
 *
 *   th' = th + (eps^2 / 2) M grad log p(th) + eps L e,   e ~ N(0, I),
 *
 * accepted with the full Metropolis-Hastings ratio of the asymmetric
 * proposal.  eps adapts during warm-up toward acceptance 0.574 (Roberts &
 * Rosenthal 1998; the paper's softmax experiment, Table 1) by the same
 * Robbins-Monro recursion as mh.c; fly_mala_step(..., adapt = 0) leaves it
 * frozen, so post-warm-up draws come from one fixed, exact kernel.
 *
 * The kernel caches log p and its gradient at the current point (st.lp,
 * k->grad), so a step costs one gradient evaluation, not two.  The cache
 * belongs to the target as well as to the point: when the target changes
 * under a fixed theta (the FlyMC z step changes log p(theta | z)), call
 * fly_mala_invalidate(); the next step then evaluates the current point
 * first (one extra evaluation, followed by accept()).
 *
 * Target contract (target.h): a step ends either at the point of its last
 * logp call, and then calls accept() exactly once, or at the point it
 * started from, without calling accept() (that point's cache in the target
 * is still the accepted one).  No re-evaluation is ever needed.
 */
#ifndef FLY_MALA_H
#define FLY_MALA_H

#include <stddef.h>

#include "samplers/target.h"
#include "util/err.h"
#include "util/rng.h"

typedef struct fly_mala_state {  /* everything a checkpoint needs, with grad */
  double log_eps;    /* log step size (whitened units) */
  double n_adapt;    /* adaptation steps taken */
  double lp;         /* log p at the current point, valid if have_cur */
  int    have_cur;   /* 1: st.lp and k->grad belong to the current point */
  int    pad_;       /* zero; keeps the struct free of implicit padding */
} fly_mala_state;

typedef struct fly_mala {
  size_t       P;
  const double *L;          /* P x P lower triangular, row-major; NULL = I */
  double       target_accept;   /* 0.574 */
  fly_mala_state st;
  double      *grad;        /* P: gradient at the current point (cache) */
  long         n_eval;      /* logp calls made by the last step */
  double      *prop;        /* workspaces, P each */
  double      *gprop;
  double      *e;
  double      *wg;          /* L^T grad at the current point */
  double      *wgp;         /* L^T grad at the proposal */
} fly_mala;

/* Sizes the workspaces; L is borrowed and must outlive the kernel.
 * FLY_MISUSE unless P > 0 and eps0 > 0; FLY_NOMEM.  On failure the kernel
 * holds no memory (fly_mala_free is still safe). */
fly_rc fly_mala_init(fly_mala *k, size_t P, const double *L, double eps0,
                     fly_err *err);
void   fly_mala_free(fly_mala *k);                     /* NULL: no-op */

/* Evaluate log p and its gradient at th (the current point), cache them,
 * set *lp and call tgt->accept().  One logp call. */
fly_rc fly_mala_prime(fly_mala *k, fly_target *tgt, const double *th,
                      double *lp, fly_err *err);

/* Forget the cached lp/grad (the target changed under the current point). */
void   fly_mala_invalidate(fly_mala *k);

/* One MALA step from th (in/out); *lp (in/out) is log p at th.  If the cache
 * is invalid, or *lp differs from st.lp (then the target must have changed),
 * the current point is evaluated first (fly_mala_prime).  *accepted = 1 if
 * the proposal was taken.  k->n_eval = logp calls made (1, or 2 after an
 * invalidation).  A proposal with log p = -inf, or a non-finite acceptance
 * ratio, is rejected.  Errors from the target are passed on; after one the
 * cache is invalid. */
fly_rc fly_mala_step(fly_mala *k, fly_target *tgt, fly_rng *rng, double *th,
                     double *lp, int adapt, int *accepted, fly_err *err);

/* Step size the next step uses. */
double fly_mala_eps(const fly_mala *k);

/* Checkpoint: st and the cached gradient, packed into fly_mala_ckpt_size(k)
 * bytes (native layout, like the chain's checkpoint).  Restoring both gives
 * a bit-identical continuation; restoring with have_cur = 0 instead costs
 * one extra evaluation and agrees up to the target's rounding.
 * fly_mala_ckpt_load: FLY_CORRUPT if len is wrong. */
size_t fly_mala_ckpt_size(const fly_mala *k);
void   fly_mala_ckpt_save(const fly_mala *k, void *buf);
fly_rc fly_mala_ckpt_load(fly_mala *k, const void *buf, size_t len,
                          fly_err *err);

#endif
