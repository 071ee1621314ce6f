/*
 * buckets.c -- grouping rows by gap key and bound parameter (see buckets.h).
 *
 * Key level of key k > 0: floor(4 log2 k) - lo, clamped to [0, 512); keys
 * of 0 (a row whose gap can never be positive, e.g. all-zero features) go
 * to level 0 too: their bucket bound is still an upper bound.  Xi bin of
 * v = |xi|: 0 for v < 1/16, else 1 + floor(4 log2 16 v) clamped to
 * [1, 256), non-finite v in the last bin; with no xi column every row is in
 * bin 0.  Buckets are the non-empty (level, bin) cells in that order.  The
 * grid only decides how tight the buckets are: each bucket keeps the exact
 * largest key and the exact smallest and largest |xi| of its rows.
 *
 * Two scans of the bound pages: the first counts rows on a fine grid of
 * every level a finite double can have (FINE_LEVELS x the xi bins, 17 MB
 * for a model with xi, freed after), from which the range of levels and
 * the counts of the cells follow; the second places the rows in row order
 * (a counting sort).  Plus O(fine cells) for the cell map.
 */
#include "flymc/buckets.h"

#include <math.h>
#include <string.h>

#include "util/mem.h"

#define PER_DOUBLING 4.0
#define MAX_LEVELS   512
#define XI_BINS      256
#define CAND_MIN     0.01    /* see fly_buckets_gap_upper */
#define NO_XI        ((size_t)-1)
/* floor(4 log2 k) of a finite k > 0 lies in [-4296, 4095]: fine level
 * g - FINE_LO + 1, and fine level 0 for keys of 0 */
#define FINE_LO      (-4400)
#define FINE_LEVELS  8600

static int64_t grid(double k)
{
  if( !(k > 0) ) return INT64_MIN;
  return (int64_t)floor(PER_DOUBLING * log2(k));
}

static int64_t xi_bin(double v)
{
  if( !isfinite(v) ) return XI_BINS - 1;
  if( !(v >= 0.0625) ) return 0;
  double g = 1.0 + floor(PER_DOUBLING * log2(16.0 * v));
  return g < XI_BINS - 1 ? (int64_t)g : XI_BINS - 1;
}

typedef struct scan_ctx {
  fly_pages *p;
  double    *page;
  size_t     col, xcol, width;  /* col: the key; the n_xi = col xi come first */
  int64_t    lo, hi;          /* key levels kept: [lo, hi] */
  size_t     nlev, nbin;
  int64_t   *cell;            /* nlev * nbin: count, then bucket index or -1 */
  int64_t   *fine;            /* FINE_LEVELS * nbin: counts of the first scan */
} scan_ctx;

static size_t fine_level(int64_t g)
{
  if( g == INT64_MIN ) return 0;
  int64_t f = g - FINE_LO + 1;
  return f < 1 ? 1 : f >= FINE_LEVELS ? FINE_LEVELS - 1 : (size_t)f;   /* clamps nothing real */
}

static size_t cell_of(const scan_ctx *s, double k, double v)
{
  int64_t g = grid(k);
  int64_t li = g == INT64_MIN ? 0 : g - s->lo;
  if( li < 0 ) li = 0;
  if( li >= (int64_t)s->nlev ) li = (int64_t)s->nlev - 1;
  int64_t bi = s->nbin > 1 ? xi_bin(v) : 0;
  return (size_t)li * s->nbin + (size_t)bi;
}

/* Visit every row in row order; pass 0 counts the fine cells, pass 1
 * places the rows and takes the bucket extremes. */
