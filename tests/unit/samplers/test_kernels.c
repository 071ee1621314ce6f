/*
 * test_kernels.c -- the gradient and slice theta kernels (MALA, slice, HMC,
 * NUTS)
 * against targets whose moments are known exactly.
 *
 * Targets: (a) a 2-D Gaussian with correlation 0.9 and sds 1, 2, with L its
 * Cholesky factor and with L = NULL; (b) a 5-D Gaussian with condition
 * number 100 under a wrong-but-reasonable L (correlations shrunk by 20%,
 * scales off by up to 30%), HMC and NUTS also with the diagonal metric
 * adapted;
 * (c) log Y for Y ~ Gamma(3, 1): mean digamma(3), variance trigamma(3);
 * (d) a half-normal, whose -inf outside x > 0 exercises rejections,
 * divergences and stepping out into zero density.
 * After warm-up each coordinate's mean and E[(x - mu)^2] must agree with
 * the truth within 4 MCSE, the MCSE estimated from the chain itself
 * (fly_stats_mcse_mean of x and of (x - mu)^2).  Fixed seeds are printed.
 *
 * Every run also checks: the adaptation state is frozen after warm-up; the
 * target contract of target.h (a test target records the last evaluated
 * point; accept() must follow a fresh evaluation with finite log p, and
 * after every step the accepted point must be the chain's state); slice
 * never asks for a gradient.  Separately: same seed => identical chain;
 * checkpoint round trips (with and without the cached gradient) continue
 * bit-identically; invalidation re-evaluates the current point.  Through
 * the type tables (kernel.h), MH included: lookup by name, the default
 * step sizes, and a checkpoint round trip that continues bit-identically.
 * FLYDB_TEST_LEVEL=accurate runs 5 times longer.
 */
#include "samplers/hmc.h"
#include "samplers/kernel.h"
#include "samplers/mala.h"
#include "samplers/nuts.h"
#include "samplers/slice.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stats/stats.h"
#include "util/mem.h"
#include "tap.h"

#define PMAX 5

/* ---- a recording target ------------------------------------------------ */

enum { T_GAUSS, T_LOGGAMMA, T_HALFNORM };

typedef struct ttgt {
  int     kind;
  size_t  P;
  double  mu[PMAX];
  double  Q[PMAX * PMAX];    /* precision (T_GAUSS) */
  double  last[PMAX];        /* point of the last logp call */
  double  last_lp;
  int     fresh;             /* a logp call since the last accept() */
  double  cur[PMAX];         /* point of the last accept() */
  double  cur_lp;
  long    n_logp, n_grad, n_accept, bad_accept;
} ttgt;

static fly_rc t_logp(void *ctx, const double *th, double *lp, double *grad,
                     fly_err *err)
{
  ttgt *t = ctx;
  size_t P = t->P;
  (void)err;
  t->n_logp++;
  if( grad ) t->n_grad++;
  switch( t->kind ){
  case T_GAUSS: {
    double d[PMAX], q = 0;
    for(size_t i = 0; i < P; i++) d[i] = th[i] - t->mu[i];
    for(size_t i = 0; i < P; i++){
      double s = 0;
      for(size_t j = 0; j < P; j++) s += t->Q[i * P + j] * d[j];
      q += d[i] * s;
      if( grad ) grad[i] = -s;
    }
    *lp = -0.5 * q;
    break;
  }
  case T_LOGGAMMA:              /* x = log y, y ~ Gamma(3, 1) */
    *lp = 3 * th[0] - exp(th[0]);
    if( grad ) grad[0] = 3 - exp(th[0]);
    break;
  default:                      /* half-normal on x > 0 */
    *lp = th[0] > 0 ? -0.5 * th[0] * th[0] : -INFINITY;
    if( grad ) grad[0] = th[0] > 0 ? -th[0] : NAN;
    break;
  }
  memcpy(t->last, th, P * sizeof *th);
  t->last_lp = *lp;
  t->fresh = 1;
  return FLY_OK;
}

static void t_accept(void *ctx)
{
  ttgt *t = ctx;
  t->n_accept++;
  if( !t->fresh || !(t->last_lp > -INFINITY) ) t->bad_accept++;
  memcpy(t->cur, t->last, t->P * sizeof *t->cur);
  t->cur_lp = t->last_lp;
  t->fresh = 0;
}

/* ---- one interface over the three kernels ------------------------------ */

enum { K_MALA, K_SLICE, K_HMC, K_NUTS, N_K };
static const char *kname[] = { "mala", "slice", "hmc", "nuts" };

typedef struct kern {
  int       kd;
  fly_mala  mala;
  fly_slice slice;
  fly_hmc   hmc;
  fly_nuts  nuts;
} kern;

/* HMC's state: HMC's own or the one NUTS embeds */
static fly_hmc *hmc_of(kern *k) { return k->kd == K_NUTS ? &k->nuts.h : &k->hmc; }
static const fly_hmc *chmc_of(const kern *k)
{
  return k->kd == K_NUTS ? &k->nuts.h : &k->hmc;
}

/* opt: HMC's n_warmup for the metric windows (0 = none); slice's m (0 =
 * the default 32). */
