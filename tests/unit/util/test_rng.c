/*
 * test_rng.c -- xoshiro256++ against independently computed reference values,
 * state round trips, and moment checks for every distribution.
 *
 * The reference outputs below were computed outside this code base (a
 * Python transcription of Vigna's reference C; the jump target by raising
 * the 256x256 GF(2) transition matrix to the power 2^128 by repeated
 * squaring, which does not use the jump polynomial at all).  The splitmix64
 * values for seed 1234567 are the published ones.  Moment checks use a fixed
 * seed and a 5-standard-error tolerance.
 */
#include "util/rng.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tap.h"

/* splitmix64, as published, for the seeding check. */
static uint64_t sm64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void test_known(void)
{
  static const uint64_t want[6] = {
    0x2800001ULL, 0x3800067ULL, 0xcc00003800067ULL, 0xcc201994400b2ULL,
    0x8012a2019ac433cdULL, 0x8a69978acdee33baULL };
  fly_rng r = { { 1, 2, 3, 4 } };
  int ok = 1;
  for( int i = 0; i < 6; i++ ) ok &= fly_rng_u64(&r) == want[i];
  TAP_OK(ok, "xoshiro256++ from state {1,2,3,4}: first 6 outputs");

  static const uint64_t jw[4] = { 0x8c7a153956b5f3d1ULL, 0x701f1a713401d85eULL,
                                  0x6527f66a65469085ULL, 0x8386b786c4408050ULL };
  fly_rng j = { { 1, 2, 3, 4 } };
  fly_rng_jump(&j);
  TAP_OK(memcmp(j.s, jw, sizeof jw) == 0, "jump from {1,2,3,4} equals T^(2^128)");

  /* published splitmix64 stream for seed 1234567 */
  static const uint64_t smw[5] = { 6457827717110365317ULL, 3203168211198807973ULL,
    9817491932198370423ULL, 4593380528125082431ULL, 16408922859458223821ULL };
  uint64_t x = 1234567;
  ok = 1;
  for( int i = 0; i < 5; i++ ) ok &= sm64(&x) == smw[i];
  TAP_OK(ok, "test's splitmix64 matches the published stream");

  fly_rng s;
  fly_rng_seed(&s, 1234567, 0);
  TAP_OK(s.s[0] == smw[0] && s.s[1] == smw[1] && s.s[2] == smw[2] &&
         s.s[3] == smw[3], "seed(1234567, 0) is four splitmix64 words");
  fly_rng s2;
  fly_rng_seed(&s2, 1234567, 2);
  fly_rng_jump(&s); fly_rng_jump(&s);
  TAP_OK(memcmp(s.s, s2.s, sizeof s.s) == 0, "stream 2 = seed + two jumps");
}

static void test_roundtrip(void)
{
  fly_rng r, c;
  fly_rng_seed(&r, 42, 0);
  for( int i = 0; i < 1000; i++ ) (void)fly_rng_normal(&r);
  memcpy(&c, &r, sizeof r);             /* a checkpoint */
  double a[200], b[200];
  for( int i = 0; i < 200; i++ )
    a[i] = (i % 3 == 0) ? fly_rng_normal(&r) : (i % 3 == 1)
         ? fly_rng_uniform(&r) : (double)fly_rng_geometric(&r, 0.3);
  for( int i = 0; i < 200; i++ )
    b[i] = (i % 3 == 0) ? fly_rng_normal(&c) : (i % 3 == 1)
         ? fly_rng_uniform(&c) : (double)fly_rng_geometric(&c, 0.3);
  TAP_OK(memcmp(a, b, sizeof a) == 0, "state copy reproduces the mixed stream");
  TAP_OK(memcmp(r.s, c.s, sizeof r.s) == 0, "states agree afterwards");

  fly_rng s0, s1, t0;
  fly_rng_seed(&s0, 7, 0);
  fly_rng_seed(&s1, 7, 1);
  fly_rng_seed(&t0, 8, 0);
  int same01 = 0, same0t = 0;
  for( int i = 0; i < 1000; i++ ){
    uint64_t x = fly_rng_u64(&s0);
    same01 += x == fly_rng_u64(&s1);
    same0t += x == fly_rng_u64(&t0);
  }
  TAP_OK(same01 == 0, "streams 0 and 1 of one seed differ (%d equal)", same01);
  TAP_OK(same0t == 0, "seeds 7 and 8 differ (%d equal)", same0t);
}

