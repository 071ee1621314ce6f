/*
 * test_score.c -- the arithmetic of predictions (src/predict/score.c):
 *  - type-7 quantiles against a sort and R's formula, on random values,
 *    many ties, a constant vector, a spike that overfills the histogram's
 *    bins (the heap path), n from 1 to 4001 and probabilities 0 to 1;
 *  - the AUC against the O(n1 n0) pair count with ties as 1/2;
 *  - Student's t distribution function and quantile against R's pt/qt
 *    (the quantile also at every level flydb ppc takes, nu 1 to 30),
 *    and the t-mixture quantile: F(q) = p by a direct sum, a one-draw
 *    mixture is mu + sigma qt(p), and the result is R's value for a fixed
 *    mixture (uniroot to 1e-15 on mean(pt((x - mu)/sigma, nu))); pt for
 *    integer nu (the series) and the log density against R (1e-14: the
 *    density constant comes from a Stirling log-gamma).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predict/score.h"
#include "stats/stats.h"
#include "tap.h"

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* R's quantile(type = 7) from a sorted copy */
static double ref_q(const double *x, size_t n, double p)
{
  double *s = malloc(n * sizeof *s);
  memcpy(s, x, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp);
  double index = 1 + (double)(n - 1) * p;
  size_t lo = (size_t)floor(index);
  double h = index - (double)lo, q = s[lo - 1];
  if( h > 0 && lo < n && s[lo] != q ) q = (1 - h) * q + h * s[lo];
  free(s);
  return q;
}

static unsigned long long st = 88172645463325252ULL;
static double unif(void)
{
  st ^= st << 13; st ^= st >> 7; st ^= st << 17;
  return (double)(st >> 11) * 0x1.0p-53;
}

static int quantile_case(const char *what, const double *x, size_t n, fly_qws *w)
{
  static const double P[][2] = { {0.05, 0.95}, {0, 1}, {0.5, 0.5}, {0.25, 0.75},
                                 {0.001, 0.999}, {0.3, 0.1} };
  int good = 1;
  double *copy = malloc(n * sizeof *copy);
  memcpy(copy, x, n * sizeof *copy);
  for(size_t k = 0; k < sizeof P / sizeof P[0]; k++){
    double a, b;
    fly_predict_quantile2(w, x, n, P[k][0], P[k][1], &a, &b);
    if( a != ref_q(x, n, P[k][0]) || b != ref_q(x, n, P[k][1]) ){
      TAP_DIAG("%s n=%zu p=(%g,%g): got %.17g %.17g want %.17g %.17g", what, n, P[k][0],
               P[k][1], a, b, ref_q(x, n, P[k][0]), ref_q(x, n, P[k][1]));
      good = 0;
    }
  }
  good &= !memcmp(copy, x, n * sizeof *copy);
  free(copy);
  return good;
}

static double naive_auc(const double *pos, size_t n1, const double *neg, size_t n0)
{
  double u = 0;
  for(size_t i = 0; i < n1; i++)
    for(size_t j = 0; j < n0; j++) u += pos[i] > neg[j] ? 1 : pos[i] == neg[j] ? 0.5 : 0;
  return u / ((double)n1 * (double)n0);
}

