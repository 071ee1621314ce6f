/*
 * score.c -- type-7 quantiles by selection, t-mixture quantiles and the
 * exact AUC (score.h).
 *
 * A type-7 quantile needs two adjacent order statistics.  They are found
 * by a histogram of NB bins over the values' range (three branch-light
 * passes and a sort of the few values in the wanted bins); when those
 * bins hold too many values (ties, a spike), by a bounded heap of the
 * values on the quantile's nearer side (n comparisons and O(m log(n/m)
 * log m) heap steps for random order, m = min(r, n - r)).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "predict/score.h"
#include "stats/stats.h"
#include "util/mem.h"

static int cmp_dbl(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Restore the max-heap property below node i of h[0..m). */
static void sift_down(double *h, size_t m, size_t i)
{
  double v = h[i];
  for(;;){
    size_t c = 2 * i + 1;
    if( c >= m ) break;
    if( c + 1 < m && h[c + 1] > h[c] ) c++;
    if( !(h[c] > v) ) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = v;
}

/* The order statistics x(r) and x(r+1) of x[0..n) (1-based, 1 <= r <= n;
 * *b = *a when r == n): a max-heap of the r+1 smallest values, or of the
 * negated n-r+1 largest, whichever is smaller (at most n/2 + 1 values in
 * h); its top and the larger child of the top are the pair. */
static void order_pair(const double *x, size_t n, size_t r, double *h, double *a, double *b)
{
  int low = r <= n - r;
  size_t m = low ? r + 1 : n - r + 1;
  double sg = low ? 1 : -1;
  for(size_t i = 0; i < m; i++) h[i] = sg * x[i];
  for(size_t i = m / 2; i-- > 0; ) sift_down(h, m, i);
  for(size_t i = m; i < n; i++){
    double v = sg * x[i];
    if( v < h[0] ){
      h[0] = v;
      sift_down(h, m, 0);
    }
  }
  double top = h[0], second = m >= 3 ? (h[1] > h[2] ? h[1] : h[2]) : m == 2 ? h[1] : h[0];
  if( low ){ *a = second; *b = top; }
  else{ *a = -top; *b = -second; }
}

#define NB 512          /* histogram bins */
#define GMAX 256        /* values gathered from the wanted bins, at most */

struct fly_qws {
  size_t    n;
  double   *heap;       /* n/2 + 2 */
  uint16_t *bin;        /* n */
  uint32_t  count[NB];
  double    g[GMAX];
};

fly_rc fly_qws_new(size_t n, fly_qws **pw, fly_err *err)
{
  fly_qws *w = fly_alloc_array(1, sizeof *w);
  *pw = NULL;
  if( !w ) return fly_fail(err, FLY_NOMEM, "quantile workspace");
  w->n = n;
  w->heap = fly_alloc_array(n / 2 + 2, sizeof *w->heap);
  w->bin = fly_alloc_array(n ? n : 1, sizeof *w->bin);
  if( !w->heap || !w->bin ){
    fly_qws_free(w);
    return fly_fail(err, FLY_NOMEM, "quantile workspace of %zu values", n);
  }
  *pw = w;
  return FLY_OK;
}

void fly_qws_free(fly_qws *w)
{
  if( !w ) return;
  fly_free(w->heap);
  fly_free(w->bin);
  fly_free(w);
}

/* Order statistics x(r[j]) (1-based, each <= n) for j < 4, into o[j], by
 * a histogram over [min, max]: a value's bin floor((x - min) * NB/(max -
 * min)) is monotone in x (IEEE subtraction and multiplication are), so the
 * wanted ranks fall in known bins whose values, gathered and sorted, hold
 * them.  Returns 0, or -1 when those bins hold more than GMAX values (ties
 * or a spike), the caller then using the heap. */
static int hist_ranks(fly_qws *w, const double *x, size_t n, const size_t *r, double *o)
{
  double mn = x[0], mx = x[0];
  for(size_t i = 1; i < n; i++){
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  if( !(mx > mn) ){
    for(int j = 0; j < 4; j++) o[j] = mn;
    return 0;
  }
  double sc = (double)NB / (mx - mn);
  memset(w->count, 0, sizeof w->count);
  for(size_t i = 0; i < n; i++){
    size_t b = (size_t)((x[i] - mn) * sc);
    b = b < NB ? b : NB - 1;
    w->bin[i] = (uint16_t)b;
    w->count[b]++;
  }
  /* the bin of each rank, and the values below it */
  size_t wb[4], below[4];
  for(int j = 0; j < 4; j++){
    size_t c = 0, b = 0;
    while( c + w->count[b] < r[j] ) c += w->count[b++];
    wb[j] = b;
    below[j] = c;
  }
  size_t ng = 0, first = wb[0];
  for(int j = 1; j < 4; j++) if( wb[j] < first ) first = wb[j];
  for(size_t i = 0; i < n; i++){
    size_t b = w->bin[i];
    if( b == wb[0] || b == wb[1] || b == wb[2] || b == wb[3] ){
      if( ng == GMAX ) return -1;
      w->g[ng++] = x[i];
    }
  }
  qsort(w->g, ng, sizeof *w->g, cmp_dbl);
  /* the gathered bins in order: rank r in bin b sits after the gathered
   * values of the wanted bins below b */
  for(int j = 0; j < 4; j++){
    size_t before = 0;
    for(size_t b = first; b < wb[j]; b++)
      if( b == wb[0] || b == wb[1] || b == wb[2] || b == wb[3] ) before += w->count[b];
    o[j] = w->g[before + (r[j] - below[j] - 1)];
  }
  return 0;
}

void fly_predict_quantile2(fly_qws *w, const double *x, size_t n, double p_lo,
                           double p_hi, double *q_lo, double *q_hi)
{
  double idx[2] = { 1 + (double)(n - 1) * p_lo, 1 + (double)(n - 1) * p_hi };
  size_t lo[2], r[4];
  double o[4];
  for(int k = 0; k < 2; k++){
    lo[k] = (size_t)floor(idx[k]);
    r[2 * k] = lo[k];
    r[2 * k + 1] = lo[k] < n ? lo[k] + 1 : lo[k];
  }
  if( hist_ranks(w, x, n, r, o) )
    for(int k = 0; k < 2; k++) order_pair(x, n, lo[k], w->heap, &o[2 * k], &o[2 * k + 1]);
  double *q[2] = { q_lo, q_hi };
  for(int k = 0; k < 2; k++){
    double v = o[2 * k], g = idx[k] - (double)lo[k];
    if( g > 0 && lo[k] < n && o[2 * k + 1] != v ) v = (1 - g) * v + g * o[2 * k + 1];
    *q[k] = v;
  }
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
  t->dens = exp(t->ldens);
  t->inu = nu == floor(nu) && nu <= 64 ? (int)nu : 0;
}

double fly_tmix_logpdf(const fly_tmix *t, double y, double mu)
{
  double r = (y - mu) / t->sigma;
  return t->ldens - log(t->sigma) - (t->nu + 1) / 2 * log1p(r * r / t->nu);
}

/* the standard t density: c (nu/(nu + x^2))^((nu+1)/2), by products for
 * integer nu */
static double dt(const fly_tmix *t, double x)
{
  if( t->inu ){
    double c2 = t->nu / (t->nu + x * x), v = t->inu % 2 ? 1 : sqrt(c2);
    for(int k = 0; k < (t->inu + 1) / 2; k++) v *= c2;
    return t->dens * v;
  }
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
