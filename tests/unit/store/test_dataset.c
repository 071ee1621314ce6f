/*
 * test_dataset.c -- the data-set module and the ingest library: a CSV
 * stream (fmemopen) into a new database and into an existing one, the
 * metadata and column table read back, lookup by name, the statistics
 * recomputed from the decoded pages bit for bit, and the failures that
 * must leave nothing behind (a bad cell, a duplicate name, an interrupt).
 * Then fly_dataset_check: clean, and one problem for a changed mean.
 */
#include "io/ingest.h"
#include "store/dataset.h"

#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/codec.h"
#include "util/mem.h"

#include "tap.h"

enum { N = 5000 };

static char dir[64], path[128];
static char *csv;                 /* "a,b,y\n" then N rows */
static size_t csv_len;

static void make_csv(void)
{
  size_t cap = 64 + (size_t)N * 64;
  csv = malloc(cap);
  csv_len = (size_t)snprintf(csv, cap, "a,b,y\n");
  for(int i = 0; i < N; i++)
    csv_len += (size_t)snprintf(csv + csv_len, cap - csv_len, "%.6g,%d,%d\n",
                                sin(i * 0.37) * 1e3, i % 7 - 3, i % 2);
}

static int64_t n_calls;
static void progress(void *ctx, const char *name, int64_t n, uint64_t bytes)
{
  (void)ctx; (void)name; (void)bytes;
  if( n > 0 ) n_calls++;
}

static fly_rc ingest_text(const char *text, size_t len, const char *name,
                          int prec, const volatile sig_atomic_t *stop,
                          fly_ingest_result *res, fly_err *err)
{
  fly_ingest_opts o;
  FILE *f = fmemopen((void *)text, len, "r");
  fly_ingest_opts_default(&o);
  o.name = name;
  o.prec = prec;
  o.page_rows = 64;
  o.interrupt = stop;
  o.progress = progress;
  fly_rc rc = fly_ingest(path, f, "mem.csv", &o, res, err);
  fclose(f);
  return rc;
}

static int exists(const char *p)
{
  struct stat sb;
  return stat(p, &sb) == 0;
}

