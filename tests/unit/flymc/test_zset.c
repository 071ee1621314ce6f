/*
 * test_zset.c -- the z structure against a naive bool array (SQLite Bitvec
 * self-test style): long random sequences of brighten/darken/set_bright on
 * several N (0 and 1 included), with a mirror of arr[0..B) maintained only
 * from the moves darken/brighten report, as the bright-row cache does.
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
    if( (p < fly_zset_n_bright(z)) != naive[n] ) return 0;
  }
  if( fly_zset_n_bright(z) != B ) return 0;
  for( int64_t i = 0; i < B; i++ ){
    int64_t n = fly_zset_ith_bright(z, i);
    if( !naive[n] || fly_zset_pos(z, n) != i || mirror[i] != n ) return 0;
  }
  for( int64_t i = 0; i < N - B; i++ ){
    int64_t n = fly_zset_ith_dark(z, i);
    if( naive[n] || fly_zset_pos(z, n) != B + i ) return 0;
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

  /* all bright, then all dark, in a random order */
  int ok = 1;
  for( int64_t n = 0; n < N; n++ ) if( !naive[n] ){
    int64_t p = fly_zset_brighten(z, n);
    mirror[p] = n; naive[n] = 1;
  }
  ok &= fly_zset_n_bright(z) == N && agree(z, naive, mirror, N);
  for( int64_t n = N - 1; n >= 0; n-- ){
    int64_t from;
    int64_t p = fly_zset_darken(z, n, &from);
    ok &= p >= 0;
    mirror[p] = mirror[from];
    naive[n] = 0;
  }
  ok &= fly_zset_n_bright(z) == 0 && agree(z, naive, mirror, N);
  TAP_OK(ok, "N=%lld: fill and drain", (long long)N);

  free(naive); free(mirror); free(list);
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
  TAP_OK(fly_zset_darken(z, 3, NULL) == 0 && fly_zset_n_bright(z) == 0,
         "darken with moved_from NULL");
  fly_zset_free(z);
}

int main(void)
{
  errors();
  static const int64_t Ns[] = { 0, 1, 2, 3, 17, 1000, 100000 };
  for( size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++ )
    run(Ns[i], Ns[i] <= 3 ? 200000 : 1000000, 100 + i);
  return tap_done();
}
