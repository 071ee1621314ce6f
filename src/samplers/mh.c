/*
 * mh.c -- random-walk Metropolis-Hastings (see mh.h).
 *
 * Cost per step: one target evaluation plus O(P^2) for the proposal.
 * Adaptation (warm-up only): log eps += gamma_t (a_t - 0.234) with
 * gamma_t = (t + 10)^-0.6, a_t the acceptance probability min(1, ratio) of
 * step t (Andrieu & Thoms 2008, section 4).  Using the probability rather
 * than the 0/1 outcome lowers the variance of the recursion.
 */
#include "samplers/mh.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "samplers/kernel.h"
#include "util/mem.h"

fly_rc fly_mh_init(fly_mh *k, size_t P, const double *L, double eps0,
                   fly_err *err)
{
  memset(k, 0, sizeof *k);
  if( P == 0 || !(eps0 > 0) )
    return fly_fail(err, FLY_MISUSE, "MH needs P > 0 and a positive step size");
  k->P = P;
  k->L = L;
  k->target_accept = 0.234;
  k->st.log_eps = log(eps0);
  k->prop = fly_alloc_array(P, sizeof(double));
  k->e = fly_alloc_array(P, sizeof(double));
  if( !k->prop || !k->e ){
    fly_mh_free(k);
    return fly_fail(err, FLY_NOMEM, "MH workspace");
  }
  return FLY_OK;
}

void fly_mh_free(fly_mh *k)
{
  if( !k ) return;
  fly_free(k->prop);
  fly_free(k->e);
  k->prop = k->e = NULL;
}

fly_rc fly_mh_step(fly_mh *k, fly_target *tgt, fly_rng *rng, double *th,
                   double *lp, int adapt, int *accepted, fly_err *err)
{
  size_t P = k->P;
  double eps = exp(k->st.log_eps), lp_new, a;
  fly_rc rc;

  fly_rng_normals(rng, k->e, P);
  if( k->L && P > 0 )                           /* e := L e, L lower */
    cblas_dtrmv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)P,
                k->L, (int)P, k->e, 1);
  for(size_t i = 0; i < P; i++) k->prop[i] = th[i] + eps * k->e[i];
  rc = tgt->logp(tgt->ctx, k->prop, &lp_new, NULL, err);
  if( rc ) return rc;

  /* Accept with probability min(1, exp(lp_new - lp)); -inf never accepted. */
  double u = fly_rng_uniform(rng);
  double d = lp_new - *lp;
  *accepted = lp_new > -INFINITY && (d >= 0 || log(u) < d);
  if( *accepted ){
    memcpy(th, k->prop, P * sizeof *th);
    *lp = lp_new;
    tgt->accept(tgt->ctx);
  }
  if( adapt ){
    a = lp_new > -INFINITY ? (d >= 0 ? 1.0 : exp(d)) : 0.0;
    k->st.n_adapt += 1;
    k->st.log_eps += pow(k->st.n_adapt + 10.0, -0.6) * (a - k->target_accept);
  }
  return FLY_OK;
}

/* ---- the type table (kernel.h) ----------------------------------------- */

static double mh_default_step(size_t P, size_t n_leap)
{
  (void)n_leap;
  return 2.38 / sqrt((double)P);                  /* Gelman et al. */
}
static fly_rc mh_init(void *k, const fly_kernel_cfg *kc, fly_err *err)
{
  return fly_mh_init(k, kc->P, kc->L, kc->eps0, err);
}
static void mh_free(void *k) { fly_mh_free(k); }
static fly_rc mh_step(void *k, fly_target *tgt, fly_rng *rng, double *th,
                      double *lp, int adapt, int *accepted, fly_err *err)
{
  return fly_mh_step(k, tgt, rng, th, lp, adapt, accepted, err);
}
static double mh_eps(const void *k, int adapt)
{
  (void)adapt;
  return exp(((const fly_mh *)k)->st.log_eps);
}
static size_t mh_ckpt_size(const void *k) { return sizeof ((const fly_mh *)k)->st; }
static void mh_ckpt_save(const void *k, void *buf)
{
  memcpy(buf, &((const fly_mh *)k)->st, sizeof ((const fly_mh *)k)->st);
}
static fly_rc mh_ckpt_load(void *k, const void *buf, size_t len, fly_err *err)
{
  fly_mh *m = k;
  if( len != sizeof m->st )
    return fly_fail(err, FLY_CORRUPT, "MH state of %zu bytes, want %zu", len, sizeof m->st);
  memcpy(&m->st, buf, sizeof m->st);
  return FLY_OK;
}

const fly_kernel_type fly_kernel_mh = {
  "mh", sizeof(fly_mh), mh_default_step, mh_init, mh_free, mh_step, mh_eps,
  NULL, mh_ckpt_size, mh_ckpt_save, mh_ckpt_load, NULL
};
