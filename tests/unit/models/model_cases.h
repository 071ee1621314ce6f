/*
 * model_cases.h -- the table of model configurations the model property
 * tests run over, and what each model family must supply for them.
 *
 * A case (mcase) is one configuration of one model type: logistic, softmax
 * with several K, robust with several (nu, sigma), under the normal or the
 * Laplace prior.  A family (mfamily) is what the tests need to know about a
 * model type that its hooks do not say: how to draw a target for a row, bound
 * parameters from every regime the code distinguishes, long-double
 * references for log L, log B and the tight parameters, the points where the
 * bound is tight, the targets it accepts, its moment layout.  Everything else
 * the properties read through the type's hooks, so a new model is one family
 * here and one or more rows of the table.
 *
 * Rows are stored with a junk column between the features and the target
 * (ldx = D + 2, target in column D + 1) so a wrong stride or target column
 * shows up; x_0 = 1 (the intercept).  Every draw comes from fly_rng with a
 * fixed seed.  Include after tap.h.
 */
#ifndef FLY_TEST_MODEL_CASES_H
#define FLY_TEST_MODEL_CASES_H

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "util/rng.h"
#include "util/vmath.h"

#define MAXK 8          /* classes */
#define MAXD 24         /* features */
#define MAXP 64         /* parameters */

typedef struct mcase {
  const char *name;               /* TAP prefix */
  const fly_model_type *type;
  size_t    K;
  double    nu, scale;            /* robust */
  fly_prior prior;
  double    prior_scale;
  double    sharp;                /* gap_upper within this factor of the gap
                                     where Cauchy-Schwarz is an equality
                                     (0: not claimed for this case) */
  int       prior_only;           /* a second prior for a configuration
                                     above: only what depends on the prior */
} mcase;

/* ---- shared arithmetic -------------------------------------------------- */

/* max |a - b| relative to max |b| (guarded near 0). */
static inline double relerr(const double *a, const double *b, size_t n)
{
  double num = 0, den = 0;
  for( size_t i = 0; i < n; i++ ){
    num = fmax(num, fabs(a[i] - b[i]));
    den = fmax(den, fabs(b[i]));
  }
  return num / (1e-8 + den);
}

static inline long double ldot(const double *th, const double *x, size_t D)
{
  long double s = 0;
  for( size_t j = 0; j < D; j++ ) s += (long double)th[j] * x[j];
  return s;
}

/* The key as tuning stores it: thin->key rounded up to f32. */
static inline double key_f32(const fly_model *m, const float *xi, double xnorm)
{
  double k = m->type->thin->key(m, xi, xnorm);
  float f = (float)k;
  if( (double)f < k ) f = nextafterf(f, INFINITY);
  return (double)f;
}

/* Inverse of an SPD D x D matrix by Cholesky. */
static inline void spd_inverse(size_t D, const double *H, double *P)
{
  double L[MAXD * MAXD], Li[MAXD * MAXD];
  memset(L, 0, sizeof L); memset(Li, 0, sizeof Li);
  for( size_t j = 0; j < D; j++ ){
    double s = H[j * D + j];
    for( size_t k = 0; k < j; k++ ) s -= L[j * D + k] * L[j * D + k];
    L[j * D + j] = sqrt(s);
    for( size_t i = j + 1; i < D; i++ ){
      double t = H[i * D + j];
      for( size_t k = 0; k < j; k++ ) t -= L[i * D + k] * L[j * D + k];
      L[i * D + j] = t / L[j * D + j];
    }
  }
  for( size_t c = 0; c < D; c++ )
    for( size_t i = 0; i < D; i++ ){
      double t = i == c ? 1 : 0;
      for( size_t k = 0; k < i; k++ ) t -= L[i * D + k] * Li[k * D + c];
      Li[i * D + c] = t / L[i * D + i];
    }
  for( size_t i = 0; i < D; i++ ) for( size_t j = 0; j < D; j++ ){
    double t = 0;
    for( size_t k = 0; k < D; k++ ) t += Li[k * D + i] * Li[k * D + j];
    P[i * D + j] = t;
  }
}

