/*
 * mala.c -- preconditioned Metropolis-adjusted Langevin (see mala.h).
 *
 * With M = L L^T, write g for the gradient at th, g' at th', and the
 * whitened gradients h = L^T g, h' = L^T g'.  The proposal is
 *
 *   th' = th + eps L (e + (eps/2) h),      e ~ N(0, I),
 *
 * and its density in the M^-1 norm is
 *   log q(th' | th) = -|L^-1 (th' - th - (eps^2/2) M g)|^2 / (2 eps^2) + c.
 * Because L^-1 M = L^T no triangular solve is needed: the forward residual
 * is eps e, and the reverse one is
 *   L^-1 (th - th' - (eps^2/2) M g') = -eps (e + (eps/2)(h + h')),
 * so  log q(th | th') - log q(th' | th) = |e|^2/2 - |e + (eps/2)(h + h')|^2/2
 * and the proposal is accepted with probability
 *   min(1, exp(lp' - lp + that)).
 * (Identical to forward substitution with L, in exact arithmetic, and
 * cheaper and better conditioned in floating point.)
 *
 * Cost per step: one logp-with-gradient call plus O(P^2) for L e, L^T g'.
 * Adaptation (warm-up only): log eps += (t + 10)^-0.6 (a_t - 0.574), a_t the
 * acceptance probability of step t, as in mh.c (Andrieu & Thoms 2008, s. 4).
 * No allocation after fly_mala_init.
 */
#include "samplers/mala.h"

#include <math.h>
#include <string.h>

#include "samplers/kernel.h"
#include "util/mem.h"

fly_rc fly_mala_init(fly_mala *k, size_t P, const double *L, double eps0,
                     fly_err *err)
{
  memset(k, 0, sizeof *k);
  if( P == 0 || !(eps0 > 0) || !isfinite(eps0) )
    return fly_fail(err, FLY_MISUSE, "MALA needs P > 0 and a positive step size");
  k->P = P;
  k->L = L;
  k->target_accept = 0.574;
  k->st.log_eps = log(eps0);
  k->grad = fly_alloc_array(P, sizeof(double));
  k->prop = fly_alloc_array(P, sizeof(double));
  k->gprop = fly_alloc_array(P, sizeof(double));
  k->e = fly_alloc_array(P, sizeof(double));
  k->wg = fly_alloc_array(P, sizeof(double));
  k->wgp = fly_alloc_array(P, sizeof(double));
  if( !k->grad || !k->prop || !k->gprop || !k->e || !k->wg || !k->wgp ){
    fly_mala_free(k);
    return fly_fail(err, FLY_NOMEM, "MALA workspace (P = %zu)", P);
  }
  return FLY_OK;
}

void fly_mala_free(fly_mala *k)
{
  if( !k ) return;
  fly_free(k->grad);
  fly_free(k->prop);
  fly_free(k->gprop);
  fly_free(k->e);
  fly_free(k->wg);
  fly_free(k->wgp);
  k->grad = k->prop = k->gprop = k->e = k->wg = k->wgp = NULL;
}

/* out = L^T v (out = v when L is NULL); out and v distinct. */
static void mul_lt(const double *L, size_t P, const double *v, double *out)
{
  if( !L ){
    memcpy(out, v, P * sizeof *out);
    return;
  }
  for(size_t j = 0; j < P; j++) out[j] = 0;
  for(size_t i = 0; i < P; i++){
    const double *row = L + i * P;
    for(size_t j = 0; j <= i; j++) out[j] += row[j] * v[i];
  }
}

fly_rc fly_mala_prime(fly_mala *k, fly_target *tgt, const double *th,
                      double *lp, fly_err *err)
{
  double l;
  fly_rc rc;
  k->st.have_cur = 0;
  k->n_eval++;
  rc = tgt->logp(tgt->ctx, th, &l, k->grad, err);
  if( rc ) return rc;
  if( !(l > -INFINITY) )
    return fly_fail(err, FLY_NUMERIC,
                    "MALA: log density of the current point is -inf");
  for(size_t i = 0; i < k->P; i++)
    if( !isfinite(k->grad[i]) )
      return fly_fail(err, FLY_NUMERIC,
                      "MALA: gradient %zu of the current point is %g",
                      i, k->grad[i]);
  tgt->accept(tgt->ctx);
  k->st.lp = l;
  k->st.have_cur = 1;
  *lp = l;
  return FLY_OK;
}

void fly_mala_invalidate(fly_mala *k) { k->st.have_cur = 0; }

double fly_mala_eps(const fly_mala *k) { return exp(k->st.log_eps); }

