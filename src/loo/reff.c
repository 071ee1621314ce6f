/*
 * reff.c -- loo 2.5.1's relative efficiency of a row's likelihood values
 * (reff.h): per chain the autocorrelations of exp(ll) by R's acf (FFT,
 * src/stats), turned back into loo's scaled autocovariances, then Geyer's
 * initial positive sequence as loo's ess_rfun writes it.  Cost O(S log S)
 * a row; memory 3 n + C doubles.
 */
#include <math.h>
#include <string.h>

#include "loo/reff.h"
#include "stats/stats.h"
#include "util/mem.h"

struct fly_reff_ws {
  size_t  C, n;          /* chains used, draws used of each */
  size_t *off;           /* C: first draw of each used chain */
  double *y, *rho, *acov, *cm;   /* n, n, n, C */
  fly_stats_ws *st;
};

void fly_reff_ws_free(fly_reff_ws *w)
{
  if( !w ) return;
  fly_free(w->off);
  fly_free(w->y);
  fly_free(w->rho);
  fly_free(w->acov);
  fly_free(w->cm);
  fly_stats_ws_free(w->st);
  fly_free(w);
}

fly_rc fly_reff_ws_new(const size_t *chain_len, size_t C, fly_reff_ws **pw, fly_err *err)
{
  fly_reff_ws *w;
  size_t t0 = 0;
  fly_rc rc;
  *pw = NULL;
  if( !(w = fly_alloc_array(1, sizeof *w)) || !(w->off = fly_alloc_array(C ? C : 1, sizeof *w->off)) ){
    fly_reff_ws_free(w);
    return fly_fail(err, FLY_NOMEM, "r_eff workspace");
  }
  for(size_t c = 0; c < C; t0 += chain_len[c], c++){
    if( chain_len[c] == 0 ) continue;
    if( w->C == 0 || chain_len[c] < w->n ) w->n = chain_len[c];
    w->off[w->C++] = t0;
  }
  size_t n = w->n ? w->n : 1;
  if( !(w->y = fly_alloc_array(n, sizeof *w->y)) || !(w->rho = fly_alloc_array(n, sizeof *w->rho)) ||
      !(w->acov = fly_alloc_array(n, sizeof *w->acov)) ||
      !(w->cm = fly_alloc_array(w->C ? w->C : 1, sizeof *w->cm)) ){
    fly_reff_ws_free(w);
    return fly_fail(err, FLY_NOMEM, "r_eff workspace");
  }
  if( (rc = fly_stats_ws_new(1, n, &w->st, err)) ){
    fly_reff_ws_free(w);
    return rc;
  }
  *pw = w;
  return FLY_OK;
}

/* loo's fft_next_good_size: the smallest 2^a 3^b 5^c >= n (2 for n <= 2). */
static size_t good_size(size_t n)
{
  if( n <= 2 ) return 2;
  for(;; n++){
    size_t m = n;
    while( m % 2 == 0 ) m /= 2;
    while( m % 3 == 0 ) m /= 3;
    while( m % 5 == 0 ) m /= 5;
    if( m <= 1 ) return n;
  }
}

fly_rc fly_reff_row(fly_reff_ws *w, const double *ll, double *r_eff, fly_err *err)
{
  size_t n = w->n, C = w->C;
  double *acov = w->acov, *rho = w->rho;
  *r_eff = 1;
  if( n < 2 || C == 0 ) return FLY_OK;
  double scale = (double)good_size(n) / (double)n;
  memset(acov, 0, n * sizeof *acov);
  for(size_t c = 0; c < C; c++){
    const double *l = ll + w->off[c];
    long double s = 0;
    for(size_t t = 0; t < n; t++) s += w->y[t] = exp(l[t]);
    double mu = (double)(s / (long double)n), c0 = 0;
    for(size_t t = 0; t < n; t++) c0 += (w->y[t] - mu) * (w->y[t] - mu);
    c0 /= (double)n;
    w->cm[c] = mu;
    fly_rc rc = fly_stats_acf(w->st, w->y, n, n - 1, rho, err);
    if( rc ) return rc;
    /* a constant chain (acf NaN) has zero autocovariance */
    if( isnan(rho[0]) ) continue;
    for(size_t k = 0; k < n; k++) acov[k] += scale * c0 * rho[k] / (double)C;
  }
  double mean_var = acov[0] * (double)n / (double)(n - 1);
  double var_plus = mean_var * (double)(n - 1) / (double)n;
  if( C > 1 ){
    double m = 0, v = 0;
    for(size_t c = 0; c < C; c++) m += w->cm[c];
    m /= (double)C;
    for(size_t c = 0; c < C; c++) v += (w->cm[c] - m) * (w->cm[c] - m);
    var_plus += v / (double)(C - 1);
  }
  memset(rho, 0, n * sizeof *rho);
  size_t t = 0;
  double re = 1, ro = 1 - (mean_var - acov[1]) / var_plus;
  rho[0] = re;
  rho[1] = ro;
  while( t + 5 < n && !isnan(re + ro) && re + ro > 0 ){
    t += 2;
    re = 1 - (mean_var - acov[t]) / var_plus;
    ro = 1 - (mean_var - acov[t + 1]) / var_plus;
    if( re + ro >= 0 ){
      rho[t] = re;
      rho[t + 1] = ro;
    }
  }
  size_t max_t = t;
  if( re > 0 ) rho[max_t] = re;
  for(t = 0; t + 4 <= max_t; ){
    t += 2;
    if( rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1] ){
      rho[t] = (rho[t - 2] + rho[t - 1]) / 2;
      rho[t + 1] = rho[t];
    }
  }
  /* R's sum(rho[1:max_t]) is rho[1] alone when max_t = 0 */
  double sum = 0;
  for(size_t k = 0; k < (max_t ? max_t : 1); k++) sum += rho[k];
  double tau = -1 + 2 * sum + rho[max_t];
  double lo = 1 / log10((double)(C * n));
  if( !(tau >= lo) ) tau = isnan(tau) ? NAN : lo;
  double r = 1 / tau;
  *r_eff = isfinite(r) && r > 0 ? r : 1;
  return FLY_OK;
}
