/*
 * test_zset.c -- the z structure against a naive bool array (SQLite Bitvec
 * self-test style): long random sequences of brighten/darken/set_bright on
 * several N (0 and 1 included), with a mirror of arr[0..B) maintained only
 * from the moves darken/brighten report, as the bright-row cache does.
 * Repeated fill-and-drain cycles grow the hash table several times and
 * delete through long probe runs; a sparse run uses row ids spread over
 * N = 10^8.  test_zset_white.c compiles zset.c into this file's tests with
 * a colliding hash and counts the bytes it allocates.
 */
#include "flymc/zset.h"

#include <stdlib.h>

#include "tap.h"
#include "util/rng.h"

/* Everything the naive model and the mirror can say about z; 1 if agree. */
static int agree(const fly_zset *z, const unsigned char *naive,
                 const int64_t *mirror, int64_t N)
{
  int64_t B = 0;
  if( fly_zset_n(z) != N || !fly_zset_check(z) ) return 0;
  for( int64_t n = 0; n < N; n++ ){
    B += naive[n];
    if( fly_zset_is_bright(z, n) != naive[n] ) return 0;
    int64_t p = fly_zset_pos(z, n);
    if( naive[n] ? !(p >= 0 && p < fly_zset_n_bright(z)) : p != -1 ) return 0;
  }
  if( fly_zset_n_bright(z) != B ) return 0;
  /* dark_in over ranges that start and end inside and across words */
  static int64_t off[200];
  for( int64_t r0 = 0; r0 < N; r0 += 37 ){
    size_t n = (size_t)(N - r0 < 150 ? N - r0 : 150), k = 0;
    size_t got = fly_zset_dark_in(z, r0, n, off);
    for( size_t i = 0; i < n; i++ )
      if( !naive[r0 + (int64_t)i] && (k >= got || off[k++] != (int64_t)i) ) return 0;
    if( k != got ) return 0;
  }
  for( int64_t i = 0; i < B; i++ ){
    int64_t n = fly_zset_ith_bright(z, i);
    if( !naive[n] || fly_zset_pos(z, n) != i || mirror[i] != n ) return 0;
  }
  return 1;
}

