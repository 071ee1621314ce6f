/*
 * logistic.c -- Bayesian logistic regression with the Jaakkola-Jordan bound.
 *
 * Row i has D features x_i and a target y_i in {0,1}; t_i = 2y_i - 1 and the
 * signed linear predictor is s_i = t_i th'x_i, so L_i = sigma(s_i).  With a
 * bound parameter xi >= 0 (stored as f32; |xi| is used)
 *
 *   log B_i = a s^2 + s/2 + c,  a = -tanh(xi/2)/(4 xi)  (-> -1/8 at xi = 0),
 *                               c = -a xi^2 + xi/2 - softplus(xi) - eps,
 *
 * a quadratic in th, tight (value and slope) at s = +-xi.  Because every log
 * B_i is quadratic, sum_i log B_i = th'S th + th'mu + C with
 * S = sum a_i x_i x_i', mu = sum t_i x_i / 2, C = sum c_i: the moment tables,
 * laid out S (D x D), mu (D x 1), c (1 x 1).
 *
 * eps.  Mathematically log B <= log L, with equality at s = +-xi (and,
 * at xi = 0, fourth-order contact at s = 0), so rounding alone could make the
 * computed log B exceed the computed log L by a few ulps of the terms being
 * added.  Near the tight points those terms have magnitude at most
 * |c0| + |a| xi^2 + xi/2 (+1 for log L itself near s = 0); far from them the
 * true gap is of the order of the terms themselves and rounding cannot flip
 * its sign.  So eps = 1e-12 (1 + |c0| + |a| xi^2 + xi/2), about 4500 ulps of
 * the largest term: far above any rounding, far below anything a chain can
 * see (it shifts log B by a relative 1e-12).  eps sits in c, so the collapsed
 * sum carries it too; tests check B <= L with s up to |s| = 1e3.
 *
 * Small xi: tanh(h)/h = 1 - h^2/3 + 2h^4/15 - ..., so for xi < 1e-4,
 * a = -(1 - xi^2/12)/8 to full precision (the next term is 1e-19 relative),
 * and xi = 0 is no special case.  xi beyond 1e15 (or non-finite) is clamped.
 *
 * Thinning bound.  As a function of s, gap(s) = log sigma(s) - log B(s) has
 * gap'' = -sigma(s)(1-sigma(s)) - 2a <= 2|a|, and gap = gap' = 0 at the
 * tight point s* = sign(s_map) xi.  Taylor with remainder:
 * gap(s) <= |a| (s - s*)^2.  With d = th - th_map,
 * |s - s_map| = |d'x| <= ||d||_{P^-1} ||x||_P = r * xnorm (Cauchy-Schwarz),
 * and |s_map - s*| = ||s_map| - xi| <= df := 2^-23 xi + 2^-149 because xi is
 * |s_map| rounded to f32 (2x margin, plus the subnormal floor).  Then
 * (rho + df)^2 <= (1+k) rho^2 + (1+1/k) df^2 for any k > 0; k = 1e-3 also
 * absorbs relative errors up to 1e-3 in r and xnorm (f32 storage of xnorm,
 * H and P inverse to rounding).  The computed gap also contains eps and
 * rounding below eps, so
 *   gap <= A r^2 + E,  A = (1+k)|a| xnorm^2,  E = 2 eps + (1+1/k)|a| df^2.
 * One key per row must carry both, so key = A + E and
 *   gap_upper(key, r) = key * max(1, r^2) >= A r^2 + E.
 * Near the posterior r^2 ~ chi^2_D is mostly >= 1, so little is lost; E is
 * of order 1e-12 per row.
 *
 * Tighter bound for a bucket of rows (gap_upper_box).  |a| xnorm^2 r^2 uses
 * the largest curvature of the gap, gap'' <= 2|a|, but near the tight point
 * gap''(s*) = 2|a| - sigma(1-sigma)(xi), which is ~0 for rows near the
 * decision boundary (xi -> 0: fourth-order contact); on synthetic data this
 * wastes a factor of about 3.  Exactly: log sigma(s) - s/2 = -l(s) with
 * l(s) = log(2 cosh(s/2)) even, so gap(s) = -l(s) + |a| s^2 - c is even in
 * s with gap = gap' = 0 at s* = +-xi and
 *   gap''(s) = g(xi) - sech^2(s/2)/4,   g(xi) = 2|a(xi)| = tanh(xi/2)/(2 xi).
 * Take a bucket of rows with xi in [xi_lo, xi_hi] and keys <= key, and
 * Delta = s - s* with |Delta| <= rho'.  Along the segment from s* to s,
 * |s*+t| <= xi_hi + |t|, and g is decreasing, so by Taylor's theorem with
 * integral remainder
 *   gap(s) = int_0^|Delta| (|Delta| - t) gap''(s* + sign(Delta) t) dt
 *         <= int_0^|Delta| (|Delta| - t) [g(xi_lo) - sech^2((xi_hi+t)/2)/4] dt
 *          = g(xi_lo) Delta^2/2 - [l(xi_hi+|Delta|) - l(xi_hi)
 *                                  - |Delta| tanh(xi_hi/2)/2] =: Phi(|Delta|)
 * (the bracket is the Taylor remainder of l, whose l'' = sech^2/4).  Phi is
 * increasing: Phi'(d) = g(xi_lo) d - int_0^d sech^2((xi_hi+t)/2)/4 dt >= 0
 * because sech^2((xi_hi+t)/2)/4 <= sech^2(xi_hi/2)/4 <= g(xi_hi) <= g(xi_lo)
 * (sinh x >= x).  So gap <= Phi(rho') for every |Delta| <= rho'.  It is
 * exact for Delta > 0 when xi_lo = xi_hi, and never above |a(xi_lo)| rho'^2.
 * rho': |Delta| <= |s - s_map| + |s_map - s*| <= xnorm r + df, and
 * xnorm^2 <= key / ((1+k)|a(xi)|) <= key/|a(xi_hi)| for every row of the
 * bucket (the key holds (1+k)|a| xnorm^2 and is rounded up; |a| decreases
 * in xi), so rho' = (1+k) sqrt(key/|a(xi_hi)|) r + df(xi_hi), the extra
 * (1+k) absorbing rounding in r, xnorm, a as before.  The computed gap also
 * holds eps (and rounding below it): eps(xi) <= E_b := 1e-12 (1 + 2|a|xi^2
 * + xi + softplus(xi)) at xi_hi, each term increasing in xi and together
 * above |c0| + |a|xi^2 + xi/2.  Finally Phi is a difference of terms of size
 * up to g rho'^2/2 and l(xi_hi + rho'), so 1e-12 (1 + g rho'^2/2 + xi_hi +
 * rho') absorbs the rounding of its evaluation:
 *   gap_upper_box = Phi(rho') + 2 E_b + 1e-12 (1 + g rho'^2/2 + xi_hi + rho').
 * Buckets are narrow in xi (4 per doubling, see flymc/buckets.c), so
 * g(xi_lo) ~ g(xi_hi) and the bound is close to the exact sup.  The chain
 * takes the smaller of gap_upper and gap_upper_box.
 *
 * Full-data sum (fly_model_full).  sum_i log sigma(s_i) and its gradient
 * sum_i sigma(-s_i) t_i x_i: s from one dgemv, log sigma(s) and sigma(-s)
 * from one exp and one log1p a row (fly_vlogsig_dsig), one dgemv back;
 * no bound coefficients.
 *
 * Costs: eval/grad/xi_at/full one dgemv over the block (n D) plus O(n);
 * neg_hess and moments_add one dsyrk (n D^2); bound_sum O(D^2).  Nothing
 * allocates; work_len(m, n) = n D + 4n + D^2 doubles.
 */
