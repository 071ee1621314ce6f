/*
 * zstep_gibbs.c -- the gibbs z-step mode (chain_impl.h): exact Gibbs for
 * every row at every iteration, by thinning.
 *
 * Old bright rows draw z_n ~ Bern(p_n) from their cached gaps; dark rows
 * are thinned: bucket b of the bucket index (buckets.h) proposes each of
 * its rows with pbar_b = 1 - exp(-fly_buckets_gap_upper(b, r)) >= p_n
 * (r = ||theta - MAP|| in the Laplace metric; the bucket's key and xi range
 * bound every row's gap), a candidate is read (its xi comes from the bucket
 * index, so only its data page is fetched) and accepted with p_n/pbar_b.
 * With a sketch (sketch.h) a candidate whose page is not decoded yet is
 * first kept with p_hat_n/pbar_b, p_n <= p_hat_n from its in-memory
 * sketch, and only kept ones are read: one uniform u per candidate decides
 * both (kept iff u pbar < p_hat, bright iff u pbar < p_n), so the decisions
 * are those without a sketch; only the reads differ (and, in batches of
 * other sizes, BLAS's last bits).
 *
 * When the expected number of candidates exceeds scan_frac N, a sequential
 * scan (zstep.c) is cheaper: every dark row draws its u and is drawn
 * exactly.  The first scan reads every row; where they fit the cache this
 * mode keeps every row's bound coefficients and, for a model with a screen
 * (model.h: fly_model_coef.scan), an f32 copy of every row, which later scans use
 * (gibbs_state.scan, the chain's keep).
 *
 * State: the kept rows, each bucket's bound and exponential, the sketch's
 * prepared direction and the candidates' positions, bounds, buckets and
 * uniforms.  Cost: O(buckets + candidates) a step (a bucket: its bound,
 * a uniform and a vectorised log; expm1 only with a candidate) and one
 * page fetch per candidate read; a scan is O(N).  Nothing is allocated once the candidate buffers
 * have reached the largest batch.
 */
#include <math.h>
#include <string.h>

#include "flymc/chain_impl.h"
#include "util/mem.h"
#include "util/vmath.h"

typedef struct gibbs_state {
  fly_zscan     scan;       /* what scans keep (c->keep) */
  double       *ub;         /* nb: each bucket's bound U_b (gibbs_step) */
  double       *ex;         /* nb: each bucket's log u, then -E_b */
  double       *bwork;      /* 2 nb: fly_buckets_gap_upper_all's */
  fly_sketch_at skat;       /* with a sketch: th - th_map in its coordinates */
  size_t        cap;        /* candidates the arrays below hold (<= c->c_cap) */
  int64_t      *cpos;       /* each candidate's position in the bucket index */
  double       *cpbar;      /* its proposal probability */
  double       *cu;         /* its uniform */
  double       *cph;        /* the bound its p must respect (n_viol otherwise) */
  uint32_t     *cbk;        /* its bucket */
} gibbs_state;

/* Candidate buffers, the chain's and this mode's, for n candidates. */
static fly_rc reserve(fly_chain *c, gibbs_state *g, size_t n, fly_err *err)
{
  if( n <= g->cap ) return FLY_OK;
  fly_rc rc = fly_chain_cand_reserve(c, n, err);
  if( rc ) return rc;
  size_t cap = c->c_cap;
  int ok = 1;
  FLY_GROW(g->cpos, cap, 1, ok);
  FLY_GROW(g->cpbar, cap, 1, ok);
  FLY_GROW(g->cu, cap, 1, ok);
  FLY_GROW(g->cph, cap, 1, ok);
  FLY_GROW(g->cbk, cap, 1, ok);
  if( !ok ) return fly_fail(err, FLY_NOMEM, "candidate buffers (%zu rows)", cap);
  g->cap = cap;
  return FLY_OK;
}

/* Append a candidate: its position in the bucket index (in cid, until its
 * row replaces it), its proposal probability and bucket. */
static fly_rc add_cand(fly_chain *c, gibbs_state *g, size_t *k, int64_t id,
                       double pbar, size_t bucket, fly_err *err)
{
  fly_rc rc = reserve(c, g, *k + 1, err);
  if( rc ) return rc;
  c->cid[*k] = id;
  g->cpbar[*k] = pbar;
  g->cbk[*k] = (uint32_t)bucket;
  (*k)++;
  return FLY_OK;
}