static fly_rc kern_init(kern *k, int kd, size_t P, const double *L, size_t opt)
{
  fly_err err = { 0 };
  fly_rc rc;
  memset(k, 0, sizeof *k);
  k->kd = kd;
  switch( kd ){
  case K_MALA:  rc = fly_mala_init(&k->mala, P, L, 1.0, &err); break;
  case K_SLICE:
    rc = fly_slice_init(&k->slice, P, L, 1.0, &err);
    if( opt ) k->slice.m = opt;
    break;
  case K_NUTS: rc = fly_nuts_init(&k->nuts, P, L, 1.0, opt, &err); break;
  default:
    rc = fly_hmc_init(&k->hmc, P, L, 0.5, &err);
    k->hmc.n_warmup = opt;
    break;
  }
  if( rc ) TAP_DIAG("init: %s", err.msg);
  return rc;
}

static void kern_free(kern *k)
{
  fly_mala_free(&k->mala);
  fly_slice_free(&k->slice);
  fly_hmc_free(&k->hmc);
  fly_nuts_free(&k->nuts);
}

static fly_rc kern_step(kern *k, fly_target *tg, fly_rng *rng, double *th,
                        double *lp, int adapt, int *acc, long *n_eval)
{
  fly_err err = { 0 };
  fly_rc rc;
  switch( k->kd ){
  case K_MALA:
    rc = fly_mala_step(&k->mala, tg, rng, th, lp, adapt, acc, &err);
    *n_eval = k->mala.n_eval;
    break;
  case K_SLICE:
    rc = fly_slice_step(&k->slice, tg, rng, th, lp, adapt, acc, &err);
    *n_eval = k->slice.n_eval;
    break;
  case K_NUTS:
    rc = fly_nuts_step(&k->nuts, tg, rng, th, lp, adapt, acc, &err);
    *n_eval = k->nuts.h.n_eval;
    break;
  default:
    rc = fly_hmc_step(&k->hmc, tg, rng, th, lp, adapt, acc, &err);
    *n_eval = k->hmc.n_eval;
    break;
  }
  if( rc ) TAP_DIAG("step: %s", err.msg);
  return rc;
}

/* The step size (width) the next non-adapting step uses. */
static double kern_eps(const kern *k)
{
  switch( k->kd ){
  case K_MALA:  return fly_mala_eps(&k->mala);
  case K_SLICE: return k->slice.st.w;
  default:      return fly_hmc_eps(chmc_of(k), 0);
  }
}

/* Everything adaptation may touch, as a vector (n values into v). */
static size_t kern_adapt_vec(const kern *k, double *v)
{
  switch( k->kd ){
  case K_MALA:
    v[0] = k->mala.st.log_eps; v[1] = k->mala.st.n_adapt;
    return 2;
  case K_SLICE:
    v[0] = k->slice.st.w; v[1] = k->slice.st.n_adapt;
    return 2;
  default: {
    const fly_hmc_state *s = &chmc_of(k)->st;
    size_t n = 0;
    v[n++] = s->log_eps; v[n++] = s->log_eps_bar; v[n++] = s->h_bar;
    v[n++] = s->mu; v[n++] = s->n_da; v[n++] = s->n_adapt;
    v[n++] = s->win_next; v[n++] = s->win_size; v[n++] = s->n_win;
    for(size_t i = 0; i < chmc_of(k)->P; i++) v[n++] = chmc_of(k)->minv[i];
    return n;
  }
  }
}

static size_t kern_ckpt_size(const kern *k)
{
  switch( k->kd ){
  case K_MALA:  return fly_mala_ckpt_size(&k->mala);
  case K_SLICE: return sizeof k->slice.st;
  default:      return fly_hmc_ckpt_size(chmc_of(k));
  }
}

static void kern_ckpt_save(const kern *k, void *buf)
{
  switch( k->kd ){
  case K_MALA:  fly_mala_ckpt_save(&k->mala, buf); break;
  case K_SLICE: memcpy(buf, &k->slice.st, sizeof k->slice.st); break;
  default:      fly_hmc_ckpt_save(chmc_of(k), buf); break;
  }
}

static fly_rc kern_ckpt_load(kern *k, const void *buf, size_t len)
{
  switch( k->kd ){
  case K_MALA:  return fly_mala_ckpt_load(&k->mala, buf, len, NULL);
  case K_SLICE: memcpy(&k->slice.st, buf, sizeof k->slice.st); return FLY_OK;
  default:      return fly_hmc_ckpt_load(hmc_of(k), buf, len, NULL);
  }
}

/* ---- running a chain ---------------------------------------------------- */

typedef struct run_stats {
  double acc;        /* post-warm-up acceptance rate */
  double evals;      /* post-warm-up logp calls per iteration */
  double eps;        /* frozen step size (width) */
  int    contract;   /* target contract held throughout */
  int    frozen;     /* adaptation state unchanged after warm-up */
  int    rc;         /* FLY_OK unless a step failed */
} run_stats;

/* th0 is committed first (as the chain's refresh does); n_warm adapting
 * steps, then n_iter draws into draws[n_iter * P]. */
