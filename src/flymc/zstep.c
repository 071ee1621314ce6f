/*
 * zstep.c -- what the z-step modes of a FlyMC chain share (chain_impl.h):
 * opening the pages, reading candidate rows, the bright rows' Gibbs draw,
 * the sequential scan, and the list of modes.  Each mode is its own file:
 * zstep_regular.c (no z), zstep_explicit.c (Alg. 1), zstep_implicit.c
 * (Alg. 2) and zstep_gibbs.c (exact Gibbs by thinning).
 *
 * Given theta the z_n are independent with p(z_n = 1) =
 * 1 - exp(-gap_n).  Every mode first handles rows that were dark when the
 * step began (new bright rows are appended at the end of the block), then
 * walks the old bright positions from the top down: darkening position p
 * moves the current last bright row into p, and that row was either already
 * visited or is new, so each row is visited exactly once.
 *
 * The scan is exact Gibbs for every row dark at the start, page by page in
 * row order, one uniform a dark row.  Where a mode keeps every row's bound
 * coefficients and, for a model with a screen (model.h:
 * fly_model_coef.scan), an f32 copy of every row (c->keep, filled by the first scan), later scans
 * bound each row's p from the copy (a single-precision product, no
 * transcendental) and read and evaluate only rows whose u falls below the
 * bound.  Rows are evaluated one by one in scans of such models, so the
 * draws do not depend on what the cache kept.
 */
#include <math.h>
#include <string.h>

#include "flymc/chain_impl.h"
#include "util/mem.h"
#include "util/vmath.h"

/* Every mode; a mode's index is its fly_zmode (chain.h): append, never
 * reorder. */
const fly_zstep_type *const fly_zstep_types[] = {
  &fly_zstep_regular,
  &fly_zstep_explicit,
  &fly_zstep_implicit,
  &fly_zstep_gibbs,
  NULL
};

/* ---- opening ---------------------------------------------------------- */

fly_rc fly_zstep_open_data(fly_chain *c, size_t share, fly_err *err)
{
  fly_rc rc = fly_pages_open_like(c->db, FLY_TABLE_DATA, c->cfg->dataset_id,
                                  c->cfg->data_map, share, &c->data, err);
  if( rc ) return rc;
  fly_pages_set_prof(c->data, &c->prof);
  fly_pages_hold(c->data, 1);     /* released by fly_chain_release */
  return FLY_OK;
}

fly_rc fly_zstep_open_bright(fly_chain *c, size_t share, fly_err *err)
{
  const fly_chain_cfg *cfg = c->cfg;
  fly_rc rc = fly_pages_open_like(c->db, FLY_TABLE_BOUND, cfg->bounds->id, cfg->bound_map,
                                  share, &c->bnd, err);
  if( rc ) return rc;
  fly_pages_set_prof(c->bnd, &c->prof);
  fly_pages_hold(c->bnd, 1);
  if( (rc = fly_bright_init(&c->br, cfg->N, c->W, c->nxi, c->nc, err)) ) return rc;
  if( !(c->tcoef = fly_alloc_array(c->nc ? c->nc : 1, sizeof *c->tcoef)) )
    return fly_fail(err, FLY_NOMEM, "chain");
  return FLY_OK;
}

fly_rc fly_zstep_no_sketch(const fly_chain *c, fly_err *err)
{
  if( c->cfg->sketch )
    return fly_fail(err, FLY_MISUSE, "a sketch for a %s chain: only gibbs reads one",
                    c->zt->name);
  return FLY_OK;
}

/* The data pages get three quarters of the cache, the bound pages the
 * rest. */
fly_rc fly_zstep_open_flymc(fly_chain *c, fly_err *err)
{
  size_t cache = c->cfg->cache_bytes;
  fly_rc rc = fly_zstep_no_sketch(c, err);
  if( rc == FLY_OK ) rc = fly_zstep_open_data(c, cache / 4 * 3, err);
  if( rc == FLY_OK ) rc = fly_zstep_open_bright(c, cache / 4, err);
  return rc;
}

/* ---- reading rows ----------------------------------------------------- */

/* (chain_impl.h) With a bucket index the xi are already in cxi (gibbs took
 * them from the index: the same f32 values), so each candidate costs one
 * page fetch instead of two. */
