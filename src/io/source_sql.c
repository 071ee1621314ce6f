/*
 * source_sql.c -- the result of an SQL query on another database as CSV text.
 *
 * Concept.  The database is opened read-only and the query prepared at
 * open, so a wrong path or query fails before any text is read; the header
 * is the result's column names.  Each read steps the statement and writes
 * rows into a fly_srcbuf until the caller's buffer is full: INTEGER as is,
 * REAL with %.17g (bit-identical when read back), TEXT quoted when needed,
 * NULL an empty cell; a BLOB has no text form and stops the stream.
 *
 * Invariants.  The query is one read-only statement (sqlite3_stmt_readonly),
 * so ingesting from a database never changes it.  An error at any row names
 * the database, the query and SQLite's message, and is FLY_SQL.
 *
 * Cost.  One sqlite3_step per row; memory one row of text.  The read
 * transaction lasts from the first step to the end of the result.
 */
#include "io/source_int.h"

#include <sqlite3.h>
#include <string.h>

#include "util/mem.h"

typedef struct sqlsrc {
  sqlite3      *db;
  sqlite3_stmt *st;
  fly_srcbuf    buf;
  int           n_col;
  long long     row;      /* rows stepped */
  int           done;
} sqlsrc;

static fly_rc sql_fail(fly_source *s, const char *msg, fly_err *err)
{
  return fly_fail(err, FLY_SQL, "%s: query '%s': %s", s->name, s->query, msg);
}

static fly_rc sql_open(fly_source *s, fly_err *err)
{
  sqlsrc *q = fly_alloc_array(1, sizeof *q);
  const char *tail = NULL;
  int r;

  if( !q ) return fly_fail(err, FLY_NOMEM, "%s: query", s->name);
  s->impl = q;
  r = sqlite3_open_v2(s->path, &q->db, SQLITE_OPEN_READONLY, NULL);
  if( r != SQLITE_OK )
    return fly_fail(err, FLY_SQL, "cannot open database %s: %s", s->name,
                    q->db ? sqlite3_errmsg(q->db) : sqlite3_errstr(r));
  sqlite3_busy_timeout(q->db, 5000);
  r = sqlite3_prepare_v2(q->db, s->query, -1, &q->st, &tail);
  if( r != SQLITE_OK ) return sql_fail(s, sqlite3_errmsg(q->db), err);
  if( !q->st ) return sql_fail(s, "no statement", err);
  if( tail && tail[strspn(tail, " \t\r\n;")] )
    return sql_fail(s, "more than one statement", err);
  if( !sqlite3_stmt_readonly(q->st) )
    return sql_fail(s, "not a read-only statement", err);
  q->n_col = sqlite3_column_count(q->st);
  if( q->n_col == 0 ) return sql_fail(s, "returns no columns", err);
  for(int j = 0; j < q->n_col; j++){
    const char *name = sqlite3_column_name(q->st, j);
    if( (j > 0 && fly_srcbuf_add(&q->buf, ",", 1)) ||
        fly_srcbuf_text(&q->buf, name ? name : "") )
      return fly_fail(err, FLY_NOMEM, "%s: query header", s->name);
  }
  if( fly_srcbuf_add(&q->buf, "\n", 1) )
    return fly_fail(err, FLY_NOMEM, "%s: query header", s->name);
  return FLY_OK;
}

/* Step one row into q->buf; FLY_DONE at the end of the result. */
static fly_rc sql_row(fly_source *s, sqlsrc *q, fly_err *err)
{
  int r = sqlite3_step(q->st), bad = 0;
  if( r == SQLITE_DONE ) return FLY_DONE;
  if( r != SQLITE_ROW ) return sql_fail(s, sqlite3_errmsg(q->db), err);
  q->row++;
  for(int j = 0; j < q->n_col && !bad; j++){
    if( j > 0 ) bad = fly_srcbuf_add(&q->buf, ",", 1);
    switch( sqlite3_column_type(q->st, j) ){
    case SQLITE_INTEGER: {
      char t[24];
      int n = snprintf(t, sizeof t, "%lld", (long long)sqlite3_column_int64(q->st, j));
      bad = bad || fly_srcbuf_add(&q->buf, t, (size_t)n);
      break;
    }
    case SQLITE_FLOAT:
      bad = bad || fly_srcbuf_num(&q->buf, sqlite3_column_double(q->st, j));
      break;
    case SQLITE_TEXT:
      bad = bad || fly_srcbuf_text(&q->buf, (const char *)sqlite3_column_text(q->st, j));
      break;
    case SQLITE_NULL:
      break;
    default:
      return fly_fail(err, FLY_SQL, "%s: query '%s': row %lld, column '%s' "
                      "is a BLOB, which has no CSV form", s->name, s->query,
                      q->row, sqlite3_column_name(q->st, j));
    }
  }
  if( bad || fly_srcbuf_add(&q->buf, "\n", 1) )
    return fly_fail(err, FLY_NOMEM, "%s: query row %lld", s->name, q->row);
  return FLY_OK;
}

static fly_rc sql_read(fly_source *s, char *buf, size_t cap, size_t *got,
                       fly_err *err)
{
  sqlsrc *q = s->impl;
  size_t n = 0;
  fly_rc rc;

  while( n < cap ){
    if( q->buf.pos < q->buf.len ){
      n += fly_srcbuf_take(&q->buf, buf + n, cap - n);
      continue;
    }
    if( q->done ) break;
    rc = sql_row(s, q, err);
    if( rc == FLY_DONE ){ q->done = 1; continue; }
    if( rc ){ *got = 0; return rc; }
  }
  *got = n;
  return FLY_OK;
}

static void sql_close(fly_source *s)
{
  sqlsrc *q = s->impl;
  if( !q ) return;
  sqlite3_finalize(q->st);
  sqlite3_close(q->db);
  fly_srcbuf_free(&q->buf);
  fly_free(q);
  s->impl = NULL;
}

const fly_source_kind fly_source_sql = { "sql", sql_open, sql_read, sql_close };
