/*
 * check.c -- `flydb check`: verify a database and report every problem, one
 * line each, naming the table and the data set, bound set, run, page, row or
 * iteration it concerns.  Exit status 0 when clean, 1 when anything is wrong
 * (or the file is refused), 2 for a usage error.
 *
 * What is verified, in this order:
 *   1. SQLite itself: PRAGMA integrity_check (quick_check with --quick) and
 *      PRAGMA foreign_key_check.  The identity (application_id, a known
 *      user_version) is checked by fly_db_open, which refuses the file.
 *   2. Every data set: its shape (n_pages from n_rows and page_rows,
 *      raw_bytes = rows x width x prec), the page map (pages
 *      0..n_pages-1, first_row = page_no*page_rows, n_rows per page,
 *      raw_bytes per page), every payload's XXH3 checksum and decode,
 *      stored_bytes = the sum of payload sizes, the dataset_column rows
 *      (idx 0..width-1, roles), and unless --quick the column statistics
 *      recomputed from the decoded pages exactly as ingest computes them.
 *   3. Every bound set: 'building' left by a crashed build, the model and
 *      its options, shape against the model and the data set, the MAP and
 *      Laplace blobs (sizes, finite), the bound pages as for data, every xi
 *      finite (and equal to the fixed xi for fixed tuning), every thinning
 *      key finite and >= 0 for MAP tuning, the moment table complete, and
 *      unless --quick the moments recomputed with the model's moments_add
 *      from the data pages (read through fly_pages_read_page) and the
 *      stored xi.
 *   4. Every run: param rows 0..n_params-1; per chain the checkpoint blob
 *      (the checks of fly_chain_restore, without building a chain), and
 *      draw and iteration rows at exactly the iterations thin, 2 thin, ...
 *      up to the chain's checkpoint (up to n_warmup + n_iters for a run
 *      marked 'done'), each with all n_params draws.
 *
 * Pages are scanned directly (the codec's checksum and decoder, the same
 * ones fly_pages uses) so that one missing page does not hide a bad
 * checksum in another: fly_pages_open refuses an incomplete map as a whole.
 * Statistics and moments are only recomputed over pages that are all
 * sound.  Page, row, column and chain numbers are as stored (0-based);
 * iterations count from 1.
 *
 * Tolerances: recomputing in the same order with the same code gives the
 * same bits, so the slack only absorbs summation in another order (an
 * older ingest, another BLAS).  Means, standard deviations and moments
 * agree to 1e-9 relative plus 1e-11 of the magnitude summed: the column's
 * largest |value| for statistics, the sum over pages of |each page's
 * contribution| for a moment (which may cancel to near 0).  Counts, min
 * and max agree exactly.
 *
 * The whole check runs in one read transaction with PRAGMA query_only on:
 * a consistent snapshot (a run committing meanwhile cannot make its draws
 * look ahead of their checkpoint), and nothing is ever written.  Memory: one
 * data page and one bound page of values plus O(n_params^2) moments; time:
 * one pass over every table (two over the data pages of a data set with
 * bound sets, unless --quick).  At most SHOW_MAX lines are printed per data
 * set, bound set or run; the rest are counted.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flymc/ckpt.h"
#include "models/model.h"
#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "tune/tune.h"
#include "util/mem.h"

#define REL_TOL      1e-9          /* relative to the values compared */
#define SCALE_TOL    1e-11         /* relative to the magnitude summed */
#define SHOW_MAX     20            /* problem lines printed per object */
#define MAX_SECTIONS 8             /* moment sections of a model */
#define MAX_CHAINS   (1 << 20)     /* beyond this n_chains is corrupt */

typedef struct checker {
  fly_db  *db;
  sqlite3 *h;                      /* borrowed from db */
  int      quick;
  int64_t  n_problems;             /* all problems found */
  int64_t  n_scope;                /* problems in the current object */
  char     scope[256];             /* "data set 'toy' (id 1)" */
} checker;

/* A data set, kept for the bound sets and runs that refer to it. */
typedef struct dset {
  int64_t    id, n_rows, width, page_rows, n_pages;
  int        prec;
  int        shape_ok;             /* n_rows, width, page_rows, prec usable */
  int        sound;                /* shape and every page verified */
  fly_pages *pg;                   /* open when sound (moments); else NULL */
  char       name[128];
} dset;

/* ---- reporting -------------------------------------------------------- */

static void scope_begin(checker *ck, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
static void scope_begin(checker *ck, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ck->scope, sizeof ck->scope, fmt, ap);
  va_end(ap);
  ck->n_scope = 0;
}

static void scope_end(checker *ck)
{
  if( ck->n_scope > SHOW_MAX )
    printf("%s: ... and %lld more problems\n", ck->scope,
           (long long)(ck->n_scope - SHOW_MAX));
  ck->scope[0] = 0;
  ck->n_scope = 0;
}

static void problem(checker *ck, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
static void problem(checker *ck, const char *fmt, ...)
{
  va_list ap;
  ck->n_problems++;
  if( ++ck->n_scope > SHOW_MAX ) return;
  if( ck->scope[0] ) printf("%s: ", ck->scope);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

/* A statement that could not be prepared or stepped is a problem too (a
 * damaged file, a missing table). */
static sqlite3_stmt *prep(checker *ck, const char *sql)
{
  sqlite3_stmt *st = NULL;
  fly_err e = {0};
  if( fly_db_prepare(ck->db, sql, &st, &e) ) problem(ck, "%s", e.msg);
  return st;
}

static void step_failed(checker *ck, const char *what)
{
  problem(ck, "%s: %s", what, sqlite3_errmsg(ck->h));
}

/* a and b agree to REL_TOL relative, plus SCALE_TOL times the magnitude of
 * what was summed to get them (rounding in a different order: a value that
 * cancels to near 0 is only as exact as its terms). */
static int close_to(double a, double b, double scale)
{
  if( a == b ) return 1;
  if( isnan(a) || isnan(b) ) return 0;
  return fabs(a - b) <= REL_TOL * fmax(fabs(a), fabs(b)) + SCALE_TOL * scale;
}

/* Exact equality that treats two NaNs as equal. */
static int same(double a, double b)
{
  return a == b || (isnan(a) && isnan(b));
}

/* "a" or "a..b" into buf. */
static const char *span(char *buf, size_t n, int64_t a, int64_t b)
{
  if( a == b ) snprintf(buf, n, "%lld", (long long)a);
  else snprintf(buf, n, "%lld..%lld", (long long)a, (long long)b);
  return buf;
}

/* ---- 1. SQLite -------------------------------------------------------- */

static void check_sqlite(checker *ck)
{
  const char *pragma = ck->quick ? "PRAGMA quick_check" : "PRAGMA integrity_check";
  sqlite3_stmt *st;
  int s;

  scope_begin(ck, "SQLite");
  if( (st = prep(ck, pragma)) ){
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      const char *msg = (const char *)sqlite3_column_text(st, 0);
      if( !msg ){ problem(ck, "%s: NULL", pragma + 7); continue; }
      if( strcmp(msg, "ok") == 0 ) continue;
      /* One row may carry several messages, a line each. */
      for(const char *l = msg, *e; *l; l = *e ? e + 1 : e){
        e = strchr(l, '\n');
        if( !e ) e = l + strlen(l);
        if( e > l && strncmp(l, "*** in database ", 16) != 0 )
          problem(ck, "%s: %.*s", pragma + 7, (int)(e - l), l);
      }
    }
    if( s != SQLITE_DONE ) step_failed(ck, pragma + 7);
    sqlite3_finalize(st);
  }
  if( (st = prep(ck, "PRAGMA foreign_key_check")) ){
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      const char *tab = (const char *)sqlite3_column_text(st, 0);
      const char *par = (const char *)sqlite3_column_text(st, 2);
      if( sqlite3_column_type(st, 1) == SQLITE_NULL )
        problem(ck, "a row of table %s refers to a missing %s row",
                tab ? tab : "?", par ? par : "?");
      else
        problem(ck, "table %s, row id %lld: refers to a missing %s row",
                tab ? tab : "?", (long long)sqlite3_column_int64(st, 1),
                par ? par : "?");
    }
    if( s != SQLITE_DONE ) step_failed(ck, "foreign_key_check");
    sqlite3_finalize(st);
  }
  scope_end(ck);
}

