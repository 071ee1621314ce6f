/*
 * shard.c -- splitting a data set into shards, assembling and verifying
 * their manifest (see shard.h); the only code that reads or writes the
 * manifest tables shard_set, shard_column and shard.
 *
 * Invariants of a sound manifest: one shard_set row (id 1) whose n_shards
 * and n_rows are the count and the row total of the shard rows; shard rows
 * k = 0..n_shards-1 with first_row the sum of the n_rows before them and
 * n_rows >= 1; one shard_column row per stored column (idx 0..width-1),
 * with the statistics fly_dataset_stats gives over every shard's rows in
 * shard order; each shard's file holds one data set of those columns,
 * n_rows rows, whose rows hash (XXH3-64 of the doubles in row order) to
 * digest.
 *
 * The tables are created here when a manifest is written, not by a schema
 * migration: only a manifest has them, and an ordinary database never
 * needs them.
 *
 * Cost: a split reads the source once, writes each shard once and reads
 * it back once (assembling); verifying reads only the metadata of each
 * shard, or every row with full = 1.  Memory: one page per open table.
 */
#include "shard/shard.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/dataset.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "util/mem.h"

static const char manifest_sql[] =
  "CREATE TABLE shard_set ("
  "  id            INTEGER PRIMARY KEY CHECK (id = 1),"
  "  name          TEXT    NOT NULL,"     /* the data set's name in every shard */
  "  source        TEXT    NOT NULL,"     /* shard 0's source */
  "  target_name   TEXT    NOT NULL,"
  "  n_rows        INTEGER NOT NULL CHECK (n_rows > 0),"
  "  width         INTEGER NOT NULL CHECK (width >= 2),"
  "  has_intercept INTEGER NOT NULL CHECK (has_intercept IN (0, 1)),"
  "  prec          INTEGER NOT NULL CHECK (prec IN (4, 8)),"
  "  n_shards      INTEGER NOT NULL CHECK (n_shards > 0),"
  "  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')));"
  "CREATE TABLE shard_column ("
  "  idx     INTEGER PRIMARY KEY,"
  "  name    TEXT    NOT NULL,"
  "  role    TEXT    NOT NULL CHECK (role IN ('intercept', 'feature', 'target')),"
  "  csv_col INTEGER,"
  "  n INTEGER NOT NULL, mean REAL NOT NULL, sd REAL NOT NULL,"
  "  min REAL NOT NULL, max REAL NOT NULL);"
  "CREATE TABLE shard ("
  "  k         INTEGER PRIMARY KEY,"        /* 0-based, in row order */
  "  path      TEXT    NOT NULL UNIQUE,"    /* base name: beside the manifest */
  "  first_row INTEGER NOT NULL,"
  "  n_rows    INTEGER NOT NULL CHECK (n_rows > 0),"
  "  digest    INTEGER NOT NULL,"           /* XXH3-64 of the rows, signed */
  "  stats_digest INTEGER NOT NULL);";      /* XXH3-64 of its column statistics */

/* ---- paths ------------------------------------------------------------ */

/* The directory part of path ("." when it has none) into out. */
static void dir_of(const char *path, char *out, size_t cap)
{
  const char *s = strrchr(path, '/');
  if( !s ) snprintf(out, cap, ".");
  else if( s == path ) snprintf(out, cap, "/");
  else snprintf(out, cap, "%.*s", (int)(s - path), path);
}

/* a + sep + b into out (cap bytes); FLY_MISUSE if it does not fit. */
static fly_rc join(char *out, size_t cap, const char *a, const char *sep,
                   const char *b, fly_err *err)
{
  int w = snprintf(out, cap, "%s%s%s", a, sep, b);
  if( w < 0 || (size_t)w >= cap )
    return fly_fail(err, FLY_MISUSE, "path too long: %s%s%s", a, sep, b);
  return FLY_OK;
}

/* A stored shard path as usable from here: a bare name is beside the
 * manifest (in directory mdir). */
static fly_rc resolve(const char *mdir, const char *stored, char *out,
                      size_t cap, fly_err *err)
{
  if( strchr(stored, '/') ) return join(out, cap, "", "", stored, err);
  return join(out, cap, mdir, "/", stored, err);
}

/* ---- reading one shard -------------------------------------------------- */

/* Whether shard ds has the columns, intercept, precision and target of
 * ref; a mismatch is FLY_MISUSE naming the shard and what differs. */