static inline double q_of(size_t D, const double *P, const double *x)   /* x'Px */
{
  double q = 0;
  for( size_t a = 0; a < D; a++ ) for( size_t b = 0; b < D; b++ )
    q += x[a] * P[a * D + b] * x[b];
  return q;
}

/* A random SPD metric H = scale (A'A + 0.05 I), like a posterior precision,
 * and P = H^-1. */
static inline void rand_metric(fly_rng *r, size_t D, double scale, double *H, double *P)
{
  double A[MAXD * MAXD];
  for( size_t j = 0; j < D * D; j++ ) A[j] = fly_rng_normal(r);
  for( size_t i = 0; i < D; i++ ) for( size_t j = 0; j < D; j++ ){
    double t = i == j ? 0.05 : 0;
    for( size_t k = 0; k < D; k++ ) t += A[k * D + i] * A[k * D + j];
    H[i * D + j] = scale * t;
  }
  spd_inverse(D, H, P);
}

/* A t_3 draw: heavy tails (infinite fourth moment). */
static inline double t3(fly_rng *r)
{
  double z = fly_rng_normal(r), q = 0;
  for( int k = 0; k < 3; k++ ){ double e = fly_rng_normal(r); q += e * e; }
  return z / sqrt(q / 3);
}

/* ---- families ----------------------------------------------------------- */

typedef struct mfamily {
  const fly_model_type *type;
  /* a target for a row with features x (D of them), i its index */
  double (*target)(const fly_model *m, fly_rng *r, const double *x, size_t i);
  /* n_xi bound parameters from a mix of every regime (zero, subnormal,
   * tiny, series switches, large, huge, negative, non-finite f32 max) */
  void (*rand_xi)(const fly_model *m, fly_rng *r, float *xi);
  /* n_xi moderate bound parameters (finite differences) */
  void (*mild_xi)(const fly_model *m, fly_rng *r, float *xi);
  /* D = 1, x = 1, target y: th (n_params) where the bound of xi is tight,
   * k = 0, 1 its two kinds of tight point */
  void (*tight)(const fly_model *m, const float *xi, double y, int k, double *th);
  /* tolerance on the gap there (NaN: no claim) */
  double (*tight_tol)(const fly_model *m, const float *xi, int k);
  int tight_pos;                  /* the gap is > 0 there (eps alone) */
  /* long-double log L_i(th) and log B_i(th) without eps of a stored row x
   * (ldx = D + 2); *scale the magnitude log B's error is relative to (NaN:
   * no reference, e.g. xi clamped) */
  long double (*ref_logL)(const fly_model *m, const double *th, const double *x);
  long double (*ref_logB)(const fly_model *m, const double *th, const double *x,
                          const float *xi, double *scale);
  /* the n_xi bound parameters tight at th (what xi_at must give) */
  void (*ref_xi)(const fly_model *m, const double *th, const double *x, double *xi);
  /* 1 if neg_hess counts row x at th, 0 if it leaves it out, -1 at a kink */
  int (*hess_keeps)(const fly_model *m, const double *th, const double *x);
  /* optional: make row x's tight point at th 0 (by its target) */
  void (*zero_row)(const fly_model *m, const double *th, double *x);
  /* Cauchy-Schwarz equality: the sign (+-1) of a move of th'x that takes the
   * linear predictor away from the other tight point (one-vector models),
   * the rows whose |xi[0]| lies in [sharp_lo, sharp_hi], and the size of
   * the move: radius 1, or sqrt(sum_k (x'd_k)^2) = sharp_move if > 0 */
  double (*outward)(const fly_model *m, const float *xi, double eta);
  double sharp_lo, sharp_hi, sharp_move;
  double sharp_scale;             /* only in metrics of at least this scale */
  /* the key at xi = 0, xnorm = 1 lies in [lo, hi] */
  void (*key0)(const fly_model *m, double *lo, double *hi);
  /* targets accepted and rejected; msg: check_target's message for
   * bad[0] at 0-based row 7 */
  size_t (*targets)(const fly_model *m, double *ok, size_t *n_ok, double *bad,
                    char *msg, size_t n_msg);
  const char *layout;             /* "S:DxD,mu:Dx1,c:1x1" */
  int per_class;                  /* n_params = K D, n_xi = K (else D, 1) */
  int density;                    /* log L may be > 0 */
  const char *hooks;              /* its optional tables and optional
                                     members, e.g. "coef scan thin box" */
  size_t nc_k, nc_1;              /* coef->n = nc_k K + nc_1 */
  /* bounds on |d log L / d eta| (order 1) and |d^2 log L / d eta^2|
   * (order 2), summed over the linear predictors eta_k = th_k'x of a row
   * (robust: with respect to eta = th'x, sigma included): how far a
   * rounding of the predictors can move log L and its slope */
  double (*slope)(const fly_model *m, int order);
} mfamily;