#include "model.h"

#include <cblas.h>
#include <math.h>

#include "util/vmath.h"

#define XI_MAX  1e15    /* larger (or non-finite) xi is clamped */
#define EPS_REL 1e-12   /* eps relative to the magnitude of the terms */
#define KAPPA   1e-3    /* slack in the thinning bound, see above */

static size_t n_params(const fly_model *m) { return m->D; }
static size_t n_xi(const fly_model *m) { (void)m; return 1; }

static size_t work_len(const fly_model *m, size_t n)
{
  return n * m->D + 4 * n + m->D * m->D;
}

static double softplus(double x)
{
  return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double sig(double s)               /* sigma(s) */
{
  if( s >= 0 ) return 1.0 / (1.0 + exp(-s));
  double e = exp(s);
  return e / (1.0 + e);
}

static double xi_of(float x)
{
  double v = fabs((double)x);
  return v < XI_MAX ? v : XI_MAX;         /* NaN lands here too */
}

/* a(xi), c(xi) (eps included) and eps, given em = expm1(-xi) and
 * lp = log1p(1 + em) = log1p(exp(-xi)):
 *   tanh(xi/2) = (1 - e^-xi) / (1 + e^-xi) = -em / (2 + em),
 *   softplus(xi) = xi + lp.
 * 1 + em rounds e^-xi to an absolute 2^-53, which moves lp by at most that
 * (lp' <= 1/2): nothing next to c's terms of size 1 + xi.  em and lp come
 * from the vector functions of util/vmath.h for one row (jj) and for a block
 * (coef) alike, so a row's coefficients are the same bits either way, and
 * the moment tables (built with coef) agree with every row's log B. */
static void jj_finish(double xi, double em, double lp, double *a, double *c,
                      double *eps)
{
  double A = xi < 1e-4 ? -(1.0 - xi * xi / 12.0) / 8.0
                       : em / (2.0 + em) / (4.0 * xi);
  double axx = A * xi * xi;
  double c0 = -axx + 0.5 * xi - (xi + lp);
  double e = EPS_REL * (1.0 + fabs(c0) + fabs(axx) + 0.5 * xi);
  *a = A;
  *c = c0 - e;
  if( eps ) *eps = e;
}

/* em = expm1(-xi), lp = log1p(exp(-xi)) for k values of xi (in place). */
static void jj_parts(double *x_em, double *lp, size_t k)
{
  for( size_t j = 0; j < k; j++ ) x_em[j] = -x_em[j];
  fly_vexpm1(x_em, x_em, k);
  for( size_t j = 0; j < k; j++ ) lp[j] = 1.0 + x_em[j];
  fly_vlog1p(lp, lp, k);
}

/* a(xi), c(xi) (eps included) and eps for one stored xi. */
static void jj(float xf, double *a, double *c, double *eps)
{
  double xi = xi_of(xf), em = xi, lp;
  jj_parts(&em, &lp, 1);
  jj_finish(xi, em, lp, a, c, eps);
}

static double tsign(const double *X, size_t ldx, size_t tcol, size_t i)
{
  return X[i * ldx + tcol] > 0.5 ? 1.0 : -1.0;
}

/* out[i] = th'x_i for the n rows (row by row up to FLY_ROWWISE). */
static void lin(const fly_model *m, const double *th, const double *X,
                size_t ldx, size_t n, double *out)
{
  if( m->D == 0 ){
    for( size_t i = 0; i < n; i++ ) out[i] = 0;
    return;
  }
  if( n <= FLY_ROWWISE ){
    for( size_t i = 0; i < n; i++ )
      out[i] = cblas_ddot((int)m->D, X + i * ldx, 1, th, 1);
    return;
  }
  cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)m->D, 1.0, X,
              (int)ldx, th, 1, 0.0, out, 1);
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
  if( y == 0.0 || y == 1.0 ) return FLY_OK;
  return fly_fail(err, FLY_RANGE, "row %lld: target %g is not 0 or 1",
                  (long long)row + 1, y);
}

