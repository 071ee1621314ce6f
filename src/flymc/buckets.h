/*
 * buckets.h -- rows grouped by their gap key, for Gibbs refreshes of z by
 * thinning (docs/design.md §5.3).
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
 * out of core each fetch is a random read.  Each bucket position holds one
 * record: the row id, the row's xi and `tail` bytes the caller fills (the
 * row's sketch, sketch.h), so a candidate's checks cost one random load
 * into the index instead of one per array (at 10^8 rows each is a cache
 * and TLB miss).
 *
 * Memory: 4 (1 + n_xi) + tail bytes a row plus O(buckets).  Shared
 * read-only by the chains.
 */
#ifndef FLY_BUCKETS_H
#define FLY_BUCKETS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "models/model.h"
#include "store/pages.h"
#include "util/err.h"

typedef struct fly_buckets {
  int64_t   N;
  size_t    nb;      /* number of buckets */
  int64_t  *start;   /* nb + 1 offsets: bucket i is positions start[i] .. start[i+1]-1 */
  double   *key;     /* nb: the largest key of each bucket */
  double   *xi_lo;   /* nb: smallest |xi| of each bucket, or NULL (keys only) */
  double   *xi_hi;   /* nb: largest |xi| (+inf if some |xi| is not finite) */
  size_t    nbox;    /* the model's n_box, or 0 */
  double   *box;     /* nb * nbox: each bucket's box->prep constants, or NULL */
  size_t    nxi;     /* bound parameters a row: the model's n_xi */
  size_t    tail;    /* caller's bytes a record, after the xi */
  size_t    stride;  /* bytes a record: 4 + 4 nxi + tail */
  uint8_t  *rec;     /* N records in bucket order, unaligned: uint32 row id,
                      * nxi floats, tail bytes (see the accessors) */
  int64_t   chunk_rows, n_chunks;    /* the build's chunks of rows */
  struct fly_buckets_plan *plan;     /* build state; NULL once finished */
} fly_buckets;

/* The row at bucket position pos, its xi (copied: records are unaligned)
 * and its tail. */
static inline uint32_t fly_buckets_row(const fly_buckets *b, int64_t pos)
{
  uint32_t r;
  memcpy(&r, b->rec + (size_t)pos * b->stride, sizeof r);
  return r;
}
static inline void fly_buckets_xi(const fly_buckets *b, int64_t pos, float *xi)
{
  memcpy(xi, b->rec + (size_t)pos * b->stride + 4, b->nxi * sizeof *xi);
}
static inline uint8_t *fly_buckets_tail(const fly_buckets *b, int64_t pos)
{
  return b->rec + (size_t)pos * b->stride + 4 + 4 * b->nxi;
}
/* Start loading position pos's record (both of its cache lines). */
static inline void fly_buckets_prefetch(const fly_buckets *b, int64_t pos)
{
  const uint8_t *r = b->rec + (size_t)pos * b->stride;
  __builtin_prefetch(r);
  __builtin_prefetch(r + b->stride - 1);
}

/* Read every row's key and xi (bound row layout of tune.h: the model's
 * n_xi values, then the key) by a sequential scan of the bound pages, keep
 * the xi, and group the rows; when the model has a box table the buckets
 * are split by |xi| (the first value) too.  One thread, records without
 * tails.  FLY_NUMERIC if a key is negative or not finite (bounds not
 * MAP-tuned).  fly_buckets_build frees b on failure. */
fly_rc fly_buckets_build(fly_pages *bnd, const fly_model *m, fly_buckets *b,
                         fly_err *err);

/* The same in parts, for several threads (flymc/index.h), each with a
 * workspace and a handle of its own on the bound pages:
 *  1. fly_buckets_init allocates the records for bound pages shaped `in`,
 *     in n_chunks chunks of chunk_rows rows (a multiple of unit: the
 *     caller's page size, say; the last chunk may be shorter);
 *  2. fly_buckets_count, once for every chunk, in any order and threads;
 *  3. fly_buckets_layout, once, in one thread;
 *  4. fly_buckets_place, once for every chunk, in any order and threads:
 *     writes the chunk's records whole, the tail of row chunk * chunk_rows
 *     + i from tails + i * tail (NULL when tail is 0);
 *  5. fly_buckets_finish, once, with every workspace used: the buckets'
 *     extremes and box constants; the build state is freed.
 * Records are disjoint, so threads placing different chunks never write
 * the same bytes.  On any failure free b with fly_buckets_free once no
 * thread uses it.  FLY_CORRUPT if the bound pages change between the
 * scans. */
typedef struct fly_buckets_ws fly_buckets_ws;
fly_rc fly_buckets_init(const fly_pages_info *in, const fly_model *m, size_t tail,
                        int64_t unit, fly_buckets *b, fly_err *err);
fly_rc fly_buckets_ws_new(const fly_buckets *b, fly_buckets_ws **ws, fly_err *err);
void   fly_buckets_ws_free(fly_buckets_ws *ws);                 /* NULL: no-op */
fly_rc fly_buckets_count(fly_pages *bnd, fly_buckets *b, fly_buckets_ws *ws,
                         int64_t chunk, fly_err *err);
fly_rc fly_buckets_layout(fly_buckets *b, fly_err *err);
fly_rc fly_buckets_place(fly_pages *bnd, fly_buckets *b, fly_buckets_ws *ws,
                         int64_t chunk, const uint8_t *tails, fly_err *err);
fly_rc fly_buckets_finish(fly_buckets *b, const fly_model *m, fly_buckets_ws *const *ws,
                          size_t n_ws, fly_err *err);
/* The build keeps each bucket's box->prep constants when the model has them,
 * so a refresh's box bounds cost the r-dependent part only. */

/* An upper bound on gap_n(th) for every row n of bucket i, where r is
 * thin->radius(th, theta_map, key_prec): thin->upper(key_i, r), or the
 * smaller thin->box->upper over the bucket's xi range when both exist.
 * The chain thins with 1 - exp(-this). */
double fly_buckets_gap_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, double r);
/* fly_buckets_gap_upper of every bucket into out[0 .. nb), with the
 * model's box bounds of all buckets at once where it has upper_c_n
 * (within a few ulp of the one-bucket values; each still a bound, by the
 * box's margin).  work: 2 nb doubles. */
void   fly_buckets_gap_upper_all(const fly_buckets *b, const fly_model *m, double r,
                                 double *out, double *work);
/* An upper bound on gap_n(th) for row n (bound parameters xi_row) of
 * bucket i, given rho >= |x_n'(th - th_map)| (flymc/sketch.h): the model's
 * box->upper_rho on the bucket's box constants when it has one (a few
 * flops and two transcendentals), else fly_model_gap_upper_rho. */
double fly_buckets_row_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, const float *xi_row,
                             double rho);
void   fly_buckets_free(fly_buckets *b);

/* floor(4 log2 x) for finite x > 0, exactly (the grid of keys and |xi|,
 * computed for every row at every build): from x's exponent and three
 * comparisons of its mantissa, libm's log2 only for subnormals. */
int64_t fly_buckets_quarter_log2(double x);

#endif
