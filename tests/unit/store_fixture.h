/*
 * store_fixture.h -- unit tests' way to put rows into a store as ingest
 * would: a `dataset` row and its f64 pages, in one transaction.
 *
 * Rows are X[i*width ...]: features (intercept first when there is one),
 * then the target last.  Include after tap.h.
 */
#ifndef FLY_STORE_FIXTURE_H
#define FLY_STORE_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "store/codec.h"
#include "store/db.h"
#include "store/pagewriter.h"

/* Store n rows of width values as data set `name` in pages of page_rows
 * rows; *ds gets its id.  1 on success; on failure a TAP diagnostic names
 * what failed and nothing is left behind. */
static inline int fx_store_rows(fly_db *db, const char *name, const double *X,
                                size_t n, size_t width, int64_t page_rows,
                                int64_t *ds)
{
  fly_err err = {0};
  fly_pagewriter *w = NULL;
  sqlite3_stmt *st = NULL;
  int64_t n_pages = ((int64_t)n + page_rows - 1) / page_rows;
  int ok = 0;

  if( fly_db_begin(db, &err) ) goto done;
  if( sqlite3_prepare_v2(fly_db_sqlite(db),
        "INSERT INTO dataset(name, source, n_rows, width, n_features,"
        " has_intercept, target_name, page_rows, n_pages, prec, raw_bytes,"
        " stored_bytes) VALUES (?1, 'synthetic', ?2, ?3, ?4, 1, 'y', ?5, ?6,"
        " 8, ?7, 0)", -1, &st, NULL) != SQLITE_OK ) goto done;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, (int64_t)n);
  sqlite3_bind_int64(st, 3, (int64_t)width);
  sqlite3_bind_int64(st, 4, (int64_t)width - 1);
  sqlite3_bind_int64(st, 5, page_rows);
  sqlite3_bind_int64(st, 6, n_pages);
  sqlite3_bind_int64(st, 7, (int64_t)(n * width * 8));
  if( sqlite3_step(st) != SQLITE_DONE ) goto done;
  *ds = sqlite3_last_insert_rowid(fly_db_sqlite(db));
  if( fly_pagewriter_open(db, FLY_TABLE_DATA, *ds, width, page_rows,
                          FLY_PREC_F64, &w, &err) ) goto done;
  for(size_t i = 0; i < n; i++)
    if( fly_pagewriter_add(w, X + i * width, &err) ) goto done;
  if( fly_pagewriter_finish(w, &err) ) goto done;
  if( fly_pagewriter_pages(w) != n_pages ) goto done;
  ok = fly_db_commit(db, &err) == FLY_OK;
done:
  if( !ok ){
    TAP_DIAG("storing data set %s: %s / %s", name, err.msg,
             sqlite3_errmsg(fly_db_sqlite(db)));
    fly_db_rollback(db);
  }
  sqlite3_finalize(st);
  fly_pagewriter_free(w);
  return ok;
}

/* Create a fresh database /tmp/flydb_test_<tag>_<pid>.db for a test: its
 * path goes into path (n bytes), any old file of that name is removed. */
static inline fly_rc fx_create_db(const char *tag, char *path, size_t n, fly_db **db,
                                  fly_err *err)
{
  snprintf(path, n, "/tmp/flydb_test_%s_%d.db", tag, (int)getpid());
  unlink(path);
  return fly_db_open(path, FLY_DB_CREATE, db, err);
}

/* Remove a test's database file and its WAL companions. */
static inline void fx_unlink_db(const char *path)
{
  char p2[300];
  unlink(path);
  snprintf(p2, sizeof p2, "%s-wal", path);
  unlink(p2);
  snprintf(p2, sizeof p2, "%s-shm", path);
  unlink(p2);
}

#endif
