/*
 * score.c -- type-7 quantiles by selection, t-mixture quantiles and the
 * exact AUC (score.h).
 *
 * Selection is Hoare partitioning around a median of three, iterated on the
 * side holding the wanted rank: expected 2-3 n comparisons.  The second
 * order statistic of an interpolated quantile is the minimum of the part
 * above the first.
 */
#include <math.h>
#include <stdlib.h>

#include "predict/score.h"
#include "stats/stats.h"

static void swap(double *a, double *b)
{
  double t = *a;
  *a = *b;
  *b = t;
}

/* Rearrange x[0..n) so that x[k] is the k-th smallest, those before it
 * <= it and those after >= it. */
static void select_k(double *x, size_t n, size_t k)
{
  size_t lo = 0, hi = n - 1;
  while( hi > lo ){
    size_t mid = lo + (hi - lo) / 2;
    if( x[mid] < x[lo] ) swap(&x[mid], &x[lo]);
    if( x[hi] < x[lo] ) swap(&x[hi], &x[lo]);
    if( x[hi] < x[mid] ) swap(&x[hi], &x[mid]);
    double piv = x[mid];
    size_t i = lo, j = hi;
    while( i <= j ){
      while( x[i] < piv ) i++;
      while( x[j] > piv ) j--;
      if( i <= j ){
        swap(&x[i], &x[j]);
        i++;
        if( j == 0 ) break;
        j--;
      }
    }
    /* now x[lo..j] <= piv <= x[i..hi], and j < i */
    if( k <= j ) hi = j;
    else if( k >= i ) lo = i;
    else return;
  }
}

static double min_of(const double *x, size_t n)
{
  double m = x[0];
  for(size_t i = 1; i < n; i++) if( x[i] < m ) m = x[i];
  return m;
}

/* x(lo) and the interpolation with x(lo+1), x already arranged so that
 * x[lo-1] is the lo-th order statistic (1-based lo) */
static double interp(const double *x, size_t n, double index, size_t lo)
{
  double q = x[lo - 1], h = index - (double)lo;
  if( h > 0 && lo < n ){
    double xh = min_of(x + lo, n - lo);
    if( xh != q ) q = (1 - h) * q + h * xh;
  }
  return q;
}

void fly_predict_quantile2(double *x, size_t n, double p_lo, double p_hi,
                           double *q_lo, double *q_hi)
{
  double ia = 1 + (double)(n - 1) * p_lo, ib = 1 + (double)(n - 1) * p_hi;
  size_t la = (size_t)floor(ia), lb = (size_t)floor(ib);
  select_k(x, n, la - 1);
  *q_lo = interp(x, n, ia, la);
  if( lb > la ) select_k(x + la, n - la, lb - la - 1);
  *q_hi = interp(x, n, ib, lb);
}

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double fly_predict_auc(double *pos, size_t n1, double *neg, size_t n0)
{
  if( n1 == 0 || n0 == 0 ) return NAN;
  qsort(pos, n1, sizeof *pos, cmp_dbl);
  qsort(neg, n0, sizeof *neg, cmp_dbl);
  /* for each positive: negatives below it, and half those equal */
  long double u = 0;
  size_t below = 0, upto = 0;     /* neg[0..below) < v, neg[0..upto) <= v */
  for(size_t i = 0; i < n1; i++){
    double v = pos[i];
    while( below < n0 && neg[below] < v ) below++;
    if( upto < below ) upto = below;
    while( upto < n0 && neg[upto] <= v ) upto++;
    u += (long double)below + 0.5L * (long double)(upto - below);
  }
  return (double)(u / ((long double)n1 * (long double)n0));
}

void fly_tmix_init(fly_tmix *t, double nu, double sigma)
{
  t->nu = nu;
  t->sigma = sigma;
  t->lbeta = fly_stats_lbeta(nu / 2, 0.5);
  t->ldens = -t->lbeta - 0.5 * log(nu);
}

double fly_tmix_logpdf(const fly_tmix *t, double y, double mu)
{
  double r = (y - mu) / t->sigma;
  return t->ldens - log(t->sigma) - (t->nu + 1) / 2 * log1p(r * r / t->nu);
}

/* the standard t density */
static double dt(const fly_tmix *t, double x)
{
  return exp(t->ldens - (t->nu + 1) / 2 * log1p(x * x / t->nu));
}

/* Root of f(x) = target in [lo, hi] (f increasing, f(lo) <= target <=
 * f(hi)) by Newton from x, safeguarded by bisection; f returns F and its
 * derivative in *d. */
typedef double (*cdf_fn)(const void *u, double x, double *d);

static double solve(cdf_fn f, const void *u, double target, double lo, double hi,
                    double x, double tol)
{
  for(int it = 0; it < 200 && hi - lo > tol; it++){
    double d, F = f(u, x, &d) - target;
    if( F == 0 ) return x;
    if( F < 0 ) lo = x; else hi = x;
    double nx = d > 0 ? x - F / d : NAN;
    if( !(nx > lo && nx < hi) ) nx = lo + (hi - lo) / 2;
    if( fabs(nx - x) <= tol ) return nx;
    x = nx;
  }
  return x;
}

static double std_cdf(const void *u, double x, double *d)
{
  const fly_tmix *t = u;
  *d = dt(t, x);
  return fly_stats_pt(x, t->nu, t->lbeta);
}

double fly_tmix_qt(const fly_tmix *t, double p)
{
  double lo = -1, hi = 1;
  while( fly_stats_pt(lo, t->nu, t->lbeta) > p && lo > -1e300 ) lo *= 2;
  while( fly_stats_pt(hi, t->nu, t->lbeta) < p && hi < 1e300 ) hi *= 2;
  return solve(std_cdf, t, p, lo, hi, (lo + hi) / 2, 1e-15 * fmax(1, fmin(-lo, hi)));
}

typedef struct mix { const fly_tmix *t; const double *mu; size_t S; } mix;

static double mix_cdf(const void *u, double x, double *d)
{
  const mix *m = u;
  const fly_tmix *t = m->t;
  double F = 0, D = 0;
  for(size_t s = 0; s < m->S; s++){
    double z = (x - m->mu[s]) / t->sigma;
    F += fly_stats_pt(z, t->nu, t->lbeta);
    D += dt(t, z);
  }
  *d = D / ((double)m->S * t->sigma);
  return F / (double)m->S;
}

double fly_tmix_quantile(const fly_tmix *t, const double *mu, size_t S, double p,
                         double q)
{
  double lo = mu[0], hi = mu[0], sum = 0;
  for(size_t s = 0; s < S; s++){
    if( mu[s] < lo ) lo = mu[s];
    if( mu[s] > hi ) hi = mu[s];
    sum += mu[s];
  }
  mix m = { t, mu, S };
  double x0 = sum / (double)S + t->sigma * q;
  lo += t->sigma * q;
  hi += t->sigma * q;
  if( !(hi > lo) ) return lo;
  if( !(x0 > lo && x0 < hi) ) x0 = lo + (hi - lo) / 2;
  return solve(mix_cdf, &m, p, lo, hi, x0, 1e-14 * (t->sigma + fabs(x0)));
}
