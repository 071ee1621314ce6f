/*
 * buckets.c -- grouping rows by gap key and bound parameter (see buckets.h).
 *
 * Key level of key k > 0: floor(4 log2 k) - lo (fly_buckets_quarter_log2),
 * clamped to [0, 512); keys
 * of 0 (a row whose gap can never be positive, e.g. all-zero features) go
 * to level 0 too: their bucket bound is still an upper bound.  Xi bin of
 * v = |xi|: 0 for v < 1/16, else 1 + floor(4 log2 16 v) clamped to
 * [1, 256), non-finite v in the last bin; with no xi column every row is in
 * bin 0.  Buckets are the non-empty (level, bin) cells in that order.  The
 * grid only decides how tight the buckets are: each bucket keeps the exact
 * largest key and the exact smallest and largest |xi| of its rows.
 *
 * Two scans of the bound pages, each in chunks of rows that threads may
 * share (flymc/index.h).  The first counts each chunk's rows on a fine grid
 * of every level a finite double can have (FINE_LEVELS x the xi bins, 17 MB
 * a workspace), keeping a sorted list of the chunk's non-empty fine cells.
 * From those lists follow the range of levels, the buckets, and for every
 * chunk the position where its rows of each bucket begin (the rows of the
 * chunks before it come first).  The second places each chunk's rows from
 * there in row order (a counting sort), each record written whole: row
 * id, xi and the tail the caller made for the row (one random write a row
 * into an index of GBs, not one for the head and one for the tail).  About
 * CHUNKS chunks whatever N, so the lists are O(buckets) a chunk and nothing
 * is kept a row.
 */
#include "flymc/buckets.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

#define MAX_LEVELS   512
#define XI_BINS      256
#define CAND_MIN     0.01    /* see fly_buckets_gap_upper */
#define NO_XI        ((size_t)-1)
/* floor(4 log2 k) of a finite k > 0 lies in [-4296, 4095]: fine level
 * g - FINE_LO + 1, and fine level 0 for keys of 0 */
#define FINE_LO      (-4400)
#define FINE_LEVELS  8600
#define CHUNKS       256

int64_t fly_buckets_quarter_log2(double x)
{
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  int biased = (int)(b >> 52 & 0x7ff);
  if( biased == 0 || biased == 0x7ff )         /* subnormal (x > 0 given) */
    return (int64_t)floor(4.0 * log2(x));
  /* x = m 2^(biased - 1023), m in [1, 2): floor(4 log2 m) counts the
   * quarter powers 2^(j/4) <= m, j = 1, 2, 3; each constant is the
   * smallest double above the irrational 2^(j/4), so m >= it exactly when
   * m >= 2^(j/4) */
  b = (b & UINT64_C(0x000fffffffffffff)) | UINT64_C(0x3ff0000000000000);
  double m;
  memcpy(&m, &b, sizeof m);
  int q = (m >= 0x1.306fe0a31b716p+0) + (m >= 0x1.6a09e667f3bcdp+0) +
          (m >= 0x1.ae89f995ad3aep+0);
  return 4 * (int64_t)(biased - 1023) + q;
}

static int64_t grid(double k)
{
  if( !(k > 0) ) return INT64_MIN;
  return fly_buckets_quarter_log2(k);
}

static int64_t xi_bin(double v)
{
  if( !isfinite(v) ) return XI_BINS - 1;
  if( !(v >= 0.0625) ) return 0;
  double v16 = 16.0 * v;
  if( !isfinite(v16) ) return XI_BINS - 1;
  int64_t g = 1 + fly_buckets_quarter_log2(v16);
  return g < XI_BINS - 1 ? g : XI_BINS - 1;
}

static void plan_free(fly_buckets *b);

/* Build state between fly_buckets_init and fly_buckets_finish. */
typedef struct chunk_ent {
  uint32_t id;      /* count: fine cell; after layout: bucket */
  int64_t  start;   /* after layout: the chunk's first position in the bucket */
  int64_t  n;       /* the chunk's rows in the cell or bucket */
} chunk_ent;

