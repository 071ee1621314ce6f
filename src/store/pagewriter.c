/*
 * pagewriter.c -- appending rows to a paged table, one page at a time.
 *
 * Rows are copied into a buffer of page_rows x width doubles.  When it is
 * full (or at finish, for the last partial page) the page is packed to the
 * stored precision, encoded (LZ4 or raw), checksummed and INSERTed with one
 * prepared statement, as page_no = pages written so far and first_row =
 * page_no * page_rows.  So pages are numbered 0.. without gaps and every
 * page but the last holds exactly page_rows rows -- the shape fly_pages
 * checks at open.
 *
 * The writer never begins or commits: the caller owns the transaction and
 * writes the dataset / bound_set row (n_pages, raw_bytes, stored_bytes)
 * from the totals.  After any failure the writer refuses further work
 * (FLY_MISUSE) so a half-written table is never silently extended; the
 * caller rolls back.
 *
 * Memory: the row buffer, an f32 staging buffer (f32 only) and one encoded
 * page, whatever the number of rows.  Cost per page: one pack pass, one LZ4
 * pass, one XXH3 pass, one INSERT.  The first three need nothing of the
 * writer but its settings, so fly_pagewriter_encode runs them on any
 * thread into the caller's buffers (a parallel ingest encodes its pages
 * where they were parsed) and fly_pagewriter_put does only the INSERT.
 */
#include "store/pagewriter.h"

#include <stdio.h>
#include <string.h>

#include "store/codec.h"
#include "util/mem.h"

struct fly_pagewriter {
  fly_db        *db;          /* borrowed */
  sqlite3_stmt  *ins;         /* INSERT INTO page / bound_page */
  fly_table      table;
  int64_t        owner;       /* dataset id or bound_set id */
  size_t         width;       /* values per row */
  int64_t        page_rows;   /* rows per full page */
  int            prec;        /* bytes per stored value */
  double        *buf;         /* page_rows*width values, n_buf rows used */
  unsigned char *packed;      /* f32 staging, page_rows*width*4 bytes */
  unsigned char *enc;         /* encoded page, enc_cap bytes */
  size_t         enc_cap;
  int64_t        n_buf;       /* rows buffered, < page_rows between calls */
  int64_t        n_rows, n_pages;            /* written + buffered rows; pages written */
  int64_t        raw_bytes, stored_bytes;    /* of pages written, bytes */
  int            failed;      /* a write failed: refuse further work */
  int            finished;
};

static const char *owner_word(fly_table t)
{
  return t == FLY_TABLE_DATA ? "data set" : "bound set";
}

