/*
 * db.c -- opening a flydb file: identity checks, schema creation and
 * migration, transactions.
 *
 * A file is accepted when it is SQLite and either empty (then it gets the
 * schema) or carries application_id FLY_APP_ID with a user_version no newer
 * than this binary's.  Any other SQLite file is refused, so flydb never
 * writes tables into somebody else's database.  An older version is brought
 * up to date in one transaction: migrations are all-or-nothing.
 *
 * Connection settings: foreign keys on, memory-mapped I/O for files that
 * fit in a quarter of RAM (random row reads then go through the OS page
 * cache without copies; larger files are read with read()), a busy timeout so a
 * reader and a writer in different processes wait briefly instead of
 * failing.  WAL is switched on by fly_db_wal() when a run starts writing.
 */
#include "store/db.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/schema.h"
#include "util/mem.h"

struct fly_db {
  sqlite3      *h;
  char         *path;
  int           flags;
  sqlite3_stmt *st_begin, *st_commit;  /* read transactions, prepared once */
};

/* SQLite's message for the last error on h.  An I/O error whose cause is a
 * full file system (e.g. growing the WAL index, which SQLite reports as a
 * plain "disk I/O error") is named as such, with the system's words. */
static const char *errmsg(sqlite3 *h, char *buf, size_t n)
{
  if( !h ) return "no connection";
  int se = sqlite3_system_errno(h);
  if( (sqlite3_extended_errcode(h) & 0xff) == SQLITE_IOERR &&
      (se == ENOSPC || se == EDQUOT) ){
    snprintf(buf, n, "disk full: %s (%s)", strerror(se), sqlite3_errmsg(h));
    return buf;
  }
  return sqlite3_errmsg(h);
}

fly_rc fly_db_fail(fly_db *db, fly_err *err, const char *what)
{
  char buf[160];
  return fly_fail(err, FLY_SQL, "%s: %s (%s)", what,
                  errmsg(db ? db->h : NULL, buf, sizeof buf),
                  db && db->path ? db->path : "?");
}

fly_rc fly_db_exec(fly_db *db, const char *sql, fly_err *err)
{
  if( sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK ){
    char buf[160];
    return fly_fail(err, FLY_SQL, "%s (%s)", errmsg(db->h, buf, sizeof buf),
                    db->path);
  }
  return FLY_OK;
}

fly_rc fly_db_prepare(fly_db *db, const char *sql, sqlite3_stmt **st,
                      fly_err *err)
{
  *st = NULL;
  if( sqlite3_prepare_v2(db->h, sql, -1, st, NULL) != SQLITE_OK ){
    char buf[160];
    fly_rc rc = fly_fail(err, FLY_SQL, "preparing \"%.80s\": %s (%s)", sql,
                         errmsg(db->h, buf, sizeof buf), db->path);
    sqlite3_finalize(*st);
    *st = NULL;
    return rc;
  }
  return FLY_OK;
}

/* sql, failing with "what: <sqlite message> (path)": "database is locked"
 * alone does not tell a write lock held past the busy timeout from a busy
 * commit. */
static fly_rc exec_step(fly_db *db, const char *sql, const char *what, fly_err *err)
{
  if( sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK )
    return fly_db_fail(db, err, what);
  return FLY_OK;
}

fly_rc fly_db_begin(fly_db *db, fly_err *err)
{
  return exec_step(db, "BEGIN IMMEDIATE", "starting a write transaction", err);
}

fly_rc fly_db_commit(fly_db *db, fly_err *err)
{
  return exec_step(db, "COMMIT", "committing", err);
}

void fly_db_rollback(fly_db *db)
{
  if( db && db->h && !sqlite3_get_autocommit(db->h) )
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

sqlite3 *fly_db_sqlite(fly_db *db) { return db->h; }
const char *fly_db_path(const fly_db *db) { return db->path; }

/* One integer from a PRAGMA or query. */
static fly_rc query_int(fly_db *db, const char *sql, int64_t *out,
                        fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, sql, &st, err);
  if( rc ) return rc;
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    *out = sqlite3_column_int64(st, 0);
    rc = FLY_OK;
  }else if( s == SQLITE_NOTADB || s == SQLITE_CORRUPT ){
    rc = fly_fail(err, FLY_CORRUPT, "%s is not a flydb database (%s)",
                  db->path, sqlite3_errmsg(db->h));
  }else{
    rc = fly_db_fail(db, err, sql);
  }
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_db_page_bytes(fly_db *db, int64_t *bytes, fly_err *err)
{
  return query_int(db, "PRAGMA page_size", bytes, err);
}

/* Apply migrations from version `from` to the current one; from 0 (an
 * empty file), create the current schema directly (fly_schema_current):
 * the same objects, without the tables that later migrations drop, so the
 * file has no free pages and costs a fifth of the time. */