/* ---- paged tables ----------------------------------------------------- */

/* Shape of a paged table (table `page` or `bound_page` of one owner). */
typedef struct ptable {
  fly_table table;
  int64_t   owner;
  int64_t   n_rows, page_rows, n_pages;
  size_t    width;
  int       prec;
} ptable;

/* Called with every page that verified and decoded, in page order. */
typedef void (*page_fn)(void *u, int64_t k, const double *rows, size_t n);

typedef struct scan_result {
  int      bad;        /* some problem was reported */
  int      layout_bad; /* pages missing or unexpected, or wrong row ranges */
  uint64_t n_rows;     /* sum of the pages' n_rows (wraps if corrupt) */
  uint64_t bytes;      /* sum of payload sizes */
} scan_result;

static void missing_pages(checker *ck, const ptable *t, int64_t a, int64_t b)
{
  int64_t last = (b + 1) * t->page_rows - 1;
  if( last >= t->n_rows ) last = t->n_rows - 1;
  if( a == b )
    problem(ck, "page %lld is missing (rows %lld..%lld)", (long long)a,
            (long long)(a * t->page_rows), (long long)last);
  else
    problem(ck, "pages %lld..%lld are missing (rows %lld..%lld)", (long long)a,
            (long long)b, (long long)(a * t->page_rows), (long long)last);
}

/* Verify every page of t: the map, the checksum, the decode.  fn (may be
 * NULL) sees each sound page. */
static void scan_pages(checker *ck, const ptable *t, page_fn fn, void *u,
                       scan_result *r)
{
  sqlite3_stmt *st = NULL;
  double *vals = NULL;
  void *scratch = NULL;
  size_t page_vals = (size_t)t->page_rows * t->width;
  int64_t next = 0;
  int s;

  memset(r, 0, sizeof *r);
  vals = fly_alloc_array(page_vals, sizeof *vals);
  if( t->prec == FLY_PREC_F32 ) scratch = fly_alloc_array(page_vals, FLY_PREC_F32);
  if( !vals || (t->prec == FLY_PREC_F32 && !scratch) ){
    problem(ck, "out of memory for a page of %lld rows x %zu values",
            (long long)t->page_rows, t->width);
    r->bad = 1;
    goto done;
  }
  st = prep(ck, t->table == FLY_TABLE_DATA
    ? "SELECT page_no, first_row, n_rows, codec, raw_bytes, checksum, payload"
      " FROM page WHERE dataset_id = ?1 ORDER BY page_no"
    : "SELECT page_no, first_row, n_rows, codec, raw_bytes, checksum, payload"
      " FROM bound_page WHERE bound_set_id = ?1 ORDER BY page_no");
  if( !st ){ r->bad = 1; goto done; }
  sqlite3_bind_int64(st, 1, t->owner);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t k = sqlite3_column_int64(st, 0);
    int64_t first = sqlite3_column_int64(st, 1);
    int64_t nr = sqlite3_column_int64(st, 2);
    int64_t codec = sqlite3_column_int64(st, 3);
    int64_t raw = sqlite3_column_int64(st, 4);
    int64_t sum = sqlite3_column_int64(st, 5);
    const void *pay = sqlite3_column_blob(st, 6);
    size_t nb = (size_t)sqlite3_column_bytes(st, 6);
    int bad = 0;

    r->n_rows += (uint64_t)nr;
    r->bytes += nb;
    if( k < 0 || k >= t->n_pages ){
      problem(ck, "unexpected page %lld (the table has pages 0..%lld)",
              (long long)k, (long long)t->n_pages - 1);
      r->bad = r->layout_bad = 1;
      continue;
    }
    if( k > next ){
      missing_pages(ck, t, next, k - 1);
      r->bad = r->layout_bad = 1;
    }
    next = k + 1;
    int64_t want = k == t->n_pages - 1 ? t->n_rows - k * t->page_rows
                                       : t->page_rows;
    if( first != k * t->page_rows || nr != want ){
      problem(ck, "page %lld: rows %lld..%lld, want %lld..%lld", (long long)k,
              (long long)first, (long long)((uint64_t)first + (uint64_t)nr - 1),
              (long long)(k * t->page_rows),
              (long long)(k * t->page_rows + want - 1));
      bad = r->layout_bad = 1;
    }
    if( !bad && raw != want * (int64_t)t->width * t->prec ){
      problem(ck, "page %lld: raw_bytes %lld, want %lld (%lld rows x %zu "
              "values x %d bytes)", (long long)k, (long long)raw,
              (long long)(want * (int64_t)t->width * t->prec), (long long)want,
              t->width, t->prec);
      bad = 1;
    }
    if( codec != FLY_CODEC_RAW && codec != FLY_CODEC_LZ4 ){
      problem(ck, "page %lld: unknown codec %lld (want 0 raw or 1 lz4)",
              (long long)k, (long long)codec);
      bad = 1;
    }
    uint64_t stored, got = fly_codec_checksum(pay ? pay : "", nb);
    memcpy(&stored, &sum, sizeof stored);
    if( got != stored ){
      problem(ck, "page %lld: checksum mismatch (stored 0x%016llx, computed "
              "0x%016llx over %zu payload bytes)", (long long)k,
              (unsigned long long)stored, (unsigned long long)got, nb);
      bad = 1;
    }
    if( !bad ){
      fly_err e = {0};
      if( fly_codec_decode((int)codec, pay ? pay : "", nb, t->prec,
                           (size_t)nr * t->width, vals, scratch, &e) ){
        problem(ck, "page %lld: %s", (long long)k, e.msg);
        bad = 1;
      }
    }
    if( bad ) r->bad = 1;
    else if( fn ) fn(u, k, vals, (size_t)nr);
  }
  if( s != SQLITE_DONE ){
    step_failed(ck, t->table == FLY_TABLE_DATA ? "reading table page"
                                               : "reading table bound_page");
    r->bad = 1;
  }else if( next < t->n_pages ){
    missing_pages(ck, t, next, t->n_pages - 1);
    r->bad = r->layout_bad = 1;
  }
