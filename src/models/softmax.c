/*
 * softmax.c -- Bayesian multinomial (softmax) regression with Boehning's
 * bound.
 *
 * Row i has D features x_i and a class y_i in {0..K-1} (stored as an
 * integer-valued double).  Parameters th are K x D, row-major: class row
 * th_k, linear predictors s_k = th_k'x, and
 *
 *   log L_i = f(s) = s_y - logsumexp(s).
 *
 * Identifiability.  f(s + t 1) = f(s): adding one vector to every class row
 * leaves every likelihood unchanged, so the likelihood alone has a flat
 * direction.  With the proper N(0, s^2 I) prior on all K D parameters the
 * posterior is proper (the prior controls the shift, the data the rest), so
 * all K rows are kept: no reference class, the prior stays symmetric in the
 * classes.  (A Laplace prior has no curvature at the MAP along the shift, so
 * its Laplace matrix is singular and tuning reports it.)
 *
 * The bound.  The Hessian of logsumexp, diag(p) - pp', is dominated by
 * A = (I - 11'/K)/2 (Boehning 1992), so f - (tangent plane at psi) + the
 * quadratic with curvature A is convex with zero value and slope at psi:
 *
 *   log B_i(s) = f(psi) + g'(s - psi) - (s - psi)'A(s - psi)/2 - eps,
 *   g = grad f(psi) = e_y - p(psi),  p = softmax,
 *
 * tight (value and gradient) at s = psi + t 1 for every t.  The per-row
 * bound parameters xi are psi in R^K (n_xi = K): MAP tuning stores
 * psi_i = th_map x_i; fixed tuning stores the same number in every slot,
 * which is psi = 0 up to the shift (the bound of the uniform class
 * distribution).
 *
 * eval computes everything from differences, which are invariant to the
 * shift: u_k = s_k - s_y, v_k = psi_k - psi_y, w = u - v (w_y = 0), and
 *   log L = -lse(u),
 *   log B = -lse(v) - sum_k p_k(psi) w_k - sum_k (w_k - wbar)^2 / 4 - eps
 * (g'w = -p'w because w_y = 0; w'Aw/2 = sum (w_k - wbar)^2 / 4).  At s = psi
 * both lse are the same computation, so the computed gap is exactly eps.
 *
 * Collapsed product.  Expanding the quadratic with s = Th x:
 *   log B_i = -x'Th'A Th x/2 + (e_y + b)'Th x + c,
 *   b = A psi - p(psi) = (psi - psibar)/2 - p,
 *   c = f(psi) - g'psi - psi'A psi/2 - eps,
 * computed with the centred psi (b and c are shift invariant), so
 *   sum_i log B_i = -tr(A Th S Th')/2 + <Th, Y + Bx> + C
 *                 = -sum_k c_k'S c_k / 4 + <Th, Y + Bx> + C,
 * with c_k = th_k - (1/K) sum_j th_j the centred class rows (A Th = C Th/2,
 * C the centring projection) and the moment tables, laid out
 *   S  (D x D) = sum_i x_i x_i',
 *   Y  (K x D) = sum_i e_{y_i} x_i'   (row k: the sum of x over class k),
 *   Bx (K x D) = sum_i b_i x_i',
 *   c  (1 x 1) = sum_i c_i.
 * The gradient with respect to th_k is -S c_k/2 + Y_k + Bx_k.
 *
 * eps.  Mathematically log B <= log L; rounding could invert that by a few
 * ulps of the terms where the gap is tiny, i.e. near the tight point, where
 * w ~ 0 and the terms are lse(u) ~ lse(v) = |f(psi)|, computed with error
 * about (K + 2) ulps of 1 + |f(psi)|.  |f(psi)| <= (max psi - min psi) +
 * log K, a bound that does not need y (gap_key has no y), so
 *   eps = 1e-12 (1 + log K + max psi - min psi),
 * far above rounding (for K up to thousands), far below anything a chain
 * can see.  Where the true gap is larger than rounding, rounding cannot flip
 * its sign; tests check B <= L for |s| up to 1e3.  psi beyond +-1e15 (or
 * NaN, read as 0) is clamped.
 *
 * Thinning bound.  f is concave, so f(s) <= f(psi) + g'(s - psi) and
 *   gap(s) <= eps + (s - psi)'A(s - psi)/2 = eps + |C(s - psi)|^2/4.
 * With s - psi = D_th x + e, D_th = th - th_map, e = th_map x - psi the f32
 * rounding of the stored psi (|e_k| <= df_k := 2^-23 |psi_k| + 2^-149, 2x
 * margin and the subnormal floor), and the centred rows
 * d_k = (C D_th)_k = D_th_k - mean_j D_th_j:
 *   |C(s - psi)| <= |(d_k'x)_k| + |e|,
 *   |d_k'x| <= ||d_k||_H ||x||_P  (Cauchy-Schwarz, H = P^-1 any D x D SPD),
 * so with r^2 = sum_k d_k'H d_k and xnorm = ||x||_P,
 *   sum_k (d_k'x)^2 <= r^2 xnorm^2
 * and, as in logistic.c ((a + b)^2 <= (1+k) a^2 + (1+1/k) b^2, k = 1e-3
 * also absorbing relative errors up to 1e-3 in r and xnorm; the computed
 * gap holds eps and rounding below eps),
 *   gap <= (1+k)/4 xnorm^2 r^2 + 2 eps + (1+1/k)/4 sum_k df_k^2,
 *   key = (1+k)/4 xnorm^2 + 2 eps + (1+1/k)/4 sum_k df_k^2,
 *   gap_upper(key, r) = key max(1, r^2).
 * The steps use xnorm r only as a bound on sqrt(sum_k (d_k'x)^2), so a row
 * sketch's rho >= that norm (flymc/sketch.h, one rho per d_k from dirs())
 * gives gap <= gap_upper(key(xi, rho), 1) = key(xi, rho) just the same.
 * Centring the radius matters: the shift direction is held only by the
 * prior, so uncentred rows would give r ~ prior scale * sqrt(data
 * precision).  H is the D x D metric of the bound set (fly_bounds.key_prec,
 * see tune.c), radius() needs K D doubles of work.
 *
 * Full-data sum (fly_model_full).  With m_i = max_k s_ik and
 * e_ik = exp(s_ik - m_i), log L_i = (s_iy - m_i) - log sum_k e_ik and
 * d log L_i/ds_ik = [k = y] - p_ik, p_ik = e_ik / sum_k e_ik: one dgemm,
 * n K vectorised exps and n logs, one dgemm back; no bound coefficients.
 *
 * Costs: eval/grad/xi_at/full one dgemm over the block (n K D) plus O(n K);
 * neg_hess K dsyrk + K(K-1)/2 dgemm (n K^2 D^2 / 2) plus O(n K^2);
 * moments_add one dsyrk and one dgemm (n D^2 + n K D); bound_sum
 * O(K D^2); radius O(K D^2).  Nothing allocates; work_len(m, n) =
 * n K + n K D + (K D)^2 + D + n (2K + 2) doubles.
 */
