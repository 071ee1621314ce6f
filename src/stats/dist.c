/*
 * dist.c -- the two quantile functions the diagnostics need.
 *
 * qnorm: Wichura (1988), "Algorithm AS 241: The percentage points of the
 * normal distribution", Applied Statistics 37(3), 477-484 (PPND16, about
 * 1e-16 relative), the algorithm of R's qnorm(): a rational function of
 * q = p - 1/2 for |q| <= 0.425, otherwise of r = sqrt(-log(min(p, 1-p)))
 * with one approximation for r <= 5 and one beyond.  The coefficients are
 * Wichura's published ones, evaluated in Horner form highest power first as
 * R does, so the normal scores of rank normalisation agree with posterior
 * to the last bit or two.
 *
 * pt: Student's t distribution function, for the predictive intervals of
 * robust regression (flydb predict): for integer nu <= 64 the finite
 * trigonometric series of Abramowitz & Stegun 26.7.3-4 (nu/2 terms, no
 * transcendental function but atan for odd nu), else from the same
 * incomplete beta, I_x(nu/2, 1/2) of x = nu/(nu + t^2).
 *
 * qbeta: used only by mcse_quantile, which needs the 16% and 84% points of
 * Beta(a, b) accurately enough to pick the same order statistic as R.  The
 * regularised incomplete beta I_x(a, b) is the continued fraction of
 * Abramowitz & Stegun 26.5.8 evaluated by the modified Lentz method (on
 * the side of the mean where it converges fast, using I_x(a,b) = 1 -
 * I_{1-x}(b,a) on the other), its prefactor x^a (1-x)^b / B(a,b) from a
 * log-gamma by Stirling's series (so no global signgam is touched and the
 * code is reentrant).  The inverse is a Newton iteration safeguarded by
 * bisection, to a relative tolerance of 1e-15; the result is good to about
 * 1e-10 relative when a + b is near 10^6 (the log-gamma terms then cancel
 * from 10^6 down to O(1)), far better for smaller a + b.  a == 1 and b == 1
 * have closed forms (they arise for probabilities 0 and 1).
 */
#include <math.h>

#include "stats/stats_int.h"

#define LN_SQRT_2PI 0.918938533204672741780329736406
#define TWO_OVER_PI 0.636619772367581343075535053490

/* Horner, highest power first: c[0] x^7 + ... + c[7]. */
static double poly7(const double *c, double x)
{
  double v = c[0];
  for( int i = 1; i < 8; i++ ) v = v * x + c[i];
  return v;
}

double fly_stats_qnorm(double p)
{
  static const double a[8] = {   /* |q| <= 0.425: numerator in r */
    2509.0809287301226727, 33430.575583588128105, 67265.770927008700853,
    45921.953931549871457, 13731.693765509461125, 1971.5909503065514427,
    133.14166789178437745, 3.387132872796366608 };
  static const double b[8] = {   /* denominator */
    5226.495278852854561, 28729.085735721942674, 39307.89580009271061,
    21213.794301586595867, 5394.1960214247511077, 687.1870074920579083,
    42.313330701600911252, 1.0 };
  static const double c[8] = {   /* r <= 5 */
    7.7454501427834140764e-4, 0.0227238449892691845833,
    0.24178072517745061177, 1.27045825245236838258, 3.64784832476320460504,
    5.7694972214606914055, 4.6303378461565452959, 1.42343711074968357734 };
  static const double d[8] = {
    1.05075007164441684324e-9, 5.475938084995344946e-4,
    0.0151986665636164571966, 0.14810397642748007459,
    0.68976733498510000455, 1.6763848301838038494, 2.05319162663775882187,
    1.0 };
  static const double e[8] = {   /* r > 5 */
    2.01033439929228813265e-7, 2.71155556874348757815e-5,
    0.0012426609473880784386, 0.026532189526576123093,
    0.29656057182850489123, 1.7848265399172913358, 5.4637849111641143699,
    6.6579046435011037772 };
  static const double f[8] = {
    2.04426310338993978564e-15, 1.4215117583164458887e-7,
    1.8463183175100546818e-5, 7.868691311456132591e-4,
    0.0148753612908506148525, 0.13692988092273580531,
    0.59983220655588793769, 1.0 };
  double q, r, v;

  if( isnan(p) || p < 0 || p > 1 ) return NAN;
  if( p == 0 ) return -INFINITY;
  if( p == 1 ) return INFINITY;
  q = p - 0.5;
  if( fabs(q) <= 0.425 ){
    r = 0.180625 - q * q;
    return q * poly7(a, r) / poly7(b, r);
  }
  r = q < 0 ? p : 1 - p;
  r = sqrt(-log(r));
  if( r <= 5 ){
    r -= 1.6;
    v = poly7(c, r) / poly7(d, r);
  }else{
    r -= 5;
    v = poly7(e, r) / poly7(f, r);
  }
  return q < 0 ? -v : v;
}