int main(void)
{
  fly_qws *w = NULL;
  size_t nmax = 4001;
  double *x = malloc(nmax * sizeof *x);
  TAP_OK(fly_qws_new(nmax, &w, NULL) == FLY_OK && x, "workspace");
  static const size_t ns[] = { 1, 2, 3, 7, 10, 100, 1000, 4001 };
  for(size_t c = 0; c < sizeof ns / sizeof ns[0]; c++){
    size_t n = ns[c];
    for(size_t i = 0; i < n; i++) x[i] = unif() * unif();              /* skewed */
    TAP_OK(quantile_case("random", x, n, w), "type-7 quantiles of %zu random values", n);
    for(size_t i = 0; i < n; i++) x[i] = floor(4 * unif());           /* 4 values */
    TAP_OK(quantile_case("ties", x, n, w), "type-7 quantiles of %zu values with ties", n);
    for(size_t i = 0; i < n; i++) x[i] = 0.25;
    TAP_OK(quantile_case("constant", x, n, w), "type-7 quantiles of %zu equal values", n);
    /* a spike: one bin of the histogram holds nearly everything */
    for(size_t i = 0; i < n; i++) x[i] = i % 97 == 0 ? 1e6 * unif() : 1 + 1e-9 * unif();
    TAP_OK(quantile_case("spike", x, n, w), "type-7 quantiles of %zu values in a spike", n);
  }
  /* rounding at bin edges: values a few ulps apart over a wide range */
  for(size_t i = 0; i < 1000; i++) x[i] = i % 2 ? nextafter(0.5, 1) : 0.5 + (i % 7) * 1e-16;
  x[0] = -1e300; x[1] = 1e300;
  TAP_OK(quantile_case("edges", x, 1000, w), "type-7 quantiles over a range of 2e300");

  double pos[300], neg[500];
  for(size_t i = 0; i < 300; i++) pos[i] = floor(20 * unif()) / 20 + 0.1;
  for(size_t i = 0; i < 500; i++) neg[i] = floor(20 * unif()) / 20;
  double want = naive_auc(pos, 300, neg, 500);
  double got = fly_predict_auc(pos, 300, neg, 500);
  TAP_OK(fabs(got - want) <= 1e-15, "AUC with ties %.17g, pair count %.17g", got, want);
  for(size_t i = 0; i < 300; i++) pos[i] = unif();
  for(size_t i = 0; i < 500; i++) neg[i] = unif() * 0.8;
  want = naive_auc(pos, 300, neg, 500);
  got = fly_predict_auc(pos, 300, neg, 500);
  TAP_OK(fabs(got - want) <= 1e-15, "AUC without ties %.17g, pair count %.17g", got, want);
  TAP_OK(isnan(fly_predict_auc(pos, 3, neg, 0)), "AUC of one class is NaN");
  int good;
  double one = 0.5, other = 0.5;
  TAP_OK(fly_predict_auc(&one, 1, &other, 1) == 0.5, "AUC of a tie is 1/2");

  /* t distribution (R 4.x values) */
  fly_tmix t4, t17, t25;
  fly_tmix_init(&t4, 4, 1);
  fly_tmix_init(&t17, 1.7, 1);
  fly_tmix_init(&t25, 2.5, 1);
  TAP_OK(fabs(fly_stats_pt(2, 4, t4.lbeta) - 0.94194173824159222) <= 1e-15, "pt(2, 4)");
  TAP_OK(fabs(fly_stats_pt(-0.3, 2.5, t25.lbeta) - 0.39367118574759863) <= 1e-15,
         "pt(-0.3, 2.5)");
  TAP_OK(fabs(fly_stats_pt(30, 7, fly_stats_lbeta(3.5, 0.5)) - 0.99999999410576557) <= 1e-15,
         "pt(30, 7)");
  /* the integer-nu series against R */
  static const struct { double t, nu, p; } ptv[] = {
    { 2, 1, 0.852416382349566737 }, { -1.5, 2, 0.136196562445500463 },
    { 1.3, 10, 0.888617091396577741 }, { -4, 3, 0.014004228005073085 },
    { 0.2, 64, 0.578942637588275244 }, { -2.2, 5, 0.039546948951591138 } };
  good = 1;
  for(size_t i = 0; i < sizeof ptv / sizeof ptv[0]; i++){
    double v = fly_stats_pt(ptv[i].t, ptv[i].nu, fly_stats_lbeta(ptv[i].nu / 2, 0.5));
    if( fabs(v - ptv[i].p) > 1e-15 ){ TAP_DIAG("pt(%g, %g) = %.17g", ptv[i].t, ptv[i].nu, v); good = 0; }
  }
  TAP_OK(good, "pt for integer nu 1 to 64 as R's");
  fly_tmix t5, t6;
  fly_tmix_init(&t5, 5, 1);
  fly_tmix_init(&t6, 6, 1);
  TAP_OK(fabs(exp(fly_tmix_logpdf(&t5, 0.7, 0)) - 0.286765457576697913) <= 1e-14 &&
         fabs(exp(fly_tmix_logpdf(&t6, -1.1, 0)) - 0.201210945127838492) <= 1e-14,
         "t log density as R's dt: %.17g %.17g", exp(fly_tmix_logpdf(&t5, 0.7, 0)), exp(fly_tmix_logpdf(&t6, -1.1, 0)));
  TAP_OK(fabs(fly_tmix_qt(&t4, 0.95) - 2.13184678632664903) <= 1e-13, "qt(0.95, 4) %.17g",
         fly_tmix_qt(&t4, 0.95));
  TAP_OK(fabs(fly_tmix_qt(&t17, 0.05) + 3.30361514323793060) <= 1e-13, "qt(0.05, 1.7) %.17g",
         fly_tmix_qt(&t17, 0.05));
  /* the quantiles flydb ppc takes (PIT bin edges k/B, its QQ grid's ends
   * 1/1000 and 999/1000, two-sided tails 10%, 5%, 1%) against R's qt, with
   * the Cauchy, a non-integer nu and a nearly normal one */
  static const struct { double p, nu, q; } qtv[] = {
    { 0.001, 1, -318.30883898555044 },
    { 0.1, 1, -3.077683537175254 },
    { 0.3, 1, -0.72654252800536101 },
    { 0.5, 1, 0 },
    { 0.7, 1, 0.72654252800536079 },
    { 0.95, 1, 6.3137515146750376 },
    { 0.975, 1, 12.706204736174694 },
    { 0.995, 1, 63.656741162871526 },
    { 0.999, 1, 318.30883898555015 },
    { 0.001, 2.5, -13.822193110865999 },
    { 0.1, 2.5, -1.7302509288071759 },
    { 0.3, 2.5, -0.59730773825231553 },
    { 0.5, 2.5, 0 },
    { 0.7, 2.5, 0.59730773825231542 },
    { 0.95, 2.5, 2.5582186141359453 },
    { 0.975, 2.5, 3.5746548420036919 },
    { 0.995, 2.5, 7.1637281389488026 },
    { 0.999, 2.5, 13.822193110865999 },
    { 0.001, 4, -7.1731822197823094 },
    { 0.1, 4, -1.5332062740589427 },
    { 0.3, 4, -0.56864906304970553 },
    { 0.5, 4, 0 },
    { 0.7, 4, 0.56864906304970531 },
    { 0.95, 4, 2.131846786326649 },
    { 0.975, 4, 2.7764451051977934 },
    { 0.995, 4, 4.6040948713499921 },
    { 0.999, 4, 7.1731822197823076 },
    { 0.001, 30, -3.3851848668293054 },
    { 0.1, 30, -1.3104150253913953 },
    { 0.3, 30, -0.53001900390650458 },
    { 0.5, 30, 0 },
    { 0.7, 30, 0.53001900390650436 },
    { 0.95, 30, 1.6972608865939569 },
    { 0.975, 30, 2.0422724563012378 },
    { 0.995, 30, 2.7499956535672254 },
    { 0.999, 30, 3.3851848668293054 },
  };
  good = 1;
  for(size_t i = 0; i < sizeof qtv / sizeof qtv[0]; i++){
    fly_tmix ti;
    fly_tmix_init(&ti, qtv[i].nu, 1);
    double v = fly_tmix_qt(&ti, qtv[i].p);
    if( !(fabs(v - qtv[i].q) <= 1e-13 * fmax(1, fabs(qtv[i].q))) ){
      TAP_DIAG("qt(%g, %g) = %.17g, R %.17g", qtv[i].p, qtv[i].nu, v, qtv[i].q);
      good = 0;
    }
  }
  TAP_OK(good, "qt at ppc's levels for nu 1, 2.5, 4, 30 as R's (1e-13 relative)");

  fly_tmix m;
  fly_tmix_init(&m, 4, 0.7);
  double mu[200];
  for(size_t s = 0; s < 200; s++) mu[s] = 2 + 0.3 * (unif() - 0.5) + (s % 5 == 0 ? 1 : 0);
  good = 1;
  for(double p = 0.01; p < 1; p += 0.07){
    double q = fly_tmix_quantile(&m, mu, 200, p, fly_tmix_qt(&m, p));
    double F = 0;
    for(size_t s = 0; s < 200; s++) F += fly_stats_pt((q - mu[s]) / 0.7, 4, m.lbeta);
    F /= 200;
    if( fabs(F - p) > 1e-14 ){ TAP_DIAG("p %g: F(q) = %.17g", p, F); good = 0; }
  }
  TAP_OK(good, "mixture quantiles solve F(q) = p to 1e-14");
  double q1 = fly_tmix_quantile(&m, mu, 1, 0.9, fly_tmix_qt(&m, 0.9));
  TAP_OK(fabs(q1 - (mu[0] + 0.7 * fly_tmix_qt(&m, 0.9))) <= 1e-14, "one draw: mu + sigma qt");
  /* R: mu <- c(-1, 0.5, 3); uniroot(function(x) mean(pt((x - mu)/2, 3)) - p,
   * c(-20, 20), tol = 1e-15)$root for p = 0.05, 0.95 */
  double mu3[3] = { -1, 0.5, 3 };
  fly_tmix m3;
  fly_tmix_init(&m3, 3, 2);
  double ql = fly_tmix_quantile(&m3, mu3, 3, 0.05, fly_tmix_qt(&m3, 0.05));
  double qh = fly_tmix_quantile(&m3, mu3, 3, 0.95, fly_tmix_qt(&m3, 0.95));
  TAP_OK(fabs(ql + 4.4946403158649781) <= 1e-12 && fabs(qh - 6.2678824997609368) <= 1e-12,
         "three-draw mixture as R: %.17g %.17g", ql, qh);
  fly_qws_free(w);
  free(x);
  return tap_done();
}
