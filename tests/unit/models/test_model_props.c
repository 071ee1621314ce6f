/*
 * test_model_props.c -- the properties every model must have, checked for
 * every configuration of model_cases.h (logistic; softmax with K = 2, 3, 5;
 * robust over nu from 0.01 to 1e6 and several sigma; normal and Laplace
 * priors), then the few properties only one model has.
 *
 * Each check compares against something computed independently here:
 * long-double references of log L, log B and the tight parameters (the
 * families in model_cases.h), direct sums over rows, central finite
 * differences, per-row finite-difference Hessians.  Bound parameters come
 * from every regime the models distinguish (zero, subnormal, series
 * switches, large, huge, negative, the f32 maximum), theta from tight points
 * to |linear predictor| ~ 1e3, features from 1e-3 to 1e3.  Rows reach the
 * models as doubles whatever their page precision, so f32 enters where the
 * models see it: xi (always f32), keys rounded up to f32, xnorm as kept in
 * f32 (half the rows), the screen's f32 copy of the rows.
 *
 * Properties, for every case (Laplace rows: grad and prior only):
 *   bound      B <= L and finite on D = 1 probes (tight points, 1e-8
 *              perturbations, 0, +-1e-10, +-50, +-1e3, random) and on random
 *              rows; tight: the gap at the tight points within the family's
 *              eps scale (> 0 for softmax); log L, log B against the
 *              long-double reference; eval reads features, stride, target;
 *              eval with logB NULL leaves it, with xi NULL too
 *   grad       grad vs finite differences for wL = 1 / wB = 1 / random
 *              weights / the Ltilde weights (log Ltilde sum as the chain
 *              forms it); the MAP objective log prior + sum log L and the
 *              FlyMC joint log prior + bound_sum + sum log Ltilde
 *   hess       neg_hess = sum of the rows' finite-difference Hessians that
 *              the model keeps (robust clips |r| > sqrt nu), symmetric, PSD,
 *              dominating the observed information
 *   xi_at      the long-double tight parameters, and the bound tight there
 *   collapsed  moment layout, n_params, n_xi, work_len, the optional tables
 *              the family declares (each complete); bound_sum = direct
 *              sum of log B (uneven blocks, large theta, shifts); its
 *              gradient = grad with wB = 1 and = finite differences; S
 *              symmetric; moments_add accumulates
 *   coef       coef->eval / coef->grad on coef->make = eval / grad bit for
 *              bit, with and without logB / wB; coef->n
 *   rowwise    a row's values on <= FLY_ROWWISE rows do not depend on the
 *              rows beside it
 *   gap        (thin table) gap <= thin->upper(thin->key(xi, ||x||_P),
 *              thin->radius) in random SPD metrics (unit and 1e4), MAPs with
 *              large components, theta 1e-14..1e3 sds from the MAP (+ shifts
 *              for softmax), rows tight at 0; sharpness where Cauchy-Schwarz
 *              is an equality (within the case's factor, a halved bound
 *              fails); thin->upper increasing in key and r, flat below
 *              r = 1; the key at xi = 0; radius against sqrt(sum_k d_k'H d_k)
 *              and a hand case; a D = 1 sweep of the move both ways
 *              (gap/bound reaching 0.9); at the MAP with xnorm = 0 the key
 *              alone covers eps and rounding
 *   sketch     fly_model_gap_upper_rho(xi, rho) >= gap for rho >= the norm
 *              of (x'd_k)_k; box->upper_rho likewise; box->upper_c(box->prep)
 *              = box->upper bit for bit
 *   box        (box table) rows alone and buckets of 8 rows adjacent in
 *              |xi|; below thin->upper for most rows; within 10% of the gap
 *              outward; a radius 3% short fails; +inf for non-finite xi or
 *              key; increasing in r and key
 *   scan       (coef->scan) ub >= p for every row, xi regimes,
 *              |x| 1e-3..1e3, xi tight at th; rows at their tight point are
 *              screened; non-finite rows and th are let through
 *   target     check_target accepts / rejects, its message
 *   prior      log prior value, gradient vs FD, neg_hess, Laplace gradient
 *              0 at 0, fly_model_find
 * Only one model: logistic's screen where the f32 rounding of s matters;
 * robust's normaliser against lgammal and thin->key's saturation; softmax's
 * psi = c 1 bit-identity, centring (shift invariance of L, B and radius),
 * class sums of x, neg_hess against the long-double formula where a class
 * saturates, K = 2 against logistic.  MAP tuning of stores of every model:
 * test_model_tune.c.
 *
 * Cost: under 2 s of CPU in a release build, most of it in the bound
 * probes and the thinning-bound loops.
 */
#include "models/model.h"
#include "flymc/buckets.h"
#include "flymc/sketch.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "model_cases.h"
#include "util/rng.h"

/* ---- bound <= likelihood ---------------------------------------------------- */

/* D = 1, x = 1: th from the tight points, perturbations of them and fixed
 * extremes (40 probes per xi). */
static void probe(const fly_model *m, const mfamily *f, fly_rng *r, const float *xi,
                  double y, int p, double *th)
{
  size_t P = P_of(m), yc = (size_t)y;
  double t0[MAXK], t1[MAXK];
  f->tight(m, xi, y, 0, t0);
  f->tight(m, xi, y, 1, t1);
  for( size_t k = 0; k < P; k++ ){
    double e = fly_rng_normal(r), v;
    switch( p ){
    case 0:  v = t0[k]; break;
    case 1:  v = t1[k]; break;
    case 2:  v = t0[k] * (1 + 1e-8); break;
    case 3:  v = t0[k] * (1 - 1e-8); break;
    case 4:  v = t1[k] * (1 + 1e-8); break;
    case 5:  v = t0[k] + 1e-6; break;
    case 6:  v = t0[k] + 1e-8 * e; break;
    case 7:  v = t0[k] + 1e-4 * e; break;
    case 8:  v = t0[k] + 0.1 * e; break;
    case 9:  v = t0[k] - 1e3; break;
    case 10: v = 0; break;
    case 11: v = 1e-10; break;
    case 12: v = -1e-10; break;
    case 13: v = 50; break;
    case 14: v = -50; break;
    case 15: v = 1e3; break;
    case 16: v = -1e3; break;
    case 17: v = k == yc ? -50 : 50; break;
    case 18: v = k == yc ? 50 : -50; break;
    case 19: v = 1e3 * (2 * fly_rng_uniform(r) - 1); break;
    default: v = 100 * fly_rng_uniform(r) - 50; break;
    }
    th[k] = v;
  }
}

static void prop_bound(const mcase *c, size_t ci)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, 1);
  fly_rng r;
  fly_rng_seed(&r, 101, ci);
  size_t NX = NX_of(&m);
  double work[256];
  long n = 0, viol = 0, far = 0, tightbad = 0;
  double worst = -INFINITY, worst_tight = 0, worst_ref = 0;
  int reps = c->type == &fly_model_robust ? 600 : c->K > 1 ? 1000 : 2000;
  for( int rep = 0; rep < reps; rep++ ){
    float xi[MAXK];
    double X[3] = { 1.0, 1e30, 0 };
    f->rand_xi(&m, &r, xi);
    X[2] = f->target(&m, &r, X, 1);
    for( int p = 0; p < 40; p++ ){
      double th[MAXK], lL, lB, sc;
      probe(&m, f, &r, xi, X[2], p, th);
      m.type->eval(&m, th, X, 3, xi, 1, &lL, &lB, work);
      n++;
      if( !(lB <= lL) || !isfinite(lB) || !isfinite(lL) ) viol++;
      worst = fmax(worst, lB - lL);
      long double rb = f->ref_logB(&m, th, X, xi, &sc), rl = f->ref_logL(&m, th, X);
      double e1 = (double)fabsl((long double)lB - rb) / sc;
      double e2 = (double)fabsl((long double)lL - rl) / (1 + (double)fabsl(rl));
      if( isfinite(sc) ) worst_ref = fmax(worst_ref, e1);
      worst_ref = fmax(worst_ref, e2);
      if( (isfinite(sc) && e1 > 1e-10) || e2 > 1e-14 ) far++;
      if( p < 2 ){
        double tol = f->tight_tol(&m, xi, p), gap = lL - lB;
        if( isnan(tol) ) continue;
        worst_tight = fmax(worst_tight, gap / tol);
        if( !(gap < tol) || (f->tight_pos && !(gap > 0)) ) tightbad++;
      }
    }
    (void)NX;
  }
  TAP_OK(viol == 0, "%s: B <= L on %ld (xi, th) probes, |th| <= 1e3 (worst logB-logL %.3g)",
        c->name, n, worst);
  TAP_OK(tightbad == 0, "%s: tight at the tight points: gap within eps (worst gap/tol %.3g)",
        c->name, worst_tight);
  if( tap_long_double_exact() )
    TAP_OK(far == 0, "%s: log L, log B match the long-double reference (worst rel %.3g)",
          c->name, worst_ref);
  else
    TAP_SKIP("%s: long double is only double precision here (valgrind): no "
             "long-double reference (worst rel %.3g)", c->name, worst_ref);

  /* random rows, random theta and xi */
  size_t D = c->K > 1 ? 4 : 5, N = 400;
  m = mk(c, D);
  size_t P = P_of(&m), ldx = D + 2;
  NX = NX_of(&m);
  double *X = mk_rows(&m, &r, N, 3.0);
  float *xi = malloc(N * NX * sizeof *xi);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  long v5 = 0, bad5 = 0;
  for( int rep = 0; rep < 40; rep++ ){
    double th[MAXP], sc = rep < 20 ? 1.0 : 10.0;
    for( size_t j = 0; j < P; j++ ) th[j] = sc * fly_rng_normal(&r);
    rand_xis(&m, &r, N, xi);
    m.type->eval(&m, th, X, ldx, xi, N, lL, lB, w);
    for( size_t i = 0; i < N; i++ ){
      long double rl = f->ref_logL(&m, th, X + i * ldx);
      v5 += !(lB[i] <= lL[i]);
      bad5 += fabsl(lL[i] - rl) > 1e-12L * (1 + fabsl(rl));
    }
  }
  TAP_OK(v5 == 0, "%s: B <= L on random D=%zu rows, random theta and xi (%ld bad)",
        c->name, D, v5);
  TAP_OK(bad5 == 0, "%s: eval log L uses the features, stride and target (%ld bad)",
        c->name, bad5);
  double th[MAXP] = { 0.3, -0.2, 0.1, 0, 1 };
  lB[0] = 12345;
  m.type->eval(&m, th, X, ldx, xi, 3, lL, NULL, w);
  TAP_OK(lB[0] == 12345 && isfinite(lL[0]) && (f->density || lL[0] < 0),
        "%s: eval with logB NULL leaves it", c->name);
  m.type->eval(&m, th, X, ldx, NULL, 3, lL, NULL, w);
  TAP_OK(isfinite(lL[2]), "%s: eval with xi NULL and logB NULL (MAP search)", c->name);
  free(X); free(xi); free(lL); free(lB); free(w);
}

/* ---- gradients ---------------------------------------------------------------- */

/* Fourth-order central differences of f at th along each coordinate (the
 * Ltilde sum has large third derivatives where a gap is small). */
typedef double (*sumfn)(const fly_model *m, const double *th, void *u);

static void fd_grad(const fly_model *m, const double *th, sumfn fn, void *u, double h,
                    double *fd)
{
  size_t P = P_of(m);
  static const double off[4] = { -2, -1, 1, 2 };
  for( size_t j = 0; j < P; j++ ){
    double f[4];
    for( int q = 0; q < 4; q++ ){
      double tq[MAXP];
      memcpy(tq, th, P * sizeof *tq);
      tq[j] += off[q] * h;
      f[q] = fn(m, tq, u);
    }
    fd[j] = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h);
  }
}

typedef struct gctx {
  const double *X, *wL, *wB, *mom;
  const float *xi;
  size_t N;
  double *lL, *lB, *w;
  const char *use;      /* rows in the log Ltilde sums */
  int kind;             /* 0 wsum, 1 ltsum, 2 MAP objective, 3 FlyMC joint */
} gctx;