#include "model.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "util/vmath.h"

#define PSI_MAX 1e15    /* larger |psi| is clamped, NaN read as 0 */
#define EPS_REL 1e-12   /* eps relative to the magnitude of the terms */
#define KAPPA   1e-3    /* slack in the thinning bound, see above */

static size_t n_params(const fly_model *m) { return m->K * m->D; }
static size_t n_xi(const fly_model *m) { return m->K; }

static size_t work_len(const fly_model *m, size_t n)
{
  size_t KD = m->K * m->D;
  return n * m->K + n * KD + KD * KD + m->D + n * (2 * m->K + 2);
}

static double psi_of(float x)
{
  double v = (double)x;
  if( v != v ) return 0.0;
  return v > PSI_MAX ? PSI_MAX : v < -PSI_MAX ? -PSI_MAX : v;
}

/* The class of a row: the target rounded and clamped to 0..K-1 (targets
 * are validated by check_target before any of this runs). */
static size_t cls(const fly_model *m, const double *X, size_t ldx, size_t i)
{
  double y = X[i * ldx + m->tcol];
  if( !(y >= 0.5) ) return 0;
  if( y >= (double)m->K - 0.5 ) return m->K - 1;
  return (size_t)(y + 0.5);
}

/* logsumexp_k (a_k - a0) for the K values a. */
static double lse_rel(const double *a, size_t K, double a0)
{
  double mx = -INFINITY, t = 0;
  for( size_t k = 0; k < K; k++ ) if( a[k] - a0 > mx ) mx = a[k] - a0;
  for( size_t k = 0; k < K; k++ ) t += exp((a[k] - a0) - mx);
  return mx + log(t);
}

