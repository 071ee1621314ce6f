/*
 * pages.h -- reading a paged row table: sequential page scans and random
 * batches of rows, with checksum verification and an LRU cache of decoded
 * pages.
 *
 * A paged table is either a data set's rows (table `page`, owner = dataset
 * id) or a bound set's per-row bound parameters (table `bound_page`, owner =
 * bound_set id).  Both have the same columns (see schema/001_init.sql):
 * id INTEGER PRIMARY KEY, owner, page_no, first_row, n_rows, codec,
 * raw_bytes, checksum, payload.  Every page but the last holds exactly
 * page_rows rows, so row r lives in page r / page_rows.
 *
 * Random reads use incremental BLOB I/O (sqlite3_blob_open once, then
 * sqlite3_blob_reopen per page) with memory-mapped I/O on; a batch of row
 * ids is sorted into page order so each page is fetched and decoded once.
 * Every page read is verified (checksum, codec, size); a bad page gives
 * FLY_CORRUPT naming the table, owner and page number.
 *
 * A handle belongs to one thread.  Workspaces grow only when a larger batch
 * than ever before is requested, so the sampler's steady state allocates
 * nothing.
 */
#ifndef FLY_PAGES_H
#define FLY_PAGES_H

#include <stddef.h>
#include <stdint.h>

#include "store/check.h"
#include "store/db.h"
#include "util/err.h"
#include "util/prof.h"

typedef struct fly_pages fly_pages;

typedef enum { FLY_TABLE_DATA = 0, FLY_TABLE_BOUND = 1 } fly_table;

typedef struct fly_pages_info {
  int64_t n_rows;      /* rows in the table */
  size_t  width;       /* values per row */
  int64_t page_rows;   /* rows per page (last page may hold fewer) */
  int64_t n_pages;
  int     prec;        /* FLY_PREC_F64 or FLY_PREC_F32: bytes per stored value */
} fly_pages_info;

/* Open the paged table of `owner` (dataset id or bound_set id).  Shape comes
 * from the dataset / bound_set row.  cache_bytes bounds the decoded-page
 * cache (0: a minimal cache of 2 pages).  *pp NULL on failure. */
fly_rc fly_pages_open(fly_db *db, fly_table table, int64_t owner,
                      size_t cache_bytes, fly_pages **pp, fly_err *err);
void   fly_pages_close(fly_pages *p);                   /* NULL: no-op */

/* fly_pages_open of the table that `like` has open (FLY_MISUSE if it has
 * another), on db (another connection to the same file, for another
 * thread; FLY_MISUSE if another file), with like's shape and page map
 * copied instead of read: the threads and chains of one command open one
 * data set and one bound set many times, and each map is a query over
 * every page.  Valid because a complete data set's and a ready bound
 * set's pages never change; every page read still verifies its checksum,
 * so a table replaced meanwhile fails FLY_CORRUPT, as with a handle opened
 * before the change.  Only like's shape and map are read, which nothing
 * changes after its open, so threads may copy one handle at once, even
 * while its own thread reads through it; like must stay open during the
 * call only.  like NULL: fly_pages_open (the map is read). */
fly_rc fly_pages_open_like(fly_db *db, fly_table table, int64_t owner, const fly_pages *like,
                           size_t cache_bytes, fly_pages **pp, fly_err *err);

const fly_pages_info *fly_pages_info_of(const fly_pages *p);

/* Decode page page_no into out (page_rows*width doubles), bypassing the
 * cache (for full sequential scans that should not evict it).  *n_rows is
 * the page's row count. */
fly_rc fly_pages_read_page(fly_pages *p, int64_t page_no, double *out,
                           size_t *n_rows, fly_err *err);

/* Page page_no through the cache.  *rows stays valid until the next call on
 * this handle. */
fly_rc fly_pages_get(fly_pages *p, int64_t page_no, const double **rows,
                     size_t *n_rows, fly_err *err);

/* Whether row `row`'s page is in the decoded cache now (a read of it would
 * cost a memcpy, not a fetch).  O(1); 0 for a row out of range. */
int    fly_pages_row_cached(const fly_pages *p, int64_t row);

/* Start loading what fly_pages_row_cached(p, row) reads (a page map entry:
 * a cache miss at random rows of a large store), so a loop over many rows
 * can overlap those misses.  A hint only; row must be in range. */
void   fly_pages_prefetch_row(const fly_pages *p, int64_t row);

/* Copy rows ids[0..n) (any order, repeats allowed, each < n_rows) into
 * out[i*width ...] in the caller's order.  Pages are visited in page order,
 * each once per call, through the cache; once the cache is full, a raw page
 * not asked for lately is read past it (only its requested rows decoded,
 * the page remembered, and cached on its next miss).  A batch of 16 rows
 * or more first prefetches the rows it will copy from the cache.
 * FLY_RANGE for an id out of range. */
fly_rc fly_pages_read_rows(fly_pages *p, const int64_t *ids, size_t n,
                           double *out, fly_err *err);

/* Calls normally end their read transaction (they close the BLOB handle
 * that pins it).  fly_pages_hold(p, 1) keeps the handle open between calls
 * instead, until fly_pages_release, fly_pages_hold(p, 0) or close: a loop
 * of small reads then skips opening a handle and taking and dropping
 * SQLite's shared lock (two fcntl calls) at every call.  A held handle reads
 * one snapshot, and a WAL checkpoint cannot pass it, so a holder releases
 * at least whenever a writer on another connection commits. */
void fly_pages_hold(fly_pages *p, int on);
void fly_pages_release(fly_pages *p);

/* Counters since open: pages fetched from SQLite, pages served by the cache,
 * rows copied by read_rows. */
typedef struct fly_pages_stats {
  int64_t page_reads, cache_hits, rows_read;
  double  decode_seconds;   /* time spent in fetch + decode */
} fly_pages_stats;
void fly_pages_stats_get(const fly_pages *p, fly_pages_stats *s);

/* Charge page fetches (BLOB read, checksum, decode) to FLY_PROF_DECODE of
 * prof (borrowed: valid while the handle is used; NULL: none). */
void fly_pages_set_prof(fly_pages *p, fly_prof *prof);

/* ---- integrity check ------------------------------------------------ */

/* Called by fly_pages_check with every page that verified and decoded, in
 * page order: rows holds n_rows rows of the shape's width. */
typedef void fly_pages_check_fn(void *u, int64_t page_no, const double *rows,
                                size_t n_rows);

typedef struct fly_pages_scan {
  int      bad;          /* some problem was reported */
  int      layout_bad;   /* pages missing or unexpected, or wrong row ranges */
  uint64_t n_rows;       /* sum of the pages' n_rows (wraps if corrupt) */
  uint64_t bytes;        /* sum of payload sizes */
} fly_pages_scan;

/* Verify every page of owner's table against shape (n_rows, width,
 * page_rows, n_pages, prec as they should be), reporting each problem
 * through ck and going on: the map (pages 0..n_pages-1, first_row, n_rows
 * and raw_bytes per page, the codec, as fly_pages_open checks them), every
 * payload's checksum and decode.  Unlike fly_pages_open, one missing page
 * does not hide a bad checksum in another.  fn (may be NULL) sees each
 * sound page.  Memory: one page.  The caller holds the read transaction. */
void fly_pages_check(fly_db *db, fly_table table, int64_t owner,
                     const fly_pages_info *shape, fly_pages_check_fn *fn,
                     void *u, fly_checker *ck, fly_pages_scan *r);

#endif
