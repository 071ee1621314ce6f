/*
 * zstep_regular.c -- the regular mode (chain_impl.h): every z_n = 1, no z
 * step, no bounds.  Full-data MCMC, the baseline FlyMC is measured against:
 * the theta kernel sees the log posterior log p(theta) + sum_n log L_n,
 * from all rows in memory (cfg->Xall) or page by page.
 *
 * State: none.  Cost: N likelihood evaluations per target evaluation
 * (and, streaming, N rows read): for a model with a fused full-data sum
 * (model.h: full), one product with the rows for log p and a second, with
 * their transpose, for its gradient.
 */
#include "flymc/chain_impl.h"

/* Streaming, the data pages get the whole cache. */
static fly_rc regular_open(fly_chain *c, fly_err *err)
{
  fly_rc rc = fly_zstep_no_sketch(c, err);
  if( rc == FLY_OK && !c->cfg->Xall )
    rc = fly_zstep_open_data(c, c->cfg->cache_bytes, err);
  return rc;
}

static fly_rc regular_logp(void *ctx, const double *th, double *lp, double *grad,
                           fly_err *err)
{
  fly_chain *c = ctx;
  int began = !c->cfg->Xall && fly_db_read_begin(c->db);
  fly_rc rc = fly_chain_full_sum(c, th, lp, grad, err);
  fly_db_read_end(c->db, began);
  if( !c->cfg->Xall ) c->n_reads += c->cfg->N;
  c->n_lik += c->cfg->N;
  return rc;
}

static void regular_accept(void *ctx) { (void)ctx; }

const fly_zstep_type fly_zstep_regular = {
  "regular", 0, 1, regular_open, NULL, NULL, NULL, regular_logp, regular_accept
};
