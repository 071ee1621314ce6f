/*
 * zstep_implicit.c -- the implicit z-step mode (chain_impl.h): Algorithm 2
 * of the FlyMC paper, Metropolis-Hastings flips of z.
 *
 * Each dark row is proposed bright with probability q = cfg->z_param
 * (geometric skipping over row ids), accepted when u < Ltilde/q; each
 * bright row is proposed dark and accepted when u < q/Ltilde.  (The printed
 * Algorithm 2 has line 10's inequality reversed; these are the correct MH
 * ratios.)  z_0 is one scan (zstep.c).
 *
 * State: none beyond the chain's bright block and candidate buffers.
 * Cost: about q N candidates read and evaluated, plus O(bright rows).
 */
#include <math.h>
#include <string.h>

#include "flymc/chain_impl.h"
#include "util/vmath.h"

static fly_rc implicit_step(fly_chain *c, fly_err *err)
{
  double q = c->cfg->z_param;
  int64_t B_old = fly_bright_count(&c->br), N = c->cfg->N;
  size_t k = 0;
  fly_rc rc;

  /* Each dark row is proposed bright with probability q.  Candidates are
   * drawn by skipping over row ids (bright ones are passed over), not over
   * a list of the dark rows: the draw then depends on the set of bright rows
   * only, not on the order of the dark ones, which a checkpoint does not
   * keep. */
  uint64_t i = fly_rng_geometric(&c->rng, q);
  while( i < (uint64_t)N ){
    if( !fly_zset_is_bright(c->br.z, (int64_t)i) ){
      if( (rc = fly_chain_cand_reserve(c, k + 1, err)) ) return rc;
      c->cid[k++] = (int64_t)i;
    }
    uint64_t g = fly_rng_geometric(&c->rng, q);
    if( g >= (uint64_t)N ) break;
    i += 1 + g;
  }
  if( (rc = fly_zstep_read(c, k, 0, err)) ) return rc;
  if( (rc = fly_chain_ev_reserve(c, (size_t)B_old, err)) ) return rc;
  /* Ltilde = expm1(gap), one vector pass each for the candidates (into
   * logL, free after the read) and the old bright rows (into logB).
   * Adding rows appends after B_old and a removal at pos fills pos from
   * above, which is never visited again, so the old rows' values stay
   * valid through both loops.  gap <= 0 gives Ltilde <= 0: never bright. */
  fly_vexpm1(c->cgap, c->logL, k);
  for(size_t j = 0; j < k; j++){
    /* dark -> bright accepted when u < Ltilde / q */
    if( fly_rng_uniform(&c->rng) * q < c->logL[j] )
      if( (rc = fly_zstep_brighten(c, c->cid[j], c->cX + j * c->W, c->cxi + j * c->nxi,
                         c->cgap[j], err)) ) return rc;
  }
  fly_vexpm1(c->br.gap, c->logB, (size_t)B_old);
  /* Every old bright row proposed dark: accepted when u < q / Ltilde. */
  for(int64_t pos = B_old - 1; pos >= 0; pos--){
    if( fly_rng_uniform(&c->rng) * c->logB[pos] < q )
      fly_bright_remove(&c->br, fly_zset_ith_bright(c->br.z, pos));
  }
  return FLY_OK;
}


const fly_zstep_type fly_zstep_implicit = {
  "implicit", 0, 0, fly_zstep_open_flymc, NULL, fly_zstep_scan, implicit_step,
  fly_chain_flymc_logp, fly_chain_flymc_accept
};
