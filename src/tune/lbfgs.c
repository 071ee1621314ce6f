/*
 * lbfgs.c -- limited-memory BFGS (Nocedal 1980; Liu & Nocedal 1989) with
 * the line search of More & Thuente (1994).
 *
 * Each iteration computes d = -H_k g by the two-loop recursion over the last
 * m pairs (s_i, y_i) = (x_{i+1} - x_i, g_{i+1} - g_i) with H_0 = gamma I,
 * gamma = s'y / y'y of the newest pair, then finds a step along d that
 * satisfies the strong Wolfe conditions
 *     f(x + a d) <= f(x) + c1 a g'd,   |g(x + a d)'d| <= c2 |g'd|.
 * Pairs with s'y <= eps y'y (no positive curvature, possible when the line
 * search stopped early) are skipped, so H_k stays positive definite and d is
 * a descent direction.
 *
 * The line search keeps an interval [stx, sty] known to contain a Wolfe
 * step and safeguards cubic/quadratic/secant trial steps inside it (the
 * algorithm of More & Thuente, written afresh here).  Robustness additions:
 *   - near the minimum f is dominated by rounding (a sum over N rows), so a
 *     step is also accepted by the approximate Wolfe test of Hager & Zhang:
 *     |g'd| cut by c2 and f no larger than f(x) + 1e-11 |f(x)|;
 *   - a trial point where f or g is not finite counts as "too far": the
 *     step is halved towards the best point and capped there;
 *   - if the search ends without a Wolfe point but with a lower f, the
 *     lowest point is accepted;
 *   - if it finds no decrease at all, the memory is dropped and the
 *     iteration retried along steepest descent; a second failure stops with
 *     FLY_NUMERIC (x left at the best point).
 *
 * Invariants: the caller's x holds the accepted point (the best evaluated,
 * up to the rounding slack above), with f and g of that point in the
 * workspace.  Cost per iteration: O(m n) plus the
 * evaluations (usually one).  Workspace: (2m + 6) n + 2m doubles, from _new.
 */
#include "tune/lbfgs.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/mem.h"

struct fly_lbfgs {
  size_t  n, m;
  double *s, *y;        /* m x n correction pairs, circular */
  double *rho, *alpha;  /* m: 1/(s'y), two-loop coefficients */
  double *g;            /* gradient at x */
  double *d;            /* search direction */
  double *x0, *g0;      /* line-search start */
  double *xb, *gb;      /* best point of the current line search */
};

static const char *const stop_str[] = {
  "gradient tolerance reached",
  "no further progress in the objective",
  "iteration limit reached",
  "evaluation limit reached",
  "line search failed",
  "objective not finite",
  "remaining decrease at the objective's rounding level",
};

const char *fly_lbfgs_stop_str(fly_lbfgs_stop s)
{
  if( (int)s < 0 || (size_t)s >= sizeof stop_str / sizeof stop_str[0] )
    return "unknown";
  return stop_str[s];
}

void fly_lbfgs_opts_default(fly_lbfgs_opts *o)
{
  memset(o, 0, sizeof *o);
  o->m = 8;
  o->g_tol = 1e-8;
  o->f_tol = 1e-13;
  o->past = 3;
  o->max_iter = 1000;
  o->max_evals = 5000;
  o->max_ls = 20;
  o->c1 = 1e-4;
  o->c2 = 0.9;
}

fly_rc fly_lbfgs_new(size_t n, size_t m, fly_lbfgs **pl, fly_err *err)
{
  fly_lbfgs *l;
  *pl = NULL;
  if( n == 0 || m == 0 )
    return fly_fail(err, FLY_MISUSE, "L-BFGS needs n >= 1 and m >= 1 "
                    "(got n=%zu, m=%zu)", n, m);
  if( m > SIZE_MAX / n )
    return fly_fail(err, FLY_NOMEM, "L-BFGS memory %zu for %zu variables",
                    m, n);
  l = fly_alloc_array(1, sizeof *l);
  if( !l ) return fly_fail(err, FLY_NOMEM, "L-BFGS workspace");
  l->n = n;
  l->m = m;
  l->s = fly_alloc_array(m * n, sizeof(double));
  l->y = fly_alloc_array(m * n, sizeof(double));
  l->rho = fly_alloc_array(m, sizeof(double));
  l->alpha = fly_alloc_array(m, sizeof(double));
  l->g = fly_alloc_array(6 * n, sizeof(double));
  if( !l->s || !l->y || !l->rho || !l->alpha || !l->g ){
    fly_lbfgs_free(l);
    return fly_fail(err, FLY_NOMEM, "L-BFGS workspace for %zu variables, "
                    "memory %zu", n, m);
  }
  l->d = l->g + n;
  l->x0 = l->d + n;
  l->g0 = l->x0 + n;
  l->xb = l->g0 + n;
  l->gb = l->xb + n;
  *pl = l;
  return FLY_OK;
}