static inline fly_model mk(const mcase *c, size_t D)
{
  fly_model m;
  memset(&m, 0, sizeof m);
  m.type = c->type;
  m.D = D;
  m.tcol = D + 1;
  m.K = c->K;
  m.prior = c->prior;
  m.prior_scale = c->prior_scale;
  m.nu = c->nu;
  m.scale = c->scale;
  return m;
}

static inline size_t P_of(const fly_model *m) { return m->type->n_params(m); }
static inline size_t NX_of(const fly_model *m) { return m->type->n_xi(m); }

/* ---- logistic: Jaakkola-Jordan ------------------------------------------ */

static inline double lg_target(const fly_model *m, fly_rng *r, const double *x, size_t i)
{
  (void)i;
  double eta = 0;
  for( size_t j = 0; j < m->D; j++ ) eta += x[j] * (j % 2 ? 0.7 : -0.4);
  return fly_rng_uniform(r) < 1 / (1 + exp(-eta));
}

static inline void lg_rand_xi(const fly_model *m, fly_rng *r, float *xi)
{
  static const float fixed[] = { 0.0f, 1e-38f, 1e-20f, 1e-8f, 9.9e-5f, 1e-4f,
                                 1.01e-4f, 1e-3f, 0.5f, 1.5f, 200.0f, 1e3f,
                                 1e6f, 1e10f, -2.0f, 3e38f };
  (void)m;
  uint64_t k = fly_rng_below(r, 40);
  if( k < 16 ) *xi = fixed[k];
  else if( k < 30 ) *xi = (float)(5 * fly_rng_uniform(r));
  else *xi = (float)(50 * fly_rng_uniform(r));
}

static inline void lg_mild_xi(const fly_model *m, fly_rng *r, float *xi)
{
  (void)m;
  *xi = (float)(3 * fly_rng_uniform(r));
}

static inline void lg_tight(const fly_model *m, const float *xi, double y, int k, double *th)
{
  (void)m;
  double s = k ? -fabs((double)*xi) : fabs((double)*xi);   /* s = t th x, x = 1 */
  th[0] = y > 0.5 ? s : -s;
}

static inline double lg_tight_tol(const fly_model *m, const float *xi, int k)
{
  (void)m; (void)k;
  double xd = fabs((double)*xi);
  return xd <= 50 ? 1e-9 : xd <= 1e15 ? 1e-9 * (1 + xd) : NAN;   /* eps grows with xi */
}

static inline long double lg_logsig(long double s)
{
  return s >= 0 ? -log1pl(expl(-s)) : s - log1pl(expl(s));
}

static inline long double lg_s(const fly_model *m, const double *th, const double *x)
{
  long double s = ldot(th, x, m->D);
  return x[m->tcol] > 0.5 ? s : -s;
}

static inline long double lg_ref_logL(const fly_model *m, const double *th, const double *x)
{
  return lg_logsig(lg_s(m, th, x));
}

static inline long double lg_ref_logB(const fly_model *m, const double *th, const double *x,
                               const float *xi, double *scale)
{
  long double s = lg_s(m, th, x), v = fabsl((long double)*xi);
  long double a = v == 0 ? -0.125L : -tanhl(v / 2) / (4 * v);
  long double c = -a * v * v + v / 2 - (v + log1pl(expl(-v)));
  long double b = a * s * s + s / 2 + c;
  /* log B differs from the reference by eps ~ 1e-12 (1 + 2 xi) */
  *scale = v <= 1e15L ? 1 + (double)v + (double)fabsl(b) : NAN;
  return b;
}

