/*
 * hmc.c -- HMC in the whitened Laplace metric (see hmc.h).
 *
 * Leapfrog with step eps (jittered), from (th, r), g = grad log p(th):
 *   r  += (eps/2) L^T g
 *   l times:  th += eps L (minv .* r);  g = grad log p(th);
 *             r  += eps L^T g   (eps/2 on the last step)
 * with l = n_leap, or uniform on 1..n_leap (rand_leap).
 * H = -log p(th) + sum_i minv_i r_i^2 / 2, accepted with min(1, exp(H0 - H1)).
 * The map is volume preserving and reversible (r -> -r), so this is exact
 * for any fixed eps, l, L and minv; the jitter draws eps and l
 * independently of the state, a mixture of exact kernels, which keeps it
 * exact.  A fixed path length eps l near a multiple of half a period of
 * the posterior in some direction (in the whitened metric a near-Gaussian
 * posterior has period 2 pi in every direction) brings each trajectory
 * back near its start there, and a 10% eps jitter does not break that;
 * a uniform l does (Neal 2011, "MCMC using Hamiltonian dynamics", on
 * choosing the trajectory length at random).
 * A leapfrog point with log p = -inf or a non-finite gradient ends the
 * trajectory as a rejection ("divergent").
 *
 * Dual averaging (Hoffman & Gelman 2014, Alg. 5, as Stan's
 * stepsize_adaptation): with m the steps since the last restart,
 *   h_bar = (1 - 1/(m + t0)) h_bar + (delta - a_m)/(m + t0)
 *   log eps = mu - sqrt(m)/gamma h_bar
 *   log eps_bar = m^-kappa log eps + (1 - m^-kappa) log eps_bar.
 * The metric windows follow Stan's windowed_adaptation / var_adaptation
 * (Welford variance of u = L^-1 th, a forward substitution, O(P^2) per
 * warm-up draw inside a window).
 *
 * Cost per step: l logp-with-gradient calls plus O(l P^2) for the
 * products with L and L^T ((n_leap + 1)/2 on average with rand_leap).  No
 * allocation after fly_hmc_init.
 */
#include "samplers/hmc.h"

#include <math.h>
#include <string.h>

#include "samplers/kernel.h"
#include "samplers/trimul.h"
#include "util/mem.h"

#define DEFAULT_LEAP 16       /* leapfrog steps unless set */
#define DA_GAMMA 0.05
#define DA_T0    10.0
#define DA_KAPPA 0.75

fly_rc fly_hmc_init(fly_hmc *k, size_t P, const double *L, double eps0,
                    fly_err *err)
{
  memset(k, 0, sizeof *k);
  if( P == 0 || !(eps0 > 0) || !isfinite(eps0) )
    return fly_fail(err, FLY_MISUSE, "HMC needs P > 0 and a positive step size");
  k->P = P;
  k->L = L;
  k->n_leap = DEFAULT_LEAP;
  k->rand_leap = 1;
  k->jitter = 0.1;
  k->target_accept = 0.8;
  k->st.log_eps = log(eps0);
  k->st.log_eps_bar = k->st.log_eps;
  k->st.mu = log(10.0 * eps0);
  k->grad = fly_alloc_array(P, sizeof(double));
  k->minv = fly_alloc_array(P, sizeof(double));
  k->wmean = fly_alloc_array(P, sizeof(double));
  k->wm2 = fly_alloc_array(P, sizeof(double));
  k->x = fly_alloc_array(P, sizeof(double));
  k->g = fly_alloc_array(P, sizeof(double));
  k->r = fly_alloc_array(P, sizeof(double));
  k->t = fly_alloc_array(P, sizeof(double));
  if( !k->grad || !k->minv || !k->wmean || !k->wm2 || !k->x || !k->g ||
      !k->r || !k->t ){
    fly_hmc_free(k);
    return fly_fail(err, FLY_NOMEM, "HMC workspace (P = %zu)", P);
  }
  for(size_t i = 0; i < P; i++) k->minv[i] = 1.0;
  return FLY_OK;
}