static fly_rc same_shape(const fly_dataset *ref, const fly_dataset *ds,
                         const char *what, fly_err *err)
{
  if( ds->width != ref->width || ds->n_cols != ref->n_cols )
    return fly_fail(err, FLY_MISUSE, "%s has %lld columns, want %lld", what,
                    (long long)ds->width, (long long)ref->width);
  if( ds->prec != ref->prec || ds->has_intercept != ref->has_intercept )
    return fly_fail(err, FLY_MISUSE, "%s differs in precision or intercept "
                    "(%d-byte values, intercept %d; want %d, %d)", what, ds->prec,
                    ds->has_intercept, ref->prec, ref->has_intercept);
  for(size_t j = 0; j < ds->n_cols; j++){
    const fly_dataset_column *a = &ds->cols[j], *b = &ref->cols[j];
    if( !a->name || !a->role || strcmp(a->name, b->name) || strcmp(a->role, b->role) )
      return fly_fail(err, FLY_MISUSE, "%s: column %zu is '%s' (%s), want '%s' (%s)",
                      what, j, a->name ? a->name : "", a->role ? a->role : "",
                      b->name, b->role);
  }
  return FLY_OK;
}

/* Open shard `path` read-only and load its only data set into *pds. */
static fly_rc open_shard(const char *path, const char *what, fly_db **pdb,
                         fly_dataset **pds, fly_err *err)
{
  int64_t id = 0;
  struct stat sb;
  *pdb = NULL;
  *pds = NULL;
  if( stat(path, &sb) != 0 )
    return fly_fail(err, FLY_IO, "%s is missing: %s", what, strerror(errno));
  fly_rc rc = fly_db_open(path, FLY_DB_READONLY, pdb, err);
  if( rc == FLY_OK ) rc = fly_dataset_find(*pdb, NULL, &id, err);
  if( rc != FLY_OK && rc != FLY_NOMEM ){
    /* A process killed while writing the shard (a sharded run's
     * checkpoint) leaves a hot journal that only a read-write connection
     * rolls back: open it so once (it exists: nothing is created), then
     * read-only again. */
    fly_db *rw = NULL;
    fly_err e2 = {0};
    fly_db_close(*pdb);
    *pdb = NULL;
    if( fly_db_open(path, 0, &rw, &e2) == FLY_OK ){
      fly_db_close(rw);
      fly_err_clear(err);
      rc = fly_db_open(path, FLY_DB_READONLY, pdb, err);
      if( rc == FLY_OK ) rc = fly_dataset_find(*pdb, NULL, &id, err);
    }
  }
  if( rc == FLY_OK ) rc = fly_dataset_load(*pdb, id, pds, err);
  if( rc ){
    fly_err_prefix(err, "%s", what);
    fly_db_close(*pdb);
    *pdb = NULL;
  }
  return rc;
}

/* XXH3-64 of the column statistics a shard stores (n, mean, sd, min, max
 * of each column): a check that needs no row, and tells one shard from
 * another of the same row count. */
static uint64_t stats_digest(const fly_dataset *ds)
{
  XXH64_hash_t h = 0;
  for(size_t j = 0; j < ds->n_cols; j++){
    const fly_dataset_column *c = &ds->cols[j];
    double v[5] = { (double)c->n, c->mean, c->sd, c->min, c->max };
    h = XXH3_64bits_withSeed(v, sizeof v, h);
  }
  return h;
}

/* Read every row of data set ds of db in order: their digest into *digest
 * and, when st is not NULL, into st's statistics.  FLY_CORRUPT (naming
 * `what`) for a damaged page. */
static fly_rc scan_rows(fly_db *db, const fly_dataset *ds, const char *what,
                        fly_dataset_stats *st, uint64_t *digest, fly_err *err)
{
  fly_pages *p = NULL;
  double *rows = NULL;
  XXH3_state_t *h = XXH3_createState();
  fly_rc rc = FLY_OK;
  int64_t seen = 0;

  if( !h ) return fly_fail(err, FLY_NOMEM, "%s: hash state", what);
  XXH3_64bits_reset(h);
  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, ds->id, 0, &p, err)) ) goto done;
  const fly_pages_info *in = fly_pages_info_of(p);
  rows = fly_alloc_array((size_t)in->page_rows, in->width * sizeof *rows);
  if( !rows ){ rc = fly_fail(err, FLY_NOMEM, "%s: one page", what); goto done; }
  int began = fly_db_read_begin(db);
  for(int64_t pg = 0; pg < in->n_pages && rc == FLY_OK; pg++){
    size_t n = 0;
    if( (rc = fly_pages_read_page(p, pg, rows, &n, err)) ) break;
    XXH3_64bits_update(h, rows, n * in->width * sizeof *rows);
    if( st ) fly_dataset_stats_add(st, rows, n);
    seen += (int64_t)n;
  }
  fly_db_read_end(db, began);
  if( rc == FLY_OK && seen != ds->n_rows )
    rc = fly_fail(err, FLY_CORRUPT, "%s: pages hold %lld rows, the data set "
                  "says %lld", what, (long long)seen, (long long)ds->n_rows);
  *digest = XXH3_64bits_digest(h);
