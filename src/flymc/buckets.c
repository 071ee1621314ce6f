/*
 * buckets.c -- grouping rows by gap key (see buckets.h).
 *
 * Bucket of key k > 0: floor(4 log2 k) - lo, clamped to [0, nb); keys of 0
 * (a row whose gap can never be positive, e.g. all-zero features) go to
 * bucket 0 too: their bucket bound is still an upper bound.  Two scans of
 * the bound pages: count, then place (a counting sort).
 */
#include "flymc/buckets.h"

#include <math.h>
#include <string.h>

#include "util/mem.h"

#define PER_DOUBLING 4.0
#define MAX_BUCKETS  512

static int64_t grid(double k)
{
  if( !(k > 0) ) return INT64_MIN;
  return (int64_t)floor(PER_DOUBLING * log2(k));
}

typedef struct scan_ctx {
  fly_pages *p;
  double    *page;
  size_t     col, width;
} scan_ctx;

/* Visit every key in row order; pass 0 collects range, pass 1 counts,
 * pass 2 places. */
static fly_rc scan(scan_ctx *s, int pass, int64_t *lo, int64_t *hi,
                   fly_buckets *b, int64_t *fill, fly_err *err)
{
  const fly_pages_info *in = fly_pages_info_of(s->p);
  int64_t row = 0;
  for(int64_t pg = 0; pg < in->n_pages; pg++){
    size_t n = 0;
    fly_rc rc = fly_pages_read_page(s->p, pg, s->page, &n, err);
    if( rc ) return rc;
    for(size_t i = 0; i < n; i++, row++){
      double k = s->page[i * s->width + s->col];
      if( !(k >= 0) || !isfinite(k) )
        return fly_fail(err, FLY_NUMERIC, "row %lld has gap key %g: the bounds "
                        "are not MAP-tuned (use --z implicit or --bounds map)",
                        (long long)row + 1, k);
      int64_t g = grid(k);
      if( pass == 0 ){
        if( g != INT64_MIN ){ if( g < *lo ) *lo = g; if( g > *hi ) *hi = g; }
        continue;
      }
      int64_t bi = g == INT64_MIN ? 0 : g - *lo;
      if( bi < 0 ) bi = 0;
      if( bi >= (int64_t)b->nb ) bi = (int64_t)b->nb - 1;
      if( pass == 1 ){
        b->start[bi + 1]++;
        if( k > b->key[bi] ) b->key[bi] = k;
      }else{
        b->perm[fill[bi]++] = (uint32_t)row;
      }
    }
  }
  return FLY_OK;
}

fly_rc fly_buckets_build(fly_pages *bnd, size_t key_col, fly_buckets *b,
                         fly_err *err)
{
  const fly_pages_info *in = fly_pages_info_of(bnd);
  scan_ctx s = { bnd, NULL, key_col, in->width };
  int64_t lo = INT64_MAX, hi = INT64_MIN, *fill = NULL;
  fly_rc rc = FLY_OK;

  memset(b, 0, sizeof *b);
  b->N = in->n_rows;
  s.page = fly_alloc_array((size_t)in->page_rows, in->width * sizeof(double));
  if( !s.page ){ rc = fly_fail(err, FLY_NOMEM, "bucket scan"); goto done; }
  if( (rc = scan(&s, 0, &lo, &hi, b, NULL, err)) ) goto done;
  if( lo == INT64_MAX ){ lo = hi = 0; }
  /* Keep the top MAX_BUCKETS levels; anything lower shares bucket 0. */
  if( hi - lo + 1 > MAX_BUCKETS ) lo = hi - MAX_BUCKETS + 1;
  b->nb = (size_t)(hi - lo + 1);
  b->start = fly_alloc_array(b->nb + 1, sizeof *b->start);
  b->key = fly_alloc_array(b->nb, sizeof *b->key);
  fill = fly_alloc_array(b->nb, sizeof *fill);
  b->perm = fly_alloc_array((size_t)b->N, sizeof *b->perm);
  if( !b->start || !b->key || !fill || !b->perm ){
    rc = fly_fail(err, FLY_NOMEM, "buckets for %lld rows", (long long)b->N);
    goto done;
  }
  if( (rc = scan(&s, 1, &lo, &hi, b, NULL, err)) ) goto done;
  for(size_t i = 0; i < b->nb; i++){
    b->start[i + 1] += b->start[i];
    fill[i] = b->start[i];
  }
  rc = scan(&s, 2, &lo, &hi, b, fill, err);
done:
  fly_free(s.page);
  fly_free(fill);
  if( rc ) fly_buckets_free(b);
  return rc;
}

void fly_buckets_free(fly_buckets *b)
{
  if( !b ) return;
  fly_free(b->perm);
  fly_free(b->start);
  fly_free(b->key);
  memset(b, 0, sizeof *b);
}
