/*
 * test_pages.c -- the page writer and the page reader against the rows that
 * were written: page reads, random row batches (repeats, page boundaries,
 * the last partial page, many pages so the radix sort takes two passes),
 * FLY_RANGE, the LRU bound and its statistics, a handle held across
 * calls (one read transaction, WAL checkpoints), bound_page tables, and
 * a handle opened like another (fly_pages_open_like), corruption made
 * through SQL (flipped payload byte, truncated LZ4 and raw
 * payloads with a recomputed checksum, payload of the wrong size, wrong
 * raw_bytes, missing pages, wrong n_pages), each reported as FLY_CORRUPT
 * naming the page.
 *
 * Databases live in /tmp and are removed at the end.  Row r, column c of a
 * data set holds val(seed, r, c): random doubles (stored raw) or small
 * integers + 0.5 (LZ4 compresses them).
 */
#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

static char path[256];

static uint64_t mix(uint64_t z)
{
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* kind 0: random doubles; kind 1: compressible. */
static double val(int kind, int64_t r, size_t c)
{
  uint64_t u = mix((uint64_t)r * 131 + c);
  if( kind == 1 ) return (double)(u % 5) + 0.5;
  return ((double)(u >> 11) / 9007199254740992.0 - 0.5) * 20.0;
}

static void sql(fly_db *db, const char *s)
{
  fly_err err = {0};
  if( fly_db_exec(db, s, &err) ) printf("# SQL failed: %s\n", err.msg);
}

/* Data set `id` of n rows x width at prec, written through the writer. */
static int make_dataset(fly_db *db, int64_t id, int kind, int64_t n,
                        size_t width, int64_t page_rows, int prec)
{
  char q[512];
  fly_err err = {0};
  fly_pagewriter *w = NULL;
  double *row = calloc(width, sizeof *row);
  int ok = 0;

  if( fly_db_begin(db, &err) ) goto done;
  snprintf(q, sizeof q, "INSERT INTO dataset(id, name, source, n_rows, width,"
           " n_features, has_intercept, target_name, page_rows, n_pages, prec,"
           " raw_bytes, stored_bytes) VALUES(%lld, 'd%lld', 'test', %lld, %zu,"
           " %zu, 0, 'y', %lld, 0, %d, 0, 0)", (long long)id, (long long)id,
           (long long)n, width, width - 1, (long long)page_rows, prec);
  if( fly_db_exec(db, q, &err) ) goto done;
  if( fly_pagewriter_open(db, FLY_TABLE_DATA, id, width, page_rows, prec, &w,
                          &err) ) goto done;
  for(int64_t r = 0; r < n; r++){
    for(size_t c = 0; c < width; c++) row[c] = val(kind, r, c);
    if( fly_pagewriter_add(w, row, &err) ) goto done;
  }
  if( fly_pagewriter_finish(w, &err) ) goto done;
  snprintf(q, sizeof q, "UPDATE dataset SET n_pages = %lld, raw_bytes = %lld,"
           " stored_bytes = %lld WHERE id = %lld",
           (long long)fly_pagewriter_pages(w),
           (long long)fly_pagewriter_raw_bytes(w),
           (long long)fly_pagewriter_stored_bytes(w), (long long)id);
  if( fly_db_exec(db, q, &err) ) goto done;
  if( fly_db_commit(db, &err) ) goto done;
  ok = 1;
done:
  if( !ok ){
    printf("# make_dataset %lld: %s\n", (long long)id, err.msg);
    fly_db_rollback(db);
  }
  fly_pagewriter_free(w);
  free(row);
  return ok;
}

static int64_t query_i64(fly_db *db, const char *q)
{
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if( sqlite3_prepare_v2(fly_db_sqlite(db), q, -1, &st, NULL) == SQLITE_OK
      && sqlite3_step(st) == SQLITE_ROW )
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* Does out[0..n) hold rows ids[] of data set kind (at prec)? */
static int rows_equal(const double *out, const int64_t *ids, size_t n,
                      size_t width, int kind, int prec)
{
  for(size_t i = 0; i < n; i++)
    for(size_t c = 0; c < width; c++){
      double want = val(kind, ids[i], c);
      if( prec == FLY_PREC_F32 ) want = (double)(float)want;
      if( out[i * width + c] != want ) return 0;
    }
  return 1;
}

/* Replace the payload of (table, owner, page_no) by bytes [0, keep) of
 * itself, with the checksum recomputed so that only the decoder can object. */
static void truncate_payload(fly_db *db, const char *table, int64_t owner,
                             int64_t page_no, int keep_less)
{
  char q[256];
  sqlite3_stmt *st = NULL;
  unsigned char *b = NULL;
  int n = 0;
  snprintf(q, sizeof q, "SELECT payload FROM %s WHERE %s = %lld AND page_no = %lld",
           table, strcmp(table, "page") ? "bound_set_id" : "dataset_id",
           (long long)owner, (long long)page_no);
  sqlite3_prepare_v2(fly_db_sqlite(db), q, -1, &st, NULL);
  if( sqlite3_step(st) == SQLITE_ROW ){
    n = sqlite3_column_bytes(st, 0) - keep_less;
    b = malloc((size_t)n);
    memcpy(b, sqlite3_column_blob(st, 0), (size_t)n);
  }
  sqlite3_finalize(st);
  if( !b ) return;
  uint64_t sum = fly_codec_checksum(b, (size_t)n);
  int64_t ssum;
  memcpy(&ssum, &sum, sizeof ssum);
  snprintf(q, sizeof q, "UPDATE %s SET payload = ?1, checksum = ?2 WHERE %s = %lld"
           " AND page_no = %lld", table,
           strcmp(table, "page") ? "bound_set_id" : "dataset_id",
           (long long)owner, (long long)page_no);
  sqlite3_prepare_v2(fly_db_sqlite(db), q, -1, &st, NULL);
  sqlite3_bind_blob(st, 1, b, n, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, ssum);
  if( sqlite3_step(st) != SQLITE_DONE ) printf("# truncate failed\n");
  sqlite3_finalize(st);
  free(b);
}

/* Flip byte `at` (1-based) of a stored payload, in SQL. */
static void flip_byte(fly_db *db, const char *table, const char *owner_col,
                      int64_t owner, int64_t page_no, int at)
{
  char q[512];
  snprintf(q, sizeof q, "UPDATE %s SET payload = CAST(substr(payload, 1, %d) ||"
           " CASE WHEN substr(payload, %d, 1) = X'00' THEN X'01' ELSE X'00' END ||"
           " substr(payload, %d) AS BLOB) WHERE %s = %lld AND page_no = %lld",
           table, at - 1, at, at + 1, owner_col, (long long)owner,
           (long long)page_no);
  sql(db, q);
}

static fly_db *fresh_db(void)
{
  fly_db *db = NULL;
  fly_err err = {0};
  unlink(path);
  if( fly_db_open(path, FLY_DB_CREATE, &db, &err) )
    printf("# open %s: %s\n", path, err.msg);
  return db;
}

/* ---- writer and reader agree ----------------------------------------- */

static void test_write_read(void)
{
  enum { N = 1000, W = 3, P = 64 };         /* 16 pages, the last of 40 rows */
  fly_db *db = fresh_db();
  fly_err err = {0};
  fly_pages *p = NULL;
  double *out = malloc(4000 * W * sizeof *out);
  int64_t *ids = malloc(4000 * sizeof *ids);
  fly_rc rc;

  TAP_OK(make_dataset(db, 1, 0, N, W, P, FLY_PREC_F64), "random data set written");
  TAP_OK(make_dataset(db, 2, 1, N, W, P, FLY_PREC_F64), "compressible data set written");
  TAP_OK(query_i64(db, "SELECT count(*) FROM page WHERE dataset_id = 1 AND codec = 0") == 16,
         "random pages stored raw");
  TAP_OK(query_i64(db, "SELECT count(*) FROM page WHERE dataset_id = 2 AND codec = 1") == 16,
         "compressible pages stored lz4");
  TAP_OK(query_i64(db, "SELECT stored_bytes FROM dataset WHERE id = 2")
         == query_i64(db, "SELECT sum(length(payload)) FROM page WHERE dataset_id = 2")
         && query_i64(db, "SELECT stored_bytes FROM dataset WHERE id = 2") < N * W * 8 / 2,
         "writer counts stored bytes (%lld of %d)",
         (long long)query_i64(db, "SELECT stored_bytes FROM dataset WHERE id = 2"),
         N * W * 8);
  TAP_OK(query_i64(db, "SELECT raw_bytes FROM dataset WHERE id = 1") == N * W * 8
         && query_i64(db, "SELECT n_pages FROM dataset WHERE id = 1") == 16,
         "writer counts raw bytes and pages");

  for(int kind = 0; kind < 2; kind++){
    int64_t id = kind + 1;
    rc = fly_pages_open(db, FLY_TABLE_DATA, id, 1 << 20, &p, &err);
    TAP_OK(rc == FLY_OK, "open data set %lld (%s)", (long long)id, rc ? err.msg : "ok");
    if( rc ) continue;
    const fly_pages_info *in = fly_pages_info_of(p);
    TAP_OK(in->n_rows == N && in->width == W && in->page_rows == P
           && in->n_pages == 16 && in->prec == 8, "info of data set %lld", (long long)id);

    int ok = 1;
    size_t nr = 0;
    for(int64_t k = 0; k < 16 && ok; k++){
      ok = fly_pages_read_page(p, k, out, &nr, &err) == FLY_OK
        && nr == (size_t)(k == 15 ? 40 : P);
      for(size_t i = 0; ok && i < nr; i++) ids[i] = k * P + (int64_t)i;
      ok = ok && rows_equal(out, ids, nr, W, kind, 8);
    }
    TAP_OK(ok, "read_page of every page (last holds 40 rows), data set %lld",
           (long long)id);

    /* batches: boundaries, repeats, random, sorted, reversed */
    static const int64_t edge[] = { 999, 0, 63, 64, 127, 128, 960, 959, 999, 63,
                                    0, 500, 500, 500 };
    size_t ne = sizeof edge / sizeof edge[0];
    rc = fly_pages_read_rows(p, edge, ne, out, &err);
    TAP_OK(rc == FLY_OK && rows_equal(out, edge, ne, W, kind, 8),
           "page boundaries, last partial page and repeats");
    uint64_t s = 1234 + (uint64_t)kind;
    static const size_t sizes[] = { 1, 2, 47, 48, 49, 200, 4000 };
    for(size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++){
      size_t n = sizes[t];
      for(size_t i = 0; i < n; i++) ids[i] = (int64_t)(mix(s++) % N);
      rc = fly_pages_read_rows(p, ids, n, out, &err);
      TAP_OK(rc == FLY_OK && rows_equal(out, ids, n, W, kind, 8),
             "random batch of %zu rows (repeats likely)", n);
    }
    for(size_t i = 0; i < N; i++) ids[i] = (int64_t)i;
    rc = fly_pages_read_rows(p, ids, N, out, &err);
    TAP_OK(rc == FLY_OK && rows_equal(out, ids, N, W, kind, 8), "all rows in order");
    for(size_t i = 0; i < N; i++) ids[i] = N - 1 - (int64_t)i;
    rc = fly_pages_read_rows(p, ids, N, out, &err);
    TAP_OK(rc == FLY_OK && rows_equal(out, ids, N, W, kind, 8), "all rows reversed");

    /* out of range */
    int64_t bad[3] = { 5, N, 7 };
    rc = fly_pages_read_rows(p, bad, 3, out, &err);
    TAP_OK(rc == FLY_RANGE && strstr(err.msg, "row 1000"),
           "row N: FLY_RANGE (%s)", err.msg);
    bad[1] = -1;
    rc = fly_pages_read_rows(p, bad, 3, out, &err);
    TAP_OK(rc == FLY_RANGE, "row -1: FLY_RANGE (%s)", err.msg);
    rc = fly_pages_read_page(p, 16, out, &nr, &err);
    TAP_OK(rc == FLY_RANGE, "page 16 of 16: FLY_RANGE (%s)", err.msg);
    const double *rows = NULL;
    rc = fly_pages_get(p, -1, &rows, &nr, &err);
    TAP_OK(rc == FLY_RANGE, "get page -1: FLY_RANGE");
    rc = fly_pages_read_rows(p, ids, (size_t)UINT32_MAX + 1, out, &err);
    TAP_OK(rc == FLY_RANGE, "batch of 2^32 rows refused before any allocation");
    rc = fly_pages_read_rows(p, ids, 0, out, &err);
    TAP_OK(rc == FLY_OK, "empty batch");
    ids[0] = 3;
    rc = fly_pages_read_rows(p, ids, 1, out, &err);
    TAP_OK(rc == FLY_OK && rows_equal(out, ids, 1, W, kind, 8), "handle works after errors");
    fly_pages_close(p);
    p = NULL;
  }

  rc = fly_pages_open(db, FLY_TABLE_DATA, 9, 0, &p, &err);
  TAP_OK(rc == FLY_RANGE && p == NULL && strstr(err.msg, "data set 9"),
         "open a data set that does not exist: FLY_RANGE (%s)", err.msg);
  free(out);
  free(ids);
  fly_db_close(db);
}

/* Many small pages: 2500 pages, so the radix sort makes two passes. */
static void test_many_pages(void)
{
  enum { N = 5000, W = 2, P = 2 };
  fly_db *db = fresh_db();
  fly_err err = {0};
  fly_pages *p = NULL;
  double *out = malloc(6000 * W * sizeof *out);
  int64_t *ids = malloc(6000 * sizeof *ids);
  TAP_OK(make_dataset(db, 1, 0, N, W, P, FLY_PREC_F32), "2500-page f32 data set");
  fly_rc rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 64 * P * W * 8, &p, &err);
  TAP_OK(rc == FLY_OK, "open (%s)", rc ? err.msg : "ok");
  if( rc == FLY_OK ){
    uint64_t s = 77;
    int ok = 1, once = 1;
    char *seen = malloc(N / P);
    for(int t = 0; t < 5 && ok; t++){
      size_t n = 6000 >> t;
      int64_t distinct = 0;
      fly_pages_stats b, a;
      memset(seen, 0, N / P);
      for(size_t i = 0; i < n; i++){
        ids[i] = (int64_t)(mix(s++) % N);
        distinct += !seen[ids[i] / P];
        seen[ids[i] / P] = 1;
      }
      fly_pages_stats_get(p, &b);
      ok = fly_pages_read_rows(p, ids, n, out, &err) == FLY_OK
        && rows_equal(out, ids, n, W, 0, FLY_PREC_F32);
      fly_pages_stats_get(p, &a);
      once &= a.page_reads - b.page_reads + a.cache_hits - b.cache_hits == distinct;
    }
    free(seen);
    TAP_OK(ok, "random batches over 2500 pages equal (double)(float) rows");
    TAP_OK(once, "each batch visits each of its pages once (two radix passes)");
    fly_pages_stats st;
    fly_pages_stats_get(p, &st);
    TAP_OK(st.rows_read == 6000 + 3000 + 1500 + 750 + 375,
           "rows_read counts rows (%lld)", (long long)st.rows_read);
  }
  fly_pages_close(p);
  free(out);
  free(ids);
  fly_db_close(db);
}

/* ---- the LRU cache ---------------------------------------------------- */

static void test_lru(void)
{
  enum { N = 1000, W = 2, P = 100 };        /* 10 full pages */
  const size_t page_bytes = P * W * sizeof(double);
  fly_db *db = fresh_db();
  fly_err err = {0};
  fly_pages *p = NULL;
  fly_pages_stats st;
  const double *rows = NULL;
  size_t nr;
  int ok;
  double *out = malloc(N * W * sizeof *out);
  int64_t *ids = malloc(N * sizeof *ids);

  TAP_OK(make_dataset(db, 1, 1, N, W, P, FLY_PREC_F64), "10-page data set");
  fly_rc rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 3 * page_bytes + 17, &p, &err);
  TAP_OK(rc == FLY_OK, "open with a 3-page cache");
  if( rc ) goto done;

  /* 0 1 2 miss, 0 hit, 3 miss evicts 1 (LRU), 0 2 3 hit, 1 miss evicts 0 */
  static const int64_t seq[] = { 0, 1, 2, 0, 3, 0, 2, 3, 1, 0 };
  static const int hit[]     = { 0, 0, 0, 1, 0, 1, 1, 1, 0, 0 };
  ok = 1;
  for(size_t t = 0; t < sizeof seq / sizeof seq[0]; t++){
    fly_pages_stats before;
    fly_pages_stats_get(p, &before);
    ok &= fly_pages_get(p, seq[t], &rows, &nr, &err) == FLY_OK && nr == P;
    ok &= rows[0] == val(1, seq[t] * P, 0) && rows[P * W - 1] == val(1, seq[t] * P + P - 1, W - 1);
    fly_pages_stats_get(p, &st);
    ok &= st.cache_hits - before.cache_hits == hit[t]
       && st.page_reads - before.page_reads == !hit[t];
  }
  TAP_OK(ok, "3-page LRU: hits and evictions in least-recently-used order");
  fly_pages_stats_get(p, &st);
  TAP_OK(st.page_reads == 6 && st.cache_hits == 4, "stats: %lld reads, %lld hits",
         (long long)st.page_reads, (long long)st.cache_hits);

  /* a random batch visits each page once, whatever the order of the ids */
  uint64_t s = 3;
  for(int64_t i = 0; i < 500; i++) ids[i] = (int64_t)(mix(s++) % N);
  fly_pages_stats before;
  fly_pages_stats_get(p, &before);
  rc = fly_pages_read_rows(p, ids, 500, out, &err);
  fly_pages_stats_get(p, &st);
  TAP_OK(rc == FLY_OK && rows_equal(out, ids, 500, W, 1, 8)
         && st.page_reads - before.page_reads + st.cache_hits - before.cache_hits == 10,
         "500 random rows: each of the 10 pages visited once (%lld)",
         (long long)(st.page_reads - before.page_reads + st.cache_hits - before.cache_hits));

  /* a full pass with a cache smaller than the data reads every page once per
   * pass and keeps the bound: the next pass cannot be served from cache */
  for(int64_t i = 0; i < N; i++) ids[i] = i;
  fly_pages_stats_get(p, &before);
  rc = fly_pages_read_rows(p, ids, N, out, &err);
  fly_pages_stats_get(p, &st);
  TAP_OK(rc == FLY_OK && rows_equal(out, ids, N, W, 1, 8)
         && st.page_reads - before.page_reads + st.cache_hits - before.cache_hits == 10,
         "scan visits each page once (%lld reads, %lld hits)",
         (long long)(st.page_reads - before.page_reads),
         (long long)(st.cache_hits - before.cache_hits));
  before = st;
  rc = fly_pages_read_rows(p, ids, N, out, &err);
  fly_pages_stats_get(p, &st);
  TAP_OK(rc == FLY_OK && st.page_reads - before.page_reads == 10
         && st.rows_read - before.rows_read == N,
         "second scan: 10 reads (cache held at most 3 pages)");

  /* read_page bypasses the cache: it does not evict */
  fly_pages_get(p, 9, &rows, &nr, &err);
  fly_pages_stats_get(p, &before);
  for(int64_t k = 0; k < 7; k++) fly_pages_read_page(p, k, out, &nr, &err);
  fly_pages_get(p, 9, &rows, &nr, &err);
  fly_pages_get(p, 8, &rows, &nr, &err);
  fly_pages_get(p, 7, &rows, &nr, &err);
  fly_pages_stats_get(p, &st);
  TAP_OK(st.page_reads - before.page_reads == 7 && st.cache_hits - before.cache_hits == 3,
         "read_page leaves the cache alone (pages 7-9 still cached)");
  fly_pages_close(p);

  /* cache_bytes 0: two pages */
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  ok = rc == FLY_OK;
  if( ok ){
    fly_pages_get(p, 0, &rows, &nr, &err);
    fly_pages_get(p, 1, &rows, &nr, &err);
    fly_pages_get(p, 0, &rows, &nr, &err);
    fly_pages_get(p, 2, &rows, &nr, &err);     /* evicts 1 */
    fly_pages_get(p, 0, &rows, &nr, &err);
    fly_pages_get(p, 1, &rows, &nr, &err);
    fly_pages_stats_get(p, &st);
    ok = st.page_reads == 4 && st.cache_hits == 2;
  }
  TAP_OK(ok, "cache_bytes 0 gives a 2-page cache");
  fly_pages_close(p);

  /* a cache larger than the data: second pass is all hits */
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, (size_t)1 << 30, &p, &err);
  ok = rc == FLY_OK;
  if( ok ){
    ok &= fly_pages_read_rows(p, ids, N, out, &err) == FLY_OK;
    ok &= fly_pages_read_rows(p, ids, N, out, &err) == FLY_OK;
    fly_pages_stats_get(p, &st);
    ok &= st.page_reads == 10 && st.cache_hits == 10 && st.rows_read == 2 * N
       && st.decode_seconds > 0;
  }
  TAP_OK(ok, "cache larger than the data: 10 reads then 10 hits");
  fly_pages_close(p);
  p = NULL;