struct fly_buckets_plan {
  size_t      col, xcol, width; /* key column; xi column or NO_XI; values a bound row */
  size_t      nbin, nlev;
  int64_t     lo;               /* key level of level 0 */
  int64_t    *cell;             /* nlev * nbin: bucket of each cell, or -1 */
  chunk_ent **ent;              /* n_chunks lists, sorted by id */
  size_t     *nent;
  int         laid;             /* fly_buckets_layout done */
};

struct fly_buckets_ws {
  double   *page;               /* one decoded bound page */
  int64_t  *fine;               /* FINE_LEVELS * nbin counts, zero between chunks */
  uint32_t *touched;            /* the chunk's non-zero fine cells */
  size_t    ntouched;
  size_t    nb;                 /* 0 until the first place */
  int64_t  *fill, *lim;         /* nb: next position and end, 0 outside the chunk */
  double   *key, *xlo, *xhi;    /* nb: the extremes of the rows placed here */
};

static size_t fine_level(int64_t g)
{
  if( g == INT64_MIN ) return 0;
  int64_t f = g - FINE_LO + 1;
  return f < 1 ? 1 : f >= FINE_LEVELS ? FINE_LEVELS - 1 : (size_t)f;   /* clamps nothing real */
}

/* The cell (level in the kept range, xi bin) of fine level f and bin bi:
 * below lo (and keys of 0) into level 0, as a key of that level maps. */
static size_t coarse_of(const struct fly_buckets_plan *p, size_t f, size_t bi)
{
  int64_t li = f == 0 ? 0 : (int64_t)f - 1 + FINE_LO - p->lo;
  if( li < 0 ) li = 0;
  if( li >= (int64_t)p->nlev ) li = (int64_t)p->nlev - 1;
  return (size_t)li * p->nbin + bi;
}

static size_t bin_of(const struct fly_buckets_plan *p, double v)
{
  return p->nbin > 1 ? (size_t)xi_bin(v) : 0;
}

static int cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

fly_rc fly_buckets_init(const fly_pages_info *in, const fly_model *m, size_t tail,
                        int64_t unit, fly_buckets *b, fly_err *err)
{
  /* xi only sharpens the bound of a model with a box table; without it
   * the buckets are split by key alone. */
  const fly_model_thin *t = m->type->thin;
  size_t key_col = m->type->n_xi(m), xi_col = t && t->box ? 0 : NO_XI;
  struct fly_buckets_plan *p;
  memset(b, 0, sizeof *b);
  if( !t )
    return fly_fail(err, FLY_MISUSE, "model %s has no thinning bound to bucket "
                    "rows by", m->type->name);
  if( in->n_rows > (int64_t)UINT32_MAX )
    return fly_fail(err, FLY_RANGE, "%lld rows: the bucket index holds row ids "
                    "as 32 bits", (long long)in->n_rows);
  if( (xi_col != NO_XI && xi_col >= in->width) || key_col >= in->width || unit < 1 )
    return fly_fail(err, FLY_MISUSE, "bucket columns %zu, %zu of %zu-value bound rows "
                    "in chunks of %lld", key_col, xi_col, in->width, (long long)unit);
  b->N = in->n_rows;
  b->nxi = key_col;
  b->tail = tail;
  b->stride = 4 + 4 * key_col + tail;
  /* about CHUNKS chunks whatever N: the build's lists stay O(1) a row */
  int64_t per = (b->N + CHUNKS - 1) / CHUNKS;
  b->chunk_rows = (per + unit - 1) / unit * unit;
  if( b->chunk_rows < 1 ) b->chunk_rows = unit;
  b->n_chunks = (b->N + b->chunk_rows - 1) / b->chunk_rows;
  b->rec = fly_alloc_untouched(b->N ? (size_t)b->N : 1, b->stride);
  b->plan = p = fly_alloc_array(1, sizeof *p);
  if( p ){
    p->ent = fly_alloc_array(b->n_chunks ? (size_t)b->n_chunks : 1, sizeof *p->ent);
    p->nent = fly_alloc_array(b->n_chunks ? (size_t)b->n_chunks : 1, sizeof *p->nent);
  }
  if( !b->rec || !p || !p->ent || !p->nent ){
    fly_buckets_free(b);
    return fly_fail(err, FLY_NOMEM, "bucket index of %lld rows x %zu bytes",
                    (long long)in->n_rows, 4 + 4 * key_col + tail);
  }
  /* candidates read the records at random.  Untouched: the placing
   * workers fault its pages in, both at once (calloc could clear a
   * recycled block here, on one thread) */
  fly_mem_random_access(b->rec, (size_t)b->N * b->stride);
  p->col = key_col;
  p->xcol = xi_col;
  p->width = in->width;
  p->nbin = xi_col == NO_XI ? 1 : XI_BINS;
  return FLY_OK;
}