static void test_ingest_and_load(void)
{
  fly_ingest_result res;
  fly_err err = {0};
  fly_rc rc;

  /* A bad row into a new database: no file. */
  const char *bad = "a,b,y\n1,2,0\n3,1\n";
  rc = ingest_text(bad, strlen(bad), "bad", FLY_PREC_F64, NULL, &res, &err);
  TAP_OK(rc == FLY_PARSE && strstr(err.msg, "mem.csv:3:3"),
         "a bad row: FLY_PARSE naming file:line:column (%s)", err.msg);
  TAP_OK(!exists(path), "a failed ingest does not create the database");

  rc = ingest_text(csv, csv_len, NULL, FLY_PREC_F64, NULL, &res, &err);
  TAP_OK(rc == FLY_OK && res.n_rows == N && strcmp(res.name, "mem") == 0,
         "ingest from a stream: %lld rows into '%s' (%s)", (long long)res.n_rows,
         res.name, rc ? err.msg : "ok");
  TAP_OK(n_calls == N / 4096, "progress called every 4096 rows (%lld)",
         (long long)n_calls);

  rc = ingest_text(csv, csv_len, "mem", FLY_PREC_F64, NULL, &res, &err);
  TAP_OK(rc == FLY_MISUSE && strstr(err.msg, "already has a data set named 'mem'"),
         "a duplicate name: FLY_MISUSE (%s)", err.msg);
  volatile sig_atomic_t stop = 1;
  rc = ingest_text(csv, csv_len, "stopped", FLY_PREC_F32, &stop, &res, &err);
  TAP_OK(rc == FLY_IO && strstr(err.msg, "interrupted at line"),
         "an interrupt: FLY_IO (%s)", err.msg);
  rc = ingest_text(csv, csv_len, "m32", FLY_PREC_F32, NULL, &res, &err);
  TAP_OK(rc == FLY_OK, "a second data set, f32, into the existing file");

  fly_db *db = NULL;
  int64_t id = 0, *ids = NULL;
  size_t n_ids = 0;
  rc = fly_db_open(path, 0, &db, &err);
  TAP_OK(rc == FLY_OK, "open");
  if( rc ) return;
  rc = fly_dataset_find(db, NULL, &id, &err);
  TAP_OK(rc == FLY_MISUSE && strstr(err.msg, "'mem', 'm32'"),
         "find without a name among two: FLY_MISUSE listing them (%s)", err.msg);
  rc = fly_dataset_find(db, "stopped", &id, &err);
  TAP_OK(rc == FLY_RANGE, "the interrupted data set is not there");
  rc = fly_dataset_ids(db, &ids, &n_ids, &err);
  TAP_OK(rc == FLY_OK && n_ids == 2, "two data sets listed");
  fly_free(ids);
  rc = fly_dataset_find(db, "m32", &id, &err);
  TAP_OK(rc == FLY_OK && id == 2, "find by name");

  fly_dataset *ds = NULL;
  rc = fly_dataset_load(db, id, &ds, &err);
  TAP_OK(rc == FLY_OK && ds->n_rows == N && ds->width == 4 && ds->n_features == 3
         && ds->has_intercept && ds->prec == FLY_PREC_F32 && ds->page_rows == 64
         && ds->n_pages == (N + 63) / 64 && ds->n_cols == 4
         && strcmp(ds->source, "mem.csv") == 0 && strcmp(ds->target_name, "y") == 0,
         "metadata read back");
  if( rc ){ fly_db_close(db); return; }
  const fly_dataset_column *t = fly_dataset_target(ds);
  const fly_dataset_column *b = fly_dataset_column_find(ds, "b");
  TAP_OK(t && t->idx == 3 && strcmp(t->name, "y") == 0 && t->csv_col == 3
         && t->min == 0 && t->max == 1, "the target column");
  TAP_OK(b && b->idx == 2 && strcmp(b->role, "feature") == 0 && b->min == -3
         && b->max == 3 && b->n == N, "lookup by name");
  TAP_OK(strcmp(ds->cols[0].role, "intercept") == 0 && ds->cols[0].csv_col == 0
         && ds->cols[0].mean == 1 && ds->cols[0].sd == 0, "the intercept column");
  TAP_OK(fly_dataset_column_find(ds, "nope") == NULL, "an unknown name: NULL");

  /* The statistics recomputed from the decoded pages: the stored bits. */
  fly_pages *p = NULL;
  fly_dataset_stats *st = NULL;
  double *rows = malloc(64 * 4 * sizeof *rows);
  int same = 1;
  rc = fly_pages_open(db, FLY_TABLE_DATA, id, 0, &p, &err);
  if( rc == FLY_OK ) rc = fly_dataset_stats_new(4, &st, &err);
  for(int64_t k = 0; rc == FLY_OK && k < ds->n_pages; k++){
    size_t nr;
    if( (rc = fly_pages_read_page(p, k, rows, &nr, &err)) == FLY_OK )
      fly_dataset_stats_add(st, rows, nr);
  }
  for(size_t j = 0; rc == FLY_OK && j < 4; j++){
    fly_dataset_column c;
    fly_dataset_stats_get(st, j, &c);
    same &= c.n == N && memcmp(&c.mean, &ds->cols[j].mean, 8) == 0
            && memcmp(&c.sd, &ds->cols[j].sd, 8) == 0
            && c.min == ds->cols[j].min && c.max == ds->cols[j].max;
  }
  TAP_OK(rc == FLY_OK && same && fly_dataset_stats_rows(st) == N,
         "statistics recomputed from the pages equal the stored ones bit for bit");
  free(rows);
  fly_dataset_stats_free(st);
  fly_pages_close(p);
  fly_dataset_free(ds);
  fly_db_close(db);
}

typedef struct lines { int n; char last[512]; } lines;

static void collect(void *ctx, const char *scope, const char *what)
{
  lines *l = ctx;
  l->n++;
  snprintf(l->last, sizeof l->last, "%s: %s", scope, what);
}

static int check_problems(lines *l)
{
  fly_db *db = NULL;
  fly_checker ck;
  fly_dataset_checked *ds = NULL;
  size_t n = 0;
  memset(&ck, 0, sizeof ck);
  memset(l, 0, sizeof *l);
  ck.report = collect;
  ck.ctx = l;
  if( fly_db_open(path, 0, &db, NULL) ) return -1;
  fly_dataset_check(db, &ck, &ds, &n, NULL);
  int sound = n == 2 && ds[0].sound && ds[1].sound && ds[0].pg && ds[1].pg;
  fly_dataset_checked_free(ds, n);
  fly_db_close(db);
  return sound ? 0 : 1;
}

