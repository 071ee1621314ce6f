/*
 * test_zset_white.c -- zset.c compiled into the test (white box), for what
 * the API cannot show:
 *  - collisions: a degenerate hash sends every row to one of the table's
 *    last 4 slots, so every probe run wraps around the end and every darken
 *    shifts back through a long run; test_zset.c's random operations, fill
 *    and drain cycles and sparse ids run against it.
 *  - memory: zset.c's fly_alloc_array/fly_realloc_array/fly_free are
 *    renamed to counting versions, so the bytes it asks for are measured
 *    (requested bytes, not malloc's overhead or resident pages).  N = 10^8
 *    must cost the bitmap (N/8 bytes) and a fixed struct, plus the bright
 *    rows' arr and table once rows are bright; after warm-up, cycles that
 *    stay below the largest bright set allocate nothing.
 *  - out of memory: a countdown makes an allocation fail; brighten returns
 *    FLY_ZSET_NOMEM and reserve/set_bright FLY_NOMEM with z intact.
 */
#include <stdint.h>
#include <stdlib.h>

#include "util/mem.h"

static size_t live, peak;      /* bytes zset.c holds now / at most */
static long   n_allocs;        /* calls to count_alloc_array/realloc */
static long   fail_in = -1;    /* the fail_in-th next allocation fails (0: next) */

void *count_alloc_array(size_t n, size_t size);
void *count_realloc_array(void *p, size_t n, size_t size);
void  count_free(void *p);

#define FLY_ZSET_HASH(r) (~(uint64_t)0 - ((uint64_t)(r) & 3))
#define fly_alloc_array   count_alloc_array
#define fly_realloc_array count_realloc_array
#define fly_free          count_free
#include "flymc/zset.c"
#undef fly_alloc_array
#undef fly_realloc_array
#undef fly_free

#define ZSET_TEST_NO_MAIN
#include "test_zset.c"

#define HDR 16                 /* size header, keeps 16-byte alignment */

static int fail_now(void)
{
  n_allocs++;
  if( fail_in < 0 ) return 0;
  return fail_in-- == 0;
}

static void account(size_t add, size_t sub)
{
  live = live - sub + add;
  if( live > peak ) peak = live;
}

void *count_alloc_array(size_t n, size_t size)
{
  if( fail_now() || (size && n > (SIZE_MAX - HDR) / size) ) return NULL;
  unsigned char *p = fly_alloc_array(n * size + HDR, 1);
  if( !p ) return NULL;
  *(size_t *)(void *)p = n * size;
  account(n * size, 0);
  return p + HDR;
}

void *count_realloc_array(void *q, size_t n, size_t size)
{
  if( !q ) return count_alloc_array(n, size);
  if( fail_now() || (size && n > (SIZE_MAX - HDR) / size) ) return NULL;
  unsigned char *p = (unsigned char *)q - HDR;
  size_t old = *(size_t *)(void *)p;
  p = fly_realloc_array(p, n * size + HDR, 1);
  if( !p ) return NULL;
  *(size_t *)(void *)p = n * size;
  account(n * size, old);
  return p + HDR;
}

void count_free(void *q)
{
  if( !q ) return;
  unsigned char *p = (unsigned char *)q - HDR;
  account(0, *(size_t *)(void *)p);
  fly_free(p);
}

/* What z should hold, from its fields: struct, bitmap, arr, table. */
static size_t expect_bytes(const fly_zset *z)
{
  return sizeof *z + ((size_t)z->N / 64 + 1) * sizeof(uint64_t) +
         z->room * sizeof(uint32_t) + (z->room ? (z->mask + 1) * sizeof(slot) : 0);
}