static void run_chain(kern *k, ttgt *t, uint64_t seed, const double *th0,
                      size_t n_warm, size_t n_iter, double *draws,
                      run_stats *rs)
{
  fly_target tg = { t, t->P, t_logp, t_accept };
  fly_rng rng;
  double th[PMAX], lp, a0[64], a1[64];
  size_t P = t->P, na = 0;
  long n_eval, n_ev_tot = 0, n_acc = 0;
  int acc;

  memset(rs, 0, sizeof *rs);
  rs->contract = rs->frozen = 1;
  fly_rng_seed(&rng, seed, 0);
  memcpy(th, th0, P * sizeof *th);
  t_logp(t, th, &lp, NULL, NULL);
  t_accept(t);
  t->n_logp = t->n_grad = t->n_accept = t->bad_accept = 0;
  for(size_t it = 0; it < n_warm + n_iter; it++){
    int adapt = it < n_warm;
    if( it == n_warm ){
      na = kern_adapt_vec(k, a0);
      rs->eps = kern_eps(k);
    }
    if( !adapt && kern_eps(k) != rs->eps ) rs->frozen = 0;
    if( (rs->rc = kern_step(k, &tg, &rng, th, &lp, adapt, &acc, &n_eval)) )
      return;
    if( memcmp(t->cur, th, P * sizeof *th) != 0 || t->cur_lp != lp )
      rs->contract = 0;
    if( !adapt ){
      memcpy(draws + (it - n_warm) * P, th, P * sizeof *th);
      n_acc += acc;
      n_ev_tot += n_eval;
    }
  }
  if( n_iter > 0 ){
    na = kern_adapt_vec(k, a1);
    if( memcmp(a0, a1, na * sizeof *a0) != 0 ) rs->frozen = 0;
  }
  if( t->bad_accept ) rs->contract = 0;
  rs->acc = (double)n_acc / (double)n_iter;
  rs->evals = (double)n_ev_tot / (double)n_iter;
}

/* Means and E[(x - mu)^2] of each coordinate within 4 MCSE of the truth. */
static void check_moments(const char *name, const double *draws, size_t n,
                          size_t P, const double *mean, const double *var)
{
  double *x = fly_alloc_array(n, sizeof *x);
  fly_stats_ws *ws = NULL;
  if( !x || fly_stats_ws_new(1, n, &ws, NULL) ){
    TAP_OK(0, "%s: memory for the moment checks", name);
    fly_free(x);
    return;
  }
  for(size_t i = 0; i < P; i++){
    double m, v, mc_m = NAN, mc_v = NAN;
    for(size_t j = 0; j < n; j++) x[j] = draws[j * P + i];
    m = fly_stats_mean(x, n);
    fly_stats_mcse_mean(ws, x, 1, n, &mc_m, NULL);
    for(size_t j = 0; j < n; j++) x[j] = (x[j] - mean[i]) * (x[j] - mean[i]);
    v = fly_stats_mean(x, n);
    fly_stats_mcse_mean(ws, x, 1, n, &mc_v, NULL);
    TAP_OK(fabs(m - mean[i]) <= 4 * mc_m,
           "%s: mean[%zu] %.4f, truth %.4f (z = %.2f, mcse %.4f)",
           name, i, m, mean[i], (m - mean[i]) / mc_m, mc_m);
    TAP_OK(fabs(v - var[i]) <= 4 * mc_v,
           "%s: var[%zu] %.4f, truth %.4f (z = %.2f, mcse %.4f)",
           name, i, v, var[i], (v - var[i]) / mc_v, mc_v);
  }
  fly_stats_ws_free(ws);
  fly_free(x);
}

/* ---- small linear algebra ------------------------------------------------ */

/* Lower Cholesky factor of the P x P SPD matrix A into L. */
static void chol(const double *A, size_t P, double *L)
{
  memset(L, 0, P * P * sizeof *L);
  for(size_t j = 0; j < P; j++){
    double s = A[j * P + j];
    for(size_t k = 0; k < j; k++) s -= L[j * P + k] * L[j * P + k];
    L[j * P + j] = sqrt(s);
    for(size_t i = j + 1; i < P; i++){
      double t = A[i * P + j];
      for(size_t k = 0; k < j; k++) t -= L[i * P + k] * L[j * P + k];
      L[i * P + j] = t / L[j * P + j];
    }
  }
}

/* Inverse of an SPD matrix through its Cholesky factor (P <= PMAX). */
static void spd_inv(const double *A, size_t P, double *Ai)
{
  double L[PMAX * PMAX], Li[PMAX * PMAX] = { 0 };
  chol(A, P, L);
  for(size_t c = 0; c < P; c++)          /* columns of L^-1 */
    for(size_t i = 0; i < P; i++){
      double s = i == c ? 1.0 : 0.0;
      for(size_t k = 0; k < i; k++) s -= L[i * P + k] * Li[k * P + c];
      Li[i * P + c] = s / L[i * P + i];
    }
  for(size_t i = 0; i < P; i++)          /* A^-1 = L^-T L^-1 */
    for(size_t j = 0; j < P; j++){
      double s = 0;
      for(size_t k = 0; k < P; k++) s += Li[k * P + i] * Li[k * P + j];
      Ai[i * P + j] = s;
    }
}

