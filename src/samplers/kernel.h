/*
 * kernel.h -- the theta kernels as const type tables (as GSL's
 * gsl_rng_type): a kernel is a name, the size of its state and the
 * functions that act on that state.  A chain holds one
 * `const fly_kernel_type *` and state_size bytes of state, and calls
 * through the table; it never names a kernel.
 *
 * Adding a kernel: its file in src/samplers/ defines one
 * `const fly_kernel_type fly_kernel_<name>` and kernel.c lists it in
 * fly_kernel_types (the position is its number, fly_kernel in
 * flymc/chain.h, which checkpoints record).
 *
 * Every kernel meets the target contract of target.h: a step ends at the
 * point of its last logp call and calls accept() once, or at the point it
 * started from without calling accept().  A kernel allocates only in init.
 */
#ifndef FLY_KERNEL_H
#define FLY_KERNEL_H

#include <stddef.h>

#include "samplers/target.h"
#include "util/err.h"
#include "util/rng.h"

/* What a kernel is built from; the fields a kernel has no use for are
 * ignored. */
typedef struct fly_kernel_cfg {
  size_t        P;        /* dimension of theta, > 0 */
  const double *L;        /* P x P lower-triangular preconditioner, row-major
                             (NULL = identity); borrowed, must outlive the kernel */
  double        eps0;     /* initial step size (slice: interval width), > 0 */
  size_t        n_leap;   /* HMC leapfrog steps (0: the kernel's default) */
  size_t        n_adapt;  /* adapting steps the caller will run (HMC's metric
                             windows; 0: no metric adaptation) */
} fly_kernel_cfg;

/* Statistics of a kernel's last step, for kernels that report them (NUTS,
 * as Stan reports them). */
typedef struct fly_kernel_stats {
  int    treedepth;      /* tree depth reached */
  long   n_leapfrog;     /* leapfrog steps taken (gradient evaluations) */
  int    divergent;      /* 1 if the trajectory ended at a divergence */
  double energy;         /* Hamiltonian at the sampled point */
  double accept_stat;    /* mean of min(1, exp(H0 - H)) over the trajectory */
} fly_kernel_stats;

typedef struct fly_kernel_type {
  const char *name;                   /* "mh", as --sampler spells it */
  size_t      state_size;             /* bytes of state the caller provides */
  /* The initial step size (slice: width) in the kernel's units, for P
   * parameters with the Laplace preconditioner (posterior sds), and n_leap
   * leapfrog steps where the kernel has them. */
  double (*default_step)(size_t P, size_t n_leap);
  /* Set up the state (state_size bytes, any content) and size its
   * workspaces.  FLY_MISUSE (bad P or eps0), FLY_NOMEM.  free is safe after
   * a failed init and on zero-filled state. */
  fly_rc (*init)(void *k, const fly_kernel_cfg *kc, fly_err *err);
  void   (*free)(void *k);
  /* One transition from th (in/out), *lp (in/out) the log density at th.
   * *accepted = 1 if the state moved to a proposal. */
  fly_rc (*step)(void *k, fly_target *tgt, fly_rng *rng, double *th,
                 double *lp, int adapt, int *accepted, fly_err *err);
  /* The step size (slice: width) the next step with this adapt flag uses. */
  double (*eps)(const void *k, int adapt);
  /* The target changed under the current point: forget what the kernel
   * cached of it (NULL: the kernel caches nothing). */
  void   (*invalidate)(void *k);
  /* Checkpoint: everything a bit-identical continuation needs, in
   * ckpt_size(k) bytes (native layout).  ckpt_load: FLY_CORRUPT if len is
   * wrong or the values are bad. */
  size_t (*ckpt_size)(const void *k);
  void   (*ckpt_save)(const void *k, void *buf);
  fly_rc (*ckpt_load)(void *k, const void *buf, size_t len, fly_err *err);
  /* The statistics of the last step (NULL: the kernel has none). */
  void   (*stats)(const void *k, fly_kernel_stats *out);
} fly_kernel_type;

extern const fly_kernel_type fly_kernel_mh;     /* mh.c */
extern const fly_kernel_type fly_kernel_mala;   /* mala.c */
extern const fly_kernel_type fly_kernel_slice;  /* slice.c */
extern const fly_kernel_type fly_kernel_hmc;    /* hmc.c */
extern const fly_kernel_type fly_kernel_nuts;   /* nuts.c */

/* Every kernel, NULL-terminated; a kernel's index is its fly_kernel number. */
extern const fly_kernel_type *const fly_kernel_types[];

/* The kernel called name, or NULL. */
const fly_kernel_type *fly_kernel_type_find(const char *name);

#endif
