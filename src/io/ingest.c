/*
 * ingest.c -- a CSV stream into a new data set (see ingest.h).
 *
 * The row loop: read a record, build the stored row ([1] features...
 * target, each value rounded to the stored precision), add it to the
 * column statistics (store/dataset.h) and to the page writer, which writes
 * a full page at a time.  Only then are the dataset row's counts and the
 * column table written (fly_dataset_finish), so a data set is complete or
 * absent.  Cost: one strtod per cell, one LZ4 compression per page.
 *
 * A new database is built privately and published with link(), which
 * refuses to replace a database another process created meanwhile; the
 * file is fsynced first, so a crash after the link cannot leave a
 * published but unwritten file.  rename() is the fallback only where the
 * file system has no hard links.
 */
#include "io/ingest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/codec.h"
#include "store/dataset.h"
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

void fly_ingest_opts_default(fly_ingest_opts *o)
{
  memset(o, 0, sizeof *o);
  o->intercept = 1;
  o->prec = FLY_PREC_F64;
}

static const char *base_name(const char *path)
{
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Default data set name: the file name without directory and extension. */
static void default_name(const char *path, char *out, size_t cap)
{
  if( strcmp(path, "-") == 0 || strcmp(path, "<stdin>") == 0 ){
    snprintf(out, cap, "stdin");
    return;
  }
  snprintf(out, cap, "%s", base_name(path));
  char *dot = strchr(out, '.');
  if( dot && dot != out ) *dot = 0;
}

static int interrupted(const fly_ingest_opts *o)
{
  return o->interrupt && *o->interrupt;
}

fly_rc fly_ingest_csv(fly_db *db, fly_csv *csv, const fly_ingest_opts *o,
                      fly_ingest_result *res, fly_err *err)
{
  fly_rc rc = FLY_OK;
  size_t ncsv = fly_csv_ncols(csv), tcol = ncsv - 1, width = 0, k;
  size_t *src = NULL;          /* stored column j <- CSV column src[j] */
  double *rec = NULL, *row = NULL;
  fly_dataset_column *cols = NULL;
  fly_dataset_stats *stats = NULL;
  fly_pagewriter *pw = NULL;
  int64_t ds = 0, n = 0, page_rows = o->page_rows;
  char name[256];

  if( o->name ) snprintf(name, sizeof name, "%s", o->name);
  else default_name(fly_csv_path(csv), name, sizeof name);
  if( o->prec != FLY_PREC_F64 && o->prec != FLY_PREC_F32 )
    return fly_fail(err, FLY_MISUSE, "ingest: precision %d is not f64 or f32",
                    o->prec);
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
  cols = fly_alloc_array(width, sizeof *cols);
  if( !src || !rec || !row || !cols ){ rc = fly_fail(err, FLY_NOMEM, "ingest"); goto done; }
  if( (rc = fly_dataset_stats_new(width, &stats, err)) ) goto done;
  k = 0;
  if( o->intercept ) src[k++] = (size_t)-1;
  for(size_t j = 0; j < ncsv; j++) if( j != tcol ) src[k++] = j;
  src[k++] = tcol;
  for(size_t j = 0; j < width; j++){
    int is_icpt = src[j] == (size_t)-1;
    cols[j].idx = (int64_t)j;
    cols[j].name = is_icpt ? "(Intercept)" : fly_csv_colname(csv, src[j]);
    cols[j].role = is_icpt ? "intercept" : j == width - 1 ? "target" : "feature";
    cols[j].csv_col = is_icpt ? 0 : (int64_t)src[j] + 1;
  }

  fly_dataset_spec spec = { name, fly_csv_path(csv), fly_csv_colname(csv, tcol),
                            (int64_t)width, o->intercept, page_rows, o->prec };
  if( (rc = fly_dataset_create(db, &spec, &ds, err)) ) goto done;
  rc = fly_pagewriter_open(db, FLY_TABLE_DATA, ds, width, page_rows, o->prec,
                           &pw, err);
  if( rc ) goto done;

  while( (rc = fly_csv_next(csv, rec, err)) == FLY_ROW || interrupted(o) ){
    if( interrupted(o) ){
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
    }
    fly_dataset_stats_add(stats, row, 1);
    if( (rc = fly_pagewriter_add(pw, row, err)) ){
      fly_err_prefix(err, "%s:%lld", fly_csv_path(csv), (long long)fly_csv_line(csv));
      goto done;
    }
    n++;
    if( (n & 4095) == 0 && o->progress )
      o->progress(o->progress_ctx, name, n, fly_csv_bytes(csv));
  }
  if( rc != FLY_DONE ) goto done;
  rc = FLY_OK;
  if( n == 0 ){
    rc = fly_fail(err, FLY_PARSE, "%s: the header has no data rows below it",
                  fly_csv_path(csv));
    goto done;
  }
  if( (rc = fly_pagewriter_finish(pw, err)) ) goto done;
  rc = fly_dataset_finish(db, ds, fly_pagewriter_pages(pw),
                          fly_pagewriter_raw_bytes(pw),
                          fly_pagewriter_stored_bytes(pw), cols, stats, err);
  if( rc == FLY_OK && res ){
    res->dataset_id = ds;
    res->n_rows = n;
    res->bytes_read = fly_csv_bytes(csv);
    snprintf(res->name, sizeof res->name, "%s", name);
  }

done:
  fly_pagewriter_free(pw);
  fly_dataset_stats_free(stats);
  fly_free(src);
  fly_free(rec);
  fly_free(row);
  fly_free(cols);
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

/* Build the new database db_path privately from csv, then publish it. */
static fly_rc ingest_new(const char *db_path, fly_csv *csv,
                         const fly_ingest_opts *o, fly_ingest_result *res,
                         fly_err *err)
{
  char tmp[4200];
  fly_db *db = NULL;
  fly_rc rc;

  snprintf(tmp, sizeof tmp, "%s.ingest-%ld.tmp", db_path, (long)getpid());
  unlink(tmp);
  rc = fly_db_open(tmp, FLY_DB_CREATE | FLY_DB_FAST, &db, err);
  if( rc ) fly_fail(err, rc, "cannot create database %s: %s", db_path,
                    errno ? strerror(errno) : "SQLite could not open it");
  if( rc == FLY_OK ) rc = fly_db_begin(db, err);
  if( rc == FLY_OK ) rc = fly_ingest_csv(db, csv, o, res, err);
  if( rc == FLY_OK ) rc = fly_db_commit(db, err);
  fly_db_close(db);
  if( rc == FLY_OK ) rc = sync_file(tmp, err);
  if( rc == FLY_OK && link(tmp, db_path) != 0 ){
    if( errno == EPERM || errno == EOPNOTSUPP ){
      if( rename(tmp, db_path) != 0 )
        rc = fly_fail(err, FLY_IO, "renaming %s to %s: %s", tmp, db_path,
                      strerror(errno));
    }else{
      rc = fly_fail(err, FLY_IO, "creating %s: %s", db_path, strerror(errno));
    }
  }
  unlink(tmp);
  return rc;
}

fly_rc fly_ingest(const char *db_path, FILE *in, const char *src_name,
                  const fly_ingest_opts *o, fly_ingest_result *res,
                  fly_err *err)
{
  fly_csv *csv = NULL;
  fly_db *db = NULL;
  fly_ingest_opts dflt, oo;
  fly_rc rc;
  struct stat sb;
  int fresh;

  if( !db_path || !src_name )
    return fly_fail(err, FLY_MISUSE, "fly_ingest: NULL argument");
  if( !o ){ fly_ingest_opts_default(&dflt); o = &dflt; }
  /* The default name comes from the source as given ("-": "stdin"). */
  oo = *o;
  char name[256];
  if( !oo.name ){
    default_name(src_name, name, sizeof name);
    oo.name = name;
  }
  if( !oo.name[0] ) return fly_fail(err, FLY_MISUSE, "the data set name must not be empty");
  fresh = stat(db_path, &sb) != 0 && errno == ENOENT;

  /* Check the database before reading a possibly huge CSV. */
  if( !fresh && (rc = fly_db_open(db_path, 0, &db, err)) ) goto done;
  rc = in ? fly_csv_open_stream(in, src_name, &csv, err)
          : fly_csv_open(src_name, &csv, err);
  if( rc ) goto done;

  remove_stale_temps(db_path);
  if( fresh ){
    rc = ingest_new(db_path, csv, &oo, res, err);
  }else{
    rc = fly_db_begin(db, err);
    if( rc == FLY_OK ) rc = fly_ingest_csv(db, csv, &oo, res, err);
    if( rc == FLY_OK ) rc = fly_db_commit(db, err);
    if( rc ) fly_db_rollback(db);
  }
done:
  fly_db_close(db);
  fly_csv_close(csv);
  return rc;
}