static void test_check(void)
{
  lines l;
  int r = check_problems(&l);
  TAP_OK(r == 0 && l.n == 0, "check: two sound data sets, no problems (%s)", l.last);
  fly_db *db = NULL;
  if( fly_db_open(path, 0, &db, NULL) ) return;
  fly_db_exec(db, "UPDATE dataset_column SET mean = mean * (1 + 1e-6)"
                  " WHERE dataset_id = 1 AND idx = 1", NULL);
  fly_db_close(db);
  check_problems(&l);
  TAP_OK(l.n == 1 && strstr(l.last, "data set 'mem' (id 1): column 1 ('a'): mean"),
         "check: a changed mean is one problem (%s)", l.last);
}

/* The statistics of every width from 1 to 13 columns (whole vectors and
 * partial ones) over values with NaNs, infinities and +-DBL_MAX, against
 * the scalar Welford update they are defined by, bit for bit: the vector
 * width and the CPU the update was compiled for must not show. */
static void test_stats_lanes(void)
{
  enum { W = 13, R = 500 };
  static const double odd[] = { NAN, INFINITY, -INFINITY, DBL_MAX, -DBL_MAX,
                                0.0, -0.0, 5e-324 };
  double *rows = malloc(R * W * sizeof *rows);
  int same = 1;
  unsigned s = 12345;
  for(size_t w = 1; w <= W && rows; w++){
    double cnt[W] = {0}, miss[W] = {0}, mean[W] = {0}, m2[W] = {0}, mn[W], mx[W];
    fly_dataset_stats *st = NULL;
    for(size_t j = 0; j < w; j++){ mn[j] = INFINITY; mx[j] = -INFINITY; }
    for(size_t i = 0; i < R * w; i++){
      s = s * 1103515245u + 12345u;
      rows[i] = (s >> 28) == 0 ? odd[(s >> 8) % 8]
              : ((double)(s >> 8) / 16777216.0 - 0.5) * 1e3;
    }
    if( fly_dataset_stats_new(w, &st, NULL) ){ same = 0; break; }
    fly_dataset_stats_add(st, rows, R / 2);
    fly_dataset_stats_add(st, rows + R / 2 * w, R - R / 2);
    for(size_t i = 0; i < R; i++)
      for(size_t j = 0; j < w; j++){
        double v = rows[i * w + j];
        if( v == v ){
          double c = cnt[j] + 1.0, old = mean[j];
          double nmean = old + (v / c - old / c);
          double nm2 = m2[j] + (v - old) * (v - nmean);
          cnt[j] = c;
          mean[j] = nmean;
          m2[j] = nm2 == nm2 ? nm2 : INFINITY;
        }else miss[j] += 1.0;
        if( v < mn[j] ) mn[j] = v;
        if( v > mx[j] ) mx[j] = v;
      }
    for(size_t j = 0; j < w; j++){
      fly_dataset_column c;
      double sd = cnt[j] > 1 ? sqrt(m2[j] / (cnt[j] - 1.0)) : 0.0;
      fly_dataset_stats_get(st, j, &c);
      same &= c.n == (int64_t)cnt[j] && c.n_missing == (int64_t)miss[j]
              && memcmp(&c.mean, &mean[j], 8) == 0 && memcmp(&c.sd, &sd, 8) == 0
              && memcmp(&c.min, &mn[j], 8) == 0 && memcmp(&c.max, &mx[j], 8) == 0;
    }
    same &= fly_dataset_stats_rows(st) == R;
    fly_dataset_stats_free(st);
  }
  TAP_OK(rows && same, "column statistics of 1 to %d columns equal the scalar "
         "update's bit for bit", (int)W);
  free(rows);
}

int main(void)
{
  snprintf(dir, sizeof dir, "/tmp/fly_test_dataset_XXXXXX");
  if( !mkdtemp(dir) ){ perror("mkdtemp"); return 1; }
  snprintf(path, sizeof path, "%s/t.db", dir);
  make_csv();
  test_ingest_and_load();
  test_check();
  test_stats_lanes();
  unlink(path);
  rmdir(dir);
  free(csv);
  return tap_done();
}