fly_rc fly_zstep_read(fly_chain *c, size_t k, int xi_known, fly_err *err)
{
  fly_rc rc;
  if( k == 0 ) return FLY_OK;
  fly_prof_push(&c->prof, FLY_PROF_READ);
  rc = fly_chain_read_data(c, c->cid, k, c->cX, err);
  if( rc == FLY_OK && !xi_known ) rc = fly_pages_read_rows(c->bnd, c->cid, k, c->cB, err);
  fly_prof_pop(&c->prof);
  if( rc ) return rc;
  if( !xi_known )
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

fly_rc fly_zstep_brighten(fly_chain *c, int64_t row, const double *x,
                          const float *xi, double gap, fly_err *err)
{
  if( c->nc ) c->m->type->coef->make(c->m, x, c->W, xi, 1, c->tcoef);
  return fly_bright_add(&c->br, row, x, xi, c->nc ? c->tcoef : NULL, gap, err);
}


void fly_zstep_bright_gibbs(fly_chain *c, int64_t B_old)
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

/* Candidate buffers for n rows, and the scan's own where it keeps rows. */
static fly_rc scan_reserve(fly_chain *c, size_t n, fly_err *err)
{
  fly_zscan *s = c->keep;
  fly_rc rc = fly_chain_cand_reserve(c, n, err);
  if( rc || !s || s->cap >= c->c_cap ) return rc;
  size_t cap = c->c_cap;
  int ok = 1;
  FLY_GROW(s->u, cap, 1, ok);
  FLY_GROW(s->ub, cap, 1, ok);
  FLY_GROW(s->ccf, cap, c->nc ? c->nc : 1, ok);
  FLY_GROW(s->cxf, cap, c->W, ok);
  if( !ok ) return fly_fail(err, FLY_NOMEM, "scan buffers (%zu rows)", cap);
  s->cap = cap;
  return FLY_OK;
}

/* Rows per call of the screen (model.h: fly_model_coef.scan) in a screened scan. */
#define SCAN_BLOCK 1024

/* Evaluate rows X[0..n) (with kept coefficients cf, or their xi in cxi)
 * into logL, logB: row by row (FLY_ROWWISE at a time) for a model with a
 * screen, so that the page scan, the screened scan and their caches give
 * every row the same bits; a page at a time otherwise. */
static void scan_eval(fly_chain *c, const double *X, const double *cf, size_t n)
{
  const fly_model *m = c->m;
  size_t step = m->type->coef && m->type->coef->scan ? FLY_ROWWISE : n;
  for(size_t o = 0; o < n; o += step){
    size_t k = n - o < step ? n - o : step;
    if( cf ){
      m->type->coef->eval(m, c->th, X + o * c->W, c->W, cf + o * c->nc, k,
                          c->logL + o, c->logB + o, c->work);
      fly_model_slack_logB(m, c->logB + o, k);
    }
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
  fly_zscan *s = c->keep;
  size_t k = 0, dark = fly_zset_dark_in(c->br.z, row0, n, c->cid);
  fly_rng_uniforms(&c->rng, s->u, dark);
  for(size_t j = 0; j < dark; j++){
    int64_t i = c->cid[j];
    if( s->u[j] >= s->ub[i] ) continue;
    c->cid[k] = i;                  /* k <= j: not read again */
    s->u[k++] = s->u[j];
  }
  s->n_screened += (int64_t)(dark - k);
  s->n_survived += (int64_t)k;
  c->n_lik += (int64_t)k;
  return k;
}

/* A scan with every row's coefficients and f32 copy kept (model.h:
 * fly_model_coef.scan): block by block, the screen bounds each row's p,
 * every dark row draws its u in row order as the page scan does, and only
 * rows with u < ub (about three times those that turn bright) are read and
 * get log L, log B and p, the same bits as the page scan's; the others
 * would fail u < p <= ub anyway.  Rows that turn bright read their xi from the
 * bound pages (the bucket index keeps them by position, not row). */
static fly_rc scan_screened(fly_chain *c, fly_err *err)
{
  const fly_model *m = c->m;
  fly_zscan *s = c->keep;
  int64_t N = c->cfg->N;
  fly_rc rc = scan_reserve(c, SCAN_BLOCK, err);
  if( rc ) return rc;
  for(int64_t b0 = 0; b0 < N; b0 += SCAN_BLOCK){
    size_t n = N - b0 < SCAN_BLOCK ? (size_t)(N - b0) : SCAN_BLOCK, nb = 0;
    m->type->coef->scan(m, c->th, s->sxf + (size_t)b0 * c->W, c->W, s->sxn + b0,
                        s->scoef + (size_t)b0 * c->nc, n, s->ub, c->work);
    if( m->slack > 0 ) for(size_t i = 0; i < n; i++) s->ub[i] = fly_model_slack_p(m, s->ub[i]);
    size_t k = screen_survivors(c, b0, n);
    for(size_t j = 0; j < k; j++){
      c->cid[j] += b0;              /* rows, to read */
      memcpy(s->ccf + j * c->nc, s->scoef + (size_t)c->cid[j] * c->nc,
             c->nc * sizeof *s->ccf);
    }
    c->n_reads += (int64_t)k;
    if( k == 0 ) continue;
    fly_prof_push(&c->prof, FLY_PROF_READ);
    rc = fly_chain_read_data(c, c->cid, k, c->cX, err);
    fly_prof_pop(&c->prof);
    if( rc ) return rc;
    scan_eval(c, c->cX, s->ccf, k);
    for(size_t j = 0; j < k; j++) c->cgap[j] = c->logB[j] - c->logL[j];
    fly_vexpm1(c->cgap, c->cgap, k);
    /* the rows that turn bright, compacted in order (nb <= j) */
    for(size_t j = 0; j < k; j++){
      if( !(s->u[j] < -c->cgap[j]) ) continue;
      c->cid[nb] = c->cid[j];
      c->cgap[nb] = c->logL[j] - c->logB[j];
      if( nb != j ){
        memmove(c->cX + nb * c->W, c->cX + j * c->W, c->W * sizeof *c->cX);
        memmove(s->ccf + nb * c->nc, s->ccf + j * c->nc, c->nc * sizeof *s->ccf);
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
                               c->cxi + j * c->nxi, s->ccf + j * c->nc,
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
  fly_zscan *s = c->keep;
  fly_model_scan_rows(m, X, c->W, n, xf, xn);
  m->type->coef->scan(m, c->th, xf, c->W, s->sxn + row0, cf, n, s->ub, c->work);
  if( m->slack > 0 ) for(size_t i = 0; i < n; i++) s->ub[i] = fly_model_slack_p(m, s->ub[i]);
  size_t k = screen_survivors(c, row0, n);
  for(size_t j = 0; j < k; j++){
    size_t i = (size_t)c->cid[j];
    m->type->coef->eval(m, c->th, X + i * c->W, c->W, cf + i * c->nc, 1,
                       c->logL + j, c->logB + j, c->work);
    fly_model_slack_logB(m, c->logB + j, 1);
    c->cgap[j] = c->logB[j] - c->logL[j];
  }
  fly_vexpm1(c->cgap, c->cgap, k);
  for(size_t j = 0; j < k; j++){
    size_t i = (size_t)c->cid[j];
    if( !(s->u[j] < -c->cgap[j]) ) continue;
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
  fly_zscan *s = c->keep;
  int64_t B_old = fly_bright_count(&c->br);
  fly_rc rc;
  c->scanned = 1;
  if( s && s->sxf && s->ready ){
    if( (rc = scan_screened(c, err)) ) return rc;
    fly_zstep_bright_gibbs(c, B_old);
    return FLY_OK;
  }
  for(int64_t pg = 0; pg < in->n_pages; pg++){
    const double *X, *Bd = NULL;
    size_t n, nb;
    int64_t row0 = pg * in->page_rows;
    fly_prof_push(&c->prof, FLY_PROF_READ);
    rc = fly_pages_get(c->data, pg, &X, &n, err);
    if( rc == FLY_OK ) rc = scan_reserve(c, n, err);
    /* the data pointer stays valid: the bound pages are another handle */
    if( rc == FLY_OK ) rc = fly_pages_get(c->bnd, pg, &Bd, &nb, err);
    fly_prof_pop(&c->prof);
    if( rc ) return rc;
    if( nb != n ) return fly_fail(err, FLY_CORRUPT, "page %lld: %zu data rows but "
                                  "%zu bound rows", (long long)pg, n, nb);
    /* with kept coefficients only the rows that turn bright need their xi */
    double *cf = s && s->scoef ? s->scoef + (size_t)row0 * c->nc : NULL;
    if( !cf || !s->ready ){
      xi_rows(c, Bd, 0, n);
      /* the coefficients the model's eval would compute (model.h: the
       * same bits), by the first scan only */
      if( cf ) c->m->type->coef->make(c->m, X, c->W, c->cxi, n, cf);
    }
    if( cf && c->m->type->coef->scan ){
      /* the screen's f32 rows: into the kept copy (the first scan fills
       * it) or into the candidates' buffer */
      float *xf = s->sxf ? s->sxf + (size_t)row0 * c->W : s->cxf;
      float *xn = s->ready ? NULL : s->sxn + row0;   /* norms: first scan */
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
        if( s->ready ) xi_rows(c, Bd, i, 1);
        rc = fly_bright_add(&c->br, row, X + i * c->W, c->cxi + i * c->nxi,
                            cf + i * c->nc, gap, err);
      }else{
        rc = fly_zstep_brighten(c, row, X + i * c->W, c->cxi + i * c->nxi, gap, err);
      }
      if( rc ) return rc;
    }
  }
  if( s ) s->ready = s->scoef != NULL;
  fly_zstep_bright_gibbs(c, B_old);
  return FLY_OK;
}