void fly_hmc_free(fly_hmc *k)
{
  if( !k ) return;
  fly_free(k->grad);
  fly_free(k->minv);
  fly_free(k->wmean);
  fly_free(k->wm2);
  fly_free(k->x);
  fly_free(k->g);
  fly_free(k->r);
  fly_free(k->t);
  k->grad = k->minv = k->wmean = k->wm2 = NULL;
  k->x = k->g = k->r = k->t = NULL;
}

static int all_finite(const double *v, size_t P)
{
  for(size_t i = 0; i < P; i++) if( !isfinite(v[i]) ) return 0;
  return 1;
}

fly_rc fly_hmc_prime(fly_hmc *k, fly_target *tgt, const double *th,
                     double *lp, fly_err *err)
{
  double l;
  fly_rc rc;
  k->st.have_cur = 0;
  k->n_eval++;
  if( (rc = tgt->logp(tgt->ctx, th, &l, k->grad, err)) ) return rc;
  if( !(l > -INFINITY) || !all_finite(k->grad, k->P) )
    return fly_fail(err, FLY_NUMERIC, "HMC: log density %g or its gradient at "
                    "the current point is not finite", l);
  tgt->accept(tgt->ctx);
  k->st.lp = l;
  k->st.have_cur = 1;
  *lp = l;
  return FLY_OK;
}

void fly_hmc_invalidate(fly_hmc *k) { k->st.have_cur = 0; }

double fly_hmc_eps(const fly_hmc *k, int adapt)
{
  return exp(adapt || k->st.n_da == 0 ? k->st.log_eps : k->st.log_eps_bar);
}

/* ---- warm-up: Stan's metric windows ------------------------------------ */

typedef struct windows { double init, term, base, nw; } windows;

static windows win_params(size_t n_warmup)
{
  windows w = { 75, 50, 25, (double)n_warmup };
  if( n_warmup < 20 ){
    w.init = w.term = w.base = w.nw = 0;
  }else if( w.init + w.base + w.term > w.nw ){
    w.init = floor(0.15 * w.nw);
    w.term = floor(0.1 * w.nw);
    w.base = w.nw - (w.init + w.term);
  }
  return w;
}

static void next_window(fly_hmc *k, const windows *w)
{
  double last = w->nw - w->term - 1, c = k->st.n_adapt;
  if( k->st.win_next == last ) return;
  k->st.win_size *= 2;
  k->st.win_next = c + k->st.win_size;
  if( k->st.win_next != last && k->st.win_next + 2 * k->st.win_size >= w->nw - w->term )
    k->st.win_next = last;
}

void fly_hmc_adapt(fly_hmc *k, const double *th, double a)
{
  fly_hmc_state *s = &k->st;
  size_t P = k->P;
  windows w = win_params(k->n_warmup);
  double c = s->n_adapt;

  if( a > 1 ) a = 1;
  s->n_da += 1;
  double eta = 1.0 / (s->n_da + DA_T0);
  s->h_bar = (1 - eta) * s->h_bar + eta * (k->target_accept - a);
  s->log_eps = s->mu - s->h_bar * sqrt(s->n_da) / DA_GAMMA;
  double xe = pow(s->n_da, -DA_KAPPA);
  s->log_eps_bar = xe * s->log_eps + (1 - xe) * s->log_eps_bar;

  if( w.nw > 0 ){
    if( c == 0 ){
      s->win_size = w.base;
      s->win_next = w.init + w.base - 1;
    }
    if( c >= w.init && c < w.nw - w.term && c != w.nw ){
      /* u = L^-1 th by forward substitution, into k->t */
      for(size_t i = 0; i < P; i++){
        double v = th[i];
        if( k->L ){
          const double *row = k->L + i * P;
          for(size_t j = 0; j < i; j++) v -= row[j] * k->t[j];
          v /= row[i];
        }
        k->t[i] = v;
      }
      s->n_win += 1;
      for(size_t i = 0; i < P; i++){
        double d = k->t[i] - k->wmean[i];
        k->wmean[i] += d / s->n_win;
        k->wm2[i] += d * (k->t[i] - k->wmean[i]);
      }
    }
    if( c == s->win_next && c != w.nw ){
      next_window(k, &w);
      double n = s->n_win;
      if( n >= 2 ){
        for(size_t i = 0; i < P; i++){
          double var = k->wm2[i] / (n - 1);
          var = (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0));
          if( isfinite(var) && var > 0 ) k->minv[i] = var;
        }
      }
      s->n_win = 0;
      memset(k->wmean, 0, P * sizeof *k->wmean);
      memset(k->wm2, 0, P * sizeof *k->wm2);
      /* restart dual averaging from the current step size */
      s->mu = log(10.0) + s->log_eps;
      s->h_bar = 0;
      s->n_da = 0;
      s->log_eps_bar = s->log_eps;
    }
  }
  s->n_adapt += 1;
}