/* Draw each of the k candidates' uniform u (in candidate order, so the
 * stream does not depend on the sketch) and, with a sketch, keep only those
 * with u pbar < p_hat (the others would be rejected whatever their row
 * holds) among rows whose page is not in the decoded cache; *k becomes the
 * number kept, compacted in order, each with its xi from the index in cxi.
 * cph[j] is the bound the kept candidate's p must respect (n_viol
 * otherwise). */
static void keep_candidates(fly_chain *c, gibbs_state *g, size_t *k)
{
  const fly_sketch *sk = c->cfg->sketch;
  const fly_buckets *bk = c->cfg->buckets;
  size_t kept = 0;
  /* (gibbs_step prefetched each candidate's record and page map entry) */
  if( sk && *k ) fly_sketch_prep(sk, c->m, c->th, c->cfg->bounds->theta_map, &g->skat);
  for(size_t j = 0; j < *k; j++){
    double u = fly_rng_uniform(&c->rng), ph = g->cpbar[j];
    float *xr = c->cxi + kept * c->nxi;    /* kept <= j: not yet needed */
    fly_buckets_xi(bk, g->cpos[j], xr);
    /* a row whose page is decoded already costs a memcpy to read: cheaper
     * than the checks, which are for rows that would cost a fetch */
    if( sk && (c->cfg->sketch_all || !fly_chain_row_cached(c, c->cid[j])) ){
      double rho = fly_sketch_rho(sk, g->cpos[j], &g->skat);   /* placed: by position */
      double q = -expm1(-fly_buckets_row_upper(bk, g->cbk[j], c->m, xr, rho));
      if( q < ph ) ph = q;
      if( !(u * g->cpbar[j] < ph) ) continue;    /* rejected without a read */
      /* a survivor is worth the row's own bound (its xi, not the bucket's
       * range: a dozen transcendentals against a random page fetch) */
      q = -expm1(-fly_model_gap_upper_rho(c->m, xr, rho));
      if( q < ph ) ph = q;
      if( !(u * g->cpbar[j] < ph) ) continue;
    }
    c->cid[kept] = c->cid[j];
    g->cpos[kept] = g->cpos[j];
    g->cpbar[kept] = g->cpbar[j];
    g->cbk[kept] = g->cbk[j];
    g->cu[kept] = u;
    g->cph[kept] = ph;
    kept++;
  }
  *k = kept;
}