done:
  fly_pages_close(p);
  free(out);
  free(ids);
  fly_db_close(db);
}

/* ---- corruption ------------------------------------------------------- */

/* Once the cache is full, read_rows reads a raw page it has not seen lately
 * past the cache (values still exact and verified) and caches it on its
 * next miss. */
static void test_read_past(void)
{
  enum { N = 1000, W = 3, P = 100 };        /* 10 raw f32 pages */
  fly_db *db = fresh_db();
  fly_err err = {0};
  fly_pages *p = NULL;
  const double *rows;
  size_t nr;
  double out[4 * W];
  int64_t ids[4] = { 517, 503, 598, 517 };   /* page 5, a repeat */
  fly_pages_stats a, b;

  TAP_OK(make_dataset(db, 1, 0, N, W, P, FLY_PREC_F32), "10-page raw f32 data set");
  fly_rc rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 3 * P * W * sizeof(double),
                             &p, &err);
  TAP_OK(rc == FLY_OK, "open with a 3-page cache");
  if( rc ) goto done;
  for(int64_t k = 0; k < 3; k++) fly_pages_get(p, k, &rows, &nr, &err);
  fly_pages_stats_get(p, &b);
  rc = fly_pages_read_rows(p, ids, 4, out, &err);
  fly_pages_stats_get(p, &a);
  TAP_OK(rc == FLY_OK && rows_equal(out, ids, 4, W, 0, FLY_PREC_F32)
         && a.page_reads - b.page_reads == 1 && !fly_pages_row_cached(p, 517)
         && fly_pages_row_cached(p, 0) && fly_pages_row_cached(p, 250),
         "full cache: a new page is read once, past the cache, rows exact");
  rc = fly_pages_read_rows(p, ids, 4, out, &err);
  fly_pages_stats_get(p, &b);
  TAP_OK(rc == FLY_OK && rows_equal(out, ids, 4, W, 0, FLY_PREC_F32)
         && b.page_reads - a.page_reads == 1 && fly_pages_row_cached(p, 517)
         && !fly_pages_row_cached(p, 0),
         "its next miss caches it (evicting the least recent page)");
  rc = fly_pages_read_rows(p, ids, 4, out, &err);
  fly_pages_stats_get(p, &a);
  TAP_OK(rc == FLY_OK && a.page_reads == b.page_reads
         && a.cache_hits - b.cache_hits == 1, "then it is a cache hit");

  /* a corrupt page read past the cache is still caught */
  sql(db, "UPDATE page SET checksum = checksum + 1 WHERE dataset_id = 1 AND page_no = 8");
  fly_pages_close(p);
  p = NULL;
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 3 * P * W * sizeof(double), &p, &err);
  for(int64_t k = 0; rc == FLY_OK && k < 3; k++)
    rc = fly_pages_get(p, k, &rows, &nr, &err);
  int64_t bad = 812;
  if( rc == FLY_OK ) rc = fly_pages_read_rows(p, &bad, 1, out, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 8: checksum mismatch"),
         "checksum verified when read past the cache (%s)", err.msg);
