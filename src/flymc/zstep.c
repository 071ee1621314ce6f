/*
 * zstep.c -- the z step of a FlyMC chain (chain.h, chain_impl.h).
 *
 * Given theta the z_n are independent with p(z_n = 1) =
 * 1 - exp(-gap_n).  Every mode first handles rows that were dark when the
 * step began (new bright rows are appended at the end of the block), then
 * walks the old bright positions from the top down: darkening position p
 * moves the current last bright row into p, and that row was either already
 * visited or is new, so each row is visited exactly once.
 *  - explicit (Alg. 1): ceil(alpha N) rows drawn with replacement get a
 *    Gibbs update, in draw order.
 *  - implicit (Alg. 2): each dark row is proposed bright with probability
 *    q (geometric skipping), accepted when u < Ltilde/q; each bright row is
 *    proposed dark and accepted when u < q/Ltilde.  (The printed Algorithm 2
 *    has line 10's inequality reversed; these are the correct MH ratios.)
 *  - gibbs: old bright rows draw z_n ~ Bern(p_n) from their cached gaps;
 *    dark rows are thinned: bucket b proposes each of its rows with
 *    pbar_b = 1 - exp(-fly_buckets_gap_upper(b, r)) >= p_n (r = ||theta -
 *    MAP|| in the Laplace metric; the bucket's key and xi range bound every
 *    row's gap), a candidate is read (its xi comes from the bucket
 *    index, so only its data page is fetched) and accepted with
 *    p_n/pbar_b.  With a sketch (sketch.h) a candidate whose page is not
 *    decoded yet is first kept with p_hat_n/pbar_b, p_n <= p_hat_n from
 *    its in-memory sketch, and only kept ones are read: one uniform u per
 *    candidate decides both (kept iff u pbar < p_hat, bright iff
 *    u pbar < p_n), so the decisions are those without a sketch; only the
 *    reads differ (and, in batches of other sizes, BLAS's last bits).
 *    Exact Gibbs for every row at every iteration.  When the
 *    expected number of candidates exceeds scan_frac N, a sequential scan
 *    is cheaper: every dark row draws its u and is drawn exactly.  The
 *    first scan reads every row; where they fit the cache it keeps every
 *    row's bound coefficients and, for a model with a screen (model.h:
 *    scan_upper), an f32 copy of every row.  Later scans then bound each
 *    row's p from the copy (a single-precision product, no transcendental)
 *    and read and evaluate only rows whose u falls below the bound.  Rows
 *    are evaluated one by one in scans of such models, so the draws do not
 *    depend on what the cache kept.
 */
#include <math.h>
#include <string.h>

#include "flymc/chain_impl.h"
#include "util/vmath.h"

/* ---- reading rows ----------------------------------------------------- */

/* Read data and bound rows of candidates cid[0..k) and evaluate their gaps
 * at theta into cgap.  With a bucket index the xi are already in cxi
 * (keep_candidates took them from the index: the same f32 values), so each
 * candidate costs one page fetch instead of two. */
static fly_rc read_candidates(fly_chain *c, size_t k, fly_err *err)
{
  const fly_buckets *bk = c->cfg->buckets;
  fly_rc rc;
  if( k == 0 ) return FLY_OK;
  fly_prof_push(&c->prof, FLY_PROF_READ);
  rc = fly_pages_read_rows(c->data, c->cid, k, c->cX, err);
  if( rc == FLY_OK && !bk ) rc = fly_pages_read_rows(c->bnd, c->cid, k, c->cB, err);
  fly_prof_pop(&c->prof);
  if( rc ) return rc;
  if( !bk )
    for(size_t i = 0; i < k; i++)
      for(size_t j = 0; j < c->nxi; j++)
        c->cxi[i * c->nxi + j] = (float)c->cB[i * c->bw + j];
  /* Which candidates reach this batch can depend on the page cache
   * (cached rows skip the sketch's checks), so it is evaluated in chunks
   * the model computes row by row (model.h): a row's gap, and so a seed's
   * draws, do not depend on --cache-mb. */
  for(size_t o = 0; o < k; o += FLY_ROWWISE){
    size_t n = k - o < FLY_ROWWISE ? k - o : FLY_ROWWISE;
    c->m->type->eval(c->m, c->th, c->cX + o * c->W, c->W, c->cxi + o * c->nxi,
                     n, c->logL + o, c->logB + o, c->work);
  }
  for(size_t i = 0; i < k; i++) c->cgap[i] = c->logL[i] - c->logB[i];
  c->n_reads += (int64_t)k;
  c->n_lik += (int64_t)k;
  return FLY_OK;
}