/* Per-row constants of the bound at the stored psi (K floats) for class y:
 * v_k = psi_k - psi_y is psi_of(xi[k]) - psi_of(xi[y]); lv = lse(v). */
typedef struct brow {
  const float *xi;
  size_t K, y;
  double psy;   /* psi_y */
  double lv;    /* lse(v) = -f(psi) */
  double eps;
} brow;

static double row_eps(const float *xi, size_t K)
{
  double lo = INFINITY, hi = -INFINITY;
  for( size_t k = 0; k < K; k++ ){
    double v = psi_of(xi[k]);
    if( v < lo ) lo = v;
    if( v > hi ) hi = v;
  }
  return EPS_REL * (1.0 + log((double)K) + (hi - lo));
}

static void brow_init(brow *b, const float *xi, size_t K, size_t y)
{
  double mx = -INFINITY, t = 0;
  b->xi = xi;
  b->K = K;
  b->y = y;
  b->psy = psi_of(xi[y]);
  for( size_t k = 0; k < K; k++ ){
    double v = psi_of(xi[k]) - b->psy;
    if( v > mx ) mx = v;
  }
  for( size_t k = 0; k < K; k++ ) t += exp((psi_of(xi[k]) - b->psy) - mx);
  b->lv = mx + log(t);
  b->eps = row_eps(xi, K);
}

static double v_of(const brow *b, size_t k)
{
  return psi_of(b->xi[k]) - b->psy;
}

static double p_of(const brow *b, size_t k)
{
  return exp(v_of(b, k) - b->lv);
}

/* S = X_D th' (n x K): s_ik = th_k'x_i (row by row up to FLY_ROWWISE). */
static void lin(const fly_model *m, const double *th, const double *X,
                size_t ldx, size_t n, double *S)
{
  if( m->D == 0 ){
    memset(S, 0, n * m->K * sizeof *S);
    return;
  }
  if( n <= FLY_ROWWISE ){
    for( size_t i = 0; i < n; i++ )
      cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)m->K, (int)m->D, 1.0, th,
                  (int)m->D, X + i * ldx, 1, 0.0, S + i * m->K, 1);
    return;
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)m->K,
              (int)m->D, 1.0, X, (int)ldx, th, (int)m->D, 0.0, S, (int)m->K);
}

/* M += W + W' - diag(W) from the upper triangle of the n x n matrix W. */
static void add_sym(size_t n, const double *W, double *M)
{
  for( size_t j = 0; j < n; j++ ){
    M[j * n + j] += W[j * n + j];
    for( size_t k = j + 1; k < n; k++ ){
      M[j * n + k] += W[j * n + k];
      M[k * n + j] += W[j * n + k];
    }
  }
}

static fly_rc check_target(const fly_model *m, double y, int64_t row,
                           fly_err *err)
{
  if( y >= 0 && y <= (double)m->K - 1 && y == floor(y) ) return FLY_OK;
  return fly_fail(err, FLY_RANGE, "row %lld: target %g is not a class "
                  "0..%zu", (long long)row + 1, y, m->K ? m->K - 1 : 0);
}

/* Bound coefficients of a row, n_coef = 2K + 2 doubles: v_k = psi_k - psi_y
 * (K), p_k = softmax(psi)_k (K), lv = lse(v), eps: the row's brow, spelled
 * out, so eval with xi (coef, then eval_coef) and eval_coef on kept
 * coefficients give the same bits, and a bright row costs no exp of its
 * own beyond log L's. */
static size_t n_coef(const fly_model *m) { return 2 * m->K + 2; }

static void coef(const fly_model *m, const double *X, size_t ldx,
                 const float *xi, size_t n, double *cf)
{
  const size_t K = m->K, nc = 2 * K + 2;
  for( size_t i = 0; i < n; i++ ){
    brow b;
    double *r = cf + i * nc;
    brow_init(&b, xi + i * K, K, cls(m, X, ldx, i));
    for( size_t k = 0; k < K; k++ ){
      r[k] = v_of(&b, k);
      r[K + k] = p_of(&b, k);
    }
    r[2 * K] = b.lv;
    r[2 * K + 1] = b.eps;
  }
}