fly_rc fly_hmc_step(fly_hmc *k, fly_target *tgt, fly_rng *rng, double *th,
                    double *lp, int adapt, int *accepted, fly_err *err)
{
  size_t P = k->P;
  double eps, H0 = 0, H1 = 0, lp1 = -INFINITY, logr = -INFINITY;
  fly_rc rc;

  *accepted = 0;
  k->n_eval = 0;
  k->divergent = 0;
  if( k->n_leap == 0 || !(k->jitter >= 0 && k->jitter < 1) )
    return fly_fail(err, FLY_MISUSE, "HMC: n_leap = %zu, jitter = %g",
                    k->n_leap, k->jitter);
  if( !k->st.have_cur || k->st.lp != *lp ){
    if( (rc = fly_hmc_prime(k, tgt, th, lp, err)) ) return rc;
  }

  eps = fly_hmc_eps(k, adapt);
  if( k->jitter > 0 ) eps *= 1 + k->jitter * (2 * fly_rng_uniform(rng) - 1);
  size_t n_leap = k->n_leap;
  if( k->rand_leap ) n_leap = 1 + (size_t)fly_rng_below(rng, (uint64_t)k->n_leap);
  k->leap_last = n_leap;

  /* r ~ N(0, diag(1/minv)); H0 = -lp + |e|^2/2 */
  fly_rng_normals(rng, k->r, P);
  for(size_t i = 0; i < P; i++){
    double e = k->r[i];
    k->r[i] = e / sqrt(k->minv[i]);
    H0 += 0.5 * e * e;
  }
  H0 -= *lp;
  memcpy(k->x, th, P * sizeof *th);
  fly_trimul_add_lt(k->L, P, 0.5 * eps, k->grad, k->r);
  for(size_t l = 0; l < n_leap; l++){
    for(size_t i = 0; i < P; i++) k->t[i] = k->minv[i] * k->r[i];
    fly_trimul_add_l(k->L, P, eps, k->t, k->x);
    k->n_eval++;
    if( (rc = tgt->logp(tgt->ctx, k->x, &lp1, k->g, err)) ) return rc;
    if( !(lp1 > -INFINITY) || isnan(lp1) || !all_finite(k->g, P) ){
      k->divergent = 1;
      break;
    }
    fly_trimul_add_lt(k->L, P, l + 1 == n_leap ? 0.5 * eps : eps, k->g, k->r);
  }
  if( !k->divergent ){
    H1 = -lp1;
    for(size_t i = 0; i < P; i++) H1 += 0.5 * k->minv[i] * k->r[i] * k->r[i];
    logr = H0 - H1;
    if( isnan(logr) ) logr = -INFINITY;
  }
  double u = fly_rng_uniform(rng);
  *accepted = logr >= 0 || log(u) < logr;
  if( *accepted ){
    memcpy(th, k->x, P * sizeof *th);
    memcpy(k->grad, k->g, P * sizeof *k->grad);
    *lp = k->st.lp = lp1;
    tgt->accept(tgt->ctx);
  }
  if( adapt ) fly_hmc_adapt(k, th, logr >= 0 ? 1.0 : exp(logr));
  return FLY_OK;
}