/* Row `row` turns bright; its bound coefficients are computed here, once. */
static fly_rc brighten(fly_chain *c, int64_t row, const double *x,
                       const float *xi, double gap, fly_err *err)
{
  if( c->nc ) c->m->type->coef(c->m, x, c->W, xi, 1, c->tcoef);
  return fly_bright_add(&c->br, row, x, xi, c->nc ? c->tcoef : NULL, gap, err);
}


/* Gibbs draw for the rows that were bright at the start of a z step:
 * positions B_old-1 down to 0 (see the file comment). */
static void bright_gibbs(fly_chain *c, int64_t B_old)
{
  for(int64_t pos = B_old - 1; pos >= 0; pos--){
    double p = fly_p_bright(c->br.gap[pos]);
    if( !(fly_rng_uniform(&c->rng) < p) )
      fly_bright_remove(&c->br, fly_zset_ith_bright(c->br.z, pos));
  }
}

/* cxi of rows i0 .. i0 + n of a bound page Bd (f32, as stored). */
static void xi_rows(fly_chain *c, const double *Bd, size_t i0, size_t n)
{
  for(size_t i = i0; i < i0 + n; i++)
    for(size_t j = 0; j < c->nxi; j++)
      c->cxi[i * c->nxi + j] = (float)Bd[i * c->bw + j];
}

/* Rows per call of the screen (model.h: scan_upper) in a screened scan. */
#define SCAN_BLOCK 1024

/* Evaluate rows X[0..n) (with kept coefficients cf, or their xi in cxi)
 * into logL, logB: row by row (FLY_ROWWISE at a time) for a model with a
 * screen, so that the page scan, the screened scan and their caches give
 * every row the same bits; a page at a time otherwise. */
static void scan_eval(fly_chain *c, const double *X, const double *cf, size_t n)
{
  const fly_model *m = c->m;
  size_t step = m->type->scan_upper ? FLY_ROWWISE : n;
  for(size_t o = 0; o < n; o += step){
    size_t k = n - o < step ? n - o : step;
    if( cf ) m->type->eval_coef(m, c->th, X + o * c->W, c->W, cf + o * c->nc, k,
                                c->logL + o, c->logB + o, c->work);
    else     m->type->eval(m, c->th, X + o * c->W, c->W, c->cxi + o * c->nxi, k,
                           c->logL + o, c->logB + o, c->work);
  }
}

/* Rows row0 .. row0 + n of a screened scan, with the screen's bounds in
 * cpbar: the dark rows, their uniforms in one call (the same stream as one
 * draw a row, in row order), then the survivors, u < ub (u >= ub is ruled
 * out, a NaN ub is not), compacted into cid (offsets from row0) and cu.
 * Returns their number; they are counted as likelihood evaluations. */
static size_t screen_survivors(fly_chain *c, int64_t row0, size_t n)
{
  size_t k = 0, dark = fly_zset_dark_in(c->br.z, row0, n, c->cid);
  fly_rng_uniforms(&c->rng, c->cu, dark);
  for(size_t j = 0; j < dark; j++){
    int64_t i = c->cid[j];
    if( c->cu[j] >= c->cpbar[i] ) continue;
    c->cid[k] = i;                  /* k <= j: not read again */
    c->cu[k++] = c->cu[j];
  }
  c->n_screened += (int64_t)(dark - k);
  c->n_survived += (int64_t)k;
  c->n_lik += (int64_t)k;
  return k;
}

/* A scan with every row's coefficients and f32 copy kept (model.h:
 * scan_upper): block by block, the screen bounds each row's p, every dark
 * row draws its u in row order as the page scan does, and only rows with
 * u < ub (about three times those that turn bright) are read and get
 * log L, log B and p, the same bits as the page scan's; the others would
 * fail u < p <= ub anyway.  Rows that turn bright read their xi from the
 * bound pages (the bucket index keeps them by position, not row). */