done:
  sqlite3_finalize(st);
  fly_free(vals);
  fly_free(scratch);
}

/* ---- 2. data sets ----------------------------------------------------- */

/* Running mean/variance and range of a column: ingest.c's Welford form,
 * step for step, so a sound data set reproduces the stored bits. */
typedef struct colstat { double mean, m2, min, max; } colstat;

typedef struct dstats {
  colstat *cs;
  size_t   width;
  int64_t  n;         /* rows so far */
} dstats;

static void stats_page(void *u, int64_t k, const double *rows, size_t n)
{
  dstats *d = u;
  (void)k;
  for(size_t i = 0; i < n; i++, d->n++){
    const double *x = rows + i * d->width;
    for(size_t j = 0; j < d->width; j++){
      colstat *c = &d->cs[j];
      double v = x[j], cnt = (double)(d->n + 1), old = c->mean;
      c->mean = old + (v / cnt - old / cnt);
      c->m2 += (v - old) * (v - c->mean);
      if( isnan(c->m2) ) c->m2 = INFINITY;
      if( v < c->min ) c->min = v;
      if( v > c->max ) c->max = v;
    }
  }
}

/* dataset_column rows of ds: one per stored column with the right role,
 * and (st non-NULL) the statistics st recomputed. */
static void check_columns(checker *ck, const dset *ds, int has_icpt,
                          const char *target, const dstats *rs)
{
  sqlite3_stmt *st = prep(ck, "SELECT idx, name, role, n, mean, sd, min, max"
                          " FROM dataset_column WHERE dataset_id = ?1"
                          " ORDER BY idx");
  int64_t next = 0, w = ds->width;
  char buf[48];
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, ds->id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t j = sqlite3_column_int64(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    const char *role = (const char *)sqlite3_column_text(st, 2);
    const char *want = j == w - 1 ? "target"
                     : j == 0 && has_icpt ? "intercept" : "feature";
    if( !name ) name = "";
    if( j < 0 || j >= w ){
      problem(ck, "dataset_column idx %lld ('%s'): the data set stores "
              "columns 0..%lld", (long long)j, name, (long long)w - 1);
      continue;
    }
    if( j > next )
      problem(ck, "dataset_column rows of column%s %s missing",
              j - 1 > next ? "s" : "", span(buf, sizeof buf, next, j - 1));
    next = j + 1;
    if( !role || strcmp(role, want) != 0 )
      problem(ck, "column %lld ('%s'): role '%s', want '%s'", (long long)j,
              name, role ? role : "NULL", want);
    if( j == w - 1 && target && strcmp(name, target) != 0 )
      problem(ck, "column %lld: name '%s', but dataset.target_name is '%s'",
              (long long)j, name, target);
    if( !rs ) continue;

    const colstat *c = &rs->cs[j];
    int64_t n = sqlite3_column_int64(st, 3);
    double v[4], r[4];
    const char *what[4] = { "mean", "sd", "min", "max" };
    double scale = fmax(fabs(c->min), fabs(c->max));
    r[0] = c->mean;
    r[1] = rs->n > 1 ? sqrt(c->m2 / (double)(rs->n - 1)) : 0.0;
    r[2] = c->min;
    r[3] = c->max;
    for(int q = 0; q < 4; q++) v[q] = sqlite3_column_double(st, 4 + q);
    if( n != rs->n )
      problem(ck, "column %lld ('%s'): n %lld, but the pages hold %lld rows",
              (long long)j, name, (long long)n, (long long)rs->n);
    for(int q = 0; q < 4; q++){
      int okq = q < 2 ? close_to(v[q], r[q], scale) : same(v[q], r[q]);
      if( !okq )
        problem(ck, "column %lld ('%s'): %s %.17g stored, %.17g recomputed "
                "from the pages", (long long)j, name, what[q], v[q], r[q]);
    }
  }
  if( s != SQLITE_DONE ) step_failed(ck, "reading table dataset_column");
  else if( next < w )
    problem(ck, "dataset_column rows of column%s %s missing",
            w - 1 > next ? "s" : "", span(buf, sizeof buf, next, w - 1));
  sqlite3_finalize(st);
}

/* One data set row: shape, pages, columns.  Fills ds. */
static void check_dataset(checker *ck, sqlite3_stmt *row, dset *ds)
{
  int64_t n_feat = sqlite3_column_int64(row, 4);
  int has_icpt = sqlite3_column_int(row, 5);
  const char *target = (const char *)sqlite3_column_text(row, 6);
  int64_t raw = sqlite3_column_int64(row, 9);
  int64_t stored = sqlite3_column_int64(row, 10);
  const char *name = (const char *)sqlite3_column_text(row, 1);
  dstats stats = { NULL, 0, 0 };
  scan_result sr;
  ptable t;
  int64_t before;

  memset(ds, 0, sizeof *ds);
  ds->id = sqlite3_column_int64(row, 0);
  snprintf(ds->name, sizeof ds->name, "%s", name ? name : "?");
  ds->n_rows = sqlite3_column_int64(row, 2);
  ds->width = sqlite3_column_int64(row, 3);
  ds->page_rows = sqlite3_column_int64(row, 7);
  ds->n_pages = sqlite3_column_int64(row, 8);
  ds->prec = sqlite3_column_int(row, 11);
  scope_begin(ck, "data set '%s' (id %lld)", ds->name, (long long)ds->id);
  before = ck->n_problems;

  if( ds->width < 2 || ds->width > INT32_MAX || ds->page_rows < 1
      || ds->n_rows < 1 || ds->n_rows > INT64_MAX / 8 / ds->width
      || (ds->prec != FLY_PREC_F64 && ds->prec != FLY_PREC_F32)
      || (uint64_t)ds->page_rows * (uint64_t)ds->width > (uint64_t)INT32_MAX / 8 ){
    problem(ck, "bad shape (n_rows %lld, width %lld, page_rows %lld, prec %d): "
            "pages not checked", (long long)ds->n_rows, (long long)ds->width,
            (long long)ds->page_rows, ds->prec);
    scope_end(ck);
    return;
  }
  ds->shape_ok = 1;
  int64_t want_pages = (ds->n_rows - 1) / ds->page_rows + 1;
  if( ds->n_pages != want_pages )
    problem(ck, "n_pages is %lld, but %lld rows of %lld a page need %lld",
            (long long)ds->n_pages, (long long)ds->n_rows,
            (long long)ds->page_rows, (long long)want_pages);
  if( raw != ds->n_rows * ds->width * ds->prec )
    problem(ck, "raw_bytes is %lld, want %lld (%lld rows x %lld values x %d "
            "bytes)", (long long)raw,
            (long long)(ds->n_rows * ds->width * ds->prec),
            (long long)ds->n_rows, (long long)ds->width, ds->prec);
  if( n_feat != ds->width - 1 )
    problem(ck, "n_features is %lld, but rows of %lld values hold %lld "
            "features and the target", (long long)n_feat,
            (long long)ds->width, (long long)ds->width - 1);

  t.table = FLY_TABLE_DATA;
  t.owner = ds->id;
  t.n_rows = ds->n_rows;
  t.page_rows = ds->page_rows;
  t.n_pages = want_pages;
  t.width = (size_t)ds->width;
  t.prec = ds->prec;
  if( !ck->quick ){
    stats.width = t.width;
    stats.cs = fly_alloc_array(t.width, sizeof *stats.cs);
    if( !stats.cs ) problem(ck, "out of memory for column statistics");
    else for(size_t j = 0; j < t.width; j++){
      stats.cs[j].min = INFINITY;
      stats.cs[j].max = -INFINITY;
    }
  }
  scan_pages(ck, &t, stats.cs ? stats_page : NULL, &stats, &sr);
  if( !sr.layout_bad && sr.n_rows != (uint64_t)ds->n_rows )
    problem(ck, "the pages hold %llu rows, dataset.n_rows is %lld",
            (unsigned long long)sr.n_rows, (long long)ds->n_rows);
  if( !sr.layout_bad && sr.bytes != (uint64_t)stored )
    problem(ck, "stored_bytes is %lld, the payloads hold %llu bytes",
            (long long)stored, (unsigned long long)sr.bytes);
  /* Sound: the rows are what ingest stored (the columns' rows aside). */
  ds->sound = ck->n_problems == before;
  check_columns(ck, ds, has_icpt, target, stats.cs && !sr.bad ? &stats : NULL);
  fly_free(stats.cs);

  if( ds->sound ){
    fly_err e = {0};
    if( fly_pages_open(ck->db, FLY_TABLE_DATA, ds->id, 0, &ds->pg, &e) ){
      problem(ck, "the page reader refuses it: %s", e.msg);
      ds->sound = 0;
    }
  }
  scope_end(ck);
}