static void run(int64_t N, long ops, uint64_t seed)
{
  fly_zset *z = NULL;
  fly_err err;
  fly_err_clear(&err);
  fly_rc rc = fly_zset_new(N, &z, &err);
  if( !TAP_OK(rc == FLY_OK && z, "new(%lld)", (long long)N) ) return;
  unsigned char *naive = calloc((size_t)N + 1, 1);
  int64_t *mirror = calloc((size_t)N + 1, sizeof *mirror);
  int64_t *list = calloc((size_t)N + 1, sizeof *list);
  fly_rng r;
  fly_rng_seed(&r, seed, 0);
  int ok_ops = 1, ok_agree = agree(z, naive, mirror, N), ok_ret = 1;
  long nb = 0, nd = 0, nset = 0, nchecks = 0;
  /* checking everything is O(N): do it about every N ops (and at least
   * every 4096) so the whole run stays O(ops) */
  long every = N < 64 ? 1 : (N < 4096 ? (long)N : 4096);
  for( long k = 0; k < ops && N > 0; k++ ){
    uint64_t u = fly_rng_below(&r, 1000);
    int64_t n = (int64_t)fly_rng_below(&r, (uint64_t)N);
    /* drift the bright fraction around: bias toward brighten in the first
     * and third quarters of the run */
    int bias = ((k * 4 / ops) % 2 == 0) ? 100 : -100;
    if( u < 999 && (int64_t)u < 500 + bias ){
      int64_t B0 = fly_zset_n_bright(z);
      int64_t p = fly_zset_brighten(z, n);
      if( naive[n] ) ok_ret &= p == -1 && fly_zset_n_bright(z) == B0;
      else {
        ok_ret &= p == B0 && fly_zset_n_bright(z) == B0 + 1 &&
                  fly_zset_ith_bright(z, B0) == n;
        mirror[p] = n;
        naive[n] = 1;
        nb++;
      }
    } else if( u < 999 ){
      int64_t B0 = fly_zset_n_bright(z), from = -7;
      int64_t p = fly_zset_darken(z, n, &from);
      if( !naive[n] ) ok_ret &= p == -1 && from == -7 &&
                                fly_zset_n_bright(z) == B0;
      else {
        ok_ret &= p >= 0 && p < B0 && from == B0 - 1 &&
                  mirror[p] == n && fly_zset_n_bright(z) == B0 - 1;
        mirror[p] = mirror[from];       /* what the bright cache does */
        naive[n] = 0;
        nd++;
      }
    } else if( N <= 1000 || fly_rng_below(&r, 100) == 0 ){
      /* set_bright (O(N)) from a random subset in random order */
      int64_t m = 0;
      for( int64_t i = 0; i < N; i++ ) if( fly_rng_bernoulli(&r, 0.3) ) list[m++] = i;
      for( int64_t i = m - 1; i > 0; i-- ){
        int64_t j = (int64_t)fly_rng_below(&r, (uint64_t)i + 1), t = list[i];
        list[i] = list[j]; list[j] = t;
      }
      rc = fly_zset_set_bright(z, list, m, &err);
      ok_ops &= rc == FLY_OK && fly_zset_n_bright(z) == m;
      for( int64_t i = 0; i < N; i++ ) naive[i] = 0;
      for( int64_t i = 0; i < m; i++ ){
        naive[list[i]] = 1;
        mirror[i] = list[i];
        ok_ops &= fly_zset_ith_bright(z, i) == list[i];
      }
      nset++;
    }
    if( k % every == 0 || k == ops - 1 ){
      ok_agree &= agree(z, naive, mirror, N);
      nchecks++;
    }
  }
  TAP_OK(ok_ret, "N=%lld: return values and moves (%ld brightened, %ld darkened)",
         (long long)N, nb, nd);
  TAP_OK(ok_ops, "N=%lld: set_bright order (%ld calls)", (long long)N, nset);
  TAP_OK(ok_agree && agree(z, naive, mirror, N),
         "N=%lld: agrees with the naive array (%ld full checks)", (long long)N,
         nchecks);

  /* Fill and drain cycles, each to a new bright fraction, in random orders:
   * the table grows while the bright set passes its old maximum, and every
   * darken deletes through whatever probe runs the fill left. */
  int ok = 1;
  int64_t *perm = calloc((size_t)N + 1, sizeof *perm);
  static const int eighths[] = { 1, 4, 2, 8, 3 };
  while( fly_zset_n_bright(z) > 0 ){             /* start all dark */
    int64_t from, n = fly_zset_ith_bright(z, 0), p = fly_zset_darken(z, n, &from);
    mirror[p] = mirror[from];
    naive[n] = 0;
  }
  for( size_t c = 0; c < sizeof eighths / sizeof eighths[0]; c++ ){
    for( int64_t i = 0; i < N; i++ ) perm[i] = i;
    for( int64_t i = N - 1; i > 0; i-- ){
      int64_t j = (int64_t)fly_rng_below(&r, (uint64_t)i + 1), t = perm[i];
      perm[i] = perm[j]; perm[j] = t;
    }
    int64_t want = N * eighths[c] / 8;
    for( int64_t i = 0; i < N && fly_zset_n_bright(z) < want; i++ ){
      int64_t n = perm[i];
      if( naive[n] ) continue;
      int64_t B0 = fly_zset_n_bright(z), p = fly_zset_brighten(z, n);
      ok &= p == B0;
      if( p < 0 ) break;
      mirror[p] = n; naive[n] = 1;
    }
    ok &= fly_zset_n_bright(z) == want && agree(z, naive, mirror, N);
    for( int64_t i = N - 1; i >= 0; i-- ){
      int64_t n = perm[i], from = -7, B0 = fly_zset_n_bright(z);
      int64_t p = fly_zset_darken(z, n, &from);
      if( !naive[n] ){ ok &= p == -1 && from == -7; continue; }
      ok &= p >= 0 && p < B0 && from == B0 - 1 && mirror[p] == n;
      if( p < 0 ) break;
      mirror[p] = mirror[from];
      naive[n] = 0;
    }
    ok &= fly_zset_n_bright(z) == 0 && agree(z, naive, mirror, N);
  }
  TAP_OK(ok, "N=%lld: fill and drain to 1/8, 1/2, 1/4, all, 3/8",
         (long long)N);

  free(naive); free(mirror); free(list); free(perm);
  fly_zset_free(z);
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Row ids spread over a large N (only the bitmap is per-row): a pool of K
 * distinct ids, word-boundary ones included, brightened and darkened at
 * random; the naive model is per pool entry.  Ids outside the pool must
 * stay dark. */
static void sparse(int64_t N, int64_t K, long ops, uint64_t seed)
{
  fly_zset *z = NULL;
  if( !TAP_OK(fly_zset_new(N, &z, NULL) == FLY_OK, "sparse: new(%lld)",
              (long long)N) ) return;
  fly_rng r;
  fly_rng_seed(&r, seed, 0);
  int64_t *pool = calloc((size_t)K, sizeof *pool);
  int64_t *mirror = calloc((size_t)K, sizeof *mirror);  /* row ids by position */
  unsigned char *naive = calloc((size_t)K, 1);
  static const int64_t edge[] = { 0, 1, 63, 64, 65, 127, 128 };
  int64_t k = 0;
  for( size_t i = 0; i < sizeof edge / sizeof edge[0]; i++ ) pool[k++] = edge[i];
  pool[k++] = N - 1; pool[k++] = N - 2; pool[k++] = N - 64; pool[k++] = (N - 1) / 64 * 64;
  while( k < K ) pool[k++] = (int64_t)fly_rng_below(&r, (uint64_t)N);
  qsort(pool, (size_t)K, sizeof *pool, cmp_i64);
  k = 0;                                        /* drop repeats */
  for( int64_t i = 0; i < K; i++ ) if( i == 0 || pool[i] != pool[k - 1] ) pool[k++] = pool[i];
  K = k;
  int ok_ret = 1, ok_agree = 1, ok_dark = 1, ok_check = 1;
  int64_t B = 0, maxB = 0;
  for( long op = 0; op < ops; op++ ){
    int64_t j = (int64_t)fly_rng_below(&r, (uint64_t)K), n = pool[j];
    /* the bright set drifts up and down through several table sizes */
    double pb = (op / (ops / 6)) % 2 == 0 ? 0.7 : 0.3;
    if( fly_rng_uniform(&r) < pb ){
      int64_t p = fly_zset_brighten(z, n);
      if( naive[j] ) ok_ret &= p == -1;
      else { ok_ret &= p == B; if( p >= 0 ) mirror[p] = n; naive[j] = 1; B++; }
    }else{
      int64_t from = -7, p = fly_zset_darken(z, n, &from);
      if( !naive[j] ) ok_ret &= p == -1 && from == -7;
      else {
        ok_ret &= p >= 0 && p < B && from == B - 1 && mirror[p] == n;
        if( p >= 0 ) mirror[p] = mirror[from];
        naive[j] = 0; B--;
      }
    }
    if( B > maxB ) maxB = B;
    ok_ret &= fly_zset_n_bright(z) == B;
    if( op % 4096 == 0 || op == ops - 1 ){
      for( int64_t i = 0; i < K; i++ ){
        int64_t p = fly_zset_pos(z, pool[i]);
        ok_agree &= fly_zset_is_bright(z, pool[i]) == naive[i] &&
                    (naive[i] ? p >= 0 && p < B && mirror[p] == pool[i] : p == -1);
      }
      for( int64_t i = 0; i < B; i++ ) ok_agree &= fly_zset_ith_bright(z, i) == mirror[i];
      for( int t = 0; t < 1000; t++ ){
        int64_t m = (int64_t)fly_rng_below(&r, (uint64_t)N);
        if( !bsearch(&m, pool, (size_t)K, sizeof *pool, cmp_i64) )
          ok_dark &= !fly_zset_is_bright(z, m) && fly_zset_pos(z, m) == -1;
      }
    }
    if( op % (ops / 4) == 0 || op == ops - 1 ) ok_check &= fly_zset_check(z);
  }
  TAP_OK(ok_ret, "sparse N=%lld: return values and moves (%lld ids, max B %lld)", (long long)N, (long long)K, (long long)maxB);
  TAP_OK(ok_agree, "sparse N=%lld: agrees with the naive pool",
         (long long)N);
  TAP_OK(ok_dark, "sparse N=%lld: ids outside the pool are dark",
         (long long)N);
  TAP_OK(ok_check, "sparse N=%lld: fly_zset_check", (long long)N);
  free(pool); free(mirror); free(naive);
  fly_zset_free(z);
}

static void errors(void)
{
  fly_zset *z = (fly_zset *)&z;         /* must be reset to NULL */
  fly_err err;
  fly_err_clear(&err);
  TAP_OK(fly_zset_new(-1, &z, &err) == FLY_RANGE && z == NULL &&
         err.code == FLY_RANGE, "new(-1): FLY_RANGE, NULL (%s)", err.msg);
  z = (fly_zset *)&z;
  TAP_OK(fly_zset_new(FLY_ZSET_MAX_N + 1, &z, NULL) == FLY_RANGE && z == NULL,
         "new(2^32): FLY_RANGE");
  fly_zset_free(NULL);
  TAP_OK(1, "free(NULL) is a no-op");

  TAP_OK(fly_zset_new(0, &z, &err) == FLY_OK && z, "new(0)");
  TAP_OK(fly_zset_n(z) == 0 && fly_zset_n_bright(z) == 0 && fly_zset_check(z),
         "N=0: empty and valid");
  TAP_OK(fly_zset_set_bright(z, NULL, 0, &err) == FLY_OK, "N=0: set_bright of nothing");
  int64_t one = 0;
  fly_err_clear(&err);
  TAP_OK(fly_zset_set_bright(z, &one, 1, &err) == FLY_RANGE, "N=0: set_bright {0} (%s)",
         err.msg);
  fly_zset_free(z);

  TAP_OK(fly_zset_new(10, &z, &err) == FLY_OK, "new(10)");
  int64_t good[3] = { 7, 2, 9 };
  TAP_OK(fly_zset_set_bright(z, good, 3, &err) == FLY_OK &&
         fly_zset_ith_bright(z, 0) == 7 && fly_zset_ith_bright(z, 1) == 2 &&
         fly_zset_ith_bright(z, 2) == 9 && fly_zset_pos(z, 2) == 1,
         "set_bright keeps order");
  int64_t bad[3] = { 1, 10, 3 };
  fly_err_clear(&err);
  TAP_OK(fly_zset_set_bright(z, bad, 3, &err) == FLY_RANGE &&
         fly_zset_n_bright(z) == 0 && fly_zset_check(z) && err.code == FLY_RANGE,
         "set_bright out of range: FLY_RANGE, all dark (%s)", err.msg);
  int64_t neg[2] = { 4, -1 };
  TAP_OK(fly_zset_set_bright(z, neg, 2, &err) == FLY_RANGE &&
         fly_zset_n_bright(z) == 0 && fly_zset_check(z), "set_bright -1: FLY_RANGE");
  (void)fly_zset_set_bright(z, good, 3, NULL);
  int64_t rep[4] = { 5, 6, 5, 0 };
  fly_err_clear(&err);
  TAP_OK(fly_zset_set_bright(z, rep, 4, &err) == FLY_RANGE &&
         fly_zset_n_bright(z) == 0 && fly_zset_check(z),
         "set_bright repeated row: FLY_RANGE, all dark (%s)", err.msg);
  int64_t all[11] = { 0 };
  TAP_OK(fly_zset_set_bright(z, all, 11, NULL) == FLY_RANGE &&
         fly_zset_n_bright(z) == 0, "set_bright n > N: FLY_RANGE");
  TAP_OK(fly_zset_set_bright(z, all, -1, NULL) == FLY_RANGE, "set_bright n < 0");
  TAP_OK(fly_zset_darken(z, 3, NULL) == -1, "darken of a dark row is -1");
  TAP_OK(fly_zset_brighten(z, 3) == 0 && fly_zset_brighten(z, 3) == -1 &&
         fly_zset_n_bright(z) == 1, "brighten twice: second is -1");
  TAP_OK(fly_zset_pos(z, 3) == 0 && fly_zset_pos(z, 4) == -1,
         "pos of a bright row is its position, of a dark row -1");
  TAP_OK(fly_zset_reserve(z, 1000, &err) == FLY_OK && fly_zset_check(z) &&
         fly_zset_reserve(z, 5, &err) == FLY_OK && fly_zset_check(z) &&
         fly_zset_ith_bright(z, 0) == 3, "reserve past N is clamped, never shrinks");
  TAP_OK(fly_zset_darken(z, 3, NULL) == 0 && fly_zset_n_bright(z) == 0,
         "darken with moved_from NULL");
  fly_zset_free(z);
}

#ifndef ZSET_TEST_NO_MAIN
int main(void)
{
  errors();
  static const int64_t Ns[] = { 0, 1, 2, 3, 17, 1000, 100000 };
  for( size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++ )
    run(Ns[i], Ns[i] <= 3 ? 200000 : 1000000, 100 + i);
  sparse(100000000, 20000, 600000, 7);
  return tap_done();
}
#endif