static void test_uniform(void)
{
  fly_rng r;
  fly_rng_seed(&r, 1, 0);
  const int n = 2000000;
  double sum = 0, sum2 = 0, lo = 1, hi = 0;
  for( int i = 0; i < n; i++ ){
    double u = fly_rng_uniform(&r);
    sum += u; sum2 += u * u;
    if( u < lo ) lo = u;
    if( u > hi ) hi = u;
  }
  TAP_OK(lo > 0 && hi < 1, "uniform in (0,1): min %.3g max 1-%.3g", lo, 1 - hi);
  double m = sum / n, se = sqrt(1.0 / 12 / n);
  TAP_OK(fabs(m - 0.5) < 5 * se, "uniform mean %.6f", m);
  double v = sum2 / n - m * m;          /* var of u^2-based estimate ~ 1/180n */
  TAP_OK(fabs(v - 1.0 / 12) < 5 * sqrt(1.0 / 180 / n), "uniform var %.6f", v);

  /* the extremes: a state whose next output is 0 or all ones */
  fly_rng z = { { 0, 1, 0, 0 } };       /* next output rotl(0,23)+0 = 0 */
  double u0 = fly_rng_uniform(&z);
  TAP_OK(u0 > 0 && u0 < 1, "a zero output is skipped (got %.3g)", u0);
  /* output = rotl(s0+s3,23)+s0 = all ones with s0 = 0, s3 = ~0 */
  fly_rng o = { { 0, 5, 9, ~(uint64_t)0 } };
  double u1 = fly_rng_uniform(&o);
  TAP_OK(u1 < 1 && u1 == 1 - 0x1.0p-53, "all-ones output maps to 1-2^-53 (got 1-%.3g)",
         1 - u1);
}

static void test_normal(void)
{
  fly_rng r;
  fly_rng_seed(&r, 2, 0);
  const int n = 2000000;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  for( int i = 0; i < n; i++ ){
    double x = fly_rng_normal(&r);
    s1 += x; s2 += x * x; s3 += x * x * x; s4 += x * x * x * x;
  }
  s1 /= n; s2 /= n; s3 /= n; s4 /= n;
  TAP_OK(fabs(s1) < 5 * sqrt(1.0 / n), "normal mean %.5f", s1);
  TAP_OK(fabs(s2 - 1) < 5 * sqrt(2.0 / n), "normal E x^2 %.5f", s2);
  TAP_OK(fabs(s3) < 5 * sqrt(15.0 / n), "normal E x^3 %.5f", s3);
  TAP_OK(fabs(s4 - 3) < 5 * sqrt(96.0 / n), "normal E x^4 %.5f", s4);
  /* tail mass beyond 3: 2*(1-Phi(3)) = 0.0026997960632601866 */
  fly_rng_seed(&r, 3, 0);
  int tail = 0;
  for( int i = 0; i < n; i++ ) tail += fabs(fly_rng_normal(&r)) > 3;
  double pt = 0.0026997960632601866, se = sqrt(pt * (1 - pt) / n);
  TAP_OK(fabs((double)tail / n - pt) < 5 * se, "normal P(|x|>3) %.6f", (double)tail / n);
}

/* fly_rng_normals: both variates of a polar draw are used, so check the
 * moments and tail of the batch and that the pair members are independent
 * (correlation, and E[x^2 y^2] = 1, which a dependence through the common
 * radius would move), with an odd batch length so the dropped twin path
 * runs too. */
