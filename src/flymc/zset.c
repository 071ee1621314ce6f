/*
 * zset.c -- the brightness variables z_1..z_N as the paper's section 3.3
 * structure: arr (every row index once, the B bright ones first) and tab
 * (tab[n] = position of n in arr), so brighten, darken, ith-bright and
 * ith-dark are O(1) and a loop over the bright rows costs O(B), not O(N).
 *
 * Invariants (fly_zset_check): arr and tab are inverse permutations of
 * 0..N-1 and 0 <= B <= N; row n is bright iff tab[n] < B.
 *
 * brighten(n) swaps n with the first dark entry arr[B] and grows B.
 * darken(n) swaps n with the last bright entry arr[B-1] and shrinks B: the
 * bright row from slot B-1 moves into n's old slot, and the return value and
 * *moved_from tell the bright-row cache (which mirrors arr[0..B)) to copy
 * its slot B-1 into that slot.  Memory: 8 bytes a row (uint32 entries).
 */
#include "zset.h"

#include <assert.h>

#include "util/mem.h"

struct fly_zset {
  uint32_t *arr;  /* N row indices, bright ones in [0, B) */
  uint32_t *tab;  /* N positions: arr[tab[n]] == n */
  int64_t   N;    /* rows */
  int64_t   B;    /* bright rows */
};

fly_rc fly_zset_new(int64_t N, fly_zset **pz, fly_err *err)
{
  fly_zset *z = NULL;
  *pz = NULL;
  if( N < 0 || N > FLY_ZSET_MAX_N )
    return fly_fail(err, FLY_RANGE, "zset: %lld rows, want 0..%lld",
                    (long long)N, (long long)FLY_ZSET_MAX_N);
  z = fly_alloc_array(1, sizeof *z);
  if( !z ) goto nomem;
  z->arr = fly_alloc_array((size_t)N, sizeof *z->arr);
  z->tab = fly_alloc_array((size_t)N, sizeof *z->tab);
  if( !z->arr || !z->tab ) goto nomem;
  z->N = N;
  z->B = 0;
  for( int64_t i = 0; i < N; i++ ){
    z->arr[i] = (uint32_t)i;
    z->tab[i] = (uint32_t)i;
  }
  *pz = z;
  return FLY_OK;
nomem:
  fly_zset_free(z);
  return fly_fail(err, FLY_NOMEM, "zset: cannot allocate for %lld rows",
                  (long long)N);
}

void fly_zset_free(fly_zset *z)
{
  if( !z ) return;
  fly_free(z->arr);
  fly_free(z->tab);
  fly_free(z);
}

int64_t fly_zset_n(const fly_zset *z) { return z->N; }
int64_t fly_zset_n_bright(const fly_zset *z) { return z->B; }

int fly_zset_is_bright(const fly_zset *z, int64_t n)
{
  assert(n >= 0 && n < z->N);
  return (int64_t)z->tab[n] < z->B;
}

int64_t fly_zset_pos(const fly_zset *z, int64_t n)
{
  assert(n >= 0 && n < z->N);
  return z->tab[n];
}

int64_t fly_zset_brighten(fly_zset *z, int64_t n)
{
  assert(n >= 0 && n < z->N);
  int64_t p = z->tab[n], b = z->B;
  if( p < b ) return -1;
  uint32_t m = z->arr[b];               /* first dark row */
  z->arr[p] = m;
  z->tab[m] = (uint32_t)p;
  z->arr[b] = (uint32_t)n;
  z->tab[n] = (uint32_t)b;
  z->B = b + 1;
  return b;
}

int64_t fly_zset_darken(fly_zset *z, int64_t n, int64_t *moved_from)
{
  assert(n >= 0 && n < z->N);
  int64_t p = z->tab[n], last = z->B - 1;
  if( p > last ) return -1;
  uint32_t m = z->arr[last];            /* last bright row */
  z->arr[p] = m;
  z->tab[m] = (uint32_t)p;
  z->arr[last] = (uint32_t)n;
  z->tab[n] = (uint32_t)last;
  z->B = last;
  if( moved_from ) *moved_from = last;
  return p;
}

int64_t fly_zset_ith_bright(const fly_zset *z, int64_t i)
{
  assert(i >= 0 && i < z->B);
  return z->arr[i];
}

int64_t fly_zset_ith_dark(const fly_zset *z, int64_t i)
{
  assert(i >= 0 && i < z->N - z->B);
  return z->arr[z->B + i];
}

/* Darken every bright row: O(B).  Dark order is left as it falls. */
static void all_dark(fly_zset *z)
{
  while( z->B > 0 ) (void)fly_zset_darken(z, z->arr[z->B - 1], NULL);
}

fly_rc fly_zset_set_bright(fly_zset *z, const int64_t *list, int64_t n,
                           fly_err *err)
{
  all_dark(z);
  if( n < 0 || n > z->N )
    return fly_fail(err, FLY_RANGE, "zset: %lld bright rows of %lld",
                    (long long)n, (long long)z->N);
  for( int64_t k = 0; k < n; k++ ){
    int64_t r = list[k];
    if( r < 0 || r >= z->N ){
      all_dark(z);
      return fly_fail(err, FLY_RANGE,
                      "zset: bright entry %lld is row %lld, want 0..%lld",
                      (long long)k, (long long)r, (long long)z->N - 1);
    }
    if( fly_zset_brighten(z, r) < 0 ){
      all_dark(z);
      return fly_fail(err, FLY_RANGE,
                      "zset: bright entry %lld repeats row %lld",
                      (long long)k, (long long)r);
    }
  }
  return FLY_OK;
}

int fly_zset_check(const fly_zset *z)
{
  if( !z || z->N < 0 || z->B < 0 || z->B > z->N ) return 0;
  /* tab o arr = id on [0,N) makes arr injective, hence a permutation with
   * inverse tab. */
  for( int64_t i = 0; i < z->N; i++ ){
    uint32_t n = z->arr[i];
    if( (int64_t)n >= z->N || (int64_t)z->tab[n] != i ) return 0;
  }
  return 1;
}
