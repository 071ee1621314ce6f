/*
 * chain_impl.h -- inside one chain: the state that chain.c (targets, life
 * cycle, checkpoints), the z-step modes (zstep_*.c), their shared scan
 * (zstep.c) and chainbuf.c (the buffers they grow) share.  Not for other
 * modules: they see a chain through chain.h.
 *
 * A z-step mode is a const table (fly_zstep_type, as gsl_rng_type): what it
 * opens, how it draws z_0 and how it steps, and the target its theta kernel
 * sees.  What only one mode uses lives in that mode's state (c->zs,
 * state_size bytes, zero-filled), not in fly_chain.  Adding a mode is one
 * new file and one line in fly_zstep_types (zstep.c).
 */
#ifndef FLY_CHAIN_IMPL_H
#define FLY_CHAIN_IMPL_H

#include "flymc/bright.h"
#include "flymc/chain.h"
#include "samplers/kernel.h"
#include "samplers/target.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/rng.h"

/* What scans keep of every row (chain.h: fly_chain_keeps_coef), and their
 * screened passes' buffers.  Owned by the mode that keeps them (gibbs); a
 * chain whose scans keep nothing has c->keep NULL. */
typedef struct fly_zscan {
  double    *scoef;           /* every row's bound coefficients (N x nc), or NULL */
  float     *sxn;             /* with a screen (model.h: fly_model_coef.scan): every row's
                                 features' norm (N), or NULL */
  float     *sxf;             /* and every row in f32 (N x W) where it fits, or NULL */
  int        ready;           /* scoef (sxn, sxf) filled by a complete scan */
  int64_t    n_screened;      /* dark rows a screen ruled out (all iterations) */
  int64_t    n_survived;      /* dark rows a screen let through (all iterations) */
  size_t     cap;             /* rows of the buffers below */
  double    *u;               /* each screened row's uniform */
  double    *ub;              /* each screened row's bound on p */
  double    *ccf;             /* each survivor's kept coefficients (nc) */
  float     *cxf;             /* a page's rows in f32 (W) */
} fly_zscan;

typedef struct fly_zstep_type {
  const char *name;           /* "gibbs", as --z spells it (fly_zmode_name) */
  size_t      state_size;     /* bytes of c->zs; 0: none */
  int         all_bright;     /* 1: every z_n = 1 (regular MCMC): no bounds,
                                 no bright block, nothing checkpointed of z */
  /* Open what the mode reads (page handles, c->br, its state), given the
   * chain's fields up to db.  FLY_MISUSE for a configuration it cannot run. */
  fly_rc (*open)(fly_chain *c, fly_err *err);
  /* Free what open allocated in c->zs (safe on zero-filled state), or NULL. */
  void   (*close)(fly_chain *c);
  /* z_0 ~ p(z | theta_0), every row dark before (NULL: no z), and one z
   * step (NULL: none); both inside the caller's read transaction. */
  fly_rc (*init)(fly_chain *c, fly_err *err);
  fly_rc (*step)(fly_chain *c, fly_err *err);
  /* The target the theta kernel sees (target.h), ctx the chain. */
  fly_rc (*logp)(void *ctx, const double *th, double *lp, double *grad,
                 fly_err *err);
  void   (*accept)(void *ctx);
} fly_zstep_type;

extern const fly_zstep_type fly_zstep_regular;    /* zstep_regular.c */
extern const fly_zstep_type fly_zstep_explicit;   /* zstep_explicit.c */
extern const fly_zstep_type fly_zstep_implicit;   /* zstep_implicit.c */
extern const fly_zstep_type fly_zstep_gibbs;      /* zstep_gibbs.c */
/* Every mode, NULL-terminated; a mode's index is its fly_zmode (zstep.c). */
extern const fly_zstep_type *const fly_zstep_types[];