/* Sum of log Ltilde = log(e^gap - 1) over the rows in use, as the chain
 * forms it (fly_vlog_ltilde over the gaps). */
static double ltsum(const fly_model *m, const double *th, const gctx *g)
{
  m->type->eval(m, th, g->X, m->D + 2, g->xi, g->N, g->lL, g->lB, g->w);
  for( size_t i = 0; i < g->N; i++ ) g->lL[i] -= g->lB[i];
  fly_vlog_ltilde(g->lL, g->lL, g->N);
  double s = 0;
  for( size_t i = 0; i < g->N; i++ ) if( g->use[i] ) s += g->lL[i];
  return s;
}

static double gsum(const fly_model *m, const double *th, void *u)
{
  gctx *g = u;
  switch( g->kind ){
  case 0: return wsum(m, th, g->X, g->xi, g->N, g->wL, g->wB, g->lL, g->lB, g->w);
  case 1: return ltsum(m, th, g);
  case 2: return fly_model_log_prior(m, th, NULL) +
                 wsum(m, th, g->X, g->xi, g->N, g->wL, NULL, g->lL, g->lB, g->w);
  default: return fly_model_log_prior(m, th, NULL) + m->type->bound_sum(m, g->mom, th, NULL, g->w)
                + ltsum(m, th, g);
  }
}

static void prop_grad(const mcase *c, size_t ci)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, c->K > 1 ? 3 : 4);
  fly_rng r;
  fly_rng_seed(&r, 102, ci);
  size_t N = 60, D = m.D, P = P_of(&m), NX = NX_of(&m);
  double *X = mk_rows(&m, &r, N, 1.5);
  float *xi = malloc(N * NX * sizeof *xi);
  double *wL = malloc(N * sizeof *wL), *wB = malloc(N * sizeof *wB);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  double *mom = calloc(m.type->n_moments(&m), sizeof *mom);
  const char *names[] = { "wL=1, wB=NULL", "wL=0, wB=1", "random wL, wB", "Ltilde weights",
                          "MAP objective (log prior + sum log L)",
                          "FlyMC joint (log prior + bound_sum + sum log Ltilde)" };
  char *use = malloc(N);
  gctx g = { X, wL, NULL, mom, xi, N, lL, lB, w, use, 0 };
  for( int k = 0; k < 6; k++ ){
    double worst = 0;
    long used = 0;
    for( int rep = 0; rep < 5; rep++ ){
      double th[MAXP], gr[MAXP], fd[MAXP];
      for( size_t j = 0; j < P; j++ ) th[j] = fly_rng_normal(&r);
      for( size_t i = 0; i < N; i++ ){
        f->mild_xi(&m, &r, xi + i * NX);
        wL[i] = k == 1 ? 0 : k == 0 || k >= 4 ? 1 : fly_rng_normal(&r);
        wB[i] = k == 1 ? 1 : fly_rng_normal(&r);
      }
      if( k == 3 || k == 5 ){
        m.type->eval(&m, th, X, D + 2, xi, N, lL, lB, w);
        /* rows whose gap a difference of two doubles of size |log L|
         * resolves to 1e-9 */
        for( size_t i = 0; i < N; i++ ){
          use[i] = lL[i] - lB[i] > 1e-7 * (1 + fabs(lL[i]));
          used += use[i];
          wL[i] = use[i] ? 1 / fly_p_bright(lL[i] - lB[i]) : 0;
          wB[i] = -wL[i];
        }
      }
      if( k == 5 ){
        memset(mom, 0, m.type->n_moments(&m) * sizeof *mom);
        m.type->moments_add(&m, X, D + 2, xi, N, mom, w);
      }
      g.wB = k == 0 || k == 4 ? NULL : wB;
      g.kind = k < 3 ? 0 : k == 3 ? 1 : k == 4 ? 2 : 3;
      for( size_t j = 0; j < P; j++ ) gr[j] = 0.25 * (double)j;     /* g += ... */
      if( k >= 4 ) fly_model_log_prior(&m, th, gr);
      if( k == 5 ) m.type->bound_sum(&m, mom, th, gr, w);
      m.type->grad(&m, th, X, D + 2, xi, N, wL, g.wB, gr, w);
      for( size_t j = 0; j < P; j++ ) gr[j] -= 0.25 * (double)j;
      /* the best of four steps: a small gap makes log Ltilde steep (large
       * high derivatives) and its rounding large (the gap is a difference) */
      double best = INFINITY;
      for( double h = 1e-3; h > 1e-6 / 2; h /= 10 ){
        fd_grad(&m, th, gsum, &g, h, fd);
        best = fmin(best, relerr(gr, fd, P));
      }
      worst = fmax(worst, best);
    }
    if( k == 3 || k == 5 )
      TAP_OK(worst < 1e-6 && used > 5 * (long)N / 2, "%s: grad vs finite differences, %s "
             "(rel %.2g; %ld of %zu rows)", c->name, names[k], worst, used, 5 * N);
    else
      TAP_OK(worst < 1e-6, "%s: grad vs finite differences, %s (rel %.2g)", c->name,
             names[k], worst);
  }
  free(use);
  free(X); free(xi); free(wL); free(wB); free(lL); free(lB); free(w); free(mom);
}

/* ---- neg_hess and xi_at --------------------------------------------------------- */

static long n_clipped;      /* rows neg_hess left out, over every case */

static void prop_hess(const mcase *c, size_t ci)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, c->K > 1 ? 3 : 4);
  fly_rng r;
  fly_rng_seed(&r, 103, ci);
  size_t N = 60, D = m.D, P = P_of(&m), NX = NX_of(&m), ldx = D + 2;
  double *X = mk_rows(&m, &r, N, 1.5);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  double *H = malloc(P * P * sizeof *H), *want = malloc(P * P * sizeof *want);
  double *obs = malloc(P * P * sizeof *obs), *F = malloc(P * P * sizeof *F);
  double worst = 0, asym = 0, negq = 0, obsq = 0;
  long n_in = 0, n_out = 0;
  for( int rep = 0; rep < 5; rep++ ){
    double th[MAXP];
    for( size_t j = 0; j < P; j++ ) th[j] = (c->type == &fly_model_robust ? 0.5 : 1.5) *
                                            fly_rng_normal(&r);
    for( size_t j = 0; j < P * P; j++ ){
      H[j] = 0.1 * (double)(j / P + j % P);         /* onto a non-zero symmetric H */
      want[j] = obs[j] = 0;
    }
    m.type->neg_hess(&m, th, X, ldx, N, H, w);
    for( size_t j = 0; j < P * P; j++ ) H[j] -= 0.1 * (double)(j / P + j % P);
    for( size_t j = 0; j < P; j++ ) for( size_t k = 0; k < P; k++ )
      asym = fmax(asym, fabs(H[j * P + k] - H[k * P + j]));
    double one = 1;
    for( size_t i = 0; i < N; i++ ){
      const double *x = X + i * ldx;
      for( size_t k = 0; k < P; k++ ){
        double h = 1e-5, tp[MAXP], tm[MAXP], gp[MAXP] = { 0 }, gm[MAXP] = { 0 };
        memcpy(tp, th, P * sizeof *tp); memcpy(tm, th, P * sizeof *tm);
        tp[k] += h; tm[k] -= h;
        m.type->grad(&m, tp, x, ldx, NULL, 1, &one, NULL, gp, w);
        m.type->grad(&m, tm, x, ldx, NULL, 1, &one, NULL, gm, w);
        for( size_t j = 0; j < P; j++ ) F[j * P + k] = -(gp[j] - gm[j]) / (2 * h);
      }
      int keep = f->hess_keeps(&m, th, x);
      if( keep < 0 ) continue;
      n_in += keep; n_out += !keep;
      for( size_t j = 0; j < P * P; j++ ){
        obs[j] += F[j];
        if( keep ) want[j] += F[j];
      }
    }
    worst = fmax(worst, relerr(H, want, P * P));
    /* H is PSD and H - observed is PSD: v'Hv >= 0, v'(H - obs)v >= 0 */
    for( int t = 0; t < 50; t++ ){
      double v[MAXP], q = 0, qo = 0;
      for( size_t j = 0; j < P; j++ ) v[j] = fly_rng_normal(&r);
      for( size_t j = 0; j < P; j++ ) for( size_t k = 0; k < P; k++ ){
        q += v[j] * H[j * P + k] * v[k];
        qo += v[j] * (H[j * P + k] - obs[j * P + k]) * v[k];
      }
      negq = fmin(negq, q);
      obsq = fmin(obsq, qo / (1 + q));
    }
  }
  n_clipped += n_out;
  TAP_OK(worst < 1e-6 && n_in >= 5,
        "%s: neg_hess = sum of the FD Hessians of the rows it keeps (rel %.2g; %ld rows "
        "in, %ld clipped)", c->name, worst, n_in, n_out);
  TAP_OK(asym < 1e-12, "%s: neg_hess is full and symmetric (%.2g)", c->name, asym);
  TAP_OK(negq >= 0 && obsq >= -1e-9, "%s: neg_hess is PSD and dominates the observed "
        "information (min v'(H-obs)v / (1 + v'Hv) %.3g)", c->name, obsq);

  /* xi_at: the tight parameters, and the bound is then tight at th */
  double th[MAXP], gmax = 0;
  float *xi = malloc(N * NX * sizeof *xi);
  double *xo = malloc(N * NX * sizeof *xo), *lL = malloc(N * sizeof *lL);
  double *lB = malloc(N * sizeof *lB);
  int ok = 1;
  for( size_t j = 0; j < P; j++ ) th[j] = fly_rng_normal(&r);
  m.type->xi_at(&m, th, X, ldx, N, xo, w);
  for( size_t i = 0; i < N; i++ ){
    double ref[MAXK];
    f->ref_xi(&m, th, X + i * ldx, ref);
    for( size_t k = 0; k < NX; k++ ){
      ok &= fabs(xo[i * NX + k] - ref[k]) <= 1e-13 * (1 + fabs(ref[k]));
      xi[i * NX + k] = (float)xo[i * NX + k];
    }
  }
  m.type->eval(&m, th, X, ldx, xi, N, lL, lB, w);
  /* within 1e-9, or the family's eps scale where that is larger */
  for( size_t i = 0; i < N; i++ )
    gmax = fmax(gmax, (lL[i] - lB[i]) / fmax(1e-9, f->tight_tol(&m, xi + i * NX, 0)));
  TAP_OK(ok, "%s: xi_at gives the tight parameters (long-double reference)", c->name);
  TAP_OK(gmax < 1, "%s: bounds tuned by xi_at are tight there (max gap / max(1e-9, eps "
        "scale) %.2g)", c->name, gmax);
  free(X); free(w); free(H); free(want); free(obs); free(F);
  free(xi); free(xo); free(lL); free(lB);
}

/* ---- collapsed product ------------------------------------------------------------ */

/* 1 if the moment layout matches the family's "name:RxC,..." (R, C one of
 * D, K, 1). */
static int layout_is(const fly_model *m, const char *want)
{
  fly_moment_section sec[8];
  size_t ns = m->type->moment_layout(m, sec), tot = 0, k = 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", want);
  for( char *t = strtok(buf, ","); t; t = strtok(NULL, ","), k++ ){
    char *colon = strchr(t, ':');
    if( !colon || k >= ns ) return 0;
    *colon = 0;
    size_t dim[2];
    for( int q = 0; q < 2; q++ ){
      char ch = colon[1 + 2 * q];
      dim[q] = ch == 'D' ? m->D : ch == 'K' ? m->K : 1;
    }
    if( strcmp(sec[k].name, t) || sec[k].rows != dim[0] || sec[k].cols != dim[1] ) return 0;
  }
  for( size_t q = 0; q < ns; q++ ) tot += sec[q].rows * sec[q].cols;
  return k == ns && tot == m->type->n_moments(m);
}

/* a shift of every class row by one vector (the likelihood's flat
 * direction of models with dirs) */