/* Bound coefficients: (a, c, xi) of each row (see jj; xi for scan_upper). */
#define NC 3
static size_t n_coef(const fly_model *m) { (void)m; return NC; }

#define JJ_CHUNK 64     /* rows of coefficients per pair of vector calls */

static void coef(const fly_model *m, const double *X, size_t ldx,
                 const float *xi, size_t n, double *cf)
{
  (void)m;
  (void)X;
  (void)ldx;
  double x[JJ_CHUNK], em[JJ_CHUNK], lp[JJ_CHUNK];
  for( size_t o = 0; o < n; o += JJ_CHUNK ){
    size_t k = n - o < JJ_CHUNK ? n - o : JJ_CHUNK;
    for( size_t j = 0; j < k; j++ ) em[j] = x[j] = xi_of(xi[o + j]);
    jj_parts(em, lp, k);
    for( size_t j = 0; j < k; j++ ){
      double *r = cf + NC * (o + j);
      jj_finish(x[j], em[j], lp[j], &r[0], &r[1], NULL);
      r[2] = x[j];
    }
  }
}

/* The bright-row evaluation of eval_coef and eval_sd: s_i = t_i th'x_i
 * into s, log sigma(s_i) into logL (with ds, sigma(-s_i) into ds from the
 * same exp: fly_vlogsig_dsig, whose log sigma has fly_vlogsig's bits),
 * and log B_i from the coefficients. */
