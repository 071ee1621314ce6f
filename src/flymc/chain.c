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
 * free (docs/performance.md §2.3).
 *
 * The theta kernel is a type table (samplers/kernel.h) and the z step's
 * mode another (chain_impl.h: fly_zstep_type, one file each, zstep_*.c,
 * whose file comments say how each mode works); the chain calls through
 * them and names neither a kernel nor a mode.
 *
 * Regular mode (zstep_regular.c): log p(theta | x) over all rows, from an
 * in-memory block (or page by page), through the same kernel; each block
 * of rows goes through the model's fused full-data sum (model.h: full),
 * one product with the block each way, or eval and grad without one.
 *
 * The steady state allocates nothing: buffers grow only when the bright set
 * or a candidate batch is larger than ever before.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "flymc/chain_impl.h"
#include "flymc/ckpt.h"
#include "util/mem.h"
#include "util/vmath.h"

#define CHUNK 4096            /* rows per model evaluation in regular mode */
#define FULL_BLOCK_BYTES (256u << 10)   /* bytes of rows per in-memory full-data block */

/* Rows per block of the in-memory full-data sum: the block stays in the
 * core's own cache between the model's product with it and the one with
 * its transpose (FULL_BLOCK_BYTES of rows), and at most CHUNK, the
 * evaluation buffers' size. */
static size_t full_rows(const fly_chain *c)
{
  size_t r = FULL_BLOCK_BYTES / (c->W * sizeof(double));
  return r < 64 ? 64 : r > CHUNK ? CHUNK : r;
}

const fly_kernel_type *fly_kernel_type_of(fly_kernel k)
{
  for(size_t i = 0; fly_kernel_types[i]; i++)
    if( i == (size_t)k ) return fly_kernel_types[i];
  return NULL;
}

const char *fly_kernel_name(fly_kernel k)
{
  const fly_kernel_type *t = fly_kernel_type_of(k);
  return t ? t->name : "?";
}

int fly_kernel_find(const char *name)
{
  for(size_t i = 0; fly_kernel_types[i]; i++)
    if( strcmp(fly_kernel_types[i]->name, name) == 0 ) return (int)i;
  return -1;
}

double fly_kernel_default_step(fly_kernel k, size_t P, size_t n_leap, int isotropic)
{
  const fly_kernel_type *t = fly_kernel_type_of(k);
  if( !t ) return 0;
  double eps = t->default_step(P, n_leap);
  if( isotropic ) eps *= 0.01;
  return eps;
}

static const fly_zstep_type *zstep_type_of(fly_zmode z)
{
  for(size_t i = 0; fly_zstep_types[i]; i++)
    if( i == (size_t)z ) return fly_zstep_types[i];
  return NULL;
}