done:
  fly_pages_close(p);
  fly_db_close(db);
}

/* ---- a held handle ---------------------------------------------------- */

/* 1 if a TRUNCATE checkpoint on db could reset the whole WAL (no reader
 * pins a snapshot), 0 if a reader held it back, -1 on error. */
static int wal_resets(fly_db *db)
{
  sqlite3_stmt *st = NULL;
  int v = -1;
  if( sqlite3_prepare_v2(fly_db_sqlite(db), "PRAGMA wal_checkpoint(TRUNCATE)",
                         -1, &st, NULL) == SQLITE_OK
      && sqlite3_step(st) == SQLITE_ROW )
    v = sqlite3_column_int(st, 0) == 0 && sqlite3_column_int(st, 1) == 0;
  sqlite3_finalize(st);
  return v;
}

/* The data set of the hold checks: random f64 rows, 10 pages. */
enum { HOLD_N = 1000, HOLD_W = 3, HOLD_P = 100 };

/* Read rows a and b of that data set, then commit on db (another
 * connection): wal_resets(db) if the rows came back exact, else -1. */
static int read_then_commit(fly_pages *p, fly_db *db, int64_t a, int64_t b)
{
  int64_t ids[2] = { a, b };
  double out[2 * HOLD_W];
  fly_err err = {0};
  if( fly_pages_read_rows(p, ids, 2, out, &err) != FLY_OK ){
    printf("# read_rows: %s\n", err.msg);
    return -1;
  }
  sql(db, "INSERT INTO log VALUES (1)");
  return rows_equal(out, ids, 2, HOLD_W, 0, FLY_PREC_F64) ? wal_resets(db) : -1;
}

