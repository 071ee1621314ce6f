/*
 * chain.h -- one Markov chain of flydb: FlyMC (theta and z alternately) or
 * regular full-data MCMC, over a data set in the store.
 *
 * This is where the pieces meet: the model (likelihood, bounds), the tuned
 * bounds (MAP, Laplace covariance, moments), the store (rows on demand),
 * the z structure and bright block, and a theta kernel that sees only a
 * log density.  A chain belongs to one thread and opens its own database
 * connection; everything in fly_chain_cfg is shared read-only.
 *
 * Same configuration, chain id and seed => bit-identical iterations, and
 * fly_chain_save/restore capture the whole state (theta, z in order, the
 * bright rows' gaps, RNG, adaptation), so a resumed chain continues exactly.
 */
#ifndef FLY_CHAIN_H
#define FLY_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "flymc/buckets.h"
#include "flymc/sketch.h"
#include "models/model.h"
#include "samplers/kernel.h"
#include "tune/tune.h"
#include "util/err.h"
#include "util/prof.h"

typedef enum {         /* the z-step mode: an index into its table (chain_impl.h) */
  FLY_Z_REGULAR = 0,   /* every z_n = 1: full-data MCMC, no bounds */
  FLY_Z_EXPLICIT,      /* Algorithm 1: Gibbs on a random fraction of rows */
  FLY_Z_IMPLICIT,      /* Algorithm 2: MH flips, dark->bright by skipping */
  FLY_Z_GIBBS,         /* exact Gibbs refresh of all z by thinning */
} fly_zmode;

const char *fly_zmode_name(fly_zmode z);

typedef enum {           /* the theta kernel: an index into fly_kernel_types
                            (samplers/kernel.h), recorded in checkpoints */
  FLY_K_MH = 0,          /* random-walk Metropolis-Hastings */
  FLY_K_MALA,            /* Metropolis-adjusted Langevin */
  FLY_K_SLICE,           /* slice sampling along random directions */
  FLY_K_HMC,             /* Hamiltonian Monte Carlo, fixed leapfrog steps */
  FLY_K_NUTS,            /* the No-U-Turn sampler (multinomial, as Stan) */
} fly_kernel;

const char *fly_kernel_name(fly_kernel k);
/* The kernel called name ("mh", ...); -1 if none. */
int         fly_kernel_find(const char *name);
/* Kernel k's type table (samplers/kernel.h); NULL if k is none. */
const fly_kernel_type *fly_kernel_type_of(fly_kernel k);
/* The initial step size (slice: interval width) kernel k starts its
 * warm-up adaptation from (the table's default_step, in posterior sds
 * under the Laplace preconditioner), for P parameters and n_leap leapfrog
 * steps (HMC; 0: its default); isotropic proposals N(0, eps^2 I) start
 * 100 times smaller.  0 if k is none. */
double      fly_kernel_default_step(fly_kernel k, size_t P, size_t n_leap,
                                    int isotropic);

typedef struct fly_chain_cfg {
  const char        *db_path;
  int64_t            dataset_id;
  const fly_model   *m;
  const fly_bounds  *bounds;     /* MAP, Laplace, moments (bounds unused if regular) */
  const fly_buckets *buckets;    /* FLY_Z_GIBBS only */
  const fly_sketch  *sketch;     /* FLY_Z_GIBBS: per-row second-stage bounds, or NULL */
  int                sketch_all; /* check cached rows too (default 0: a row whose page
                                    is decoded is read, cheaper than its check);
                                    then the rows read depend on theta alone */
  const double      *Xall;       /* all rows in memory (N x W), or NULL to stream
                                    pages: regular sums over them, the FlyMC
                                    modes read their rows from them (the
                                    values the pages decode to, so the same
                                    draws) */
  const fly_pages   *data_map;   /* open handles on the data set's and bound
                                    set's pages whose maps the chain's own
                                    handles copy (fly_pages_open_like), or
                                    NULL to read them; borrowed, used at
                                    fly_chain_open only */
  const fly_pages   *bound_map;
  int64_t            N;
  size_t             W;          /* values per stored row */
  fly_zmode          z;
  double             z_param;    /* explicit: fraction; implicit: q_db */
  double             scan_frac;  /* gibbs: full scan when E[candidates] > scan_frac N */
  int                isotropic;  /* proposals N(0, eps^2 I) instead of Laplace-shaped */
  fly_kernel         kernel;     /* theta kernel */
  double             eps0;       /* initial step size (slice: interval width) */
  int64_t            n_warmup;   /* warm-up iterations (HMC's adaptation windows) */
  int                n_leap;     /* HMC leapfrog steps */
  int                init_map;   /* start at the MAP instead of a Laplace draw */
  int64_t            theta_steps; /* theta updates per z update (0 means 1; regular: 1) */
  size_t             cache_bytes;
} fly_chain_cfg;

