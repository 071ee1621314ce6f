/*
 * robust.c -- robust linear regression: Student-t errors (nu degrees of
 * freedom, scale sigma; paper section 4.3) with the tangent bound of a
 * convex function of the squared residual.
 *
 * Row i has D features x_i and a real target y_i; its scaled residual is
 * r_i = (y_i - th'x_i)/sigma and, with h = (nu+1)/2,
 *
 *   log L_i = K + g(r^2),  g(u) = -h log(1 + u/nu),
 *   K = log Gamma(h) - log Gamma(nu/2) - log(nu pi sigma^2)/2.
 *
 * g is convex in u (g'' = h/(nu+u)^2 > 0), so its tangent at u0 = xi^2 lies
 * below it.  With b = |xi| (stored as f32, signed: xi is the residual at the
 * MAP) and V = nu + b^2
 *
 *   log B_i = K + a r^2 + c,  a = g'(b^2) = -h/V,
 *                             c = g(b^2) - a b^2 - eps,
 *
 * a quadratic in th, tight (value and slope) at r = +-b.  Summed over rows,
 * sum_i log B_i = (th'S th - 2 th'bm + q)/sigma^2 + C with S = sum a x x',
 * bm = sum a y x, q = sum a y^2, C = sum c_i + n K: the moment tables, laid
 * out S (D x D), b (D x 1), q (1 x 1), c (1 x 1).
 *
 * The gap.  With w = (nu + r^2)/V the gap is exactly
 *   gap = g(r^2) - g(b^2) - g'(b^2)(r^2 - b^2) = h phi(w),
 *   phi(w) = w - 1 - log w >= 0,
 * and as a function of r, gap'' = 2h [1/V + (r^2 - nu)/(nu + r^2)^2] with
 * gap = gap' = 0 at r = +-b.  The second term is at most 1/(8 nu) (at
 * r^2 = 3 nu), so gap'' <= 2h (1/V + 1/(8 nu)) everywhere; at the tight
 * point gap'' = 2 Lam, Lam = 2h b^2/V^2 (gap ~ Lam rho^2 near it).
 *
 * eps.  Near the tight points the terms added have magnitude at most
 * |K| + h log(1 + b^2/nu) + h b^2/V, so eps = 1e-12 (1 + those) is far above
 * their rounding and far below anything a chain can see (as in logistic.c;
 * tests check B <= L with |r| up to 1e3).  eps sits in c, so the collapsed
 * sum carries it too.  A non-finite xi is read as FLT_MAX (a valid, very
 * loose bound; tuning never stores one).
 *
 * Thinning bound.  Let r* = sign(r_map) b be the tight point next to the
 * MAP residual and rho = |r - r*|.  Bounds in rho, each proved from the
 * exact gap above:
 *  (crude, any r)  Taylor with the global bound on gap'':
 *        gap <= kc rho^2,  kc = h (1/V + 1/(8 nu)).
 *  (outward, |r| >= b)  w >= 1 and phi'' = 1/w^2 <= 1 there, so
 *        phi(w) <= (w-1)^2/2, and |r^2 - b^2| = (|r| - b)(|r| + b)
 *        <= rho (2b + rho):   gap <= (h/2) rho^2 (2b + rho)^2 / V^2.
 *        (The simpler (nu+1)/(4 nu^2) rho^2 (2|xi| + rho)^2 of
 *        docs/design.md §5.1 is this with V replaced by nu <= V, and holds
 *        inward too, where the next bound
 *        with w >= nu/V gives h Delta^2/(2 nu V), Delta = rho (2b + rho);
 *        but it grows like xi^2 where the true gap decays like 1/xi^2.)
 *  (inward, |r| = s < b)  phi(w) = int_w^1 (1-t)/t dt <= (1-w)^2/(2w),
 *        1 - w = t (b + s)/V with t = b - s <= rho, so
 *        gap <= rho^2 h (b+s)^2 / (2 V (nu + s^2)).  (b+s)^2/(nu+s^2) has
 *        derivative of the sign of nu - b s: if b^2 <= nu it increases on
 *        [0, b] to 4b^2/V (gap <= Lam rho^2), else its maximum is V/nu at
 *        s = nu/b (gap <= h rho^2/(2 nu)).  So gap <= ki rho^2 with
 *        ki = Lam if b^2 <= nu, else h/(2 nu).
 * The residual moves by |r - r_map| = |(th - th_map)'x|/sigma <= R * A,
 * R = ||th - th_map||_{P^-1} (radius), A = ||x||_P / sigma (Cauchy-Schwarz);
 * and |r_map - r*| <= df = 2^-23 b + 1e-9 covers xi being r_map rounded to
 * f32 (2x margin) and the rounding of the residual itself ((|y| + sum
 * |th_j x_j|)/sigma up to ~1e6).  A relative slack KAPPA = 1e-3 covers
 * rounding in R and ||x||_P (f32 storage of xnorm, H and P^-1 to rounding).
 * With m = max(1, R^2) and a = (1+KAPPA) A + df: rho <= a sqrt(m).
 *
 * One key per row.  Near the posterior A R is small, and there the
 * outward bound behaves like Lam rho^2 + O(rho^3), far below the best pure
 * quadratic constant (which must hold for large rho: about h/V, and h/nu at
 * b = 0, vs Lam = 0).  So the family is
 *   gap_upper(k, R) = k m (1 + k m),  m = max(1, R^2),
 * increasing in k and R.  Outward: with p = sqrt(h/2) 2 b a/V and
 * q = sqrt(h/2) a^2/V the bound is <= (p sqrt(m) + q m)^2, and
 * (p + q s)^2 <= k + k^2 s^2 for all s >= 0 exactly when
 * k >= (p^2 + sqrt(p^4 + 4 q^2))/2 (the difference, minimised over s at
 * s = q/(p k), is (k^2 - p^2 k - q^2)/k).  Inward and crude: k m >= kX a^2 m
 * >= kX rho^2.  With kp = (Lam + sqrt(Lam^2 + 4 (sqrt(h/2)/V)^2))/2 (so
 * (p^2 + sqrt(p^4+4q^2))/2 = kp a^2) and the computed gap exceeding the
 * true one by at most 2 eps (eps plus rounding below eps), absorbed as
 * (k + E) m (1 + (k + E) m) >= k m (1 + k m) + E:
 *   key = a^2 min(kc, max(kp, ki)) + 2 eps    (capped at FLT_MAX: read always)
 * For t_nu residuals the mean of min(kc, max(kp, ki)) is 0.32 (nu = 4) to
 * 0.11 (nu = 30) against 0.14 / 0.03 for the local Lam (the ideal), and
 * 0.54 / 0.51 for the best key of logistic.c's form key max(1, R^2), which
 * must also hold for large rho; outliers (b >> sqrt nu) get at most
 * kc -> h/(8 nu), less than typical rows.  A key built on that simpler form,
 * e.g. k = max(A b, A^2) with gap <= (nu+1)/(4 nu^2) R^2 k^2 (2 + R)^2, is
 * valid but about 0.5 (2 + R)^2 times looser near the posterior at nu = 4
 * (R^2 ~ D: 6x at D = 2, 20x at D = 20; unbounded mean for nu <= 2).  The
 * constants are sharp: the unit test's sweep reaches gap/bound 0.998.
 *
 * Laplace matrix.  -d^2 log L/dr^2 = (nu+1)(nu - r^2)/(nu + r^2)^2 is
 * negative for |r| > sqrt(nu), so the observed Hessian need not be positive
 * definite.  neg_hess sums the observed Hessian clipped to >= 0 per row,
 * (nu+1) max(0, nu - r^2)/(nu + r^2)^2 x x'/sigma^2: exact for the rows with
 * |r| <= sqrt(nu), and positive semi-definite.  For t_nu residuals its
 * mean exceeds the observed (= the Fisher, (nu+1)/(nu+3)) information by
 * 1.6% at nu = 4 (14% at nu = 1), a slightly narrow Laplace covariance;
 * the Fisher information instead would count gross outliers as fully
 * informative (here they count 0, observed: slightly negative).
 *
 * Full-data sum (fly_model_full).  n K - h sum_i log1p(r_i^2/nu) with one
 * vectorised log1p a row, and its gradient sum_i (nu+1) r_i/(nu + r_i^2)
 * x_i/sigma: one dgemv each way, no bound coefficients.
 *
 * Costs: eval/grad/xi_at/full one dgemv over the block (n D) plus O(n);
 * neg_hess and moments_add one dsyrk (n D^2); bound_sum O(D^2).  Nothing
 * allocates; work_len(m, n) = n D + 3n + D^2 doubles.
 */