/* fly_pages_hold keeps one read transaction across calls (the chains' z
 * steps): another connection's commits do not disturb its reads, a WAL
 * checkpoint cannot pass it, and fly_pages_release / hold off end it.  The
 * cache holds 2 pages, so each read below fetches pages not cached. */
static void test_hold(void)
{
  fly_db *db = fresh_db(), *rd = NULL;
  fly_err err = {0};
  fly_pages *p = NULL;
  fly_rc rc;

  TAP_OK(make_dataset(db, 1, 0, HOLD_N, HOLD_W, HOLD_P, FLY_PREC_F64),
         "data set for the hold checks");
  rc = fly_db_wal(db, &err);
  if( rc == FLY_OK ) rc = fly_db_open(path, FLY_DB_READONLY, &rd, &err);
  if( rc == FLY_OK ) rc = fly_pages_open(rd, FLY_TABLE_DATA, 1, 0, &p, &err);
  TAP_OK(rc == FLY_OK, "WAL on; a reader on a second connection (%s)",
         rc ? err.msg : "ok");
  if( rc ) goto done;
  sql(db, "CREATE TABLE log(x)");

  TAP_OK(read_then_commit(p, db, 517, 12) == 1,
         "not held: the read ends its transaction");
  fly_pages_hold(p, 1);
  TAP_OK(read_then_commit(p, db, 302, 412) == 0
         && read_then_commit(p, db, 703, 12) == 0,
         "held: reads between another connection's commits are exact, and "
         "the WAL cannot be reset past the reader");
  fly_pages_release(p);
  TAP_OK(wal_resets(db) == 1, "fly_pages_release ends the transaction");
  TAP_OK(read_then_commit(p, db, 950, 880) == 0,
         "still held: the next read opens a new one");
  fly_pages_hold(p, 0);
  TAP_OK(wal_resets(db) == 1, "hold off releases");
  TAP_OK(read_then_commit(p, db, 50, 150) == 1,
         "and calls end their transaction again");
done:
  fly_pages_close(p);
  fly_db_close(rd);
  fly_db_close(db);
}

