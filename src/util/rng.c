/*
 * rng.c -- xoshiro256++ (Blackman & Vigna 2019) and the few distributions
 * the samplers and the z updates need.
 *
 * The state is the four words of fly_rng and nothing else: no cached normal
 * variate, no hidden globals, so copying the struct into a checkpoint and
 * back reproduces the stream exactly.  Seeding expands one 64-bit seed with
 * splitmix64 (the generator's authors' recommendation) and then applies the
 * 2^128-step jump `stream` times, so chains of one seed never overlap.
 *
 * Every function is O(1) except fly_rng_seed (O(stream) jumps, each 256
 * steps) and the rejection loops, whose expected trip counts are below 1.3.
 * Nothing allocates.
 */
#include "rng.h"

#include <assert.h>
#include <math.h>

static inline uint64_t rotl(uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t next(uint64_t *s)
{
  uint64_t res = rotl(s[0] + s[3], 23) + s[0];
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return res;
}

uint64_t fly_rng_u64(fly_rng *r) { return next(r->s); }

void fly_rng_jump(fly_rng *r)
{
  static const uint64_t J[4] = { 0x180ec6d33cfd0abaULL, 0xd5a61266f0c9392cULL,
                                 0xa9582618e03fc9aaULL, 0x39abdc4529b1661cULL };
  uint64_t t[4] = { 0, 0, 0, 0 };
  for( int i = 0; i < 4; i++ ){
    for( int b = 0; b < 64; b++ ){
      if( J[i] & ((uint64_t)1 << b) ){
        t[0] ^= r->s[0]; t[1] ^= r->s[1];
        t[2] ^= r->s[2]; t[3] ^= r->s[3];
      }
      (void)fly_rng_u64(r);
    }
  }
  for( int i = 0; i < 4; i++ ) r->s[i] = t[i];
}

void fly_rng_seed(fly_rng *r, uint64_t seed, uint64_t stream)
{
  uint64_t x = seed;
  for( int i = 0; i < 4; i++ ) r->s[i] = splitmix(&x);
  /* The all-zero state is a fixed point; splitmix64 is a bijection of its
   * counter, so four zeros in a row cannot happen, but be safe. */
  if( !(r->s[0] | r->s[1] | r->s[2] | r->s[3]) ) r->s[0] = 1;
  for( uint64_t c = 0; c < stream; c++ ) fly_rng_jump(r);
}

/* k/2^53 with k uniform on 1..2^53-1: every value is exact, the largest
 * is 1-2^-53 < 1.  (k+0.5)/2^53 would round to 1.0 at the top.) */
static inline double uniform(uint64_t *s)
{
  uint64_t k;
  do k = next(s) >> 11; while( k == 0 );
  return (double)k * 0x1.0p-53;
}

double fly_rng_uniform(fly_rng *r) { return uniform(r->s); }

void fly_rng_uniforms(fly_rng *r, double *out, size_t n)
{
  uint64_t s[4] = { r->s[0], r->s[1], r->s[2], r->s[3] };  /* in registers */
  for( size_t i = 0; i < n; i++ ) out[i] = uniform(s);
  for( int i = 0; i < 4; i++ ) r->s[i] = s[i];
}

/* One polar (Marsaglia) draw: a point (u, v) uniform in the unit disc;
 * returns f with u f and v f two independent standard normals. */
static double polar(fly_rng *r, double *u, double *v)
{
  double q;
  do {
    *u = 2.0 * fly_rng_uniform(r) - 1.0;
    *v = 2.0 * fly_rng_uniform(r) - 1.0;
    q = *u * *u + *v * *v;
  } while( q >= 1.0 || q == 0.0 );
  return sqrt(-2.0 * log(q) / q);
}

double fly_rng_normal(fly_rng *r)
{
  double u, v, f = polar(r, &u, &v);
  return u * f;                          /* v's twin variate is dropped */
}

void fly_rng_normals(fly_rng *r, double *out, size_t n)
{
  for(size_t i = 0; i < n; i += 2){
    double u, v, f = polar(r, &u, &v);
    out[i] = u * f;
    if( i + 1 < n ) out[i + 1] = v * f;
  }
}

int fly_rng_bernoulli(fly_rng *r, double p)
{
  if( p <= 0.0 ) return 0;
  if( p >= 1.0 ) return 1;
  return fly_rng_uniform(r) < p;        /* NaN p gives 0 */
}

/* High and low words of the 128-bit product a*b, portably (ISO C has no
 * 128-bit integer). */
static void mul128(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
  uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
  uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  *lo = (mid << 32) | (p00 & 0xffffffffu);
  *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

uint64_t fly_rng_below(fly_rng *r, uint64_t n)
{
  /* Lemire (2019), "Fast random integer generation in an interval". */
  uint64_t hi, lo;
  assert(n > 0);
  if( n == 0 ) return 0;
  mul128(fly_rng_u64(r), n, &hi, &lo);
  if( lo < n ){
    uint64_t thr = (0 - n) % n;         /* 2^64 mod n */
    while( lo < thr ) mul128(fly_rng_u64(r), n, &hi, &lo);
  }
  return hi;
}

uint64_t fly_rng_geometric(fly_rng *r, double p)
{
  /* P(G >= k) = P(u <= (1-p)^k) = (1-p)^k.  log1p keeps tiny p exact
   * (log(1-p) would round 1-p to 1 and divide by zero). */
  if( p >= 1.0 ) return 0;
  if( !(p > 0.0) ) return UINT64_MAX;   /* p <= 0 or NaN: never succeeds */
  double g = floor(log(fly_rng_uniform(r)) / log1p(-p));
  if( !(g < 0x1.0p64) ) return UINT64_MAX;
  return (uint64_t)g;
}