static void add_shift(const fly_model *m, fly_rng *r, double sd, double *th)
{
  for( size_t j = 0; j < m->D; j++ ){
    double v = sd * fly_rng_normal(r);
    for( size_t k = 0; k < m->K; k++ ) th[k * m->D + j] += v;
  }
}

/* The optional tables and optional members a type has, as the family
 * lists them ("coef scan thin box dirs", those present). */
static void tables_of(const fly_model_type *t, char *buf, size_t len)
{
  const fly_model_coef *co = t->coef;
  const fly_model_thin *th = t->thin;
  snprintf(buf, len, "%s%s%s%s%s%s", co ? "coef" : "", co && co->scan ? " scan" : "",
           th ? " thin" : "", th && th->box ? " box" : "", th && th->dirs ? " dirs" : "",
           t->full ? " full" : "");
}

/* 1 if the type has the tables its family declares, each with every
 * member model.h does not call optional.  The properties of a table run
 * only then: they read its members unchecked. */
static int tables_declared(const fly_model_type *t)
{
  const fly_model_coef *co = t->coef;
  const fly_model_thin *th = t->thin;
  const fly_model_box *bx = th ? th->box : NULL;
  char have[64];
  tables_of(t, have, sizeof have);
  return strcmp(have, family_of(t)->hooks) == 0 &&
         (!co || (co->n && co->make && co->eval && co->grad)) &&
         (!th || (th->key && th->upper && th->radius)) &&
         (!bx || (bx->n && bx->upper && bx->prep && bx->upper_c && bx->upper_rho)) &&
         (!t->full || t->full->logp_grad);
}

static void prop_collapsed(const mcase *c, size_t ci)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, c->K > 1 ? 4 : 5);
  fly_rng r;
  fly_rng_seed(&r, 104, ci);
  size_t N = 700, D = m.D, P = P_of(&m), NX = NX_of(&m), ldx = D + 2;
  double *X = mk_rows(&m, &r, N, 2.0);
  float *xi = malloc(N * NX * sizeof *xi);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  size_t nm = m.type->n_moments(&m);
  double *mom = calloc(nm, sizeof *mom);
  TAP_OK(layout_is(&m, f->layout), "%s: moment layout %s covers %zu moments", c->name,
        f->layout, nm);
  TAP_OK(P == (f->per_class ? m.K : 1) * D && NX == (f->per_class ? m.K : 1),
        "%s: n_params, n_xi", c->name);
  int wl_ok = m.type->work_len(&m, 1) >= D;
  for( size_t n = 1; n <= 1000; n *= 10 )         /* model.h: fly_model_eval_xi */
    wl_ok &= m.type->work_len(&m, n) >= n * D + n + D * D &&
             m.type->work_len(&m, n) >= n * (m.K > 1 ? m.K : 1) +
                                        n * (m.type->coef ? m.type->coef->n(&m) : 0);
  TAP_OK(wl_ok, "%s: work_len covers n D + n + D^2, n max(K, 1) + n coef->n and radius' D",
         c->name);
  /* the optional tables the family declares, each complete (model.h:
   * every member set but the optional ones) */
  char hooks[64];
  tables_of(m.type, hooks, sizeof hooks);
  const fly_model_thin *th0 = m.type->thin;
  const fly_model_box *bx = th0 ? th0->box : NULL;
  int complete = !bx || bx->n(&m) <= FLY_BOX_MAX;
  TAP_OK(tables_declared(m.type) && complete, "%s: optional tables '%s', each complete",
         c->name, hooks);

  double worst = 0, gworst = 0, fdworst = 0, asym = 0;
  for( int rep = 0; rep < 6; rep++ ){
    /* |xi| up to 1e3: beyond that c_i ~ -xi/4 and finite differences of
     * the total drown in its rounding */
    rand_xis(&m, &r, N, xi);
    for( size_t i = 0; i < N * NX; i++ )
      if( !(fabsf(xi[i]) <= 1e3f) ) xi[i] = 1e3f;
    memset(mom, 0, nm * sizeof *mom);
    size_t cuts[] = { 0, 1, 8, 300, N };            /* uneven blocks, as pages come */
    for( int b = 0; b < 4; b++ )
      m.type->moments_add(&m, X + cuts[b] * ldx, ldx, xi + cuts[b] * NX,
                          cuts[b + 1] - cuts[b], mom, w);
    for( size_t j = 0; j < D; j++ ) for( size_t k = 0; k < D; k++ )
      asym = fmax(asym, fabs(mom[j * D + k] - mom[k * D + j]));
    for( int t = 0; t < 4; t++ ){
      double th[MAXP], g[MAXP] = { 0 }, g2[MAXP] = { 0 }, fd[MAXP];
      double sc = t < 2 ? 0.5 : 5;
      for( size_t j = 0; j < P; j++ ) th[j] = sc * fly_rng_normal(&r);
      if( t == 3 && m.type->thin && m.type->thin->dirs )
        for( size_t j = 0; j < P; j++ ) th[j] += 40 * (double)(j % D);
      double bs = m.type->bound_sum(&m, mom, th, g, w);
      m.type->eval(&m, th, X, ldx, xi, N, lL, lB, w);
      double direct = 0, mag = 0;
      for( size_t i = 0; i < N; i++ ){ direct += lB[i]; mag += fabs(lB[i]); }
      worst = fmax(worst, fabs(bs - direct) / mag);
      double *wB = lL;
      for( size_t i = 0; i < N; i++ ) wB[i] = 1;
      m.type->grad(&m, th, X, ldx, xi, N, NULL, wB, g2, w);
      gworst = fmax(gworst, relerr(g, g2, P));
      for( size_t j = 0; j < P; j++ ){
        double h = 1e-5 * (1 + fabs(th[j])), tp[MAXP], tm[MAXP];
        memcpy(tp, th, P * sizeof *tp); memcpy(tm, th, P * sizeof *tm);
        tp[j] += h; tm[j] -= h;
        fd[j] = (m.type->bound_sum(&m, mom, tp, NULL, w) -
                 m.type->bound_sum(&m, mom, tm, NULL, w)) / (2 * h);
      }
      fdworst = fmax(fdworst, relerr(g, fd, P));
    }
  }
  TAP_OK(worst < 1e-10, "%s: bound_sum equals the sum of eval's log B (rel %.2g)",
        c->name, worst);
  TAP_OK(gworst < 1e-10, "%s: bound_sum gradient equals grad with wB = 1 (rel %.2g)",
        c->name, gworst);
  TAP_OK(fdworst < 1e-6, "%s: bound_sum gradient vs finite differences (rel %.2g)",
        c->name, fdworst);
  TAP_OK(asym == 0, "%s: S is full and symmetric", c->name);

  /* adding to a non-zero table adds: mom(A) + mom(B) = mom(A u B) */
  double *m1 = calloc(nm, sizeof *m1), *m2 = calloc(nm, sizeof *m2);
  m.type->moments_add(&m, X, ldx, xi, N, m1, w);
  m.type->moments_add(&m, X, ldx, xi, 100, m2, w);
  m.type->moments_add(&m, X + 100 * ldx, ldx, xi + 100 * NX, N - 100, m2, w);
  TAP_OK(relerr(m2, m1, nm) < 1e-12, "%s: moments_add accumulates", c->name);
  free(m1); free(m2);
  free(X); free(xi); free(lL); free(lB); free(w); free(mom);
}

/* ---- kept coefficients, rows alone ---------------------------------------------- */

enum { COEF_EVAL = 1, COEF_EVAL_L = 2, COEF_GRAD = 4, COEF_GRAD_L = 8, COEF_SD_EVAL = 16,
       COEF_SD_GRAD = 32 };

/* Bit mask of the COEF_ checks that differ at th (0: all the same). */
static int coef_mismatch(const fly_model *m, const double *th, const double *X,
                         size_t ldx, const float *xi, size_t N,
                         const double *wL, const double *wB)
{
  size_t P = P_of(m), nc = m->type->coef->n(m);
  double *cf = malloc(N * nc * sizeof *cf), *w = malloc(m->type->work_len(m, N) * sizeof *w);
  double *l1 = malloc(N * sizeof *l1), *b1 = malloc(N * sizeof *b1);
  double *l2 = malloc(N * sizeof *l2), *b2 = malloc(N * sizeof *b2);
  double g1[MAXP], g2[MAXP];
  int bad = 0;
  m->type->coef->make(m, X, ldx, xi, N, cf);
  m->type->eval(m, th, X, ldx, xi, N, l1, b1, w);
  m->type->coef->eval(m, th, X, ldx, cf, N, l2, b2, w);
  if( memcmp(l1, l2, N * sizeof *l1) || memcmp(b1, b2, N * sizeof *b1) ) bad |= COEF_EVAL;
  m->type->eval(m, th, X, ldx, xi, N, l1, NULL, w);
  m->type->coef->eval(m, th, X, ldx, NULL, N, l2, NULL, w);
  if( memcmp(l1, l2, N * sizeof *l1) ) bad |= COEF_EVAL_L;
  for( size_t j = 0; j < P; j++ ) g1[j] = g2[j] = 0.5 * (double)j;
  m->type->grad(m, th, X, ldx, xi, N, wL, wB, g1, w);
  m->type->coef->grad(m, th, X, ldx, cf, N, wL, wB, g2, w);
  if( memcmp(g1, g2, P * sizeof *g1) ) bad |= COEF_GRAD;
  for( size_t j = 0; j < P; j++ ) g1[j] = g2[j] = 0;
  m->type->grad(m, th, X, ldx, xi, N, wL, NULL, g1, w);
  m->type->coef->grad(m, th, X, ldx, NULL, N, wL, NULL, g2, w);
  if( memcmp(g1, g2, P * sizeof *g1) ) bad |= COEF_GRAD_L;
  if( m->type->coef->eval_sd ){
    /* eval_sd: eval's bits; grad_sd: grad's within a few ulps of the
     * terms' scale (the derivative from another exp) */
    double *sd = malloc(2 * N * sizeof *sd);
    m->type->coef->eval(m, th, X, ldx, cf, N, l1, b1, w);
    m->type->coef->eval_sd(m, th, X, ldx, cf, N, l2, b2, sd, w);
    if( memcmp(l1, l2, N * sizeof *l1) || memcmp(b1, b2, N * sizeof *b1) ) bad |= COEF_SD_EVAL;
    for( size_t j = 0; j < P; j++ ) g1[j] = g2[j] = 0.5 * (double)j;
    m->type->coef->grad(m, th, X, ldx, cf, N, wL, wB, g1, w);
    m->type->coef->grad_sd(m, X, ldx, cf, N, wL, wB, sd, g2, w);
    double scale = 1;
    for( size_t i = 0; i < N; i++ ){
      double xm = 0;
      for( size_t j = 0; j < P; j++ ) xm = fmax(xm, fabs(X[i * ldx + j]));
      scale += (fabs(wL[i]) + (wB ? fabs(wB[i]) : 0) * (1 + fabs(l1[i]) + fabs(b1[i]))) * xm;
    }
    for( size_t j = 0; j < P; j++ )
      if( !(fabs(g1[j] - g2[j]) <= 1e-14 * scale) ) bad |= COEF_SD_GRAD;
    free(sd);
  }
  free(cf); free(w); free(l1); free(b1); free(l2); free(b2);
  return bad;
}

/* Rows i of the N whose logL or logB differ between eval on row i alone and
 * eval on any chunk of n = 2..FLY_ROWWISE rows holding it (chunks start at
 * every offset). */
static size_t rowwise_mismatch(const fly_model *m, const double *th,
                               const double *X, size_t ldx, const float *xi,
                               size_t nxi, size_t N)
{
  double *w = malloc(m->type->work_len(m, N) * sizeof *w);
  double *l1 = malloc(N * sizeof *l1), *b1 = malloc(N * sizeof *b1);
  double l[FLY_ROWWISE], b[FLY_ROWWISE];
  char *bad = calloc(N, 1);
  size_t nbad = 0;
  for( size_t i = 0; i < N; i++ )
    m->type->eval(m, th, X + i * ldx, ldx, xi + i * nxi, 1, l1 + i, b1 + i, w);
  for( size_t n = 2; n <= FLY_ROWWISE; n++ )
    for( size_t o = 0; o + n <= N; o++ ){
      m->type->eval(m, th, X + o * ldx, ldx, xi + o * nxi, n, l, b, w);
      for( size_t i = 0; i < n; i++ )
        if( memcmp(&l[i], &l1[o + i], sizeof *l) || memcmp(&b[i], &b1[o + i], sizeof *b) )
          bad[o + i] = 1;
    }
  for( size_t i = 0; i < N; i++ ) nbad += bad[i];
  free(w); free(l1); free(b1); free(bad);
  return nbad;
}