const char *fly_zmode_name(fly_zmode z)
{
  const fly_zstep_type *t = zstep_type_of(z);
  return t ? t->name : "?";
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

fly_rc fly_chain_flymc_logp(void *ctx, const double *th, double *lp, double *grad,
                            fly_err *err)
{
  fly_chain *c = ctx;
  const fly_model *m = c->m;
  size_t B = (size_t)fly_bright_count(&c->br);
  if( grad ) memset(grad, 0, c->P * sizeof *grad);
  double base = fly_model_log_prior(m, th, grad)
              + m->type->bound_sum(m, c->cfg->bounds->mom, th, grad, c->work)
              - (double)c->cfg->N * m->slack;
  double sum = 0;
  if( B ){
    fly_rc rc = fly_chain_ev_reserve(c, B, err);
    if( rc ) return rc;
    /* with eval_sd the gradient below reuses the rows' products with th */
    const fly_model_coef *cf = m->type->coef;
    int sd = c->nc && cf->eval_sd && grad;
    if( c->nc ){
      if( sd )
        cf->eval_sd(m, th, c->br.X, c->W, c->br.coef, B, c->logL, c->logB, c->sd, c->work);
      else
        cf->eval(m, th, c->br.X, c->W, c->br.coef, B, c->logL, c->logB, c->work);
      fly_model_slack_logB(m, c->logB, B);
    }else
      m->type->eval(m, th, c->br.X, c->W, c->br.xi, B, c->logL, c->logB, c->work);
    for(size_t i = 0; i < B; i++) c->br.gap_new[i] = c->logL[i] - c->logB[i];
    sum = ltilde_sum(c, c->br.gap_new, B);
    c->n_lik += (int64_t)B;
    if( grad && sum > -INFINITY ){
      /* d log Ltilde = d gap / (1 - exp(-gap)): weights on grad log L and
       * grad log B (logL, logB are free again and hold the weights). */
      fly_inv_p_bright_n(c->br.gap_new, c->logL, B);
      for(size_t i = 0; i < B; i++) c->logB[i] = -c->logL[i];
      if( sd )
        cf->grad_sd(m, c->br.X, c->W, c->br.coef, B, c->logL, c->logB, c->sd, grad, c->work);
      else if( c->nc )
        cf->grad(m, th, c->br.X, c->W, c->br.coef, B, c->logL, c->logB, grad, c->work);
      else
        m->type->grad(m, th, c->br.X, c->W, c->br.xi, B, c->logL, c->logB, grad, c->work);
    }
  }
  c->base_new = base;
  *lp = base + sum;
  if( isnan(*lp) ) return nan_fail(c, err, "FlyMC conditional");
  return FLY_OK;
}

void fly_chain_flymc_accept(void *ctx)
{
  fly_chain *c = ctx;
  fly_bright_accept(&c->br);
  c->base = c->base_new;
}

/* sum_i log L_i over n rows X (n <= ev_cap), grad += its gradient if
 * non-NULL: the model's fused full-data sum, else eval and grad. */
static double full_block(fly_chain *c, const double *th, const double *X, size_t n,
                         double *grad)
{
  const fly_model *m = c->m;
  if( m->type->full ) return m->type->full->logp_grad(m, th, X, c->W, n, grad, c->work);
  m->type->eval(m, th, X, c->W, NULL, n, c->logL, NULL, c->work);
  double sum = fly_vsum(c->logL, n);
  if( grad ) m->type->grad(m, th, X, c->W, NULL, n, c->ones, NULL, grad, c->work);
  return sum;
}

fly_rc fly_chain_full_sum(fly_chain *c, const double *th, double *out, double *grad,
                          fly_err *err)
{
  const fly_model *m = c->m;
  const fly_chain_cfg *cfg = c->cfg;
  if( grad ) memset(grad, 0, c->P * sizeof *grad);
  double sum = fly_model_log_prior(m, th, grad);
  fly_rc rc;
  if( cfg->Xall ){
    size_t blk = full_rows(c);
    for(int64_t r = 0; r < cfg->N; r += (int64_t)blk){
      size_t n = (size_t)(cfg->N - r < (int64_t)blk ? cfg->N - r : (int64_t)blk);
      sum += full_block(c, th, cfg->Xall + (size_t)r * c->W, n, grad);
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
      if( (rc = fly_chain_ev_reserve(c, n, err)) ) return rc;
      sum += full_block(c, th, rows, n, grad);
    }
  }
  *out = sum;
  if( isnan(sum) ) return nan_fail(c, err, "full-data posterior");
  return FLY_OK;
}

/* Rows whose loads fly_chain_read_data starts ahead of their copy. */
#define READ_AHEAD 8

/* Start loading every cache line of p[0 .. bytes). */
static inline void prefetch_bytes(const void *p, size_t bytes)
{
  const char *a = p;
  for(size_t o = 0; o < bytes; o += 64) __builtin_prefetch(a + o);
  __builtin_prefetch(a + bytes - 1);
}

fly_rc fly_chain_read_data(fly_chain *c, const int64_t *ids, size_t n, double *out,
                           fly_err *err)
{
  const double *X = c->cfg->Xall;
  if( !X ) return fly_pages_read_rows(c->data, ids, n, out, err);
  /* The rows are scattered over all of X: each is a cache miss.  Loads of
   * the rows READ_AHEAD places on are started before each copy, so the
   * misses overlap instead of each copy waiting for its own. */
  const size_t bytes = c->W * sizeof *out;
  for(size_t i = 0; i < n; i++){
    if( ids[i] < 0 || ids[i] >= c->cfg->N )
      return fly_fail(err, FLY_RANGE, "row %lld of %lld", (long long)ids[i],
                      (long long)c->cfg->N);
  }
  for(size_t i = 0; i < n && i < READ_AHEAD; i++)
    prefetch_bytes(X + (size_t)ids[i] * c->W, bytes);
  for(size_t i = 0; i < n; i++){
    if( i + READ_AHEAD < n ) prefetch_bytes(X + (size_t)ids[i + READ_AHEAD] * c->W, bytes);
    memcpy(out + i * c->W, X + (size_t)ids[i] * c->W, bytes);
  }
  return FLY_OK;
}

int fly_chain_row_cached(const fly_chain *c, int64_t row)
{
  return c->cfg->Xall ? 1 : fly_pages_row_cached(c->data, row);
}

fly_rc fly_chain_full_logpost(fly_chain *c, double *lp, double *seconds,
                              fly_err *err)
{
  double t0 = now();
  fly_rc rc = fly_chain_ev_reserve(c, CHUNK, err);
  if( rc == FLY_OK && !c->cfg->Xall && !c->data )
    rc = fly_fail(err, FLY_MISUSE, "no data handle for the full log posterior");
  int began = fly_db_read_begin(c->db);
  if( rc == FLY_OK ) rc = fly_chain_full_sum(c, c->th, lp, NULL, err);
  fly_db_read_end(c->db, began);
  *seconds = now() - t0;
  return rc;
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
  c->nc = cfg->m->type->coef ? cfg->m->type->coef->n(cfg->m) : 0;
  c->kt = fly_kernel_type_of(cfg->kernel);
  c->zt = zstep_type_of(cfg->z);
  fly_rng_seed(&c->rng, seed, (uint64_t)chain_id);
  if( !c->kt || !c->zt ){
    rc = fly_fail(err, FLY_MISUSE, "unknown %s %d", c->kt ? "z mode" : "theta kernel",
                  c->kt ? (int)cfg->z : (int)cfg->kernel);
    goto done;
  }
  if( (rc = fly_db_open(cfg->db_path, FLY_DB_READONLY, &c->db, err)) ) goto done;
  if( c->zt->state_size && !(c->zs = fly_alloc_array(1, c->zt->state_size)) ){
    rc = fly_fail(err, FLY_NOMEM, "%s z step", c->zt->name);
    goto done;
  }
  if( (rc = c->zt->open(c, err)) ) goto done;
  c->th = fly_alloc_array(c->P, sizeof *c->th);
  c->ks = fly_alloc_array(1, c->kt->state_size);
  if( !c->th || !c->ks ){ rc = fly_fail(err, FLY_NOMEM, "chain"); goto done; }
  if( (rc = fly_chain_ev_reserve(c, CHUNK, err)) ) goto done;
  fly_kernel_cfg kc = {
    /* proposals shaped by the Laplace covariance (borrowed: the bounds
     * outlive the chain), or isotropic */
    .P = c->P, .L = cfg->isotropic ? NULL : cfg->bounds->chol_cov, .eps0 = cfg->eps0,
    .n_leap = cfg->n_leap > 0 ? (size_t)cfg->n_leap : 0,
    /* adapting steps, not iterations: every theta update adapts */
    .n_adapt = (size_t)cfg->n_warmup * (size_t)theta_steps(cfg),
  };
  if( (rc = c->kt->init(c->ks, &kc, err)) ) goto done;
  c->tgt.ctx = c;
  c->tgt.P = c->P;
  c->tgt.logp = c->zt->logp;
  c->tgt.accept = c->zt->accept;
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
  if( c->ks ) c->kt->free(c->ks);
  fly_free(c->ks);
  if( c->zs && c->zt->close ) c->zt->close(c);
  fly_free(c->zs);
  fly_bright_free(&c->br);
  fly_pages_close(c->data);
  fly_pages_close(c->bnd);
  fly_db_close(c->db);
  fly_free(c->th);
  fly_free(c->logL);
  fly_free(c->logB);
  fly_free(c->work);
  fly_free(c->sd);
  fly_free(c->ones);
  fly_free(c->cid);
  fly_free(c->cX);
  fly_free(c->cB);
  fly_free(c->cgap);
  fly_free(c->cxi);
  fly_free(c->tcoef);
  fly_free(c);
}

const double *fly_chain_theta(const fly_chain *c) { return c->th; }

int fly_chain_keeps_coef(const fly_chain *c)
{
  const fly_zscan *s = c->keep;
  return !s ? 0 : s->sxf ? 2 : s->scoef != NULL;
}
void fly_chain_screen_counts(const fly_chain *c, int64_t *ruled_out, int64_t *evaluated)
{
  *ruled_out = c->keep ? c->keep->n_screened : 0;
  *evaluated = c->keep ? c->keep->n_survived : 0;
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
  fly_rc rc = fly_chain_ev_reserve(c, c->P, err);
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
  /* z_0 ~ p(z | theta_0), every row dark before (gibbs: one thinned z
   * step; explicit, implicit: one scan) */
  if( c->zt->init ) rc = c->zt->init(c, err);
  fly_db_read_end(c->db, began);
  if( rc ) return rc;
  return refresh(c, err);
}

/* The z step changed the target under the current point: gradient kernels
 * must not reuse their cached log density and gradient. */
static void kernel_invalidate(fly_chain *c)
{
  if( c->kt->invalidate ) c->kt->invalidate(c->ks);
}

/* The z step of the current mode, then the log density of the new state.
 * Its reads share one read transaction: each page fetch outside a
 * transaction would open and close its own (two fcntl calls each).  The
 * statements are prepared once (sqlite3_exec would compile and allocate
 * them at every step). */
static fly_rc zstep(fly_chain *c, fly_err *err)
{
  fly_rc rc = FLY_OK;
  if( c->zt->step ){
    fly_prof_push(&c->prof, FLY_PROF_Z);
    int began = fly_db_read_begin(c->db);
    rc = c->zt->step(c, err);
    fly_db_read_end(c->db, began);
    size_t B = (size_t)fly_bright_count(&c->br);
    if( rc == FLY_OK ) rc = fly_chain_ev_reserve(c, B, err);
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
  s->n_bright = c->zt->all_bright ? c->cfg->N : fly_bright_count(&c->br);
  s->n_lik = c->n_lik;
  s->n_reads = c->n_reads;
  s->n_cand = c->n_cand;
  s->n_viol = c->n_viol;
  s->accepted = acc;
  s->eps = eps;
  s->scanned = c->scanned;
  s->has_kstats = 0;
  memset(&s->kstats, 0, sizeof s->kstats);
}

/* The step size (slice: interval width) the next theta step uses. */
static double kernel_eps(const fly_chain *c, int adapt)
{
  return c->kt->eps(c->ks, adapt);
}

/* Fold the kernel's statistics of update k (0-based) into *ks. */
static void kstats_add(const fly_chain *c, int64_t k, fly_kernel_stats *ks)
{
  fly_kernel_stats one;
  c->kt->stats(c->ks, &one);
  if( k == 0 ){ *ks = one; return; }
  if( one.treedepth > ks->treedepth ) ks->treedepth = one.treedepth;
  ks->n_leapfrog += one.n_leapfrog;
  ks->divergent |= one.divergent;
  ks->energy = one.energy;
  ks->accept_stat += (one.accept_stat - ks->accept_stat) / (double)(k + 1);
}

fly_rc fly_chain_step(fly_chain *c, int adapt, fly_iter_stats *s, fly_err *err)
{
  fly_rc rc = FLY_OK;
  int64_t acc = 0, K = theta_steps(c->cfg);
  double eps = kernel_eps(c, adapt);
  fly_kernel_stats ks = {0, 0, 0, 0, 0};
  reset_counters(c);
  fly_prof_push(&c->prof, FLY_PROF_THETA);
  for(int64_t k = 0; k < K && rc == FLY_OK; k++){
    int a = 0;
    rc = c->kt->step(c->ks, &c->tgt, &c->rng, c->th, &c->lp, adapt, &a, err);
    acc += a;
    if( rc == FLY_OK && c->kt->stats ) kstats_add(c, k, &ks);
  }
  fly_prof_pop(&c->prof);
  if( rc == FLY_OK ) rc = zstep(c, err);
  if( rc ) return rc;
  fill_stats(c, acc, eps, s);
  s->has_kstats = c->kt->stats != NULL;
  s->kstats = ks;
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
  return c->zt->all_bright || fly_zset_is_bright(c->br.z, n);
}

/* ---- checkpoints ------------------------------------------------------ */

fly_rc fly_chain_save(const fly_chain *c, void **blob, size_t *len, fly_err *err)
{
  fly_ckpt_head h;
  unsigned char *rows, *ks;
  memset(&h, 0, sizeof h);
  h.magic = FLY_CKPT_MAGIC;
  h.version = FLY_CKPT_VERSION;
  h.P = (uint32_t)c->P;
  h.kernel = (uint32_t)c->cfg->kernel;
  h.B = c->zt->all_bright ? 0 : fly_bright_count(&c->br);
  h.klen = c->kt->ckpt_size(c->ks);
  h.lp = c->lp;
  h.base = c->base;
  memcpy(h.rng, c->rng.s, sizeof h.rng);
  size_t n = fly_ckpt_size(c->P, (size_t)h.klen, h.B);
  unsigned char *p = fly_alloc_array(n, 1);
  if( !p ) return fly_fail(err, FLY_NOMEM, "checkpoint of %zu bytes", n);
  ks = fly_ckpt_write(p, &h, c->th, &rows);
  c->kt->ckpt_save(c->ks, ks);
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
  if( v.head.kernel != (uint32_t)c->cfg->kernel || v.head.klen != c->kt->ckpt_size(c->ks) ||
      (c->zt->all_bright && v.head.B != 0) )
    return fly_fail(err, FLY_CORRUPT, "checkpoint of chain %d: written by kernel %u with "
                    "%llu bytes of state and %lld bright rows, not this run's %s",
                    c->id + 1, v.head.kernel, (unsigned long long)v.head.klen,
                    (long long)v.head.B, fly_kernel_name(c->cfg->kernel));
  memcpy(c->th, v.theta, c->P * sizeof(double));
  c->lp = v.head.lp;
  c->base = v.head.base;
  memcpy(c->rng.s, v.head.rng, sizeof v.head.rng);
  if( (rc = c->kt->ckpt_load(c->ks, v.kstate, (size_t)v.head.klen, err)) )
    return fly_err_prefix(err, "checkpoint of chain %d", c->id + 1);
  if( c->zt->all_bright ) return FLY_OK;

  size_t B = (size_t)v.head.B;
  rows = fly_alloc_array(B ? B : 1, sizeof *rows);
  if( !rows ) return fly_fail(err, FLY_NOMEM, "checkpoint restore");
  if( (rc = fly_chain_cand_reserve(c, B, err)) ) goto done;
  if( (rc = fly_bright_reserve(&c->br, B, err)) ) goto done;
  for(size_t i = 0; i < B; i++) fly_ckpt_row(&v, (int64_t)i, &rows[i], &c->cgap[i]);
  /* Rebuild the block in the saved order: data from the store, gaps saved. */
  if( B ){
    int began = fly_db_read_begin(c->db);
    rc = fly_chain_read_data(c, rows, B, c->cX, err);
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
  if( c->nc ) c->m->type->coef->make(c->m, c->br.X, c->W, c->br.xi, B, c->br.coef);
done:
  fly_free(rows);
  return rc;
}