static dset *find_dset(dset *ds, size_t n, int64_t id)
{
  for(size_t i = 0; i < n; i++) if( ds[i].id == id ) return &ds[i];
  return NULL;
}

/* Check every data set; *pds (n of them) is kept for what follows. */
static void check_datasets(checker *ck, dset **pds, size_t *pn)
{
  sqlite3_stmt *st;
  dset *ds = NULL;
  size_t n = 0, cap = 0;
  int s;

  *pds = NULL;
  *pn = 0;
  scope_begin(ck, "table dataset");
  st = prep(ck, "SELECT id, name, n_rows, width, n_features, has_intercept,"
            " target_name, page_rows, n_pages, raw_bytes, stored_bytes, prec"
            " FROM dataset ORDER BY id");
  if( !st ){ scope_end(ck); return; }
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    if( n == cap ){
      size_t nc = cap ? 2 * cap : 8;
      dset *g = fly_realloc_array(ds, nc, sizeof *ds);
      if( !g ){ problem(ck, "out of memory for %zu data sets", nc); break; }
      ds = g;
      cap = nc;
    }
    check_dataset(ck, st, &ds[n++]);
  }
  if( s != SQLITE_DONE && s != SQLITE_ROW ){
    scope_begin(ck, "table dataset");
    step_failed(ck, "reading table dataset");
  }
  scope_end(ck);
  sqlite3_finalize(st);
  *pds = ds;
  *pn = n;
}

/* ---- 3. bound sets ---------------------------------------------------- */

/* The model of a bound set: type by name, prior and model options from
 * model_opts ("prior=normal;scale=1", plus ";K=3" for softmax and
 * ";nu=4;sigma=1" for robust), D = width - 1 features and the target last.
 * 0 on success, else why (n bytes) says what is wrong. */
static int model_of(const char *name, const char *opts, int64_t width,
                    fly_model *m, char *why, size_t n)
{
  char buf[256];
  int have_prior = 0, have_scale = 0;

  memset(m, 0, sizeof *m);
  m->type = fly_model_find(name);
  if( !m->type ){
    snprintf(why, n, "unknown model '%s'", name ? name : "NULL");
    return -1;
  }
  m->D = (size_t)width - 1;
  m->tcol = (size_t)width - 1;
  m->K = 1;
  if( !opts || strlen(opts) >= sizeof buf ){
    snprintf(why, n, "model_opts missing or too long");
    return -1;
  }
  snprintf(buf, sizeof buf, "%s", opts);
  for(char *kv = buf, *nx; kv; kv = nx){
    nx = strchr(kv, ';');
    if( nx ) *nx++ = 0;
    char *v = strchr(kv, '=');
    if( !v ){
      snprintf(why, n, "model_opts '%s': '%s' is not key=value", opts, kv);
      return -1;
    }
    *v++ = 0;
    if( strcmp(kv, "prior") == 0 ){
      have_prior = 1;
      if( strcmp(v, "normal") == 0 ) m->prior = FLY_PRIOR_NORMAL;
      else if( strcmp(v, "laplace") == 0 ) m->prior = FLY_PRIOR_LAPLACE;
      else{
        snprintf(why, n, "model_opts '%s': unknown prior '%s'", opts, v);
        return -1;
      }
    }else if( strcmp(kv, "scale") == 0 ){
      char *end;
      have_scale = 1;
      m->prior_scale = strtod(v, &end);
      if( end == v || *end || !(m->prior_scale > 0) || !isfinite(m->prior_scale) ){
        snprintf(why, n, "model_opts '%s': scale '%s' is not a positive "
                 "number", opts, v);
        return -1;
      }
    }else if( (strcmp(kv, "K") == 0 && strcmp(m->type->name, "softmax") == 0) ||
              ((strcmp(kv, "nu") == 0 || strcmp(kv, "sigma") == 0) &&
               strcmp(m->type->name, "robust") == 0) ){
      char *end;
      double x = strtod(v, &end);
      if( end == v || *end || !(x > 0) || !isfinite(x) || (kv[0] == 'K' && x != floor(x)) ){
        snprintf(why, n, "model_opts '%s': %s '%s' is not a positive %s", opts, kv, v,
                 kv[0] == 'K' ? "integer" : "number");
        return -1;
      }
      if( kv[0] == 'K' ) m->K = (size_t)x;
      else if( kv[0] == 'n' ) m->nu = x;
      else m->scale = x;
    }else{
      snprintf(why, n, "model_opts '%s': option '%s' does not apply to model "
               "%s", opts, kv, m->type->name);
      return -1;
    }
  }
  if( !have_prior || !have_scale ){
    snprintf(why, n, "model_opts '%s' lacks the %s", opts,
             have_prior ? "scale" : "prior");
    return -1;
  }
  return 0;
}

/* A blob of want doubles, all finite. */
static void check_blob(checker *ck, sqlite3_stmt *st, int col,
                       const char *what, size_t want)
{
  const void *p = sqlite3_column_blob(st, col);
  size_t bytes = (size_t)sqlite3_column_bytes(st, col);
  if( !p || bytes != want * sizeof(double) ){
    problem(ck, "%s holds %zu bytes, want %zu (%zu doubles)", what, bytes,
            want * sizeof(double), want);
    return;
  }
  for(size_t i = 0; i < want; i++){
    double v;
    memcpy(&v, (const unsigned char *)p + i * sizeof v, sizeof v);
    if( !isfinite(v) ){
      problem(ck, "%s[%zu] is %g", what, i, v);
      return;
    }
  }
}