/* wbar = mean_k w_k, w_k = (s_k - s_y) - v_k. */
static double w_mean(const double *v, size_t K, const double *s, double sy)
{
  double t = 0;
  for( size_t k = 0; k < K; k++ ) t += (s[k] - sy) - v[k];
  return t / (double)K;
}

static void eval_coef(const fly_model *m, const double *th, const double *X,
                      size_t ldx, const double *cf, size_t n, double *logL,
                      double *logB, double *work)
{
  const size_t K = m->K, nc = 2 * K + 2;
  if( n == 0 || K == 0 ) return;
  lin(m, th, X, ldx, n, work);
  for( size_t i = 0; i < n; i++ ){
    const double *s = work + i * K;
    size_t y = cls(m, X, ldx, i);
    double sy = s[y];
    logL[i] = -lse_rel(s, K, sy);
    if( logB ){
      const double *r = cf + i * nc;            /* v, p, lv, eps */
      double wbar = w_mean(r, K, s, sy), pw = 0, q = 0;
      for( size_t k = 0; k < K; k++ ){
        double w = (s[k] - sy) - r[k];
        pw += r[K + k] * w;
        q += (w - wbar) * (w - wbar);
      }
      logB[i] = -r[2 * K] - pw - 0.25 * q - r[2 * K + 1];
    }
  }
}

static void grad_coef(const fly_model *m, const double *th, const double *X,
                      size_t ldx, const double *cf, size_t n, const double *wL,
                      const double *wB, double *g, double *work)
{
  const size_t K = m->K, nc = 2 * K + 2;
  if( n == 0 || K == 0 || m->D == 0 ) return;
  lin(m, th, X, ldx, n, work);
  for( size_t i = 0; i < n; i++ ){
    double *s = work + i * K;                   /* becomes the coefficients */
    size_t y = cls(m, X, ldx, i);
    double sy = s[y], lu = lse_rel(s, K, sy), wbar = 0;
    double aL = wL ? wL[i] : 0, aB = wB ? wB[i] : 0;
    const double *r = aB != 0 ? cf + i * nc : NULL;   /* v, p, lv, eps */
    if( r ) wbar = w_mean(r, K, s, sy);
    for( size_t k = 0; k < K; k++ ){
      double u = s[k] - sy, gk = 0, ey = k == y ? 1.0 : 0.0;
      if( aL != 0 ) gk += aL * (ey - exp(u - lu));          /* d log L/ds_k */
      if( r ){
        double w = u - r[k];
        gk += aB * (ey - r[K + k] - 0.5 * (w - wbar));       /* d log B/ds_k */
      }
      s[k] = gk;
    }
  }
  /* g (K x D) += Gamma' X_D: ds_k/dth_k = x */
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)m->D,
              (int)n, 1.0, work, (int)K, X, (int)ldx, 1.0, g, (int)m->D);
}

static double full_logp_grad(const fly_model *m, const double *th,
                             const double *X, size_t ldx, size_t n, double *g,
                             double *work)
{
  const size_t K = m->K, D = m->D;
  double *S = work, *a = work + n * K, *t = a + n;
  if( n == 0 || K == 0 ) return 0;
  if( D == 0 )
    memset(S, 0, n * K * sizeof *S);
  else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)K,
                (int)D, 1.0, X, (int)ldx, th, (int)D, 0.0, S, (int)K);
  for( size_t i = 0; i < n; i++ ){
    double *s = S + i * K, mx = -INFINITY;
    for( size_t k = 0; k < K; k++ ) if( s[k] > mx ) mx = s[k];
    for( size_t k = 0; k < K; k++ ) s[k] -= mx;
    a[i] = s[cls(m, X, ldx, i)];                /* s_y - m */
  }
  fly_vexp(S, S, n * K);
  for( size_t i = 0; i < n; i++ ){
    double *e = S + i * K, tot = 0;
    for( size_t k = 0; k < K; k++ ) tot += e[k];
    t[i] = tot;
  }
  if( g && D > 0 ){
    for( size_t i = 0; i < n; i++ ){           /* [k = y] - p_k */
      double *e = S + i * K;
      size_t y = cls(m, X, ldx, i);
      for( size_t k = 0; k < K; k++ ) e[k] = (k == y ? 1.0 : 0.0) - e[k] / t[i];
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)D,
                (int)n, 1.0, S, (int)K, X, (int)ldx, 1.0, g, (int)D);
  }
  fly_vlog(t, t, n);
  for( size_t i = 0; i < n; i++ ) a[i] -= t[i];
  return fly_vsum(a, n);
}