/* fly_pages_open_like: the map copied to a handle on another connection
 * reads the same rows as a handle that read its own; another table or
 * owner, or a connection to another file, is FLY_MISUSE; and a page
 * changed after the copy is still caught by its checksum. */
static void test_open_like(void)
{
  enum { N = 3000, W = 3, P = 7 };
  fly_db *db = fresh_db(), *rd = NULL, *other = NULL;
  fly_err err = {0};
  fly_pages *p = NULL, *q = NULL, *r = NULL;
  double *a = malloc(N * W * sizeof *a), *b = malloc(N * W * sizeof *b);
  int64_t *ids = malloc(N * sizeof *ids);
  char opath[300];
  fly_rc rc;

  TAP_OK(make_dataset(db, 1, 0, N, W, P, FLY_PREC_F64) &&
         make_dataset(db, 2, 1, N, W, P, FLY_PREC_F64), "two data sets");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  if( rc == FLY_OK ) rc = fly_db_open(path, FLY_DB_READONLY, &rd, &err);
  if( rc == FLY_OK ) rc = fly_pages_open_like(rd, FLY_TABLE_DATA, 1, p, 4 * P * W * 8, &q, &err);
  TAP_OK(rc == FLY_OK, "open like a handle of another connection (%s)", rc ? err.msg : "ok");
  if( rc == FLY_OK ){
    const fly_pages_info *x = fly_pages_info_of(p), *y = fly_pages_info_of(q);
    TAP_OK(x->n_rows == y->n_rows && x->width == y->width && x->page_rows == y->page_rows
           && x->n_pages == y->n_pages && x->prec == y->prec, "same shape");
    for(int64_t i = 0; i < N; i++) ids[i] = (int64_t)(mix((uint64_t)i + 5) % N);
    int ok = fly_pages_read_rows(p, ids, N, a, &err) == FLY_OK
          && fly_pages_read_rows(q, ids, N, b, &err) == FLY_OK
          && memcmp(a, b, N * W * sizeof *a) == 0 && rows_equal(b, ids, N, W, 0, FLY_PREC_F64);
    TAP_OK(ok, "3000 random rows equal the written ones and the first handle's (%s)",
           ok ? "ok" : err.msg);
  }
  rc = fly_pages_open_like(rd, FLY_TABLE_DATA, 2, NULL, 0, &r, &err);
  TAP_OK(rc == FLY_OK && fly_pages_info_of(r)->n_rows == N,
         "like NULL: the map read, as fly_pages_open (%s)", rc ? err.msg : "ok");
  fly_pages_close(r);
  r = NULL;
  rc = fly_pages_open_like(rd, FLY_TABLE_DATA, 2, p, 0, &r, &err);
  TAP_OK(rc == FLY_MISUSE && r == NULL, "another data set: FLY_MISUSE (%s)", err.msg);
  rc = fly_pages_open_like(rd, FLY_TABLE_BOUND, 1, p, 0, &r, &err);
  TAP_OK(rc == FLY_MISUSE && r == NULL, "another table: FLY_MISUSE (%s)", err.msg);
  snprintf(opath, sizeof opath, "%s.other", path);
  unlink(opath);
  rc = fly_db_open(opath, FLY_DB_CREATE, &other, &err);
  if( rc == FLY_OK ) rc = fly_pages_open_like(other, FLY_TABLE_DATA, 1, p, 0, &r, &err);
  TAP_OK(rc == FLY_MISUSE && r == NULL, "a connection to another file: FLY_MISUSE (%s)",
         err.msg);
  /* a page rewritten after the map was copied: its checksum no longer holds */
  fly_pages_close(q);
  q = NULL;
  flip_byte(db, "page", "dataset_id", 1, 3, 9);
  rc = fly_pages_open_like(rd, FLY_TABLE_DATA, 1, p, 0, &q, &err);
  if( rc == FLY_OK ){
    size_t n = 0;
    rc = fly_pages_read_page(q, 3, a, &n, &err);
  }
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 3"), "a page changed since: "
         "FLY_CORRUPT naming it (%s)", err.msg);
  fly_pages_close(r);
  fly_pages_close(q);
  fly_pages_close(p);
  fly_db_close(other);
  unlink(opath);
  fly_db_close(rd);
  fly_db_close(db);
  free(a);
  free(b);
  free(ids);
}