static void prop_coef_rowwise(const mcase *c, size_t ci)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, c->K > 1 ? 4 : 5);
  fly_rng r;
  fly_rng_seed(&r, 105, ci);
  size_t N = 300, D = m.D, P = P_of(&m), NX = NX_of(&m);
  TAP_OK(        m.type->coef->n(&m) == f->nc_k * m.K + f->nc_1,
        "%s: bound coefficients, %zu a row", c->name, f->nc_k * m.K + f->nc_1);
  double *X = mk_rows(&m, &r, N, 2.0);
  float *xi = malloc(N * NX * sizeof *xi);
  double *wL = malloc(N * sizeof *wL), *wB = malloc(N * sizeof *wB);
  int bad = 0;
  for( int rep = 0; rep < 12; rep++ ){
    double th[MAXP];
    for( size_t j = 0; j < P; j++ ) th[j] = 3 * fly_rng_normal(&r);
    rand_xis(&m, &r, N, xi);
    for( size_t i = 0; i < N; i++ ){
      wL[i] = fly_rng_normal(&r);
      wB[i] = rep % 3 ? fly_rng_normal(&r) : 0.0;
    }
    bad |= coef_mismatch(&m, th, X, D + 2, xi, N, wL, wB);
  }
  TAP_OK(!(bad & COEF_EVAL), "%s: coef->eval(coef->make(xi)) == eval(xi) bit for bit (logL and logB)",
        c->name);
  TAP_OK(!(bad & COEF_EVAL_L), "%s: coef->eval without logB == eval without logB", c->name);
  TAP_OK(!(bad & COEF_GRAD), "%s: coef->grad(coef->make(xi)) == grad(xi) bit for bit", c->name);
  TAP_OK(!(bad & COEF_GRAD_L), "%s: coef->grad without wB == grad without wB", c->name);
  if( m.type->coef->eval_sd ){
    TAP_OK(!(bad & COEF_SD_EVAL), "%s: coef->eval_sd == coef->eval bit for bit", c->name);
    TAP_OK(!(bad & COEF_SD_GRAD), "%s: coef->grad_sd(eval_sd's sd) == coef->grad within "
           "1e-14 of the terms' scale", c->name);
  }
  free(X); free(xi); free(wL); free(wB);

  /* D = 21 (8 for softmax): there OpenBLAS's dgemv rounds a row by its
   * place in a block */
  m = mk(c, c->K > 1 ? 8 : 21);
  P = P_of(&m);
  X = mk_rows(&m, &r, 60, 1.0);
  xi = malloc(60 * NX * sizeof *xi);
  size_t nbad = 0;
  for( int rep = 0; rep < 5; rep++ ){
    double th[MAXP * 3];
    for( size_t j = 0; j < P; j++ ) th[j] = fly_rng_normal(&r);
    rand_xis(&m, &r, 60, xi);
    nbad += rowwise_mismatch(&m, th, X, m.D + 2, xi, NX, 60);
  }
  TAP_OK(nbad == 0, "%s: eval of <= %d rows: %zu of 300 rows differ from the row alone",
        c->name, FLY_ROWWISE, nbad);
  free(X); free(xi);
}

/* ---- the fused full-data sum ------------------------------------------------------ */

/* Tolerances.  full->logp_grad and the sums of eval / grad compute the same
 * n terms by the same formulas in another order: the sum over rows (each
 * order within gamma_n = n u / (1 - n u) of sum_i |term_i|, Higham 2002,
 * section 4.2; u = 2^-53), the linear predictors eta_ik = th_k'x_i (one
 * BLAS kernel or another: within gamma_D A_i, A_i = sum_kj |th_kj x_ij|
 * plus |y_i| for robust, whose residual is y - eta), which moves log L_i by
 * at most slope(1) gamma_D A_i and its derivative by slope(2) gamma_D A_i,
 * and the elementwise functions (vector or scalar libm: a few ulp of each
 * term).  So, with n = 61 rows and D <= 5,
 *   |sum_F - sum_E|  <= (2 n + 2 D + 16) u sum_i (1 + |log L_i| + slope(1) A_i),
 *   |grad_F - grad_E|_j <= (2 n + 2 D + 16) u sum_i |x_ij| (slope(1) + slope(2) A_i),
 * about 150 u = 3.3e-14 of those magnitudes; the test allows 1e-13 (3x). */
#define FULL_TOL 1e-13

typedef struct fctx { const double *X; size_t n; double *w; } fctx;

static double fsum(const fly_model *m, const double *th, void *u)
{
  fctx *f = u;
  return m->type->full->logp_grad(m, th, f->X, m->D + 2, f->n, NULL, f->w);
}

/* The worst |full - eval/grad| over the value and every gradient component,
 * relative to its tolerance (see above), for n rows of X at th. */
static double full_vs_sums(const fly_model *m, const mfamily *fam, const double *th,
                           const double *X, size_t n, double *w)
{
  size_t P = P_of(m), D = m->D, ldx = D + 2, K = fam->per_class ? m->K : 1;
  double *lL = malloc((n + 1) * sizeof *lL), *ones = malloc((n + 1) * sizeof *ones);
  double gE[MAXP], gF[MAXP], gN[MAXP], gmag[MAXP], sE = 0, mag = 0, worst = 0;
  double s1 = fam->slope(m, 1), s2 = fam->slope(m, 2);
  for( size_t i = 0; i < n; i++ ) ones[i] = 1;
  m->type->eval(m, th, X, ldx, NULL, n, lL, NULL, w);
  for( size_t j = 0; j < P; j++ ) gE[j] = gF[j] = gN[j] = 0.5 * (double)j;
  m->type->grad(m, th, X, ldx, NULL, n, ones, NULL, gE, w);
  double sF = m->type->full->logp_grad(m, th, X, ldx, n, gF, w);
  double sN = m->type->full->logp_grad(m, th, X, ldx, n, NULL, w);
  for( size_t j = 0; j < P; j++ ) if( gN[j] != 0.5 * (double)j ) worst = INFINITY;
  for( size_t j = 0; j < P; j++ ) gmag[j] = 0;
  for( size_t i = 0; i < n; i++ ){
    const double *x = X + i * ldx;
    double A = fam->per_class ? 0 : fabs(x[m->tcol]) * (m->type == &fly_model_robust);
    for( size_t k = 0; k < K; k++ )
      for( size_t j = 0; j < D; j++ ) A += fabs(th[k * D + j] * x[j]);
    sE += lL[i];
    mag += 1 + fabs(lL[i]) + s1 * A;
    for( size_t k = 0; k < K; k++ )
      for( size_t j = 0; j < D; j++ ) gmag[k * D + j] += fabs(x[j]) * (s1 + s2 * A);
  }
  worst = fmax(worst, fabs(sF - sE) / (FULL_TOL * mag));
  worst = fmax(worst, fabs(sN - sE) / (FULL_TOL * mag));
  for( size_t j = 0; j < P; j++ )
    worst = fmax(worst, fabs(gF[j] - gE[j]) / (FULL_TOL * gmag[j] + DBL_MIN));
  if( !isfinite(sF) || !isfinite(sN) ) worst = INFINITY;
  free(lL); free(ones);
  return worst;
}

static void prop_full(const mcase *c, size_t ci)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, c->K > 1 ? 3 : 5);
  fly_rng r;
  fly_rng_seed(&r, 106, ci);
  size_t N = 61, P = P_of(&m);
  double *X = mk_rows(&m, &r, N, 1.5), *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  double worst = 0, worst_n = 0, fd_worst = 0, th[MAXP];
  /* th of sd 1, then 30 (saturated rows: |eta| in the hundreds) */
  for( int rep = 0; rep < 10; rep++ ){
    double sd = rep < 5 ? 1 : 30;
    for( size_t j = 0; j < P; j++ ) th[j] = sd * fly_rng_normal(&r);
    worst = fmax(worst, full_vs_sums(&m, f, th, X, N, w));
    /* every length of the vector functions' padded tail */
    for( size_t n = 1; n <= 9; n++ )
      worst_n = fmax(worst_n, full_vs_sums(&m, f, th, X + (size_t)rep * (m.D + 2), n, w));
  }
  TAP_OK(worst <= 1, "%s: full->logp_grad = sum of eval's log L and grad (wL = 1) to "
         "rounding, with grad and without (worst %.2g of the tolerance)", c->name, worst);
  TAP_OK(worst_n <= 1, "%s: full->logp_grad on 1..9 rows, likewise (worst %.2g)",
         c->name, worst_n);
  double g[MAXP], g0[MAXP];
  for( size_t j = 0; j < P; j++ ) g[j] = g0[j] = 1.0 + (double)j;
  double s0 = m.type->full->logp_grad(&m, th, X, m.D + 2, 0, g, w);
  TAP_OK(s0 == 0 && memcmp(g, g0, P * sizeof *g) == 0, "%s: full->logp_grad on 0 rows: 0, "
         "grad untouched", c->name);
  fctx fc = { X, N, w };
  for( int rep = 0; rep < 5; rep++ ){
    double gr[MAXP], fd[MAXP], best = INFINITY;
    for( size_t j = 0; j < P; j++ ){ th[j] = fly_rng_normal(&r); gr[j] = 0; }
    m.type->full->logp_grad(&m, th, X, m.D + 2, N, gr, w);
    for( double h = 1e-3; h > 1e-6 / 2; h /= 10 ){
      fd_grad(&m, th, fsum, &fc, h, fd);
      best = fmin(best, relerr(gr, fd, P));
    }
    fd_worst = fmax(fd_worst, best);
  }
  TAP_OK(fd_worst < 1e-6, "%s: full->logp_grad's gradient vs finite differences (rel %.2g)",
         c->name, fd_worst);
  free(X); free(w);
}

/* ---- the thinning bound ----------------------------------------------------------- */

/* The directions the bound sees: dirs() or d = th - th_map; nd of them. */
static size_t directions(const fly_model *m, const double *th, const double *thm, double *d)
{
  if( m->type->thin->dirs ){
    m->type->thin->dirs(m, th, thm, d);
    return m->K;
  }
  for( size_t j = 0; j < m->D; j++ ) d[j] = th[j] - thm[j];
  return 1;
}

/* Cauchy-Schwarz equality for row x: th = thm + t a_k P x / ||x||_P per
 * class row (one-vector models: a = outward sign, t = 1; else a random
 * centred, t so that sqrt(sum (x'd_k)^2) = sharp_move). */
static void cs_move(const fly_model *m, const mfamily *f, fly_rng *r, const double *thm,
                    const double *P, const double *x, const float *xi, double *th)
{
  size_t D = m->D, nk = m->type->thin->dirs ? m->K : 1;
  double a[MAXK], a2 = 0, abar = 0, Px[MAXD], nx = sqrt(q_of(D, P, x));
  if( m->type->thin->dirs ){
    for( size_t k = 0; k < nk; k++ ){ a[k] = fly_rng_normal(r); abar += a[k] / (double)nk; }
    for( size_t k = 0; k < nk; k++ ){ a[k] -= abar; a2 += a[k] * a[k]; }
  }else{
    a[0] = f->outward(m, xi, (double)ldot(thm, x, D));
    a2 = 1;
  }
  double t = f->sharp_move > 0 ? f->sharp_move / (sqrt(a2) * nx) : 1;
  for( size_t b = 0; b < D; b++ ){
    Px[b] = 0;
    for( size_t q = 0; q < D; q++ ) Px[b] += P[b * D + q] * x[q];
  }
  for( size_t k = 0; k < nk; k++ )
    for( size_t b = 0; b < D; b++ )
      th[k * D + b] = thm[k * D + b] + t * a[k] * Px[b] / nx;
}

