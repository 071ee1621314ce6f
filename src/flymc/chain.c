/*
 * chain.c -- one FlyMC (or regular) Markov chain (see chain.h).
 *
 * State: theta, the bright set z (zset + dense bright block with each bright
 * row's gap = log L - log B at theta), the RNG and the kernel's adaptation.
 *
 * Theta step.  The kernel sees log p(theta | z) =
 *   log p(theta) + sum_n log B_n(theta) [collapsed: O(P^2) from moments]
 *                + sum_{bright} log Ltilde_n(theta),
 * Ltilde_n = L_n/B_n - 1, evaluated with one BLAS pass over the bright block;
 * a model with bound coefficients (model.h: coef) has them computed once per
 * row, when the row turns bright, not at every evaluation.
 * An accepted proposal's gaps become the cached gaps (no second pass).
 * An iteration makes theta_steps such updates before its z step: each
 * leaves p(theta | z) invariant, so the alternation still leaves the joint
 * p(theta, z | x) invariant, and one costs O(P^2 + bright rows) against a
 * z step's row reads, so several per z step buy mixing in theta almost for
 * free (docs/benchmarks.md, "theta updates per z update").
 *
 * Z step.  Given theta the z_n are independent with p(z_n = 1) =
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
 *
 * Regular mode: log p(theta | x) over all rows, from an in-memory block
 * (or page by page), through the same kernel.
 *
 * The steady state allocates nothing: buffers grow only when the bright set
 * or a candidate batch is larger than ever before.
 */
#include "flymc/chain.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "flymc/bright.h"
#include "flymc/ckpt.h"
#include "samplers/hmc.h"
#include "samplers/mala.h"
#include "samplers/mh.h"
#include "samplers/slice.h"
#include "samplers/target.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/mem.h"
#include "util/rng.h"
#include "util/vmath.h"

#define CHUNK 4096            /* rows per model evaluation in regular mode */

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

static const char *const kernel_names[] = { "mh", "mala", "slice", "hmc" };

const char *fly_kernel_name(fly_kernel k)
{
  return (unsigned)k < sizeof kernel_names / sizeof kernel_names[0] ? kernel_names[k] : "?";
}

int fly_kernel_find(const char *name)
{
  for(size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++)
    if( strcmp(kernel_names[i], name) == 0 ) return (int)i;
  return -1;
}

const char *fly_zmode_name(fly_zmode z)
{
  switch( z ){
  case FLY_Z_REGULAR:  return "regular";
  case FLY_Z_EXPLICIT: return "explicit";
  case FLY_Z_IMPLICIT: return "implicit";
  case FLY_Z_GIBBS:    return "gibbs";
  }
  return "?";
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Evaluation buffers for n rows. */
static fly_rc ev_reserve(fly_chain *c, size_t n, fly_err *err)
{
  if( n <= c->ev_cap ) return FLY_OK;
  size_t cap = c->ev_cap ? c->ev_cap : 1024;
  while( cap < n ) cap *= 2;
  size_t wl = c->m->type->work_len(c->m, cap);
  double *a = fly_realloc_array(c->logL, cap, sizeof(double));
  if( a ) c->logL = a;
  double *b = fly_realloc_array(c->logB, cap, sizeof(double));
  if( b ) c->logB = b;
  double *w = fly_realloc_array(c->work, wl ? wl : 1, sizeof(double));
  if( w ) c->work = w;
  double *o = fly_realloc_array(c->ones, cap, sizeof(double));
  if( o ){
    c->ones = o;
    for(size_t i = 0; i < cap; i++) o[i] = 1.0;
  }
  if( !a || !b || !w || !o ) return fly_fail(err, FLY_NOMEM, "evaluation buffers (%zu rows)", cap);
  c->ev_cap = cap;
  return FLY_OK;
}

static fly_rc cand_reserve(fly_chain *c, size_t n, fly_err *err)
{
  if( n <= c->c_cap ) return FLY_OK;
  size_t cap = c->c_cap ? c->c_cap : 1024;
  while( cap < n ) cap *= 2;
  int ok = 1;
#define GROW(ptr, k) do{ void *q_ = fly_realloc_array((ptr), cap, (k) * sizeof *(ptr)); \
                         if( q_ ) (ptr) = q_; else ok = 0; }while(0)
  GROW(c->cid, 1);
  GROW(c->cpos, 1);
  GROW(c->cX, c->W);
  GROW(c->cB, c->bw);
  GROW(c->cgap, 1);
  GROW(c->cpbar, 1);
  GROW(c->cu, 1);
  GROW(c->cbk, 1);
  GROW(c->cph, 1);
  GROW(c->cxi, c->nxi);
  GROW(c->ccf, c->nc ? c->nc : 1);
  GROW(c->cxf, c->W);
#undef GROW
  if( !ok ) return fly_fail(err, FLY_NOMEM, "candidate buffers (%zu rows)", cap);
  c->c_cap = cap;
  return ev_reserve(c, cap, err);
}

