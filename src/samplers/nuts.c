/*
 * nuts.c -- multinomial NUTS in the whitened Laplace metric (see nuts.h).
 *
 * A step draws r ~ N(0, diag(1/minv)) in u = L^-1 th and grows a
 * trajectory by doubling: at depth d a subtree of 2^d leapfrog steps of
 * +eps or -eps (a fair coin) is built from the forward or backward end.
 * Points are weighted by exp(H0 - H).  Within a subtree the proposal is
 * chosen by uniform progressive sampling (the final half replaces the
 * initial half's proposal with probability w_final / w_subtree); at the top
 * the new subtree replaces the sample with probability
 * min(1, w_subtree / w_old) (biased progressive sampling, which favours
 * points far from the start).  A (sub)tree stops when, with rho the sum of
 * its momenta and p#- , p#+ its end velocities minv .* p, p#- . rho <= 0 or
 * p#+ . rho <= 0; on every merge the same test is also made on the left
 * half plus the first point of the right half and on the right half plus
 * the last point of the left (Stan >= 2.21), which catches U-turns a
 * merge of two short halves would miss.  A divergent subtree is discarded
 * and ends the trajectory.  The criterion is a function of the tree alone,
 * not of where in it the start lies, so the kernel leaves p(th) invariant
 * (Betancourt 2017, appendix A).
 *
 * The leapfrog is HMC's, written in th (grad_u = L^T grad_th, dth = L du).
 * The acceptance statistic for dual averaging is the mean of
 * min(1, exp(H0 - H)) over the trajectory's leapfrog points (Stan's).
 *
 * Cost per step: one logp-with-gradient call per leapfrog (2^depth - 1 for
 * a tree that stopped at a U-turn or the depth limit, at most 2^10 - 1 =
 * 1023, plus the part of a discarded last subtree up to the U-turn or
 * divergence that ended it), +1 at the sampled point when it is not the
 * last one evaluated (target.h),
 * plus O(P^2) per leapfrog for the products with L.  No allocation after
 * fly_nuts_init; recursion depth at most max_depth.
 */
#include "samplers/nuts.h"

#include <math.h>
#include <string.h>

#include "samplers/kernel.h"
#include "samplers/trimul.h"
#include "util/mem.h"

#define N_TOP 23      /* trajectory vectors of P */
#define N_LOC 7       /* build() locals per depth, vectors of P */
#define TOP_SLOT (FLY_NUTS_MAX_DEPTH + 1)   /* the top-level proposal slot */

fly_rc fly_nuts_init(fly_nuts *k, size_t P, const double *L, double eps0,
                     size_t n_adapt, fly_err *err)
{
  fly_rc rc;
  memset(k, 0, sizeof *k);
  if( (rc = fly_hmc_init(&k->h, P, L, eps0, err)) ) return rc;
  k->h.jitter = 0;
  k->h.n_warmup = n_adapt;
  k->P = P;
  k->max_depth = FLY_NUTS_MAX_DEPTH;
  k->max_dH = 1000;
  size_t nv = N_TOP + N_LOC * (FLY_NUTS_MAX_DEPTH + 1) + (FLY_NUTS_MAX_DEPTH + 2);
  k->ws = P > ((size_t)-1) / nv ? NULL : fly_alloc_array(nv * P, sizeof(double));
  if( !k->ws ){
    fly_nuts_free(k);
    return fly_fail(err, FLY_NOMEM, "NUTS workspace (P = %zu)", P);
  }
  double *w = k->ws;
  double **top[N_TOP] = { &k->zx, &k->zr, &k->zg, &k->fx, &k->fr, &k->fg,
                          &k->bx, &k->br, &k->bg, &k->sx, &k->p_ff, &k->s_ff,
                          &k->p_fb, &k->s_fb, &k->p_bf, &k->s_bf, &k->p_bb,
                          &k->s_bb, &k->rho, &k->rho_f, &k->rho_b, &k->rho_e,
                          &k->t };
  for(size_t i = 0; i < N_TOP; i++){ *top[i] = w; w += P; }
  k->loc = w;
  w += N_LOC * (FLY_NUTS_MAX_DEPTH + 1) * P;
  k->qx = w;
  return FLY_OK;
}

void fly_nuts_free(fly_nuts *k)
{
  if( !k ) return;
  fly_hmc_free(&k->h);
  fly_free(k->ws);
  k->ws = NULL;
}

static int all_finite(const double *v, size_t P)
{
  for(size_t i = 0; i < P; i++) if( !isfinite(v[i]) ) return 0;
  return 1;
}

static double kinetic(const fly_nuts *k, const double *r)
{
  double s = 0;
  for(size_t i = 0; i < k->P; i++) s += k->h.minv[i] * r[i] * r[i];
  return 0.5 * s;
}