static void prop_gap(const mcase *c, size_t ci)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, 4);
  fly_rng r;
  fly_rng_seed(&r, 106, ci);
  size_t N = 300, D = m.D, P = P_of(&m), NX = NX_of(&m), ldx = D + 2;
  double *X = mk_rows(&m, &r, N, 2.0);
  float *xi = malloc(N * NX * sizeof *xi);
  double *xo = malloc(N * NX * sizeof *xo), *xn = malloc(N * sizeof *xn);
  double *key = malloc(N * sizeof *key), *keyn = malloc(N * sizeof *keyn);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  long keys_differ = 0;
  long n = 0, viol = 0, ratio_n = 0, loose = 0, caught = 0;
  double worst = 0, ratio_max = 0, ratio_min = INFINITY;
  int reps = c->type == &fly_model_robust ? 12 : 20;
  for( int rep = 0; rep < reps; rep++ ){
    double H[MAXD * MAXD], Pm[MAXD * MAXD], thm[MAXP], scale = rep < reps / 2 ? 1.0 : 1e4;
    rand_metric(&r, D, scale, H, Pm);
    for( size_t j = 0; j < P; j++ ) thm[j] = 2 * fly_rng_normal(&r);
    if( rep % 5 == 4 ) thm[0] = 40;                 /* large |s_map|, big xi */
    if( f->zero_row )                               /* rows tight at 0 */
      for( size_t i = 0; i < N; i += 17 ) f->zero_row(&m, thm, X + i * ldx);
    m.type->xi_at(&m, thm, X, ldx, N, xo, w);
    for( size_t i = 0; i < N; i++ ){
      for( size_t k = 0; k < NX; k++ ) xi[i * NX + k] = (float)xo[i * NX + k];
      double q = q_of(D, Pm, X + i * ldx);
      /* half the time as the 4-byte value kept in memory */
      xn[i] = (i % 2) ? (double)(float)sqrt(q) : sqrt(q);
      key[i] = m.type->thin->key(&m, xi + i * NX, xn[i]);
    }
    /* all rows at once (key_n where the model has one): the same bits */
    fly_model_keys(&m, xi, xn, N, keyn, w);
    for( size_t i = 0; i < N; i++ ) keys_differ += memcmp(&keyn[i], &key[i], sizeof *key) != 0;
    static const double scales[] = { 0, 1e-14, 1e-10, 1e-6, 1e-3, 1e-1, 1, 3, 30, 1e3 };
    for( int si = 0; si < 10; si++ )
      for( int dir = 0; dir < 8; dir++ ){
        double th[MAXP];
        for( size_t j = 0; j < P; j++ )
          th[j] = thm[j] + scales[si] * fly_rng_normal(&r) / sqrt(scale);
        if( m.type->thin->dirs && dir % 2 ) add_shift(&m, &r, 50, th);
        double rad = m.type->thin->radius(&m, th, thm, H, w);
        m.type->eval(&m, th, X, ldx, xi, N, lL, lB, w);
        for( size_t i = 0; i < N; i++ ){
          double gap = lL[i] - lB[i], ub = m.type->thin->upper(&m, key[i], rad);
          n++;
          if( !(gap <= ub) ){ viol++; worst = fmax(worst, gap - ub); }
        }
      }
    if( c->sharp == 0 || scale < f->sharp_scale ) continue;
    for( size_t i = 0; i < N; i++ ){
      double b = fabs((double)xi[i * NX]);
      if( !(b >= f->sharp_lo && b <= f->sharp_hi) ) continue;
      const double *x = X + i * ldx;
      double th[MAXP];
      cs_move(&m, f, &r, thm, Pm, x, xi + i * NX, th);
      double rad = m.type->thin->radius(&m, th, thm, H, w);
      m.type->eval(&m, th, x, ldx, xi + i * NX, 1, lL, lB, w);
      double ub = m.type->thin->upper(&m, m.type->thin->key(&m, xi + i * NX, sqrt(q_of(D, Pm, x))),
                                    rad);
      double ratio = ub / (lL[0] - lB[0]);
      ratio_max = fmax(ratio_max, ratio);
      ratio_min = fmin(ratio_min, ratio);
      ratio_n++;
      loose += !(ratio >= 1 && ratio < c->sharp);
      caught += ratio < 2;                          /* a halved bound fails here */
    }
  }
  TAP_OK(keys_differ == 0, "%s: fly_model_keys%s gives thin->key's bits on every row "
         "(%ld differ)", c->name, m.type->thin->key_n ? " (key_n)" : "", keys_differ);
  TAP_OK(viol == 0, "%s: gap <= gap_upper(thin->key, radius) on %ld rows x theta (%ld bad, "
        "worst excess %.3g)", c->name, n, viol, worst);
  if( c->sharp > 0 ){
    TAP_OK(ratio_n > 100 && loose == 0, "%s: gap_upper within %gx of the gap where "
          "Cauchy-Schwarz is tight (%ld rows, ratio %.4g..%.4g)", c->name, c->sharp,
          ratio_n, ratio_min, ratio_max);
    TAP_OK(caught > 0, "%s: sensitivity: gap_upper halved is violated at %ld of those rows",
          c->name, caught);
  }

  /* monotone, flat below r = 1; the key at xi = 0 */
  TAP_OK(m.type->thin->upper(&m, 2e-3, 2.0) > m.type->thin->upper(&m, 1e-3, 2.0) &&
        m.type->thin->upper(&m, 1e-3, 3.0) > m.type->thin->upper(&m, 1e-3, 2.0) &&
        m.type->thin->upper(&m, 1e-3, 0.5) == m.type->thin->upper(&m, 1e-3, 1.0),
        "%s: gap_upper increasing in key and r, flat below r = 1", c->name);
  float z0[MAXK] = { 0 };
  double k0 = m.type->thin->key(&m, z0, 1.0), lo, hi;
  f->key0(&m, &lo, &hi);
  TAP_OK(k0 >= lo && k0 < hi, "%s: thin->key at xi = 0, xnorm = 1 in [%.9g, %.9g] (%.9g)",
        c->name, lo, hi, k0);

  /* radius: sqrt(sum_k d_k'H d_k), d_k the centred rows with dirs */
  double rw = 0;
  for( int rep = 0; rep < 20; rep++ ){
    double H[MAXD * MAXD], Pm[MAXD * MAXD], th[MAXP], thm[MAXP], d[MAXP];
    rand_metric(&r, D, rep % 2 ? 1 : 1e4, H, Pm);
    for( size_t j = 0; j < P; j++ ){ th[j] = fly_rng_normal(&r); thm[j] = fly_rng_normal(&r); }
    for( size_t j = 0; j < D; j++ ){
      double mean = 0;
      for( size_t k = 0; k < P / D; k++ ) mean += (th[k * D + j] - thm[k * D + j]) / (double)(P / D);
      for( size_t k = 0; k < P / D; k++ )
        d[k * D + j] = th[k * D + j] - thm[k * D + j] - (m.type->thin->dirs ? mean : 0);
    }
    long double q = 0;
    for( size_t k = 0; k < P / D; k++ ) q += q_of(D, H, d + k * D);
    double want = sqrt((double)q), got = m.type->thin->radius(&m, th, thm, H, w);
    rw = fmax(rw, fabs(got - want) / want);
  }
  fly_model m2 = mk(c, 2);
  double H2[4] = { 4, 1, 1, 2 }, a2[2 * MAXK] = { 1, 2, 0, 1 }, b2[2 * MAXK] = { 0, 1 };
  if( m2.type->thin->dirs ) b2[1] = 0;                  /* K = 2: d = +-(.5, .5): 2 x 2 */
  double rr = m2.type->thin->radius(&m2, a2, b2, H2, w);
  double want2 = m2.type->thin->dirs ? (m2.K == 2 ? 2.0 : NAN) : sqrt(8.0);   /* d = (1,1): 4+1+1+2 */
  TAP_OK(rw < 1e-13 && (isnan(want2) || fabs(rr - want2) < 1e-15),
        "%s: radius = sqrt(sum_k d_k'H d_k) (rel %.2g), hand case %.17g", c->name, rw, rr);

  /* D = 1, x = 1: Cauchy-Schwarz is an equality (radius sqrt(H)|d|, xnorm
   * 1/sqrt(H)), so sweeping the move t over a fine grid, both ways, probes
   * the supremum the key must cover for each xi */
  {
    static const double Hs[] = { 1e-2, 1, 1e4 };
    fly_model mv = mk(c, 1);
    size_t P1 = P_of(&mv);
    double unit = mv.scale > 0 ? mv.scale : 1, w1[256], tight1 = 0;
    long bad1 = 0, n1 = 0;
    for( int hk = 0; hk < 3; hk++ ){
      double H1 = Hs[hk];
      for( int bi = 0; bi < 60; bi++ ){
        double X1[3] = { 1.0, 1e30, 0 }, thm[MAXK], v[MAXK], u[MAXK], res[MAXK];
        float x1[MAXK], z[MAXK] = { 0 };
        X1[2] = f->target(&mv, &r, X1, 1);
        f->tight(&mv, z, X1[2], 0, thm);            /* the tight point of xi = 0 */
        for( size_t k = 0; k < P1; k++ ){
          v[k] = P1 == 1 ? 1 : fly_rng_normal(&r);
          u[k] = P1 == 1 ? 1 : fly_rng_normal(&r);
          thm[k] -= unit * v[k] * (bi == 0 ? 0 : 1e-3 * pow(1.3, bi));
        }
        mv.type->xi_at(&mv, thm, X1, 3, 1, res, w1);
        for( size_t k = 0; k < P1; k++ ) x1[k] = (float)res[k];
        double k1 = key_f32(&mv, x1, 1 / sqrt(H1));
        for( int ti = -400; ti <= 400; ti++ ){
          double t = ti == 0 ? 0 : (ti > 0 ? 1 : -1) * 1e-6 * pow(1.05, abs(ti)), th[MAXK];
          for( size_t k = 0; k < P1; k++ ) th[k] = thm[k] + unit * t * u[k];
          double l1, b1, rad = mv.type->thin->radius(&mv, th, thm, &H1, w1);
          mv.type->eval(&mv, th, X1, 3, x1, 1, &l1, &b1, w1);
          double ub = mv.type->thin->upper(&mv, k1, rad);
          n1++;
          bad1 += !(l1 - b1 <= ub);
          if( ub > 0 && l1 - b1 > 1e-6 ) tight1 = fmax(tight1, (l1 - b1) / ub);
        }
      }
    }
    TAP_OK(bad1 == 0 && tight1 > 0.9, "%s: D = 1 sweep over xi and the move, both ways: "
          "gap <= gap_upper on %ld points (%ld bad; largest gap/bound %.3g)",
          c->name, n1, bad1, tight1);

    /* xnorm = 0 (radius 0 at the MAP): the key alone must cover the gap
     * left by eps and rounding at the tight point */
    long bad0 = 0;
    for( int rep = 0; rep < 2000; rep++ ){
      double X1[3] = { 1.0, 1e30, 0 }, thm[MAXK], res[MAXK], l1, b1;
      float x1[MAXK], z[MAXK] = { 0 };
      X1[2] = f->target(&mv, &r, X1, 1) + (c->type == &fly_model_robust ? 100 * fly_rng_normal(&r) : 0);
      f->tight(&mv, z, X1[2], 0, thm);
      for( size_t k = 0; k < P1; k++ )
        thm[k] -= unit * (rep % 2 ? 1e3 : 3) * fly_rng_normal(&r);
      mv.type->xi_at(&mv, thm, X1, 3, 1, res, w1);
      for( size_t k = 0; k < P1; k++ ) x1[k] = (float)res[k];
      mv.type->eval(&mv, thm, X1, 3, x1, 1, &l1, &b1, w1);
      bad0 += !(l1 - b1 <= mv.type->thin->upper(&mv, key_f32(&mv, x1, 0.0), 0.0));
    }
    TAP_OK(bad0 == 0, "%s: xnorm = 0: the key covers eps and rounding at the MAP (%ld bad)",
          c->name, bad0);
  }
  free(X); free(xi); free(xo); free(xn); free(key); free(keyn); free(lL); free(lB); free(w);
}