fly_rc fly_buckets_ws_new(const fly_buckets *b, fly_buckets_ws **out, fly_err *err)
{
  const struct fly_buckets_plan *p = b->plan;
  fly_buckets_ws *w = fly_alloc_array(1, sizeof *w);
  size_t cr = (size_t)b->chunk_rows;
  *out = NULL;
  if( !p ) return fly_fail(err, FLY_MISUSE, "bucket workspace without fly_buckets_init");
  if( w ){
    /* the page buffer grows to each page read (bound pages' shape is the
     * caller's: only the rows are known here) */
    w->fine = fly_alloc_array(FINE_LEVELS * p->nbin, sizeof *w->fine);
    w->touched = fly_alloc_array(cr, sizeof *w->touched);
  }
  if( !w || !w->fine || !w->touched ){
    fly_buckets_ws_free(w);
    return fly_fail(err, FLY_NOMEM, "bucket workspace for chunks of %zu rows", cr);
  }
  *out = w;
  return FLY_OK;
}

/* The per-bucket arrays of a workspace (allocated by its first place). */
static void ws_drop_buckets(fly_buckets_ws *w)
{
  fly_free(w->fill);
  fly_free(w->lim);
  fly_free(w->key);
  fly_free(w->xlo);
  fly_free(w->xhi);
  w->fill = w->lim = NULL;
  w->key = w->xlo = w->xhi = NULL;
  w->nb = 0;
}

void fly_buckets_ws_free(fly_buckets_ws *w)
{
  if( !w ) return;
  fly_free(w->page);
  fly_free(w->fine);
  fly_free(w->touched);
  ws_drop_buckets(w);
  fly_free(w);
}

/* Visit the rows of chunk c in row order: pass 0 counts the fine cells,
 * pass 1 places the rows and takes the bucket extremes. */