fly_rc fly_mala_step(fly_mala *k, fly_target *tgt, fly_rng *rng, double *th,
                     double *lp, int adapt, int *accepted, fly_err *err)
{
  size_t P = k->P;
  double eps = exp(k->st.log_eps), lp_new, a = 0, logr;
  fly_rc rc;

  *accepted = 0;
  k->n_eval = 0;
  if( !k->st.have_cur || k->st.lp != *lp ){
    if( (rc = fly_mala_prime(k, tgt, th, lp, err)) ) return rc;
  }

  /* th' = th + eps L (e + (eps/2) h) */
  mul_lt(k->L, P, k->grad, k->wg);
  fly_rng_normals(rng, k->e, P);
  for(size_t i = 0; i < P; i++){
    double s = 0;
    if( k->L ){
      const double *row = k->L + i * P;
      for(size_t j = 0; j <= i; j++) s += row[j] * (k->e[j] + 0.5 * eps * k->wg[j]);
    }else{
      s = k->e[i] + 0.5 * eps * k->wg[i];
    }
    k->prop[i] = th[i] + eps * s;
  }
  k->n_eval++;
  rc = tgt->logp(tgt->ctx, k->prop, &lp_new, k->gprop, err);
  if( rc ){
    k->st.have_cur = 0;
    return rc;
  }

  /* log MH ratio; -inf or a non-finite ratio is a rejection */
  logr = -INFINITY;
  if( lp_new > -INFINITY ){
    double q = 0;
    mul_lt(k->L, P, k->gprop, k->wgp);
    for(size_t i = 0; i < P; i++){
      double r = k->e[i] + 0.5 * eps * (k->wg[i] + k->wgp[i]);
      q += k->e[i] * k->e[i] - r * r;
    }
    logr = lp_new - *lp + 0.5 * q;
    if( isnan(logr) ) logr = -INFINITY;
  }
  double u = fly_rng_uniform(rng);
  *accepted = logr >= 0 || log(u) < logr;
  if( *accepted ){
    memcpy(th, k->prop, P * sizeof *th);
    memcpy(k->grad, k->gprop, P * sizeof *k->grad);
    *lp = k->st.lp = lp_new;
    tgt->accept(tgt->ctx);
  }
  if( adapt ){
    a = logr >= 0 ? 1.0 : exp(logr);
    k->st.n_adapt += 1;
    k->st.log_eps += pow(k->st.n_adapt + 10.0, -0.6) * (a - k->target_accept);
  }
  return FLY_OK;
}

size_t fly_mala_ckpt_size(const fly_mala *k)
{
  return sizeof k->st + k->P * sizeof(double);
}

void fly_mala_ckpt_save(const fly_mala *k, void *buf)
{
  unsigned char *b = buf;
  memcpy(b, &k->st, sizeof k->st);
  memcpy(b + sizeof k->st, k->grad, k->P * sizeof(double));
}

fly_rc fly_mala_ckpt_load(fly_mala *k, const void *buf, size_t len,
                          fly_err *err)
{
  const unsigned char *b = buf;
  fly_mala_state st;
  if( len != fly_mala_ckpt_size(k) )
    return fly_fail(err, FLY_CORRUPT, "MALA checkpoint: %zu bytes, want %zu",
                    len, fly_mala_ckpt_size(k));
  memcpy(&st, b, sizeof st);
  if( !isfinite(st.log_eps) || (st.have_cur != 0 && st.have_cur != 1) )
    return fly_fail(err, FLY_CORRUPT, "MALA checkpoint: bad state");
  k->st = st;
  memcpy(k->grad, b + sizeof st, k->P * sizeof(double));
  return FLY_OK;
}

/* ---- the type table (kernel.h) ----------------------------------------- */

static double mala_default_step(size_t P, size_t n_leap)
{
  (void)n_leap;
  return 1.65 * pow((double)P, -1.0 / 6);         /* Roberts & Rosenthal */
}
static fly_rc mala_init(void *k, const fly_kernel_cfg *kc, fly_err *err)
{
  return fly_mala_init(k, kc->P, kc->L, kc->eps0, err);
}
static void mala_free(void *k) { fly_mala_free(k); }
static fly_rc mala_step(void *k, fly_target *tgt, fly_rng *rng, double *th,
                        double *lp, int adapt, int *accepted, fly_err *err)
{
  return fly_mala_step(k, tgt, rng, th, lp, adapt, accepted, err);
}
static double mala_eps(const void *k, int adapt)
{
  (void)adapt;
  return fly_mala_eps(k);
}
static void mala_invalidate(void *k) { fly_mala_invalidate(k); }
static size_t mala_ckpt_size(const void *k) { return fly_mala_ckpt_size(k); }
static void mala_ckpt_save(const void *k, void *buf) { fly_mala_ckpt_save(k, buf); }
static fly_rc mala_ckpt_load(void *k, const void *buf, size_t len, fly_err *err)
{
  return fly_mala_ckpt_load(k, buf, len, err);
}

const fly_kernel_type fly_kernel_mala = {
  "mala", sizeof(fly_mala), mala_default_step, mala_init, mala_free, mala_step,
  mala_eps, mala_invalidate, mala_ckpt_size, mala_ckpt_save, mala_ckpt_load, NULL
};