static fly_rc scan(scan_ctx *s, int pass, fly_buckets *b, int64_t *fill,
                   fly_err *err)
{
  const fly_pages_info *in = fly_pages_info_of(s->p);
  int64_t row = 0;
  for(int64_t pg = 0; pg < in->n_pages; pg++){
    size_t n = 0;
    fly_rc rc = fly_pages_read_page(s->p, pg, s->page, &n, err);
    if( rc ) return rc;
    for(size_t i = 0; i < n; i++, row++){
      const double *br = s->page + i * s->width;
      double k = br[s->col];
      double v = s->xcol == NO_XI ? 0.0 : fabs(br[s->xcol]);
      if( !(k >= 0) || !isfinite(k) )
        return fly_fail(err, FLY_NUMERIC, "row %lld has gap key %g: the bounds "
                        "are not MAP-tuned (use --z implicit or --bounds map)",
                        (long long)row + 1, k);
      if( pass == 0 ){
        s->fine[fine_level(grid(k)) * s->nbin + (s->nbin > 1 ? (size_t)xi_bin(v) : 0)]++;
        continue;
      }
      int64_t bi = s->cell[cell_of(s, k, v)];
      if( bi < 0 || fill[bi] >= b->start[bi + 1] )   /* not the rows first counted */
        return fly_fail(err, FLY_CORRUPT, "bound page %lld changed between the scans "
                        "of the bucket index", (long long)pg);
      int64_t pos = fill[bi]++;
      uint8_t *rec = b->rec + (size_t)pos * b->stride;
      uint32_t r32 = (uint32_t)row;
      memcpy(rec, &r32, sizeof r32);
      for(size_t j = 0; j < s->col; j++){   /* stored as f32: exact */
        float f = (float)br[j];
        memcpy(rec + 4 + 4 * j, &f, sizeof f);
      }
      if( k > b->key[bi] ) b->key[bi] = k;
      if( b->xi_lo ){
        if( !isfinite(v) ) v = INFINITY;
        if( v < b->xi_lo[bi] ) b->xi_lo[bi] = v;
        if( v > b->xi_hi[bi] ) b->xi_hi[bi] = v;
      }
    }
  }
  return FLY_OK;
}

fly_rc fly_buckets_init(const fly_pages_info *in, const fly_model *m, size_t tail,
                        fly_buckets *b, fly_err *err)
{
  size_t key_col = m->type->n_xi(m), xi_col = m->type->gap_upper_box ? 0 : NO_XI;
  memset(b, 0, sizeof *b);
  if( in->n_rows > (int64_t)UINT32_MAX )
    return fly_fail(err, FLY_RANGE, "%lld rows: the bucket index holds row ids "
                    "as 32 bits", (long long)in->n_rows);
  if( (xi_col != NO_XI && xi_col >= in->width) || key_col >= in->width )
    return fly_fail(err, FLY_MISUSE, "bucket columns %zu, %zu of %zu-value bound rows",
                    key_col, xi_col, in->width);
  b->N = in->n_rows;
  b->nxi = key_col;
  b->tail = tail;
  b->stride = 4 + 4 * key_col + tail;
  b->rec = fly_alloc_array(b->N ? (size_t)b->N : 1, b->stride);
  if( !b->rec )
    return fly_fail(err, FLY_NOMEM, "bucket index of %lld rows x %zu bytes",
                    (long long)b->N, b->stride);
  /* candidates read the records at random */
  fly_mem_random_access(b->rec, (size_t)b->N * b->stride);
  return FLY_OK;
}