static double lse(double a, double b)
{
  if( a == -INFINITY ) return b;
  if( b == -INFINITY ) return a;
  return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

static double dot(const double *a, const double *b, size_t P)
{
  double s = 0;
  for(size_t i = 0; i < P; i++) s += a[i] * b[i];
  return s;
}

/* the generalised no-U-turn criterion: 1 to go on */
static int go_on(const double *s_minus, const double *s_plus, const double *rho,
                 size_t P)
{
  return dot(s_plus, rho, P) > 0 && dot(s_minus, rho, P) > 0;
}

static void cp(double *d, const double *s, size_t P) { memcpy(d, s, P * sizeof *d); }

/* One leapfrog of signed step e from the integrator point z; *H its energy,
 * +inf where log p or the gradient is not finite. */
static fly_rc leapfrog(fly_nuts *k, fly_target *tgt, double e, double *H,
                       fly_err *err)
{
  size_t P = k->P;
  fly_rc rc;
  fly_trimul_add_lt(k->h.L, P, 0.5 * e, k->zg, k->zr);
  for(size_t i = 0; i < P; i++) k->t[i] = k->h.minv[i] * k->zr[i];
  fly_trimul_add_l(k->h.L, P, e, k->t, k->zx);
  k->h.n_eval++;
  k->n_leapfrog++;
  if( (rc = tgt->logp(tgt->ctx, k->zx, &k->zlp, k->zg, err)) ) return rc;
  if( !(k->zlp > -INFINITY) || isnan(k->zlp) || !all_finite(k->zg, P) ){
    *H = INFINITY;
    return FLY_OK;
  }
  fly_trimul_add_lt(k->h.L, P, 0.5 * e, k->zg, k->zr);
  *H = -k->zlp + kinetic(k, k->zr);
  if( isnan(*H) ) *H = INFINITY;
  return FLY_OK;
}

static void slot_copy(fly_nuts *k, size_t to, size_t from)
{
  cp(k->qx + to * k->P, k->qx + from * k->P, k->P);
  k->q_lp[to] = k->q_lp[from];
  k->q_idx[to] = k->q_idx[from];
  k->q_H[to] = k->q_H[from];
}

/* Build a subtree of 2^depth leapfrog steps of e from z (Stan's
 * base_nuts::build_tree): its proposal into slot q, its end momenta (in the
 * direction of travel) p_beg/p_end and velocities s_beg/s_end, rho += its
 * momenta, *lsw = logsumexp(*lsw, its log weight).  *valid = 0 if it
 * diverged or turned. */
static fly_rc build(fly_nuts *k, fly_target *tgt, fly_rng *rng, size_t depth,
                    size_t q, double *s_beg, double *s_end, double *rho,
                    double *p_beg, double *p_end, double e, double *lsw,
                    int *valid, fly_err *err)
{
  size_t P = k->P;
  fly_rc rc;
  if( depth == 0 ){
    double H;
    if( (rc = leapfrog(k, tgt, e, &H, err)) ) return rc;
    if( !(H - k->H0 <= k->max_dH) ) k->divergent = 1;
    double w = k->H0 - H;
    *lsw = lse(*lsw, w);
    k->sum_metro += w > 0 ? 1 : exp(w);
    cp(k->qx + q * P, k->zx, P);
    k->q_lp[q] = k->zlp;
    k->q_idx[q] = k->n_leapfrog;
    k->q_H[q] = H;
    for(size_t i = 0; i < P; i++){
      s_beg[i] = s_end[i] = k->h.minv[i] * k->zr[i];
      p_beg[i] = p_end[i] = k->zr[i];
      rho[i] += k->zr[i];
    }
    *valid = !k->divergent;
    return FLY_OK;
  }
  double *l = k->loc + depth * N_LOC * P;
  double *s_ie = l, *p_ie = l + P, *rho_i = l + 2 * P, *p_fb = l + 3 * P,
         *s_fb = l + 4 * P, *rho_fin = l + 5 * P, *rho_x = l + 6 * P;
  double lsw_i = -INFINITY, lsw_f = -INFINITY;

  memset(rho_i, 0, P * sizeof *rho_i);
  if( (rc = build(k, tgt, rng, depth - 1, q, s_beg, s_ie, rho_i, p_beg, p_ie, e,
                  &lsw_i, valid, err)) || !*valid ) return rc;
  memset(rho_fin, 0, P * sizeof *rho_fin);
  if( (rc = build(k, tgt, rng, depth - 1, depth, s_fb, s_end, rho_fin, p_fb,
                  p_end, e, &lsw_f, valid, err)) || !*valid ) return rc;

  double lsw_sub = lse(lsw_i, lsw_f);
  *lsw = lse(*lsw, lsw_sub);
  if( lsw_f > lsw_sub ) slot_copy(k, q, depth);
  else if( fly_rng_uniform(rng) < exp(lsw_f - lsw_sub) ) slot_copy(k, q, depth);

  for(size_t i = 0; i < P; i++){
    rho_x[i] = rho_i[i] + rho_fin[i];
    rho[i] += rho_x[i];
  }
  int ok = go_on(s_beg, s_end, rho_x, P);
  for(size_t i = 0; i < P; i++) rho_x[i] = rho_i[i] + p_fb[i];
  ok = ok && go_on(s_beg, s_fb, rho_x, P);
  for(size_t i = 0; i < P; i++) rho_x[i] = rho_fin[i] + p_ie[i];
  ok = ok && go_on(s_ie, s_end, rho_x, P);
  *valid = ok;
  return FLY_OK;
}

static void load_z(fly_nuts *k, const double *x, const double *r,
                   const double *g, double lp)
{
  cp(k->zx, x, k->P);
  cp(k->zr, r, k->P);
  cp(k->zg, g, k->P);
  k->zlp = lp;
}

static void store_z(const fly_nuts *k, double *x, double *r, double *g, double *lp)
{
  cp(x, k->zx, k->P);
  cp(r, k->zr, k->P);
  cp(g, k->zg, k->P);
  *lp = k->zlp;
}

fly_rc fly_nuts_step(fly_nuts *k, fly_target *tgt, fly_rng *rng, double *th,
                     double *lp, int adapt, int *accepted, fly_err *err)
{
  size_t P = k->P;
  fly_hmc *h = &k->h;
  fly_rc rc;

  *accepted = 0;
  h->n_eval = 0;
  k->n_leapfrog = 0;
  k->divergent = 0;
  k->depth = 0;
  k->sum_metro = 0;
  if( k->max_depth < 1 || k->max_depth > FLY_NUTS_MAX_DEPTH )
    return fly_fail(err, FLY_MISUSE, "NUTS: max_depth = %zu, want 1..%d",
                    k->max_depth, FLY_NUTS_MAX_DEPTH);
  if( !h->st.have_cur || h->st.lp != *lp ){
    if( (rc = fly_hmc_prime(h, tgt, th, lp, err)) ) return rc;
  }
  double eps = fly_hmc_eps(h, adapt);

  /* r ~ N(0, diag(1/minv)) */
  fly_rng_normals(rng, k->zr, P);
  for(size_t i = 0; i < P; i++) k->zr[i] /= sqrt(h->minv[i]);
  cp(k->zx, th, P);
  cp(k->zg, h->grad, P);
  k->zlp = *lp;
  k->H0 = -*lp + kinetic(k, k->zr);
  store_z(k, k->fx, k->fr, k->fg, &k->flp);
  store_z(k, k->bx, k->br, k->bg, &k->blp);
  cp(k->sx, th, P);
  k->slp = *lp;
  k->sidx = 0;
  k->sH = k->H0;
  for(size_t i = 0; i < P; i++){
    double r = k->zr[i], s = h->minv[i] * r;
    k->p_ff[i] = k->p_fb[i] = k->p_bf[i] = k->p_bb[i] = r;
    k->s_ff[i] = k->s_fb[i] = k->s_bf[i] = k->s_bb[i] = s;
    k->rho[i] = r;
  }
  double lsw = 0;

  while( (size_t)k->depth < k->max_depth ){
    double lsw_sub = -INFINITY;
    int valid = 0;
    memset(k->rho_f, 0, P * sizeof *k->rho_f);
    memset(k->rho_b, 0, P * sizeof *k->rho_b);
    if( fly_rng_uniform(rng) > 0.5 ){
      /* forwards: the old tree becomes the backward half */
      load_z(k, k->fx, k->fr, k->fg, k->flp);
      cp(k->rho_b, k->rho, P);
      cp(k->p_bf, k->p_ff, P);
      cp(k->s_bf, k->s_ff, P);
      rc = build(k, tgt, rng, (size_t)k->depth, TOP_SLOT, k->s_fb, k->s_ff,
                 k->rho_f, k->p_fb, k->p_ff, eps, &lsw_sub, &valid, err);
      if( rc ) return rc;
      store_z(k, k->fx, k->fr, k->fg, &k->flp);
    }else{
      load_z(k, k->bx, k->br, k->bg, k->blp);
      cp(k->rho_f, k->rho, P);
      cp(k->p_fb, k->p_bb, P);
      cp(k->s_fb, k->s_bb, P);
      rc = build(k, tgt, rng, (size_t)k->depth, TOP_SLOT, k->s_bf, k->s_bb,
                 k->rho_b, k->p_bf, k->p_bb, -eps, &lsw_sub, &valid, err);
      if( rc ) return rc;
      store_z(k, k->bx, k->br, k->bg, &k->blp);
    }
    if( !valid ) break;
    k->depth++;
    if( lsw_sub > lsw || fly_rng_uniform(rng) < exp(lsw_sub - lsw) ){
      cp(k->sx, k->qx + TOP_SLOT * P, P);
      k->slp = k->q_lp[TOP_SLOT];
      k->sidx = k->q_idx[TOP_SLOT];
      k->sH = k->q_H[TOP_SLOT];
    }
    lsw = lse(lsw, lsw_sub);
    for(size_t i = 0; i < P; i++) k->rho[i] = k->rho_b[i] + k->rho_f[i];
    int ok = go_on(k->s_bb, k->s_ff, k->rho, P);
    for(size_t i = 0; i < P; i++) k->rho_e[i] = k->rho_b[i] + k->p_fb[i];
    ok = ok && go_on(k->s_bb, k->s_fb, k->rho_e, P);
    for(size_t i = 0; i < P; i++) k->rho_e[i] = k->rho_f[i] + k->p_bf[i];
    ok = ok && go_on(k->s_bf, k->s_ff, k->rho_e, P);
    if( !ok ) break;
  }

  k->accept_stat = k->n_leapfrog > 0 ? k->sum_metro / (double)k->n_leapfrog : 0;
  if( k->sidx != 0 ){
    /* the target's cache must belong to the new point (target.h) */
    cp(th, k->sx, P);
    if( k->sidx == k->n_leapfrog ){
      cp(h->grad, k->zg, P);     /* z is the last point evaluated */
      h->st.lp = k->zlp;
    }else{
      double l;
      h->st.have_cur = 0;
      h->n_eval++;
      if( (rc = tgt->logp(tgt->ctx, th, &l, h->grad, err)) ) return rc;
      if( !(l > -INFINITY) || !all_finite(h->grad, P) )
        return fly_fail(err, FLY_NUMERIC, "NUTS: log density %g or its gradient "
                        "at the sampled point is not finite", l);
      h->st.lp = l;
      h->st.have_cur = 1;
    }
    tgt->accept(tgt->ctx);
    *lp = h->st.lp;
    *accepted = 1;
  }
  k->energy = k->sH;
  if( adapt ) fly_hmc_adapt(h, th, k->accept_stat);
  return FLY_OK;
}

/* ---- the type table (kernel.h) ----------------------------------------- */

static double nuts_default_step(size_t P, size_t n_leap)
{
  (void)P;
  (void)n_leap;
  return 1.0;   /* Stan's: eps = 1 in the whitened metric */
}
static fly_rc nuts_init(void *k, const fly_kernel_cfg *kc, fly_err *err)
{
  return fly_nuts_init(k, kc->P, kc->L, kc->eps0, kc->n_adapt, err);
}
static void nuts_free(void *k) { fly_nuts_free(k); }
static fly_rc nuts_step(void *k, fly_target *tgt, fly_rng *rng, double *th,
                        double *lp, int adapt, int *accepted, fly_err *err)
{
  return fly_nuts_step(k, tgt, rng, th, lp, adapt, accepted, err);
}
static double nuts_eps(const void *k, int adapt)
{
  return fly_hmc_eps(&((const fly_nuts *)k)->h, adapt);
}
static void nuts_invalidate(void *k) { fly_hmc_invalidate(&((fly_nuts *)k)->h); }
static size_t nuts_ckpt_size(const void *k)
{
  return fly_hmc_ckpt_size(&((const fly_nuts *)k)->h);
}
static void nuts_ckpt_save(const void *k, void *buf)
{
  fly_hmc_ckpt_save(&((const fly_nuts *)k)->h, buf);
}
static fly_rc nuts_ckpt_load(void *k, const void *buf, size_t len, fly_err *err)
{
  return fly_hmc_ckpt_load(&((fly_nuts *)k)->h, buf, len, err);
}

static void nuts_stats(const void *k_, fly_kernel_stats *out)
{
  const fly_nuts *k = k_;
  out->treedepth = k->depth;
  out->n_leapfrog = k->n_leapfrog;
  out->divergent = k->divergent;
  out->energy = k->energy;
  out->accept_stat = k->accept_stat;
}

const fly_kernel_type fly_kernel_nuts = {
  "nuts", sizeof(fly_nuts), nuts_default_step, nuts_init, nuts_free, nuts_step,
  nuts_eps, nuts_invalidate, nuts_ckpt_size, nuts_ckpt_save, nuts_ckpt_load, nuts_stats
};
