/*
 * zset.h -- the brightness variables z_1..z_N (FlyMC paper, section 3.3).
 *
 * The bright rows, in an order the caller can see: arr[0..B) holds the B
 * bright row ids (positions 0..B-1).  A bitmap of N bits answers "is n
 * bright?" and a hash table maps each bright row to its position, so
 * brighten/darken/is_bright/pos/ith_bright are O(1) (brighten amortised).
 * Memory: N/8 bytes (1 bit a row) plus O(B): 4 bytes of arr and 16 to 32
 * bytes of hash table a bright row.  Row ids are stored as uint32_t, so
 * N < 2^32.  The dark rows have no order and no per-row storage beyond
 * their bit.
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

/* brighten's return value when growing arr or the hash table failed */
#define FLY_ZSET_NOMEM ((int64_t)-2)

/* All N rows dark.  N in [0, FLY_ZSET_MAX_N]; FLY_RANGE otherwise,
 * FLY_NOMEM if the bitmap cannot be allocated.  *pz NULL on failure.
 * Allocates N/8 bytes; room for bright rows comes later (reserve). */
fly_rc  fly_zset_new(int64_t N, fly_zset **pz, fly_err *err);
void    fly_zset_free(fly_zset *z);                 /* NULL: no-op */

/* Make room for n bright rows (arr and a hash table at load <= 1/2), so
 * that brighten allocates nothing while B < n.  Capacity never shrinks.
 * FLY_NOMEM (z unchanged) if it cannot be allocated; n > N is FLY_RANGE. */
fly_rc  fly_zset_reserve(fly_zset *z, int64_t n, fly_err *err);

int64_t fly_zset_n(const fly_zset *z);              /* N */
int64_t fly_zset_n_bright(const fly_zset *z);       /* B */
int     fly_zset_is_bright(const fly_zset *z, int64_t n);
/* The dark rows of [r0, r0 + n) as offsets from r0, ascending, into off
 * (room for n); returns their count. */
size_t  fly_zset_dark_in(const fly_zset *z, int64_t r0, size_t n, int64_t *off);
/* Start loading row n's bit into the CPU cache (for a batch of is_bright
 * calls on rows at random: their memory latencies then overlap). */
void    fly_zset_prefetch(const fly_zset *z, int64_t n);
/* Position of a bright row n in arr (0..B-1); -1 if n is dark. */
int64_t fly_zset_pos(const fly_zset *z, int64_t n);

/* Make n bright.  Returns its new position (the old B), or -1 if n was
 * already bright (nothing changes).  Grows arr/the hash table (doubling)
 * when B reaches the reserved room; FLY_ZSET_NOMEM (nothing changes) if that
 * fails.  Never allocates while B < the room reserved or reached before. */
int64_t fly_zset_brighten(fly_zset *z, int64_t n);

/* Make n dark.  If n was bright at position p, the bright row that sat at
 * position B-1 moves to p: returns p and sets *moved_from = B-1 (old B), so
 * a mirror copies slot B-1 into slot p (when p == B-1 nothing moves).
 * Returns -1 if n was already dark (*moved_from untouched).  Never
 * allocates. */
int64_t fly_zset_darken(fly_zset *z, int64_t n, int64_t *moved_from);

int64_t fly_zset_ith_bright(const fly_zset *z, int64_t i); /* 0 <= i < B */

/* Set the bright rows to exactly list[0..n) in that order (positions 0..n-1),
 * all others dark.  For restoring a checkpoint.  FLY_RANGE on a bad or
 * repeated index, FLY_NOMEM if room for n bright rows cannot be allocated
 * (z is then all dark). */
fly_rc  fly_zset_set_bright(fly_zset *z, const int64_t *list, int64_t n,
                            fly_err *err);

/* 1 if the bitmap has exactly B bits set, each arr[i] (i < B) is a row
 * whose bit is set and which the hash table maps to i, the table holds
 * exactly B entries at load <= 1/2, and 0 <= B <= N.  O(N/64 + capacity);
 * use inside assert(). */
int     fly_zset_check(const fly_zset *z);

#endif