static inline void lg_ref_xi(const fly_model *m, const double *th, const double *x, double *xi)
{
  *xi = (double)fabsl(ldot(th, x, m->D));
}

static inline int keep_all(const fly_model *m, const double *th, const double *x)
{
  (void)m; (void)th; (void)x;
  return 1;
}

static inline double lg_outward(const fly_model *m, const float *xi, double eta)
{
  (void)m; (void)xi;
  return eta >= 0 ? 1 : -1;
}

static inline void lg_key0(const fly_model *m, double *lo, double *hi)
{
  (void)m;
  *lo = 0.125; *hi = 0.1253;            /* about |a| = 1/8 */
}

static inline size_t lg_targets(const fly_model *m, double *ok, size_t *n_ok, double *bad,
                         char *msg, size_t n_msg)
{
  static const double g[] = { 0, 1, -0.0 }, b[] = { 0.5, -1, 2, 1e-300, NAN, INFINITY };
  (void)m;
  memcpy(ok, g, sizeof g); *n_ok = 3;
  memcpy(bad, b, sizeof b);
  snprintf(msg, n_msg, "row 8: target 0.5 is not 0 or 1");
  return 6;
}

static inline double lg_slope(const fly_model *m, int order)
{
  (void)m;
  return order == 1 ? 1.0 : 0.25;       /* sigma(-s), sigma (1 - sigma) */
}

static const mfamily fam_logistic = {
  &fly_model_logistic, lg_target, lg_rand_xi, lg_mild_xi, lg_tight, lg_tight_tol, 0,
  lg_ref_logL, lg_ref_logB, lg_ref_xi, keep_all, NULL, lg_outward, 1, 30, 0, 0,
  lg_key0, lg_targets, "S:DxD,mu:Dx1,c:1x1", 0, 0, "coef scan thin box full", 0, 3,
  lg_slope
};

/* ---- robust: Student-t with the tangent bound ---------------------------- */

/* log Gamma(z + 1/2) - log Gamma(z) from lgammal up to z = 1000 (beyond,
 * lgammal's own size, ~z log z, costs digits): there the Bernoulli series
 * 1/2 log z - 1/(8z) + 1/(192z^3) - 1/(640z^5) + 17/(14336z^7)
 * - 5115/(3041280z^9). */
static inline long double rb_ref_K(double nu, double sigma)
{
  long double n = nu, z = n / 2, d;
  if( z < 1000 ){
    d = lgammal(z + 0.5L) - lgammal(z);
  }else{
    long double i = 1 / z, i2 = i * i;
    d = 0.5L * logl(z) - i / 8 + i * i2 / 192 - i * i2 * i2 / 640
      + 17 * i * i2 * i2 * i2 / 14336 - 5115 * i * i2 * i2 * i2 * i2 / 3041280;
  }
  return d - 0.5L * logl(n * 3.14159265358979323846264338327950288L)
       - logl((long double)sigma);
}

static inline double rb_target(const fly_model *m, fly_rng *r, const double *x, size_t i)
{
  double eta = 0, s = m->scale;
  for( size_t j = 0; j < m->D; j++ ) eta += x[j] * (j % 2 ? 0.7 : -0.4);
  double e = s * t3(r);                                 /* every 20th a gross outlier */
  if( i % 20 == 7 ) e = (i % 40 == 7 ? 100 : -100) * s * (1 + fly_rng_uniform(r));
  return eta + e;
}

static inline void rb_rand_xi(const fly_model *m, fly_rng *r, float *xi)
{
  static const float fixed[] = { 0.0f, 1e-38f, 1e-20f, 1e-8f, 1e-4f, 0.5f,
                                 1.0f, 2.0f, 1.5f, 200.0f, 1e3f, 1e6f, 1e10f,
                                 -2.0f, -0.3f, 3e38f };
  (void)m;
  uint64_t k = fly_rng_below(r, 40);
  if( k < 16 ) *xi = fixed[k];
  else if( k < 30 ) *xi = (float)(5 * fly_rng_uniform(r) - 2.5);
  else *xi = (float)(50 * fly_rng_uniform(r));
}