done:
  if( rc && !strstr(err ? err->msg : "", what) ) fly_err_prefix(err, "%s", what);
  XXH3_freeState(h);
  fly_free(rows);
  fly_pages_close(p);
  return rc;
}

/* ---- assembling ------------------------------------------------------- */

typedef struct listed {
  char     stored[4096];
  int64_t  n_rows;
  uint64_t digest, stats_digest;
} listed;

static fly_rc write_manifest(fly_db *m, const fly_dataset *ref,
                             const fly_dataset_stats *st, const listed *ls,
                             size_t n, fly_err *err)
{
  sqlite3_stmt *q = NULL;
  fly_rc rc = fly_db_exec(m, manifest_sql, err);
  if( rc ) return rc;
  rc = fly_db_prepare(m, "INSERT INTO shard_set(id, name, source, target_name,"
      " n_rows, width, has_intercept, prec, n_shards) VALUES (1,?1,?2,?3,?4,?5,?6,?7,?8)",
      &q, err);
  if( rc ) return rc;
  sqlite3_bind_text(q, 1, ref->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 2, ref->source ? ref->source : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 3, ref->target_name ? ref->target_name : "", -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 4, fly_dataset_stats_rows(st));
  sqlite3_bind_int64(q, 5, ref->width);
  sqlite3_bind_int(q, 6, ref->has_intercept);
  sqlite3_bind_int(q, 7, ref->prec);
  sqlite3_bind_int64(q, 8, (int64_t)n);
  if( sqlite3_step(q) != SQLITE_DONE ) rc = fly_db_fail(m, err, "writing shard_set");
  sqlite3_finalize(q);
  q = NULL;
  if( rc ) return rc;

  rc = fly_db_prepare(m, "INSERT INTO shard_column(idx, name, role, csv_col, n,"
      " mean, sd, min, max) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)", &q, err);
  if( rc ) return rc;
  for(size_t j = 0; j < ref->n_cols && rc == FLY_OK; j++){
    fly_dataset_column c = ref->cols[j];
    fly_dataset_stats_get(st, j, &c);
    sqlite3_bind_int64(q, 1, (int64_t)j);
    sqlite3_bind_text(q, 2, c.name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, c.role, -1, SQLITE_STATIC);
    if( c.csv_col <= 0 ) sqlite3_bind_null(q, 4);
    else sqlite3_bind_int64(q, 4, c.csv_col);
    sqlite3_bind_int64(q, 5, c.n);
    sqlite3_bind_double(q, 6, c.mean);
    sqlite3_bind_double(q, 7, c.sd);
    sqlite3_bind_double(q, 8, c.min);
    sqlite3_bind_double(q, 9, c.max);
    if( sqlite3_step(q) != SQLITE_DONE ) rc = fly_db_fail(m, err, "writing shard_column");
    sqlite3_reset(q);
  }
  sqlite3_finalize(q);
  q = NULL;
  if( rc ) return rc;

  rc = fly_db_prepare(m, "INSERT INTO shard(k, path, first_row, n_rows, digest,"
                      " stats_digest) VALUES (?1,?2,?3,?4,?5,?6)", &q, err);
  if( rc ) return rc;
  int64_t first = 0;
  for(size_t k = 0; k < n && rc == FLY_OK; k++){
    sqlite3_bind_int64(q, 1, (int64_t)k);
    sqlite3_bind_text(q, 2, ls[k].stored, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, first);
    sqlite3_bind_int64(q, 4, ls[k].n_rows);
    sqlite3_bind_int64(q, 5, (int64_t)ls[k].digest);
    sqlite3_bind_int64(q, 6, (int64_t)ls[k].stats_digest);
    if( sqlite3_step(q) != SQLITE_DONE ){
      if( sqlite3_extended_errcode(fly_db_sqlite(m)) == SQLITE_CONSTRAINT_UNIQUE )
        rc = fly_fail(err, FLY_MISUSE, "shard %zu (%s) is listed twice", k, ls[k].stored);
      else rc = fly_db_fail(m, err, "writing shard");
    }
    sqlite3_reset(q);
    first += ls[k].n_rows;
  }
  sqlite3_finalize(q);
  return rc;
}