static void memory(void)
{
  const int64_t N = 100000000;
  fly_zset *z = NULL;
  live = peak = 0;
  if( !TAP_OK(fly_zset_new(N, &z, NULL) == FLY_OK, "memory: new(10^8)") ) return;
  TAP_OK(live == expect_bytes(z) && live <= (size_t)N / 8 + 64,
         "memory: N = 10^8 all dark holds %zu bytes (%.4f a row; N/8 = %lld)",
         live, (double)live / (double)N, (long long)N / 8);

  fly_rng r;
  fly_rng_seed(&r, 11, 0);
  int64_t B = 0;
  while( B < 2000 ){
    int64_t n = (int64_t)fly_rng_below(&r, (uint64_t)N);
    if( fly_zset_brighten(z, n) >= 0 ) B++;
  }
  size_t extra = live - ((size_t)N / 64 + 1) * 8 - sizeof *z;
  TAP_OK(live == expect_bytes(z) && extra <= 40 * (size_t)B,
         "memory: 2000 bright rows add %zu bytes (%.1f a bright row; room %zu, "
         "%zu slots); %.4f bytes a row in all, peak %zu", extra,
         (double)extra / (double)B, z->room, z->mask + 1,
         (double)live / (double)N, peak);

  /* steady state: drain half, refill to the same B, many times */
  long before = n_allocs;
  int ok = 1;
  for( int cyc = 0; cyc < 20; cyc++ ){
    while( fly_zset_n_bright(z) > B / 2 )
      ok &= fly_zset_darken(z, fly_zset_ith_bright(z, (int64_t)fly_rng_below(&r,
                              (uint64_t)fly_zset_n_bright(z))), NULL) >= 0;
    while( fly_zset_n_bright(z) < B )
      (void)fly_zset_brighten(z, (int64_t)fly_rng_below(&r, (uint64_t)N));
  }
  TAP_OK(ok && n_allocs == before && fly_zset_check(z),
         "memory: 20 drain/refill cycles below the largest B allocate nothing");
  fly_zset_free(z);
  TAP_OK(live == 0, "memory: free returns every byte");
}

static void oom(void)
{
  fly_zset *z = NULL;
  fly_err err;
  fly_err_clear(&err);
  live = 0;
  fail_in = 1;                                  /* the bitmap */
  TAP_OK(fly_zset_new(1000, &z, &err) == FLY_NOMEM && z == NULL && live == 0,
         "oom: new fails cleanly (%s)", err.msg);
  fail_in = -1;
  if( fly_zset_new(1000, &z, NULL) ) return;
  int ok = 1;
  for( int64_t n = 0; n < MIN_ROOM; n++ ) ok &= fly_zset_brighten(z, 10 * n) == n;
  for( int k = 0; k < 2; k++ ){                 /* table, then arr */
    fail_in = k;
    ok &= fly_zset_brighten(z, 999) == FLY_ZSET_NOMEM;
    ok &= fly_zset_n_bright(z) == MIN_ROOM && !fly_zset_is_bright(z, 999) &&
          fly_zset_check(z) && z->room == MIN_ROOM;
    fail_in = k;
    ok &= fly_zset_reserve(z, 100, &err) == FLY_NOMEM && z->room == MIN_ROOM &&
          fly_zset_check(z);
  }
  fail_in = -1;
  TAP_OK(ok, "oom: brighten and reserve fail with z intact");
  ok = fly_zset_brighten(z, 999) == MIN_ROOM && fly_zset_check(z);
  TAP_OK(ok, "oom: brighten works once memory is back");
  int64_t list[100];
  for( int i = 0; i < 100; i++ ) list[i] = 7 * i;
  fail_in = 0;
  TAP_OK(fly_zset_set_bright(z, list, 100, &err) == FLY_NOMEM &&
         fly_zset_n_bright(z) == 0 && fly_zset_check(z),
         "oom: set_bright fails all dark (%s)", err.msg);
  fail_in = -1;
  TAP_OK(fly_zset_set_bright(z, list, 100, &err) == FLY_OK &&
         fly_zset_n_bright(z) == 100 && fly_zset_ith_bright(z, 99) == 693 &&
         fly_zset_check(z), "oom: set_bright works once memory is back");
  fly_zset_free(z);
}

int main(void)
{
  errors();
  /* every operation probes O(B) slots here: small N only */
  static const int64_t Ns[] = { 0, 1, 2, 3, 17, 300 };
  for( size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++ )
    run(Ns[i], 200000, 200 + i);
  sparse(100000000, 400, 100000, 8);
  memory();
  oom();
  return tap_done();
}