/* Scan state of one bound set's pages. */
typedef struct bscan {
  checker         *ck;
  const fly_model *m;
  size_t           n_xi, bw;      /* xi per row, values per bound row */
  int64_t          page_rows;
  int              tuned;         /* MAP tuning: keys must be finite >= 0 */
  int              fixed;         /* fixed tuning: xi must be fixed_xi */
  float            fixed_xi;
  /* moments (data != NULL) */
  fly_pages       *data;          /* borrowed: the data set's pages */
  size_t           W;             /* values per data row */
  double          *X, *work, *mom, *part, *scale;
  float           *xi;
  size_t           n_mom;
  int64_t          next;          /* next page expected */
  int              mom_ok;        /* every page so far went into mom */
} bscan;

static void bound_page(void *u, int64_t k, const double *rows, size_t n)
{
  bscan *b = u;
  checker *ck = b->ck;
  for(size_t i = 0; i < n; i++){
    const double *r = rows + i * b->bw;
    int64_t row = k * b->page_rows + (int64_t)i;
    for(size_t q = 0; q < b->n_xi; q++){
      if( !isfinite(r[q]) )
        problem(ck, "page %lld, row %lld: xi[%zu] is %g", (long long)k,
                (long long)row, q, r[q]);
      else if( b->fixed && (float)r[q] != b->fixed_xi )
        problem(ck, "page %lld, row %lld: xi[%zu] is %.9g, but the tuning "
                "fixes it at %.9g", (long long)k, (long long)row, q, r[q],
                (double)b->fixed_xi);
      if( b->xi ) b->xi[i * b->n_xi + q] = (float)r[q];
    }
    double key = r[b->n_xi];
    if( b->tuned && !(isfinite(key) && key >= 0) )
      problem(ck, "page %lld, row %lld: thinning key %g is not a finite "
              "number >= 0", (long long)k, (long long)row, key);
  }
  if( !b->data || !b->mom_ok ) return;
  if( k != b->next ){ b->mom_ok = 0; return; }
  b->next = k + 1;

  fly_err e = {0};
  size_t nd = 0;
  if( fly_pages_read_page(b->data, k, b->X, &nd, &e) ){
    problem(ck, "moments: %s", e.msg);
    b->mom_ok = 0;
    return;
  }
  if( nd != n ){
    problem(ck, "page %lld holds %zu rows, data page %lld holds %zu",
            (long long)k, n, (long long)k, nd);
    b->mom_ok = 0;
    return;
  }
  memset(b->part, 0, b->n_mom * sizeof *b->part);
  b->m->type->moments_add(b->m, b->X, b->W, b->xi, n, b->part, b->work);
  for(size_t q = 0; q < b->n_mom; q++){
    b->mom[q] += b->part[q];
    b->scale[q] += fabs(b->part[q]);
  }
}

/* The moment table of bound set id against the recomputed b->mom. */
static void compare_moments(checker *ck, int64_t id, const bscan *b)
{
  const fly_model *m = b->m;
  fly_moment_section sec[MAX_SECTIONS];
  size_t n_sec = m->type->moment_layout(m, sec), off[MAX_SECTIONS + 1];
  unsigned char *seen = NULL;
  sqlite3_stmt *st = NULL;
  int s;

  if( n_sec > MAX_SECTIONS ) return;
  off[0] = 0;
  for(size_t q = 0; q < n_sec; q++) off[q + 1] = off[q] + sec[q].rows * sec[q].cols;
  if( off[n_sec] != b->n_mom ) return;
  seen = fly_alloc_array(b->n_mom ? b->n_mom : 1, 1);
  if( !seen ){ problem(ck, "out of memory for %zu moments", b->n_mom); return; }
  st = prep(ck, "SELECT name, i, j, value FROM moment WHERE bound_set_id = ?1"
            " ORDER BY name, i, j");
  if( !st ) goto done;
  sqlite3_bind_int64(st, 1, id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    const char *name = (const char *)sqlite3_column_text(st, 0);
    int64_t i = sqlite3_column_int64(st, 1), j = sqlite3_column_int64(st, 2);
    double v = sqlite3_column_double(st, 3);
    size_t q = 0;
    while( q < n_sec && (!name || strcmp(name, sec[q].name) != 0) ) q++;
    if( q == n_sec || i < 0 || j < 0 || (uint64_t)i >= sec[q].rows
        || (uint64_t)j >= sec[q].cols ){
      problem(ck, "unexpected moment %s[%lld,%lld] for model %s",
              name ? name : "NULL", (long long)i, (long long)j, m->type->name);
      continue;
    }
    size_t e = off[q] + (size_t)i * sec[q].cols + (size_t)j;
    seen[e] = 1;
    if( sqlite3_column_type(st, 3) != SQLITE_FLOAT || !isfinite(v) )
      problem(ck, "moment %s[%lld,%lld] is %s", name, (long long)i,
              (long long)j, sqlite3_column_type(st, 3) == SQLITE_FLOAT
              ? "not finite" : "not a real number");
    else if( b->mom_ok && !close_to(v, b->mom[e], b->scale[e]) )
      problem(ck, "moment %s[%lld,%lld] is %.17g, recomputed %.17g from the "
              "data pages and the stored xi", name, (long long)i,
              (long long)j, v, b->mom[e]);
  }
  if( s != SQLITE_DONE ) step_failed(ck, "reading table moment");
  else
    for(size_t q = 0; q < n_sec; q++)
      for(size_t i = 0; i < sec[q].rows; i++)
        for(size_t j = 0; j < sec[q].cols; j++)
          if( !seen[off[q] + i * sec[q].cols + j] )
            problem(ck, "moment %s[%zu,%zu] is missing", sec[q].name, i, j);
done:
  sqlite3_finalize(st);
  fly_free(seen);
}