/* Publish the complete file tmp as path, refusing to replace a file. */
static fly_rc publish(const char *tmp, const char *path, fly_err *err)
{
  if( link(tmp, path) == 0 ) return FLY_OK;
  if( errno == EEXIST )
    return fly_fail(err, FLY_MISUSE, "%s already exists: not replaced", path);
  if( (errno == EPERM || errno == EOPNOTSUPP) && rename(tmp, path) == 0 )
    return FLY_OK;
  return fly_fail(err, FLY_IO, "creating %s: %s", path, strerror(errno));
}

fly_rc fly_shard_assemble(const char *manifest_path, const char *const *shards,
                          size_t n, fly_err *err)
{
  char mdir[4096], mreal[PATH_MAX], tmp[4200], what[4200];
  listed *ls = NULL;
  fly_dataset *ref = NULL;
  fly_dataset_stats *st = NULL;
  fly_db *m = NULL;
  fly_rc rc = FLY_OK;
  struct stat sb;

  if( n == 0 ) return fly_fail(err, FLY_MISUSE, "a manifest needs at least one shard");
  if( stat(manifest_path, &sb) == 0 )
    return fly_fail(err, FLY_MISUSE, "%s already exists: not replaced", manifest_path);
  dir_of(manifest_path, mdir, sizeof mdir);
  if( !realpath(mdir, mreal) )
    return fly_fail(err, FLY_IO, "directory %s: %s", mdir, strerror(errno));
  ls = fly_alloc_array(n, sizeof *ls);
  if( !ls ) return fly_fail(err, FLY_NOMEM, "listing %zu shards", n);

  for(size_t k = 0; k < n; k++){
    fly_db *db = NULL;
    fly_dataset *ds = NULL;
    char real[PATH_MAX], rdir[PATH_MAX];
    snprintf(what, sizeof what, "shard %zu (%s)", k, shards[k]);
    rc = open_shard(shards[k], what, &db, &ds, err);
    if( rc == FLY_OK && !realpath(shards[k], real) )
      rc = fly_fail(err, FLY_IO, "%s: %s", what, strerror(errno));
    if( rc == FLY_OK ){
      dir_of(real, rdir, sizeof rdir);
      if( strcmp(rdir, mreal) == 0 ) snprintf(ls[k].stored, sizeof ls[k].stored, "%s", real + strlen(rdir) + 1);
      else snprintf(ls[k].stored, sizeof ls[k].stored, "%s", real);
      for(size_t i = 0; i < k && rc == FLY_OK; i++)
        if( strcmp(ls[i].stored, ls[k].stored) == 0 )
          rc = fly_fail(err, FLY_MISUSE, "%s is shard %zu too", what, i);
    }
    if( rc == FLY_OK && !ref ){
      rc = fly_dataset_stats_new((size_t)ds->width, &st, err);
    }else if( rc == FLY_OK ){
      rc = same_shape(ref, ds, what, err);
    }
    if( rc == FLY_OK ) rc = scan_rows(db, ds, what, st, &ls[k].digest, err);
    ls[k].n_rows = ds ? ds->n_rows : 0;
    ls[k].stats_digest = ds ? stats_digest(ds) : 0;
    if( rc == FLY_OK && !ref ){ ref = ds; ds = NULL; }
    fly_dataset_free(ds);
    fly_db_close(db);
    if( rc ) goto done;
  }

  snprintf(tmp, sizeof tmp, "%s.shard-%ld.tmp", manifest_path, (long)getpid());
  unlink(tmp);
  rc = fly_db_open(tmp, FLY_DB_CREATE | FLY_DB_FAST, &m, err);
  if( rc == FLY_OK ) rc = fly_db_begin(m, err);
  if( rc == FLY_OK ) rc = write_manifest(m, ref, st, ls, n, err);
  if( rc == FLY_OK ) rc = fly_db_commit(m, err);
  fly_db_close(m);
  if( rc == FLY_OK ) rc = publish(tmp, manifest_path, err);
  unlink(tmp);
done:
  fly_dataset_free(ref);
  fly_dataset_stats_free(st);
  fly_free(ls);
  return rc;
}