/* Reads of one step share one read transaction: each page fetch outside a
 * transaction would open and close its own (about 10 us each), and a
 * transaction held across iterations would stop WAL checkpoints.  The
 * statements are prepared once (sqlite3_exec would compile and allocate
 * them at every step). */
/* ---- targets ---------------------------------------------------------- */

static fly_rc nan_fail(fly_chain *c, fly_err *err, const char *what)
{
  return fly_fail(err, FLY_NUMERIC, "chain %d: the log density is NaN (%s); "
                  "check the data for extreme values", c->id + 1, what);
}

/* Sum of log Ltilde over gaps g[0..n) (n <= ev_cap; logL is overwritten).
 * The theta step and the z step's new state both sum this way. */
static double ltilde_sum(fly_chain *c, const double *g, size_t n)
{
  double s = 0;
  fly_vlog_ltilde(g, c->logL, n);
  for(size_t i = 0; i < n; i++) s += c->logL[i];
  return s;
}

static fly_rc flymc_logp(void *ctx, const double *th, double *lp, double *grad,
                         fly_err *err)
{
  fly_chain *c = ctx;
  const fly_model *m = c->m;
  size_t B = (size_t)fly_bright_count(&c->br);
  if( grad ) memset(grad, 0, c->P * sizeof *grad);
  double base = fly_model_log_prior(m, th, grad)
              + m->type->bound_sum(m, c->cfg->bounds->mom, th, grad, c->work);
  double sum = 0;
  if( B ){
    fly_rc rc = ev_reserve(c, B, err);
    if( rc ) return rc;
    if( c->nc )
      m->type->eval_coef(m, th, c->br.X, c->W, c->br.coef, B, c->logL, c->logB, c->work);
    else
      m->type->eval(m, th, c->br.X, c->W, c->br.xi, B, c->logL, c->logB, c->work);
    for(size_t i = 0; i < B; i++) c->br.gap_new[i] = c->logL[i] - c->logB[i];
    sum = ltilde_sum(c, c->br.gap_new, B);
    c->n_lik += (int64_t)B;
    if( grad && sum > -INFINITY ){
      /* d log Ltilde = d gap / (1 - exp(-gap)): weights on grad log L and
       * grad log B (logL, logB are free again and hold the weights). */
      for(size_t i = 0; i < B; i++){
        double wl = 1.0 / fly_p_bright(c->br.gap_new[i]);
        c->logL[i] = wl;
        c->logB[i] = -wl;
      }
      if( c->nc )
        m->type->grad_coef(m, th, c->br.X, c->W, c->br.coef, B, c->logL, c->logB,
                           grad, c->work);
      else
        m->type->grad(m, th, c->br.X, c->W, c->br.xi, B, c->logL, c->logB, grad, c->work);
    }
  }
  c->base_new = base;
  *lp = base + sum;
  if( isnan(*lp) ) return nan_fail(c, err, "FlyMC conditional");
  return FLY_OK;
}

static void flymc_accept(void *ctx)
{
  fly_chain *c = ctx;
  fly_bright_accept(&c->br);
  c->base = c->base_new;
}

/* log p(th) + sum over all rows of log L, from the in-memory block or by a
 * scan of the pages. */
static fly_rc full_sum(fly_chain *c, const double *th, double *out, double *grad,
                       fly_err *err)
{
  const fly_model *m = c->m;
  const fly_chain_cfg *cfg = c->cfg;
  if( grad ) memset(grad, 0, c->P * sizeof *grad);
  double sum = fly_model_log_prior(m, th, grad);
  fly_rc rc;
  if( cfg->Xall ){
    for(int64_t r = 0; r < cfg->N; r += CHUNK){
      size_t n = (size_t)(cfg->N - r < CHUNK ? cfg->N - r : CHUNK);
      const double *X = cfg->Xall + (size_t)r * c->W;
      m->type->eval(m, th, X, c->W, NULL, n, c->logL, NULL, c->work);
      for(size_t i = 0; i < n; i++) sum += c->logL[i];
      if( grad ) m->type->grad(m, th, X, c->W, NULL, n, c->ones, NULL, grad, c->work);
    }
  }else{
    const fly_pages_info *in = fly_pages_info_of(c->data);
    for(int64_t pg = 0; pg < in->n_pages; pg++){
      const double *rows;
      size_t n;
      fly_prof_push(&c->prof, FLY_PROF_READ);
      rc = fly_pages_get(c->data, pg, &rows, &n, err);
      fly_prof_pop(&c->prof);
      if( rc ) return rc;
      if( (rc = ev_reserve(c, n, err)) ) return rc;
      m->type->eval(m, th, rows, c->W, NULL, n, c->logL, NULL, c->work);
      for(size_t i = 0; i < n; i++) sum += c->logL[i];
      if( grad ) m->type->grad(m, th, rows, c->W, NULL, n, c->ones, NULL, grad, c->work);
    }
  }
  *out = sum;
  if( isnan(sum) ) return nan_fail(c, err, "full-data posterior");
  return FLY_OK;
}