static fly_rc scan_screened(fly_chain *c, fly_err *err)
{
  const fly_model *m = c->m;
  int64_t N = c->cfg->N;
  fly_rc rc = fly_chain_cand_reserve(c, SCAN_BLOCK, err);
  if( rc ) return rc;
  for(int64_t b0 = 0; b0 < N; b0 += SCAN_BLOCK){
    size_t n = N - b0 < SCAN_BLOCK ? (size_t)(N - b0) : SCAN_BLOCK, nb = 0;
    m->type->scan_upper(m, c->th, c->sxf + (size_t)b0 * c->W, c->W, c->sxn + b0,
                        c->scoef + (size_t)b0 * c->nc, n, c->cpbar, c->work);
    size_t k = screen_survivors(c, b0, n);
    for(size_t j = 0; j < k; j++){
      c->cid[j] += b0;              /* rows, to read */
      memcpy(c->ccf + j * c->nc, c->scoef + (size_t)c->cid[j] * c->nc,
             c->nc * sizeof *c->ccf);
    }
    c->n_reads += (int64_t)k;
    if( k == 0 ) continue;
    fly_prof_push(&c->prof, FLY_PROF_READ);
    rc = fly_pages_read_rows(c->data, c->cid, k, c->cX, err);
    fly_prof_pop(&c->prof);
    if( rc ) return rc;
    scan_eval(c, c->cX, c->ccf, k);
    for(size_t j = 0; j < k; j++) c->cgap[j] = c->logB[j] - c->logL[j];
    fly_vexpm1(c->cgap, c->cgap, k);
    /* the rows that turn bright, compacted in order (nb <= j) */
    for(size_t j = 0; j < k; j++){
      if( !(c->cu[j] < -c->cgap[j]) ) continue;
      c->cid[nb] = c->cid[j];
      c->cgap[nb] = c->logL[j] - c->logB[j];
      if( nb != j ){
        memmove(c->cX + nb * c->W, c->cX + j * c->W, c->W * sizeof *c->cX);
        memmove(c->ccf + nb * c->nc, c->ccf + j * c->nc, c->nc * sizeof *c->ccf);
      }
      nb++;
    }
    if( nb == 0 ) continue;
    fly_prof_push(&c->prof, FLY_PROF_READ);
    rc = fly_pages_read_rows(c->bnd, c->cid, nb, c->cB, err);
    fly_prof_pop(&c->prof);
    if( rc ) return rc;
    xi_rows(c, c->cB, 0, nb);
    for(size_t j = 0; j < nb; j++)
      if( (rc = fly_bright_add(&c->br, c->cid[j], c->cX + j * c->W,
                               c->cxi + j * c->nxi, c->ccf + j * c->nc,
                               c->cgap[j], err)) ) return rc;
  }
  return FLY_OK;
}

/* The dark rows of one page of a scan with kept coefficients cf and a
 * screen but no kept f32 copy (or the first scan, which fills it): the
 * page's rows are rounded to f32 here (into xf; the first scan also
 * computes their norms into the kept ones, xn, else NULL), and as in
 * scan_screened only rows with u < ub are evaluated, each alone, which is
 * what scan_eval gives them too. */
static fly_rc scan_page_screened(fly_chain *c, const double *X, const double *Bd,
                                 const double *cf, int64_t row0, size_t n,
                                 float *xf, float *xn, fly_err *err)
{
  const fly_model *m = c->m;
  fly_model_scan_rows(m, X, c->W, n, xf, xn);
  m->type->scan_upper(m, c->th, xf, c->W, c->sxn + row0, cf, n, c->cpbar, c->work);
  size_t k = screen_survivors(c, row0, n);
  for(size_t j = 0; j < k; j++){
    size_t i = (size_t)c->cid[j];
    m->type->eval_coef(m, c->th, X + i * c->W, c->W, cf + i * c->nc, 1,
                       c->logL + j, c->logB + j, c->work);
    c->cgap[j] = c->logB[j] - c->logL[j];
  }
  fly_vexpm1(c->cgap, c->cgap, k);
  for(size_t j = 0; j < k; j++){
    size_t i = (size_t)c->cid[j];
    if( !(c->cu[j] < -c->cgap[j]) ) continue;
    xi_rows(c, Bd, i, 1);
    fly_rc rc = fly_bright_add(&c->br, row0 + (int64_t)i, X + i * c->W,
                               c->cxi + i * c->nxi, cf + i * c->nc,
                               c->logL[j] - c->logB[j], err);
    if( rc ) return rc;
  }
  return FLY_OK;
}