static void test_normals(void)
{
  fly_rng r;
  fly_rng_seed(&r, 5, 0);
  enum { B = 51 };
  const int reps = 40000, n = reps * B;
  double x[B], s1 = 0, s2 = 0, s4 = 0, xy = 0, x2y2 = 0;
  int tail = 0, np = 0;
  for( int k = 0; k < reps; k++ ){
    fly_rng_normals(&r, x, B);
    for( int i = 0; i < B; i++ ){
      s1 += x[i]; s2 += x[i] * x[i]; s4 += x[i] * x[i] * x[i] * x[i];
      tail += fabs(x[i]) > 3;
    }
    for( int i = 0; i + 1 < B; i += 2, np++ ){
      xy += x[i] * x[i + 1];
      x2y2 += x[i] * x[i] * x[i + 1] * x[i + 1];
    }
  }
  s1 /= n; s2 /= n; s4 /= n; xy /= np; x2y2 /= np;
  TAP_OK(fabs(s1) < 5 * sqrt(1.0 / n), "normals mean %.5f", s1);
  TAP_OK(fabs(s2 - 1) < 5 * sqrt(2.0 / n), "normals E x^2 %.5f", s2);
  TAP_OK(fabs(s4 - 3) < 5 * sqrt(96.0 / n), "normals E x^4 %.5f", s4);
  double pt = 0.0026997960632601866, se = sqrt(pt * (1 - pt) / n);
  TAP_OK(fabs((double)tail / n - pt) < 5 * se, "normals P(|x|>3) %.6f", (double)tail / n);
  /* Var(xy) = 1 and Var(x^2 y^2) = 9 - 1 = 8 for independent N(0,1) */
  TAP_OK(fabs(xy) < 5 * sqrt(1.0 / np), "normals: pair correlation %.5f", xy);
  TAP_OK(fabs(x2y2 - 1) < 5 * sqrt(8.0 / np), "normals: pair E x^2 y^2 %.5f", x2y2);
}

static void test_bernoulli(void)
{
  fly_rng r;
  fly_rng_seed(&r, 4, 0);
  const double ps[] = { 1e-3, 0.3, 0.5, 0.97 };
  const int n = 1000000;
  for( int k = 0; k < 4; k++ ){
    long c = 0;
    for( int i = 0; i < n; i++ ) c += fly_rng_bernoulli(&r, ps[k]);
    double se = sqrt(ps[k] * (1 - ps[k]) / n);
    TAP_OK(fabs((double)c / n - ps[k]) < 5 * se, "bernoulli(%g) mean %.6f", ps[k],
           (double)c / n);
  }
  int ok = 1;
  for( int i = 0; i < 1000; i++ )
    ok &= fly_rng_bernoulli(&r, 0.0) == 0 && fly_rng_bernoulli(&r, -1) == 0 &&
          fly_rng_bernoulli(&r, 1.0) == 1 && fly_rng_bernoulli(&r, 2) == 1 &&
          fly_rng_bernoulli(&r, NAN) == 0;
  TAP_OK(ok, "bernoulli edge probabilities 0, <0, 1, >1, NaN");
}

static void test_geometric(void)
{
  fly_rng r;
  fly_rng_seed(&r, 5, 0);
  const double ps[] = { 0.9, 0.5, 0.05, 1e-4 };
  const int n = 1000000;
  for( int k = 0; k < 4; k++ ){
    double p = ps[k], s = 0, s2 = 0;
    long zero = 0;
    for( int i = 0; i < n; i++ ){
      double g = (double)fly_rng_geometric(&r, p);
      s += g; s2 += g * g;
      zero += g == 0;
    }
    double mean = (1 - p) / p, var = (1 - p) / (p * p);
    double m = s / n;
    TAP_OK(fabs(m - mean) < 5 * sqrt(var / n), "geometric(%g) mean %.5g want %.5g",
           p, m, mean);
    double v = s2 / n - m * m;
    /* var of the sample variance ~ (mu4 - var^2)/n with the geometric's
     * fourth central moment mu4 = q(p^2 - 9p + 9)/p^4, q = 1-p. */
    double q = 1 - p, mu4 = q * (p * p - 9 * p + 9) / (p * p * p * p);
    TAP_OK(fabs(v - var) < 5 * sqrt((mu4 - var * var) / n),
           "geometric(%g) var %.5g want %.5g", p, v, var);
    TAP_OK(fabs((double)zero / n - p) < 5 * sqrt(p * q / n) + 1e-12,
           "geometric(%g) P(0) %.5g", p, (double)zero / n);
  }
  int ok = 1;
  for( int i = 0; i < 100; i++ ) ok &= fly_rng_geometric(&r, 1.0) == 0;
  TAP_OK(ok, "geometric(1) is always 0");
  TAP_OK(fly_rng_geometric(&r, 0.0) == UINT64_MAX &&
         fly_rng_geometric(&r, NAN) == UINT64_MAX, "geometric(0), NaN saturate");
  /* tiny p: mean 1/p far beyond 2^64 -> nearly always saturates; 1e-300 */
  int sat = 0;
  for( int i = 0; i < 100; i++ ) sat += fly_rng_geometric(&r, 1e-300) == UINT64_MAX;
  TAP_OK(sat == 100, "geometric(1e-300) saturates (%d/100)", sat);
  /* denormal p: log1p(-p) is -p, not 0 */
  sat = 0;
  for( int i = 0; i < 100; i++ ) sat += fly_rng_geometric(&r, 4.9e-324) == UINT64_MAX;
  TAP_OK(sat == 100, "geometric(denormal) saturates");
  /* p = 1e-12: mean 1e12, fits, never saturates */
  double s = 0;
  int nsat = 0;
  for( int i = 0; i < 10000; i++ ){
    uint64_t g = fly_rng_geometric(&r, 1e-12);
    nsat += g == UINT64_MAX;
    s += (double)g;
  }
  TAP_OK(nsat == 0 && fabs(s / 10000 / 1e12 - 1) < 5 * 0.01,
         "geometric(1e-12) mean %.4g", s / 10000);
}