static fly_rc migrate(fly_db *db, int64_t from, fly_err *err)
{
  char sql[96];
  fly_rc rc = fly_db_begin(db, err);
  if( rc ) return rc;
  if( from == 0 ){
    if( (rc = fly_db_exec(db, fly_schema_current, err)) ){
      fly_err_prefix(err, "schema version %d", fly_schema_version);
      goto done;
    }
    from = fly_schema_version;
  }
  for(int v = (int)from + 1; v <= fly_schema_version; v++){
    const fly_migration *mg = &fly_migrations[v - 1];
    rc = fly_db_exec(db, mg->sql, err);
    if( rc ){
      fly_err_prefix(err, "schema %s", mg->file);
      goto done;
    }
  }
  snprintf(sql, sizeof sql, "PRAGMA application_id=%d; PRAGMA user_version=%d",
           FLY_APP_ID, fly_schema_version);
  rc = fly_db_exec(db, sql, err);
  if( rc == FLY_OK ) rc = fly_db_commit(db, err);
done:
  if( rc ) fly_db_rollback(db);
  return rc;
}

static fly_rc check_identity(fly_db *db, fly_err *err)
{
  int64_t app = 0, ver = 0, n_obj = 0;
  fly_rc rc;
  /* The first read of the header tells whether this is SQLite at all. */
  if( (rc = query_int(db, "PRAGMA application_id", &app, err)) ) return rc;
  if( (rc = query_int(db, "PRAGMA user_version", &ver, err)) ) return rc;
  if( (rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &n_obj, err)) )
    return rc;

  if( app == 0 && ver == 0 && n_obj == 0 ){
    if( db->flags & FLY_DB_READONLY )
      return fly_fail(err, FLY_MISUSE, "%s is empty: not a flydb database yet",
                      db->path);
    /* Data pages are sized by ingest to fit one SQLite page each (see
     * FLY_DB_NEW_PAGE_BYTES), so a random row costs one page read. */
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA page_size=%d", FLY_DB_NEW_PAGE_BYTES);
    fly_rc rc0 = fly_db_exec(db, sql, err);
    /* No free pages in a new file (migrate): a rolled-back transaction
     * does not restore the contents of free-list leaves it reused (SQLite
     * does not journal them), so a failed ingest then leaves the file
     * byte-identical. */
    if( rc0 == FLY_OK ) rc0 = migrate(db, 0, err);
    return rc0;
  }
  if( app != FLY_APP_ID )
    return fly_fail(err, FLY_MISUSE,
                    "%s is a SQLite database but not a flydb file "
                    "(application_id %lld, expected %d); refusing to touch it",
                    db->path, (long long)app, FLY_APP_ID);
  if( ver > fly_schema_version )
    return fly_fail(err, FLY_MISUSE,
                    "%s has flydb schema version %lld, newer than this "
                    "flydb (%d): upgrade flydb", db->path, (long long)ver,
                    fly_schema_version);
  if( ver < 1 )
    return fly_fail(err, FLY_CORRUPT, "%s has flydb schema version %lld",
                    db->path, (long long)ver);
  if( ver < fly_schema_version ){
    if( db->flags & FLY_DB_READONLY )
      return fly_fail(err, FLY_MISUSE,
                      "%s has schema version %lld; open it read-write once "
                      "to migrate it to %d", db->path, (long long)ver,
                      fly_schema_version);
    return migrate(db, ver, err);
  }
  return FLY_OK;
}

/* How much of the file SQLite may memory-map.  Mapped random reads beat
 * read() while the file is in the OS page cache, but lose once it is not:
 * out of core nearly every page is touched once, and a first-touch fault
 * costs more than a copy (docs/performance.md §8).  So a file is mapped
 * only if it fits in a quarter of physical memory.
 * FLYDB_MMAP=on|off overrides. */
static long long mmap_bytes(const char *path)
{
  const long long all = 1LL << 40;
  const char *e = getenv("FLYDB_MMAP");
  struct stat st;
  if( e && strcmp(e, "on") == 0 ) return all;
  if( e && strcmp(e, "off") == 0 ) return 0;
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  if( pages <= 0 || psz <= 0 || stat(path, &st) != 0 ) return all;
  return (double)st.st_size <= 0.25 * (double)pages * (double)psz ? all : 0;
}

/* SQLite's process-wide settings, before its first use.  Memory
 * statistics off: with them on, every allocation of every connection takes
 * one global mutex, which the threads of a run (each with its own
 * connection, reading pages) then queue on.  flydb reads none of those
 * statistics.  In a host that has already used SQLite the call is refused
 * (SQLITE_MISUSE) and SQLite keeps the host's settings. */
static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;