typedef struct fly_iter_stats {
  double  lp;          /* log p(theta, z | x) + const (regular: log posterior) */
  int64_t n_bright;
  int64_t n_lik;       /* per-datum likelihood evaluations this iteration */
  int64_t n_reads;     /* rows read from the store this iteration */
  int64_t n_cand;      /* thinning candidates (gibbs) */
  int64_t n_viol;      /* candidates whose exact probability exceeded the
                          bound (must stay 0; counted, never hidden) */
  int64_t accepted;    /* theta proposals accepted this iteration (0..theta_steps) */
  double  eps;         /* step size used (by the first theta update) */
  int     scanned;     /* the z step fell back to a sequential scan */
  /* The theta kernel's own statistics (kernel.h), has_kstats = 0 for a
   * kernel without them.  Over theta_steps updates: the largest tree
   * depth, the leapfrogs summed, divergent if any update diverged, the
   * energy of the last and the mean acceptance statistic. */
  int     has_kstats;
  fly_kernel_stats kstats;
} fly_iter_stats;

typedef struct fly_chain fly_chain;

fly_rc fly_chain_open(const fly_chain_cfg *cfg, int chain_id, uint64_t seed,
                      fly_chain **pc, fly_err *err);
void   fly_chain_close(fly_chain *c);                 /* NULL: no-op */

/* The chain reads its pages in one read transaction that stays open
 * between iterations (fly_pages_hold), which saves two fcntl calls and a
 * BLOB statement at every z step.
 * Release it often, and before another connection commits (the draws), so
 * the WAL can be checkpointed; the next read opens a fresh one. */
void   fly_chain_release(fly_chain *c);

/* Initial state: theta (MAP or a draw from the Laplace approximation) and,
 * for FlyMC, z drawn exactly from its conditional: by one thinned z step
 * with --z gibbs, by one scan otherwise. */
fly_rc fly_chain_init(fly_chain *c, fly_err *err);

/* One iteration: cfg->theta_steps theta updates (each leaves p(theta | z)
 * invariant), then the z step.  adapt: warm-up adaptation on. */
fly_rc fly_chain_step(fly_chain *c, int adapt, fly_iter_stats *s, fly_err *err);

const double *fly_chain_theta(const fly_chain *c);
/* What gibbs scans keep of every row, computed by the first scan: 0
 * nothing, 1 its bound coefficients, 2 also an f32 copy of the row for the
 * model's screen (model.h: fly_model_coef.scan); kept when they fit half the cache
 * the data pages leave. */
int           fly_chain_keeps_coef(const fly_chain *c);
/* Dark rows of gibbs scans that the model's screen (model.h: fly_model_coef.scan)
 * ruled out without evaluating their likelihood, and those it let through
 * to be evaluated, over all iterations. */
void          fly_chain_screen_counts(const fly_chain *c, int64_t *ruled_out,
                                      int64_t *evaluated);
/* The log density the theta kernel sees (FlyMC: log p(theta | z) with the
 * current z; regular: the log posterior), with its gradient.  Borrowed,
 * valid while the chain is open. */
struct fly_target;
struct fly_target *fly_chain_target(fly_chain *c);
size_t        fly_chain_dim(const fly_chain *c);

/* The exact full-data log posterior log p(theta) + sum_n log L_n(theta) at
 * the current theta, by one sequential scan of the pages (O(N); does not
 * touch the chain's RNG or state).  *seconds: time it took. */
fly_rc fly_chain_full_logpost(fly_chain *c, double *lp, double *seconds,
                              fly_err *err);

/* For tests of the z updates: set theta (the bright rows' gaps are
 * re-evaluated), run only the z step, and read z. */
fly_rc fly_chain_set_theta(fly_chain *c, const double *th, fly_err *err);
fly_rc fly_chain_zstep(fly_chain *c, fly_iter_stats *s, fly_err *err);
int    fly_chain_is_bright(const fly_chain *c, int64_t n);

/* Checkpoint: *blob (caller frees with fly_free) of *len bytes. */
fly_rc fly_chain_save(const fly_chain *c, void **blob, size_t *len, fly_err *err);
/* Restore a checkpoint made by a chain of the same configuration.
 * FLY_CORRUPT if the blob is malformed. */
fly_rc fly_chain_restore(fly_chain *c, const void *blob, size_t len, fly_err *err);

/* The chain's profile (util/prof.h), off until fly_prof_start: the theta
 * step, the z step, row reads and page fetches are charged to their parts;
 * callers push their own parts (the trace writer) on the same stack.
 * Borrowed, valid while the chain is open; one thread at a time. */
fly_prof *fly_chain_prof(fly_chain *c);

#endif