fly_rc fly_buckets_fill(fly_pages *bnd, const fly_model *m, fly_buckets *b,
                        fly_err *err)
{
  const fly_pages_info *in = fly_pages_info_of(bnd);
  /* xi only sharpens the bound of a model with gap_upper_box; without it
   * the buckets are split by key alone. */
  size_t key_col = m->type->n_xi(m), xi_col = m->type->gap_upper_box ? 0 : NO_XI;
  scan_ctx s;
  int64_t *fill = NULL;
  fly_rc rc = FLY_OK;

  memset(&s, 0, sizeof s);
  s.p = bnd;
  s.col = key_col;
  s.xcol = xi_col;
  s.width = in->width;
  s.lo = INT64_MAX;
  s.hi = INT64_MIN;
  if( !b->rec || in->n_rows != b->N || key_col != b->nxi || key_col >= in->width ||
      (xi_col != NO_XI && xi_col >= in->width) ){
    rc = fly_fail(err, FLY_MISUSE, "bucket index of %lld rows with %zu xi for %lld "
                  "bound rows of %zu values", (long long)b->N, b->nxi,
                  (long long)in->n_rows, in->width);
    goto done;
  }
  s.nbin = xi_col == NO_XI ? 1 : XI_BINS;
  s.page = fly_alloc_array((size_t)in->page_rows, in->width * sizeof(double));
  s.fine = fly_alloc_array(FINE_LEVELS * s.nbin, sizeof *s.fine);
  if( !s.page || !s.fine ){ rc = fly_fail(err, FLY_NOMEM, "bucket scan"); goto done; }
  memset(s.fine, 0, FINE_LEVELS * s.nbin * sizeof *s.fine);
  if( (rc = scan(&s, 0, b, NULL, err)) ) goto done;
  /* the range of levels: the lowest and highest non-empty fine levels
   * (fine level 0, keys of 0, has no level) */
  for(size_t f = 1; f < FINE_LEVELS; f++)
    for(size_t bi = 0; bi < s.nbin; bi++)
      if( s.fine[f * s.nbin + bi] ){
        int64_t g = (int64_t)f - 1 + FINE_LO;
        if( g < s.lo ) s.lo = g;
        if( g > s.hi ) s.hi = g;
        break;
      }
  if( s.lo == INT64_MAX ){ s.lo = s.hi = 0; }
  /* Keep the top MAX_LEVELS levels; anything lower shares level 0. */
  if( s.hi - s.lo + 1 > MAX_LEVELS ) s.lo = s.hi - MAX_LEVELS + 1;
  s.nlev = (size_t)(s.hi - s.lo + 1);
  s.cell = fly_alloc_array(s.nlev * s.nbin, sizeof *s.cell);
  if( !s.cell ){ rc = fly_fail(err, FLY_NOMEM, "bucket cells"); goto done; }
  memset(s.cell, 0, s.nlev * s.nbin * sizeof *s.cell);
  /* each fine level into its level of the kept range, as cell_of maps a
   * key: below lo (and keys of 0) into level 0 */
  for(size_t f = 0; f < FINE_LEVELS; f++){
    int64_t li = f == 0 ? 0 : (int64_t)f - 1 + FINE_LO - s.lo;
    if( li < 0 ) li = 0;
    if( li >= (int64_t)s.nlev ) li = (int64_t)s.nlev - 1;
    for(size_t bi = 0; bi < s.nbin; bi++)
      s.cell[(size_t)li * s.nbin + bi] += s.fine[f * s.nbin + bi];
  }
  fly_free(s.fine);
  s.fine = NULL;
  for(size_t c = 0; c < s.nlev * s.nbin; c++) if( s.cell[c] ) b->nb++;
  if( b->nb == 0 ) b->nb = 1;                        /* N = 0: one empty bucket */
  b->start = fly_alloc_array(b->nb + 1, sizeof *b->start);
  b->key = fly_alloc_array(b->nb, sizeof *b->key);
  fill = fly_alloc_array(b->nb, sizeof *fill);
  if( xi_col != NO_XI ){
    b->xi_lo = fly_alloc_array(b->nb, sizeof *b->xi_lo);
    b->xi_hi = fly_alloc_array(b->nb, sizeof *b->xi_hi);
  }
  if( !b->start || !b->key || !fill || (xi_col != NO_XI && (!b->xi_lo || !b->xi_hi)) ){
    rc = fly_fail(err, FLY_NOMEM, "buckets for %lld rows", (long long)b->N);
    goto done;
  }
  b->start[0] = 0;
  size_t bi = 0;
  for(size_t c = 0; c < s.nlev * s.nbin; c++){
    if( !s.cell[c] ){ s.cell[c] = -1; continue; }
    b->start[bi + 1] = b->start[bi] + s.cell[c];
    s.cell[c] = (int64_t)bi++;
  }
  if( bi == 0 ) b->start[1] = 0;
  for(size_t i = 0; i < b->nb; i++){
    fill[i] = b->start[i];
    b->key[i] = 0;
    if( b->xi_lo ){ b->xi_lo[i] = INFINITY; b->xi_hi[i] = 0; }
  }
  rc = scan(&s, 1, b, fill, err);
  if( rc == FLY_OK && b->xi_lo && m->type->box_prep ){
    b->nbox = m->type->n_box(m);
    if( b->nbox > FLY_BOX_MAX ){
      rc = fly_fail(err, FLY_MISUSE, "%zu box constants, at most %d", b->nbox, FLY_BOX_MAX);
      goto done;
    }
    if( !(b->box = fly_alloc_array(b->nb, b->nbox * sizeof *b->box)) ){
      rc = fly_fail(err, FLY_NOMEM, "box bounds of %zu buckets", b->nb);
      goto done;
    }
    for(size_t i = 0; i < b->nb; i++)
      m->type->box_prep(m, b->xi_lo[i], b->xi_hi[i], b->key[i], b->box + i * b->nbox);
  }
done:
  fly_free(s.page);
  fly_free(s.fine);
  fly_free(s.cell);
  fly_free(fill);
  return rc;
}