static void test_corruption(void)
{
  enum { N = 1000, W = 3, P = 64 };
  fly_db *db = fresh_db();
  fly_err err = {0};
  fly_pages *p = NULL;
  double *out = malloc(P * W * sizeof *out);
  size_t nr;
  fly_rc rc;
  int64_t id;

  make_dataset(db, 1, 0, N, W, P, FLY_PREC_F64);   /* raw pages */
  make_dataset(db, 2, 1, N, W, P, FLY_PREC_F64);   /* lz4 pages */

  /* flipped byte, made after open (the reader sees the new bytes) */
  for(int64_t ds = 1; ds <= 2; ds++){
    rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &p, &err);
    TAP_OK(rc == FLY_OK, "open data set %lld", (long long)ds);
    if( rc ) continue;
    flip_byte(db, "page", "dataset_id", ds, 13, 20);
    char want[64];
    snprintf(want, sizeof want, "data set %lld, page 13: checksum mismatch",
             (long long)ds);
    rc = fly_pages_read_page(p, 13, out, &nr, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, want),
           "flipped byte: read_page FLY_CORRUPT (%s)", err.msg);
    id = 13 * P + 5;
    rc = fly_pages_read_rows(p, &id, 1, out, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, want),
           "flipped byte: read_rows FLY_CORRUPT (%s)", err.msg);
    rc = fly_pages_read_page(p, 13, out, &nr, NULL);
    TAP_OK(rc == FLY_CORRUPT, "flipped byte with err NULL: FLY_CORRUPT");
    const double *rows;
    rc = fly_pages_get(p, 13, &rows, &nr, &err);
    TAP_OK(rc == FLY_CORRUPT, "flipped byte: get FLY_CORRUPT");
    id = 12 * P + 5;
    rc = fly_pages_read_rows(p, &id, 1, out, &err);
    TAP_OK(rc == FLY_OK && rows_equal(out, &id, 1, W, (int)ds - 1, 8),
           "neighbouring page still reads");
    fly_pages_close(p);
    p = NULL;
  }

  /* truncated lz4 payload with a matching checksum: the decoder objects */
  truncate_payload(db, "page", 2, 4, 7);
  rc = fly_pages_open(db, FLY_TABLE_DATA, 2, 0, &p, &err);
  if( rc == FLY_OK ){
    rc = fly_pages_read_page(p, 4, out, &nr, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "data set 2, page 4: lz4"),
           "truncated lz4: FLY_CORRUPT (%s)", err.msg);
    rc = fly_pages_read_page(p, 4, out, &nr, NULL);
    TAP_OK(rc == FLY_CORRUPT, "truncated lz4 with err NULL: still FLY_CORRUPT");
    id = 4 * P;
    rc = fly_pages_read_rows(p, &id, 1, out, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 4"),
           "truncated lz4 via read_rows: FLY_CORRUPT (%s)", err.msg);
  }else TAP_OK(0, "open after truncation (%s)", err.msg);
  fly_pages_close(p);
  p = NULL;

  /* truncated raw payload with a matching checksum */
  truncate_payload(db, "page", 1, 2, 8);
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  if( rc == FLY_OK ){
    rc = fly_pages_read_page(p, 2, out, &nr, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "data set 1, page 2: stored payload"),
           "truncated raw payload: FLY_CORRUPT (%s)", err.msg);
  }else TAP_OK(0, "open after raw truncation (%s)", err.msg);
  fly_pages_close(p);
  p = NULL;

  /* wrong raw_bytes in the page row: caught at open */
  sql(db, "UPDATE page SET raw_bytes = raw_bytes + 8 WHERE dataset_id = 2 AND page_no = 7");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 2, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && p == NULL && strstr(err.msg, "data set 2, page 7: raw_bytes"),
         "wrong raw_bytes: FLY_CORRUPT at open (%s)", err.msg);
  sql(db, "UPDATE page SET raw_bytes = raw_bytes - 8 WHERE dataset_id = 2 AND page_no = 7");

  /* lz4 payloads of another page's size, checksums valid: page 12 (64 rows)
   * takes page 15's payload (40 rows), page 15 takes page 14's (64 rows) */
  sql(db, "UPDATE page SET payload = (SELECT payload FROM page WHERE dataset_id = 2"
          " AND page_no = 15), checksum = (SELECT checksum FROM page WHERE"
          " dataset_id = 2 AND page_no = 15) WHERE dataset_id = 2 AND page_no = 12");
  sql(db, "UPDATE page SET payload = (SELECT payload FROM page WHERE dataset_id = 2"
          " AND page_no = 14), checksum = (SELECT checksum FROM page WHERE"
          " dataset_id = 2 AND page_no = 14) WHERE dataset_id = 2 AND page_no = 15");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 2, 0, &p, &err);
  if( rc == FLY_OK ){
    rc = fly_pages_read_page(p, 12, out, &nr, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 12: lz4 payload decodes to 960 bytes"),
           "payload decoding to too few bytes: FLY_CORRUPT (%s)", err.msg);
    rc = fly_pages_read_page(p, 15, out, &nr, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 15"),
           "payload decoding to too many bytes: FLY_CORRUPT (%s)", err.msg);
  }else TAP_OK(0, "open (%s)", err.msg);
  fly_pages_close(p);
  p = NULL;

  /* unknown codec */
  sql(db, "PRAGMA ignore_check_constraints = 1;"
          " UPDATE page SET codec = 5 WHERE dataset_id = 2 AND page_no = 0;"
          " PRAGMA ignore_check_constraints = 0");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 2, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 0: unknown codec 5"),
         "unknown codec: FLY_CORRUPT at open (%s)", err.msg);

  /* missing pages */
  sql(db, "DELETE FROM page WHERE dataset_id = 1 AND page_no = 5");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && p == NULL
         && strstr(err.msg, "data set 1: page 5 of 16 is missing (rows 320..383)"),
         "missing page 5: FLY_CORRUPT at open (%s)", err.msg);
  sql(db, "DELETE FROM page WHERE dataset_id = 1 AND page_no > 5");
  sql(db, "UPDATE page SET page_no = 5, first_row = 320 WHERE dataset_id = 1 AND page_no = 4");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 4 of 16 is missing"),
         "renumbered page: FLY_CORRUPT (%s)", err.msg);
  sql(db, "DELETE FROM page WHERE dataset_id = 1 AND page_no = 5");
  sql(db, "INSERT INTO page(dataset_id, page_no, first_row, n_rows, codec, raw_bytes,"
          " checksum, payload) SELECT 1, page_no, first_row, n_rows, codec, raw_bytes,"
          " checksum, payload FROM page WHERE dataset_id = 2 AND page_no >= 4");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  TAP_OK(rc == FLY_OK, "pages refilled from another data set open (%s)",
         rc ? err.msg : "ok");
  fly_pages_close(p);
  p = NULL;
  sql(db, "DELETE FROM page WHERE dataset_id = 1 AND page_no = 15");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "page 15 of 16 is missing (rows 960..999)"),
         "missing last page: FLY_CORRUPT (%s)", err.msg);

  /* wrong shape in the dataset row */
  sql(db, "UPDATE dataset SET n_pages = 17 WHERE id = 1");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "n_pages is 17"),
         "dataset n_pages inconsistent with n_rows: FLY_CORRUPT (%s)", err.msg);
  sql(db, "UPDATE dataset SET n_pages = 16, page_rows = 32 WHERE id = 2");
  sql(db, "UPDATE dataset SET n_pages = 32 WHERE id = 2");
  rc = fly_pages_open(db, FLY_TABLE_DATA, 2, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "rows"),
         "page_rows changed under the pages: FLY_CORRUPT (%s)", err.msg);
  free(out);
  fly_db_close(db);
}