static inline void rb_mild_xi(const fly_model *m, fly_rng *r, float *xi)
{
  (void)m;
  *xi = (float)(6 * fly_rng_uniform(r) - 3);
}

static inline void rb_tight(const fly_model *m, const float *xi, double y, int k, double *th)
{
  double b = fabs((double)*xi);
  th[0] = y - (k ? -b : b) * m->scale;                  /* r = (y - th)/sigma = +-b */
}

/* T: the size of the terms added near the tight point */
static inline double rb_T(const fly_model *m, double b)
{
  double h = 0.5 * (m->nu + 1), b2 = b * b;
  return 1 + fabs((double)rb_ref_K(m->nu, m->scale)) + h * log1p(b2 / m->nu)
       + h * (b2 / (m->nu + b2));
}

static inline double rb_tight_tol(const fly_model *m, const float *xi, int k)
{
  (void)k;
  return 1e-10 * rb_T(m, fabs((double)*xi));
}

static inline long double rb_r(const fly_model *m, const double *th, const double *x)
{
  /* the residual as eval rounds it: the dot product is exact to the test's
   * tolerance, the subtraction and division are rounded as eval does */
  return (long double)((x[m->tcol] - (double)ldot(th, x, m->D)) / m->scale);
}

static inline long double rb_ref_logL(const fly_model *m, const double *th, const double *x)
{
  long double r = rb_r(m, th, x);
  return rb_ref_K(m->nu, m->scale) - ((long double)m->nu + 1) / 2 * log1pl(r * r / m->nu);
}

static inline long double rb_ref_logB(const fly_model *m, const double *th, const double *x,
                               const float *xi, double *scale)
{
  double nu = m->nu, b = fabs((double)*xi);
  long double r = rb_r(m, th, x), h = ((long double)nu + 1) / 2, b2 = (long double)b * b;
  long double a = -h / (nu + b2);
  long double c = -h * log1pl(b2 / nu) - a * b2;
  /* T plus |a| r^2 away from the tight point */
  *scale = b < 1e30 ? rb_T(m, b) + (double)(h * (r * r / (nu + b2))) : NAN;
  return rb_ref_K(nu, m->scale) + a * r * r + c;
}

static inline void rb_ref_xi(const fly_model *m, const double *th, const double *x, double *xi)
{
  *xi = (double)((x[m->tcol] - ldot(th, x, m->D)) / m->scale);
}

static inline int rb_hess_keeps(const fly_model *m, const double *th, const double *x)
{
  double r = (x[m->tcol] - (double)ldot(th, x, m->D)) / m->scale;
  if( fabs(r * r - m->nu) < 1e-3 ) return -1;           /* at the kink */
  return r * r < m->nu;
}

static inline void rb_zero_row(const fly_model *m, const double *th, double *x)
{
  x[m->tcol] = (double)ldot(th, x, m->D);
}

static inline double rb_outward(const fly_model *m, const float *xi, double eta)
{
  (void)m; (void)eta;
  return *xi > 0 ? -1 : 1;                              /* r = (y - th'x)/sigma */
}

static inline void rb_key0(const fly_model *m, double *lo, double *hi)
{
  /* a^2 sqrt(h/2)/nu + 2 eps, a = 1.001 xnorm/sigma + 1e-9 */
  double a = 1.001 / m->scale + 1e-9, h = 0.5 * (m->nu + 1);
  *lo = a * a * sqrt(0.5 * h) / m->nu;
  *hi = *lo * (1 + 1e-9) + 2.01e-12 * rb_T(m, 0);
}

static inline size_t rb_targets(const fly_model *m, double *ok, size_t *n_ok, double *bad,
                         char *msg, size_t n_msg)
{
  static const double g[] = { 0, -1e300, 3.25, 4.9e-324 }, b[] = { NAN, INFINITY, -INFINITY };
  (void)m;
  memcpy(ok, g, sizeof g); *n_ok = 4;
  memcpy(bad, b, sizeof b);
  snprintf(msg, n_msg, "row 8: target nan is not a finite number");
  return 3;
}