/* ---- splitting -------------------------------------------------------- */

/* The shard being written. */
typedef struct writer {
  fly_db            *db;
  fly_pagewriter    *pw;
  fly_dataset_stats *st;
  int64_t            id;
  char               tmp[4200], path[4200];
} writer;

static fly_rc writer_open(writer *w, const fly_dataset *src, const char *dir,
                          int64_t k, fly_err *err)
{
  char name[64], sfx[64];
  snprintf(name, sizeof name, FLY_SHARD_NAME_FMT, (long long)k);
  snprintf(sfx, sizeof sfx, ".shard-%ld.tmp", (long)getpid());
  fly_rc rc = join(w->path, sizeof w->path, dir, "/", name, err);
  if( rc == FLY_OK ) rc = join(w->tmp, sizeof w->tmp, w->path, "", sfx, err);
  if( rc ) return rc;
  unlink(w->tmp);
  fly_dataset_spec spec = { src->name, src->source ? src->source : "",
                            src->target_name ? src->target_name : "", src->width,
                            src->has_intercept, src->page_rows, src->prec };
  rc = fly_db_open(w->tmp, FLY_DB_CREATE | FLY_DB_FAST, &w->db, err);
  if( rc == FLY_OK ) rc = fly_db_begin(w->db, err);
  if( rc == FLY_OK ) rc = fly_dataset_create(w->db, &spec, &w->id, err);
  if( rc == FLY_OK ) rc = fly_pagewriter_open(w->db, FLY_TABLE_DATA, w->id,
                                              (size_t)src->width, src->page_rows,
                                              src->prec, &w->pw, err);
  if( rc == FLY_OK ) rc = fly_dataset_stats_new((size_t)src->width, &w->st, err);
  if( rc ) fly_err_prefix(err, "shard %lld (%s)", (long long)k, w->path);
  return rc;
}

/* Finish (ok) or abandon the shard being written; closes everything. */
static fly_rc writer_close(writer *w, const fly_dataset *src, int ok, fly_err *err)
{
  fly_rc rc = FLY_OK;
  if( ok ){
    rc = fly_pagewriter_finish(w->pw, err);
    if( rc == FLY_OK )
      rc = fly_dataset_finish(w->db, w->id, fly_pagewriter_pages(w->pw),
                              fly_pagewriter_raw_bytes(w->pw),
                              fly_pagewriter_stored_bytes(w->pw), src->cols, w->st, err);
    if( rc == FLY_OK ) rc = fly_db_commit(w->db, err);
  }
  fly_pagewriter_free(w->pw);
  fly_dataset_stats_free(w->st);
  fly_db_close(w->db);
  w->pw = NULL;
  w->st = NULL;
  w->db = NULL;
  if( ok && rc == FLY_OK ) rc = publish(w->tmp, w->path, err);
  if( w->tmp[0] ) unlink(w->tmp);
  w->tmp[0] = 0;
  return rc;
}

/* floor((k+1) N / S), the first row past shard k, without overflow for
 * any N and S up to 2^31. */
static int64_t split_end(int64_t N, int64_t S, int64_t k)
{
  return (k + 1) * (N / S) + ((k + 1) * (N % S)) / S;
}