#include "model.h"

#include <cblas.h>
#include <float.h>
#include <math.h>

#include "util/vmath.h"

#define EPS_REL 1e-12   /* eps relative to the magnitude of the terms */
#define KAPPA   1e-3    /* relative slack in the thinning bound, see above */
#define DF_ABS  1e-9    /* absolute slack on the tight point (units of sigma) */
#define LOG_PI  1.14472988584940017414

static size_t n_params(const fly_model *m) { return m->D; }
static size_t n_xi(const fly_model *m) { (void)m; return 1; }

static size_t work_len(const fly_model *m, size_t n)
{
  return n * m->D + 3 * n + m->D * m->D;
}

/* log Gamma(z + 1/2) - log Gamma(z) for z > 0, without lgamma (whose signgam
 * is shared state): a ratio of tgamma below 20, else the asymptotic series
 * 1/2 log z + sum_k (-1)^k (2^(1-k) - 2) B_k / (k (k-1) z^(k-1)), whose
 * first omitted term is below 3e-15 at z = 20. */
static double lgamma_half(double z)
{
  if( z < 20 ) return log(tgamma(z + 0.5) / tgamma(z));
  double iz = 1.0 / z, iz2 = iz * iz;
  return 0.5 * log(z)
       - iz * (1.0 / 8 - iz2 * (1.0 / 192 - iz2 * (1.0 / 640
                                                 - iz2 * (17.0 / 14336))));
}

