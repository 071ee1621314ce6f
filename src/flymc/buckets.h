/*
 * buckets.h -- rows grouped by their gap key, for Gibbs refreshes of z by
 * thinning (DESIGN.md section 2).
 *
 * Every row has a key (stored in its bound page) such that its gap, and
 * hence its probability of being bright, is bounded by a function of the
 * key and of how far theta is from the MAP.  Rows are grouped into buckets
 * on a geometric grid of keys (4 per doubling); within a bucket candidates
 * are drawn with the bucket's largest key by geometric skipping, so a
 * refresh costs O(number of candidates + number of buckets), not O(N).
 * Memory: 4 bytes a row (perm) plus O(buckets).  Shared read-only by the
 * chains.
 */
#ifndef FLY_BUCKETS_H
#define FLY_BUCKETS_H

#include <stddef.h>
#include <stdint.h>

#include "store/pages.h"
#include "util/err.h"

typedef struct fly_buckets {
  int64_t   N;
  size_t    nb;      /* number of buckets */
  uint32_t *perm;    /* N row ids grouped by bucket */
  int64_t  *start;   /* nb + 1 offsets into perm */
  double   *key;     /* nb: the largest key of each bucket */
} fly_buckets;

/* Read the key column (index key_col of each bound row) of all rows by a
 * sequential scan of the bound pages and group the rows.  FLY_NUMERIC if a
 * key is negative or not finite (bounds not MAP-tuned). */
fly_rc fly_buckets_build(fly_pages *bnd, size_t key_col, fly_buckets *b,
                         fly_err *err);
void   fly_buckets_free(fly_buckets *b);

#endif