struct fly_chain {
  const fly_chain_cfg *cfg;
  const fly_model *m;
  int        id;
  size_t     P, W, nxi, bw;   /* params, data width, xi per row, bound width */
  size_t     nc;              /* bound coefficients per bright row (0: none) */
  double    *tcoef;           /* nc: one row's coefficients */
  fly_db    *db;
  fly_pages *data, *bnd;
  fly_rng    rng;
  const fly_kernel_type *kt;  /* the theta kernel (cfg->kernel) */
  void      *ks;              /* its state, kt->state_size bytes */
  const fly_zstep_type *zt;   /* the z-step mode (cfg->z) */
  void      *zs;              /* its state, zt->state_size bytes, or NULL */
  fly_zscan *keep;            /* what scans keep (in zs), or NULL */
  fly_target tgt;
  double    *th;              /* current theta */
  double     lp;              /* log density of the current state */
  double     base, base_new;  /* log prior + collapsed bounds: current / last evaluated */
  fly_bright br;              /* FlyMC modes: the bright rows */
  /* evaluation buffers */
  double    *logL, *logB, *work, *ones;
  double    *sd;              /* 2 ev_cap: eval_sd's, for grad_sd (model.h) */
  size_t     ev_cap;
  /* candidates: rows read in one batch, with their data, bound rows,
   * xi and gaps */
  int64_t   *cid;
  double    *cX, *cB, *cgap;
  float     *cxi;
  size_t     c_cap;
  /* counters of the current iteration */
  int64_t    n_lik, n_reads, n_cand, n_viol;
  int        scanned;
  fly_prof   prof;            /* exclusive times (fly_chain_prof); off by default */
};

/* Grow array ptr to cap elements of k items each (contents kept); ok = 0
 * if that fails, ptr then untouched. */
#define FLY_GROW(ptr, cap, k, ok) do{                                   \
    void *q_ = fly_realloc_array((ptr), (cap), (k) * sizeof *(ptr));    \
    if( q_ ) (ptr) = q_; else (ok) = 0; }while(0)

/* Evaluation buffers (logL, logB, work, ones) for n rows; they only grow. */
fly_rc fly_chain_ev_reserve(fly_chain *c, size_t n, fly_err *err);
/* Candidate buffers for n rows, and evaluation buffers to match. */
fly_rc fly_chain_cand_reserve(fly_chain *c, size_t n, fly_err *err);

/* Copy data rows ids[0..n) into out (n x W) in the caller's order: from
 * cfg->Xall when the rows are in memory, else through the data pages
 * (fly_pages_read_rows; FLY_RANGE for an id out of range).  The values are
 * the same either way (Xall holds the pages decoded). */
fly_rc fly_chain_read_data(fly_chain *c, const int64_t *ids, size_t n, double *out,
                           fly_err *err);
/* Whether reading row `row` costs a memcpy, not a page fetch: 1 with
 * cfg->Xall, else fly_pages_row_cached. */
int    fly_chain_row_cached(const fly_chain *c, int64_t row);

/* The FlyMC target (chain.c): log p(theta | z) with the current z, and
 * accept(), which makes the last evaluated gaps current. */
fly_rc fly_chain_flymc_logp(void *ctx, const double *th, double *lp, double *grad,
                            fly_err *err);
void   fly_chain_flymc_accept(void *ctx);
/* log p(th) + sum over all rows of log L (and its gradient if grad), from
 * cfg->Xall or by a scan of the data pages (chain.c). */
fly_rc fly_chain_full_sum(fly_chain *c, const double *th, double *out, double *grad,
                          fly_err *err);

/* Shared by the modes (zstep.c). */
/* Open the data pages with share bytes of cache, held between iterations
 * (fly_chain_release). */
fly_rc fly_zstep_open_data(fly_chain *c, size_t share, fly_err *err);
/* Open the bound pages with share bytes of cache, the bright block and
 * tcoef: what every FlyMC mode reads. */
fly_rc fly_zstep_open_bright(fly_chain *c, size_t share, fly_err *err);
/* FLY_MISUSE if the configuration carries a sketch, which only gibbs reads. */
fly_rc fly_zstep_no_sketch(const fly_chain *c, fly_err *err);
/* open for a mode without an index: no sketch, the data pages, then the
 * bound pages and bright block (explicit, implicit). */
fly_rc fly_zstep_open_flymc(fly_chain *c, fly_err *err);
/* Read the data (and, unless xi_known, bound) rows of candidates
 * cid[0..k) and evaluate their gaps at theta into cgap; xi_known: their xi
 * are in cxi already. */
fly_rc fly_zstep_read(fly_chain *c, size_t k, int xi_known, fly_err *err);
/* Row `row` turns bright; its bound coefficients are computed here, once. */
fly_rc fly_zstep_brighten(fly_chain *c, int64_t row, const double *x,
                          const float *xi, double gap, fly_err *err);
/* Gibbs draw for the rows that were bright at the start of a z step:
 * positions B_old-1 down to 0 (zstep.c's file comment). */
void   fly_zstep_bright_gibbs(fly_chain *c, int64_t B_old);
/* Exact Gibbs for every row by a sequential scan, keeping and using what
 * c->keep holds: the first z step of the explicit and implicit modes, and
 * gibbs' own step where thinning would read more rows than a scan. */
fly_rc fly_zstep_scan(fly_chain *c, fly_err *err);

#endif