/* The normaliser K = log Gamma(h) - log Gamma(nu/2) - log(nu pi sigma^2)/2. */
static double lnorm(const fly_model *m)
{
  return lgamma_half(0.5 * m->nu) - 0.5 * (log(m->nu) + LOG_PI)
       - log(m->scale);
}

static double xi_of(float x)
{
  return isfinite(x) ? fabs((double)x) : (double)FLT_MAX;
}

/* a(xi), c(xi) (eps included) and eps for a stored xi. */
static void tangent(const fly_model *m, double K, float xf, double *a,
                    double *c, double *eps)
{
  double h = 0.5 * (m->nu + 1), b = xi_of(xf), b2 = b * b;
  double V = m->nu + b2;
  double lg = h * log1p(b2 / m->nu);            /* -g(b^2) */
  double ab2 = h * (b2 / V);                    /* |a| b^2 */
  double e = EPS_REL * (1.0 + fabs(K) + lg + ab2);
  *a = -h / V;
  *c = ab2 - lg - e;
  if( eps ) *eps = e;
}

/* out[i] = r_i = (y_i - th'x_i)/sigma for the n rows (th'x_i row by row
 * up to FLY_ROWWISE). */
static void resid(const fly_model *m, const double *th, const double *X,
                  size_t ldx, size_t n, double *out)
{
  if( m->D == 0 ){
    for( size_t i = 0; i < n; i++ ) out[i] = 0;
  }else if( n <= FLY_ROWWISE ){
    for( size_t i = 0; i < n; i++ )
      out[i] = cblas_ddot((int)m->D, X + i * ldx, 1, th, 1);
  }else{
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)m->D, 1.0, X,
                (int)ldx, th, 1, 0.0, out, 1);
  }
  for( size_t i = 0; i < n; i++ )
    out[i] = (X[i * ldx + m->tcol] - out[i]) / m->scale;
}

/* M += W + W' - diag(W) from the upper triangle of the D x D matrix W. */
static void add_sym(size_t D, const double *W, double *M)
{
  for( size_t j = 0; j < D; j++ ){
    M[j * D + j] += W[j * D + j];
    for( size_t k = j + 1; k < D; k++ ){
      M[j * D + k] += W[j * D + k];
      M[k * D + j] += W[j * D + k];
    }
  }
}

static fly_rc check_target(const fly_model *m, double y, int64_t row,
                           fly_err *err)
{
  (void)m;
  if( isfinite(y) ) return FLY_OK;
  return fly_fail(err, FLY_RANGE, "row %lld: target %g is not a finite number",
                  (long long)row + 1, y);
}

/* Bound coefficients: (a, c) of each row's tangent (n_coef = 2). */
static size_t n_coef(const fly_model *m) { (void)m; return 2; }