static void sqlite_setup(void)
{
  (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

fly_rc fly_db_open(const char *path, int flags, fly_db **pdb, fly_err *err)
{
  fly_db *db = NULL;
  fly_rc rc = FLY_OK;
  struct stat sb;
  int oflags;

  *pdb = NULL;
  pthread_once(&sqlite_once, sqlite_setup);
  if( stat(path, &sb) != 0 ){
    if( errno != ENOENT || !(flags & FLY_DB_CREATE) )
      return fly_fail(err, FLY_IO, "cannot open database %s: %s", path,
                      errno == ENOENT ? "no such file (run `flydb ingest` first)"
                                      : strerror(errno));
  }else if( S_ISDIR(sb.st_mode) ){
    return fly_fail(err, FLY_IO, "database %s is a directory", path);
  }

  db = fly_alloc_array(1, sizeof *db);
  if( !db ) return fly_fail(err, FLY_NOMEM, "opening %s", path);
  db->flags = flags;
  db->path = fly_strdup(path);
  if( !db->path ){ rc = fly_fail(err, FLY_NOMEM, "opening %s", path); goto done; }

  oflags = (flags & FLY_DB_READONLY) ? SQLITE_OPEN_READONLY
         : SQLITE_OPEN_READWRITE | ((flags & FLY_DB_CREATE) ? SQLITE_OPEN_CREATE : 0);
  if( sqlite3_open_v2(path, &db->h, oflags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ){
    rc = fly_db_fail(db, err, "cannot open database");
    goto done;
  }
  sqlite3_extended_result_codes(db->h, 1);
  sqlite3_busy_timeout(db->h, 10000);
  if( flags & FLY_DB_FAST ){
    /* a private file being built: no journal, and no mapping (writes only) */
    rc = fly_db_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                         "PRAGMA mmap_size=0", err);
  }else{
    rc = fly_db_exec(db, "PRAGMA synchronous=NORMAL", err);
  }
  if( rc == FLY_OK ){
    char pragma[96];
    snprintf(pragma, sizeof pragma, "PRAGMA foreign_keys=ON; PRAGMA mmap_size=%lld",
             (flags & FLY_DB_FAST) ? 0LL : mmap_bytes(path));
    rc = fly_db_exec(db, pragma, err);
  }
  if( rc ){
    /* A non-database file fails at the first statement that reads it. */
    if( sqlite3_errcode(db->h) == SQLITE_NOTADB )
      rc = fly_fail(err, FLY_CORRUPT, "%s is not a flydb database (not SQLite)",
                    path);
    goto done;
  }
  rc = check_identity(db, err);
  /* After check_identity: a negative cache_size is turned into a page count
   * with the page size of the moment, and a new file only now has its
   * own page size.  16 MiB of SQLite cache; decoded pages have their own.
   * A file being built (FLY_DB_FAST) is appended to in rowid order with no
   * journal, so SQLite keeps only the b-tree's right-hand path: 2 MiB, which
   * stays in the processor's caches as pages are copied in. */
  if( rc == FLY_OK )
    rc = fly_db_exec(db, (flags & FLY_DB_FAST) ? "PRAGMA cache_size=-2048"
                                               : "PRAGMA cache_size=-16384", err);
  /* Prepared once, so a read transaction per z step allocates nothing
   * (sqlite3_exec compiles its SQL at every call). */
  if( rc == FLY_OK ) rc = fly_db_prepare(db, "BEGIN", &db->st_begin, err);
  if( rc == FLY_OK ) rc = fly_db_prepare(db, "COMMIT", &db->st_commit, err);
  if( rc && (flags & FLY_DB_READONLY) &&
      sqlite3_extended_errcode(db->h) == SQLITE_READONLY_ROLLBACK ){
    /* A write was interrupted and left a hot journal: only a read-write
     * connection may roll it back, which restores the file's last
     * committed state. */
    fly_db_close(db);
    db = NULL;
    fly_db *rw = NULL;
    rc = fly_db_open(path, flags & ~FLY_DB_READONLY, &rw, err);
    if( rc ) return rc;
    fly_db_close(rw);
    return fly_db_open(path, flags, pdb, err);
  }

done:
  if( rc ){
    fly_db_close(db);
    return rc;
  }
  *pdb = db;
  return FLY_OK;
}

void fly_db_close(fly_db *db)
{
  if( !db ) return;
  if( db->h ){
    sqlite3_finalize(db->st_begin);
    sqlite3_finalize(db->st_commit);
    fly_db_rollback(db);
    sqlite3_close_v2(db->h);
  }
  fly_free(db->path);
  fly_free(db);
}

int fly_db_read_begin(fly_db *db)
{
  if( !sqlite3_get_autocommit(db->h) ) return 0;
  int ok = sqlite3_step(db->st_begin) == SQLITE_DONE;
  sqlite3_reset(db->st_begin);
  return ok;
}

void fly_db_read_end(fly_db *db, int began)
{
  if( !began || sqlite3_get_autocommit(db->h) ) return;
  sqlite3_step(db->st_commit);
  sqlite3_reset(db->st_commit);
}

fly_rc fly_db_wal(fly_db *db, fly_err *err)
{
  if( db->flags & (FLY_DB_FAST | FLY_DB_READONLY) ) return FLY_OK;
  return exec_step(db, "PRAGMA journal_mode=WAL", "switching to WAL mode", err);
}

/* ---- integrity check ------------------------------------------------ */

fly_rc fly_db_check_begin(fly_db *db, fly_err *err)
{
  fly_rc rc = fly_db_exec(db, "PRAGMA query_only=1", err);
  if( rc == FLY_OK ) rc = fly_db_exec(db, "BEGIN", err);
  return rc;
}

void fly_db_check_end(fly_db *db)
{
  fly_db_exec(db, "COMMIT", NULL);
}