/* (nu+1) |r| / (nu + r^2) <= (nu+1) / (2 sqrt nu) and (nu+1) |nu - r^2| /
 * (nu + r^2)^2 <= (nu+1)/nu, in r = (y - eta)/sigma */
static inline double rb_slope(const fly_model *m, int order)
{
  double nu = m->nu, s = m->scale;
  return order == 1 ? (nu + 1) / (2 * sqrt(nu)) / s : (nu + 1) / nu / (s * s);
}

static const mfamily fam_robust = {
  &fly_model_robust, rb_target, rb_rand_xi, rb_mild_xi, rb_tight, rb_tight_tol, 0,
  rb_ref_logL, rb_ref_logB, rb_ref_xi, rb_hess_keeps, rb_zero_row, rb_outward, 1, 5, 0, 1e4,
  rb_key0, rb_targets, "S:DxD,b:Dx1,q:1x1,c:1x1", 0, 1, "coef thin full", 0, 2,
  rb_slope
};

/* ---- softmax: Boehning ----------------------------------------------------- */

static inline size_t sm_y(const fly_model *m, const double *x) { return (size_t)x[m->tcol]; }

static inline double sm_target(const fly_model *m, fly_rng *r, const double *x, size_t i)
{
  (void)i;
  double eta[MAXK], mx = -INFINITY, t = 0;
  for( size_t k = 0; k < m->K; k++ ){
    eta[k] = 0;
    for( size_t j = 0; j < m->D; j++ )
      eta[k] += x[j] * 0.3 * (double)((k + 2 * j) % 5) - 0.5;
    if( eta[k] > mx ) mx = eta[k];
  }
  for( size_t k = 0; k < m->K; k++ ) t += exp(eta[k] - mx);
  double u = fly_rng_uniform(r) * t, c = 0;
  for( size_t k = 0; k < m->K; k++ ){
    c += exp(eta[k] - mx);
    if( u < c ) return (double)k;
  }
  return (double)(m->K - 1);
}

static inline void sm_rand_xi(const fly_model *m, fly_rng *r, float *psi)
{
  uint64_t c = fly_rng_below(r, 10);
  for( size_t k = 0; k < m->K; k++ ){
    double v;
    switch( c ){
    case 0:  v = 0; break;                              /* untuned */
    case 1:  v = 1.5; break;                            /* fixed = 1.5 */
    case 2:  v = 0.1 * fly_rng_normal(r); break;
    case 3:  v = 1e-30 * fly_rng_normal(r); break;
    case 4:  v = 20 * fly_rng_normal(r); break;
    case 5:  v = 1e3 * (fly_rng_uniform(r) - 0.5); break;
    default: v = 100 * fly_rng_uniform(r) - 50; break;  /* |psi| <= 50 */
    }
    psi[k] = (float)v;
  }
}

static inline void sm_mild_xi(const fly_model *m, fly_rng *r, float *psi)
{
  for( size_t k = 0; k < m->K; k++ ) psi[k] = (float)(2 * fly_rng_normal(r));
}

static inline void sm_tight(const fly_model *m, const float *psi, double y, int k, double *th)
{
  (void)y;
  for( size_t c = 0; c < m->K; c++ ) th[c] = psi[c] + (k ? 37.25 : 0);   /* psi + t 1 */
}

static inline double sm_range(const float *psi, size_t K)
{
  double lo = psi[0], hi = psi[0];
  for( size_t k = 1; k < K; k++ ){ lo = fmin(lo, psi[k]); hi = fmax(hi, psi[k]); }
  return hi - lo;
}

static inline double sm_tight_tol(const fly_model *m, const float *psi, int k)
{
  return 1e-12 * (1 + 2 * sm_range(psi, m->K) + 2 * log((double)m->K)) + (k ? 1e-13 : 0);
}

