/*
 * chain_impl.h -- inside one chain: the state that chain.c (targets, life
 * cycle, checkpoints), zstep.c (the z step's modes) and chainbuf.c (the
 * buffers both grow) share.  Not for other modules: they see a chain
 * through chain.h.
 */
#ifndef FLY_CHAIN_IMPL_H
#define FLY_CHAIN_IMPL_H

#include "flymc/bright.h"
#include "flymc/chain.h"
#include "samplers/hmc.h"
#include "samplers/mala.h"
#include "samplers/mh.h"
#include "samplers/slice.h"
#include "samplers/target.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/rng.h"

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
  fly_mh     mh;            /* the theta kernel in use is cfg->kernel */
  fly_mala   mala;
  fly_slice  slice;
  fly_hmc    hmc;
  fly_target tgt;
  double    *th;              /* current theta */
  double     lp;              /* log density of the current state */
  double     base, base_new;  /* log prior + collapsed bounds: current / last evaluated */
  double     lp_new;          /* regular: last evaluated */
  double    *L;               /* proposal shape (Cholesky of cov) or NULL */
  fly_bright br;
  /* evaluation buffers */
  double    *logL, *logB, *work, *ones;
  size_t     ev_cap;
  /* candidates */
  int64_t   *cid;
  int64_t   *cpos;            /* gibbs: each candidate's position in the bucket index */
  double    *cX, *cB, *cgap, *cpbar;
  double    *ccf;             /* screened scans: each candidate's kept coefficients */
  float     *cxf;             /* page scans with a screen: the page's rows in f32 */
  double    *cu, *cph;        /* gibbs: each candidate's uniform and bound */
  uint32_t  *cbk;             /* gibbs: each candidate's bucket */
  float     *cxi;
  size_t     c_cap;
  double    *pbar;            /* gibbs: thinning probability of each bucket */
  double    *scoef;           /* gibbs scans: every row's bound coefficients, or NULL */
  float     *sxn;             /* gibbs scans with a screen (model.h: scan_upper) and
                                 kept coefficients: every row's features' norm */
  float     *sxf;             /* and every row in f32 where it fits, or NULL */
  int        scoef_ready;     /* scoef filled by a complete scan */
  fly_sketch_at skat;         /* gibbs with a sketch: th - th_map in its coordinates */
  /* counters of the current iteration */
  int64_t    n_lik, n_reads, n_cand, n_viol;
  int64_t    n_screened, n_survived;  /* scans' dark rows a screen ruled out /
                                       let through (all iterations) */
  int        scanned;
  fly_prof   prof;            /* exclusive times (fly_chain_prof); off by default */
};

/* Evaluation buffers (logL, logB, work, ones) for n rows; they only grow. */
fly_rc fly_chain_ev_reserve(fly_chain *c, size_t n, fly_err *err);
/* Candidate buffers for n rows, and evaluation buffers to match. */
fly_rc fly_chain_cand_reserve(fly_chain *c, size_t n, fly_err *err);

/* The z step's modes (zstep.c), each inside the caller's read transaction.
 * fly_zstep_scan is exact Gibbs for every row by a sequential scan: the
 * first z step of the explicit and implicit modes, and gibbs' own step
 * where thinning would read more rows than a scan. */
fly_rc fly_zstep_explicit(fly_chain *c, fly_err *err);
fly_rc fly_zstep_implicit(fly_chain *c, fly_err *err);
fly_rc fly_zstep_gibbs(fly_chain *c, fly_err *err);
fly_rc fly_zstep_scan(fly_chain *c, fly_err *err);

#endif