fly_rc fly_pagewriter_open(fly_db *db, fly_table table, int64_t owner,
                           size_t width, int64_t page_rows, int prec,
                           fly_pagewriter **pw, fly_err *err)
{
  fly_pagewriter *w = NULL;
  fly_rc rc = FLY_OK;
  size_t n_vals, raw;
  int limit;

  *pw = NULL;
  if( table != FLY_TABLE_DATA && table != FLY_TABLE_BOUND )
    return fly_fail(err, FLY_MISUSE, "page writer: unknown table %d", (int)table);
  if( prec != FLY_PREC_F64 && prec != FLY_PREC_F32 )
    return fly_fail(err, FLY_MISUSE, "page writer for %s %lld: precision %d, "
                    "want 4 or 8", owner_word(table), (long long)owner, prec);
  if( width < 1 || page_rows < 1 )
    return fly_fail(err, FLY_MISUSE, "page writer for %s %lld: width %zu and "
                    "page_rows %lld must be >= 1", owner_word(table),
                    (long long)owner, width, (long long)page_rows);
  /* One page must fit a SQLite blob (and LZ4's input limit). */
  limit = sqlite3_limit(fly_db_sqlite(db), SQLITE_LIMIT_LENGTH, -1);
  if( (uint64_t)page_rows > SIZE_MAX / width
      || (n_vals = (size_t)page_rows * width) > SIZE_MAX / sizeof(double)
      || (raw = n_vals * (size_t)prec) > (size_t)limit
      || fly_codec_bound(raw) > (size_t)limit )
    return fly_fail(err, FLY_RANGE, "page writer for %s %lld: a page of %lld "
                    "rows x %zu values x %d bytes exceeds the SQLite blob limit "
                    "of %d bytes; use fewer rows a page", owner_word(table),
                    (long long)owner, (long long)page_rows, width, prec, limit);

  w = fly_alloc_array(1, sizeof *w);
  if( !w ) return fly_fail(err, FLY_NOMEM, "page writer for %s %lld",
                           owner_word(table), (long long)owner);
  w->db = db;
  w->table = table;
  w->owner = owner;
  w->width = width;
  w->page_rows = page_rows;
  w->prec = prec;
  w->enc_cap = fly_codec_bound(raw);
  w->buf = fly_alloc_array(n_vals, sizeof(double));
  w->enc = fly_alloc_array(w->enc_cap, 1);
  if( prec == FLY_PREC_F32 ) w->packed = fly_alloc_array(raw, 1);
  if( !w->buf || !w->enc || (prec == FLY_PREC_F32 && !w->packed) ){
    rc = fly_fail(err, FLY_NOMEM, "page writer for %s %lld: buffers for a "
                  "page of %zu values", owner_word(table), (long long)owner,
                  n_vals);
    goto done;
  }
  rc = fly_db_prepare(db, table == FLY_TABLE_DATA
    ? "INSERT INTO page(dataset_id, page_no, first_row, n_rows, codec,"
      " raw_bytes, checksum, payload) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)"
    : "INSERT INTO bound_page(bound_set_id, page_no, first_row, n_rows, codec,"
      " raw_bytes, checksum, payload) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
    &w->ins, err);

done:
  if( rc ){
    fly_pagewriter_free(w);
    return rc;
  }
  *pw = w;
  return FLY_OK;
}

/* Pack and encode n_vals values of rows into dst (w->enc_cap bytes; f32:
 * packed through scratch, n_vals * 4 bytes): b's codec, bytes, payload
 * and checksum as stored (signed).  in: an f64 page stored raw stays in
 * rows (b->payload == rows).  Reads only w's fixed settings. */
static fly_rc encode(const fly_pagewriter *w, const double *rows,
                     size_t n_vals, void *scratch, void *dst, int in,
                     fly_page_blob *b, fly_err *err)
{
  size_t raw = n_vals * (size_t)w->prec;
  const void *src = rows;
  uint64_t sum;
  fly_rc rc;
  if( w->prec == FLY_PREC_F32 ){
    fly_codec_pack(rows, n_vals, FLY_PREC_F32, scratch);
    src = scratch;
    in = 0;                         /* scratch is the next page's */
  }
  b->payload = dst;
  rc = in ? fly_codec_encode_in(src, raw, dst, w->enc_cap, &b->codec,
                                &b->bytes, &b->payload, err)
          : fly_codec_encode(src, raw, dst, w->enc_cap, &b->codec, &b->bytes,
                             err);
  if( rc ) return rc;
  sum = fly_codec_checksum(b->payload, b->bytes);
  memcpy(&b->checksum, &sum, sizeof b->checksum);  /* stored as signed 64-bit */
  return FLY_OK;
}

