/*
 * nuts.h -- the No-U-Turn sampler as Stan runs it (Hoffman & Gelman 2014;
 * Betancourt 2017, "A Conceptual Introduction to Hamiltonian Monte Carlo",
 * appendix A; Stan's base_nuts): multinomial sampling over a trajectory
 * that doubles forwards or backwards at random, biased progressive sampling
 * between subtrees, and the generalised no-U-turn criterion on the summed
 * momenta, checked within every subtree and across each merge (the extra
 * checks of Stan >= 2.21).  Depth at most max_depth (10); a leapfrog point
 * whose energy exceeds the start's by more than max_dH (1000), or whose log
 * density or gradient is not finite, is divergent and ends the trajectory.
 *
 * Metric, step size and warm-up are HMC's (hmc.h), shared through an
 * embedded fly_hmc: leapfrog in the whitened coordinates th = L u with the
 * diagonal inverse mass minv (the Laplace covariance while minv = 1); during
 * warm-up, dual averaging of eps toward an acceptance statistic of 0.8 (the
 * mean over the trajectory of min(1, exp(H0 - H))) and Stan's windowed
 * variance estimate of u, dual averaging restarting at each window end;
 * afterwards everything is frozen.  No eps jitter (Stan's default).  The
 * checkpoint is HMC's: it holds the whole adaptation state and the cache.
 *
 * Target contract (target.h): the sampled point is in general not the last
 * leapfrog point, so a step that moves re-evaluates log p at the new point
 * (one extra logp call) and then calls accept(), unless the sample is the
 * last point evaluated; a step that stays calls neither.
 *
 * Per-step statistics (depth, leapfrogs, divergent, energy, accept_stat)
 * are kept in the kernel for the caller to read; the iteration table does
 * not store them yet (a schema change).
 */
#ifndef FLY_NUTS_H
#define FLY_NUTS_H

#include <stddef.h>

#include "samplers/hmc.h"
#include "samplers/target.h"
#include "util/err.h"
#include "util/rng.h"

#define FLY_NUTS_MAX_DEPTH 10

typedef struct fly_nuts {
  fly_hmc h;             /* eps, minv, adaptation, current-point cache, checkpoint */
  size_t  P;
  size_t  max_depth;     /* tree depth limit, 1..FLY_NUTS_MAX_DEPTH, default 10 */
  double  max_dH;        /* divergence threshold on H - H0, default 1000 */
  /* statistics of the last step */
  int     depth;         /* tree depth reached */
  long    n_leapfrog;    /* leapfrog steps taken */
  int     divergent;     /* 1 if the trajectory ended at a divergence */
  double  energy;        /* H at the sampled point */
  double  accept_stat;   /* mean of min(1, exp(H0 - H)) over the trajectory */
  /* workspaces, all in the one block ws, sized by fly_nuts_init */
  double *ws;
  double *zx, *zr, *zg, zlp;   /* integrator point: th, u-momentum, th-gradient, log p */
  double *fx, *fr, *fg, flp;   /* forward end of the trajectory */
  double *bx, *br, *bg, blp;   /* backward end */
  double *sx, slp, sH; long sidx;  /* the sample, its energy and leapfrog
                                      number (0 = the start) */
  double *p_ff, *s_ff, *p_fb, *s_fb, *p_bf, *s_bf, *p_bb, *s_bb;  /* end momenta
                                  p and p# = minv .* p of the two halves */
  double *rho, *rho_f, *rho_b, *rho_e, *t;
  double *loc;                 /* per depth: 7 vectors of P for build() */
  double *qx;                  /* proposal slots, FLY_NUTS_MAX_DEPTH + 2 of P */
  double  q_lp[FLY_NUTS_MAX_DEPTH + 2];
  double  q_H[FLY_NUTS_MAX_DEPTH + 2];  /* the proposals' energies */
  long    q_idx[FLY_NUTS_MAX_DEPTH + 2];
  double  H0;                  /* energy at the start of the step */
  double  sum_metro;           /* sum of min(1, exp(H0 - H)) over leapfrogs */
} fly_nuts;

/* Sizes the workspaces; L is borrowed and must outlive the kernel; n_adapt
 * adapting steps will be run (0: step size only).  FLY_MISUSE unless P > 0
 * and eps0 > 0; FLY_NOMEM. */
fly_rc fly_nuts_init(fly_nuts *k, size_t P, const double *L, double eps0,
                     size_t n_adapt, fly_err *err);
void   fly_nuts_free(fly_nuts *k);                      /* NULL: no-op */

/* One NUTS transition from th (in/out), *lp (in/out) log p at th.  At most
 * 2^max_depth logp calls, +1 to prime after invalidation, +1 at the new
 * point.  *accepted = 1 if the state moved.  FLY_MISUSE for a bad
 * max_depth; the target's codes. */
fly_rc fly_nuts_step(fly_nuts *k, fly_target *tgt, fly_rng *rng, double *th,
                     double *lp, int adapt, int *accepted, fly_err *err);

#endif