static fly_rc regular_logp(void *ctx, const double *th, double *lp, double *grad,
                           fly_err *err)
{
  fly_chain *c = ctx;
  int began = !c->cfg->Xall && fly_db_read_begin(c->db);
  fly_rc rc = full_sum(c, th, lp, grad, err);
  fly_db_read_end(c->db, began);
  if( !c->cfg->Xall ) c->n_reads += c->cfg->N;
  c->n_lik += c->cfg->N;
  c->lp_new = *lp;
  return rc;
}

fly_rc fly_chain_full_logpost(fly_chain *c, double *lp, double *seconds,
                              fly_err *err)
{
  double t0 = now();
  fly_rc rc = ev_reserve(c, CHUNK, err);
  if( rc == FLY_OK && !c->cfg->Xall && !c->data )
    rc = fly_fail(err, FLY_MISUSE, "no data handle for the full log posterior");
  int began = fly_db_read_begin(c->db);
  if( rc == FLY_OK ) rc = full_sum(c, c->th, lp, NULL, err);
  fly_db_read_end(c->db, began);
  *seconds = now() - t0;
  return rc;
}

static void regular_accept(void *ctx) { (void)ctx; }

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
  fly_rc rc = cand_reserve(c, SCAN_BLOCK, err);
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
static fly_rc scan_gibbs(fly_chain *c, fly_err *err)
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
    if( rc == FLY_OK ) rc = cand_reserve(c, n, err);
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
  fly_rc rc = cand_reserve(c, *k + 1, err);
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
  /* (z_gibbs prefetched each candidate's record and page map entry) */
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