/* Insert payload (b) as page n_pages of n_rows rows. */
static fly_rc insert(fly_pagewriter *w, int64_t n_rows, const fly_page_blob *b,
                     fly_err *err)
{
  size_t raw = (size_t)n_rows * w->width * (size_t)w->prec;
  int64_t page_no = w->n_pages;
  sqlite3_stmt *st = w->ins;
  fly_rc rc = FLY_OK;

  sqlite3_bind_int64(st, 1, w->owner);
  sqlite3_bind_int64(st, 2, page_no);
  sqlite3_bind_int64(st, 3, page_no * w->page_rows);
  sqlite3_bind_int64(st, 4, n_rows);
  sqlite3_bind_int(st, 5, b->codec);
  sqlite3_bind_int64(st, 6, (int64_t)raw);
  sqlite3_bind_int64(st, 7, b->checksum);
  sqlite3_bind_blob(st, 8, b->payload, (int)b->bytes, SQLITE_STATIC);
  if( sqlite3_step(st) != SQLITE_DONE ){
    char what[96];
    snprintf(what, sizeof what, "writing page %lld of %s %lld",
             (long long)page_no, owner_word(w->table), (long long)w->owner);
    rc = fly_db_fail(w->db, err, what);
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if( rc ){
    w->failed = 1;
    return rc;
  }
  w->n_pages++;
  w->raw_bytes += (int64_t)raw;
  w->stored_bytes += (int64_t)b->bytes;
  return FLY_OK;
}

/* Encode and insert the n_buf buffered rows as page n_pages. */
static fly_rc flush(fly_pagewriter *w, fly_err *err)
{
  fly_page_blob b;
  fly_rc rc = encode(w, w->buf, (size_t)w->n_buf * w->width, w->packed,
                     w->enc, 1, &b, err);
  if( rc == FLY_OK ) rc = insert(w, w->n_buf, &b, err);
  if( rc ){
    w->failed = 1;
    return rc;
  }
  w->n_buf = 0;
  return FLY_OK;
}

static fly_rc refuse(const fly_pagewriter *w, fly_err *err)
{
  return fly_fail(err, FLY_MISUSE, "page writer for %s %lld: %s",
                  owner_word(w->table), (long long)w->owner,
                  w->failed ? "an earlier page write failed"
                            : "rows added after finish");
}

fly_rc fly_pagewriter_add(fly_pagewriter *w, const double *row, fly_err *err)
{
  if( w->failed || w->finished ) return refuse(w, err);
  memcpy(w->buf + (size_t)w->n_buf * w->width, row, w->width * sizeof *row);
  w->n_buf++;
  w->n_rows++;
  if( w->n_buf == w->page_rows ) return flush(w, err);
  return FLY_OK;
}

size_t fly_pagewriter_enc_bound(const fly_pagewriter *w) { return w->enc_cap; }

size_t fly_pagewriter_scratch_bytes(const fly_pagewriter *w)
{
  return w->prec == FLY_PREC_F32
       ? (size_t)w->page_rows * w->width * (size_t)w->prec : 0;
}

fly_rc fly_pagewriter_encode(const fly_pagewriter *w, const double *rows,
                             void *scratch, void *dst, fly_page_blob *b,
                             fly_err *err)
{
  return encode(w, rows, (size_t)w->page_rows * w->width, scratch, dst, 0, b,
                err);
}

fly_rc fly_pagewriter_encode_in(const fly_pagewriter *w, const double *rows,
                                void *scratch, void *dst, fly_page_blob *b,
                                fly_err *err)
{
  return encode(w, rows, (size_t)w->page_rows * w->width, scratch, dst, 1, b,
                err);
}

fly_rc fly_pagewriter_put(fly_pagewriter *w, const fly_page_blob *b,
                          fly_err *err)
{
  if( w->failed || w->finished ) return refuse(w, err);
  if( w->n_buf > 0 )
    return fly_fail(err, FLY_MISUSE, "page writer for %s %lld: an encoded "
                    "page after %lld buffered rows", owner_word(w->table),
                    (long long)w->owner, (long long)w->n_buf);
  fly_rc rc = insert(w, w->page_rows, b, err);
  if( rc == FLY_OK ) w->n_rows += w->page_rows;
  return rc;
}

fly_rc fly_pagewriter_finish(fly_pagewriter *w, fly_err *err)
{
  if( w->failed ) return refuse(w, err);
  if( w->finished ) return FLY_OK;
  if( w->n_buf > 0 ){
    fly_rc rc = flush(w, err);
    if( rc ) return rc;
  }
  w->finished = 1;
  return FLY_OK;
}

fly_rc fly_pagewriter_rewrite(fly_pagewriter *w, int64_t page_no,
                              const double *rows, size_t n_rows, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  size_t n_vals = n_rows * w->width;
  fly_page_blob b;
  int s;
  int64_t old = 0;
  fly_rc rc;

  if( w->failed ) return refuse(w, err);
  if( page_no < 0 || page_no >= w->n_pages || n_rows == 0
      || (int64_t)n_rows > w->page_rows )
    return fly_fail(err, FLY_RANGE, "rewriting page %lld of %s %lld: %zu rows, "
                    "%lld pages written", (long long)page_no,
                    owner_word(w->table), (long long)w->owner, n_rows,
                    (long long)w->n_pages);
  rc = encode(w, rows, n_vals, w->packed, w->enc, 1, &b, err);
  if( rc ) goto done;
  /* The old payload's size, then the new payload. */
  rc = fly_db_prepare(w->db, w->table == FLY_TABLE_DATA
    ? "SELECT length(payload) FROM page WHERE dataset_id=?1 AND page_no=?2"
      " AND n_rows=?3"
    : "SELECT length(payload) FROM bound_page WHERE bound_set_id=?1 AND"
      " page_no=?2 AND n_rows=?3", &st, err);
  if( rc ) goto done;
  sqlite3_bind_int64(st, 1, w->owner);
  sqlite3_bind_int64(st, 2, page_no);
  sqlite3_bind_int64(st, 3, (int64_t)n_rows);
  s = sqlite3_step(st);
  if( s == SQLITE_ROW ) old = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  st = NULL;
  if( s != SQLITE_ROW ){
    rc = s == SQLITE_DONE
       ? fly_fail(err, FLY_RANGE, "rewriting page %lld of %s %lld: no such "
                  "page of %zu rows", (long long)page_no, owner_word(w->table),
                  (long long)w->owner, n_rows)
       : fly_db_fail(w->db, err, "rewriting a page");
    goto done;
  }
  rc = fly_db_prepare(w->db, w->table == FLY_TABLE_DATA
    ? "UPDATE page SET codec=?3, checksum=?4, payload=?5 WHERE dataset_id=?1"
      " AND page_no=?2"
    : "UPDATE bound_page SET codec=?3, checksum=?4, payload=?5 WHERE"
      " bound_set_id=?1 AND page_no=?2", &st, err);
  if( rc ) goto done;
  sqlite3_bind_int64(st, 1, w->owner);
  sqlite3_bind_int64(st, 2, page_no);
  sqlite3_bind_int(st, 3, b.codec);
  sqlite3_bind_int64(st, 4, b.checksum);
  sqlite3_bind_blob(st, 5, b.payload, (int)b.bytes, SQLITE_STATIC);
  if( sqlite3_step(st) != SQLITE_DONE ){
    rc = fly_db_fail(w->db, err, "rewriting a page");
    goto done;
  }
  w->stored_bytes += (int64_t)b.bytes - old;
done:
  sqlite3_finalize(st);
  if( rc ) w->failed = 1;
  return rc;
}

int64_t fly_pagewriter_rows(const fly_pagewriter *w) { return w->n_rows; }
int64_t fly_pagewriter_page_rows(const fly_pagewriter *w) { return w->page_rows; }
int64_t fly_pagewriter_pages(const fly_pagewriter *w) { return w->n_pages; }
int64_t fly_pagewriter_raw_bytes(const fly_pagewriter *w) { return w->raw_bytes; }
int64_t fly_pagewriter_stored_bytes(const fly_pagewriter *w)
{
  return w->stored_bytes;
}

void fly_pagewriter_free(fly_pagewriter *w)
{
  if( !w ) return;
  sqlite3_finalize(w->ins);
  fly_free(w->buf);
  fly_free(w->packed);
  fly_free(w->enc);
  fly_free(w);
}