/* Exact Gibbs for every row dark at the start, by a sequential scan.  The
 * rows' xi come from the bound pages: the bucket index keeps them by
 * position, not row (a scan is the fallback far from the MAP, where
 * thinning would read more than a quarter of the rows anyway).  The first
 * complete scan fills the kept coefficients and f32 rows; later ones are
 * screened when both are kept. */
fly_rc fly_zstep_scan(fly_chain *c, fly_err *err)
{
  const fly_pages_info *in = fly_pages_info_of(c->data);
  int64_t B_old = fly_bright_count(&c->br);
  fly_rc rc;
  c->scanned = 1;
  if( c->sxf && c->scoef_ready ){
    if( (rc = scan_screened(c, err)) ) return rc;
    bright_gibbs(c, B_old);
    return FLY_OK;
  }
  for(int64_t pg = 0; pg < in->n_pages; pg++){
    const double *X, *Bd = NULL;
    size_t n, nb;
    int64_t row0 = pg * in->page_rows;
    fly_prof_push(&c->prof, FLY_PROF_READ);
    rc = fly_pages_get(c->data, pg, &X, &n, err);
    if( rc == FLY_OK ) rc = fly_chain_cand_reserve(c, n, err);
    /* the data pointer stays valid: the bound pages are another handle */
    if( rc == FLY_OK ) rc = fly_pages_get(c->bnd, pg, &Bd, &nb, err);
    fly_prof_pop(&c->prof);
    if( rc ) return rc;
    if( nb != n ) return fly_fail(err, FLY_CORRUPT, "page %lld: %zu data rows but "
                                  "%zu bound rows", (long long)pg, n, nb);
    /* with kept coefficients only the rows that turn bright need their xi */
    double *cf = c->scoef ? c->scoef + (size_t)row0 * c->nc : NULL;
    if( !cf || !c->scoef_ready ){
      xi_rows(c, Bd, 0, n);
      /* the coefficients the model's eval would compute (model.h: the
       * same bits), by the first scan only */
      if( cf ) c->m->type->coef(c->m, X, c->W, c->cxi, n, cf);
    }
    if( cf && c->m->type->scan_upper ){
      /* the screen's f32 rows: into the kept copy (the first scan fills
       * it) or into the candidates' buffer */
      float *xf = c->sxf ? c->sxf + (size_t)row0 * c->W : c->cxf;
      float *xn = c->scoef_ready ? NULL : c->sxn + row0;   /* norms: first scan */
      c->n_reads += (int64_t)n;  /* the page was read; lik: its survivors */
      if( (rc = scan_page_screened(c, X, Bd, cf, row0, n, xf, xn, err)) ) return rc;
      continue;
    }
    scan_eval(c, X, cf, n);
    c->n_lik += (int64_t)n;    /* the whole page was evaluated and read */
    c->n_reads += (int64_t)n;
    /* p(bright) = 1 - exp(-gap) = -expm1(logB - logL): one vector pass
     * into cgap (free during a scan) */
    for(size_t i = 0; i < n; i++) c->cgap[i] = c->logB[i] - c->logL[i];
    fly_vexpm1(c->cgap, c->cgap, n);
    for(size_t i = 0; i < n; i++){
      int64_t row = row0 + (int64_t)i;
      double gap = c->logL[i] - c->logB[i];
      if( fly_zset_is_bright(c->br.z, row) ) continue;
      if( !(fly_rng_uniform(&c->rng) < -c->cgap[i]) ) continue;
      if( cf ){                 /* its coefficients are kept: no second coef */
        if( c->scoef_ready ) xi_rows(c, Bd, i, 1);
        rc = fly_bright_add(&c->br, row, X + i * c->W, c->cxi + i * c->nxi,
                            cf + i * c->nc, gap, err);
      }else{
        rc = brighten(c, row, X + i * c->W, c->cxi + i * c->nxi, gap, err);
      }
      if( rc ) return rc;
    }
  }
  c->scoef_ready = c->scoef != NULL;
  bright_gibbs(c, B_old);
  return FLY_OK;
}