fly_rc fly_buckets_build(fly_pages *bnd, const fly_model *m, size_t tail,
                         fly_buckets *b, fly_err *err)
{
  fly_rc rc = fly_buckets_init(fly_pages_info_of(bnd), m, tail, b, err);
  if( rc == FLY_OK ) rc = fly_buckets_fill(bnd, m, b, err);
  if( rc ) fly_buckets_free(b);
  return rc;
}

/* tail(p) = the old tail(row(p)) for every position p, in place, one
 * cycle of the permutation at a time: each cycle's first tail is held in
 * tmp while the others move up it.  Random reads and writes of N records,
 * once each. */
fly_rc fly_buckets_gather_tails(fly_buckets *b, fly_err *err)
{
  uint8_t tmp[256];
  size_t words = (size_t)(b->N + 63) / 64;
  uint64_t *done = NULL;
  if( b->tail == 0 || b->N == 0 ) return FLY_OK;
  if( b->tail > sizeof tmp )
    return fly_fail(err, FLY_MISUSE, "record tails of %zu bytes (at most %zu)",
                    b->tail, sizeof tmp);
  if( !(done = fly_alloc_array(words, sizeof *done)) )
    return fly_fail(err, FLY_NOMEM, "gathering %lld record tails", (long long)b->N);
  memset(done, 0, words * sizeof *done);
  for(int64_t s0 = 0; s0 < b->N; s0++){
    if( done[s0 / 64] >> (s0 % 64) & 1 ) continue;
    memcpy(tmp, fly_buckets_tail(b, s0), b->tail);
    for(int64_t p = s0;;){
      int64_t q = fly_buckets_row(b, p);
      done[p / 64] |= (uint64_t)1 << (p % 64);
      if( q == s0 ){
        memcpy(fly_buckets_tail(b, p), tmp, b->tail);
        break;
      }
      memcpy(fly_buckets_tail(b, p), fly_buckets_tail(b, q), b->tail);
      p = q;
    }
  }
  fly_free(done);
  return FLY_OK;
}

double fly_buckets_gap_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, double r)
{
  double u = m->type->gap_upper(m, b->key[i], r);
  /* The box bound costs a few transcendentals: only worth it where the
   * plain bound expects at least CAND_MIN candidates in the bucket. */
  double n = (double)(b->start[i + 1] - b->start[i]);
  if( b->xi_lo && m->type->gap_upper_box && n * u >= CAND_MIN ){
    double v = b->box ? m->type->gap_upper_boxc(m, b->box + i * b->nbox, r)
             : m->type->gap_upper_box(m, b->xi_lo[i], b->xi_hi[i], b->key[i], r);
    if( v < u ) u = v;                 /* both are bounds: the smaller one is */
  }
  return u;
}

double fly_buckets_row_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, const float *xi_row,
                             double rho)
{
  if( b->box && m->type->gap_upper_rhoc )
    return m->type->gap_upper_rhoc(m, b->box + i * b->nbox, rho);
  return fly_model_gap_upper_rho(m, xi_row, rho);
}

void fly_buckets_free(fly_buckets *b)
{
  if( !b ) return;
  fly_free(b->rec);
  fly_free(b->start);
  fly_free(b->key);
  fly_free(b->xi_lo);
  fly_free(b->xi_hi);
  fly_free(b->box);
  memset(b, 0, sizeof *b);
}