static inline long double sm_lse(const long double *a, size_t K)
{
  long double mx = a[0], t = 0;
  for( size_t k = 1; k < K; k++ ) if( a[k] > mx ) mx = a[k];
  for( size_t k = 0; k < K; k++ ) t += expl(a[k] - mx);
  return mx + logl(t);
}

static inline void sm_s(const fly_model *m, const double *th, const double *x, long double *s)
{
  for( size_t k = 0; k < m->K; k++ ) s[k] = (double)ldot(th + k * m->D, x, m->D);
}

static inline long double sm_ref_logL(const fly_model *m, const double *th, const double *x)
{
  long double s[MAXK] = { 0 };
  sm_s(m, th, x, s);
  return s[sm_y(m, x)] - sm_lse(s, m->K);
}

/* the bound in its plain (unshifted) form f(psi) + g'(s - psi) - (s - psi)'A(s - psi)/2 */
static inline long double sm_ref_logB(const fly_model *m, const double *th, const double *x,
                               const float *psi, double *scale)
{
  const size_t K = m->K, y = sm_y(m, x);
  long double s[MAXK] = { 0 }, p[MAXK] = { 0 }, d[MAXK], l, gd = 0, dbar = 0, q = 0;
  double d2 = 0;
  sm_s(m, th, x, s);
  for( size_t k = 0; k < K; k++ ) p[k] = psi[k];
  l = sm_lse(p, K);
  for( size_t k = 0; k < K; k++ ){
    d[k] = s[k] - p[k];
    dbar += d[k] / K;
    d2 += (double)(d[k] * d[k]);
  }
  for( size_t k = 0; k < K; k++ ) gd += ((k == y) - expl(p[k] - l)) * d[k];
  for( size_t k = 0; k < K; k++ ) q += 0.5L * (d[k] - dbar) * (d[k] - dbar);
  long double b = (p[y] - l) + gd - 0.5L * q;
  *scale = 1 + sm_range(psi, K) + d2 + (double)fabsl(b);
  return b;
}

static inline void sm_ref_xi(const fly_model *m, const double *th, const double *x, double *psi)
{
  for( size_t k = 0; k < m->K; k++ ) psi[k] = (double)ldot(th + k * m->D, x, m->D);
}

static inline void sm_key0(const fly_model *m, double *lo, double *hi)
{
  (void)m;
  *lo = 0.25; *hi = 0.2503;              /* (1+k)/4 */
}

static inline size_t sm_targets(const fly_model *m, double *ok, size_t *n_ok, double *bad,
                         char *msg, size_t n_msg)
{
  double K = (double)m->K;
  size_t n = 0;
  for( size_t k = 0; k < m->K; k++ ) ok[n++] = (double)k;
  ok[n++] = -0.0;
  *n_ok = n;
  double b[] = { 0.5, -1, K, K - 1 + 1e-7, 1e-300, NAN, INFINITY, -INFINITY };
  memcpy(bad, b, sizeof b);
  snprintf(msg, n_msg, "row 8: target 0.5 is not a class 0..%zu", m->K - 1);
  return 8;
}

/* sum_k |[k = y] - p_k| <= 2; sum_k,l |p_k [k = l] - p_k p_l| <= 2 */
static inline double sm_slope(const fly_model *m, int order)
{
  (void)m;
  (void)order;
  return 2.0;
}

static const mfamily fam_softmax = {
  &fly_model_softmax, sm_target, sm_rand_xi, sm_mild_xi, sm_tight, sm_tight_tol, 1,
  sm_ref_logL, sm_ref_logB, sm_ref_xi, keep_all, NULL, NULL, 0, INFINITY, 1000, 0,
  sm_key0, sm_targets, "S:DxD,Y:KxD,Bx:KxD,c:1x1", 1, 0, "coef thin dirs full", 2, 2,
  sm_slope
};

static const mfamily *family_of(const fly_model_type *t)
{
  static const mfamily *const all[] = { &fam_logistic, &fam_robust, &fam_softmax };
  for( size_t i = 0; i < sizeof all / sizeof all[0]; i++ )
    if( all[i]->type == t ) return all[i];
  return NULL;
}