static fly_rc gibbs_step(fly_chain *c, fly_err *err)
{
  gibbs_state *g = c->zs;
  const fly_buckets *bk = c->cfg->buckets;
  const fly_model *m = c->m;
  const fly_bounds *bd = c->cfg->bounds;
  int64_t B_old = fly_bright_count(&c->br);
  double r, expect = 0;
  size_t k = 0;
  fly_rc rc;

  if( (rc = fly_chain_ev_reserve(c, m->type->work_len(m, 1), err)) ) return rc;
  r = m->type->thin->radius(m, c->th, bd->theta_map, bd->key_prec, c->work);
  /* Each bucket's bound U_b on its rows' gaps (pbar_b = 1 - exp(-U_b) <=
   * U_b): the expected candidates sum_b n_b pbar_b need their expm1s only
   * when the sum of n_b U_b passes the scan's limit. */
  double limit = c->cfg->scan_frac * (double)c->cfg->N, *U = g->ub, *E = g->ex;
  fly_buckets_gap_upper_all(bk, m, r, U, g->bwork);
  for(size_t b = 0; b < bk->nb; b++)
    expect += U[b] * (double)(bk->start[b + 1] - bk->start[b]);
  if( expect > limit ){
    expect = 0;
    for(size_t b = 0; b < bk->nb; b++){
      expect += -expm1(-U[b]) * (double)(bk->start[b + 1] - bk->start[b]);
      if( expect > limit ) return fly_zstep_scan(c, err);
    }
  }

  /* Candidates' positions first, then their rows, then the dark ones among
   * them: each pass prefetches what the next loads, so the random reads of
   * the index's records (row id, xi and sketch: GBs at 10^8 rows) and of
   * the z bits overlap instead of stalling one by one.
   *
   * The rows before a bucket's first candidate are geometric with success
   * pbar_b: P(more than k) = (1 - pbar_b)^k = exp(-k U_b), so that count is
   * floor(E / U_b) with E ~ Exp(1), E = -log u.  One uniform a bucket, their
   * logs in one vectorised pass; a bucket whose first candidate would lie
   * past its rows (most of them) costs no more, and pbar_b's expm1 is taken
   * only for a bucket with a candidate. */
  fly_rng_uniforms(&c->rng, E, bk->nb);
  fly_vlog(E, E, bk->nb);
  for(size_t b = 0; b < bk->nb; b++){
    int64_t s = bk->start[b], nb = bk->start[b + 1] - s;
    if( nb == 0 || !(U[b] > 0) ) continue;
    if( U[b] == INFINITY ){
      for(int64_t i = 0; i < nb; i++)
        if( (rc = add_cand(c, g, &k, s + i, 1.0, b, err)) ) return rc;
      continue;
    }
    double at = -E[b] / U[b];
    if( !(at < (double)nb) ) continue;
    double pb = -expm1(-U[b]);
    int64_t i = (int64_t)at;
    while( i < nb ){
      if( (rc = add_cand(c, g, &k, s + i, pb, b, err)) ) return rc;
      double skip = -log(fly_rng_uniform(&c->rng)) / U[b];
      if( !(skip < (double)nb) ) break;
      i += 1 + (int64_t)skip;
    }
  }
  for(size_t j = 0; j < k; j++) fly_buckets_prefetch(bk, c->cid[j]);
  for(size_t j = 0; j < k; j++){
    int64_t pos = g->cpos[j] = c->cid[j];
    int64_t row = c->cid[j] = fly_buckets_row(bk, pos);
    fly_zset_prefetch(c->br.z, row);
    /* keep_candidates' page-map lookup, in the same pass as the z bit
     * (almost every candidate is dark) */
    if( c->cfg->sketch && !c->cfg->Xall ) fly_pages_prefetch_row(c->data, row);
  }
  size_t dark = 0;
  for(size_t j = 0; j < k; j++){
    if( fly_zset_is_bright(c->br.z, c->cid[j]) ) continue;
    c->cid[dark] = c->cid[j];
    g->cpos[dark] = g->cpos[j];
    g->cpbar[dark] = g->cpbar[j];
    g->cbk[dark] = g->cbk[j];
    dark++;
  }
  k = dark;
  c->n_cand += (int64_t)k;
  keep_candidates(c, g, &k);
  if( (rc = fly_zstep_read(c, k, 1, err)) ) return rc;
  for(size_t j = 0; j < k; j++){
    double p = fly_p_bright(c->cgap[j]);
    if( p > g->cph[j] * (1 + 1e-12) ) c->n_viol++;
    if( g->cu[j] * g->cpbar[j] < p )
      if( (rc = fly_zstep_brighten(c, c->cid[j], c->cX + j * c->W, c->cxi + j * c->nxi,
                         c->cgap[j], err)) ) return rc;
  }
  fly_zstep_bright_gibbs(c, B_old);
  return FLY_OK;
}


/* The bucket index (and sketch) must be this chain's; then the data pages
 * get the whole cache, and what they leave holds the kept rows (half of
 * it, where they fit) and the bound pages. */