fly_rc fly_shard_split(const char *db_path, const char *data_name,
                       int64_t n_shards, const char *out_dir, fly_err *err)
{
  fly_db *db = NULL;
  fly_dataset *ds = NULL;
  fly_pages *p = NULL;
  double *rows = NULL;
  char **paths = NULL;
  writer w;
  int64_t id = 0, k = 0, written = 0;
  fly_rc rc;
  struct stat sb;
  char mpath[4200];

  memset(&w, 0, sizeof w);
  rc = fly_db_open(db_path, FLY_DB_READONLY, &db, err);
  if( rc == FLY_OK ) rc = fly_dataset_find(db, data_name, &id, err);
  if( rc == FLY_OK ) rc = fly_dataset_load(db, id, &ds, err);
  if( rc ) goto done;
  if( n_shards < 1 || n_shards > ds->n_rows ){
    rc = fly_fail(err, FLY_MISUSE, "--shards %lld: want 1 to %lld (the rows of "
                  "data set '%s')", (long long)n_shards, (long long)ds->n_rows, ds->name);
    goto done;
  }
  if( mkdir(out_dir, 0777) != 0 && errno != EEXIST ){
    rc = fly_fail(err, FLY_IO, "creating directory %s: %s", out_dir, strerror(errno));
    goto done;
  }
  snprintf(mpath, sizeof mpath, "%s/%s", out_dir, FLY_SHARD_MANIFEST);
  paths = fly_alloc_array((size_t)n_shards, sizeof *paths);
  if( !paths ){ rc = fly_fail(err, FLY_NOMEM, "%lld shard names", (long long)n_shards); goto done; }
  for(int64_t j = 0; j < n_shards; j++){
    char name[64];
    snprintf(name, sizeof name, FLY_SHARD_NAME_FMT, (long long)j);
    size_t len = strlen(out_dir) + strlen(name) + 2;
    if( !(paths[j] = fly_alloc_array(len, 1)) ){ rc = fly_fail(err, FLY_NOMEM, "shard names"); goto done; }
    snprintf(paths[j], len, "%s/%s", out_dir, name);
    if( stat(paths[j], &sb) == 0 ){
      rc = fly_fail(err, FLY_MISUSE, "%s already exists: not replaced", paths[j]);
      goto done;
    }
  }
  if( stat(mpath, &sb) == 0 ){
    rc = fly_fail(err, FLY_MISUSE, "%s already exists: not replaced", mpath);
    goto done;
  }

  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, id, 0, &p, err)) ) goto done;
  const fly_pages_info *in = fly_pages_info_of(p);
  rows = fly_alloc_array((size_t)in->page_rows, in->width * sizeof *rows);
  if( !rows ){ rc = fly_fail(err, FLY_NOMEM, "split: one page"); goto done; }
  int64_t end = 0;     /* first row past shard k */
  int began = fly_db_read_begin(db);
  for(int64_t pg = 0; pg < in->n_pages && rc == FLY_OK; pg++){
    size_t n = 0;
    if( (rc = fly_pages_read_page(p, pg, rows, &n, err)) ) break;
    for(size_t i = 0; i < n && rc == FLY_OK; i++, written++){
      if( written == end ){
        if( w.db && (rc = writer_close(&w, ds, 1, err)) ) break;
        if( written > 0 ) k++;
        end = split_end(ds->n_rows, n_shards, k);
        if( (rc = writer_open(&w, ds, out_dir, k, err)) ) break;
      }
      const double *r = rows + i * in->width;
      fly_dataset_stats_add(w.st, r, 1);
      rc = fly_pagewriter_add(w.pw, r, err);
    }
  }
  fly_db_read_end(db, began);
  if( rc == FLY_OK && written != ds->n_rows )
    rc = fly_fail(err, FLY_CORRUPT, "%s: data set '%s' has %lld rows in its "
                  "pages, %lld in its record", db_path, ds->name,
                  (long long)written, (long long)ds->n_rows);
  if( w.db ){
    fly_rc rc2 = writer_close(&w, ds, rc == FLY_OK, err);
    if( rc == FLY_OK ) rc = rc2;
  }
  if( rc == FLY_OK )
    rc = fly_shard_assemble(mpath, (const char *const *)paths, (size_t)n_shards, err);
  if( rc ){
    for(int64_t j = 0; j <= k && j < n_shards; j++) unlink(paths[j]);
  }

done:
  if( paths ) for(int64_t j = 0; j < n_shards; j++) fly_free(paths[j]);
  fly_free(paths);
  fly_free(rows);
  fly_pages_close(p);
  fly_dataset_free(ds);
  fly_db_close(db);
  return rc;
}

/* ---- verifying -------------------------------------------------------- */

/* Whether directory entry nm is named like a shard of a split. */
static int shard_like(const char *nm)
{
  long long k;
  char tail[8];
  return sscanf(nm, "shard-%lld.d%7s", &k, tail) == 2 && strcmp(tail, "b") == 0
      && strspn(nm + 6, "0123456789") > 0;
}

/* A file named like a shard beside the manifest that it does not list:
 * FLY_MISUSE naming it. */