/* ---- the cases -------------------------------------------------------------- */

typedef struct tcase {
  const char   *name;
  ttgt          t;
  const double *L;
  double        mean[PMAX], var[PMAX], th0[PMAX];
} tcase;

static double Lc2[4], Cov5[25], Lw5[25], Llg[1];

static void make_cases(tcase *c2, tcase *c2n, tcase *c5, tcase *clg, tcase *chn)
{
  static const double C2[4] = { 1.0, 1.8, 1.8, 4.0 };
  double Q[25];

  memset(c2, 0, sizeof *c2);
  c2->name = "2-D Gaussian, L = chol(cov)";
  c2->t.kind = T_GAUSS;
  c2->t.P = 2;
  c2->t.mu[0] = 1;
  c2->t.mu[1] = -2;
  spd_inv(C2, 2, c2->t.Q);
  chol(C2, 2, Lc2);
  c2->L = Lc2;
  for(size_t i = 0; i < 2; i++){
    c2->mean[i] = c2->t.mu[i];
    c2->var[i] = C2[i * 2 + i];
  }
  c2->th0[0] = 3;
  c2->th0[1] = 1;
  *c2n = *c2;
  c2n->name = "2-D Gaussian, L = NULL";
  c2n->L = NULL;

  /* 5-D: cov = R diag(1, 10^0.5, ..., 100) R^T, R two Householder
   * reflections; L from a distorted cov. */
  {
    static const double v1[5] = { 1, 2, 3, 4, 5 }, v2[5] = { 2, -1, 0.5, 1, -3 };
    static const double D[5] = { 1.3, 0.8, 1.0, 1.2, 0.9 };
    double R[25], H[25], T[25], Cw[25];
    const double *vs[2] = { v1, v2 };
    for(size_t i = 0; i < 25; i++) R[i] = i % 6 == 0;
    for(int h = 0; h < 2; h++){
      double nv = 0;
      for(size_t i = 0; i < 5; i++) nv += vs[h][i] * vs[h][i];
      for(size_t i = 0; i < 5; i++)
        for(size_t j = 0; j < 5; j++)
          H[i * 5 + j] = (i == j) - 2 * vs[h][i] * vs[h][j] / nv;
      for(size_t i = 0; i < 5; i++)
        for(size_t j = 0; j < 5; j++){
          double s = 0;
          for(size_t k = 0; k < 5; k++) s += R[i * 5 + k] * H[k * 5 + j];
          T[i * 5 + j] = s;
        }
      memcpy(R, T, sizeof R);
    }
    for(size_t i = 0; i < 5; i++)
      for(size_t j = 0; j < 5; j++){
        double s = 0;
        for(size_t k = 0; k < 5; k++)
          s += R[i * 5 + k] * pow(10.0, 0.5 * (double)k) * R[j * 5 + k];
        Cov5[i * 5 + j] = s;
      }
    for(size_t i = 0; i < 5; i++)
      for(size_t j = 0; j < 5; j++)
        Cw[i * 5 + j] = D[i] * D[j] *
          (i == j ? Cov5[i * 5 + j] : 0.8 * Cov5[i * 5 + j]);
    chol(Cw, 5, Lw5);
    spd_inv(Cov5, 5, Q);
  }
  memset(c5, 0, sizeof *c5);
  c5->name = "5-D Gaussian (cond 100), wrong L";
  c5->t.kind = T_GAUSS;
  c5->t.P = 5;
  memcpy(c5->t.Q, Q, sizeof Q);
  {
    static const double mu[5] = { 0.5, -1, 2, 0, 3 };
    for(size_t i = 0; i < 5; i++){
      c5->t.mu[i] = c5->mean[i] = mu[i];
      c5->var[i] = Cov5[i * 5 + i];
      c5->th0[i] = 0;
    }
  }
  c5->L = Lw5;

  memset(clg, 0, sizeof *clg);
  clg->name = "log Gamma(3,1)";
  clg->t.kind = T_LOGGAMMA;
  clg->t.P = 1;
  clg->mean[0] = 1.5 - 0.57721566490153286061;       /* digamma(3) */
  clg->var[0] = M_PI * M_PI / 6 - 1.25;                /* trigamma(3) */
  clg->th0[0] = -1;
  Llg[0] = sqrt(1.0 / 3.0);                            /* Laplace at log 3 */
  clg->L = Llg;

  memset(chn, 0, sizeof *chn);
  chn->name = "half-normal (-inf for x <= 0)";
  chn->t.kind = T_HALFNORM;
  chn->t.P = 1;
  chn->mean[0] = sqrt(2 / M_PI);
  chn->var[0] = 1 - 2 / M_PI;
  chn->th0[0] = 2;
  chn->L = NULL;
}