static fly_rc z_gibbs(fly_chain *c, fly_err *err)
{
  const fly_buckets *bk = c->cfg->buckets;
  const fly_model *m = c->m;
  const fly_bounds *bd = c->cfg->bounds;
  int64_t B_old = fly_bright_count(&c->br);
  double r, expect = 0;
  size_t k = 0;
  fly_rc rc;

  if( (rc = ev_reserve(c, m->type->work_len(m, 1), err)) ) return rc;
  r = m->type->radius(m, c->th, bd->theta_map, bd->key_prec, c->work);
  /* pb >= 0, so once the partial sum passes the limit the whole does: a
   * scan needs no more of the buckets' bounds (each a transcendental) */
  double limit = c->cfg->scan_frac * (double)c->cfg->N;
  for(size_t b = 0; b < bk->nb; b++){
    double pb = -expm1(-fly_buckets_gap_upper(bk, b, m, r));
    c->pbar[b] = pb;
    expect += pb * (double)(bk->start[b + 1] - bk->start[b]);
    if( expect > limit ) return scan_gibbs(c, err);
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

static fly_rc z_implicit(fly_chain *c, fly_err *err)
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
  if( (rc = ev_reserve(c, (size_t)B_old, err)) ) return rc;
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

static fly_rc z_explicit(fly_chain *c, fly_err *err)
{
  int64_t N = c->cfg->N;
  size_t k = (size_t)ceil(c->cfg->z_param * (double)N), nread = 0;
  fly_rc rc;
  if( k == 0 ) return FLY_OK;
  if( (rc = cand_reserve(c, 2 * k, err)) ) return rc;
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

/* ---- life cycle ------------------------------------------------------- */

/* theta updates per iteration; a cfg that leaves the field 0 means one */
static int64_t theta_steps(const fly_chain_cfg *cfg)
{
  return cfg->theta_steps > 1 ? cfg->theta_steps : 1;
}

fly_rc fly_chain_open(const fly_chain_cfg *cfg, int chain_id, uint64_t seed,
                      fly_chain **pc, fly_err *err)
{
  fly_chain *c = NULL;
  fly_rc rc;
  *pc = NULL;
  c = fly_alloc_array(1, sizeof *c);
  if( !c ) return fly_fail(err, FLY_NOMEM, "chain");
  c->cfg = cfg;
  c->m = cfg->m;
  c->id = chain_id;
  c->P = cfg->m->type->n_params(cfg->m);
  c->W = cfg->W;
  c->nxi = cfg->m->type->n_xi(cfg->m);
  c->bw = c->nxi + 1;
  c->nc = cfg->m->type->coef ? cfg->m->type->n_coef(cfg->m) : 0;
  fly_rng_seed(&c->rng, seed, (uint64_t)chain_id);

  if( (rc = fly_db_open(cfg->db_path, FLY_DB_READONLY, &c->db, err)) ) goto done;
  if( !(cfg->z == FLY_Z_REGULAR && cfg->Xall) ){
    /* The bound pages get a quarter of the cache, unless a bucket index
     * holds every row's xi: then only gibbs' scans read them, and they get
     * what the data pages leave (below). */
    size_t share = cfg->z == FLY_Z_REGULAR || cfg->buckets ? cfg->cache_bytes
                 : cfg->cache_bytes / 4 * 3;
    if( (rc = fly_pages_open(c->db, FLY_TABLE_DATA, cfg->dataset_id, share,
                             &c->data, err)) ) goto done;
    fly_pages_set_prof(c->data, &c->prof);
    fly_pages_hold(c->data, 1);     /* released by fly_chain_release */
  }
  if( cfg->z != FLY_Z_REGULAR ){
    if( cfg->buckets && cfg->buckets->nxi != c->nxi ){
      rc = fly_fail(err, FLY_MISUSE, "bucket index holds %zu xi a row, the model "
                    "%zu", cfg->buckets->nxi, c->nxi);
      goto done;
    }
    /* With a bucket index the xi are kept by position, not row, so a scan
     * reads them from the bound pages; decoding those afresh at every scan
     * cost 15-25% of an iteration on the Fashion pair.  They are cached in
     * the room the decoded data pages leave, and decoded afresh where the
     * data pages fill the cache (a scan reads every page then anyway). */
    size_t bshare = cfg->cache_bytes / 4;
    if( cfg->buckets ){
      const fly_pages_info *di = fly_pages_info_of(c->data);
      double need = (double)di->n_pages * (double)di->page_rows * (double)di->width
                  * (double)sizeof(double);
      bshare = (double)cfg->cache_bytes > need ? cfg->cache_bytes - (size_t)need : 0;
    }
    /* A scan evaluates every row's bound, and a row's bound coefficients
     * (model.h: coef) depend on its xi and its row only; computing them
     * afresh (two transcendentals a row for logistic) was a fifth of a
     * scan on the Fashion pair.  So gibbs keeps them, filled by the first
     * scan, where they fit half of that room; the bound pages get the
     * rest.  calloc: a chain that never scans never touches them. */
    size_t room = bshare;
    /* with a screen (model.h: scan_upper) every row's features' norm
     * (a float) too */
    size_t scr = cfg->m->type->scan_upper ? sizeof(float) : 0;
    if( cfg->z == FLY_Z_GIBBS && c->nc &&
        (double)cfg->N * (double)(c->nc * sizeof(double) + scr) <= 0.5 * (double)room ){
      c->scoef = fly_alloc_array((size_t)cfg->N * c->nc, sizeof *c->scoef);
      if( scr ) c->sxn = fly_alloc_array((size_t)cfg->N, sizeof *c->sxn);
      if( !c->scoef || (scr && !c->sxn) ){
        rc = fly_fail(err, FLY_NOMEM, "bound coefficients of %lld rows",
                      (long long)cfg->N);
        goto done;
      }
      bshare -= (size_t)cfg->N * (c->nc * sizeof *c->scoef + scr);
      /* With a screen (model.h: scan_upper) an f32 copy of every row and
       * its features' norm let a scan rule out most rows with a
       * single-precision product: the copy's bandwidth is half the data
       * pages', and the rows ruled out are not read at all.  Kept where
       * the copy fits the same half as well. */
      double nd = (double)cfg->N;
      if( cfg->m->type->scan_upper &&
          nd * (double)(c->nc * sizeof(double) + (c->W + 1) * sizeof(float))
          <= 0.5 * (double)room ){
        c->sxf = fly_alloc_array((size_t)cfg->N * c->W, sizeof *c->sxf);
        if( !c->sxf ){
          rc = fly_fail(err, FLY_NOMEM, "f32 copy of %lld rows", (long long)cfg->N);
          goto done;
        }
        bshare -= (size_t)cfg->N * c->W * sizeof(float);
      }
    }
    if( (rc = fly_pages_open(c->db, FLY_TABLE_BOUND, cfg->bounds->id, bshare,
                             &c->bnd, err)) ) goto done;
    fly_pages_set_prof(c->bnd, &c->prof);
    fly_pages_hold(c->bnd, 1);
    if( (rc = fly_bright_init(&c->br, cfg->N, c->W, c->nxi, c->nc, err)) ) goto done;
    if( !(c->tcoef = fly_alloc_array(c->nc ? c->nc : 1, sizeof *c->tcoef)) ){
      rc = fly_fail(err, FLY_NOMEM, "chain");
      goto done;
    }
  }
  if( cfg->z == FLY_Z_GIBBS &&
      !(c->pbar = fly_alloc_array(cfg->buckets->nb, sizeof *c->pbar)) ){
    rc = fly_fail(err, FLY_NOMEM, "thinning bounds of %zu buckets", cfg->buckets->nb);
    goto done;
  }
  if( cfg->sketch && (cfg->z != FLY_Z_GIBBS || cfg->sketch->D != cfg->m->D ||
                      cfg->sketch->N != cfg->N ||
                      cfg->sketch->nd != (cfg->m->type->dirs ? cfg->m->K : 1)) ){
    rc = fly_fail(err, FLY_MISUSE, "a sketch of %lld rows x %zu features for a "
                  "%s chain of %lld rows x %zu", (long long)cfg->sketch->N,
                  cfg->sketch->D, fly_zmode_name(cfg->z), (long long)cfg->N, cfg->m->D);
    goto done;
  }
  /* keep_candidates reads a candidate's code by its position: the codes
   * must be the bucket index's record tails */
  if( cfg->sketch && (!cfg->buckets || cfg->buckets->tail < FLY_SKETCH_BYTES ||
                      cfg->sketch->code != fly_buckets_tail(cfg->buckets, 0) ||
                      cfg->sketch->stride != cfg->buckets->stride) ){
    rc = fly_fail(err, FLY_MISUSE, "the sketch's codes are not placed in the bucket "
                  "index (fly_index_build)");
    goto done;
  }
  if( cfg->sketch && (rc = fly_sketch_at_init(cfg->sketch, &c->skat, err)) ) goto done;
  c->th = fly_alloc_array(c->P, sizeof *c->th);
  if( !c->th ){ rc = fly_fail(err, FLY_NOMEM, "chain"); goto done; }
  if( (rc = ev_reserve(c, CHUNK, err)) ) goto done;
  c->L = cfg->isotropic ? NULL : cfg->bounds->chol_cov;
  switch( cfg->kernel ){
  case FLY_K_MH:    rc = fly_mh_init(&c->mh, c->P, c->L, cfg->eps0, err); break;
  case FLY_K_MALA:  rc = fly_mala_init(&c->mala, c->P, c->L, cfg->eps0, err); break;
  case FLY_K_SLICE: rc = fly_slice_init(&c->slice, c->P, c->L, cfg->eps0, err); break;
  case FLY_K_HMC:
    rc = fly_hmc_init(&c->hmc, c->P, c->L, cfg->eps0, err);
    if( rc == FLY_OK ){
      c->hmc.n_leap = cfg->n_leap > 0 ? (size_t)cfg->n_leap : c->hmc.n_leap;
      /* adapting steps, not iterations: every theta update adapts */
      c->hmc.n_warmup = (size_t)cfg->n_warmup * (size_t)theta_steps(cfg);
    }
    break;
  default: rc = fly_fail(err, FLY_MISUSE, "unknown theta kernel %d", (int)cfg->kernel);
  }
  if( rc ) goto done;
  c->tgt.ctx = c;
  c->tgt.P = c->P;
  c->tgt.logp = cfg->z == FLY_Z_REGULAR ? regular_logp : flymc_logp;
  c->tgt.accept = cfg->z == FLY_Z_REGULAR ? regular_accept : flymc_accept;
done:
  if( rc ){
    fly_chain_close(c);
    return rc;
  }
  *pc = c;
  return FLY_OK;
}

void fly_chain_release(fly_chain *c)
{
  if( c->data ) fly_pages_release(c->data);
  if( c->bnd ) fly_pages_release(c->bnd);
}

void fly_chain_close(fly_chain *c)
{
  if( !c ) return;
  fly_mh_free(&c->mh);
  fly_mala_free(&c->mala);
  fly_slice_free(&c->slice);
  fly_hmc_free(&c->hmc);
  fly_bright_free(&c->br);
  fly_pages_close(c->data);
  fly_pages_close(c->bnd);
  fly_db_close(c->db);
  fly_free(c->th);
  fly_free(c->logL);
  fly_free(c->logB);
  fly_free(c->work);
  fly_free(c->ones);
  fly_free(c->cid);
  fly_free(c->cpos);
  fly_free(c->cX);
  fly_free(c->cB);
  fly_free(c->cgap);
  fly_free(c->cpbar);
  fly_free(c->cu);
  fly_free(c->cbk);
  fly_free(c->cph);
  fly_sketch_at_free(&c->skat);
  fly_free(c->cxi);
  fly_free(c->ccf);
  fly_free(c->cxf);
  fly_free(c->tcoef);
  fly_free(c->scoef);
  fly_free(c->sxf);
  fly_free(c->sxn);
  fly_free(c->pbar);
  fly_free(c);
}

const double *fly_chain_theta(const fly_chain *c) { return c->th; }

int fly_chain_keeps_coef(const fly_chain *c)
{
  return c->sxf ? 2 : c->scoef != NULL;
}
void fly_chain_screen_counts(const fly_chain *c, int64_t *ruled_out, int64_t *evaluated)
{
  *ruled_out = c->n_screened;
  *evaluated = c->n_survived;
}
struct fly_target *fly_chain_target(fly_chain *c) { return &c->tgt; }
size_t fly_chain_dim(const fly_chain *c) { return c->P; }

fly_prof *fly_chain_prof(fly_chain *c) { return &c->prof; }

static void reset_counters(fly_chain *c)
{
  c->n_lik = c->n_reads = c->n_cand = c->n_viol = 0;
  c->scanned = 0;
}

/* Evaluate the target at the current theta and make it current. */
static fly_rc refresh(fly_chain *c, fly_err *err)
{
  double lp;
  fly_rc rc = c->tgt.logp(c->tgt.ctx, c->th, &lp, NULL, err);
  if( rc ) return rc;
  c->tgt.accept(c->tgt.ctx);
  c->lp = lp;
  return FLY_OK;
}

fly_rc fly_chain_init(fly_chain *c, fly_err *err)
{
  const fly_bounds *bd = c->cfg->bounds;
  fly_rc rc = ev_reserve(c, c->P, err);
  if( rc ) return rc;
  memcpy(c->th, bd->theta_map, c->P * sizeof *c->th);
  if( !c->cfg->init_map ){
    /* theta_0 = MAP + chol(cov) e: a draw from the Laplace approximation */
    double *e = c->logL;
    fly_rng_normals(&c->rng, e, c->P);
    for(size_t i = 0; i < c->P; i++){
      double s = 0;
      for(size_t j = 0; j <= i; j++) s += bd->chol_cov[i * c->P + j] * e[j];
      c->th[i] += s;
    }
  }
  reset_counters(c);
  int began = fly_db_read_begin(c->db);
  /* z_0 ~ p(z | theta_0), every row dark before.  With a bucket index this
   * is one thinned z step (it scans only if theta_0 is so far out that the
   * thinning bound expects too many candidates); otherwise a full scan. */
  if( c->cfg->z == FLY_Z_GIBBS ) rc = z_gibbs(c, err);
  else if( c->cfg->z != FLY_Z_REGULAR ) rc = scan_gibbs(c, err);
  fly_db_read_end(c->db, began);
  if( rc ) return rc;
  return refresh(c, err);
}

/* The z step changed the target under the current point: gradient kernels
 * must not reuse their cached log density and gradient. */
static void kernel_invalidate(fly_chain *c)
{
  if( c->cfg->kernel == FLY_K_MALA ) fly_mala_invalidate(&c->mala);
  if( c->cfg->kernel == FLY_K_HMC ) fly_hmc_invalidate(&c->hmc);
}

/* The z step of the current mode, then the log density of the new state. */
static fly_rc zstep(fly_chain *c, fly_err *err)
{
  fly_rc rc = FLY_OK;
  if( c->cfg->z != FLY_Z_REGULAR ){
    fly_prof_push(&c->prof, FLY_PROF_Z);
    int began = fly_db_read_begin(c->db);
    switch( c->cfg->z ){
    case FLY_Z_EXPLICIT: rc = z_explicit(c, err); break;
    case FLY_Z_IMPLICIT: rc = z_implicit(c, err); break;
    case FLY_Z_GIBBS:    rc = z_gibbs(c, err); break;
    default:             rc = FLY_MISUSE; break;
    }
    fly_db_read_end(c->db, began);
    size_t B = (size_t)fly_bright_count(&c->br);
    if( rc == FLY_OK ) rc = ev_reserve(c, B, err);
    if( rc == FLY_OK ){
      c->lp = c->base + ltilde_sum(c, c->br.gap, B);
      kernel_invalidate(c);
    }
    fly_prof_pop(&c->prof);
  }
  return rc;
}

static void fill_stats(fly_chain *c, int64_t acc, double eps, fly_iter_stats *s)
{
  s->lp = c->lp;
  s->n_bright = c->cfg->z == FLY_Z_REGULAR ? c->cfg->N : fly_bright_count(&c->br);
  s->n_lik = c->n_lik;
  s->n_reads = c->n_reads;
  s->n_cand = c->n_cand;
  s->n_viol = c->n_viol;
  s->accepted = acc;
  s->eps = eps;
  s->scanned = c->scanned;
}

/* The step size (slice: interval width) the next theta step uses. */
static double kernel_eps(const fly_chain *c, int adapt)
{
  switch( c->cfg->kernel ){
  case FLY_K_MALA:  return fly_mala_eps(&c->mala);
  case FLY_K_SLICE: return c->slice.st.w;
  case FLY_K_HMC:   return fly_hmc_eps(&c->hmc, adapt);
  default:          return exp(c->mh.st.log_eps);
  }
}

static fly_rc theta_step(fly_chain *c, int adapt, int *acc, fly_err *err)
{
  switch( c->cfg->kernel ){
  case FLY_K_MALA:
    return fly_mala_step(&c->mala, &c->tgt, &c->rng, c->th, &c->lp, adapt, acc, err);
  case FLY_K_SLICE:
    return fly_slice_step(&c->slice, &c->tgt, &c->rng, c->th, &c->lp, adapt, acc, err);
  case FLY_K_HMC:
    return fly_hmc_step(&c->hmc, &c->tgt, &c->rng, c->th, &c->lp, adapt, acc, err);
  default:
    return fly_mh_step(&c->mh, &c->tgt, &c->rng, c->th, &c->lp, adapt, acc, err);
  }
}

fly_rc fly_chain_step(fly_chain *c, int adapt, fly_iter_stats *s, fly_err *err)
{
  fly_rc rc = FLY_OK;
  int64_t acc = 0, K = theta_steps(c->cfg);
  double eps = kernel_eps(c, adapt);
  reset_counters(c);
  fly_prof_push(&c->prof, FLY_PROF_THETA);
  for(int64_t k = 0; k < K && rc == FLY_OK; k++){
    int a = 0;
    rc = theta_step(c, adapt, &a, err);
    acc += a;
  }
  fly_prof_pop(&c->prof);
  if( rc == FLY_OK ) rc = zstep(c, err);
  if( rc ) return rc;
  fill_stats(c, acc, eps, s);
  if( isnan(c->lp) ) return nan_fail(c, err, "after the z step");
  return FLY_OK;
}

fly_rc fly_chain_set_theta(fly_chain *c, const double *th, fly_err *err)
{
  memcpy(c->th, th, c->P * sizeof *th);
  reset_counters(c);
  kernel_invalidate(c);
  return refresh(c, err);
}

fly_rc fly_chain_zstep(fly_chain *c, fly_iter_stats *s, fly_err *err)
{
  reset_counters(c);
  fly_rc rc = zstep(c, err);
  if( rc ) return rc;
  fill_stats(c, 0, kernel_eps(c, 0), s);
  return FLY_OK;
}

int fly_chain_is_bright(const fly_chain *c, int64_t n)
{
  return c->cfg->z == FLY_Z_REGULAR || fly_zset_is_bright(c->br.z, n);
}

/* ---- checkpoints ------------------------------------------------------ */

static size_t kernel_state_size(const fly_chain *c)
{
  switch( c->cfg->kernel ){
  case FLY_K_MALA:  return fly_mala_ckpt_size(&c->mala);
  case FLY_K_SLICE: return sizeof c->slice.st;
  case FLY_K_HMC:   return fly_hmc_ckpt_size(&c->hmc);
  default:          return sizeof c->mh.st;
  }
}

fly_rc fly_chain_save(const fly_chain *c, void **blob, size_t *len, fly_err *err)
{
  fly_ckpt_head h;
  unsigned char *rows, *ks;
  memset(&h, 0, sizeof h);
  h.magic = FLY_CKPT_MAGIC;
  h.version = FLY_CKPT_VERSION;
  h.P = (uint32_t)c->P;
  h.kernel = (uint32_t)c->cfg->kernel;
  h.B = c->cfg->z == FLY_Z_REGULAR ? 0 : fly_bright_count(&c->br);
  h.klen = kernel_state_size(c);
  h.lp = c->lp;
  h.base = c->base;
  memcpy(h.rng, c->rng.s, sizeof h.rng);
  size_t n = fly_ckpt_size(c->P, (size_t)h.klen, h.B);
  unsigned char *p = fly_alloc_array(n, 1);
  if( !p ) return fly_fail(err, FLY_NOMEM, "checkpoint of %zu bytes", n);
  ks = fly_ckpt_write(p, &h, c->th, &rows);
  switch( c->cfg->kernel ){
  case FLY_K_MALA:  fly_mala_ckpt_save(&c->mala, ks); break;
  case FLY_K_SLICE: memcpy(ks, &c->slice.st, sizeof c->slice.st); break;
  case FLY_K_HMC:   fly_hmc_ckpt_save(&c->hmc, ks); break;
  default:          memcpy(ks, &c->mh.st, sizeof c->mh.st); break;
  }
  for(int64_t i = 0; i < h.B; i++)
    fly_ckpt_put_row(rows, i, fly_zset_ith_bright(c->br.z, i), c->br.gap[i]);
  *blob = p;
  *len = n;
  return FLY_OK;
}

fly_rc fly_chain_restore(fly_chain *c, const void *blob, size_t len, fly_err *err)
{
  fly_ckpt_view v;
  int64_t *rows = NULL;
  fly_rc rc = fly_ckpt_parse(blob, len, c->P, c->cfg->N, &v, err);
  if( rc ) return fly_err_prefix(err, "chain %d", c->id + 1);
  if( v.head.kernel != (uint32_t)c->cfg->kernel || v.head.klen != kernel_state_size(c) ||
      (c->cfg->z == FLY_Z_REGULAR && v.head.B != 0) )
    return fly_fail(err, FLY_CORRUPT, "checkpoint of chain %d: written by kernel %u with "
                    "%llu bytes of state and %lld bright rows, not this run's %s",
                    c->id + 1, v.head.kernel, (unsigned long long)v.head.klen,
                    (long long)v.head.B, fly_kernel_name(c->cfg->kernel));
  memcpy(c->th, v.theta, c->P * sizeof(double));
  c->lp = v.head.lp;
  c->base = v.head.base;
  memcpy(c->rng.s, v.head.rng, sizeof v.head.rng);
  switch( c->cfg->kernel ){
  case FLY_K_MALA:  rc = fly_mala_ckpt_load(&c->mala, v.kstate, (size_t)v.head.klen, err); break;
  case FLY_K_SLICE: memcpy(&c->slice.st, v.kstate, sizeof c->slice.st); break;
  case FLY_K_HMC:   rc = fly_hmc_ckpt_load(&c->hmc, v.kstate, (size_t)v.head.klen, err); break;
  default:          memcpy(&c->mh.st, v.kstate, sizeof c->mh.st); break;
  }
  if( rc ) return fly_err_prefix(err, "checkpoint of chain %d", c->id + 1);
  if( c->cfg->z == FLY_Z_REGULAR ) return FLY_OK;

  size_t B = (size_t)v.head.B;
  rows = fly_alloc_array(B ? B : 1, sizeof *rows);
  if( !rows ) return fly_fail(err, FLY_NOMEM, "checkpoint restore");
  if( (rc = cand_reserve(c, B, err)) ) goto done;
  if( (rc = fly_bright_reserve(&c->br, B, err)) ) goto done;
  for(size_t i = 0; i < B; i++) fly_ckpt_row(&v, (int64_t)i, &rows[i], &c->cgap[i]);
  /* Rebuild the block in the saved order: data from the store, gaps saved. */
  if( B ){
    int began = fly_db_read_begin(c->db);
    rc = fly_pages_read_rows(c->data, rows, B, c->cX, err);
    if( rc == FLY_OK ) rc = fly_pages_read_rows(c->bnd, rows, B, c->cB, err);
    fly_db_read_end(c->db, began);
    if( rc ) goto done;
  }
  if( (rc = fly_zset_set_bright(c->br.z, rows, (int64_t)B, err)) ){
    fly_err_prefix(err, "checkpoint of chain %d", c->id + 1);
    goto done;
  }
  for(size_t i = 0; i < B; i++){
    memcpy(c->br.X + i * c->W, c->cX + i * c->W, c->W * sizeof(double));
    for(size_t j = 0; j < c->nxi; j++)
      c->br.xi[i * c->nxi + j] = (float)c->cB[i * c->bw + j];
    c->br.gap[i] = c->cgap[i];
  }
  if( c->nc ) c->m->type->coef(c->m, c->br.X, c->W, c->br.xi, B, c->br.coef);
done:
  fly_free(rows);
  return rc;
}