/* One bound_set row. */
static void check_bound_set(checker *ck, sqlite3_stmt *row, dset *dss,
                            size_t n_ds)
{
  int64_t id = sqlite3_column_int64(row, 0);
  int64_t ds_id = sqlite3_column_int64(row, 1);
  const char *model = (const char *)sqlite3_column_text(row, 2);
  const char *mopts = (const char *)sqlite3_column_text(row, 3);
  const char *tuning = (const char *)sqlite3_column_text(row, 4);
  const char *status = (const char *)sqlite3_column_text(row, 5);
  int64_t n_params = sqlite3_column_int64(row, 6);
  int64_t width = sqlite3_column_int64(row, 7);
  int64_t page_rows = sqlite3_column_int64(row, 8);
  int64_t n_pages = sqlite3_column_int64(row, 9);
  dset *ds = find_dset(dss, n_ds, ds_id);
  fly_model m;
  bscan b;
  char why[768];
  int shape_ok = 1;

  memset(&b, 0, sizeof b);
  scope_begin(ck, "bound set %lld (data set '%s', %s %s, %s)", (long long)id,
              ds ? ds->name : "?", model ? model : "?", mopts ? mopts : "?",
              tuning ? tuning : "?");
  if( !ds ){
    problem(ck, "data set %lld does not exist", (long long)ds_id);
    goto done;
  }
  if( !ds->shape_ok ){
    problem(ck, "not checked: its data set has a bad shape");
    goto done;
  }
  if( status && strcmp(status, "building") == 0 ){
    problem(ck, "status 'building': left by an interrupted build (`flydb "
            "tune --force` rebuilds it)");
    goto done;
  }
  if( !status || strcmp(status, "ready") != 0 ){
    problem(ck, "status '%s', want 'ready'", status ? status : "NULL");
    goto done;
  }
  if( model_of(model, mopts, ds->width, &m, why, sizeof why) ){
    problem(ck, "%s", why);
    goto done;
  }
  /* fly_tune_get finds a bound set by this string: it must be the one
   * fly_tune_model_opts writes for the same model. */
  if( fly_tune_model_opts(&m, why, sizeof why, NULL) == FLY_OK
      && strcmp(why, mopts) != 0 )
    problem(ck, "model_opts '%s' is not the canonical '%s' (sample would "
            "never find this bound set)", mopts, why);
  if( tuning && strcmp(tuning, "map") == 0 ){
    b.tuned = 1;
  }else if( tuning && strncmp(tuning, "fixed=", 6) == 0 ){
    char *end;
    double x = strtod(tuning + 6, &end);
    if( end == tuning + 6 || *end || !isfinite(x) || x < 0 ){
      problem(ck, "tuning '%s': the fixed xi is not a number >= 0", tuning);
      goto done;
    }
    b.fixed = 1;
    b.fixed_xi = (float)x;
  }else{
    problem(ck, "unknown tuning '%s' (want 'map' or 'fixed=XI')",
            tuning ? tuning : "NULL");
    goto done;
  }

  size_t P = m.type->n_params(&m);
  b.n_xi = m.type->n_xi(&m);
  if( n_params != (int64_t)P )
    problem(ck, "n_params is %lld, model %s on %lld features has %zu",
            (long long)n_params, m.type->name, (long long)ds->width - 1, P);
  if( width != (int64_t)(b.n_xi + 1) ){
    problem(ck, "width is %lld, want %zu (%zu xi and the thinning key)",
            (long long)width, b.n_xi + 1, b.n_xi);
    shape_ok = 0;
  }
  if( page_rows != ds->page_rows ){
    problem(ck, "page_rows is %lld, but data set pages hold %lld rows (bound "
            "page k must cover data page k)", (long long)page_rows,
            (long long)ds->page_rows);
    shape_ok = 0;
  }
  int64_t want_pages = (ds->n_rows - 1) / ds->page_rows + 1;
  if( n_pages != want_pages )
    problem(ck, "n_pages is %lld, but %lld rows of %lld a page need %lld",
            (long long)n_pages, (long long)ds->n_rows,
            (long long)ds->page_rows, (long long)want_pages);
  check_blob(ck, row, 10, "theta_map", P);
  check_blob(ck, row, 11, "laplace_cov", P * P);
  check_blob(ck, row, 12, "laplace_prec", P * P);
  if( !shape_ok ) goto done;

  /* The pages, with the moments recomputed alongside. */
  b.ck = ck;
  b.m = &m;
  b.bw = b.n_xi + 1;
  b.page_rows = page_rows;
  b.n_mom = m.type->n_moments(&m);
  if( !ck->quick && ds->sound && ds->pg ){
    size_t pr = (size_t)page_rows;
    b.W = (size_t)ds->width;
    b.X = fly_alloc_array(pr, b.W * sizeof *b.X);
    b.work = fly_alloc_array(m.type->work_len(&m, pr) + 1, sizeof *b.work);
    b.xi = fly_alloc_array(pr * b.n_xi + 1, sizeof *b.xi);
    b.mom = fly_alloc_array(b.n_mom + 1, sizeof *b.mom);
    b.part = fly_alloc_array(b.n_mom + 1, sizeof *b.part);
    b.scale = fly_alloc_array(b.n_mom + 1, sizeof *b.scale);
    if( !b.X || !b.work || !b.xi || !b.mom || !b.part || !b.scale )
      problem(ck, "out of memory for the moments");
    else{
      b.data = ds->pg;
      b.mom_ok = 1;
    }
  }
  ptable t = { FLY_TABLE_BOUND, id, ds->n_rows, page_rows, want_pages, b.bw,
               FLY_PREC_F32 };
  scan_result sr;
  scan_pages(ck, &t, bound_page, &b, &sr);
  if( sr.bad || b.next != t.n_pages ) b.mom_ok = 0;
  compare_moments(ck, id, &b);
done:
  fly_free(b.X);
  fly_free(b.work);
  fly_free(b.xi);
  fly_free(b.mom);
  fly_free(b.part);
  fly_free(b.scale);
  scope_end(ck);
}

static void check_bound_sets(checker *ck, dset *ds, size_t n_ds,
                             int64_t *n_sets)
{
  sqlite3_stmt *st;
  int s;
  *n_sets = 0;
  scope_begin(ck, "table bound_set");
  st = prep(ck, "SELECT id, dataset_id, model, model_opts, tuning, status,"
            " n_params, width, page_rows, n_pages, theta_map, laplace_cov,"
            " laplace_prec FROM bound_set ORDER BY id");
  if( !st ){ scope_end(ck); return; }
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    check_bound_set(ck, st, ds, n_ds);
    ++*n_sets;
  }
  if( s != SQLITE_DONE ){
    scope_begin(ck, "table bound_set");
    step_failed(ck, "reading table bound_set");
  }
  scope_end(ck);
  sqlite3_finalize(st);
}

/* ---- 4. runs ---------------------------------------------------------- */

typedef struct runinfo {
  int64_t id, n_chains, n_warmup, n_iters, thin, P;
  int64_t N;                       /* rows of the data set, -1 if unknown */
  int     regular;                 /* z_mode 'regular': no bright rows */
  int     done;                    /* status 'done' */
} runinfo;

static void check_params(checker *ck, const runinfo *r)
{
  sqlite3_stmt *st = prep(ck, "SELECT idx FROM param WHERE run_id = ?1"
                          " ORDER BY idx");
  int64_t next = 0;
  char buf[48];
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    if( i < 0 || i >= r->P ){
      problem(ck, "param idx %lld: the run has parameters 0..%lld",
              (long long)i, (long long)r->P - 1);
      continue;
    }
    if( i > next )
      problem(ck, "param rows of idx %s missing", span(buf, sizeof buf, next, i - 1));
    next = i + 1;
  }
  if( s != SQLITE_DONE ) step_failed(ck, "reading table param");
  else if( next < r->P )
    problem(ck, "param rows of idx %s missing",
            span(buf, sizeof buf, next, r->P - 1));
  sqlite3_finalize(st);
}