/* Run kernel kd on case c and check everything a run can show. */
static void run_case(int kd, const tcase *c, uint64_t seed, size_t n_warm,
                     size_t n_iter, size_t opt)
{
  size_t metric_warmup = kd == K_HMC || kd == K_NUTS ? opt : 0;
  kern k;
  ttgt t = c->t;
  run_stats rs;
  char name[160];
  double *draws = fly_alloc_array(n_iter * c->t.P, sizeof *draws);
  if( kd == K_SLICE && opt )
    snprintf(name, sizeof name, "slice (m = %zu) on %s", opt, c->name);
  else
    snprintf(name, sizeof name, "%s%s on %s", kname[kd],
             metric_warmup ? " (diag metric)" : "", c->name);
  if( !draws || kern_init(&k, kd, c->t.P, c->L, opt) ){
    TAP_OK(0, "%s: set-up", name);
    fly_free(draws);
    return;
  }
  run_chain(&k, &t, seed, c->th0, n_warm, n_iter, draws, &rs);
  TAP_OK(rs.rc == FLY_OK, "%s: seed %llu, %zu + %zu iterations run", name,
         (unsigned long long)seed, n_warm, n_iter);
  if( rs.rc == FLY_OK ){
    TAP_DIAG("%s: acceptance %.3f, %.2f logp calls/iteration, eps %.4g",
             name, rs.acc, rs.evals, rs.eps);
    if( metric_warmup ){
      TAP_DIAG("  adapted inverse mass (whitened):");
      for(size_t i = 0; i < c->t.P; i++) TAP_DIAG("    %.4f", hmc_of(&k)->minv[i]);
    }
    check_moments(name, draws, n_iter, c->t.P, c->mean, c->var);
    TAP_OK(rs.frozen, "%s: adaptation frozen after warm-up", name);
    TAP_OK(rs.contract && t.bad_accept == 0,
           "%s: accept() only for the last evaluated point, and that point "
           "is the state (%ld accepts, %ld bad)", name, t.n_accept, t.bad_accept);
    if( kd == K_SLICE )
      TAP_OK(t.n_grad == 0, "%s: no gradient requested (%ld)", name, t.n_grad);
    if( metric_warmup ){
      int moved = 0;
      for(size_t i = 0; i < c->t.P; i++) moved |= hmc_of(&k)->minv[i] != 1.0;
      TAP_OK(moved, "%s: the diagonal metric was adapted", name);
    }
    /* The step-size recursions reach their targets on Gaussians.  With the
     * metric adapted, dual averaging restarts at the last window end and
     * has only Stan's 50-step terminal buffer: like Stan, it ends with a
     * conservative eps (acceptance about 0.95 here), so only sanity is
     * asked of it.  NUTS's "acceptance" is the fraction of steps that
     * moved, which dual averaging does not target. */
    if( c->t.kind == T_GAUSS && kd != K_SLICE && kd != K_NUTS && !metric_warmup ){
      double want = kd == K_MALA ? 0.574 : 0.8;
      TAP_OK(fabs(rs.acc - want) < 0.1, "%s: acceptance %.3f near %.3f",
             name, rs.acc, want);
    }
    if( c->t.kind == T_GAUSS && metric_warmup && kd != K_NUTS )
      TAP_OK(rs.acc >= 0.7 && rs.acc < 0.99,
             "%s: acceptance %.3f between 0.7 and 0.99", name, rs.acc);
  }
  kern_free(&k);
  fly_free(draws);
}

/* Same seed => same chain; another seed => another chain. */
static void test_determinism(int kd, const tcase *c, uint64_t seed)
{
  size_t n = 600, P = c->t.P;
  double *d[3];
  run_stats rs[3];
  for(int r = 0; r < 3; r++){
    kern k;
    ttgt t = c->t;
    d[r] = fly_alloc_array(n * P, sizeof(double));
    if( !d[r] || kern_init(&k, kd, P, c->L, 200) ){
      rs[r].rc = FLY_NOMEM;
      continue;
    }
    run_chain(&k, &t, r == 2 ? seed + 1 : seed, c->th0, 400, n, d[r], &rs[r]);
    kern_free(&k);
  }
  int ok = rs[0].rc == FLY_OK && rs[1].rc == FLY_OK && rs[2].rc == FLY_OK;
  TAP_OK(ok && memcmp(d[0], d[1], n * P * sizeof(double)) == 0,
         "%s: seed %llu twice gives the same chain", kname[kd],
         (unsigned long long)seed);
  TAP_OK(ok && memcmp(d[0], d[2], n * P * sizeof(double)) != 0,
         "%s: seed %llu gives another chain", kname[kd],
         (unsigned long long)(seed + 1));
  for(int r = 0; r < 3; r++) fly_free(d[r]);
}

/* Save in the middle of warm-up, continue through warm-up and sampling;
 * a fresh kernel loaded from the checkpoint (with the same RNG, theta and
 * log p) must produce the same draws.  drop_cache: restore with the cached
 * gradient discarded instead (one extra evaluation; identical here because
 * the target is deterministic). */