/* ---- bound pages ------------------------------------------------------ */

static void test_bound(void)
{
  enum { N = 1000, W = 2, P = 100 };
  fly_db *db = fresh_db();
  fly_err err = {0};
  fly_pagewriter *w = NULL;
  fly_pages *p = NULL;
  double row[W], *out = malloc(N * W * sizeof *out);
  int64_t *ids = malloc(N * sizeof *ids);
  fly_rc rc;
  int ok = 1;

  make_dataset(db, 1, 1, N, 3, 64, FLY_PREC_F64);
  fly_db_begin(db, &err);
  sql(db, "INSERT INTO bound_set(id, dataset_id, model, model_opts, tuning, status,"
          " n_params, width, page_rows) VALUES(4, 1, 'logistic', '', 'map',"
          " 'building', 2, 2, 100)");
  rc = fly_pagewriter_open(db, FLY_TABLE_BOUND, 4, W, P, FLY_PREC_F32, &w, &err);
  TAP_OK(rc == FLY_OK, "bound page writer opens");
  for(int64_t r = 0; r < N && ok; r++){
    for(size_t c = 0; c < W; c++) row[c] = val(0, r, c);
    ok = fly_pagewriter_add(w, row, &err) == FLY_OK;
  }
  ok = ok && fly_pagewriter_finish(w, &err) == FLY_OK;
  TAP_OK(ok && fly_pagewriter_rows(w) == N && fly_pagewriter_pages(w) == 10
         && fly_pagewriter_raw_bytes(w) == N * W * 4,
         "1000 bound rows in 10 f32 pages (%s)", ok ? "ok" : err.msg);
  rc = fly_pagewriter_add(w, row, &err);
  TAP_OK(rc == FLY_MISUSE, "add after finish: FLY_MISUSE (%s)", err.msg);
  fly_pagewriter_free(w);
  sql(db, "UPDATE bound_set SET n_pages = 10, status = 'ready' WHERE id = 4");
  fly_db_commit(db, &err);

  rc = fly_pages_open(db, FLY_TABLE_BOUND, 4, 1 << 20, &p, &err);
  TAP_OK(rc == FLY_OK, "open bound set 4 (%s)", rc ? err.msg : "ok");
  if( rc == FLY_OK ){
    const fly_pages_info *in = fly_pages_info_of(p);
    TAP_OK(in->n_rows == N && in->width == W && in->prec == 4 && in->n_pages == 10,
           "bound set info: f32, n_rows from the data set");
    uint64_t s = 5;
    for(size_t i = 0; i < 500; i++) ids[i] = (int64_t)(mix(s++) % N);
    rc = fly_pages_read_rows(p, ids, 500, out, &err);
    TAP_OK(rc == FLY_OK && rows_equal(out, ids, 500, W, 0, FLY_PREC_F32),
           "bound rows read back as (double)(float)");
    fly_pages_close(p);
    p = NULL;
  }
  flip_byte(db, "bound_page", "bound_set_id", 4, 2, 100);
  rc = fly_pages_open(db, FLY_TABLE_BOUND, 4, 1 << 20, &p, &err);
  if( rc == FLY_OK ){
    ids[0] = 250;
    rc = fly_pages_read_rows(p, ids, 1, out, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "bound set 4, page 2: checksum mismatch"),
           "corrupt bound page: FLY_CORRUPT (%s)", err.msg);
  }else TAP_OK(0, "reopen bound set");
  fly_pages_close(p);
  p = NULL;
  sql(db, "DELETE FROM bound_page WHERE bound_set_id = 4 AND page_no = 9");
  rc = fly_pages_open(db, FLY_TABLE_BOUND, 4, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "bound set 4: page 9 of 10 is missing"),
         "missing bound page: FLY_CORRUPT (%s)", err.msg);
  sql(db, "UPDATE bound_set SET n_pages = 0 WHERE id = 4");
  rc = fly_pages_open(db, FLY_TABLE_BOUND, 4, 0, &p, &err);
  TAP_OK(rc == FLY_CORRUPT, "unfinished bound set (n_pages 0): FLY_CORRUPT (%s)", err.msg);
  free(out);
  free(ids);
  fly_db_close(db);
}