static void eval_s(const fly_model *m, const double *th, const double *X, size_t ldx,
                   const double *cf, size_t n, double *logL, double *logB, double *s,
                   double *ds)
{
  if( n == 0 ) return;
  lin(m, th, X, ldx, n, s);
  for( size_t i = 0; i < n; i++ ) s[i] *= tsign(X, ldx, m->tcol, i);
  if( ds ) fly_vlogsig_dsig(s, logL, ds, n);
  else fly_vlogsig(s, logL, n);
  if( logB )
    for( size_t i = 0; i < n; i++ )
      logB[i] = cf[NC * i] * s[i] * s[i] + 0.5 * s[i] + cf[NC * i + 1];
}

static void eval_coef(const fly_model *m, const double *th, const double *X,
                      size_t ldx, const double *cf, size_t n, double *logL,
                      double *logB, double *work)
{
  eval_s(m, th, X, ldx, cf, n, logL, logB, work, NULL);
}

/* eval_coef, with sd = (s_i, sigma(-s_i)) for grad_sd. */
static void eval_sd(const fly_model *m, const double *th, const double *X, size_t ldx,
                    const double *cf, size_t n, double *logL, double *logB, double *sd,
                    double *work)
{
  (void)work;
  eval_s(m, th, X, ldx, cf, n, logL, logB, sd, sd + n);
}

/* The gradient of grad_coef and grad_sd from s_i = t_i th'x_i (and
 * sigma(-s_i) in ds, or NULL to take it here): the rows' weights into k
 * (which may be s itself), then one product with the rows. */
static void grad_s(const fly_model *m, const double *X, size_t ldx, const double *cf,
                   size_t n, const double *wL, const double *wB, const double *s,
                   const double *ds, double *k, double *g)
{
  for( size_t i = 0; i < n; i++ ){
    double si = s[i], w = 0;
    if( wL ) w += wL[i] * (ds ? ds[i] : sig(-si));    /* d log sigma(s)/ds */
    if( wB && wB[i] != 0 )
      w += wB[i] * (2.0 * cf[NC * i] * si + 0.5);     /* d log B/ds */
    k[i] = w * tsign(X, ldx, m->tcol, i);             /* ds/dth = t x */
  }
  cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)m->D, 1.0, X, (int)ldx,
              k, 1, 1.0, g, 1);
}

/* grad_coef from eval_sd's s and sigma(-s). */
static void grad_sd(const fly_model *m, const double *X, size_t ldx, const double *cf,
                    size_t n, const double *wL, const double *wB, const double *sd,
                    double *g, double *work)
{
  if( n == 0 || m->D == 0 ) return;
  grad_s(m, X, ldx, cf, n, wL, wB, sd, sd + n, work, g);
}