/* ---- the sketch's bounds: rho per row ------------------------------------------- */

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static void prop_sketch(const mcase *c, size_t ci)
{
  fly_model m = mk(c, 4);
  fly_rng r;
  fly_rng_seed(&r, 107, ci);
  size_t N = 300, D = m.D, P = P_of(&m), NX = NX_of(&m), ldx = D + 2;
  double *X = mk_rows(&m, &r, N, 2.0);
  float *xi = malloc(N * NX * sizeof *xi);
  double *xo = malloc(N * NX * sizeof *xo), *lL = malloc(N * sizeof *lL);
  double *lB = malloc(N * sizeof *lB), *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  double box[FLY_BOX_MAX];
  long n = 0, bad = 0, badc = 0, diff = 0;
  for( int rep = 0; rep < 10; rep++ ){
    double H[MAXD * MAXD], Pm[MAXD * MAXD], thm[MAXP], d[MAXP];
    rand_metric(&r, D, rep < 5 ? 1 : 1e4, H, Pm);
    for( size_t j = 0; j < P; j++ ) thm[j] = 2 * fly_rng_normal(&r);
    if( rep % 5 == 4 ) thm[0] = 40;
    m.type->xi_at(&m, thm, X, ldx, N, xo, w);
    for( size_t i = 0; i < N * NX; i++ ) xi[i] = (float)xo[i];
    static const double scales[] = { 0, 1e-10, 1e-3, 0.1, 1, 3, 30, 1e3 };
    for( int si = 0; si < 8; si++ ){
      double th[MAXP];
      for( size_t j = 0; j < P; j++ ) th[j] = thm[j] + scales[si] * fly_rng_normal(&r);
      if( m.type->thin->dirs && si % 2 ) add_shift(&m, &r, 50, th);
      size_t nd = directions(&m, th, thm, d);
      m.type->eval(&m, th, X, ldx, xi, N, lL, lB, w);
      for( size_t i = 0; i < N; i++ ){
        const double *x = X + i * ldx;
        const float *xr = xi + i * NX;
        long double q = 0;
        for( size_t k = 0; k < nd; k++ ){ long double t = ldot(d + k * D, x, D); q += t * t; }
        double rho = sqrt((double)q) * (1 + 1e-12), gap = lL[i] - lB[i];
        n++;
        bad += !(gap <= fly_model_gap_upper_rho(&m, xr, rho));
        if( m.type->thin->box ){
          double v = fabs((double)xr[0]), k = key_f32(&m, xr, sqrt(q_of(D, Pm, x)));
          m.type->thin->box->prep(&m, v, v, k, box);
          double rad = m.type->thin->radius(&m, th, thm, H, w);
          diff += !same_bits(m.type->thin->box->upper_c(&m, box, rad),
                             m.type->thin->box->upper(&m, v, v, k, rad));
          badc += !(gap <= m.type->thin->box->upper_rho(&m, box, rho));
        }
      }
    }
  }
  TAP_OK(bad == 0, "%s: gap <= fly_model_gap_upper_rho(xi, rho), rho >= |(x'd_k)_k| on %ld "
        "rows x theta (%ld bad)", c->name, n, bad);
  if( m.type->thin->box )
    TAP_OK(badc == 0 && diff == 0, "%s: gap <= box->upper_rho(box->prep(xi, xi, key), rho) "
          "(%ld bad); box->upper_c(box->prep) == box->upper bit for bit (%ld differ)",
          c->name, badc, diff);
  free(X); free(xi); free(xo); free(lL); free(lB); free(w);
}

/* ---- the bucket bound (box->upper) --------------------------------------------- */

static const float *sort_xi;
static size_t sort_nx;
static int cmp_idx(const void *a, const void *b)
{
  float x = fabsf(sort_xi[*(const size_t *)a * sort_nx]);
  float y = fabsf(sort_xi[*(const size_t *)b * sort_nx]);
  return (x > y) - (x < y);
}

/* Rows alone (xi_lo = xi_hi = |xi_n|, the row's key) and buckets of 8 rows
 * adjacent in |xi| (their range and largest key): gap <= box->upper for
 * th 1e-14 to 1e3 sds from the MAP, in random SPD metrics, MAPs with |s| up
 * to 40 and beyond.  Tight outward where Cauchy-Schwarz is an equality;
 * with the radius 3% short it must fail there. */
static void prop_box(const mcase *c, size_t ci)
{
  enum { G = 8 };
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, 4);
  if( !m.type->thin->box ) return;
  fly_rng r;
  fly_rng_seed(&r, 108, ci);
  size_t N = 400, D = m.D, P = P_of(&m), NX = NX_of(&m), ldx = D + 2;
  double *X = mk_rows(&m, &r, N, 2.0);
  float *xi = malloc(N * NX * sizeof *xi);
  size_t *ord = malloc(N * sizeof *ord);
  double *xo = malloc(N * NX * sizeof *xo), *key = malloc(N * sizeof *key);
  double *lL = malloc(N * sizeof *lL), *lB = malloc(N * sizeof *lB);
  double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
  long n = 0, viol = 0, nb = 0, bviol = 0, tight_n = 0, loose = 0, shrunk = 0, better = 0;
  double worst = 0, rmax = 0;
  for( int rep = 0; rep < 20; rep++ ){
    double H[MAXD * MAXD], Pm[MAXD * MAXD], thm[MAXP], scale = rep < 10 ? 1.0 : 1e4;
    rand_metric(&r, D, scale, H, Pm);
    for( size_t j = 0; j < P; j++ ) thm[j] = (rep % 3 == 0 ? 0.2 : 2) * fly_rng_normal(&r);
    if( rep % 5 == 4 ) thm[0] = 40;
    m.type->xi_at(&m, thm, X, ldx, N, xo, w);
    for( size_t i = 0; i < N; i++ ){
      for( size_t k = 0; k < NX; k++ ) xi[i * NX + k] = (float)xo[i * NX + k];
      key[i] = key_f32(&m, xi + i * NX, sqrt(q_of(D, Pm, X + i * ldx)));
      ord[i] = i;
    }
    sort_xi = xi; sort_nx = NX;
    qsort(ord, N, sizeof *ord, cmp_idx);
    static const double scales[] = { 0, 1e-14, 1e-6, 1e-3, 1e-1, 0.5, 1, 3, 30, 1e3 };
    for( int si = 0; si < 10; si++ )
      for( int dir = 0; dir < 8; dir++ ){
        double th[MAXP];
        for( size_t j = 0; j < P; j++ )
          th[j] = thm[j] + scales[si] * fly_rng_normal(&r) / sqrt(scale);
        double rad = m.type->thin->radius(&m, th, thm, H, w);
        m.type->eval(&m, th, X, ldx, xi, N, lL, lB, w);
        for( size_t i = 0; i < N; i++ ){
          double gap = lL[i] - lB[i], v = fabs((double)xi[i * NX]);
          double ub = m.type->thin->box->upper(&m, v, v, key[i], rad);
          n++;
          if( !(gap <= ub) ){ viol++; worst = fmax(worst, gap - ub); }
          better += ub < m.type->thin->upper(&m, key[i], rad);
        }
        for( size_t g = 0; g + G <= N; g += G ){
          double lo = INFINITY, hi = 0, kmax = 0, gmax = -INFINITY;
          for( size_t j = g; j < g + G; j++ ){
            size_t i = ord[j];
            lo = fmin(lo, fabs((double)xi[i * NX]));
            hi = fmax(hi, fabs((double)xi[i * NX]));
            kmax = fmax(kmax, key[i]);
            gmax = fmax(gmax, lL[i] - lB[i]);
          }
          nb++;
          if( !(gmax <= m.type->thin->box->upper(&m, lo, hi, kmax, rad)) ) bviol++;
        }
      }
    /* outward along the Cauchy-Schwarz equality, at 0.3, 1 and 3 times it */
    for( size_t i = 0; i < N; i += 2 ){
      const double *x = X + i * ldx;
      double v = fabs((double)xi[i * NX]), th1[MAXP];
      cs_move(&m, f, &r, thm, Pm, x, xi + i * NX, th1);
      static const double ts[] = { 0.3, 1, 3 };
      for( int k = 0; k < 3; k++ ){
        double th[MAXP];
        for( size_t j = 0; j < P; j++ ) th[j] = thm[j] + ts[k] * (th1[j] - thm[j]);
        double rad = m.type->thin->radius(&m, th, thm, H, w);
        m.type->eval(&m, th, x, ldx, xi + i * NX, 1, lL, lB, w);
        double gap = lL[0] - lB[0];
        if( !(gap > 1e-8) ) continue;
        double ratio = m.type->thin->box->upper(&m, v, v, key[i], rad) / gap;
        rmax = fmax(rmax, ratio);
        tight_n++;
        loose += !(ratio >= 1 && ratio < 1.1);
        shrunk += !(gap <= m.type->thin->box->upper(&m, v, v, key[i], 0.97 * rad));
      }
    }
  }
  TAP_OK(viol == 0, "%s: gap <= box->upper(xi, xi, f32 key, radius) on %ld rows x "
        "theta (%ld bad, worst excess %.3g)", c->name, n, viol, worst);
  TAP_OK(bviol == 0 && nb > 1000, "%s: max gap of a bucket of %d rows <= box->upper over "
        "its xi range and largest key (%ld buckets x theta, %ld bad)", c->name, G, nb, bviol);
  TAP_OK(better > n / 2, "%s: box->upper below gap_upper for most rows x theta (%ld of %ld)",
        c->name, better, n);
  TAP_OK(tight_n > 500 && loose == 0, "%s: box->upper within 10%% of the gap outward where "
        "Cauchy-Schwarz is tight (%ld points, max ratio %.4g)", c->name, tight_n, rmax);
  TAP_OK(shrunk > tight_n / 2, "%s: sensitivity: with the radius 3%% short the bound fails "
        "at %ld of %ld of those points", c->name, shrunk, tight_n);
  TAP_OK(isinf(m.type->thin->box->upper(&m, 0, INFINITY, 1, 1)) &&
        isinf(m.type->thin->box->upper(&m, 0, 1, NAN, 1)),
        "%s: box->upper is +inf when xi or the key is not finite", c->name);
  TAP_OK(m.type->thin->box->upper(&m, 1, 2, 1e-2, 3) > m.type->thin->box->upper(&m, 1, 2, 1e-2, 2) &&
        m.type->thin->box->upper(&m, 1, 2, 2e-2, 2) > m.type->thin->box->upper(&m, 1, 2, 1e-2, 2),
        "%s: box->upper increasing in r and key", c->name);
  free(X); free(xi); free(ord); free(xo); free(key); free(lL); free(lB); free(w);
}

/* ---- a gibbs scan's screen (coef->scan) ------------------------------------------- */

/* The screen's bound ub of n rows and the p each row alone gets from
 * coef->eval (what a scan compares u with). */
static void screen(const fly_model *m, const double *th, const double *X, size_t ldx,
                   size_t n, const float *xi, double *cf, float *Xf, float *xn,
                   double *ub, double *p, double *work)
{
  size_t nc = m->type->coef->n(m);
  m->type->coef->make(m, X, ldx, xi, n, cf);
  fly_model_scan_rows(m, X, ldx, n, Xf, xn);
  m->type->coef->scan(m, th, Xf, ldx, xn, cf, n, ub, work);
  for( size_t i = 0; i < n; i++ ){
    double logL, logB;
    m->type->coef->eval(m, th, X + i * ldx, ldx, cf + i * nc, 1, &logL, &logB, work);
    p[i] = -expm1(logB - logL);
  }
}

/* ub >= p for every xi regime, scales of x from 1e-3 to 1e3 and xi tight
 * at th itself, where p is a few eps; non-finite rows give a bound that
 * does not rule them out; the screen rules out rows near their tight
 * point, or it would save nothing. */