/* -hess log L_i = (diag(p) - pp') (x) x x'.  The diagonal blocks carry
 * p_k (1 - p_k) with 1 - p_k summed from the other classes (no cancellation
 * when a class saturates); the off-diagonal blocks -p_k p_l. */
static void neg_hess(const fly_model *m, const double *th, const double *X,
                     size_t ldx, size_t n, double *H, double *work)
{
  const size_t K = m->K, D = m->D, KD = K * D;
  if( n == 0 || D == 0 || K == 0 ) return;
  double *Pm = work, *R = work + n * K, *W = work + n * K + n * KD;
  lin(m, th, X, ldx, n, Pm);
  for( size_t i = 0; i < n; i++ ){
    double *e = Pm + i * K, mx = -INFINITY, tot = 0;
    for( size_t k = 0; k < K; k++ ) if( e[k] > mx ) mx = e[k];
    for( size_t k = 0; k < K; k++ ){ e[k] = exp(e[k] - mx); tot += e[k]; }
    for( size_t k = 0; k < K; k++ ){
      double oth = 0;
      for( size_t j = 0; j < K; j++ ) if( j != k ) oth += e[j];
      double r = sqrt(e[k] * oth) / tot;        /* sqrt(p_k (1 - p_k)) */
      for( size_t j = 0; j < D; j++ )
        R[i * KD + k * D + j] = r * X[i * ldx + j];
    }
    for( size_t k = 0; k < K; k++ ) e[k] /= tot;
  }
  for( size_t k = 0; k < K; k++ )
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)D, (int)n, 1.0,
                R + k * D, (int)KD, 0.0, W + k * D * KD + k * D, (int)KD);
  if( K > 1 ){
    for( size_t i = 0; i < n; i++ )
      for( size_t k = 0; k < K; k++ )
        for( size_t j = 0; j < D; j++ )
          R[i * KD + k * D + j] = Pm[i * K + k] * X[i * ldx + j];
    for( size_t k = 0; k < K; k++ )
      for( size_t l = k + 1; l < K; l++ )
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)D, (int)D,
                    (int)n, -1.0, R + k * D, (int)KD, R + l * D, (int)KD, 0.0,
                    W + k * D * KD + l * D, (int)KD);
  }
  add_sym(KD, W, H);
}

static void xi_at(const fly_model *m, const double *th, const double *X,
                  size_t ldx, size_t n, double *xi_out, double *work)
{
  (void)work;
  if( n == 0 || m->K == 0 ) return;
  lin(m, th, X, ldx, n, xi_out);                /* psi_i = th x_i */
}

static size_t n_moments(const fly_model *m)
{
  return m->D * m->D + 2 * m->K * m->D + 1;
}

static size_t moment_layout(const fly_model *m, fly_moment_section *sec)
{
  sec[0] = (fly_moment_section){ "S", m->D, m->D };
  sec[1] = (fly_moment_section){ "Y", m->K, m->D };
  sec[2] = (fly_moment_section){ "Bx", m->K, m->D };
  sec[3] = (fly_moment_section){ "c", 1, 1 };
  return 4;
}

static void moments_add(const fly_model *m, const double *X, size_t ldx,
                        const float *xi, size_t n, double *mom, double *work)
{
  const size_t K = m->K, D = m->D;
  if( n == 0 || K == 0 ) return;
  double *S = mom, *Y = mom + D * D, *Bx = Y + K * D, *C = Bx + K * D;
  double *Bm = work, *W = work + n * K;
  double csum = 0;
  for( size_t i = 0; i < n; i++ ){
    size_t y = cls(m, X, ldx, i);
    const float *ps = xi + i * K;
    brow b;
    brow_init(&b, ps, K, y);
    double pbar = 0, gp = 0, pp = 0;
    for( size_t k = 0; k < K; k++ ) pbar += psi_of(ps[k]);
    pbar /= (double)K;
    for( size_t k = 0; k < K; k++ ){
      double pc = psi_of(ps[k]) - pbar, p = p_of(&b, k);
      Bm[i * K + k] = 0.5 * pc - p;             /* b = A psi - p */
      gp += ((k == y ? 1.0 : 0.0) - p) * pc;    /* g'psi */
      pp += pc * pc;                            /* 2 psi'A psi */
    }
    csum += -b.lv - gp - 0.25 * pp - b.eps;
    for( size_t j = 0; j < D; j++ ) Y[y * D + j] += X[i * ldx + j];
  }
  *C += csum;
  if( D == 0 ) return;
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)D, (int)n, 1.0, X,
              (int)ldx, 0.0, W, (int)D);
  add_sym(D, W, S);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)D, (int)n,
              1.0, Bm, (int)K, X, (int)ldx, 1.0, Bx, (int)D);
}

