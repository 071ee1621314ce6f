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
 *
 * The index also keeps every row's bound parameters xi (as stored: f32), so
 * a candidate costs one data-page fetch, not a data page and a bound page:
 * out of core each fetch is a random read.
 *
 * Memory: 4 (1 + n_xi) bytes a row (perm, xi) plus O(buckets).  Shared
 * read-only by the chains.
 */
#ifndef FLY_BUCKETS_H
#define FLY_BUCKETS_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "store/pages.h"
#include "util/err.h"

typedef struct fly_buckets {
  int64_t   N;
  size_t    nb;      /* number of buckets */
  uint32_t *perm;    /* N row ids grouped by bucket */
  int64_t  *start;   /* nb + 1 offsets into perm */
  double   *key;     /* nb: the largest key of each bucket */
  double   *xi_lo;   /* nb: smallest |xi| of each bucket, or NULL (keys only) */
  double   *xi_hi;   /* nb: largest |xi| (+inf if some |xi| is not finite) */
  size_t    nbox;    /* the model's n_box, or 0 */
  double   *box;     /* nb * nbox: each bucket's box_prep constants, or NULL */
  size_t    nxi;     /* bound parameters a row: the model's n_xi */
  float    *xi;      /* N * nxi: row n's parameters at xi[n * nxi] */
} fly_buckets;

/* Read every row's key and xi (bound row layout of tune.h: the model's
 * n_xi values, then the key) by a sequential scan of the bound pages, keep
 * the xi, and group the rows; when the model has gap_upper_box the buckets
 * are split by |xi| (the first value) too.  FLY_NUMERIC if a key is
 * negative or not finite (bounds not MAP-tuned). */
fly_rc fly_buckets_build(fly_pages *bnd, const fly_model *m, fly_buckets *b,
                         fly_err *err);
/* The build keeps each bucket's box_prep constants when the model has them,
 * so a refresh's box bounds cost the r-dependent part only. */

/* An upper bound on gap_n(th) for every row n of bucket i, where r is
 * type->radius(th, theta_map, key_prec): type->gap_upper(key_i, r), or the
 * smaller type->gap_upper_box over the bucket's xi range when both exist.
 * The chain thins with 1 - exp(-this). */
double fly_buckets_gap_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, double r);
/* An upper bound on gap_n(th) for row n (bound parameters xi_row) of
 * bucket i, given rho >= |x_n'(th - th_map)| (flymc/sketch.h): the model's
 * gap_upper_rhoc on the bucket's box constants when it has one (a few
 * flops and two transcendentals), else fly_model_gap_upper_rho. */
double fly_buckets_row_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, const float *xi_row,
                             double rho);
void   fly_buckets_free(fly_buckets *b);

#endif