static fly_rc no_extra(const char *mdir, char (*real)[PATH_MAX], size_t n,
                       fly_err *err)
{
  DIR *d = opendir(mdir);
  struct dirent *e;
  fly_rc rc = FLY_OK;
  if( !d ) return fly_fail(err, FLY_IO, "directory %s: %s", mdir, strerror(errno));
  while( rc == FLY_OK && (e = readdir(d)) ){
    char full[4200], r[PATH_MAX];
    size_t i;
    if( !shard_like(e->d_name) ) continue;
    if( join(full, sizeof full, mdir, "/", e->d_name, NULL) || !realpath(full, r) )
      continue;
    for(i = 0; i < n; i++) if( strcmp(real[i], r) == 0 ) break;
    if( i == n )
      rc = fly_fail(err, FLY_MISUSE, "extra shard %s: the manifest does not list it",
                    full);
  }
  closedir(d);
  return rc;
}

/* The manifest's reference shape: shard_set and shard_column as a
 * fly_dataset (names and roles borrowed from the statement's copies). */
typedef struct manifest {
  fly_dataset         ds;
  fly_dataset_column *cols;
  char              **names, **roles;
  int64_t             n_shards;
} manifest;

static void manifest_free(manifest *mf)
{
  for(size_t j = 0; mf->names && j < mf->ds.n_cols; j++){
    fly_free(mf->names[j]);
    fly_free(mf->roles[j]);
  }
  fly_free(mf->names);
  fly_free(mf->roles);
  fly_free(mf->cols);
  memset(mf, 0, sizeof *mf);
}

static fly_rc manifest_load(fly_db *m, manifest *mf, fly_err *err)
{
  sqlite3_stmt *q = NULL;
  fly_rc rc = fly_db_prepare(m, "SELECT n_rows, width, has_intercept, prec, n_shards"
                             " FROM shard_set WHERE id = 1", &q, err);
  if( rc ){
    fly_err_prefix(err, "%s is not a shard manifest", fly_db_path(m));
    return rc;
  }
  if( sqlite3_step(q) != SQLITE_ROW ){
    sqlite3_finalize(q);
    return fly_fail(err, FLY_CORRUPT, "%s: the manifest has no shard_set row",
                    fly_db_path(m));
  }
  mf->ds.n_rows = sqlite3_column_int64(q, 0);
  mf->ds.width = sqlite3_column_int64(q, 1);
  mf->ds.has_intercept = sqlite3_column_int(q, 2);
  mf->ds.prec = sqlite3_column_int(q, 3);
  mf->n_shards = sqlite3_column_int64(q, 4);
  sqlite3_finalize(q);
  if( mf->ds.width < 2 || mf->ds.width > (1 << 20) )
    return fly_fail(err, FLY_CORRUPT, "%s: width %lld", fly_db_path(m),
                    (long long)mf->ds.width);
  size_t w = (size_t)mf->ds.width;
  mf->cols = fly_alloc_array(w, sizeof *mf->cols);
  mf->names = fly_alloc_array(w, sizeof *mf->names);
  mf->roles = fly_alloc_array(w, sizeof *mf->roles);
  if( !mf->cols || !mf->names || !mf->roles )
    return fly_fail(err, FLY_NOMEM, "manifest columns");
  mf->ds.cols = mf->cols;
  if( (rc = fly_db_prepare(m, "SELECT idx, name, role FROM shard_column ORDER BY idx",
                           &q, err)) ) return rc;
  while( sqlite3_step(q) == SQLITE_ROW && mf->ds.n_cols < w ){
    size_t j = mf->ds.n_cols;
    mf->names[j] = fly_strdup((const char *)sqlite3_column_text(q, 1));
    mf->roles[j] = fly_strdup((const char *)sqlite3_column_text(q, 2));
    mf->ds.n_cols++;
    if( !mf->names[j] || !mf->roles[j] ){ rc = fly_fail(err, FLY_NOMEM, "manifest columns"); break; }
    mf->cols[j].idx = (int64_t)j;
    mf->cols[j].name = mf->names[j];
    mf->cols[j].role = mf->roles[j];
  }
  sqlite3_finalize(q);
  if( rc == FLY_OK && mf->ds.n_cols != w )
    rc = fly_fail(err, FLY_CORRUPT, "%s: %zu shard_column rows, want %zu",
                  fly_db_path(m), mf->ds.n_cols, w);
  return rc;
}