/* Screen of a gibbs scan (model.h: scan_upper).  log sigma(s) - s/2 =
 * -l(s), l(s) = log(2 cosh(s/2)) even and convex with l'(xi) =
 * tanh(xi/2)/2 = 2|a| xi, and c = |a| xi^2 - l(xi) - eps (jj), so the
 * tangent l(s) >= l(xi) + 2|a| xi (|s| - xi) gives
 *   gap(s) = |a| s^2 - c - l(s) <= |a| (|s| - xi)^2 + eps,
 * and p = 1 - exp(-gap) <= gap.
 * s is not computed exactly here: s_f = th_f'x_f in single precision,
 * with th_f and x_f th and x rounded to f32 (u = 2^-24 relative each) and
 * a sum of D products rounded within gamma_D = D u / (1 - D u) of
 * sum |th_f,j x_f,j| in any order (Higham, Accuracy and Stability of
 * Numerical Algorithms, section 3.1), so |s_f - th'x| <= (2u + u^2 +
 * gamma_D (1 + u)^2) sum |th_j x_j|; the s eval computes in double is
 * within gamma'_D (u' = 2^-53) of th'x.  sum |th_j x_j| <= ||th|| ||x||
 * (Cauchy-Schwarz; xnorm is rounded up), so with
 * C = 1.01 (2u + gamma_D + gamma'_D), delta = C ||th|| ||x|| bounds
 * |s_f - s|, plus 1e-40 D (1 + ||th|| + ||x||) for values that underflow
 * f32 (each off by at most 2^-150 absolute).  Then
 * ||s| - xi| <= ||s_f| - xi| + delta and |s| <= |s_f| + delta.
 * What eval_coef computes differs from the exact gap by rounding: a few
 * ulps of a and c, of log sigma (of size |s| + 1), of the sum's terms
 * (|a| s^2, |s|/2, |c|), and a few ulps of p relative.  The slack below is
 * 1e-9 relative and 1e-11 of those magnitudes plus xi (eps itself is
 * 1e-12 of them): 10^4 times any rounding.  An overflow to inf in f32 or a
 * NaN anywhere gives ub = inf or NaN, which the scan evaluates. */
static void scan_upper(const fly_model *m, const double *th, const float *Xf,
                       size_t ldx, const float *xnorm, const double *cf,
                       size_t n, double *ub, double *work)
{
  size_t D = m->D;
  if( n == 0 ) return;
  float *thf = (float *)(void *)work, *sf = thf + D;
  double tn = 0;
  for( size_t j = 0; j < D; j++ ){
    thf[j] = (float)th[j];
    tn += th[j] * th[j];
  }
  tn = sqrt(tn) * (1.0 + 1e-12);
  if( D == 0 )
    for( size_t i = 0; i < n; i++ ) sf[i] = 0;
  else
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)D, 1.0f, Xf, (int)ldx,
                thf, 1, 0.0f, sf, 1);
  const double u = 0x1p-24, u2 = 0x1p-53, Dd = (double)D;
  const double C = 1.01 * (2 * u + Dd * u / (1 - Dd * u) + Dd * u2 / (1 - Dd * u2));
  for( size_t i = 0; i < n; i++ ){
    const double *r = cf + NC * i;
    double xn = (double)xnorm[i], as = fabs((double)sf[i]);
    double del = C * tn * xn + 1e-40 * Dd * (1.0 + tn + xn);
    double a = -r[0], d = fabs(as - r[2]) + del, sm = as + del;
    ub[i] = (1.0 + 1e-9) * (a * d * d)
          + 1e-11 * (1.0 + r[2] + fabs(r[1]) + a * sm * sm + sm);
  }
}