static fly_rc scan(fly_pages *bnd, fly_buckets *b, fly_buckets_ws *w, int64_t c,
                   int pass, const uint8_t *tails, fly_err *err)
{
  const struct fly_buckets_plan *p = b->plan;
  const fly_pages_info *in = fly_pages_info_of(bnd);
  int64_t r0 = c * b->chunk_rows, r1 = r0 + b->chunk_rows < b->N ? r0 + b->chunk_rows : b->N;
  size_t W = p->width;
  if( !w->page && !(w->page = fly_alloc_array((size_t)in->page_rows, W * sizeof *w->page)) )
    return fly_fail(err, FLY_NOMEM, "bound page of %lld rows", (long long)in->page_rows);
  for(int64_t pg = r0 / in->page_rows; pg * in->page_rows < r1; pg++){
    int64_t first = pg * in->page_rows, row;
    size_t n = 0;     /* page_rows, or the rest in the last page: fly_pages_open checks */
    fly_rc rc = fly_pages_read_page(bnd, pg, w->page, &n, err);
    if( rc ) return rc;
    for(row = first > r0 ? first : r0; row < first + (int64_t)n && row < r1; row++){
      const double *br = w->page + (size_t)(row - first) * W;
      double k = br[p->col];
      double v = p->xcol == NO_XI ? 0.0 : fabs(br[p->xcol]);
      if( !(k >= 0) || !isfinite(k) )
        return fly_fail(err, FLY_NUMERIC, "row %lld has gap key %g: the bounds "
                        "are not MAP-tuned (use --z implicit or --bounds map)",
                        (long long)row + 1, k);
      if( pass == 0 ){
        size_t f = fine_level(grid(k)) * p->nbin + bin_of(p, v);
        if( w->fine[f]++ == 0 ) w->touched[w->ntouched++] = (uint32_t)f;
        continue;
      }
      int64_t bi = p->cell[coarse_of(p, fine_level(grid(k)), bin_of(p, v))];
      if( bi < 0 || w->fill[bi] >= w->lim[bi] )   /* not the rows first counted */
        return fly_fail(err, FLY_CORRUPT, "bound page %lld changed between the scans "
                        "of the bucket index", (long long)pg);
      int64_t pos = w->fill[bi]++;
      uint8_t *rec = b->rec + (size_t)pos * b->stride;
      uint32_t r32 = (uint32_t)row;
      memcpy(rec, &r32, sizeof r32);
      for(size_t j = 0; j < p->col; j++){   /* stored as f32: exact */
        float x = (float)br[j];
        memcpy(rec + 4 + 4 * j, &x, sizeof x);
      }
      if( b->tail )
        memcpy(rec + 4 + 4 * p->col, tails + (size_t)(row - r0) * b->tail, b->tail);
      if( k > w->key[bi] ) w->key[bi] = k;
      if( p->xcol != NO_XI ){
        if( !isfinite(v) ) v = INFINITY;
        if( v < w->xlo[bi] ) w->xlo[bi] = v;
        if( v > w->xhi[bi] ) w->xhi[bi] = v;
      }
    }
  }
  return FLY_OK;
}

fly_rc fly_buckets_count(fly_pages *bnd, fly_buckets *b, fly_buckets_ws *w, int64_t c,
                         fly_err *err)
{
  struct fly_buckets_plan *p = b->plan;
  if( !p || p->laid || c < 0 || c >= b->n_chunks || p->ent[c] )
    return fly_fail(err, FLY_MISUSE, "bucket count of chunk %lld", (long long)c);
  w->ntouched = 0;
  fly_rc rc = scan(bnd, b, w, c, 0, NULL, err);
  chunk_ent *e = rc ? NULL : fly_alloc_array(w->ntouched ? w->ntouched : 1, sizeof *e);
  if( !rc && !e ) rc = fly_fail(err, FLY_NOMEM, "bucket counts of a chunk");
  if( !rc ) qsort(w->touched, w->ntouched, sizeof *w->touched, cmp_u32);
  for(size_t i = 0; i < w->ntouched; i++){
    uint32_t f = w->touched[i];
    if( e ) e[i] = (chunk_ent){ f, 0, w->fine[f] };
    w->fine[f] = 0;
  }
  if( rc ) return rc;
  p->ent[c] = e;
  p->nent[c] = w->ntouched;
  return FLY_OK;
}

