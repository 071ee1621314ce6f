/*
 * ingest.c -- `flydb ingest FILE`: CSV into a data set of LZ4 pages.
 *
 * Streaming: one CSV record and one page of rows are in memory at a time,
 * whatever the file size.  Stored row layout: [1 (intercept)] features...
 * target, so a block of rows is directly the design matrix (lda = width)
 * with the target in its last column.  Column statistics are computed on
 * the values as stored (after f32 rounding), since those are what the
 * models see.
 *
 * Nothing half-written: into an existing database the whole ingest is one
 * transaction, so a failure (bad cell on line 9,000,000, a full disk, ^C)
 * leaves the file as it was; a new database is built in a temporary file
 * beside the target, with journalling off for speed, and renamed into
 * place only when complete (the temporary is removed on failure and on
 * SIGINT/SIGTERM).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "io/csv.h"
#include "progress.h"
#include "store/codec.h"
#include "store/db.h"
#include "store/pagewriter.h"
#include "util/mem.h"

/* Default page size: as many rows as fit, uncompressed, in one SQLite page
 * of the file (the largest payload a table leaf holds is its size less 35
 * bytes; the record's other columns take up to ~100 more).  Random reads
 * fetch and decode a whole page per row they need, so pages stay small; a
 * payload that filled 70% of a SQLite page would waste the rest (one such
 * record per leaf), and one larger than a page would spill into overflow
 * pages.  At least 16 rows, however wide. */
#define PAGE_SLACK_BYTES 136
static int64_t auto_page_rows(int64_t sqlite_page, size_t width, int prec)
{
  int64_t r = (sqlite_page - PAGE_SLACK_BYTES) / ((int64_t)width * prec);
  return r < 16 ? 16 : r;
}

/* Running mean/variance (Welford) and range of one stored column. */
typedef struct colstat { double mean, m2, min, max; } colstat;

static volatile sig_atomic_t g_sig;
static char g_tmp_path[4096];   /* temporary database being built */

/* SIGINT/SIGTERM/SIGHUP only set a flag: the row loop notices it (a blocked
 * read returns EINTR, as the handler is installed without SA_RESTART), the
 * transaction is rolled back or the temporary file removed by the normal
 * error path, and then the signal is re-raised so the exit status says
 * what happened. */
static void on_signal(int s) { g_sig = s; }

static void catch_signals(void)
{
  int sigs[] = { SIGINT, SIGTERM, SIGHUP };
  for(size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++){
    struct sigaction old, sa;
    if( sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN ) continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(sigs[i], &sa, NULL);
  }
}

static void reraise(void)
{
  if( !g_sig ) return;
  signal(g_sig, SIG_DFL);
  raise(g_sig);
}

