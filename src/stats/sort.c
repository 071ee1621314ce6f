/*
 * sort.c -- sorting the draws of one parameter, carrying a tag for each.
 *
 * Every rank-based diagnostic (rank normalisation, quantiles, median, the
 * folded draws |x - median|, the tail indicators) starts from the draws in
 * increasing order, each with a tag: its position in the split layout
 * (stats_int.h), so that rank scores and indicators are written straight
 * to where the ESS wants them, with no gather through the draw index.
 *
 * A summary sorts 4 x 10^5 doubles per parameter, so this is the hot spot:
 * a stable LSD radix sort on 64-bit keys, 11 bits a pass (2048 buckets
 * whose counters fit in L1), skipping a pass when all keys share that
 * digit.  Only the high 33 bits go through the full array (3 passes); that
 * leaves the draws sorted except within runs that agree to about 1e-6
 * relative, which are finished in place, by insertion sort when short (the
 * usual case for continuous draws) or by 3 more radix passes over the run
 * (ties from discrete draws need nothing: equal keys are skipped).  Cost
 * O(3 N) to O(6 N); memory two key and two tag arrays from the workspace.
 *
 * Key: the IEEE bits with the sign bit flipped for positives and all bits
 * flipped for negatives, so unsigned order is numeric order, -Inf < ... <
 * +Inf.  -0 is turned into +0 first so that it ties with 0 as it does in R's
 * rank().  NaN must be filtered out by the caller.
 */
#include <string.h>

#include "stats/stats_int.h"

#define RADIX_BITS 11
#define RADIX      (1u << RADIX_BITS)
#define HI_SHIFT   31                   /* the high pass sorts bits 31..63 */
#define SMALL_RUN  24                   /* insertion sort up to this length */

static uint64_t key_of(double v)
{
  uint64_t u;
  v += 0.0;                             /* -0 -> +0 */
  memcpy(&u, &v, sizeof u);
  return (u >> 63) ? ~u : (u | UINT64_C(0x8000000000000000));
}

static double val_of(uint64_t k)
{
  uint64_t u = (k >> 63) ? (k & ~UINT64_C(0x8000000000000000)) : ~k;
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}

/* Stable LSD radix sort of k[0..n) (with ix) on bits [lo_bit, lo_bit +
 * 11*passes), using k2/ix2 as scratch; the result ends in k/ix.  Passes
 * whose digit is the same for every key are skipped. */
static void lsd(uint64_t *k, uint32_t *ix, uint64_t *k2, uint32_t *ix2,
                size_t n, unsigned lo_bit, int passes)
{
  uint32_t count[3][RADIX];
  uint64_t *src = k, *dst = k2;
  uint32_t *isrc = ix, *idst = ix2;
  memset(count, 0, sizeof count);
  for( size_t i = 0; i < n; i++ )
    for( int p = 0; p < passes; p++ )
      count[p][(k[i] >> (lo_bit + RADIX_BITS*(unsigned)p)) & (RADIX - 1)]++;
  for( int p = 0; p < passes; p++ ){
    uint32_t *c = count[p], sum = 0;
    unsigned sh = lo_bit + RADIX_BITS*(unsigned)p;
    if( c[(src[0] >> sh) & (RADIX - 1)] == n ) continue;
    for( unsigned b = 0; b < RADIX; b++ ){   /* counts -> start offsets */
      uint32_t t = c[b];
      c[b] = sum;
      sum += t;
    }
    for( size_t i = 0; i < n; i++ ){
      uint32_t d = c[(src[i] >> sh) & (RADIX - 1)]++;
      dst[d] = src[i];
      idst[d] = isrc[i];
    }
    { uint64_t *t = src; src = dst; dst = t; }
    { uint32_t *t = isrc; isrc = idst; idst = t; }
  }
  if( src != k ){
    memcpy(k, src, n * sizeof *k);
    memcpy(ix, isrc, n * sizeof *ix);
  }
}

void flys_sort(fly_stats_ws *ws, const double *x, size_t n,
               const uint32_t *tag)
{
  uint64_t *k = ws->key, *k2 = ws->key2;
  uint32_t *ix = ws->idx, *ix2 = ws->idx2;
  if( n == 0 ) return;
  for( size_t i = 0; i < n; i++ ){
    k[i] = key_of(x[i]);
    ix[i] = tag ? tag[i] : (uint32_t)i;
  }
  /* By the high 33 bits (sign, exponent, 21 bits of mantissa): draws of a
   * continuous distribution are then sorted but for rare short runs. */
  lsd(k, ix, k2, ix2, n, HI_SHIFT, 3);
  /* Finish each run of equal high bits: insertion sort if short, else the
   * low 31 bits by radix (heavy ties, or draws within 1e-6 relative of
   * each other); runs of equal keys are left alone. */
  for( size_t i = 0; i < n; ){
    size_t j = i + 1;
    int same = 1;
    while( j < n && (k[j] >> HI_SHIFT) == (k[i] >> HI_SHIFT) ){
      same &= k[j] == k[i];
      j++;
    }
    if( !same ){
      if( j - i <= SMALL_RUN ){
        for( size_t a = i + 1; a < j; a++ ){
          uint64_t kk = k[a];
          uint32_t ii = ix[a];
          size_t b = a;
          for( ; b > i && k[b-1] > kk; b-- ){
            k[b] = k[b-1];
            ix[b] = ix[b-1];
          }
          k[b] = kk;
          ix[b] = ii;
        }
      }else{
        lsd(k + i, ix + i, k2 + i, ix2 + i, j - i, 0, 3);
      }
    }
    i = j;
  }
  for( size_t i = 0; i < n; i++ ) ws->xs[i] = val_of(k[i]);
  memcpy(ws->xi, ix, n * sizeof *ix);
}