/* A checkpoint blob: the checks of fly_chain_restore (the shared parser of
 * flymc/ckpt.h), plus the run's kernel and mode. */
static void check_ckpt(checker *ck, const runinfo *r, int64_t c,
                       const unsigned char *p, size_t len)
{
  fly_ckpt_view v;
  fly_err e = {0};
  if( fly_ckpt_parse(p, len, (size_t)r->P, r->N >= 0 ? r->N : 0, &v, &e) ){
    problem(ck, "chain %lld: %s", (long long)c, e.msg);
    return;
  }
  if( r->regular && v.head.B != 0 )
    problem(ck, "chain %lld: checkpoint holds %lld bright rows; a regular run has none",
            (long long)c, (long long)v.head.B);
}

/* Rows of view draw (is_draw) or iteration of chain c: exactly the
 * iterations thin, 2 thin, .. up to last, each draw iteration with all P
 * parameters.  beyond says what last is, for rows past it. */
static void check_chain_rows(checker *ck, const runinfo *r, int64_t c,
                             int is_draw, int64_t last, const char *beyond)
{
  const char *tab = is_draw ? "draw" : "iteration";
  sqlite3_stmt *st = prep(ck, is_draw
    ? "SELECT iter, count(value), min(idx), max(idx) FROM draw"
      " WHERE run_id = ?1 AND chain = ?2 GROUP BY iter ORDER BY iter"
    : "SELECT iter, 1, 0, 0 FROM iteration WHERE run_id = ?1 AND chain = ?2"
      " ORDER BY iter");
  int64_t next = r->thin, end = last - last % r->thin;
  int64_t n_beyond = 0, lo_beyond = 0, hi_beyond = 0;
  char buf[48], thin[48] = "";
  int s;

  if( !st ) return;
  if( r->thin > 1 ) snprintf(thin, sizeof thin, " (multiples of thin %lld)",
                             (long long)r->thin);
  sqlite3_bind_int64(st, 1, r->id);
  sqlite3_bind_int64(st, 2, c);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t it = sqlite3_column_int64(st, 0);
    int64_t cnt = sqlite3_column_int64(st, 1);
    int64_t lo = sqlite3_column_int64(st, 2), hi = sqlite3_column_int64(st, 3);
    if( it < 1 || it % r->thin != 0 ){
      problem(ck, "chain %lld: %s rows at iteration %lld, which is not a "
              "positive multiple of thin %lld", (long long)c, tab,
              (long long)it, (long long)r->thin);
      continue;
    }
    if( it > last ){
      if( n_beyond++ == 0 ) lo_beyond = it;
      hi_beyond = it;
      continue;
    }
    if( it > next )
      problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
              (long long)c, tab, it - r->thin > next ? "s" : "",
              span(buf, sizeof buf, next, it - r->thin), thin);
    next = it + r->thin;
    if( is_draw && (cnt != r->P || lo != 0 || hi != r->P - 1) )
      problem(ck, "chain %lld, iteration %lld: %lld draw row%s (idx %s), want "
              "one for each idx 0..%lld", (long long)c, (long long)it,
              (long long)cnt, cnt == 1 ? "" : "s", span(buf, sizeof buf, lo, hi),
              (long long)r->P - 1);
  }
  if( s != SQLITE_DONE ) step_failed(ck, is_draw ? "reading table draw"
                                                 : "reading table iteration");
  else if( next <= end )
    problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
            (long long)c, tab, end > next ? "s" : "",
            span(buf, sizeof buf, next, end), thin);
  if( n_beyond )
    problem(ck, "chain %lld: %s rows at %lld iteration%s (%s) %s",
            (long long)c, tab, (long long)n_beyond, n_beyond > 1 ? "s" : "",
            span(buf, sizeof buf, lo_beyond, hi_beyond), beyond);
  sqlite3_finalize(st);
}

/* Rows of `table` in chains the run does not have. */
static void check_stray_chains(checker *ck, const runinfo *r, const char *sql,
                               const char *tab)
{
  sqlite3_stmt *st = prep(ck, sql);
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->id);
  sqlite3_bind_int64(st, 2, r->n_chains);
  while( (s = sqlite3_step(st)) == SQLITE_ROW )
    problem(ck, "%lld %s row%s of chain %lld, but the run has chains 0..%lld",
            (long long)sqlite3_column_int64(st, 1), tab,
            sqlite3_column_int64(st, 1) == 1 ? "" : "s",
            (long long)sqlite3_column_int64(st, 0), (long long)r->n_chains - 1);
  if( s != SQLITE_DONE ) step_failed(ck, tab);
  sqlite3_finalize(st);
}