static void test_checkpoint(int kd, const tcase *c, uint64_t seed, int drop_cache)
{
  size_t P = c->t.P, n1 = 150, n2 = 300, warm = 250;
  fly_target tg;
  ttgt t = c->t;
  kern k;
  fly_rng rng, rng_s;
  double th[PMAX], lp, th_s[PMAX], lp_s, a[2][PMAX * 300];
  unsigned char buf[1024];
  size_t len = 0;
  int acc, ok = 1;
  long ne;

  tg.ctx = &t; tg.P = P; tg.logp = t_logp; tg.accept = t_accept;
  for(int pass = 0; pass < 2 && ok; pass++){
    if( kern_init(&k, kd, P, c->L, warm) ){ ok = 0; break; }
    if( pass == 0 ){
      fly_rng_seed(&rng, seed, 0);
      memcpy(th, c->th0, P * sizeof *th);
      t_logp(&t, th, &lp, NULL, NULL);
      t_accept(&t);
      for(size_t it = 0; it < n1 && ok; it++)
        ok = kern_step(&k, &tg, &rng, th, &lp, it < warm, &acc, &ne) == FLY_OK;
      len = kern_ckpt_size(&k);
      ok = ok && len <= sizeof buf;
      if( ok ) kern_ckpt_save(&k, buf);
      rng_s = rng;
      memcpy(th_s, th, sizeof th);
      lp_s = lp;
    }else{
      ok = kern_ckpt_load(&k, buf, len) == FLY_OK;
      if( drop_cache && kd == K_MALA ) fly_mala_invalidate(&k.mala);
      if( drop_cache && (kd == K_HMC || kd == K_NUTS) ) fly_hmc_invalidate(hmc_of(&k));
      rng = rng_s;
      memcpy(th, th_s, sizeof th);
      lp = lp_s;
      memcpy(t.cur, th, sizeof th);    /* the chain restores its target */
      t.cur_lp = lp;
      t.fresh = 0;
    }
    for(size_t it = n1; it < n1 + n2 && ok; it++){
      ok = kern_step(&k, &tg, &rng, th, &lp, it < warm, &acc, &ne) == FLY_OK;
      memcpy(a[pass] + (it - n1) * P, th, P * sizeof *th);
    }
    kern_free(&k);
  }
  TAP_OK(ok && memcmp(a[0], a[1], n2 * P * sizeof(double)) == 0 &&
         t.bad_accept == 0,
         "%s: checkpoint mid-warm-up (%zu bytes%s) resumes bit-identically",
         kname[kd], len, drop_cache ? ", gradient cache dropped" : "");
  {
    kern k2;
    if( kern_init(&k2, kd, P, c->L, 0) == FLY_OK ){
      if( kd != K_SLICE )
        TAP_OK(kern_ckpt_load(&k2, buf, len - 1) != FLY_OK,
               "%s: a checkpoint of the wrong length is refused", kname[kd]);
      kern_free(&k2);
    }
  }
}

/* Invalidation (the FlyMC z step) and a changed *lp make the kernel
 * re-evaluate the current point; the chain stays right. */
static void test_invalidate(int kd, const tcase *c, uint64_t seed, size_t n_iter)
{
  size_t P = c->t.P, n_warm = 1000;
  ttgt t = c->t;
  fly_target tg = { &t, P, t_logp, t_accept };
  kern k;
  fly_rng rng;
  double th[PMAX], lp, *draws = fly_alloc_array(n_iter * P, sizeof *draws);
  long ne, want = kd == K_MALA ? 2 : 17;
  int acc, ok = draws != NULL, evals_ok = 1, contract = 1;
  long lmin = LONG_MAX, lmax = 0;    /* HMC: leapfrogs a step took */
  char name[96];

  snprintf(name, sizeof name, "%s invalidated every step on %s", kname[kd], c->name);
  if( !ok || kern_init(&k, kd, P, c->L, 0) ){
    TAP_OK(0, "%s: set-up", name);
    fly_free(draws);
    return;
  }
  fly_rng_seed(&rng, seed, 0);
  memcpy(th, c->th0, P * sizeof *th);
  t_logp(&t, th, &lp, NULL, NULL);
  t_accept(&t);
  for(size_t it = 0; it < n_warm + n_iter && ok; it++){
    if( kd == K_MALA ) fly_mala_invalidate(&k.mala);
    else fly_hmc_invalidate(hmc_of(&k));
    ok = kern_step(&k, &tg, &rng, th, &lp, it < n_warm, &acc, &ne) == FLY_OK;
    if( kd == K_NUTS ){
      /* prime, the leapfrogs, and the sampled point unless it was the last */
      long extra = acc && k.nuts.sidx != k.nuts.n_leapfrog;
      if( ne != 1 + k.nuts.n_leapfrog + extra ) evals_ok = 0;
    }else if( ne != (kd == K_HMC ? 1 + (long)k.hmc.leap_last : want) ) evals_ok = 0;
    if( kd == K_HMC ){
      lmin = k.hmc.leap_last < (size_t)lmin ? (long)k.hmc.leap_last : lmin;
      lmax = k.hmc.leap_last > (size_t)lmax ? (long)k.hmc.leap_last : lmax;
    }
    if( memcmp(t.cur, th, P * sizeof *th) != 0 ) contract = 0;
    if( it >= n_warm ) memcpy(draws + (it - n_warm) * P, th, P * sizeof *th);
  }
  if( kd == K_NUTS )
    TAP_OK(ok && evals_ok, "%s: 1 + leapfrogs (+1 at a sampled point not the "
           "last evaluated) logp calls every step", name);
  else if( kd == K_HMC )
    TAP_OK(ok && evals_ok && lmin == 1 && lmax == (long)k.hmc.n_leap,
           "%s: 1 + the step's leapfrogs logp calls every step, leapfrogs from %ld to "
           "%ld of at most %zu", name, lmin, lmax, k.hmc.n_leap);
  else
    TAP_OK(ok && evals_ok, "%s: %ld logp calls every step", name, want);
  TAP_OK(contract && t.bad_accept == 0, "%s: target contract held", name);
  if( ok ) check_moments(name, draws, n_iter, P, c->mean, c->var);

  /* a *lp that is not the cached one forces a re-evaluation */
  double lp_true = lp, lp_bad = lp + 1;
  ok = kern_step(&k, &tg, &rng, th, &lp_bad, 0, &acc, &ne) == FLY_OK;
  if( kd == K_NUTS ) want = 1 + k.nuts.n_leapfrog + (acc && k.nuts.sidx != k.nuts.n_leapfrog);
  if( kd == K_HMC ) want = 1 + (long)k.hmc.leap_last;
  TAP_OK(ok && ne == want && (acc || lp_bad == lp_true),
         "%s: a changed *lp re-evaluates the current point", kname[kd]);
  kern_free(&k);
  fly_free(draws);
}