static void test_below(void)
{
  fly_rng r;
  fly_rng_seed(&r, 6, 0);
  /* chi-square over 37 cells; df 36, mean 36, sd sqrt(72): 5 sd -> 78.4 */
  const uint64_t n = 37;
  long cnt[37] = { 0 };
  const int draws = 3700000;
  int inrange = 1;
  for( int i = 0; i < draws; i++ ){
    uint64_t k = fly_rng_below(&r, n);
    if( k >= n ){ inrange = 0; break; }
    cnt[k]++;
  }
  TAP_OK(inrange, "below(37) in range");
  double chi = 0, e = (double)draws / n;
  for( uint64_t k = 0; k < n; k++ ) chi += (cnt[k] - e) * (cnt[k] - e) / e;
  TAP_OK(chi < 36 + 5 * sqrt(72.0), "below(37) chi-square %.2f (df 36)", chi);

  int ok = 1;
  for( int i = 0; i < 1000; i++ ) ok &= fly_rng_below(&r, 1) == 0;
  TAP_OK(ok, "below(1) is 0");

  /* a large n where plain modulo would be biased: n = 3*2^62; values in the
   * top third [2^63, 3*2^62) should have probability 1/3 */
  uint64_t big = 3ULL << 62;
  long top = 0;
  const int nb = 300000;
  ok = 1;
  for( int i = 0; i < nb; i++ ){
    uint64_t k = fly_rng_below(&r, big);
    ok &= k < big;
    top += k >= (1ULL << 63);
  }
  double pt = 1.0 / 3;
  TAP_OK(ok && fabs((double)top / nb - pt) < 5 * sqrt(pt * (1 - pt) / nb),
         "below(3*2^62) top third %.5f (modulo would give 0.25)", (double)top / nb);
  /* below(2^64-1) never returns 2^64-1 */
  ok = 1;
  for( int i = 0; i < 1000; i++ ) ok &= fly_rng_below(&r, UINT64_MAX) < UINT64_MAX;
  TAP_OK(ok, "below(2^64-1) in range");
}

/* The bulk draw is the same stream as one draw at a time, and leaves the
 * state where they would (n = 0 included). */
static void test_uniforms(void)
{
  fly_rng a, b;
  fly_rng_seed(&a, 77, 3);
  b = a;
  double out[1000];
  int same = 1;
  for( size_t n = 0; n <= 40; n += 13 ){
    fly_rng_uniforms(&a, out, n);
    for( size_t i = 0; i < n; i++ ) same &= out[i] == fly_rng_uniform(&b);
  }
  fly_rng_uniforms(&a, out, 1000);
  for( size_t i = 0; i < 1000; i++ ) same &= out[i] == fly_rng_uniform(&b);
  same &= memcmp(&a, &b, sizeof a) == 0 && fly_rng_u64(&a) == fly_rng_u64(&b);
  TAP_OK(same, "fly_rng_uniforms gives fly_rng_uniform's stream and state");
}

int main(void)
{
  test_known();
  test_roundtrip();
  test_uniform();
  test_uniforms();
  test_normal();
  test_normals();
  test_bernoulli();
  test_geometric();
  test_below();
  return tap_done();
}