/* ---- the table ------------------------------------------------------------ */

#define N_NORMAL FLY_PRIOR_NORMAL, 2.5
#define N_LAPLACE FLY_PRIOR_LAPLACE, 0.7

static const mcase cases[] = {
  { "logistic",                &fly_model_logistic, 1, 0, 0, N_NORMAL, 10, 0 },
  { "logistic laplace",        &fly_model_logistic, 1, 0, 0, N_LAPLACE, 10, 1 },
  { "softmax K=2",             &fly_model_softmax, 2, 0, 0, N_NORMAL, 1.1, 0 },
  { "softmax K=3",             &fly_model_softmax, 3, 0, 0, N_NORMAL, 1.1, 0 },
  { "softmax K=5",             &fly_model_softmax, 5, 0, 0, N_NORMAL, 1.1, 0 },
  { "softmax K=3 laplace",     &fly_model_softmax, 3, 0, 0, N_LAPLACE, 1.1, 1 },
  { "robust nu=0.01 s=0.7",    &fly_model_robust, 1, 0.01, 0.7, N_NORMAL, 0, 0 },
  { "robust nu=0.3 s=3",       &fly_model_robust, 1, 0.3, 3.0, N_NORMAL, 0, 0 },
  { "robust nu=1 s=0.5",       &fly_model_robust, 1, 1, 0.5, N_NORMAL, 0, 0 },
  { "robust nu=2.5 s=1.7",     &fly_model_robust, 1, 2.5, 1.7, N_NORMAL, 0, 0 },
  { "robust nu=4 s=0.7",       &fly_model_robust, 1, 4, 0.7, N_NORMAL, 3, 0 },
  { "robust nu=30 s=0.4",      &fly_model_robust, 1, 30, 0.4, N_NORMAL, 0, 0 },
  { "robust nu=1e4 s=0.7",     &fly_model_robust, 1, 1e4, 0.7, N_NORMAL, 0, 0 },
  { "robust nu=1e6 s=2",       &fly_model_robust, 1, 1e6, 2.0, N_NORMAL, 0, 0 },
  { "robust nu=3.5 laplace",   &fly_model_robust, 1, 3.5, 0.6, N_LAPLACE, 0, 1 },
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The first case of model type t. */
static const mcase *case_of(const fly_model_type *t)
{
  for( size_t i = 0; i < N_CASES; i++ ) if( cases[i].type == t ) return &cases[i];
  return NULL;
}

/* n rows of D features (x_0 = 1, the others N(0, sd^2)), junk (1e30) in
 * column D and the family's target in D + 1. */
static inline double *mk_rows(const fly_model *m, fly_rng *r, size_t n, double sd)
{
  const mfamily *f = family_of(m->type);
  size_t D = m->D, ldx = D + 2;
  double *X = calloc(n * ldx + 1, sizeof *X);
  for( size_t i = 0; i < n; i++ ){
    double *x = X + i * ldx;
    for( size_t j = 0; j < D; j++ ) x[j] = j == 0 ? 1.0 : sd * fly_rng_normal(r);
    x[D] = 1e30;
    x[D + 1] = f->target(m, r, x, i);
  }
  return X;
}

/* n rows of bound parameters from every regime */
static inline void rand_xis(const fly_model *m, fly_rng *r, size_t n, float *xi)
{
  const mfamily *f = family_of(m->type);
  for( size_t i = 0; i < n; i++ ) f->rand_xi(m, r, xi + i * NX_of(m));
}

/* ---- the sums the properties differentiate by finite differences ---------- */

/* Sum of wL logL + wB logB over rows (stride D + 2). */
static inline double wsum(const fly_model *m, const double *th, const double *X,
                   const float *xi, size_t n, const double *wL, const double *wB,
                   double *lL, double *lB, double *w)
{
  m->type->eval(m, th, X, m->D + 2, xi, n, lL, lB, w);
  double s = 0;
  for( size_t i = 0; i < n; i++ )
    s += (wL ? wL[i] * lL[i] : 0) + (wB ? wB[i] * lB[i] : 0);
  return s;
}

#endif