fly_rc fly_buckets_layout(fly_buckets *b, fly_err *err)
{
  struct fly_buckets_plan *p = b->plan;
  int64_t lo = INT64_MAX, hi = INT64_MIN, *fill = NULL, *mark = NULL, total = 0;
  size_t *slot = NULL;
  fly_rc rc = FLY_OK;
  if( !p || p->laid )
    return fly_fail(err, FLY_MISUSE, "bucket layout without fly_buckets_init");
  for(int64_t c = 0; c < b->n_chunks; c++)
    if( !p->ent[c] ) return fly_fail(err, FLY_MISUSE, "bucket chunk %lld not counted",
                                     (long long)c);
  /* the range of levels: the lowest and highest non-empty fine levels
   * (fine level 0, keys of 0, has no level) */
  for(int64_t c = 0; c < b->n_chunks; c++)
    for(size_t i = 0; i < p->nent[c]; i++){
      size_t f = p->ent[c][i].id / p->nbin;
      if( f == 0 ) continue;
      int64_t g = (int64_t)f - 1 + FINE_LO;
      if( g < lo ) lo = g;
      if( g > hi ) hi = g;
    }
  if( lo == INT64_MAX ){ lo = hi = 0; }
  /* Keep the top MAX_LEVELS levels; anything lower shares level 0. */
  if( hi - lo + 1 > MAX_LEVELS ) lo = hi - MAX_LEVELS + 1;
  p->lo = lo;
  p->nlev = (size_t)(hi - lo + 1);
  if( !(p->cell = fly_alloc_array(p->nlev * p->nbin, sizeof *p->cell)) )
    return fly_fail(err, FLY_NOMEM, "bucket cells");
  for(int64_t c = 0; c < b->n_chunks; c++)
    for(size_t i = 0; i < p->nent[c]; i++){
      const chunk_ent *e = &p->ent[c][i];
      p->cell[coarse_of(p, e->id / p->nbin, e->id % p->nbin)] += e->n;
      total += e->n;
    }
  if( total != b->N )
    return fly_fail(err, FLY_CORRUPT, "bound pages: %lld rows counted, %lld expected",
                    (long long)total, (long long)b->N);
  for(size_t c = 0; c < p->nlev * p->nbin; c++) if( p->cell[c] ) b->nb++;
  if( b->nb == 0 ) b->nb = 1;                        /* N = 0: one empty bucket */
  b->start = fly_alloc_array(b->nb + 1, sizeof *b->start);
  b->key = fly_alloc_array(b->nb, sizeof *b->key);
  if( p->xcol != NO_XI ){
    b->xi_lo = fly_alloc_array(b->nb, sizeof *b->xi_lo);
    b->xi_hi = fly_alloc_array(b->nb, sizeof *b->xi_hi);
  }
  fill = fly_alloc_array(b->nb, sizeof *fill);
  mark = fly_alloc_array(b->nb, sizeof *mark);
  slot = fly_alloc_array(b->nb, sizeof *slot);
  if( !b->start || !b->key || !fill || !mark || !slot ||
      (p->xcol != NO_XI && (!b->xi_lo || !b->xi_hi)) ){
    rc = fly_fail(err, FLY_NOMEM, "buckets for %lld rows", (long long)b->N);
    goto done;
  }
  size_t bi = 0;
  for(size_t c = 0; c < p->nlev * p->nbin; c++){
    if( !p->cell[c] ){ p->cell[c] = -1; continue; }
    b->start[bi + 1] = b->start[bi] + p->cell[c];
    p->cell[c] = (int64_t)bi++;
  }
  if( bi == 0 ) b->start[1] = 0;
  for(size_t i = 0; i < b->nb; i++){
    fill[i] = b->start[i];
    mark[i] = -1;
    if( b->xi_lo ){ b->xi_lo[i] = INFINITY; b->xi_hi[i] = 0; }
  }
  /* Each chunk's cells become its buckets, with the positions the rows of
   * the chunks before it leave: rows stay in row order within a bucket. */
  for(int64_t c = 0; c < b->n_chunks; c++){
    chunk_ent *e = p->ent[c];
    size_t k = 0;
    for(size_t i = 0; i < p->nent[c]; i++){
      int64_t n = e[i].n;
      size_t bk = (size_t)p->cell[coarse_of(p, e[i].id / p->nbin, e[i].id % p->nbin)];
      if( mark[bk] != c ){
        mark[bk] = c;
        slot[bk] = k;
        e[k++] = (chunk_ent){ (uint32_t)bk, fill[bk], 0 };  /* k <= i: read already */
      }
      e[slot[bk]].n += n;
      fill[bk] += n;
    }
    p->nent[c] = k;
  }
  p->laid = 1;
done:
  fly_free(fill);
  fly_free(mark);
  fly_free(slot);
  return rc;
}