static void grad_coef(const fly_model *m, const double *th, const double *X,
                      size_t ldx, const double *cf, size_t n, const double *wL,
                      const double *wB, double *g, double *work)
{
  if( n == 0 || m->D == 0 ) return;
  lin(m, th, X, ldx, n, work);
  for( size_t i = 0; i < n; i++ ) work[i] *= tsign(X, ldx, m->tcol, i);
  grad_s(m, X, ldx, cf, n, wL, wB, work, NULL, work, g);
}

static double full_logp_grad(const fly_model *m, const double *th,
                             const double *X, size_t ldx, size_t n, double *g,
                             double *work)
{
  size_t D = m->D;
  double *s = work, *ls = work + n, *ds = work + 2 * n;
  if( n == 0 ) return 0;
  if( D == 0 )
    for( size_t i = 0; i < n; i++ ) s[i] = 0;
  else
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)D, 1.0, X, (int)ldx,
                th, 1, 0.0, s, 1);
  for( size_t i = 0; i < n; i++ ) s[i] *= tsign(X, ldx, m->tcol, i);
  if( !g || D == 0 ){
    fly_vlogsig(s, ls, n);
    return fly_vsum(ls, n);
  }
  fly_vlogsig_dsig(s, ls, ds, n);
  for( size_t i = 0; i < n; i++ ) ds[i] *= tsign(X, ldx, m->tcol, i);
  cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)D, 1.0, X, (int)ldx,
              ds, 1, 1.0, g, 1);
  return fly_vsum(ls, n);
}

static void neg_hess(const fly_model *m, const double *th, const double *X,
                     size_t ldx, size_t n, double *H, double *work)
{
  size_t D = m->D;
  if( n == 0 || D == 0 ) return;
  double *eta = work, *R = work + n, *W = work + n + n * D;
  lin(m, th, X, ldx, n, eta);
  for( size_t i = 0; i < n; i++ ){
    double e = exp(-fabs(eta[i]));
    double r = sqrt(e) / (1.0 + e);             /* sqrt(sigma (1-sigma)) */
    for( size_t j = 0; j < D; j++ ) R[i * D + j] = r * X[i * ldx + j];
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
  lin(m, th, X, ldx, n, xi_out);
  for( size_t i = 0; i < n; i++ ) xi_out[i] = fabs(xi_out[i]);
}

static size_t n_moments(const fly_model *m)
{
  return m->D * m->D + m->D + 1;
}

static size_t moment_layout(const fly_model *m, fly_moment_section *sec)
{
  sec[0] = (fly_moment_section){ "S", m->D, m->D };
  sec[1] = (fly_moment_section){ "mu", m->D, 1 };
  sec[2] = (fly_moment_section){ "c", 1, 1 };
  return 3;
}

static void moments_add(const fly_model *m, const double *X, size_t ldx,
                        const float *xi, size_t n, double *mom, double *work)
{
  size_t D = m->D;
  if( n == 0 ) return;
  double *S = mom, *mu = mom + D * D, *C = mom + D * D + D;
  double *v = work, *R = work + n, *W = work + n + n * D, *cf = W + D * D;
  double csum = 0;
  coef(m, X, ldx, xi, n, cf);
  for( size_t i = 0; i < n; i++ ){
    double a = cf[NC * i], c = cf[NC * i + 1];
    csum += c;
    v[i] = 0.5 * tsign(X, ldx, m->tcol, i);
    double r = sqrt(-a);                        /* a < 0 always */
    for( size_t j = 0; j < D; j++ ) R[i * D + j] = r * X[i * ldx + j];
  }
  *C += csum;
  if( D == 0 ) return;
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)D, (int)n, -1.0, R,
              (int)D, 0.0, W, (int)D);
  add_sym(D, W, S);
  cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)D, 1.0, X, (int)ldx, v,
              1, 1.0, mu, 1);
}

static double bound_sum(const fly_model *m, const double *mom,
                        const double *th, double *g, double *work)
{
  size_t D = m->D;
  const double *S = mom, *mu = mom + D * D;
  if( D == 0 ) return mom[0];
  double *Sth = work;                           /* S th: one dgemv */
  cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)D, (int)D, 1.0, S, (int)D, th,
              1, 0.0, Sth, 1);
  double q = cblas_ddot((int)D, th, 1, Sth, 1), l = cblas_ddot((int)D, th, 1, mu, 1);
  if( g )
    for( size_t j = 0; j < D; j++ ) g[j] += 2.0 * Sth[j] + mu[j];
  return q + l + mom[D * D + D];
}