/* Append a candidate: its id (a row; gibbs first stores its position in
 * the bucket index), its proposal probability and bucket. */
static fly_rc add_cand(fly_chain *c, size_t *k, int64_t id, double pbar,
                       size_t bucket, fly_err *err)
{
  fly_rc rc = fly_chain_cand_reserve(c, *k + 1, err);
  if( rc ) return rc;
  c->cid[*k] = id;
  c->cpbar[*k] = pbar;
  c->cbk[*k] = (uint32_t)bucket;
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
static void keep_candidates(fly_chain *c, size_t *k)
{
  const fly_sketch *sk = c->cfg->sketch;
  const fly_buckets *bk = c->cfg->buckets;
  size_t kept = 0;
  /* (fly_zstep_gibbs prefetched each candidate's record and page map entry) */
  if( sk && *k ) fly_sketch_prep(sk, c->m, c->th, c->cfg->bounds->theta_map, &c->skat);
  for(size_t j = 0; j < *k; j++){
    double u = fly_rng_uniform(&c->rng), ph = c->cpbar[j];
    float *xr = c->cxi + kept * c->nxi;    /* kept <= j: not yet needed */
    fly_buckets_xi(bk, c->cpos[j], xr);
    /* a row whose page is decoded already costs a memcpy to read: cheaper
     * than the checks, which are for rows that would cost a fetch */
    if( sk && (c->cfg->sketch_all || !fly_pages_row_cached(c->data, c->cid[j])) ){
      double rho = fly_sketch_rho(sk, c->cpos[j], &c->skat);   /* placed: by position */
      double q = -expm1(-fly_buckets_row_upper(bk, c->cbk[j], c->m, xr, rho));
      if( q < ph ) ph = q;
      if( !(u * c->cpbar[j] < ph) ) continue;    /* rejected without a read */
      /* a survivor is worth the row's own bound (its xi, not the bucket's
       * range: a dozen transcendentals against a random page fetch) */
      q = -expm1(-fly_model_gap_upper_rho(c->m, xr, rho));
      if( q < ph ) ph = q;
      if( !(u * c->cpbar[j] < ph) ) continue;
    }
    c->cid[kept] = c->cid[j];
    c->cpos[kept] = c->cpos[j];
    c->cpbar[kept] = c->cpbar[j];
    c->cbk[kept] = c->cbk[j];
    c->cu[kept] = u;
    c->cph[kept] = ph;
    kept++;
  }
  *k = kept;
}

fly_rc fly_zstep_gibbs(fly_chain *c, fly_err *err)
{
  const fly_buckets *bk = c->cfg->buckets;
  const fly_model *m = c->m;
  const fly_bounds *bd = c->cfg->bounds;
  int64_t B_old = fly_bright_count(&c->br);
  double r, expect = 0;
  size_t k = 0;
  fly_rc rc;

  if( (rc = fly_chain_ev_reserve(c, m->type->work_len(m, 1), err)) ) return rc;
  r = m->type->radius(m, c->th, bd->theta_map, bd->key_prec, c->work);
  /* pb >= 0, so once the partial sum passes the limit the whole does: a
   * scan needs no more of the buckets' bounds (each a transcendental) */
  double limit = c->cfg->scan_frac * (double)c->cfg->N;
  for(size_t b = 0; b < bk->nb; b++){
    double pb = -expm1(-fly_buckets_gap_upper(bk, b, m, r));
    c->pbar[b] = pb;
    expect += pb * (double)(bk->start[b + 1] - bk->start[b]);
    if( expect > limit ) return fly_zstep_scan(c, err);
  }

  /* Candidates' positions first, then their rows, then the dark ones among
   * them: each pass prefetches what the next loads, so the random reads of
   * the index's records (row id, xi and sketch: GBs at 10^8 rows) and of
   * the z bits overlap instead of stalling one by one. */
  for(size_t b = 0; b < bk->nb; b++){
    int64_t s = bk->start[b], nb = bk->start[b + 1] - s;
    if( nb == 0 ) continue;
    double pb = c->pbar[b];
    if( !(pb > 0) ) continue;
    if( pb >= 1 ){
      for(int64_t i = 0; i < nb; i++)
        if( (rc = add_cand(c, &k, s + i, 1.0, b, err)) ) return rc;
      continue;
    }
    uint64_t i = fly_rng_geometric(&c->rng, pb);
    while( i < (uint64_t)nb ){
      if( (rc = add_cand(c, &k, s + (int64_t)i, pb, b, err)) ) return rc;
      uint64_t g = fly_rng_geometric(&c->rng, pb);
      if( g >= (uint64_t)nb ) break;
      i += 1 + g;
    }
  }
  for(size_t j = 0; j < k; j++) fly_buckets_prefetch(bk, c->cid[j]);
  for(size_t j = 0; j < k; j++){
    int64_t pos = c->cpos[j] = c->cid[j];
    int64_t row = c->cid[j] = fly_buckets_row(bk, pos);
    fly_zset_prefetch(c->br.z, row);
    /* keep_candidates' page-map lookup, in the same pass as the z bit
     * (almost every candidate is dark) */
    if( c->cfg->sketch ) fly_pages_prefetch_row(c->data, row);
  }
  size_t dark = 0;
  for(size_t j = 0; j < k; j++){
    if( fly_zset_is_bright(c->br.z, c->cid[j]) ) continue;
    c->cid[dark] = c->cid[j];
    c->cpos[dark] = c->cpos[j];
    c->cpbar[dark] = c->cpbar[j];
    c->cbk[dark] = c->cbk[j];
    dark++;
  }
  k = dark;
  c->n_cand += (int64_t)k;
  keep_candidates(c, &k);
  if( (rc = read_candidates(c, k, err)) ) return rc;
  for(size_t j = 0; j < k; j++){
    double p = fly_p_bright(c->cgap[j]);
    if( p > c->cph[j] * (1 + 1e-12) ) c->n_viol++;
    if( c->cu[j] * c->cpbar[j] < p )
      if( (rc = brighten(c, c->cid[j], c->cX + j * c->W, c->cxi + j * c->nxi,
                         c->cgap[j], err)) ) return rc;
  }
  bright_gibbs(c, B_old);
  return FLY_OK;
}

fly_rc fly_zstep_implicit(fly_chain *c, fly_err *err)
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
    if( !fly_zset_is_bright(c->br.z, (int64_t)i) &&
        (rc = add_cand(c, &k, (int64_t)i, q, 0, err)) ) return rc;
    uint64_t g = fly_rng_geometric(&c->rng, q);
    if( g >= (uint64_t)N ) break;
    i += 1 + g;
  }
  if( (rc = read_candidates(c, k, err)) ) return rc;
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
      if( (rc = brighten(c, c->cid[j], c->cX + j * c->W, c->cxi + j * c->nxi,
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

fly_rc fly_zstep_explicit(fly_chain *c, fly_err *err)
{
  int64_t N = c->cfg->N;
  size_t k = (size_t)ceil(c->cfg->z_param * (double)N), nread = 0;
  fly_rc rc;
  if( k == 0 ) return FLY_OK;
  if( (rc = fly_chain_cand_reserve(c, 2 * k, err)) ) return rc;
  /* Draw the rows; bright ones are copied from the block (no read), dark
   * ones are read in one batch into slots k.. and moved into place. */
  for(size_t j = 0; j < k; j++) c->cid[j] = (int64_t)fly_rng_below(&c->rng, (uint64_t)N);
  size_t *slot = (size_t *)(void *)c->cpbar; /* reuse: position of each draw's data */
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
    rc = fly_pages_read_rows(c->data, ids, nread, c->cX + k * c->W, err);
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
      if( (rc = brighten(c, n, c->cX + s * c->W, c->cxi + s * c->nxi, c->cgap[s],
                         err)) ) return rc;
    }else if( !want && is ){
      fly_bright_remove(&c->br, n);
    }
  }
  return FLY_OK;
}
