/*
 * zstep_explicit.c -- the explicit z-step mode (chain_impl.h): Algorithm 1
 * of the FlyMC paper.
 *
 * ceil(alpha N) rows (alpha = cfg->z_param) drawn with replacement get a
 * Gibbs update, in draw order: bright ones from the bright block, dark ones
 * read in one batch.  z_0 is one scan (zstep.c).
 *
 * State: the number of draws and each draw's slot in the candidate
 * buffers, sized at open.  Cost: ceil(alpha N) draws, the dark ones read
 * and evaluated.
 */
#include <math.h>
#include <string.h>

#include "flymc/chain_impl.h"
#include "util/mem.h"

typedef struct explicit_state {
  size_t  k;          /* rows drawn a step: ceil(alpha N) */
  size_t *slot;       /* k: where each draw's data is ((size_t)-1: its own slot) */
} explicit_state;

static fly_rc explicit_open(fly_chain *c, fly_err *err)
{
  explicit_state *e = c->zs;
  fly_rc rc = fly_zstep_open_flymc(c, err);
  if( rc ) return rc;
  e->k = (size_t)ceil(c->cfg->z_param * (double)c->cfg->N);
  if( !(e->slot = fly_alloc_array(e->k ? e->k : 1, sizeof *e->slot)) )
    return fly_fail(err, FLY_NOMEM, "explicit z step of %zu rows", e->k);
  return fly_chain_cand_reserve(c, 2 * e->k, err);   /* draws, and the dark ones read */
}

static void explicit_close(fly_chain *c)
{
  explicit_state *e = c->zs;
  fly_free(e->slot);
}

static fly_rc explicit_step(fly_chain *c, fly_err *err)
{
  explicit_state *e = c->zs;
  int64_t N = c->cfg->N;
  size_t k = e->k, nread = 0;
  fly_rc rc;
  if( k == 0 ) return FLY_OK;
  if( (rc = fly_chain_cand_reserve(c, 2 * k, err)) ) return rc;
  /* Draw the rows; bright ones are copied from the block (no read), dark
   * ones are read in one batch into slots k.. and moved into place. */
  for(size_t j = 0; j < k; j++) c->cid[j] = (int64_t)fly_rng_below(&c->rng, (uint64_t)N);
  size_t *slot = e->slot;
  for(size_t j = 0; j < k; j++){
    int64_t n = c->cid[j];
    if( fly_zset_is_bright(c->br.z, n) ){
      int64_t pos = fly_zset_pos(c->br.z, n);
      memcpy(c->cX + j * c->W, c->br.X + (size_t)pos * c->W, c->W * sizeof(double));
      memcpy(c->cxi + j * c->nxi, c->br.xi + (size_t)pos * c->nxi, c->nxi * sizeof(float));
      c->cgap[j] = c->br.gap[pos];
      slot[j] = (size_t)-1;
    }else{
      c->cid[k + nread] = n;
      slot[j] = nread++;
    }
  }
  if( nread ){
    int64_t *ids = c->cid + k;
    fly_prof_push(&c->prof, FLY_PROF_READ);
    rc = fly_chain_read_data(c, ids, nread, c->cX + k * c->W, err);
    if( rc == FLY_OK ) rc = fly_pages_read_rows(c->bnd, ids, nread, c->cB, err);
    fly_prof_pop(&c->prof);
    if( rc ) return rc;
    for(size_t i = 0; i < nread; i++)
      for(size_t j = 0; j < c->nxi; j++)
        c->cxi[(k + i) * c->nxi + j] = (float)c->cB[i * c->bw + j];
    c->m->type->eval(c->m, c->th, c->cX + k * c->W, c->W, c->cxi + k * c->nxi, nread,
                     c->logL, c->logB, c->work);
    for(size_t i = 0; i < nread; i++) c->cgap[k + i] = c->logL[i] - c->logB[i];
    c->n_reads += (int64_t)nread;
    c->n_lik += (int64_t)nread;
  }
  for(size_t j = 0; j < k; j++){
    size_t s = slot[j] == (size_t)-1 ? j : k + slot[j];
    int64_t n = c->cid[j];
    double p = fly_p_bright(c->cgap[s]);
    int want = fly_rng_uniform(&c->rng) < p;
    int is = fly_zset_is_bright(c->br.z, n);
    if( want && !is ){
      if( (rc = fly_zstep_brighten(c, n, c->cX + s * c->W, c->cxi + s * c->nxi, c->cgap[s],
                         err)) ) return rc;
    }else if( !want && is ){
      fly_bright_remove(&c->br, n);
    }
  }
  return FLY_OK;
}

const fly_zstep_type fly_zstep_explicit = {
  "explicit", sizeof(explicit_state), 0, explicit_open, explicit_close, fly_zstep_scan,
  explicit_step, fly_chain_flymc_logp, fly_chain_flymc_accept
};
