/*
 * psis.c -- Pareto-smoothed importance sampling of one row (psis.h).
 *
 * The steps follow loo 2.5.1's do_psis_i, psis_smooth_tail and gpdfit, so
 * the weights and k-hat agree with R's to rounding:
 *  1. shift the ratios by their maximum (so the largest is 0);
 *  2. with M = tail_len >= 5: take the M largest as the tail, in the order
 *     of a stable ascending sort, and the value below them as the cutoff
 *     (a selection, then a sort of the tail only); fit a generalized
 *     Pareto distribution to exp(tail) - exp(cutoff) by the profile
 *     posterior of Zhang & Stephens (2009), averaged over a grid of
 *     30 + floor(sqrt(M)) values of theta = -k / sigma, with the weakly
 *     informative prior on k (k n/(n+10) + 5/(n+10));
 *  3. replace the tail by log(cutoff's exp + the fitted quantiles at
 *     (j - 0.5) / M), in the tail's sorted order (when k-hat is finite);
 *  4. truncate at 0 (the largest raw ratio) and shift back.
 * Means are taken as R's mean() does (a long double sum, then a second
 * pass correcting it), and log-sum-exps over a long double sum.  Cost per
 * row: O(S) expected for the selection, O(M log M) for the tail's sort and
 * O(M sqrt(M)) for the fit.
 *
 * Workspace: S (value, index) pairs for the selection and the grid of theta,
 * 30 + sqrt(S) values twice.  Nothing is allocated per row.
 */
#include <math.h>
#include <stdlib.h>

#include "loo/psis.h"
#include "util/mem.h"

typedef struct pair { double v; size_t i; } pair;

struct fly_psis_ws {
  size_t S;
  pair  *ord;      /* S pairs: the sort */
  double *x;       /* S: the tail's exceedances, then its smoothed values */
  double *th, *l;  /* grid of theta and its profile log-likelihoods */
  double *lw;      /* S: fly_psis_loo_row's weights */
  double *t;       /* S: fly_psis_loo_row's ll + lw */
};

fly_rc fly_psis_ws_new(size_t S, fly_psis_ws **pw, fly_err *err)
{
  *pw = NULL;
  if( S < 2 ) return fly_fail(err, FLY_MISUSE, "PSIS needs at least 2 draws, not %zu", S);
  fly_psis_ws *w = fly_alloc_array(1, sizeof *w);
  size_t G = 30 + (size_t)sqrt((double)S) + 1;
  if( w ){
    w->S = S;
    w->ord = fly_alloc_array(S, sizeof *w->ord);
    w->x = fly_alloc_array(S, sizeof(double));
    w->th = fly_alloc_array(G, sizeof(double));
    w->l = fly_alloc_array(G, sizeof(double));
    w->lw = fly_alloc_array(S, sizeof(double));
    w->t = fly_alloc_array(S, sizeof(double));
  }
  if( !w || !w->ord || !w->x || !w->th || !w->l || !w->lw || !w->t ){
    fly_psis_ws_free(w);
    return fly_fail(err, FLY_NOMEM, "PSIS workspace of %zu draws", S);
  }
  *pw = w;
  return FLY_OK;
}

void fly_psis_ws_free(fly_psis_ws *w)
{
  if( !w ) return;
  fly_free(w->ord);
  fly_free(w->x);
  fly_free(w->th);
  fly_free(w->l);
  fly_free(w->lw);
  fly_free(w->t);
  fly_free(w);
}

size_t fly_psis_tail_len(size_t S, double r_eff)
{
  double a = 0.2 * (double)S, b = 3.0 * sqrt((double)S / r_eff);
  return (size_t)ceil(a < b ? a : b);
}

double fly_psis_logsumexp(const double *x, size_t n)
{
  double mx = -INFINITY;
  for(size_t i = 0; i < n; i++) if( x[i] > mx ) mx = x[i];
  if( !isfinite(mx) ) return mx;
  long double s = 0;
  for(size_t i = 0; i < n; i++) s += exp(x[i] - mx);
  return mx + (double)logl(s);
}

/* mean(f(x)) as R's mean.default: a long double sum over n, then the mean
 * of the residuals added (values are given, f applied by the caller). */
static double r_mean(const double *v, size_t n)
{
  long double s = 0;
  for(size_t i = 0; i < n; i++) s += v[i];
  s /= (long double)n;
  if( isfinite((double)s) ){
    long double t = 0;
    for(size_t i = 0; i < n; i++) t += v[i] - s;
    s += t / (long double)n;
  }
  return (double)s;
}

/* The order of a stable ascending sort (R's radix sort): by value, ties
 * by index, so every selection below agrees with a full sort. */
static int before(const pair *p, const pair *q)
{
  return p->v < q->v || (p->v == q->v && p->i < q->i);
}

static int by_value(const void *a, const void *b)
{
  const pair *p = a, *q = b;
  return before(p, q) ? -1 : before(q, p);
}

static void swap(pair *a, pair *b) { pair t = *a; *a = *b; *b = t; }