/* log Gamma(x), x > 0: Stirling's series at x + k >= 15, shifted down. */
static double lgam(double x)
{
  double shift = 0, x2, s;
  while( x < 15 ){
    shift += log(x);
    x += 1;
  }
  x2 = 1 / (x * x);
  s = (1.0/12 - x2*(1.0/360 - x2*(1.0/1260 - x2*(1.0/1680 - x2*(1.0/1188)))))
      / x;
  return (x - 0.5) * log(x) - x + LN_SQRT_2PI + s - shift;
}

/* Continued fraction of I_x(a, b) (A&S 26.5.8), modified Lentz. */
static double betacf(double x, double a, double b)
{
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1), h;
  if( fabs(d) < tiny ) d = tiny;
  d = 1 / d;
  h = d;
  for( int m = 1; m <= 100000; m++ ){
    double m2 = 2.0 * m, num, del;
    num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;  if( fabs(d) < tiny ) d = tiny;
    c = 1 + num / c;  if( fabs(c) < tiny ) c = tiny;
    d = 1 / d;
    h *= d * c;
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;  if( fabs(d) < tiny ) d = tiny;
    c = 1 + num / c;  if( fabs(c) < tiny ) c = tiny;
    d = 1 / d;
    del = d * c;
    h *= del;
    if( fabs(del - 1) < 1e-16 ) break;
  }
  return h;
}

/* I_x(a, b) and, in *dens, the Beta(a, b) density at x. */
static double pbeta(double x, double a, double b, double lbeta, double *dens)
{
  double lf, pre;
  if( x <= 0 ){ *dens = 0; return 0; }
  if( x >= 1 ){ *dens = 0; return 1; }
  lf = a * log(x) + b * log1p(-x) - lbeta;   /* log x^a (1-x)^b / B */
  pre = exp(lf);
  *dens = exp(lf - log(x) - log1p(-x));
  if( x < (a + 1) / (a + b + 2) ) return pre * betacf(x, a, b) / a;
  return 1 - pre * betacf(1 - x, b, a) / b;
}

double fly_stats_lbeta(double a, double b)
{
  return lgam(a) + lgam(b) - lgam(a + b);
}

/* P(|T| < |t|) for integer nu: A&S 26.7.3 (odd) and 26.7.4 (even), with
 * c2 = cos^2 theta = nu/(nu + t^2), s = sin theta. */
static double pt_abs_int(double t, int nu)
{
  double u = nu + t * t, c2 = nu / u, s = fabs(t) / sqrt(u), a = 1, sum = 1;
  if( nu % 2 == 0 ){
    for(int k = 1; k <= nu / 2 - 1; k++){
      a *= c2 * (2.0 * k - 1) / (2.0 * k);
      sum += a;
    }
    return s * sum;
  }
  double th = atan(fabs(t) / sqrt((double)nu));
  if( nu == 1 ) return TWO_OVER_PI * th;
  for(int k = 1; k <= (nu - 3) / 2; k++){
    a *= c2 * (2.0 * k) / (2.0 * k + 1);
    sum += a;
  }
  return TWO_OVER_PI * (th + s * sqrt(c2) * sum);
}

double fly_stats_pt(double t, double nu, double lbeta)
{
  double dens, t2 = t * t, tail;
  if( isnan(t) ) return t;
  if( isinf(t) ) return t > 0 ? 1 : 0;
  if( nu == floor(nu) && nu <= 64 ){
    double A = pt_abs_int(t, (int)nu);
    return t > 0 ? (1 + A) / 2 : (1 - A) / 2;
  }
  /* P(|T| > |t|) = I_x(nu/2, 1/2), x = nu/(nu + t^2); for small t the
   * complement I_{1-x}(1/2, nu/2), 1 - x = t^2/(nu + t^2) without
   * cancellation */
  if( t2 < nu ) tail = 1 - pbeta(t2 / (nu + t2), 0.5, nu / 2, lbeta, &dens);
  else tail = pbeta(nu / (nu + t2), nu / 2, 0.5, lbeta, &dens);
  return t > 0 ? 1 - tail / 2 : tail / 2;
}

double fly_stats_qbeta(double p, double a, double b)
{
  double lo = 0, hi = 1, x, lbeta;
  if( isnan(p) || isnan(a) || isnan(b) || p < 0 || p > 1 || !(a > 0)
      || !(b > 0) )
    return NAN;
  if( p == 0 ) return 0;
  if( p == 1 ) return 1;
  if( b == 1 ) return pow(p, 1 / a);                /* I_x(a,1) = x^a */
  if( a == 1 ) return -expm1(log1p(-p) / b);        /* 1 - (1-x)^b */
  lbeta = lgam(a) + lgam(b) - lgam(a + b);
  x = a / (a + b);
  for( int it = 0; it < 400; it++ ){
    double dens, F = pbeta(x, a, b, lbeta, &dens), nx;
    if( F < p ) lo = x; else hi = x;
    nx = dens > 0 ? x - (F - p) / dens : -1;
    if( !(nx > lo && nx < hi) ) nx = 0.5 * (lo + hi);
    if( fabs(nx - x) <= 1e-15 * x || hi - lo <= 1e-15 * lo ){
      x = nx;
      break;
    }
    x = nx;
  }
  return x;
}