void fly_lbfgs_free(fly_lbfgs *l)
{
  if( !l ) return;
  fly_free(l->s);
  fly_free(l->y);
  fly_free(l->rho);
  fly_free(l->alpha);
  fly_free(l->g);
  fly_free(l);
}

static double dot(const double *a, const double *b, size_t n)
{
  double s = 0;
  for(size_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

static int all_finite(const double *a, size_t n)
{
  for(size_t i = 0; i < n; i++) if( !isfinite(a[i]) ) return 0;
  return 1;
}

/*
 * One safeguarded trial step (More & Thuente 1994, section 4).  [stx, sty]
 * brackets a minimiser once *brackt; stx is the best step so far and
 * (fx, dx) its value and derivative, (fp, dp) those at the trial step stp.
 * Updates the interval and stores the next trial step in *stp.
 */
static void mt_step(double *stx, double *fx, double *dx, double *sty,
                    double *fy, double *dy, double *stp, double fp, double dp,
                    int *brackt, double stpmin, double stpmax)
{
  double sgnd = dp * (*dx / fabs(*dx));
  double theta, s, gamma, p, q, r, stpc, stpq, stpf;
  double t = *stp;

  if( fp > *fx ){
    /* Higher value: a minimiser lies between stx and stp.  Cubic step if
     * it is closer to stx than the quadratic one, else their average. */
    theta = 3 * (*fx - fp) / (t - *stx) + *dx + dp;
    s = fmax(fabs(theta), fmax(fabs(*dx), fabs(dp)));
    gamma = s * sqrt((theta / s) * (theta / s) - (*dx / s) * (dp / s));
    if( t < *stx ) gamma = -gamma;
    p = (gamma - *dx) + theta;
    q = ((gamma - *dx) + gamma) + dp;
    r = p / q;
    stpc = *stx + r * (t - *stx);
    stpq = *stx + ((*dx / ((*fx - fp) / (t - *stx) + *dx)) / 2) * (t - *stx);
    stpf = fabs(stpc - *stx) < fabs(stpq - *stx) ? stpc
                                                 : stpc + (stpq - stpc) / 2;
    *brackt = 1;
  }else if( sgnd < 0 ){
    /* Lower value, derivatives of opposite sign: bracketed.  The cubic
     * step if it is farther from stp than the secant step. */
    theta = 3 * (*fx - fp) / (t - *stx) + *dx + dp;
    s = fmax(fabs(theta), fmax(fabs(*dx), fabs(dp)));
    gamma = s * sqrt((theta / s) * (theta / s) - (*dx / s) * (dp / s));
    if( t > *stx ) gamma = -gamma;
    p = (gamma - dp) + theta;
    q = ((gamma - dp) + gamma) + *dx;
    r = p / q;
    stpc = t + r * (*stx - t);
    stpq = t + (dp / (dp - *dx)) * (*stx - t);
    stpf = fabs(stpc - t) > fabs(stpq - t) ? stpc : stpq;
    *brackt = 1;
  }else if( fabs(dp) < fabs(*dx) ){
    /* Lower value, same sign, derivative shrinking.  The cubic step only
     * if the cubic tends to infinity along the step or its minimiser lies
     * beyond stp; else the secant step. */
    theta = 3 * (*fx - fp) / (t - *stx) + *dx + dp;
    s = fmax(fabs(theta), fmax(fabs(*dx), fabs(dp)));
    gamma = s * sqrt(fmax(0, (theta / s) * (theta / s) - (*dx / s) * (dp / s)));
    if( t > *stx ) gamma = -gamma;
    p = (gamma - dp) + theta;
    q = (gamma + (*dx - dp)) + gamma;
    r = p / q;
    if( r < 0 && gamma != 0 ) stpc = t + r * (*stx - t);
    else stpc = t > *stx ? stpmax : stpmin;
    stpq = t + (dp / (dp - *dx)) * (*stx - t);
    if( *brackt ){
      stpf = fabs(stpc - t) < fabs(stpq - t) ? stpc : stpq;
      if( t > *stx ) stpf = fmin(t + 0.66 * (*sty - t), stpf);
      else stpf = fmax(t + 0.66 * (*sty - t), stpf);
    }else{
      stpf = fabs(stpc - t) > fabs(stpq - t) ? stpc : stpq;
      stpf = fmax(stpmin, fmin(stpmax, stpf));
    }
  }else{
    /* Lower value, same sign, derivative not shrinking: extrapolate to a
     * limit unless bracketed, then the cubic through stp and sty. */
    if( *brackt ){
      theta = 3 * (fp - *fy) / (*sty - t) + *dy + dp;
      s = fmax(fabs(theta), fmax(fabs(*dy), fabs(dp)));
      gamma = s * sqrt((theta / s) * (theta / s) - (*dy / s) * (dp / s));
      if( t > *sty ) gamma = -gamma;
      p = (gamma - dp) + theta;
      q = ((gamma - dp) + gamma) + *dy;
      r = p / q;
      stpf = t + r * (*sty - t);
    }else{
      stpf = t > *stx ? stpmax : stpmin;
    }
  }

  if( fp > *fx ){
    *sty = t; *fy = fp; *dy = dp;
  }else{
    if( sgnd < 0 ){ *sty = *stx; *fy = *fx; *dy = *dx; }
    *stx = t; *fx = fp; *dx = dp;
  }
  *stp = stpf;
}

/* Relative change of f treated as rounding noise by the approximate Wolfe
 * test: a sum of N terms carries relative errors up to about N eps. */
#define APPROX_WOLFE 1e-11

typedef enum { LS_WOLFE, LS_DECREASE, LS_FAIL, LS_NONFINITE } ls_out;

/*
 * Search along l->d from x (f, g = l->g) with first trial step stp.  On
 * return x, *f and l->g hold the accepted point (LS_WOLFE, LS_DECREASE) or
 * the start again (LS_FAIL, LS_NONFINITE).  *rc is set when the callback
 * fails (then the return value is LS_FAIL and x is the start).
 */
static ls_out line_search(fly_lbfgs *l, fly_lbfgs_fn fg, void *user,
                          double *x, double *f, double stp,
                          const fly_lbfgs_opts *o, fly_lbfgs_result *r,
                          fly_rc *rc, fly_err *err)
{
  const size_t n = l->n;
  const double stpmin = 1e-20, stpmax = 1e20, xtol = 1e-15;
  const double finit = *f, ginit = dot(l->g, l->d, n), gtest = o->c1 * ginit;
  double stx = 0, fx = finit, gx = ginit, sty = 0, fy = finit, gy = ginit;
  double stmin = 0, stmax = stp + 4 * stp;
  double width = stpmax - stpmin, width1 = 2 * width;
  double fb = finit, cap = INFINITY, fp;
  int brackt = 0, stage = 1, nonfinite = 0;  /* last trial not finite */

  *rc = FLY_OK;
  memcpy(l->x0, x, n * sizeof *x);
  memcpy(l->g0, l->g, n * sizeof *x);

  for(int it = 0; it < o->max_ls && r->evals < o->max_evals; it++){
    for(size_t i = 0; i < n; i++) x[i] = l->x0[i] + stp * l->d[i];
    *rc = fg(user, x, &fp, l->g, err);
    r->evals++;
    if( *rc ) break;
    if( !isfinite(fp) || !all_finite(l->g, n) ){
      /* Too far: halve towards the best step and never go back beyond. */
      nonfinite = 1;
      cap = stp;
      stp = stx + 0.5 * (stp - stx);
      if( stp - stx <= 1e-12 * fmax(stx, 1e-8) ) break;
      continue;
    }
    nonfinite = 0;
    double dp = dot(l->g, l->d, n);
    if( fp < fb ){
      fb = fp;
      memcpy(l->xb, x, n * sizeof *x);
      memcpy(l->gb, l->g, n * sizeof *x);
    }
    double ftest = finit + stp * gtest;
    if( stage == 1 && fp <= ftest && dp >= 0 ) stage = 2;
    /* Strong Wolfe, or its approximate form (Hager & Zhang 2005) for when
     * f is at its rounding level: no significant increase and the slope
     * cut by c2 (which on a near-quadratic implies a decrease). */
    if( fabs(dp) <= o->c2 * -ginit
        && (fp <= ftest || fp <= finit + APPROX_WOLFE * fabs(finit)) ){
      *f = fp;
      return LS_WOLFE;
    }
    if( (brackt && (stp <= stmin || stp >= stmax))
        || (brackt && stmax - stmin <= xtol * stmax)
        || (stp == stpmax && fp <= ftest && dp <= gtest)
        || (stp == stpmin && (fp > ftest || dp >= gtest)) )
      break;  /* no Wolfe point reachable: fall back to the best point */

    if( stage == 1 && fp <= fx && fp > ftest ){
      /* Work on psi(a) = f(a) - f(0) - c1 a f'(0) until a decrease with a
       * non-negative derivative shows up. */
      double fm = fp - stp * gtest, fxm = fx - stx * gtest, fym = fy - sty * gtest;
      double gm = dp - gtest, gxm = gx - gtest, gym = gy - gtest;
      mt_step(&stx, &fxm, &gxm, &sty, &fym, &gym, &stp, fm, gm, &brackt,
              stmin, stmax);
      fx = fxm + stx * gtest; fy = fym + sty * gtest;
      gx = gxm + gtest;       gy = gym + gtest;
    }else{
      mt_step(&stx, &fx, &gx, &sty, &fy, &gy, &stp, fp, dp, &brackt,
              stmin, stmax);
    }
    if( brackt ){
      if( fabs(sty - stx) >= 0.66 * width1 ) stp = stx + 0.5 * (sty - stx);
      width1 = width;
      width = fabs(sty - stx);
      stmin = fmin(stx, sty);
      stmax = fmax(stx, sty);
    }else{
      stmin = stp + 1.1 * (stp - stx);
      stmax = stp + 4.0 * (stp - stx);
    }
    stp = fmax(stpmin, fmin(stpmax, stp));
    if( stp >= cap ) stp = stx + 0.5 * (cap - stx);
    if( (brackt && (stp <= stmin || stp >= stmax))
        || (brackt && stmax - stmin <= xtol * stmax) )
      stp = stx;
  }

  if( *rc == FLY_OK && fb < finit ){
    memcpy(x, l->xb, n * sizeof *x);
    memcpy(l->g, l->gb, n * sizeof *x);
    *f = fb;
    return LS_DECREASE;
  }
  memcpy(x, l->x0, n * sizeof *x);
  memcpy(l->g, l->g0, n * sizeof *x);
  *f = finit;
  if( *rc ) return LS_FAIL;
  return nonfinite ? LS_NONFINITE : LS_FAIL;
}

/* d = -H g by the two-loop recursion over the k newest pairs ending at
 * slot `head` - 1 (circular). */
static void direction(fly_lbfgs *l, size_t k, size_t head)
{
  const size_t n = l->n, m = l->m;
  double *d = l->d;
  for(size_t i = 0; i < n; i++) d[i] = -l->g[i];
  for(size_t j = 0; j < k; j++){
    size_t t = (head + m - 1 - j) % m;
    double a = l->rho[t] * dot(l->s + t * n, d, n);
    l->alpha[t] = a;
    const double *yt = l->y + t * n;
    for(size_t i = 0; i < n; i++) d[i] -= a * yt[i];
  }
  if( k ){
    size_t t = (head + m - 1) % m;
    const double *yt = l->y + t * n;
    double gamma = 1 / (l->rho[t] * dot(yt, yt, n));
    for(size_t i = 0; i < n; i++) d[i] *= gamma;
  }
  for(size_t j = k; j-- > 0;){
    size_t t = (head + m - 1 - j) % m;
    double b = l->rho[t] * dot(l->y + t * n, d, n);
    const double *st = l->s + t * n;
    for(size_t i = 0; i < n; i++) d[i] += (l->alpha[t] - b) * st[i];
  }
}

fly_rc fly_lbfgs_run(fly_lbfgs *l, fly_lbfgs_fn fg, void *user, double *x,
                     const fly_lbfgs_opts *o, fly_lbfgs_result *r,
                     fly_err *err)
{
  fly_lbfgs_opts def;
  const size_t n = l->n;
  double f, gscale, fhist[16], gamma = 0;  /* gamma: s'y/y'y, last pair */
  size_t k = 0, head = 0, m;
  int steepest = 1, past;
  fly_rc rc;

  if( !o ){
    fly_lbfgs_opts_default(&def);
    o = &def;
  }
  memset(r, 0, sizeof *r);
  m = o->m < l->m ? o->m : l->m;
  if( m == 0 ) m = l->m;
  past = o->past < 1 ? 1 : o->past > 15 ? 15 : o->past;

  rc = fg(user, x, &f, l->g, err);
  r->evals = 1;
  if( rc ) return rc;
  r->f = f;
  r->g_norm = r->g_norm0 = sqrt(dot(l->g, l->g, n));
  if( !isfinite(f) || !isfinite(r->g_norm) ){
    r->stop = FLY_LBFGS_NONFINITE;
    return fly_fail(err, FLY_NUMERIC, "objective not finite at the starting "
                    "point (f = %g, |grad| = %g)", f, r->g_norm);
  }
  gscale = fmax(1, r->g_norm0);
  fhist[0] = f;
  if( r->g_norm <= o->g_tol * gscale ){
    r->stop = FLY_LBFGS_GRAD;
    return FLY_OK;
  }

  for(;;){
    double stp;
    if( r->iters >= o->max_iter ){ r->stop = FLY_LBFGS_MAXITER; break; }
    if( r->evals >= o->max_evals ){ r->stop = FLY_LBFGS_MAXEVAL; break; }

    if( steepest ){
      for(size_t i = 0; i < n; i++) l->d[i] = -l->g[i];
      stp = gamma > 0 ? gamma : 1 / r->g_norm;  /* restart: keep the scale */
    }else{
      direction(l, k, head);
      stp = 1;
      if( !(dot(l->d, l->g, n) < 0) ){  /* cannot happen with s'y > 0 ... */
        k = 0;                          /* ... unless rounding: start over */
        steepest = 1;
        continue;
      }
      /* With curvature pairs, -g'd = g'H^-1 g approximates twice the
       * decrease left to the minimum (the Newton decrement). */
      if( o->dec_tol > 0 && -dot(l->d, l->g, n) <= o->dec_tol * fmax(1, fabs(f)) ){
        r->stop = FLY_LBFGS_DECREMENT;
        break;
      }
    }

    ls_out ls = line_search(l, fg, user, x, &f, stp, o, r, &rc, err);
    if( rc ) return rc;
    if( ls == LS_FAIL || ls == LS_NONFINITE ){
      if( !steepest ){  /* retry along steepest descent, memory dropped */
        k = 0;
        steepest = 1;
        r->restarts++;
        continue;
      }
      r->f = f;
      r->g_norm = sqrt(dot(l->g, l->g, n));
      if( r->evals >= o->max_evals ){ r->stop = FLY_LBFGS_MAXEVAL; break; }
      if( ls == LS_NONFINITE ){
        r->stop = FLY_LBFGS_NONFINITE;
        return fly_fail(err, FLY_NUMERIC, "objective not finite near every "
                        "step tried from iteration %d (f = %.17g, |grad| = %g)",
                        r->iters, f, r->g_norm);
      }
      r->stop = FLY_LBFGS_LINESEARCH;
      return fly_fail(err, FLY_NUMERIC, "line search found no decrease at "
                      "iteration %d, even along steepest descent (f = %.17g, "
                      "|grad| = %g, started at %g)", r->iters, f, r->g_norm,
                      r->g_norm0);
    }

    /* Accepted: store the pair if it has positive curvature. */
    r->iters++;
    double *s = l->s + head * n, *y = l->y + head * n;
    for(size_t i = 0; i < n; i++){
      s[i] = x[i] - l->x0[i];
      y[i] = l->g[i] - l->g0[i];
    }
    double sy = dot(s, y, n), yy = dot(y, y, n);
    if( sy > DBL_EPSILON * yy && yy > 0 ){
      l->rho[head] = 1 / sy;
      gamma = sy / yy;
      head = (head + 1) % m;
      if( k < m ) k++;
      steepest = 0;
    }else if( k == 0 ){
      steepest = 1;
    }

    r->f = f;
    r->g_norm = sqrt(dot(l->g, l->g, n));
    if( o->progress ) o->progress(o->progress_user, r);
    if( r->g_norm <= o->g_tol * gscale ){ r->stop = FLY_LBFGS_GRAD; break; }
    fhist[r->iters % 16] = f;
    if( o->f_tol > 0 && r->iters >= past ){
      double fp = fhist[(r->iters - past) % 16];
      if( fp - f <= o->f_tol * fmax(1, fabs(f)) ){
        r->stop = FLY_LBFGS_FCHANGE;
        break;
      }
    }
  }
  return FLY_OK;
}