static void test_misuse(void)
{
  fly_mala m;
  fly_slice s;
  fly_hmc h;
  fly_err err = { 0 };
  TAP_OK(fly_mala_init(&m, 0, NULL, 1, &err) == FLY_MISUSE, "mala: P = 0 refused");
  TAP_OK(fly_slice_init(&s, 2, NULL, 0, &err) == FLY_MISUSE, "slice: w0 = 0 refused");
  TAP_OK(fly_hmc_init(&h, 2, NULL, -1, &err) == FLY_MISUSE, "hmc: eps0 < 0 refused");
  fly_mala_free(&m);
  fly_slice_free(&s);
  fly_hmc_free(&h);
  fly_mala_free(NULL);
  fly_slice_free(NULL);
  fly_hmc_free(NULL);
  {
    fly_nuts nu;
    TAP_OK(fly_nuts_init(&nu, 0, NULL, 1, 0, &err) == FLY_MISUSE, "nuts: P = 0 refused");
    fly_nuts_free(&nu);
    fly_nuts_free(NULL);
    if( fly_nuts_init(&nu, 1, NULL, 1, 0, &err) == FLY_OK ){
      ttgt t = { 0 };
      fly_target tg = { &t, 1, t_logp, t_accept };
      fly_rng rng;
      double th = 1, lp = -0.5;
      int acc;
      t.kind = T_HALFNORM;
      t.P = 1;
      nu.max_depth = 0;
      fly_rng_seed(&rng, 1, 0);
      TAP_OK(fly_nuts_step(&nu, &tg, &rng, &th, &lp, 0, &acc, &err) == FLY_MISUSE,
             "nuts: max_depth = 0 is FLY_MISUSE");
      fly_nuts_free(&nu);
    }
  }

  /* slice from a point of zero density is an error, not a hang */
  if( fly_slice_init(&s, 1, NULL, 1, &err) == FLY_OK ){
    ttgt t = { 0 };
    fly_target tg = { &t, 1, t_logp, t_accept };
    fly_rng rng;
    double th = -1, lp = -INFINITY;
    int acc;
    t.kind = T_HALFNORM;
    t.P = 1;
    fly_rng_seed(&rng, 1, 0);
    TAP_OK(fly_slice_step(&s, &tg, &rng, &th, &lp, 0, &acc, &err) == FLY_NUMERIC,
           "slice: a current point with log p = -inf is FLY_NUMERIC (%s)", err.msg);
    fly_slice_free(&s);
  }
  if( fly_hmc_init(&h, 1, NULL, 1, &err) == FLY_OK ){
    ttgt t = { 0 };
    fly_target tg = { &t, 1, t_logp, t_accept };
    fly_rng rng;
    double th = 1, lp = 0;
    int acc;
    t.kind = T_HALFNORM;
    t.P = 1;
    h.n_leap = 0;
    fly_rng_seed(&rng, 1, 0);
    TAP_OK(fly_hmc_step(&h, &tg, &rng, &th, &lp, 0, &acc, &err) == FLY_MISUSE,
           "hmc: n_leap = 0 is FLY_MISUSE");
    fly_hmc_free(&h);
  }
}

/* Every kernel through its table (kernel.h): found by its name; its
 * default step; n1 adapting steps, a checkpoint, then n2 more steps, and a
 * second state initialised through the table and loaded from the
 * checkpoint, with the same RNG, theta and log p, ends at the same point
 * bit for bit; a checkpoint of the wrong length is refused. */
