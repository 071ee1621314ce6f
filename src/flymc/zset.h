/*
 * zset.h -- the brightness variables z_1..z_N (FlyMC paper, section 3.3).
 *
 * Two arrays of length N: arr holds every index once, bright ones first
 * (positions 0..B-1), dark after; tab[n] is the position of n in arr.  B is
 * the bright count.  brighten/darken/ith_bright/ith_dark are O(1).  Indices
 * are stored as uint32_t (8 bytes a row), so N < 2^32.
 *
 * The bright cache mirrors arr[0..B): a row's data sits at the same position
 * in the dense bright block.  So brighten/darken report the moves they make.
 * Includes only err.h and mem.h.
 */
#ifndef FLY_ZSET_H
#define FLY_ZSET_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct fly_zset fly_zset;

#define FLY_ZSET_MAX_N ((int64_t)UINT32_MAX)

/* All N rows dark.  N in [0, FLY_ZSET_MAX_N]; FLY_RANGE otherwise,
 * FLY_NOMEM if the arrays cannot be allocated.  *pz NULL on failure. */
fly_rc  fly_zset_new(int64_t N, fly_zset **pz, fly_err *err);
void    fly_zset_free(fly_zset *z);                 /* NULL: no-op */

int64_t fly_zset_n(const fly_zset *z);              /* N */
int64_t fly_zset_n_bright(const fly_zset *z);       /* B */
int     fly_zset_is_bright(const fly_zset *z, int64_t n);
int64_t fly_zset_pos(const fly_zset *z, int64_t n); /* position of n in arr */

/* Make n bright.  Returns its new position (the old B), or -1 if n was
 * already bright (nothing changes). */
int64_t fly_zset_brighten(fly_zset *z, int64_t n);

/* Make n dark.  If n was bright at position p, the bright row that sat at
 * position B-1 moves to p: returns p and sets *moved_from = B-1 (old B), so
 * a mirror copies slot B-1 into slot p (when p == B-1 nothing moves).
 * Returns -1 if n was already dark. */
int64_t fly_zset_darken(fly_zset *z, int64_t n, int64_t *moved_from);

int64_t fly_zset_ith_bright(const fly_zset *z, int64_t i); /* 0 <= i < B */
int64_t fly_zset_ith_dark(const fly_zset *z, int64_t i);   /* 0 <= i < N-B */

/* Set the bright rows to exactly list[0..n) in that order (positions 0..n-1),
 * all others dark.  For restoring a checkpoint.  FLY_RANGE on a bad or
 * repeated index (z is then all dark). */
fly_rc  fly_zset_set_bright(fly_zset *z, const int64_t *list, int64_t n,
                            fly_err *err);

/* 1 if arr and tab are inverse permutations and 0 <= B <= N.  O(N); use
 * inside assert(). */
int     fly_zset_check(const fly_zset *z);

#endif
