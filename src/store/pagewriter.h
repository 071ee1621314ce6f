/*
 * pagewriter.h -- appending rows to a paged table (data pages at ingest,
 * bound pages at tuning).
 *
 * Rows are buffered into one page of page_rows rows; a full page is packed
 * to the stored precision, LZ4-compressed (raw if that does not shrink it),
 * checksummed and INSERTed.  The caller owns the transaction: the writer
 * never begins or commits.  Memory: one page of doubles plus its encoded
 * form, whatever the number of rows.
 */
#ifndef FLY_PAGEWRITER_H
#define FLY_PAGEWRITER_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "store/pages.h"
#include "util/err.h"

typedef struct fly_pagewriter fly_pagewriter;

/* Start writing pages of `owner` into `table`.  prec is FLY_PREC_F64 or
 * FLY_PREC_F32.  page_rows >= 1.  *pw NULL on failure. */
fly_rc fly_pagewriter_open(fly_db *db, fly_table table, int64_t owner,
                           size_t width, int64_t page_rows, int prec,
                           fly_pagewriter **pw, fly_err *err);

/* Append one row of width values.  May write a page. */
fly_rc fly_pagewriter_add(fly_pagewriter *w, const double *row, fly_err *err);

/* A page encoded apart from the writer. */
typedef struct fly_page_blob {
  int         codec;    /* FLY_CODEC_RAW or FLY_CODEC_LZ4 */
  size_t      bytes;    /* payload bytes */
  int64_t     checksum; /* of the payload, as stored (signed) */
  const void *payload;  /* the payload: in dst, or (fly_pagewriter_encode_in)
                           the caller's rows */
} fly_page_blob;

/* The capacity fly_pagewriter_encode needs for dst, and for scratch (0
 * for f64: scratch may be NULL then). */
size_t fly_pagewriter_enc_bound(const fly_pagewriter *w);
size_t fly_pagewriter_scratch_bytes(const fly_pagewriter *w);

/* Encode a full page, rows[0..page_rows) of width values, into dst: the
 * payload fly_pagewriter_add would write for them, described by *b.
 * Touches only the caller's buffers and reads only w's settings, so it
 * may run on any thread, concurrently with anything but
 * fly_pagewriter_free. */
fly_rc fly_pagewriter_encode(const fly_pagewriter *w, const double *rows,
                             void *scratch, void *dst, fly_page_blob *b,
                             fly_err *err);

/* fly_pagewriter_encode without copying an f64 page that is stored raw:
 * b->payload is then rows itself, which the caller keeps unchanged until
 * the page is put. */
fly_rc fly_pagewriter_encode_in(const fly_pagewriter *w, const double *rows,
                                void *scratch, void *dst, fly_page_blob *b,
                                fly_err *err);

/* Insert a page from fly_pagewriter_encode(_in) (b->payload) as the next
 * full page (as if its rows were added).  FLY_MISUSE when rows are
 * buffered (the page would not start at a page boundary). */
fly_rc fly_pagewriter_put(fly_pagewriter *w, const fly_page_blob *b,
                          fly_err *err);

/* Write the last partial page (if any).  Totals are then final. */
fly_rc fly_pagewriter_finish(fly_pagewriter *w, fly_err *err);

/* Replace page page_no (already written) with rows[0..n_rows) of width
 * values, n_rows its row count: the page is packed, encoded and
 * checksummed again, stored_bytes adjusted.  For a fix-up pass inside the
 * same transaction (ingest re-codes the pages of a column that turned
 * categorical); allowed after finish.  FLY_RANGE if there is no such page
 * or it holds another number of rows. */
fly_rc fly_pagewriter_rewrite(fly_pagewriter *w, int64_t page_no,
                              const double *rows, size_t n_rows, fly_err *err);

/* Totals so far (after finish: of the whole table). */
int64_t fly_pagewriter_rows(const fly_pagewriter *w);
int64_t fly_pagewriter_page_rows(const fly_pagewriter *w); /* rows per full page */
int64_t fly_pagewriter_pages(const fly_pagewriter *w);
int64_t fly_pagewriter_raw_bytes(const fly_pagewriter *w);
int64_t fly_pagewriter_stored_bytes(const fly_pagewriter *w);

void   fly_pagewriter_free(fly_pagewriter *w);        /* NULL: no-op */

#endif