/* mean_k th[k D + j] */
static double col_mean(const double *th, size_t K, size_t D, size_t j)
{
  double t = 0;
  for( size_t k = 0; k < K; k++ ) t += th[k * D + j];
  return t / (double)K;
}

static double bound_sum(const fly_model *m, const double *mom,
                        const double *th, double *g, double *work)
{
  (void)work;
  const size_t K = m->K, D = m->D;
  const double *S = mom, *Y = mom + D * D, *Bx = Y + K * D;
  double q = 0, l = 0;
  if( K == 0 ) return mom[D * D];
  for( size_t j = 0; j < D; j++ ){
    double ubj = col_mean(th, K, D, j), su = 0;
    for( size_t a = 0; a < D; a++ ) su += S[j * D + a] * col_mean(th, K, D, a);
    for( size_t k = 0; k < K; k++ ){
      const double *tk = th + k * D;
      double t = 0;
      for( size_t a = 0; a < D; a++ ) t += S[j * D + a] * tk[a];
      double Sc = t - su;                       /* (S c_k)_j */
      double lin_kj = Y[k * D + j] + Bx[k * D + j];
      q += (tk[j] - ubj) * Sc;
      l += tk[j] * lin_kj;
      if( g ) g[k * D + j] += -0.5 * Sc + lin_kj;
    }
  }
  return -0.25 * q + l + mom[D * D + 2 * K * D];
}

static double gap_key(const fly_model *m, const float *xi_row, double xnorm)
{
  const size_t K = m->K;
  double df2 = 0;
  for( size_t k = 0; k < K; k++ ){
    double df = 0x1.0p-23 * fabs(psi_of(xi_row[k])) + 0x1.0p-149;
    df2 += df * df;
  }
  return 0.25 * (1.0 + KAPPA) * xnorm * xnorm + 2.0 * row_eps(xi_row, K)
       + 0.25 * (1.0 + 1.0 / KAPPA) * df2;
}

static double gap_upper(const fly_model *m, double key, double r)
{
  (void)m;
  double r2 = r * r;
  return key * (r2 > 1.0 ? r2 : 1.0);
}

/* d_k = (th_k - th_map_k) - mean_j (th_j - th_map_j): the centred rows
 * the thinning bound sees (see the file comment); d is K x D. */
static void dirs(const fly_model *m, const double *th, const double *th_map,
                 double *d)
{
  const size_t K = m->K, D = m->D;
  for( size_t j = 0; j < D; j++ ){
    double t = 0;
    for( size_t k = 0; k < K; k++ ) t += th[k * D + j] - th_map[k * D + j];
    t /= (double)K;
    for( size_t k = 0; k < K; k++ )
      d[k * D + j] = (th[k * D + j] - th_map[k * D + j]) - t;
  }
}

/* r = sqrt(sum_k d_k'H d_k), d_k from dirs(); H is D x D; work holds the
 * K x D d_k. */
static double radius(const fly_model *m, const double *th,
                     const double *th_map, const double *H, double *work)
{
  const size_t K = m->K, D = m->D;
  double q = 0, *d = work;
  if( K == 0 ) return 0.0;
  dirs(m, th, th_map, d);
  for( size_t k = 0; k < K; k++ ){
    const double *dk = d + k * D;
    for( size_t j = 0; j < D; j++ ){
      double Hd = 0;
      for( size_t i = 0; i < D; i++ ) Hd += H[j * D + i] * dk[i];
      q += dk[j] * Hd;
    }
  }
  return q > 0 ? sqrt(q) : 0.0;
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
  .radius = radius,
  .dirs   = dirs,
};

static const fly_model_full full_table = { .logp_grad = full_logp_grad };

const fly_model_type fly_model_softmax = {
  .name          = "softmax",
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
