/*
 * db.h -- the SQLite handle: open, schema check and migration, transactions.
 *
 * A flydb file is a SQLite database whose application_id is FLY_APP_ID and
 * whose user_version is the schema version (schema/NNN_*.sql).  Opening a
 * file that is not SQLite, or SQLite but not flydb, or flydb of a newer
 * version, is a clear error (FLY_CORRUPT / FLY_MISUSE), never a misuse.
 * A handle is used by one thread at a time; each chain thread opens its own.
 */
#ifndef FLY_DB_H
#define FLY_DB_H

#include <sqlite3.h>
#include <stdint.h>

#include "util/err.h"

#define FLY_APP_ID 0x466c7944  /* "FlyD" */

/* SQLite page size of a new file.  A random row read fetches one SQLite
 * page, so pages are small; 16 KiB still holds 16 rows of 127 f64 values
 * without overflow pages.  An existing file keeps the page size it was
 * made with (64 KiB for files from older flydb). */
#define FLY_DB_NEW_PAGE_BYTES 16384

typedef struct fly_db fly_db;

enum {
  FLY_DB_CREATE   = 1,  /* create the file (and schema) if it does not exist */
  FLY_DB_READONLY = 2,  /* open read-only; never migrates */
  FLY_DB_FAST     = 4,  /* journal_mode=OFF, synchronous=OFF: only for a
                           private temporary file that is renamed into place */
};

/* Open path.  Without FLY_DB_CREATE a missing file is FLY_IO ("no such
 * database"). An empty/new file gets the current schema.  An older schema is
 * migrated in one transaction.  *pdb NULL on failure. */
fly_rc fly_db_open(const char *path, int flags, fly_db **pdb, fly_err *err);
void   fly_db_close(fly_db *db);                      /* NULL: no-op */

sqlite3    *fly_db_sqlite(fly_db *db);                /* borrowed */
const char *fly_db_path(const fly_db *db);

/* Record a SQLite failure: "<what>: <sqlite message> (<db path>)". */
fly_rc fly_db_fail(fly_db *db, fly_err *err, const char *what);

/* The file's SQLite page size in bytes. */
fly_rc fly_db_page_bytes(fly_db *db, int64_t *bytes, fly_err *err);

/* Run one or more statements without results. */
fly_rc fly_db_exec(fly_db *db, const char *sql, fly_err *err);
/* Prepare one statement (FLY_SQL on failure, naming the statement). */
fly_rc fly_db_prepare(fly_db *db, const char *sql, sqlite3_stmt **st,
                      fly_err *err);

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK.  rollback never fails (errors ignored). */
fly_rc fly_db_begin(fly_db *db, fly_err *err);
fly_rc fly_db_commit(fly_db *db, fly_err *err);
void   fly_db_rollback(fly_db *db);

/* A read transaction around a scan, when none is open: outside one, every
 * page fetch takes and drops SQLite's read lock (system calls each time).
 * Returns whether it began one; pass that to fly_db_read_end, which
 * commits it.
 * Both use statements prepared at open, so they allocate nothing. */
int    fly_db_read_begin(fly_db *db);
void   fly_db_read_end(fly_db *db, int began);

/* Switch to WAL (so readers can query while a run writes); no-op if FAST. */
fly_rc fly_db_wal(fly_db *db, fly_err *err);

/* ---- integrity check ------------------------------------------------ */

/* Start a check: PRAGMA query_only on (nothing is ever written through
 * db afterwards) and a read transaction, so every checker sees one
 * snapshot (a run committing meanwhile cannot make its draws look ahead of
 * their checkpoint).  fly_db_check_end ends the transaction. */
fly_rc fly_db_check_begin(fly_db *db, fly_err *err);
void   fly_db_check_end(fly_db *db);


#endif
