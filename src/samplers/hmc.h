/*
 * hmc.h -- Hamiltonian Monte Carlo (Duane et al. 1987; Neal 2011, "MCMC
 * using Hamiltonian dynamics") with a fixed number of leapfrog steps, in the
 * whitened coordinates of the Laplace approximation.
 *
 * Metric: th = L u (L the Cholesky factor of the Laplace covariance; NULL =
 * identity), and HMC runs in u with a diagonal mass matrix diag(1/minv):
 * momentum r ~ N(0, diag(1/minv)), kinetic energy sum_i minv_i r_i^2 / 2.
 * In th this is the mass matrix M = L^-T diag(1/minv) L^-1, i.e. M^-1 =
 * L diag(minv) L^T: the Laplace covariance itself while minv = 1.  The
 * leapfrog is written in th (grad_u = L^T grad_th, dth = L du), so no
 * triangular solve is needed in a step.
 *
 * Warm-up (adapt = 1):
 *  - step size eps by dual averaging toward acceptance 0.8 (Hoffman &
 *    Gelman 2014, JMLR 15, Algorithm 5: gamma 0.05, t0 10, kappa 0.75,
 *    mu = log(10 eps0));
 *  - if n_warmup >= 20 is set, minv by Stan's windowed variance estimate of
 *    the whitened draws u = L^-1 th (buffers of 75 / 25 doubling / 50
 *    iterations, scaled down to 15% / 75% / 10% for short warm-ups;
 *    regularised as Stan does: n/(n+5) var + 1e-3 * 5/(n+5)); dual averaging
 *    restarts at every window end.  n_warmup = 0 (the default) keeps minv = 1.
 * Afterwards (adapt = 0) eps is frozen at the dual-averaging average
 * exp(log_eps_bar) and minv is fixed: an exact HMC kernel.
 * Every step multiplies eps by a uniform jitter in [1 - jitter, 1 + jitter]
 * (default 0.1) and, with rand_leap (the default), takes a number of
 * leapfrog steps uniform on 1..n_leap, both drawn from the chain RNG,
 * against periodic trajectories (a fixed path length can return each
 * trajectory near its start; hmc.c).
 *
 * Like MALA (mala.h) the kernel caches log p and its gradient at the current
 * point: invalidate the cache with fly_hmc_invalidate() whenever the target
 * changes under a fixed theta (the FlyMC z step).
 *
 * Target contract (target.h): the step ends either at the last leapfrog
 * point -- the point of its last logp call -- and calls accept() once, or,
 * rejected or divergent, at the point it started from, without accept():
 * the target's accepted cache already belongs to that point, so no
 * re-evaluation is needed (cost: none).
 */
#ifndef FLY_HMC_H
#define FLY_HMC_H

#include <stddef.h>

#include "samplers/target.h"
#include "util/err.h"
#include "util/rng.h"

typedef struct fly_hmc_state {  /* everything a checkpoint needs, with the arrays */
  double log_eps;      /* log step size while adapting */
  double log_eps_bar;  /* dual-averaging average: the frozen log step size */
  double h_bar;        /* dual averaging: running mean of (0.8 - a_t) */
  double mu;           /* dual averaging: shrinkage point log(10 eps) */
  double n_da;         /* dual-averaging steps since the last restart */
  double n_adapt;      /* adaptation steps taken (the warm-up counter) */
  double win_next;     /* warm-up step at which the current metric window ends */
  double win_size;     /* its length, steps */
  double n_win;        /* draws in the variance estimate of this window */
  double lp;           /* log p at the current point, valid if have_cur */
  int    have_cur;     /* 1: st.lp and k->grad belong to the current point */
  int    pad_;         /* zero */
} fly_hmc_state;

typedef struct fly_hmc {
  size_t       P;
  const double *L;          /* P x P lower triangular, row-major; NULL = I */
  size_t       n_leap;      /* leapfrog steps, default 16 (option); with
                               rand_leap the most a step takes */
  int          rand_leap;   /* 1 (default): l uniform on 1..n_leap a step;
                               0: l = n_leap */
  size_t       leap_last;   /* l of the last step */
  double       jitter;      /* relative eps jitter, default 0.1, in [0, 1) */
  double       target_accept;   /* 0.8 */
  size_t       n_warmup;    /* number of adapting steps the caller will run,
                               for the metric windows; 0 = no metric
                               adaptation (the default) */
  fly_hmc_state st;
  double      *grad;        /* P: gradient at the current point (cache) */
  double      *minv;        /* P: inverse mass, diagonal, whitened units */
  double      *wmean;       /* P: Welford mean of u in the current window */
  double      *wm2;         /* P: Welford sum of squares */
  long         n_eval;      /* logp calls made by the last step */
  int          divergent;   /* last step left the support (log p = -inf) or
                               met a non-finite gradient */
  double      *x, *g, *r, *t;   /* workspaces, P each */
} fly_hmc;

/* Sizes the workspaces; L is borrowed and must outlive the kernel.  Set the
 * options (n_leap, rand_leap, jitter, n_warmup) before the first step.  FLY_MISUSE
 * unless P > 0 and eps0 > 0; FLY_NOMEM. */
fly_rc fly_hmc_init(fly_hmc *k, size_t P, const double *L, double eps0,
                    fly_err *err);
void   fly_hmc_free(fly_hmc *k);                        /* NULL: no-op */

/* Evaluate log p and gradient at th, cache them, set *lp, accept().  FLY_NUMERIC
 * if log p is -inf or the gradient is not finite there. */
fly_rc fly_hmc_prime(fly_hmc *k, fly_target *tgt, const double *th,
                     double *lp, fly_err *err);
void   fly_hmc_invalidate(fly_hmc *k);

/* One HMC transition from th (in/out), *lp (in/out) log p at th; re-primes
 * first if the cache is invalid or *lp differs from st.lp.  leap_last logp
 * calls (fewer if divergent, +1 after invalidation).  FLY_MISUSE if
 * n_leap == 0 or jitter is outside [0, 1). */
fly_rc fly_hmc_step(fly_hmc *k, fly_target *tgt, fly_rng *rng, double *th,
                    double *lp, int adapt, int *accepted, fly_err *err);

/* One warm-up adaptation step after a transition that ended at th with
 * acceptance statistic a (clipped to 1): dual averaging, then the metric
 * windows.  fly_hmc_step calls it when adapt is set; NUTS (nuts.c), which
 * shares this state, calls it with its own statistic. */
void   fly_hmc_adapt(fly_hmc *k, const double *th, double a);

/* The (unjittered) step size a step with this adapt flag uses. */
double fly_hmc_eps(const fly_hmc *k, int adapt);

/* Checkpoint: st, grad, minv, wmean, wm2 in fly_hmc_ckpt_size(k) bytes
 * (native layout).  Load: FLY_CORRUPT if len is wrong or values are bad. */
size_t fly_hmc_ckpt_size(const fly_hmc *k);
void   fly_hmc_ckpt_save(const fly_hmc *k, void *buf);
fly_rc fly_hmc_ckpt_load(fly_hmc *k, const void *buf, size_t len, fly_err *err);

#endif