static const char *base_name(const char *path)
{
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Default data set name: the file name without directory and extension. */
static void default_name(const char *path, char *out, size_t cap)
{
  if( strcmp(path, "-") == 0 ){ snprintf(out, cap, "stdin"); return; }
  snprintf(out, cap, "%s", base_name(path));
  char *dot = strchr(out, '.');
  if( dot && dot != out ) *dot = 0;
}

static fly_rc insert_columns(fly_db *db, int64_t ds, fly_csv *csv,
                             const size_t *src, size_t width, int intercept,
                             const colstat *cs, int64_t n, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db,
      "INSERT INTO dataset_column(dataset_id, idx, name, role, csv_col, n, "
      "mean, sd, min, max) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)", &st, err);
  if( rc ) return rc;
  for(size_t j = 0; j < width; j++){
    int is_icpt = intercept && j == 0;
    int is_tgt = j == width - 1;
    sqlite3_bind_int64(st, 1, ds);
    sqlite3_bind_int64(st, 2, (int64_t)j);
    sqlite3_bind_text(st, 3, is_icpt ? "(Intercept)" : fly_csv_colname(csv, src[j]),
                      -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, is_icpt ? "intercept" : is_tgt ? "target" : "feature",
                      -1, SQLITE_STATIC);
    if( is_icpt ) sqlite3_bind_null(st, 5);
    else sqlite3_bind_int64(st, 5, (int64_t)src[j] + 1);
    sqlite3_bind_int64(st, 6, n);
    sqlite3_bind_double(st, 7, cs[j].mean);
    sqlite3_bind_double(st, 8, n > 1 ? sqrt(cs[j].m2 / (double)(n - 1)) : 0.0);
    sqlite3_bind_double(st, 9, cs[j].min);
    sqlite3_bind_double(st, 10, cs[j].max);
    if( sqlite3_step(st) != SQLITE_DONE ){
      rc = fly_db_fail(db, err, "storing column statistics");
      break;
    }
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

typedef struct ingest_opts {
  const char *file, *db_path, *target, *name;
  int         intercept;
  int64_t     page_rows;
  int         prec;
} ingest_opts;

/* The ingest proper, inside the caller's transaction (or private file). */
static fly_rc ingest_into(fly_db *db, const ingest_opts *o, fly_csv *csv,
                          const char *name, int64_t *n_out, fly_err *err)
{
  fly_rc rc = FLY_OK;
  size_t ncsv = fly_csv_ncols(csv), tcol = ncsv - 1, width, k;
  size_t *src = NULL;          /* stored column j <- CSV column src[j] */
  double *rec = NULL, *row = NULL;
  colstat *cs = NULL;
  fly_pagewriter *pw = NULL;
  sqlite3_stmt *st = NULL;
  int64_t ds = 0, n = 0, page_rows = o->page_rows;
  fly_progress pg;

  if( ncsv < 2 ){
    rc = fly_fail(err, FLY_PARSE, "%s:1: the header has %zu column; need at "
                  "least one feature and a target", fly_csv_path(csv), ncsv);
    goto done;
  }
  if( o->target ){
    for(tcol = 0; tcol < ncsv; tcol++)
      if( strcmp(fly_csv_colname(csv, tcol), o->target) == 0 ) break;
    if( tcol == ncsv ){
      rc = fly_fail(err, FLY_RANGE, "%s:1: --target '%s' is not a column of "
                    "the header (first columns: '%s', '%s'%s)", fly_csv_path(csv),
                    o->target, fly_csv_colname(csv, 0), fly_csv_colname(csv, 1),
                    ncsv > 2 ? ", ..." : "");
      goto done;
    }
  }
  width = ncsv + (o->intercept ? 1 : 0);
  if( page_rows == 0 ){
    int64_t sp = 0;
    if( (rc = fly_db_page_bytes(db, &sp, err)) ) goto done;
    page_rows = auto_page_rows(sp, width, o->prec);
  }
  src = fly_alloc_array(width, sizeof *src);
  rec = fly_alloc_array(ncsv, sizeof *rec);
  row = fly_alloc_array(width, sizeof *row);
  cs = fly_alloc_array(width, sizeof *cs);
  if( !src || !rec || !row || !cs ){ rc = fly_fail(err, FLY_NOMEM, "ingest"); goto done; }
  k = 0;
  if( o->intercept ) src[k++] = (size_t)-1;
  for(size_t j = 0; j < ncsv; j++) if( j != tcol ) src[k++] = j;
  src[k++] = tcol;
  for(size_t j = 0; j < width; j++){ cs[j].min = INFINITY; cs[j].max = -INFINITY; }

  rc = fly_db_prepare(db, "INSERT INTO dataset(name, source, n_rows, width, "
      "n_features, has_intercept, target_name, page_rows, n_pages, prec, "
      "raw_bytes, stored_bytes) VALUES (?1,?2,1,?3,?4,?5,?6,?7,0,?8,0,0)", &st, err);
  if( rc ) goto done;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, fly_csv_path(csv), -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, (int64_t)width);
  sqlite3_bind_int64(st, 4, (int64_t)width - 1);
  sqlite3_bind_int(st, 5, o->intercept);
  sqlite3_bind_text(st, 6, fly_csv_colname(csv, tcol), -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 7, page_rows);
  sqlite3_bind_int(st, 8, o->prec);
  if( sqlite3_step(st) != SQLITE_DONE ){
    if( sqlite3_extended_errcode(fly_db_sqlite(db)) == SQLITE_CONSTRAINT_UNIQUE )
      rc = fly_fail(err, FLY_MISUSE, "%s already has a data set named '%s' "
                    "(choose another with --name)", fly_db_path(db), name);
    else
      rc = fly_db_fail(db, err, "creating the data set");
    goto done;
  }
  ds = sqlite3_last_insert_rowid(fly_db_sqlite(db));
  sqlite3_finalize(st);
  st = NULL;

  rc = fly_pagewriter_open(db, FLY_TABLE_DATA, ds, width, page_rows, o->prec,
                           &pw, err);
  if( rc ) goto done;

  fly_progress_start(&pg);
  while( (rc = fly_csv_next(csv, rec, err)) == FLY_ROW || g_sig ){
    if( g_sig ){
      rc = fly_fail(err, FLY_IO, "interrupted at line %lld of %s: nothing was stored",
                    (long long)fly_csv_line(csv), fly_csv_path(csv));
      goto done;
    }
    for(size_t j = 0; j < width; j++){
      double v = src[j] == (size_t)-1 ? 1.0 : rec[src[j]];
      if( o->prec == FLY_PREC_F32 ){
        float f = (float)v;
        if( !isfinite(f) ){
          rc = fly_fail(err, FLY_RANGE, "%s:%lld:%zu: %g does not fit in f32 "
                        "(use --precision f64)", fly_csv_path(csv),
                        (long long)fly_csv_line(csv), src[j] + 1, v);
          goto done;
        }
        v = (double)f;
      }
      row[j] = v;
      /* Welford, in a form that cannot overflow to NaN for values near
       * +-DBL_MAX (v - mean can exceed DBL_MAX; each quotient cannot).  m2
       * may still reach +inf, which is stored as such: the sd is then too
       * large for a double. */
      double cnt = (double)(n + 1), old = cs[j].mean;
      cs[j].mean = old + (v / cnt - old / cnt);
      cs[j].m2 += (v - old) * (v - cs[j].mean);
      if( isnan(cs[j].m2) ) cs[j].m2 = INFINITY;
      if( v < cs[j].min ) cs[j].min = v;
      if( v > cs[j].max ) cs[j].max = v;
    }
    if( (rc = fly_pagewriter_add(pw, row, err)) ){
      fly_err_prefix(err, "%s:%lld", fly_csv_path(csv), (long long)fly_csv_line(csv));
      goto done;
    }
    n++;
    if( (n & 4095) == 0 && fly_progress_due(&pg) ){
      double t = fly_now() - pg.t0, mb = (double)fly_csv_bytes(csv) / 1e6;
      fly_progress_draw(&pg, "ingest %s: %lld rows, %.0f MB, %.0f MB/s", name,
                        (long long)n, mb, t > 0 ? mb / t : 0.0);
    }
  }
  fly_progress_end(&pg);
  if( rc != FLY_DONE ) goto done;
  rc = FLY_OK;
  if( n == 0 ){
    rc = fly_fail(err, FLY_PARSE, "%s: the header has no data rows below it",
                  fly_csv_path(csv));
    goto done;
  }
  if( (rc = fly_pagewriter_finish(pw, err)) ) goto done;

  rc = fly_db_prepare(db, "UPDATE dataset SET n_rows=?2, n_pages=?3, "
                      "raw_bytes=?4, stored_bytes=?5 WHERE id=?1", &st, err);
  if( rc ) goto done;
  sqlite3_bind_int64(st, 1, ds);
  sqlite3_bind_int64(st, 2, n);
  sqlite3_bind_int64(st, 3, fly_pagewriter_pages(pw));
  sqlite3_bind_int64(st, 4, fly_pagewriter_raw_bytes(pw));
  sqlite3_bind_int64(st, 5, fly_pagewriter_stored_bytes(pw));
  if( sqlite3_step(st) != SQLITE_DONE ){
    rc = fly_db_fail(db, err, "finishing the data set");
    goto done;
  }
  rc = insert_columns(db, ds, csv, src, width, o->intercept, cs, n, err);
  *n_out = n;

done:
  sqlite3_finalize(st);
  fly_pagewriter_free(pw);
  fly_free(src);
  fly_free(rec);
  fly_free(row);
  fly_free(cs);
  return rc;
}

/* Remove <db>.ingest-PID.tmp files left by ingests that were killed (a
 * SIGKILL cannot be caught): only those whose process no longer exists. */
static void remove_stale_temps(const char *db_path)
{
  char dir[4096], pat[4200];
  const char *base = base_name(db_path);
  size_t dl = (size_t)(base - db_path);
  if( dl >= sizeof dir ) return;
  memcpy(dir, db_path, dl);
  dir[dl] = 0;
  snprintf(pat, sizeof pat, "%s.ingest-", base);
  DIR *d = opendir(dl ? dir : ".");
  if( !d ) return;
  struct dirent *e;
  size_t pl = strlen(pat);
  while( (e = readdir(d)) ){
    const char *nm = e->d_name;
    if( strncmp(nm, pat, pl) != 0 ) continue;
    char *end;
    long pid = strtol(nm + pl, &end, 10);
    if( pid <= 0 || strcmp(end, ".tmp") != 0 ) continue;
    if( kill((pid_t)pid, 0) == 0 || errno != ESRCH ) continue;  /* alive, or not ours */
    char full[8400];
    snprintf(full, sizeof full, "%s%s", dir, nm);
    unlink(full);
  }
  closedir(d);
}

static fly_rc sync_file(const char *path, fly_err *err)
{
  int fd = open(path, O_RDONLY);
  if( fd < 0 || fsync(fd) != 0 ){
    fly_rc rc = fly_fail(err, FLY_IO, "syncing %s: %s", path, strerror(errno));
    if( fd >= 0 ) close(fd);
    return rc;
  }
  close(fd);
  return FLY_OK;
}

static fly_rc run_ingest(const ingest_opts *o, fly_err *err)
{
  fly_csv *csv = NULL;
  fly_db *db = NULL;
  fly_rc rc;
  char name[256];
  int64_t n = 0;
  struct stat sb;
  int fresh = stat(o->db_path, &sb) != 0 && errno == ENOENT;
  double t0 = fly_now();

  if( o->name ) snprintf(name, sizeof name, "%s", o->name);
  else default_name(o->file, name, sizeof name);

  /* Check the database before reading a possibly huge CSV. */
  if( !fresh ){
    rc = fly_db_open(o->db_path, 0, &db, err);
    if( rc ) goto done;
  }
  rc = fly_csv_open(o->file, &csv, err);
  if( rc ) goto done;

  catch_signals();
  remove_stale_temps(o->db_path);
  if( fresh ){
    /* Build privately, then rename into place. */
    snprintf(g_tmp_path, sizeof g_tmp_path, "%s.ingest-%ld.tmp", o->db_path,
             (long)getpid());
    unlink(g_tmp_path);
    rc = fly_db_open(g_tmp_path, FLY_DB_CREATE | FLY_DB_FAST, &db, err);
    if( rc ) fly_fail(err, rc, "cannot create database %s: %s", o->db_path,
                      errno ? strerror(errno) : "SQLite could not open it");
    if( rc == FLY_OK ) rc = fly_db_begin(db, err);
    if( rc == FLY_OK ) rc = ingest_into(db, o, csv, name, &n, err);
    if( rc == FLY_OK ) rc = fly_db_commit(db, err);
    fly_db_close(db);
    db = NULL;
    if( rc == FLY_OK ) rc = sync_file(g_tmp_path, err);
    /* link() refuses to replace a database created meanwhile by another
     * process; rename() only where the file system has no hard links. */
    if( rc == FLY_OK && link(g_tmp_path, o->db_path) != 0 ){
      if( errno == EPERM || errno == EOPNOTSUPP ){
        if( rename(g_tmp_path, o->db_path) != 0 )
          rc = fly_fail(err, FLY_IO, "renaming %s to %s: %s", g_tmp_path,
                        o->db_path, strerror(errno));
      }else{
        rc = fly_fail(err, FLY_IO, "creating %s: %s", o->db_path, strerror(errno));
      }
    }
    unlink(g_tmp_path);
    g_tmp_path[0] = 0;

  }else{
    rc = fly_db_begin(db, err);
    if( rc == FLY_OK ) rc = ingest_into(db, o, csv, name, &n, err);
    if( rc == FLY_OK ) rc = fly_db_commit(db, err);
    if( rc ) fly_db_rollback(db);
  }
  if( rc == FLY_OK ){
    double t = fly_now() - t0, mb = (double)fly_csv_bytes(csv) / 1e6;
    fprintf(stderr, "ingested %lld rows of %s into data set '%s' of %s "
            "(%.1f MB in %.2f s, %.0f MB/s)\n", (long long)n, fly_csv_path(csv),
            name, o->db_path, mb, t, t > 0 ? mb / t : 0.0);
  }
done:
  fly_db_close(db);
  fly_csv_close(csv);
  return rc;
}

int fly_cmd_ingest(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "target", FLY_OPT_VALUE, "target column name (default: the last column)", 0, 0 },
    { "no-intercept", FLY_OPT_FLAG, "do not add an intercept column", 0, 0 },
    { "page-rows", FLY_OPT_VALUE, "rows per page (default: what fills one SQLite page, "
                                  "16 KiB in a new file: e.g. 92 rows of 22 f64 values)", 0, 0 },
    { "precision", FLY_OPT_VALUE, "f64 (default) or f32", 0, 0 },
    { "name", FLY_OPT_VALUE, "data set name (default: file name without extension)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  ingest_opts o = {0};
  const char *synopsis = "FILE|- [options]";

  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "ingest", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "ingest", synopsis); return 0; }
  if( a.n_pos != 1 ){
    fly_fail(&err, FLY_MISUSE, "expected one CSV file (or - for standard input)");
    return fly_usage_error(&a, "ingest", synopsis, &err);
  }
  o.file = a.pos[0];
  o.db_path = fly_args_str(&a, "db", "flydb.db");
  o.target = fly_args_str(&a, "target", NULL);
  o.name = fly_args_str(&a, "name", NULL);
  o.intercept = !fly_args_set(&a, "no-intercept");
  if( fly_args_int(&a, "page-rows", 0, 1, 1 << 24, &o.page_rows, &err) )
    return fly_usage_error(&a, "ingest", synopsis, &err);
  const char *prec = fly_args_str(&a, "precision", "f64");
  if( strcmp(prec, "f64") == 0 ) o.prec = FLY_PREC_F64;
  else if( strcmp(prec, "f32") == 0 ) o.prec = FLY_PREC_F32;
  else{
    fly_fail(&err, FLY_MISUSE, "--precision: '%s' is not f64 or f32", prec);
    return fly_usage_error(&a, "ingest", synopsis, &err);
  }
  if( o.name && !o.name[0] ){
    fly_fail(&err, FLY_MISUSE, "--name must not be empty");
    return fly_usage_error(&a, "ingest", synopsis, &err);
  }
  int code = fly_report(run_ingest(&o, &err), &err);
  reraise();
  return code;
}