static void coef(const fly_model *m, const double *X, size_t ldx,
                 const float *xi, size_t n, double *cf)
{
  (void)X;
  (void)ldx;
  double K = lnorm(m);
  for( size_t i = 0; i < n; i++ ) tangent(m, K, xi[i], &cf[2 * i], &cf[2 * i + 1], NULL);
}

static void eval_coef(const fly_model *m, const double *th, const double *X,
                      size_t ldx, const double *cf, size_t n, double *logL,
                      double *logB, double *work)
{
  if( n == 0 ) return;
  double K = lnorm(m), h = 0.5 * (m->nu + 1);
  resid(m, th, X, ldx, n, work);
  for( size_t i = 0; i < n; i++ ) logL[i] = work[i] * work[i] / m->nu;
  fly_vlog1p(logL, logL, n);                    /* log1p(r^2/nu), vectorised */
  for( size_t i = 0; i < n; i++ ){
    double r2 = work[i] * work[i];
    logL[i] = K - h * logL[i];
    if( logB ) logB[i] = K + (cf[2 * i] * r2 + cf[2 * i + 1]);
  }
}

static void grad_coef(const fly_model *m, const double *th, const double *X,
                      size_t ldx, const double *cf, size_t n, const double *wL,
                      const double *wB, double *g, double *work)
{
  if( n == 0 || m->D == 0 ) return;
  double nu = m->nu;
  resid(m, th, X, ldx, n, work);
  for( size_t i = 0; i < n; i++ ){
    double r = work[i], k = 0;
    if( wL ) k -= wL[i] * (nu + 1) * r / (nu + r * r);  /* d log L/dr */
    if( wB && wB[i] != 0 ) k += wB[i] * 2.0 * cf[2 * i] * r;  /* d log B/dr */
    work[i] = -k / m->scale;                            /* dr/dth = -x/sigma */
  }
  cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)m->D, 1.0, X, (int)ldx,
              work, 1, 1.0, g, 1);
}

static double full_logp_grad(const fly_model *m, const double *th,
                             const double *X, size_t ldx, size_t n, double *g,
                             double *work)
{
  double nu = m->nu, h = 0.5 * (nu + 1), *r = work, *q = work + n;
  if( n == 0 ) return 0;
  resid(m, th, X, ldx, n, r);
  for( size_t i = 0; i < n; i++ ) q[i] = r[i] * r[i] / nu;
  fly_vlog1p(q, q, n);
  double sum = (double)n * lnorm(m) - h * fly_vsum(q, n);
  if( g && m->D > 0 ){
    for( size_t i = 0; i < n; i++ )
      q[i] = (nu + 1) * r[i] / (nu + r[i] * r[i]) / m->scale;
    cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)m->D, 1.0, X, (int)ldx,
                q, 1, 1.0, g, 1);
  }
  return sum;
}

static void neg_hess(const fly_model *m, const double *th, const double *X,
                     size_t ldx, size_t n, double *H, double *work)
{
  size_t D = m->D;
  if( n == 0 || D == 0 ) return;
  double nu = m->nu, *r = work, *R = work + n, *W = work + n + n * D;
  resid(m, th, X, ldx, n, r);
  for( size_t i = 0; i < n; i++ ){
    double r2 = r[i] * r[i], v = nu + r2;
    /* the observed information of the row, clipped at 0 (see above) */
    double w = r2 < nu ? (nu + 1) / v * ((nu - r2) / v) : 0.0;
    double s = sqrt(w) / m->scale;
    for( size_t j = 0; j < D; j++ ) R[i * D + j] = s * X[i * ldx + j];
  }
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)D, (int)n, 1.0, R,
              (int)D, 0.0, W, (int)D);
  add_sym(D, W, H);
}

static void xi_at(const fly_model *m, const double *th, const double *X,
                  size_t ldx, size_t n, double *xi_out, double *work)
{
  (void)work;
  if( n == 0 ) return;
  resid(m, th, X, ldx, n, xi_out);
}

static size_t n_moments(const fly_model *m)
{
  return m->D * m->D + m->D + 2;
}

static size_t moment_layout(const fly_model *m, fly_moment_section *sec)
{
  sec[0] = (fly_moment_section){ "S", m->D, m->D };
  sec[1] = (fly_moment_section){ "b", m->D, 1 };
  sec[2] = (fly_moment_section){ "q", 1, 1 };
  sec[3] = (fly_moment_section){ "c", 1, 1 };
  return 4;
}