static fly_rc gibbs_open(fly_chain *c, fly_err *err)
{
  const fly_chain_cfg *cfg = c->cfg;
  const fly_model *m = c->m;
  gibbs_state *g = c->zs;
  fly_zscan *s = &g->scan;
  fly_rc rc;
  if( !m->type->thin )
    return fly_fail(err, FLY_MISUSE, "model %s has no thinning bound for a gibbs "
                    "chain", m->type->name);
  if( !cfg->buckets )
    return fly_fail(err, FLY_MISUSE, "a gibbs chain needs a bucket index");
  if( cfg->buckets->nxi != c->nxi )
    return fly_fail(err, FLY_MISUSE, "bucket index holds %zu xi a row, the model "
                    "%zu", cfg->buckets->nxi, c->nxi);
  if( cfg->sketch && (cfg->sketch->D != m->D || cfg->sketch->N != cfg->N ||
                      cfg->sketch->nd != (m->type->thin->dirs ? m->K : 1)) )
    return fly_fail(err, FLY_MISUSE, "a sketch of %lld rows x %zu features for a "
                    "gibbs chain of %lld rows x %zu", (long long)cfg->sketch->N,
                    cfg->sketch->D, (long long)cfg->N, m->D);
  /* keep_candidates reads a candidate's code by its position: the codes
   * must be the bucket index's record tails */
  if( cfg->sketch && (cfg->buckets->tail < FLY_SKETCH_BYTES ||
                      cfg->sketch->code != fly_buckets_tail(cfg->buckets, 0) ||
                      cfg->sketch->stride != cfg->buckets->stride) )
    return fly_fail(err, FLY_MISUSE, "the sketch's codes are not placed in the bucket "
                    "index (fly_index_build)");
  if( (rc = fly_zstep_open_data(c, cfg->cache_bytes, err)) ) return rc;
  /* The bucket index keeps the xi by position, not row, so a scan reads
   * them from the bound pages, and decoding those afresh at every scan is
   * a large part of its cost.  They are cached in the room the decoded
   * data pages leave, and decoded afresh where the data pages fill the
   * cache (a scan reads every page then anyway). */
  const fly_pages_info *di = fly_pages_info_of(c->data);
  double need = (double)di->n_pages * (double)di->page_rows * (double)di->width
              * (double)sizeof(double);
  size_t bshare = (double)cfg->cache_bytes > need ? cfg->cache_bytes - (size_t)need : 0;
  /* A scan evaluates every row's bound, and a row's bound coefficients
   * (model.h: fly_model_coef) depend on its xi and its row only, while computing
   * them costs transcendentals (two a row for logistic).  So they are
   * kept, filled by the first scan, where they fit half of that room; the
   * bound pages get the rest.  Untouched: a chain that never scans never
   * touches them, and they cost nothing. */
  size_t room = bshare;
  /* with a screen (model.h: fly_model_coef.scan) every row's features'
   * norm (a float) too */
  size_t scr = c->nc && m->type->coef->scan ? sizeof(float) : 0;
  double nd = (double)cfg->N;
  if( c->nc && nd * (double)(c->nc * sizeof(double) + scr) <= 0.5 * (double)room ){
    s->scoef = fly_alloc_untouched((size_t)cfg->N * c->nc, sizeof *s->scoef);
    if( scr ) s->sxn = fly_alloc_untouched((size_t)cfg->N, sizeof *s->sxn);
    if( !s->scoef || (scr && !s->sxn) )
      return fly_fail(err, FLY_NOMEM, "bound coefficients of %lld rows",
                      (long long)cfg->N);
    bshare -= (size_t)cfg->N * (c->nc * sizeof *s->scoef + scr);
    /* With a screen an f32 copy of every row and its features' norm let a
     * scan rule out most rows with a single-precision product: the copy's
     * bandwidth is half the data pages', and the rows ruled out are not
     * read at all.  Kept where the copy fits the same half as well. */
    if( m->type->coef->scan &&
        nd * (double)(c->nc * sizeof(double) + (c->W + 1) * sizeof(float))
        <= 0.5 * (double)room ){
      s->sxf = fly_alloc_untouched((size_t)cfg->N * c->W, sizeof *s->sxf);
      if( !s->sxf )
        return fly_fail(err, FLY_NOMEM, "f32 copy of %lld rows", (long long)cfg->N);
      bshare -= (size_t)cfg->N * c->W * sizeof(float);
    }
  }
  c->keep = s;
  if( (rc = fly_zstep_open_bright(c, bshare, err)) ) return rc;
  g->ub = fly_alloc_array(cfg->buckets->nb ? cfg->buckets->nb : 1, sizeof *g->ub);
  g->ex = fly_alloc_array(cfg->buckets->nb ? cfg->buckets->nb : 1, sizeof *g->ex);
  g->bwork = fly_alloc_array(cfg->buckets->nb ? 2 * cfg->buckets->nb : 1, sizeof *g->bwork);
  if( !g->ub || !g->ex || !g->bwork )
    return fly_fail(err, FLY_NOMEM, "thinning bounds of %zu buckets", cfg->buckets->nb);
  if( cfg->sketch && (rc = fly_sketch_at_init(cfg->sketch, &g->skat, err)) ) return rc;
  return FLY_OK;
}

static void gibbs_close(fly_chain *c)
{
  gibbs_state *g = c->zs;
  fly_zscan *s = &g->scan;
  fly_free_untouched(s->scoef);
  fly_free_untouched(s->sxn);
  fly_free_untouched(s->sxf);
  fly_free(s->u);
  fly_free(s->ub);
  fly_free(s->ccf);
  fly_free(s->cxf);
  fly_free(g->ub);
  fly_free(g->ex);
  fly_free(g->bwork);
  fly_sketch_at_free(&g->skat);
  fly_free(g->cpos);
  fly_free(g->cpbar);
  fly_free(g->cu);
  fly_free(g->cph);
  fly_free(g->cbk);
}

/* z_0: one thinned z step (it scans only if theta_0 is so far out that the
 * thinning bound expects too many candidates). */
const fly_zstep_type fly_zstep_gibbs = {
  "gibbs", sizeof(gibbs_state), 0, gibbs_open, gibbs_close, gibbs_step, gibbs_step,
  fly_chain_flymc_logp, fly_chain_flymc_accept
};