/* ---- checkpoints ------------------------------------------------------- */

size_t fly_hmc_ckpt_size(const fly_hmc *k)
{
  return sizeof k->st + 4 * k->P * sizeof(double);
}

void fly_hmc_ckpt_save(const fly_hmc *k, void *buf)
{
  unsigned char *b = buf;
  size_t n = k->P * sizeof(double);
  memcpy(b, &k->st, sizeof k->st);
  b += sizeof k->st;
  memcpy(b, k->grad, n);
  memcpy(b + n, k->minv, n);
  memcpy(b + 2 * n, k->wmean, n);
  memcpy(b + 3 * n, k->wm2, n);
}

fly_rc fly_hmc_ckpt_load(fly_hmc *k, const void *buf, size_t len, fly_err *err)
{
  const unsigned char *b = buf;
  size_t n = k->P * sizeof(double);
  fly_hmc_state st;
  if( len != fly_hmc_ckpt_size(k) )
    return fly_fail(err, FLY_CORRUPT, "HMC checkpoint: %zu bytes, want %zu",
                    len, fly_hmc_ckpt_size(k));
  memcpy(&st, b, sizeof st);
  if( !isfinite(st.log_eps) || !isfinite(st.log_eps_bar) ||
      (st.have_cur != 0 && st.have_cur != 1) )
    return fly_fail(err, FLY_CORRUPT, "HMC checkpoint: bad state");
  b += sizeof st;
  for(size_t i = 0; i < k->P; i++){
    double v;
    memcpy(&v, b + n + i * sizeof v, sizeof v);
    if( !(v > 0) || !isfinite(v) )
      return fly_fail(err, FLY_CORRUPT, "HMC checkpoint: inverse mass %zu is %g",
                      i, v);
  }
  k->st = st;
  memcpy(k->grad, b, n);
  memcpy(k->minv, b + n, n);
  memcpy(k->wmean, b + 2 * n, n);
  memcpy(k->wm2, b + 3 * n, n);
  return FLY_OK;
}

/* ---- the type table (kernel.h) ----------------------------------------- */

static double hmc_default_step(size_t P, size_t n_leap)
{
  (void)P;
  return 1.0 / sqrt((double)(n_leap ? n_leap : DEFAULT_LEAP));
}
static fly_rc hmc_init(void *k, const fly_kernel_cfg *kc, fly_err *err)
{
  fly_hmc *h = k;
  fly_rc rc = fly_hmc_init(h, kc->P, kc->L, kc->eps0, err);
  if( rc ) return rc;
  if( kc->n_leap ) h->n_leap = kc->n_leap;
  h->n_warmup = kc->n_adapt;
  return FLY_OK;
}
static void hmc_free(void *k) { fly_hmc_free(k); }
static fly_rc hmc_step(void *k, fly_target *tgt, fly_rng *rng, double *th,
                       double *lp, int adapt, int *accepted, fly_err *err)
{
  return fly_hmc_step(k, tgt, rng, th, lp, adapt, accepted, err);
}
static double hmc_eps(const void *k, int adapt) { return fly_hmc_eps(k, adapt); }
static void hmc_invalidate(void *k) { fly_hmc_invalidate(k); }
static size_t hmc_ckpt_size(const void *k) { return fly_hmc_ckpt_size(k); }
static void hmc_ckpt_save(const void *k, void *buf) { fly_hmc_ckpt_save(k, buf); }
static fly_rc hmc_ckpt_load(void *k, const void *buf, size_t len, fly_err *err)
{
  return fly_hmc_ckpt_load(k, buf, len, err);
}

const fly_kernel_type fly_kernel_hmc = {
  "hmc", sizeof(fly_hmc), hmc_default_step, hmc_init, hmc_free, hmc_step, hmc_eps,
  hmc_invalidate, hmc_ckpt_size, hmc_ckpt_save, hmc_ckpt_load, NULL
};