static void moments_add(const fly_model *m, const double *X, size_t ldx,
                        const float *xi, size_t n, double *mom, double *work)
{
  size_t D = m->D;
  if( n == 0 ) return;
  double *S = mom, *bm = mom + D * D, *Q = bm + D, *C = Q + 1;
  double *v = work, *R = work + n, *W = work + n + n * D;
  double K = lnorm(m), csum = 0, qsum = 0;
  for( size_t i = 0; i < n; i++ ){
    double a, c, y = X[i * ldx + m->tcol];
    tangent(m, K, xi[i], &a, &c, NULL);
    csum += c;
    v[i] = a * y;
    qsum += v[i] * y;
    double s = sqrt(-a);                        /* a < 0 always */
    for( size_t j = 0; j < D; j++ ) R[i * D + j] = s * X[i * ldx + j];
  }
  *Q += qsum;
  *C += csum + (double)n * K;
  if( D == 0 ) return;
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)D, (int)n, -1.0, R,
              (int)D, 0.0, W, (int)D);
  add_sym(D, W, S);
  cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)D, 1.0, X, (int)ldx, v,
              1, 1.0, bm, 1);
}

static double bound_sum(const fly_model *m, const double *mom,
                        const double *th, double *g, double *work)
{
  size_t D = m->D;
  const double *S = mom, *bm = mom + D * D;
  double s = m->scale, quad = 0;
  if( D > 0 ){
    double *Sth = work;                         /* S th: one dgemv */
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)D, (int)D, 1.0, S, (int)D,
                th, 1, 0.0, Sth, 1);
    for( size_t j = 0; j < D; j++ ){
      quad += th[j] * (Sth[j] - 2.0 * bm[j]);
      if( g ) g[j] += 2.0 * ((Sth[j] - bm[j]) / s) / s;
    }
  }
  return ((quad + mom[D * D + D]) / s) / s + mom[D * D + D + 1];
}

static double gap_key(const fly_model *m, const float *xi_row, double xnorm)
{
  if( !isfinite(xi_row[0]) ) return FLT_MAX;
  double nu = m->nu, h = 0.5 * (nu + 1), b = xi_of(xi_row[0]), b2 = b * b;
  double V = nu + b2, a, c, eps;
  tangent(m, lnorm(m), xi_row[0], &a, &c, &eps);
  double lam = 2.0 * h * (b2 / V) / V;          /* gap ~ lam rho^2 near r* */
  double qt = sqrt(0.5 * h) / V;
  double kp = 0.5 * (lam + sqrt(lam * lam + 4.0 * qt * qt));
  double ki = b2 <= nu ? lam : 0.5 * h / nu;
  double kc = h * (1.0 / V + 0.125 / nu);
  double df = 0x1.0p-23 * b + DF_ABS;
  double A = (1.0 + KAPPA) * (xnorm / m->scale) + df;
  double key = A * A * fmin(kc, fmax(kp, ki)) + 2.0 * eps;
  return key < FLT_MAX ? key : FLT_MAX;         /* NaN xnorm: FLT_MAX too */
}

static double gap_upper(const fly_model *m, double key, double r)
{
  (void)m;
  double km = key * (r > 1.0 ? r * r : 1.0);
  return km * (1.0 + km);
}

static const fly_model_coef coef_table = {
  .n    = n_coef,
  .make = coef,
  .eval = eval_coef,
  .grad = grad_coef,
};

static const fly_model_thin thin_table = {
  .key    = gap_key,
  .upper  = gap_upper,
  .radius = fly_model_radius,
};

static const fly_model_full full_table = { .logp_grad = full_logp_grad };

const fly_model_type fly_model_robust = {
  .name          = "robust",
  .n_params      = n_params,
  .n_xi          = n_xi,
  .work_len      = work_len,
  .check_target  = check_target,
  .eval          = fly_model_eval_xi,
  .grad          = fly_model_grad_xi,
  .neg_hess      = neg_hess,
  .xi_at         = xi_at,
  .n_moments     = n_moments,
  .moment_layout = moment_layout,
  .moments_add   = moments_add,
  .bound_sum     = bound_sum,
  .coef          = &coef_table,
  .thin          = &thin_table,
  .full          = &full_table,
};