static void check_run(checker *ck, sqlite3_stmt *row, dset *dss, size_t n_ds)
{
  runinfo r;
  const char *zm = (const char *)sqlite3_column_text(row, 3);
  const char *status = (const char *)sqlite3_column_text(row, 9);
  int64_t *ck_iter = NULL;
  sqlite3_stmt *st = NULL;
  int s;

  memset(&r, 0, sizeof r);
  r.id = sqlite3_column_int64(row, 0);
  r.n_chains = sqlite3_column_int64(row, 4);
  r.n_warmup = sqlite3_column_int64(row, 5);
  r.n_iters = sqlite3_column_int64(row, 6);
  r.thin = sqlite3_column_int64(row, 7);
  r.P = sqlite3_column_int64(row, 8);
  r.done = status && strcmp(status, "done") == 0;
  const dset *ds = find_dset(dss, n_ds, sqlite3_column_int64(row, 1));
  r.N = ds ? ds->n_rows : -1;
  scope_begin(ck, "run %lld", (long long)r.id);

  if( r.n_chains < 1 || r.n_chains > MAX_CHAINS || r.thin < 1
      || r.thin > INT64_MAX / 4
      || r.n_warmup < 0 || r.n_iters < 0 || r.P < 1 || r.P > UINT32_MAX
      || r.n_warmup > INT64_MAX / 2 || r.n_iters > INT64_MAX / 2 ){
    problem(ck, "bad shape (n_chains %lld, n_warmup %lld, n_iters %lld, thin "
            "%lld, n_params %lld): draws not checked", (long long)r.n_chains,
            (long long)r.n_warmup, (long long)r.n_iters, (long long)r.thin,
            (long long)r.P);
    goto done;
  }
  if( !zm || (strcmp(zm, "regular") && strcmp(zm, "explicit")
              && strcmp(zm, "implicit") && strcmp(zm, "gibbs")) )
    problem(ck, "unknown z_mode '%s'", zm ? zm : "NULL");
  r.regular = zm && strcmp(zm, "regular") == 0;
  if( sqlite3_column_type(row, 10) != SQLITE_NULL
      && sqlite3_column_int64(row, 10) != r.P )
    problem(ck, "n_params is %lld, its bound set %lld has %lld",
            (long long)r.P, (long long)sqlite3_column_int64(row, 2),
            (long long)sqlite3_column_int64(row, 10));
  check_params(ck, &r);

  int64_t total = r.n_warmup + r.n_iters;
  ck_iter = fly_alloc_array((size_t)r.n_chains, sizeof *ck_iter);
  if( !ck_iter ){ problem(ck, "out of memory for %lld chains",
                          (long long)r.n_chains); goto done; }
  for(int64_t c = 0; c < r.n_chains; c++) ck_iter[c] = -1;
  if( (st = prep(ck, "SELECT chain, iter, state FROM checkpoint"
                 " WHERE run_id = ?1 ORDER BY chain")) ){
    sqlite3_bind_int64(st, 1, r.id);
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      int64_t c = sqlite3_column_int64(st, 0), it = sqlite3_column_int64(st, 1);
      const unsigned char *p = sqlite3_column_blob(st, 2);
      size_t len = (size_t)sqlite3_column_bytes(st, 2);
      if( c < 0 || c >= r.n_chains ){
        problem(ck, "checkpoint of chain %lld, but the run has chains "
                "0..%lld", (long long)c, (long long)r.n_chains - 1);
        continue;
      }
      if( it < 1 || it > total ){
        problem(ck, "chain %lld: checkpoint at iteration %lld, outside "
                "1..%lld", (long long)c, (long long)it, (long long)total);
        it = -2;
      }
      ck_iter[c] = it;
      check_ckpt(ck, &r, c, p, len);
    }
    if( s != SQLITE_DONE ) step_failed(ck, "reading table checkpoint");
    sqlite3_finalize(st);
  }

  /* ck_iter: -1 none, -2 out of range (reported), else the iteration.  A
   * running chain's rows go up to its checkpoint, a done one's to the end. */
  for(int64_t c = 0; c < r.n_chains; c++){
    int64_t it = ck_iter[c], last = it < 0 ? 0 : it;
    char beyond[96];
    if( r.done ){
      if( it == -1 )
        problem(ck, "chain %lld: status 'done', but the chain has no "
                "checkpoint", (long long)c);
      else if( it >= 0 && it != total )
        problem(ck, "chain %lld: status 'done', but its checkpoint is at "
                "iteration %lld of %lld", (long long)c, (long long)it,
                (long long)total);
      last = total;
      snprintf(beyond, sizeof beyond, "beyond the run's last iteration %lld",
               (long long)total);
    }else if( it == -2 ){
      continue;                 /* no telling where its rows should end */
    }else if( it == -1 ){
      snprintf(beyond, sizeof beyond, "but the chain has no checkpoint");
    }else{
      snprintf(beyond, sizeof beyond, "beyond its checkpoint at iteration %lld",
               (long long)it);
    }
    check_chain_rows(ck, &r, c, 1, last, beyond);
    check_chain_rows(ck, &r, c, 0, last, beyond);
  }
  check_stray_chains(ck, &r, "SELECT chain, count(*) FROM draw WHERE run_id = ?1"
                     " AND (chain < 0 OR chain >= ?2) GROUP BY chain", "draw");
  check_stray_chains(ck, &r, "SELECT chain, count(*) FROM iteration WHERE"
                     " run_id = ?1 AND (chain < 0 OR chain >= ?2) GROUP BY chain",
                     "iteration");
done:
  fly_free(ck_iter);
  scope_end(ck);
}

static void check_runs(checker *ck, dset *ds, size_t n_ds, int64_t *n_runs)
{
  sqlite3_stmt *st;
  int s;
  *n_runs = 0;
  scope_begin(ck, "table run");
  st = prep(ck, "SELECT r.id, r.dataset_id, r.bound_set_id, r.z_mode,"
            " r.n_chains, r.n_warmup, r.n_iters, r.thin, r.n_params, r.status,"
            " b.n_params FROM run r LEFT JOIN bound_set b"
            " ON b.id = r.bound_set_id ORDER BY r.id");
  if( !st ){ scope_end(ck); return; }
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    check_run(ck, st, ds, n_ds);
    ++*n_runs;
  }
  if( s != SQLITE_DONE ){
    scope_begin(ck, "table run");
    step_failed(ck, "reading table run");
  }
  scope_end(ck);
  sqlite3_finalize(st);
}

/* ---- the command ------------------------------------------------------ */

static fly_rc run_check(const char *path, int quick, int64_t *n_problems,
                        fly_err *err)
{
  checker ck;
  dset *ds = NULL;
  size_t n_ds = 0;
  int64_t n_sets = 0, n_runs = 0;
  fly_rc rc;

  memset(&ck, 0, sizeof ck);
  ck.quick = quick;
  /* A read-only open checks the identity without creating a schema in an
   * empty file or migrating an old one.  Then, if the file is writable, a
   * read-write connection with query_only on: it never writes either, but
   * unlike a read-only one it removes the -wal and -shm files of a WAL
   * database when it closes. */
  if( (rc = fly_db_open(path, FLY_DB_READONLY, &ck.db, err)) ) return rc;
  {
    fly_db *rw = NULL;
    if( fly_db_open(path, 0, &rw, NULL) == FLY_OK ){
      fly_db_close(ck.db);
      ck.db = rw;
    }
  }
  ck.h = fly_db_sqlite(ck.db);
  if( (rc = fly_db_exec(ck.db, "PRAGMA query_only=1", err)) ) goto done;
  /* One snapshot for the whole check. */
  if( (rc = fly_db_exec(ck.db, "BEGIN", err)) ) goto done;

  check_sqlite(&ck);
  check_datasets(&ck, &ds, &n_ds);
  check_bound_sets(&ck, ds, n_ds, &n_sets);
  check_runs(&ck, ds, n_ds, &n_runs);
  fly_db_exec(ck.db, "COMMIT", NULL);

  if( ck.n_problems == 0 )
    printf("%s: no problems found (%zu data set%s, %lld bound set%s, %lld "
           "run%s%s)\n", path, n_ds, n_ds == 1 ? "" : "s", (long long)n_sets,
           n_sets == 1 ? "" : "s", (long long)n_runs, n_runs == 1 ? "" : "s",
           quick ? "; quick: statistics and moments not recomputed" : "");
  else
    printf("%lld problem%s found\n", (long long)ck.n_problems,
           ck.n_problems == 1 ? "" : "s");
  if( fflush(stdout) != 0 || ferror(stdout) )
    rc = fly_fail(err, FLY_IO, "writing the report to standard output failed");
  *n_problems = ck.n_problems;
done:
  for(size_t i = 0; i < n_ds; i++) fly_pages_close(ds[i].pg);
  fly_free(ds);
  fly_db_close(ck.db);
  return rc;
}

int fly_cmd_check(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "quick", FLY_OPT_FLAG, "SQLite quick_check, and do not recompute column "
                             "statistics or moments", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  int64_t n = 0;
  const char *synopsis = "[--db PATH] [--quick]";

  if( fly_args_parse(&a, argc, argv, 0, &err) )
    return fly_usage_error(&a, "check", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "check", synopsis); return 0; }
  fly_rc rc = run_check(fly_args_str(&a, "db", "flydb.db"),
                        fly_args_set(&a, "quick"), &n, &err);
  if( rc ) return fly_report(rc, &err);
  return n ? 1 : 0;
}