/* The key from a row's a(xi) and eps (gap_key, gap_key_n). */
static double key_of(float xf, double a, double eps, double xnorm)
{
  double df = 0x1.0p-23 * xi_of(xf) + 0x1.0p-149;
  return (1.0 + KAPPA) * fabs(a) * xnorm * xnorm
       + 2.0 * eps + (1.0 + 1.0 / KAPPA) * fabs(a) * df * df;
}

static double gap_key(const fly_model *m, const float *xi_row, double xnorm)
{
  (void)m;
  double a, c, eps;
  jj(xi_row[0], &a, &c, &eps);
  return key_of(xi_row[0], a, eps, xnorm);
}

/* gap_key of n rows, the transcendentals in one vectorised pass (jj_parts
 * gives a row the same bits alone or in a block) */
static void gap_key_n(const fly_model *m, const float *xi, const double *xnorm, size_t n,
                      double *out, double *work)
{
  (void)m;
  double *em = work, *lp = work + n;
  for( size_t i = 0; i < n; i++ ) em[i] = xi_of(xi[i]);
  jj_parts(em, lp, n);
  for( size_t i = 0; i < n; i++ ){
    double a, c, eps;
    jj_finish(xi_of(xi[i]), em[i], lp[i], &a, &c, &eps);
    out[i] = key_of(xi[i], a, eps, xnorm[i]);
  }
}

static double gap_upper(const fly_model *m, double key, double r)
{
  (void)m;
  double r2 = r * r;
  return key * (r2 > 1.0 ? r2 : 1.0);
}

/* l(v) = log(2 cosh(v/2)) for v >= 0 */
static double lcosh(double v) { return 0.5 * v + log1p(exp(-v)); }

/* The box bound's bucket constants (see gap_upper_box):
 * [0] (1+k) sqrt(key/|a(xi_hi)|), or +inf when the box says nothing,
 * [1] df(xi_hi), [2] g = 2|a(xi_lo)|, [3] xi_hi, [4] l(xi_hi),
 * [5] tanh(xi_hi/2)/2, [6] E_b. */
enum { BOX_SK, BOX_DF, BOX_G, BOX_XI, BOX_L, BOX_TH, BOX_EB, BOX_N };

static size_t n_box(const fly_model *m) { (void)m; return BOX_N; }

static void box_prep(const fly_model *m, double xi_lo, double xi_hi,
                     double key, double *c)
{
  (void)m;
  for( size_t k = 0; k < BOX_N; k++ ) c[k] = 0;
  c[BOX_SK] = INFINITY;
  if( !(xi_lo >= 0) || !(xi_hi >= xi_lo) || !(xi_hi <= XI_MAX) ||
      !(key >= 0) || !isfinite(key) )
    return;
  double alo, ahi, cc;
  jj((float)xi_lo, &alo, &cc, NULL);
  jj((float)xi_hi, &ahi, &cc, NULL);
  c[BOX_SK] = (1.0 + KAPPA) * sqrt(key / fabs(ahi));
  c[BOX_DF] = 0x1.0p-23 * xi_hi + 0x1.0p-149;
  c[BOX_G] = 2.0 * fabs(alo);
  c[BOX_XI] = xi_hi;
  c[BOX_L] = lcosh(xi_hi);
  c[BOX_TH] = 0.5 * tanh(0.5 * xi_hi);
  c[BOX_EB] = EPS_REL * (1.0 + 2.0 * fabs(ahi) * xi_hi * xi_hi + xi_hi + softplus(xi_hi));
}