fly_rc fly_buckets_place(fly_pages *bnd, fly_buckets *b, fly_buckets_ws *w, int64_t c,
                         const uint8_t *tails, fly_err *err)
{
  const struct fly_buckets_plan *p = b->plan;
  if( !p || !p->laid || c < 0 || c >= b->n_chunks || (b->tail && !tails) )
    return fly_fail(err, FLY_MISUSE, "bucket place of chunk %lld", (long long)c);
  if( w->nb != b->nb ){
    ws_drop_buckets(w);       /* a retry after a failed allocation */
    w->nb = b->nb;
    w->fill = fly_alloc_array(b->nb, sizeof *w->fill);
    w->lim = fly_alloc_array(b->nb, sizeof *w->lim);
    w->key = fly_alloc_array(b->nb, sizeof *w->key);
    w->xlo = fly_alloc_array(b->nb, sizeof *w->xlo);
    w->xhi = fly_alloc_array(b->nb, sizeof *w->xhi);
    if( !w->fill || !w->lim || !w->key || !w->xlo || !w->xhi ){
      w->nb = 0;
      return fly_fail(err, FLY_NOMEM, "bucket workspace of %zu buckets", b->nb);
    }
    for(size_t i = 0; i < b->nb; i++){ w->xlo[i] = INFINITY; w->xhi[i] = 0; }
  }
  const chunk_ent *e = p->ent[c];
  for(size_t i = 0; i < p->nent[c]; i++){
    w->fill[e[i].id] = e[i].start;
    w->lim[e[i].id] = e[i].start + e[i].n;
  }
  fly_rc rc = scan(bnd, b, w, c, 1, tails, err);
  for(size_t i = 0; i < p->nent[c]; i++){
    if( rc == FLY_OK && w->fill[e[i].id] != w->lim[e[i].id] )
      rc = fly_fail(err, FLY_CORRUPT, "bound pages changed between the scans of the "
                    "bucket index (chunk %lld)", (long long)c);
    w->fill[e[i].id] = w->lim[e[i].id] = 0;
  }
  return rc;
}

fly_rc fly_buckets_finish(fly_buckets *b, const fly_model *m, fly_buckets_ws *const *ws,
                          size_t n_ws, fly_err *err)
{
  struct fly_buckets_plan *p = b->plan;
  if( !p || !p->laid )
    return fly_fail(err, FLY_MISUSE, "bucket finish without fly_buckets_layout");
  for(size_t t = 0; t < n_ws; t++){
    const fly_buckets_ws *w = ws[t];
    if( w->nb != b->nb ) continue;          /* placed nothing */
    for(size_t i = 0; i < b->nb; i++){
      if( w->key[i] > b->key[i] ) b->key[i] = w->key[i];
      if( b->xi_lo ){
        if( w->xlo[i] < b->xi_lo[i] ) b->xi_lo[i] = w->xlo[i];
        if( w->xhi[i] > b->xi_hi[i] ) b->xi_hi[i] = w->xhi[i];
      }
    }
  }
  const fly_model_box *box = m->type->thin->box;
  if( b->xi_lo && box ){
    b->nbox = box->n(m);
    if( b->nbox > FLY_BOX_MAX )
      return fly_fail(err, FLY_MISUSE, "%zu box constants, at most %d", b->nbox, FLY_BOX_MAX);
    if( !(b->box = fly_alloc_array(b->nb, b->nbox * sizeof *b->box)) )
      return fly_fail(err, FLY_NOMEM, "box bounds of %zu buckets", b->nb);
    for(size_t i = 0; i < b->nb; i++)
      box->prep(m, b->xi_lo[i], b->xi_hi[i], b->key[i], b->box + i * b->nbox);
  }
  plan_free(b);
  return FLY_OK;
}