fly_rc fly_shard_verify(const char *manifest_path, int full,
                        fly_shard_verify_fn *fn, void *u, int64_t *n_rows,
                        fly_err *err)
{
  fly_db *m = NULL;
  sqlite3_stmt *q = NULL;
  manifest mf;
  char mdir[4096], what[4400];
  char (*real)[PATH_MAX] = NULL;
  fly_shard_info si;
  int64_t total = 0, n = 0;
  int s;

  memset(&mf, 0, sizeof mf);
  fly_rc rc = fly_db_open(manifest_path, FLY_DB_READONLY, &m, err);
  if( rc == FLY_OK ) rc = manifest_load(m, &mf, err);
  if( rc ) goto done;
  dir_of(manifest_path, mdir, sizeof mdir);
  if( mf.n_shards < 1 || mf.n_shards > (1 << 24) ){
    rc = fly_fail(err, FLY_CORRUPT, "%s: %lld shards", manifest_path, (long long)mf.n_shards);
    goto done;
  }
  real = fly_alloc_array((size_t)mf.n_shards, sizeof *real);
  if( !real ){ rc = fly_fail(err, FLY_NOMEM, "shard paths"); goto done; }
  if( (rc = fly_db_prepare(m, "SELECT k, path, first_row, n_rows, digest,"
                           " stats_digest FROM shard"
                           " ORDER BY k", &q, err)) ) goto done;
  while( rc == FLY_OK && (s = sqlite3_step(q)) == SQLITE_ROW ){
    fly_db *db = NULL;
    fly_dataset *ds = NULL;
    const char *stored = (const char *)sqlite3_column_text(q, 1);
    memset(&si, 0, sizeof si);
    si.k = sqlite3_column_int64(q, 0);
    if( (rc = resolve(mdir, stored ? stored : "", si.path, sizeof si.path, err)) )
      break;
    si.first_row = sqlite3_column_int64(q, 2);
    si.n_rows = sqlite3_column_int64(q, 3);
    si.digest = (uint64_t)sqlite3_column_int64(q, 4);
    snprintf(what, sizeof what, "shard %lld (%s)", (long long)si.k, si.path);
    if( si.k != n || si.first_row != total || si.n_rows < 1 || n >= mf.n_shards ){
      rc = fly_fail(err, FLY_CORRUPT, "%s: the manifest lists it as shard %lld of "
                    "rows %lld+%lld, want shard %lld from row %lld", manifest_path,
                    (long long)si.k, (long long)si.first_row, (long long)si.n_rows,
                    (long long)n, (long long)total);
      break;
    }
    rc = open_shard(si.path, what, &db, &ds, err);
    if( rc == FLY_OK ) rc = same_shape(&mf.ds, ds, what, err);
    if( rc == FLY_OK && ds->n_rows != si.n_rows )
      rc = fly_fail(err, FLY_MISUSE, "%s has %lld rows, the manifest says %lld",
                    what, (long long)ds->n_rows, (long long)si.n_rows);
    if( rc == FLY_OK && stats_digest(ds) != (uint64_t)sqlite3_column_int64(q, 5) )
      rc = fly_fail(err, FLY_MISUSE, "%s: its column statistics are not those the "
                    "manifest recorded: another or a changed shard", what);
    if( rc == FLY_OK && full ){
      uint64_t dg = 0;
      rc = scan_rows(db, ds, what, NULL, &dg, err);
      if( rc == FLY_OK && dg != si.digest )
        rc = fly_fail(err, FLY_CORRUPT, "%s: its rows do not match the manifest's "
                      "digest (%016llx, want %016llx): another or a changed shard",
                      what, (unsigned long long)dg, (unsigned long long)si.digest);
    }
    if( rc == FLY_OK && !realpath(si.path, real[n]) )
      rc = fly_fail(err, FLY_IO, "%s: %s", what, strerror(errno));
    fly_dataset_free(ds);
    fly_db_close(db);
    if( rc ) break;
    if( fn ) fn(u, &si);
    total += si.n_rows;
    n++;
  }
  if( rc == FLY_OK && n != mf.n_shards )
    rc = fly_fail(err, FLY_CORRUPT, "%s lists %lld shards, its shard_set says %lld",
                  manifest_path, (long long)n, (long long)mf.n_shards);
  if( rc == FLY_OK && total != mf.ds.n_rows )
    rc = fly_fail(err, FLY_CORRUPT, "%s: the shards hold %lld rows, its shard_set "
                  "says %lld", manifest_path, (long long)total, (long long)mf.ds.n_rows);
  if( rc == FLY_OK ) rc = no_extra(mdir, real, (size_t)n, err);
  if( rc == FLY_OK && n_rows ) *n_rows = total;
done:
  sqlite3_finalize(q);
  fly_free(real);
  manifest_free(&mf);
  fly_db_close(m);
  return rc;
}