static void prop_scan(const mcase *c, size_t ci)
{
  enum { N = 400 };
  fly_model m = mk(c, 5);
  if( !m.type->coef->scan ) return;
  fly_rng r;
  fly_rng_seed(&r, 109, ci);
  size_t D = m.D, LD = D + 2, P = P_of(&m), NX = NX_of(&m);
  size_t nc = m.type->coef->n(&m), wl = m.type->work_len(&m, N);
  float *xi = malloc(N * NX * sizeof *xi), *Xf = malloc(N * LD * sizeof *Xf);
  float *xn = malloc(N * sizeof *xn);
  double *cf = malloc(N * nc * sizeof *cf), *work = malloc(wl * sizeof *work);
  double *ub = malloc(N * sizeof *ub), *pr = malloc(N * sizeof *pr);
  double *lin0 = malloc(N * NX * sizeof *lin0);
  size_t nviol = 0, nnear = 0, ntight = 0, nrows = 0, nonfin = 0;
  double worst = 0;
  for( int rep = 0; rep < 60; rep++ ){
    double sd = rep % 4 == 0 ? 1e-3 : rep % 4 == 1 ? 1.0 : rep % 4 == 2 ? 30.0 : 1e3;
    double *X = mk_rows(&m, &r, N, sd), th[MAXP], tn = 0;
    for( size_t j = 0; j < P; j++ ){ th[j] = fly_rng_normal(&r); tn += th[j] * th[j]; }
    int tight = rep % 3 == 0;                     /* the gaps are rounding */
    if( tight ){
      m.type->xi_at(&m, th, X, LD, N, lin0, work);
      for( size_t i = 0; i < N * NX; i++ ) xi[i] = (float)lin0[i];
    }else
      rand_xis(&m, &r, N, xi);
    screen(&m, th, X, LD, N, xi, cf, Xf, xn, ub, pr, work);
    for( size_t i = 0; i < N; i++ ){
      nrows++;
      if( !(ub[i] >= pr[i]) ){ nviol++; worst = fmax(worst, pr[i] - ub[i]); }
      /* tight: the gap is ~|a| (2^-24 xi)^2 and ub ~|a| delta^2 and slack,
       * delta ~ 2^-20 ||th|| ||x||: for |s| < 10 and ||th|| ||x|| < 100,
       * where posteriors live, far below any u a scan draws */
      if( tight && fabs(lin0[i * NX]) < 10 && sqrt(tn) * xn[i] < 100 ){
        ntight++;
        nnear += ub[i] < 1e-8;
      }
    }
    /* a row with an inf or NaN feature, and th beyond FLT_MAX: the screen
     * must let them through */
    X[3 * LD + 1] = rep % 2 ? INFINITY : NAN;
    X[5 * LD + 2] = 1e300;
    fly_model_scan_rows(&m, X, LD, N, Xf, xn);
    m.type->coef->scan(&m, th, Xf, LD, xn, cf, N, ub, work);
    nonfin += !(ub[3] < 1) + !(ub[5] < 1);
    th[1] = 1e39;
    m.type->coef->scan(&m, th, Xf, LD, xn, cf, N, ub, work);
    nonfin += !(ub[0] < 1);
    free(X);
  }
  TAP_OK(nviol == 0, "%s: coef->scan >= p for every row: %zu of %zu below (worst by %g)",
        c->name, nviol, nrows, worst);
  TAP_OK(ntight > 2000 && nnear == ntight, "%s: rows at their tight point with |s| < 10 and "
        "||th|| ||x|| < 100 are screened (ub < 1e-8): %zu of %zu", c->name, nnear, ntight);
  TAP_OK(nonfin == 3 * 60, "%s: non-finite rows and th are let through (%zu of %d)",
        c->name, nonfin, 3 * 60);
  free(xi); free(Xf); free(xn); free(cf); free(work); free(ub); free(pr); free(lin0);
}

/* ---- targets and the prior -------------------------------------------------------- */

static void prop_target(const mcase *c)
{
  const mfamily *f = family_of(c->type);
  fly_model m = mk(c, 3);
  double ok[MAXK + 4], bad[16];
  size_t n_ok, n_bad;
  char msg[128];
  fly_err err;
  fly_err_clear(&err);
  n_bad = f->targets(&m, ok, &n_ok, bad, msg, sizeof msg);
  int good = 1;
  for( size_t i = 0; i < n_ok; i++ )
    good &= m.type->check_target(&m, ok[i], (int64_t)i, &err) == FLY_OK;
  TAP_OK(good, "%s: %zu valid targets accepted", c->name, n_ok);
  fly_rc rc = m.type->check_target(&m, bad[0], 7, &err);
  TAP_OK(rc == FLY_RANGE && err.code == FLY_RANGE && strcmp(err.msg, msg) == 0,
        "%s: target %g: FLY_RANGE, \"%s\"", c->name, bad[0], err.msg);
  good = 1;
  for( size_t i = 0; i < n_bad; i++ )
    good &= m.type->check_target(&m, bad[i], 0, NULL) == FLY_RANGE;
  TAP_OK(good, "%s: %zu invalid targets rejected (err NULL)", c->name, n_bad);
}

static void prop_prior(const mcase *c, size_t ci)
{
  fly_model m = mk(c, 4);
  size_t P = P_of(&m);
  fly_rng r;
  fly_rng_seed(&r, 110, ci);
  double th[MAXP], g[MAXP], fd[MAXP], s = m.prior_scale, want = 0;
  int lap = m.prior == FLY_PRIOR_LAPLACE;
  for( size_t j = 0; j < P; j++ ){
    th[j] = 1.5 * fly_rng_normal(&r);
    want += lap ? -fabs(th[j]) / s : -0.5 * th[j] * th[j] / (s * s);
    g[j] = 1;
  }
  double lp = fly_model_log_prior(&m, th, g);
  for( size_t j = 0; j < P; j++ ){
    double h = 1e-6, tp[MAXP], tm[MAXP];
    memcpy(tp, th, P * sizeof *tp); memcpy(tm, th, P * sizeof *tm);
    tp[j] += h; tm[j] -= h;
    fd[j] = (fly_model_log_prior(&m, tp, NULL) - fly_model_log_prior(&m, tm, NULL)) / (2 * h);
    g[j] -= 1;
  }
  TAP_OK(fabs(lp - want) < 1e-14 * (1 + fabs(want)), "%s: prior value %.6g", c->name, lp);
  TAP_OK(relerr(g, fd, P) < 1e-8, "%s: prior gradient vs FD (rel %.2g)", c->name,
        relerr(g, fd, P));
  double *H = calloc(P * P, sizeof *H);
  fly_model_prior_neg_hess(&m, H);
  int ok = 1;
  for( size_t j = 0; j < P; j++ ) for( size_t k = 0; k < P; k++ )
    ok &= H[j * P + k] == ((!lap && j == k) ? 1 / (s * s) : 0);
  free(H);
  double z[MAXP] = { 0 }, gz[MAXP] = { 0 };
  (void)fly_model_log_prior(&m, z, gz);
  int zero = 1;
  for( size_t j = 0; j < P; j++ ) zero &= gz[j] == 0;
  TAP_OK(ok && zero, "%s: prior neg_hess, gradient 0 at 0", c->name);
  TAP_OK(fly_model_find(m.type->name) == m.type, "%s: fly_model_find(\"%s\")", c->name,
        m.type->name);
}

/* ---- logistic only ------------------------------------------------------------------ */

/* Where the bound is nearly exact the f32 product's rounding matters: xi
 * large (sigma(1 - sigma)(xi) ~ 0, so gap ~ |a| (|s| - xi)^2) and large x,
 * so s_f is off by ~1e-4 against |s| - xi of 0.5 to 3 (a bound without its
 * delta fails here). */
static void logistic_only(void)
{
  enum { N = 400, D = 5, LD = D + 2 };
  fly_model m = mk(case_of(&fly_model_logistic), D);
  fly_rng r;
  fly_rng_seed(&r, 29, 0);
  size_t nc = m.type->coef->n(&m), nv2 = 0;
  float xi[N], Xf[N * LD], xn[N];
  double *cf = malloc(N * nc * sizeof *cf), *work = malloc(m.type->work_len(&m, N) * sizeof *work);
  double ub[N], pr[N], s0[N];
  for( int rep = 0; rep < 20; rep++ ){
    double *X = mk_rows(&m, &r, N, 1e3), th[D];
    for( int j = 0; j < D; j++ ) th[j] = fly_rng_normal(&r);
    m.type->xi_at(&m, th, X, LD, N, s0, work);
    for( size_t i = 0; i < N; i++ ){
      double d = 0.5 + 2.5 * fly_rng_uniform(&r);
      xi[i] = (float)(i % 2 ? s0[i] + d : fabs(s0[i] - d));
    }
    screen(&m, th, X, LD, N, xi, cf, Xf, xn, ub, pr, work);
    for( size_t i = 0; i < N; i++ ) nv2 += !(ub[i] >= pr[i]);
    free(X);
  }
  TAP_OK(nv2 == 0, "logistic: coef->scan >= p where the f32 rounding of s matters: "
        "%zu of %d below", nv2, 20 * N);
  free(cf); free(work);
}

/* ---- robust only --------------------------------------------------------------------- */

static void robust_only(void)
{
  /* eval at r = 0 gives log L = K exactly */
  static const double nv[] = { 1e-3, 0.3, 1, 4, 30, 39.9, 40.1, 200, 1e4, 1e8 };
  static const double sv[] = { 1, 0.01, 250 };
  double worst = 0, work[8];
  mcase rc = *case_of(&fly_model_robust);
  for( int i = 0; i < 10; i++ )
    for( int s = 0; s < 3; s++ ){
      rc.nu = nv[i]; rc.scale = sv[s];
      fly_model m = mk(&rc, 1);
      double X[3] = { 1.0, 1e30, 0.75 }, th = 0.75, lL;
      m.type->eval(&m, &th, X, 3, NULL, 1, &lL, NULL, work);
      long double want = rb_ref_K(nv[i], sv[s]);
      worst = fmax(worst, (double)fabsl(lL - want) / (1 + (double)fabsl(want)));
    }
  TAP_OK(worst < 1e-14, "robust: normaliser K matches lgammal (series beyond nu = 2000) for "
        "nu 1e-3..1e8, sigma 0.01..250 (rel %.2g)", worst);
  /* nu -> inf: K -> -log(2 pi sigma^2)/2 */
  rc.nu = 1e12; rc.scale = 2.0;
  fly_model m = mk(&rc, 1);
  double X[3] = { 1.0, 1e30, 0.0 }, th = 0, lL;
  m.type->eval(&m, &th, X, 3, NULL, 1, &lL, NULL, work);
  double g = -0.5 * log(2 * 3.14159265358979323846) - log(2.0);
  TAP_OK(fabs(lL - g) < 1e-12, "robust: nu = 1e12: K is the normal's (%.3g off)", lL - g);
  TAP_OK(n_clipped > 20, "robust: neg_hess left out %ld rows with |r| > sqrt nu over the "
         "cases", n_clipped);
  rc.nu = 4; rc.scale = 1;
  m = mk(&rc, 4);
  float big = 3e38f, nan = NAN;
  TAP_OK(m.type->thin->key(&m, &big, 1.0) == FLT_MAX && m.type->thin->key(&m, &nan, 1.0) == FLT_MAX,
        "robust: thin->key saturates at FLT_MAX (read always)");
}

/* ---- softmax only ------------------------------------------------------------------- */

