/*
 * model.c -- what every model shares: the prior on th, the registry of model
 * types, and the two functions of the gap g = log L - log B >= 0 that the
 * chain needs for each bright row:
 *
 *   log Ltilde = log((L - B)/B) = log(e^g - 1) = g + log(1 - e^-g)
 *   p(z = 1 | th) = 1 - B/L = 1 - e^-g = -expm1(-g)
 *
 * Both are computed from g alone, never by forming L - B, so they stay
 * accurate when the bound is nearly tight (g ~ 1e-300) and when it is very
 * loose (g ~ 800, where e^g overflows).
 *
 * The prior is either N(0, s^2 I) or Laplace(0, s) per coordinate, over all
 * type->n_params(m) parameters, up to its normalising constant.  O(n_params)
 * (the Hessian O(n_params^2) to touch the diagonal); nothing allocates.
 */
#include "model.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "util/vmath.h"

double fly_model_log_prior(const fly_model *m, const double *th, double *grad)
{
  size_t P = m->type->n_params(m);
  double s = m->prior_scale, lp = 0;
  if( m->prior == FLY_PRIOR_LAPLACE ){
    for( size_t j = 0; j < P; j++ ){
      lp -= fabs(th[j]);
      if( grad ) grad[j] -= (th[j] > 0) ? 1.0 / s : (th[j] < 0) ? -1.0 / s : 0.0;
    }
    return lp / s;
  }
  double s2 = s * s;
  for( size_t j = 0; j < P; j++ ){
    lp += th[j] * th[j];
    if( grad ) grad[j] -= th[j] / s2;
  }
  return -0.5 * lp / s2;
}

void fly_model_prior_neg_hess(const fly_model *m, double *H)
{
  if( m->prior != FLY_PRIOR_NORMAL ) return;
  size_t P = m->type->n_params(m);
  double w = 1.0 / (m->prior_scale * m->prior_scale);
  for( size_t j = 0; j < P; j++ ) H[j * P + j] += w;
}

static const fly_model_type *const types[] = { &fly_model_logistic,
                                                &fly_model_softmax,
                                                &fly_model_robust };

const fly_model_type *fly_model_find(const char *name)
{
  if( !name ) return NULL;
  for( size_t i = 0; i < sizeof types / sizeof types[0]; i++ )
    if( strcmp(types[i]->name, name) == 0 ) return types[i];
  return NULL;
}

double fly_p_bright(double gap)
{
  if( gap <= 0 ) return 0.0;
  return -expm1(-gap);
}

void fly_inv_p_bright_n(const double *gap, double *out, size_t n)
{
  for(size_t i = 0; i < n; i++) out[i] = gap[i] > 0 ? -gap[i] : 0.0;
  fly_vexpm1(out, out, n);
  for(size_t i = 0; i < n; i++) out[i] = out[i] < 0 ? -1.0 / out[i] : INFINITY;
}

/* The part of work coef->eval / coef->grad use themselves: one double per row
 * and class (K is 1, or left 0, for single-output models). */
static size_t coef_off(const fly_model *m, size_t n)
{
  return n * (m->K > 1 ? m->K : 1);
}

void fly_model_slack_logB(const fly_model *m, double *logB, size_t n)
{
  if( !(m->slack > 0) || !logB ) return;
  for( size_t i = 0; i < n; i++ ) logB[i] -= m->slack;
}

double fly_model_slack_p(const fly_model *m, double p_upper)
{
  /* 1 - e^-(g + s) = 1 - (1 - p) e^-s for p = 1 - e^-g */
  return m->slack > 0 ? 1.0 - (1.0 - p_upper) * exp(-m->slack) : p_upper;
}

void fly_model_keys(const fly_model *m, const float *xi, const double *xnorm, size_t n,
                    double *out, double *work)
{
  const fly_model_thin *t = m->type->thin;
  if( t->key_n ){
    t->key_n(m, xi, xnorm, n, out, work);
    return;
  }
  const size_t n_xi = m->type->n_xi(m);
  for(size_t i = 0; i < n; i++) out[i] = t->key(m, xi + i * n_xi, xnorm[i]);
}

double fly_model_gap_upper_rho(const fly_model *m, const float *xi_row,
                               double rho)
{
  if( !(rho < INFINITY) ) return INFINITY;
  const fly_model_thin *t = m->type->thin;
  double key = t->key(m, xi_row, rho);
  double u = t->upper(m, key, 1.0);
  if( t->box ){
    double v = fabs((double)xi_row[0]);
    if( !isfinite(v) ) v = INFINITY;   /* as the buckets take it */
    double b = t->box->upper(m, v, v, key, 1.0);
    if( b < u ) u = b;                 /* both are bounds */
  }
  return u + m->slack;
}

void fly_model_eval_xi(const fly_model *m, const double *th, const double *X,
                       size_t ldx, const float *xi, size_t n, double *logL,
                       double *logB, double *work)
{
  double *cf = logB ? work + coef_off(m, n) : NULL;
  if( cf ) m->type->coef->make(m, X, ldx, xi, n, cf);
  m->type->coef->eval(m, th, X, ldx, cf, n, logL, logB, work);
  fly_model_slack_logB(m, logB, n);
}

void fly_model_grad_xi(const fly_model *m, const double *th, const double *X,
                       size_t ldx, const float *xi, size_t n, const double *wL,
                       const double *wB, double *g, double *work)
{
  double *cf = wB ? work + coef_off(m, n) : NULL;
  if( cf ) m->type->coef->make(m, X, ldx, xi, n, cf);
  m->type->coef->grad(m, th, X, ldx, cf, n, wL, wB, g, work);
}

void fly_model_scan_rows(const fly_model *m, const double *X, size_t ldx,
                         size_t n, float *Xf, float *xnorm)
{
  for( size_t j = 0; j < n * ldx; j++ ) Xf[j] = (float)X[j];
  if( !xnorm ) return;
  for( size_t i = 0; i < n; i++ ){
    const double *x = X + i * ldx;
    /* a sum of D squares in any order (BLAS's, vectorised) is within
     * gamma_D = D u / (1 - D u) relative (u = 2^-53), its sqrt within half
     * of that plus u: (D + 2) 2u covers both, and the product's rounding */
    double q = m->D ? cblas_ddot((int)m->D, x, 1, x, 1) : 0.0;
    double up = sqrt(q) * (1.0 + (double)(m->D + 2) * 0x1p-52);
    float f = (float)(up * (1.0 + 0x1p-23));    /* up to f32: rounds up but */
    if( (double)f < up ) f = nextafterf(f, INFINITY);   /* for subnormals */
    xnorm[i] = f;
  }
}

double fly_model_radius(const fly_model *m, const double *th,
                        const double *th_map, const double *H, double *work)
{
  (void)work;
  size_t D = m->D;
  double q = 0;
  for( size_t j = 0; j < D; j++ ){
    double dj = th[j] - th_map[j], Hd = 0;
    for( size_t k = 0; k < D; k++ ) Hd += H[j * D + k] * (th[k] - th_map[k]);
    q += dj * Hd;
  }
  return q > 0 ? sqrt(q) : 0.0;
}