static void test_tables(const tcase *c, uint64_t seed)
{
  size_t P = c->t.P, n1 = 50, n2 = 150;
  const double d = (double)P;
  const double want[] = { 2.38 / sqrt(d), 1.65 * pow(d, -1.0 / 6), 2.0, 1.0 / sqrt(16.0),
                          1.0 };
  size_t nk = 0;
  for(; fly_kernel_types[nk]; nk++){
    const fly_kernel_type *kt = fly_kernel_types[nk];
    ttgt t = c->t;
    fly_target tg = { &t, P, t_logp, t_accept };
    fly_kernel_cfg kc = { P, c->L, kt->default_step(P, 0), 0, n1 + n2 };
    void *a = fly_alloc_array(1, kt->state_size), *b = fly_alloc_array(1, kt->state_size);
    unsigned char buf[1024];
    fly_rng rng, rng_s;
    double th[PMAX], lp, th_s[PMAX], lp_s;
    size_t len = 0;
    int acc, ok = a && b;

    TAP_OK(fly_kernel_type_find(kt->name) == kt, "%s: found by its name", kt->name);
    TAP_OK(nk >= 5 || kt->default_step(P, 0) == want[nk], "%s: default step %g",
           kt->name, kt->default_step(P, 0));
    fly_rng_seed(&rng, seed + nk, 0);
    memcpy(th, c->th0, P * sizeof *th);
    t_logp(&t, th, &lp, NULL, NULL);
    t_accept(&t);
    ok = ok && kt->init(a, &kc, NULL) == FLY_OK && kt->init(b, &kc, NULL) == FLY_OK;
    for(size_t it = 0; ok && it < n1 + n2; it++){
      if( it == n1 ){
        len = kt->ckpt_size(a);
        ok = len <= sizeof buf;
        if( ok ) kt->ckpt_save(a, buf);
        rng_s = rng;
        memcpy(th_s, th, P * sizeof *th);
        lp_s = lp;
      }
      ok = ok && kt->step(a, &tg, &rng, th, &lp, it < n1 + n2 / 2, &acc, NULL) == FLY_OK;
    }
    ok = ok && kt->ckpt_load(b, buf, len, NULL) == FLY_OK;
    for(size_t it = n1; ok && it < n1 + n2; it++)
      ok = kt->step(b, &tg, &rng_s, th_s, &lp_s, it < n1 + n2 / 2, &acc, NULL) == FLY_OK;
    TAP_OK(ok && memcmp(th, th_s, P * sizeof *th) == 0 && lp == lp_s &&
           kt->eps(a, 0) == kt->eps(b, 0),
           "%s: a checkpoint through the table continues bit-identically", kt->name);
    TAP_OK(ok && kt->ckpt_load(b, buf, len + 1, NULL) == FLY_CORRUPT,
           "%s: a checkpoint of the wrong length is refused", kt->name);
    if( a ) kt->free(a);
    if( b ) kt->free(b);
    fly_free(a);
    fly_free(b);
  }
  TAP_OK(nk == 5 && fly_kernel_type_find("nope") == NULL &&
         fly_kernel_hmc.default_step(P, 4) == 0.5,
         "5 kernels listed; an unknown name is not found; hmc's step follows n_leap");
}

int main(void)
{
  const char *lvl = getenv("FLYDB_TEST_LEVEL");
  size_t scale = lvl && strcmp(lvl, "accurate") == 0 ? 5 : 1;
  size_t n_warm = 2000, n_iter = 50000 * scale;
  tcase c2, c2n, c5, clg, chn;
  const tcase *cases[5] = { &c2, &c2n, &c5, &clg, &chn };
  uint64_t seed = 20140613;

  make_cases(&c2, &c2n, &c5, &clg, &chn);
  TAP_DIAG("base seed %llu, %zu warm-up + %zu iterations per run",
           (unsigned long long)seed, n_warm, n_iter);
  for(int kd = 0; kd < N_K; kd++)
    for(int ci = 0; ci < 5; ci++)
      run_case(kd, cases[ci], seed + (uint64_t)(10 * kd + ci), n_warm, n_iter, 0);
  run_case(K_HMC, &c5, seed + 99, n_warm, n_iter, n_warm);
  run_case(K_HMC, &c2n, seed + 98, n_warm, n_iter, n_warm);
  run_case(K_NUTS, &c5, seed + 94, n_warm, n_iter, n_warm);
  run_case(K_NUTS, &c2n, seed + 93, n_warm, n_iter, n_warm);
  /* little or no stepping out: the random placement of the first interval
   * and the shrinkage carry the correctness */
  run_case(K_SLICE, &clg, seed + 97, n_warm, n_iter, 1);
  run_case(K_SLICE, &c2, seed + 96, n_warm, n_iter, 2);
  run_case(K_SLICE, &clg, seed + 95, n_warm, n_iter, 2);

  for(int kd = 0; kd < N_K; kd++){
    test_determinism(kd, &c5, seed + 200 + (uint64_t)kd);
    test_checkpoint(kd, &c5, seed + 300 + (uint64_t)kd, 0);
    if( kd != K_SLICE ){
      test_checkpoint(kd, &c5, seed + 310 + (uint64_t)kd, 1);
      test_invalidate(kd, &c2, seed + 400 + (uint64_t)kd, n_iter / 2);
    }
  }
  test_misuse();
  test_tables(&c5, seed + 500);
  return tap_done();
}