/* Rearrange o[0..n) so that o[k] is the pair a full sort puts there, those
 * before it precede it and those after follow (Hoare's quickselect with a
 * median-of-three pivot: O(n) expected). */
static void select_kth(pair *o, size_t n, size_t k)
{
  size_t lo = 0, hi = n - 1;
  while( hi > lo ){
    size_t mid = lo + (hi - lo) / 2;
    if( before(&o[mid], &o[lo]) ) swap(&o[mid], &o[lo]);
    if( before(&o[hi], &o[lo]) ) swap(&o[hi], &o[lo]);
    if( before(&o[hi], &o[mid]) ) swap(&o[hi], &o[mid]);
    pair pv = o[mid];
    size_t i = lo, j = hi;
    for(;;){                        /* pairs are distinct (their indices) */
      while( before(&o[i], &pv) ) i++;
      while( before(&pv, &o[j]) ) j--;
      if( i >= j ) break;
      swap(&o[i++], &o[j--]);
    }
    /* o[lo..j] <= pv <= o[j+1..hi] */
    if( k <= j ) hi = j;
    else lo = j + 1;
  }
}

/* mean(log1p(a * x[0..n))) with the residual pass of r_mean; y: n doubles. */
static double mean_log1p(double a, const double *x, size_t n, double *y)
{
  for(size_t i = 0; i < n; i++) y[i] = log1p(a * x[i]);
  return r_mean(y, n);
}

/* gpdfit(x, sort_x = FALSE) of the n ascending exceedances x: k-hat (+inf
 * for NaN) and sigma.  y: n doubles of scratch. */
static void gpdfit(fly_psis_ws *w, const double *x, size_t n, double *y,
                   double *k, double *sigma)
{
  const double prior = 3;
  size_t M = 30 + (size_t)floor(sqrt((double)n));
  double xstar = x[(size_t)floor((double)n / 4 + 0.5) - 1];
  for(size_t j = 0; j < M; j++){
    double th = 1 / x[n - 1] + (1 - sqrt((double)M / ((double)j + 0.5))) / prior / xstar;
    w->th[j] = th;
    double a = -th, kk = mean_log1p(a, x, n, y);
    w->l[j] = (double)n * (log(a / kk) - kk - 1);
  }
  double lse = fly_psis_logsumexp(w->l, M);
  long double th_hat = 0;
  for(size_t j = 0; j < M; j++) th_hat += (long double)w->th[j] * expl((long double)(w->l[j] - lse));
  double thh = (double)th_hat;
  double kh = mean_log1p(-thh, x, n, y);
  *sigma = -kh / thh;
  double na = (double)n + 10;
  kh = kh * (double)n / na + 10 * 0.5 / na;
  *k = isnan(kh) ? INFINITY : kh;
}

double fly_psis_smooth(fly_psis_ws *w, double *lw, size_t S, double r_eff)
{
  size_t M = fly_psis_tail_len(S, r_eff);
  double mx = -INFINITY, khat = INFINITY;
  for(size_t s = 0; s < S; s++) if( lw[s] > mx ) mx = lw[s];
  for(size_t s = 0; s < S; s++) lw[s] -= mx;
  if( M >= 5 && M < S ){
    /* only the cutoff and the tail above it need their sorted places */
    for(size_t s = 0; s < S; s++){ w->ord[s].v = lw[s]; w->ord[s].i = s; }
    select_kth(w->ord, S, S - M - 1);
    qsort(w->ord + (S - M), M, sizeof *w->ord, by_value);
    const pair *tail = w->ord + (S - M);
    if( fabs(tail[M - 1].v - tail[0].v) >= 2.220446049250313e-16 / 100 ){
      double cutoff = w->ord[S - M - 1].v, ec = exp(cutoff), sigma;
      double *x = w->x, *y = w->lw == lw ? w->t : w->lw;
      for(size_t j = 0; j < M; j++) x[j] = exp(tail[j].v) - ec;
      gpdfit(w, x, M, y, &khat, &sigma);
      if( isfinite(khat) ){
        for(size_t j = 0; j < M; j++){
          double p = ((double)j + 0.5) / (double)M;
          double q = isnan(sigma) || sigma <= 0 ? NAN
                   : sigma * expm1(-khat * log1p(-p)) / khat;
          lw[tail[j].i] = log(q + ec);
        }
      }
    }
  }
  for(size_t s = 0; s < S; s++){
    if( lw[s] > 0 ) lw[s] = 0;
    lw[s] += mx;
  }
  return khat;
}

void fly_psis_loo_row(fly_psis_ws *w, const double *ll, size_t S, double r_eff,
                      fly_psis_row *out)
{
  double *lw = w->lw, *t = w->t;
  for(size_t s = 0; s < S; s++) lw[s] = -ll[s];
  out->pareto_k = fly_psis_smooth(w, lw, S, r_eff);
  for(size_t s = 0; s < S; s++) t[s] = ll[s] + lw[s];
  out->elpd_loo = fly_psis_logsumexp(t, S) - fly_psis_logsumexp(lw, S);
  out->lpd = fly_psis_logsumexp(ll, S) - log((double)S);
  out->p_loo = out->lpd - out->elpd_loo;
}