/* Phi(rho') + slack of the box with constants c at rho' >= |Delta|. */
/* box_phi with lcosh(xi_hi + rho) = (xi_hi + rho)/2 + l, l = log1p(exp(-(xi_hi
 * + rho))) computed by the caller (one box, or many at once). */
static double box_phi_l(const double *c, double rho, double l)
{
  double g = c[BOX_G], xi_hi = c[BOX_XI];
  double phi = 0.5 * g * rho * rho
             - (0.5 * (xi_hi + rho) + l - c[BOX_L] - rho * c[BOX_TH]);
  double u = phi + 2.0 * c[BOX_EB] + EPS_REL * (1.0 + 0.5 * g * rho * rho + xi_hi + rho);
  return u > 0 ? u : 0.0;
}

static double box_phi(const double *c, double rho)
{
  if( !isfinite(rho) ) return INFINITY;
  return box_phi_l(c, rho, log1p(exp(-(c[BOX_XI] + rho))));
}

static double gap_upper_boxc(const fly_model *m, const double *c, double r)
{
  (void)m;
  if( !(r >= 0) || !isfinite(r) || !isfinite(c[BOX_SK]) ) return INFINITY;
  return box_phi(c, c[BOX_SK] * r + c[BOX_DF]);
}

/* gap_upper_boxc of n boxes: box_phi_l with the log1p(exp(-v)) of every
 * box from vmath's exp and log1p at once.  A box that says nothing (r or
 * its scale not finite) gets +inf.  rho' goes through out. */
static void gap_upper_boxc_n(const fly_model *m, const double *c0, size_t n, double r,
                             double *out, double *work)
{
  (void)m;
  double *l = work;
  for(size_t i = 0; i < n; i++){
    const double *c = c0 + i * BOX_N;
    out[i] = c[BOX_SK] * r + c[BOX_DF];
    l[i] = isfinite(out[i]) ? -(c[BOX_XI] + out[i]) : 0.0;
  }
  fly_vexp(l, l, n);
  fly_vlog1p(l, l, n);
  for(size_t i = 0; i < n; i++){
    const double *c = c0 + i * BOX_N;
    double rho = out[i];
    out[i] = !(r >= 0) || !isfinite(r) || !isfinite(c[BOX_SK]) || !isfinite(rho)
           ? INFINITY : box_phi_l(c, rho, l[i]);
  }
}

/* A row of the bucket with |s - s_map| <= rho: rho' = (1+k) rho + df(xi_hi)
 * in place of (1+k) xnorm r + df (the (1+k) absorbing rounding in rho as in
 * r and xnorm); the rest of the box argument is unchanged. */
static double gap_upper_rhoc(const fly_model *m, const double *c, double rho)
{
  (void)m;
  if( !(rho >= 0) || !isfinite(c[BOX_SK]) ) return INFINITY;
  return box_phi(c, (1.0 + KAPPA) * rho + c[BOX_DF]);
}

static double gap_upper_box(const fly_model *m, double xi_lo, double xi_hi,
                            double key, double r)
{
  double c[BOX_N];
  box_prep(m, xi_lo, xi_hi, key, c);
  return gap_upper_boxc(m, c, r);
}

static const fly_model_coef coef_table = {
  .n    = n_coef,
  .make = coef,
  .eval = eval_coef,
  .grad = grad_coef,
  .eval_sd = eval_sd,
  .grad_sd = grad_sd,
  .scan = scan_upper,
};

static const fly_model_box box_table = {
  .n         = n_box,
  .upper     = gap_upper_box,
  .prep      = box_prep,
  .upper_c   = gap_upper_boxc,
  .upper_rho = gap_upper_rhoc,
  .upper_c_n = gap_upper_boxc_n,
};

static const fly_model_thin thin_table = {
  .key    = gap_key,
  .key_n  = gap_key_n,
  .upper  = gap_upper,
  .radius = fly_model_radius,
  .box    = &box_table,
};

static const fly_model_full full_table = { .logp_grad = full_logp_grad };

const fly_model_type fly_model_logistic = {
  .name          = "logistic",
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