/* ---- writer failures -------------------------------------------------- */

static void test_writer_errors(void)
{
  fly_db *db = fresh_db();
  fly_err err = {0};
  fly_pagewriter *w = NULL;
  double row[2] = { 1, 2 };
  fly_rc rc;

  rc = fly_pagewriter_open(db, FLY_TABLE_DATA, 1, 2, (int64_t)1 << 40,
                           FLY_PREC_F64, &w, &err);
  TAP_OK(rc == FLY_RANGE && w == NULL, "a page beyond the blob limit: FLY_RANGE (%s)",
         err.msg);
  rc = fly_pagewriter_open(db, FLY_TABLE_DATA, 1, (size_t)1 << 62, 1 << 20,
                           FLY_PREC_F64, &w, &err);
  TAP_OK(rc == FLY_RANGE && w == NULL, "page size overflow: FLY_RANGE");
  rc = fly_pagewriter_open(db, FLY_TABLE_DATA, 1, 2, 10, 2, &w, &err);
  TAP_OK(rc == FLY_MISUSE, "precision 2: FLY_MISUSE");

  /* no dataset row 1: the foreign key rejects the first page */
  rc = fly_pagewriter_open(db, FLY_TABLE_DATA, 1, 2, 2, FLY_PREC_F64, &w, &err);
  TAP_OK(rc == FLY_OK, "writer opens");
  fly_db_begin(db, &err);
  fly_pagewriter_add(w, row, &err);
  rc = fly_pagewriter_add(w, row, &err);
  TAP_OK(rc == FLY_SQL && strstr(err.msg, "page 0 of data set 1"),
         "page of an unknown data set: FLY_SQL (%s)", err.msg);
  rc = fly_pagewriter_add(w, row, &err);
  TAP_OK(rc == FLY_MISUSE, "writer refuses work after a failure");
  fly_db_rollback(db);
  fly_pagewriter_free(w);
  fly_pagewriter_free(NULL);
  fly_pages_close(NULL);
  fly_db_close(db);
}

int main(void)
{
  snprintf(path, sizeof path, "/tmp/flydb_test_pages_%ld.db", (long)getpid());
  test_write_read();
  test_many_pages();
  test_lru();
  test_read_past();
  test_hold();
  test_open_like();
  test_corruption();
  test_bound();
  test_writer_errors();
  unlink(path);
  return tap_done();
}