fly_rc fly_buckets_build(fly_pages *bnd, const fly_model *m, fly_buckets *b,
                         fly_err *err)
{
  const fly_pages_info *in = fly_pages_info_of(bnd);
  fly_buckets_ws *w = NULL;
  fly_rc rc = fly_buckets_init(in, m, 0, in->page_rows > 0 ? in->page_rows : 1, b, err);
  if( rc == FLY_OK ) rc = fly_buckets_ws_new(b, &w, err);
  for(int64_t c = 0; rc == FLY_OK && c < b->n_chunks; c++) rc = fly_buckets_count(bnd, b, w, c, err);
  if( rc == FLY_OK ) rc = fly_buckets_layout(b, err);
  for(int64_t c = 0; rc == FLY_OK && c < b->n_chunks; c++)
    rc = fly_buckets_place(bnd, b, w, c, NULL, err);
  if( rc == FLY_OK ) rc = fly_buckets_finish(b, m, &w, 1, err);
  fly_buckets_ws_free(w);
  if( rc ) fly_buckets_free(b);
  return rc;
}

/* Bucket i's bound at r: the plain bound, or the smaller box bound where
 * it is worth its few transcendentals, i.e. where the plain bound expects
 * at least CAND_MIN candidates in the bucket; plus the slack.  The box
 * bound is vbox[i] (all buckets' computed at once), or computed here with
 * vbox NULL. */
static double bucket_bound(const fly_buckets *b, size_t i, const fly_model *m, double r,
                           const double *vbox)
{
  const fly_model_thin *t = m->type->thin;
  double u = t->upper(m, b->key[i], r);
  double n = (double)(b->start[i + 1] - b->start[i]);
  if( b->xi_lo && t->box && n * u >= CAND_MIN ){
    double v = vbox ? vbox[i]
             : b->box ? t->box->upper_c(m, b->box + i * b->nbox, r)
             : t->box->upper(m, b->xi_lo[i], b->xi_hi[i], b->key[i], r);
    if( v < u ) u = v;                 /* both are bounds: the smaller one is */
  }
  return u + m->slack;
}

double fly_buckets_gap_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, double r)
{
  return bucket_bound(b, i, m, r, NULL);
}

void fly_buckets_gap_upper_all(const fly_buckets *b, const fly_model *m, double r,
                               double *out, double *work)
{
  const fly_model_thin *t = m->type->thin;
  if( !(b->xi_lo && t->box && b->box && t->box->upper_c_n) ){
    for(size_t i = 0; i < b->nb; i++) out[i] = fly_buckets_gap_upper(b, i, m, r);
    return;
  }
  /* every bucket's box bound at once (into work), then each bucket decided
   * as fly_buckets_gap_upper decides it */
  double *v = work, *w = work + b->nb;
  t->box->upper_c_n(m, b->box, b->nb, r, v, w);
  for(size_t i = 0; i < b->nb; i++) out[i] = bucket_bound(b, i, m, r, v);
}

double fly_buckets_row_upper(const fly_buckets *b, size_t i,
                             const fly_model *m, const float *xi_row,
                             double rho)
{
  if( b->box )                         /* set only with a box table */
    return m->type->thin->box->upper_rho(m, b->box + i * b->nbox, rho) + m->slack;
  return fly_model_gap_upper_rho(m, xi_row, rho);
}

static void plan_free(fly_buckets *b)
{
  struct fly_buckets_plan *p = b->plan;
  if( !p ) return;
  for(int64_t c = 0; p->ent && c < b->n_chunks; c++) fly_free(p->ent[c]);
  fly_free(p->ent);
  fly_free(p->nent);
  fly_free(p->cell);
  fly_free(p);
  b->plan = NULL;
}

void fly_buckets_free(fly_buckets *b)
{
  if( !b ) return;
  plan_free(b);
  fly_free_untouched(b->rec);
  fly_free(b->start);
  fly_free(b->key);
  fly_free(b->xi_lo);
  fly_free(b->xi_hi);
  fly_free(b->box);
  memset(b, 0, sizeof *b);
}