static void softmax_only(void)
{
  fly_rng r;
  fly_rng_seed(&r, 25, 0);
  mcase c2 = *case_of(&fly_model_softmax), c3 = c2, cK[3];
  c2.K = 2;
  c3.K = 3;
  for( int q = 0; q < 3; q++ ){ cK[q] = c2; cK[q].K = (size_t)(q == 0 ? 2 : 2 * q + 1); }

  /* fixed tuning stores psi = c 1: the same bound as psi = 0, bit for bit */
  {
    enum { K = 3, D = 4, N = 50 };
    fly_model m = mk(&c3, D);
    double *X = mk_rows(&m, &r, N, 1.0), th[K * D];
    float x0[N * K] = { 0 }, x1[N * K];
    double a[N], b[N], lL[N], *w = malloc(m.type->work_len(&m, N) * sizeof *w);
    double *m0 = calloc(m.type->n_moments(&m), sizeof *m0);
    double *m1 = calloc(m.type->n_moments(&m), sizeof *m1);
    for( size_t i = 0; i < N * K; i++ ) x1[i] = 1.5f;
    for( int j = 0; j < K * D; j++ ) th[j] = fly_rng_normal(&r);
    m.type->eval(&m, th, X, D + 2, x0, N, lL, a, w);
    m.type->eval(&m, th, X, D + 2, x1, N, lL, b, w);
    m.type->moments_add(&m, X, D + 2, x0, N, m0, w);
    m.type->moments_add(&m, X, D + 2, x1, N, m1, w);
    TAP_OK(memcmp(a, b, sizeof a) == 0 &&
          memcmp(m0, m1, m.type->n_moments(&m) * sizeof *m0) == 0,
          "softmax: psi = 1.5 (fixed tuning) is the bound of psi = 0, bit for bit");
    free(X); free(w); free(m0); free(m1);
  }

  /* centring: log L and log B do not see a shift of every class row, nor
   * does radius (the bound uses the centred rows) */
  for( size_t ki = 0; ki < 3; ki++ ){
    enum { D = 4, N = 200 };
    fly_model m = mk(&cK[ki], D);
    size_t P = P_of(&m), K = m.K;
    double *X = mk_rows(&m, &r, N, 2.0), th[MAXP], ts[MAXP], thm[MAXP];
    double H[D * D], Pm[D * D], l0[N], b0[N], l1[N], b1[N];
    double *w = malloc(m.type->work_len(&m, N) * sizeof *w);
    float *xi = malloc(N * K * sizeof *xi);
    double wl = 0, wr = 0;
    for( int rep = 0; rep < 10; rep++ ){
      rand_metric(&r, D, 1, H, Pm);
      for( size_t j = 0; j < P; j++ ){ th[j] = fly_rng_normal(&r); thm[j] = fly_rng_normal(&r); }
      memcpy(ts, th, sizeof ts);
      add_shift(&m, &r, 20, ts);
      rand_xis(&m, &r, N, xi);
      m.type->eval(&m, th, X, D + 2, xi, N, l0, b0, w);
      m.type->eval(&m, ts, X, D + 2, xi, N, l1, b1, w);
      for( size_t i = 0; i < N; i++ )
        wl = fmax(wl, fmax(fabs(l0[i] - l1[i]), fabs(b0[i] - b1[i])) / (1 + fabs(b0[i])));
      double r0 = m.type->thin->radius(&m, th, thm, H, w), r1 = m.type->thin->radius(&m, ts, thm, H, w);
      wr = fmax(wr, fabs(r0 - r1) / r0);
    }
    TAP_OK(wl < 1e-10 && wr < 1e-12, "softmax K=%zu: log L, log B and radius invariant to a "
          "shift of every class row (rel %.2g, %.2g)", K, wl, wr);
    free(X); free(w); free(xi);
  }
  {
    fly_model m2 = mk(&c2, 2);
    double H2[4] = { 4, 1, 1, 2 }, b2[4] = { 0 }, w[64];
    double s2[4] = { 1 + 3, 2 - 7, 0 + 3, 1 - 7 };
    double rs = m2.type->thin->radius(&m2, s2, b2, H2, w);
    TAP_OK(fabs(rs - 2.0) < 1e-14, "softmax: radius on a 2x2 case, shifted (%.17g)", rs);
  }

  /* Y: the per-class sums of x */
  for( size_t ki = 0; ki < 3; ki++ ){
    enum { D = 4, N = 700 };
    fly_model m = mk(&cK[ki], D);
    size_t K = m.K, nm = m.type->n_moments(&m);
    double *X = mk_rows(&m, &r, N, 2.0), *mom = calloc(nm, sizeof *mom);
    double *w = malloc(m.type->work_len(&m, N) * sizeof *w), yworst = 0;
    float *xi = malloc(N * K * sizeof *xi);
    rand_xis(&m, &r, N, xi);
    m.type->moments_add(&m, X, D + 2, xi, 300, mom, w);
    m.type->moments_add(&m, X + 300 * (D + 2), D + 2, xi + 300 * K, N - 300, mom, w);
    for( size_t k = 0; k < K; k++ )
      for( size_t j = 0; j < D; j++ ){
        double t = 0;
        for( size_t i = 0; i < N; i++ )
          if( X[i * (D + 2) + D + 1] == (double)k ) t += X[i * (D + 2) + j];
        yworst = fmax(yworst, fabs(t - mom[D * D + k * D + j]) / (1 + fabs(t)));
      }
    TAP_OK(yworst < 1e-13, "softmax K=%zu: Y the per-class sums of x (%.2g)", K, yworst);
    free(X); free(mom); free(w); free(xi);
  }

  /* neg_hess against the long-double formula sum_n (diag p - pp') (x) x x',
   * also where a class saturates and the curvature is ~1e-9 (finite
   * differences cannot resolve that, the formula can): each entry relative
   * to the sum of the magnitudes of its terms */
  for( size_t ki = 0; ki < 3; ki++ ){
    enum { D = 3, N = 60 };
    fly_model m = mk(&cK[ki], D);
    size_t K = m.K, P = K * D;
    double *X = mk_rows(&m, &r, N, 1.5), *H = malloc(P * P * sizeof *H);
    double *w = malloc(m.type->work_len(&m, N) * sizeof *w), worst = 0;
    for( int rep = 0; rep < 6; rep++ ){
      double th[MAXP];
      for( size_t j = 0; j < P; j++ ) th[j] = 1.5 * fly_rng_normal(&r);
      if( rep >= 4 ) th[0] = rep == 4 ? 12 : 30;   /* a saturated class */
      memset(H, 0, P * P * sizeof *H);
      m.type->neg_hess(&m, th, X, D + 2, N, H, w);
      for( size_t a = 0; a < P; a++ ) for( size_t cc = 0; cc < P; cc++ ){
        size_t k = a / D, l = cc / D;
        long double t = 0, tabs = 0;
        for( size_t i = 0; i < N; i++ ){
          const double *x = X + i * (D + 2);
          long double s[MAXK], mx = -INFINITY, z = 0;
          for( size_t q = 0; q < K; q++ ){
            s[q] = ldot(th + q * D, x, D);
            if( s[q] > mx ) mx = s[q];
          }
          for( size_t q = 0; q < K; q++ ) z += expl(s[q] - mx);
          long double pk = expl(s[k] - mx) / z, pl = expl(s[l] - mx) / z, qk = 0;
          for( size_t q = 0; q < K; q++ ) if( q != k ) qk += expl(s[q] - mx) / z;
          long double cw = k == l ? pk * qk : -pk * pl;   /* qk = 1 - pk */
          t += cw * x[a % D] * x[cc % D];
          tabs += fabsl(cw * x[a % D] * x[cc % D]);
        }
        worst = fmax(worst, (double)(fabsl((long double)H[a * P + cc] - t) / (tabs + 1e-300L)));
      }
    }
    TAP_OK(worst < 1e-9, "softmax K=%zu: neg_hess entries vs the long-double formula, "
          "saturated classes included (rel %.2g)", K, worst);
    free(X); free(H); free(w);
  }

  /* K = 2: log L_softmax(th) = log L_logistic(th_1 - th_0), and the
   * gradients agree: d/dth_1 = logistic gradient, d/dth_0 = its negative */
  {
    enum { D = 3, N = 500 };
    fly_model ms = mk(&c2, D), ml = ms;
    ml.type = &fly_model_logistic;
    ml.K = 1;
    double *X = mk_rows(&ms, &r, N, 2.0), a[N], b[N], ones[N];
    size_t wl = ms.type->work_len(&ms, N);
    if( ml.type->work_len(&ml, N) > wl ) wl = ml.type->work_len(&ml, N);
    double *w = malloc(wl * sizeof *w), worst = 0, gworst = 0;
    for( size_t i = 0; i < N; i++ ) ones[i] = 1;
    for( int rep = 0; rep < 10; rep++ ){
      double th[2 * D], d[D], gs[2 * D] = { 0 }, gl[D] = { 0 }, ref[2 * D];
      for( int j = 0; j < 2 * D; j++ ) th[j] = (rep < 5 ? 1 : 8) * fly_rng_normal(&r);
      for( int j = 0; j < D; j++ ) d[j] = th[D + j] - th[j];
      ms.type->eval(&ms, th, X, D + 2, NULL, N, a, NULL, w);
      ml.type->eval(&ml, d, X, D + 2, NULL, N, b, NULL, w);
      for( size_t i = 0; i < N; i++ ) worst = fmax(worst, fabs(a[i] - b[i]) / (1 + fabs(b[i])));
      ms.type->grad(&ms, th, X, D + 2, NULL, N, ones, NULL, gs, w);
      ml.type->grad(&ml, d, X, D + 2, NULL, N, ones, NULL, gl, w);
      for( int j = 0; j < D; j++ ){ ref[j] = -gl[j]; ref[D + j] = gl[j]; }
      gworst = fmax(gworst, relerr(gs, ref, 2 * D));
    }
    TAP_OK(worst < 1e-13, "softmax K=2: log L equals logistic at th_1 - th_0 (rel %.2g)", worst);
    TAP_OK(gworst < 1e-12, "softmax K=2: gradients equal +-the logistic gradient (rel %.2g)",
          gworst);
    free(X); free(w);
  }
}

/* A model without a thinning table (model.h: fly_model_thin NULL): no
 * sketch fits it and the bucket index, which the gibbs mode needs, refuses
 * it with FLY_MISUSE rather than reading a member it lacks. */
static void no_thin(void)
{
  fly_model_type bare = fly_model_logistic;
  bare.thin = NULL;
  fly_model m = mk(case_of(&fly_model_logistic), 4);
  m.type = &bare;
  fly_pages_info in;
  fly_buckets b;
  fly_err err;
  memset(&in, 0, sizeof in);
  in.n_rows = 10;
  in.width = 2;
  in.page_rows = 10;
  in.n_pages = 1;
  fly_rc rc = fly_buckets_init(&in, &m, 0, 1, &b, &err);
  fly_buckets_free(&b);
  TAP_OK(!fly_sketch_fits(&m) && rc == FLY_MISUSE && strstr(err.msg, "thinning"),
         "a model without a thinning table: no sketch, the bucket index refuses it (%s)",
         err.msg);
}

int main(void)
{
  for( size_t ci = 0; ci < N_CASES; ci++ ){
    const mcase *c = &cases[ci];
    prop_grad(c, ci);
    prop_prior(c, ci);
    if( c->prior_only ) continue;
    prop_bound(c, ci);
    prop_hess(c, ci);
    prop_collapsed(c, ci);
    /* tables other than declared fail prop_collapsed's check */
    if( !tables_declared(c->type) ) continue;
    if( c->type->full ) prop_full(c, ci);
    if( c->type->coef ){
      prop_coef_rowwise(c, ci);
      prop_scan(c, ci);
    }
    if( c->type->thin ){
      prop_gap(c, ci);
      prop_sketch(c, ci);
      prop_box(c, ci);
    }
    prop_target(c);
  }
  TAP_OK(fly_model_find("nope") == NULL && fly_model_find(NULL) == NULL,
        "fly_model_find of an unknown name, of NULL");
  TAP_OK(fly_p_bright(1e-300) == 1e-300 && fly_p_bright(800) == 1 &&
        fly_p_bright(0) == 0 && fly_p_bright(-1) == 0 &&
        fabs(fly_p_bright(1) - 0.63212055882855767840) < 1e-16,
        "p_bright at 1e-300, 800, 0, -1, 1");
  no_thin();
  if( tables_declared(&fly_model_logistic) ) logistic_only();
  if( tables_declared(&fly_model_robust) ) robust_only();
  if( tables_declared(&fly_model_softmax) ) softmax_only();
  return tap_done();
}
