/*
 * slice.h -- slice sampling (Neal 2003, Ann. Statist. 31(3), 705-767;
 * the paper's robust-regression experiment, Table 1) along random
 * directions in the Laplace metric: "hit-and-run" slice sampling.
 *
 * One iteration makes n_dir univariate slice updates (default n_dir = P).
 * Each draws a direction d = L e / |e|, e ~ N(0, I) (L the Cholesky factor
 * of the Laplace covariance; NULL = identity), so d has unit length in the
 * metric M^-1 = (L L^T)^-1 and is isotropic in whitened coordinates, and
 * updates th along the line th + t d by stepping out (at most m intervals of
 * width w in total) and shrinkage (Neal 2003, Figs. 3 and 5).  The chosen
 * direction does not depend on th and d, -d are equally likely, so each
 * update leaves the target invariant.  Only log p is used, never the
 * gradient (logp is always called with grad = NULL).
 *
 * w is in whitened units (about 2.5 for a Gaussian the Laplace metric
 * fits).  During warm-up it adapts to the running mean of 3 |t1 - t0| over
 * all updates (the new and old points are both uniform on the slice, so
 * E|t1 - t0| = E[slice width] / 3, Neal's recommended w); fly_slice_step(...,
 * adapt = 0) leaves it frozen.
 *
 * The 3 |t1 - t0| rule assumes stepping out usually reaches both ends of
 * the slice; with m = 1 (no stepping out) w drifts down, still exactly.
 *
 * Cost: a variable number of logp calls per direction: one per interval end
 * tested while stepping out plus the shrinkage proposals (about 4.8 for a
 * Gaussian with the adapted w); k->n_eval reports those of the last step.
 * Every update ends at the point of its last logp call, followed by
 * accept() (target.h).
 */
#ifndef FLY_SLICE_H
#define FLY_SLICE_H

#include <stddef.h>

#include "samplers/target.h"
#include "util/err.h"
#include "util/rng.h"

typedef struct fly_slice_state {  /* everything a checkpoint needs */
  double w;          /* interval width, whitened units */
  double n_adapt;    /* adaptation updates taken (w is their running mean) */
} fly_slice_state;

typedef struct fly_slice {
  size_t       P;
  const double *L;        /* P x P lower triangular, row-major; NULL = I */
  size_t       n_dir;     /* directions per step, default P (option) */
  size_t       m;         /* max intervals when stepping out, default 32 */
  fly_slice_state st;
  long         n_eval;    /* logp calls made by the last step */
  double      *d;         /* workspaces, P each */
  double      *e;
  double      *x;
} fly_slice;

/* Sizes the workspaces; L is borrowed and must outlive the kernel; w0 > 0
 * the initial width (whitened units).  FLY_MISUSE, FLY_NOMEM. */
fly_rc fly_slice_init(fly_slice *k, size_t P, const double *L, double w0,
                      fly_err *err);
void   fly_slice_free(fly_slice *k);                    /* NULL: no-op */

/* n_dir slice updates from th (in/out) with *lp (in/out) = log p at th,
 * which must be finite (else FLY_NUMERIC).  *accepted = 1 (a slice update
 * always moves; kept for the common kernel signature).  FLY_NUMERIC also if
 * shrinkage does not end within 200 proposals (log p not deterministic, or
 * NaN-like behaviour).  Target errors are passed on; th and *lp then hold
 * the last accepted point. */
fly_rc fly_slice_step(fly_slice *k, fly_target *tgt, fly_rng *rng, double *th,
                      double *lp, int adapt, int *accepted, fly_err *err);

#endif
