/*
 * bench_rows.c -- how fast the page store serves random rows and scans.
 *
 *   bench_rows [--rows N] [--width W] [--page-rows P] [--prec 8|4]
 *              [--batch B] [--reps R] [--db PATH] [--keep]
 *
 * Builds a store of N rows x W values (intercept 1.0, W-2 standard-normal
 * features, a +-1 target: random mantissas, so most pages are stored raw)
 * through the page writer, reopens it, and measures with the OS cache warm:
 *   scan   fly_pages_read_page over every page (MB/s of decoded f64 rows),
 *          alone and inside one read transaction (BEGIN ... COMMIT)
 *   cold   fly_pages_read_rows of R batches of B random rows with a 2-page
 *          cache, so every needed page is fetched, verified and decoded
 *   warm   the same with a cache holding the whole table (memcpy per row)
 *   small  batches of 100 rows, cold and warm (the sampler's steady state)
 * Times are medians (and bests) over the repetitions.  The store is deleted unless
 * --keep is given (then it is reused by the next run with the same path).
 * A new file gets flydb's SQLite page size (FLY_DB_NEW_PAGE_BYTES); to
 * measure another, convert a kept file (sqlite3 F "PRAGMA journal_mode=DELETE;
 * PRAGMA page_size=65536; VACUUM") and run again with --keep.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t mix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return ((double)(mix(s) >> 11) + 0.5) / 9007199254740992.0; }

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n)
{
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static int die(const char *what, const fly_err *err)
{
  fprintf(stderr, "bench_rows: %s: %s\n", what, err->msg);
  return 1;
}

static int build(fly_db *db, int64_t N, size_t W, int64_t P, int prec,
                 fly_err *err)
{
  char q[512];
  fly_pagewriter *w = NULL;
  double *row = calloc(W, sizeof *row);
  uint64_t s = 2024;
  double t0 = now();
  int rc = 1;

  if( fly_db_begin(db, err) ) goto done;
  snprintf(q, sizeof q, "INSERT INTO dataset(id, name, source, n_rows, width,"
           " n_features, has_intercept, target_name, page_rows, n_pages, prec,"
           " raw_bytes, stored_bytes) VALUES(1, 'bench', 'bench_rows', %lld, %zu,"
           " %zu, 1, 'y', %lld, 0, %d, 0, 0)", (long long)N, W, W - 1,
           (long long)P, prec);
  if( fly_db_exec(db, q, err) ) goto done;
  if( fly_pagewriter_open(db, FLY_TABLE_DATA, 1, W, P, prec, &w, err) ) goto done;
  for(int64_t r = 0; r < N; r++){
    row[0] = 1.0;
    for(size_t c = 1; c + 1 < W; c++)
      row[c] = sqrt(-2 * log(unif(&s))) * cos(6.283185307179586 * unif(&s));
    row[W - 1] = unif(&s) < 0.5 ? -1.0 : 1.0;
    if( fly_pagewriter_add(w, row, err) ) goto done;
  }
  if( fly_pagewriter_finish(w, err) ) goto done;
  snprintf(q, sizeof q, "UPDATE dataset SET n_pages = %lld, raw_bytes = %lld,"
           " stored_bytes = %lld WHERE id = 1", (long long)fly_pagewriter_pages(w),
           (long long)fly_pagewriter_raw_bytes(w),
           (long long)fly_pagewriter_stored_bytes(w));
  if( fly_db_exec(db, q, err) ) goto done;
  if( fly_db_commit(db, err) ) goto done;
  printf("built %lld rows x %zu in %lld pages: %.1f MB raw, %.1f MB stored, "
         "%.2f s\n", (long long)N, W, (long long)fly_pagewriter_pages(w),
         (double)fly_pagewriter_raw_bytes(w) / 1e6,
         (double)fly_pagewriter_stored_bytes(w) / 1e6, now() - t0);
  rc = 0;
done:
  fly_pagewriter_free(w);
  free(row);
  return rc;
}

/* Microseconds per row over reps batches of b random rows: us[0] median
 * wall time, us[1] best wall time, us[2] median CPU time of this process
 * (less disturbed by other processes on a shared machine). */
static int time_batches(fly_pages *p, int64_t N, size_t b, int reps,
                        int64_t *ids, double *out, uint64_t *s, double us[3],
                        fly_err *err)
{
  double *t = calloc((size_t)reps, sizeof *t), *c = calloc((size_t)reps, sizeof *c);
  for(int r = 0; r < reps; r++){
    for(size_t i = 0; i < b; i++) ids[i] = (int64_t)(mix(s) % (uint64_t)N);
    double t0 = now(), c0 = cpu_now();
    if( fly_pages_read_rows(p, ids, b, out, err) ){ free(t); free(c); return 1; }
    t[r] = (now() - t0) * 1e6 / (double)b;
    c[r] = (cpu_now() - c0) * 1e6 / (double)b;
  }
  us[0] = median(t, reps);
  us[1] = t[0];                       /* sorted by median() */
  us[2] = median(c, reps);
  free(t);
  free(c);
  return 0;
}

int main(int argc, char **argv)
{
  int64_t N = 1000000, P = 4096;
  size_t W = 21, B = 10000;
  int prec = 8, reps = 15, keep = 0;
  char path[256] = "";
  fly_err err = {0};
  fly_db *db = NULL;
  fly_pages *p = NULL;
  fly_pages_stats st;

  for(int i = 1; i < argc; i++){
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if( !strcmp(a, "--keep") ){ keep = 1; continue; }
    if( !v ){ fprintf(stderr, "bench_rows: %s needs a value\n", a); return 2; }
    if( !strcmp(a, "--rows") ) N = atoll(v);
    else if( !strcmp(a, "--width") ) W = (size_t)atoll(v);
    else if( !strcmp(a, "--page-rows") ) P = atoll(v);
    else if( !strcmp(a, "--prec") ) prec = atoi(v);
    else if( !strcmp(a, "--batch") ) B = (size_t)atoll(v);
    else if( !strcmp(a, "--reps") ) reps = atoi(v);
    else if( !strcmp(a, "--db") ) snprintf(path, sizeof path, "%s", v);
    else { fprintf(stderr, "bench_rows: unknown option %s\n", a); return 2; }
    i++;
  }
  if( N < 1 || W < 2 || P < 1 || B < 1 || reps < 1 || (prec != 4 && prec != 8) ){
    fprintf(stderr, "bench_rows: bad arguments\n");
    return 2;
  }
  if( !path[0] )
    snprintf(path, sizeof path, "/tmp/flydb_bench_%lld_%zu_%lld_%d.db",
             (long long)N, W, (long long)P, prec);

  /* Build unless the file already holds the data set (--keep). */
  if( fly_db_open(path, FLY_DB_CREATE | FLY_DB_FAST, &db, &err) )
    return die("create", &err);
  sqlite3_stmt *q = NULL;
  int have = 0;
  if( fly_db_prepare(db, "SELECT count(*) FROM dataset", &q, &err) )
    return die("create", &err);
  if( sqlite3_step(q) == SQLITE_ROW ) have = sqlite3_column_int(q, 0) > 0;
  sqlite3_finalize(q);
  if( !have && build(db, N, W, P, prec, &err) ) return die("build", &err);
  fly_db_close(db);
  db = NULL;
  if( fly_db_open(path, 0, &db, &err) ) return die("open", &err);

  int64_t *ids = malloc((B > 100 ? B : 100) * sizeof *ids);
  double *out = malloc((B > 100 ? B : 100) * W * sizeof *out);
  double *page = malloc((size_t)P * W * sizeof *page);
  uint64_t s = 99;
  double t[7], scan_mbs[2], scan_txn[2], cold[3], warm[3], cold100[3], warm100[3];

  /* scans: warm the OS cache, then time */
  if( fly_pages_open(db, FLY_TABLE_DATA, 1, 0, &p, &err) ) return die("pages", &err);
  fly_pages_info info = *fly_pages_info_of(p);
  const fly_pages_info *in = &info;
  for(int r = 0; r < 7; r++){
    double t0 = now();
    for(int64_t k = 0; k < in->n_pages; k++)
      if( fly_pages_read_page(p, k, page, NULL, &err) ) return die("scan", &err);
    t[r] = now() - t0;
  }
  scan_mbs[0] = (double)in->n_rows * (double)W * 8 / median(t, 7) / 1e6;
  scan_mbs[1] = (double)in->n_rows * (double)W * 8 / t[0] / 1e6;
  /* the same inside one read transaction: no lock round trip per page */
  for(int r = 0; r < 7; r++){
    double t0 = now();
    if( fly_db_exec(db, "BEGIN", &err) ) return die("begin", &err);
    for(int64_t k = 0; k < in->n_pages; k++)
      if( fly_pages_read_page(p, k, page, NULL, &err) ) return die("scan", &err);
    if( fly_db_exec(db, "COMMIT", &err) ) return die("commit", &err);
    t[r] = now() - t0;
  }
  scan_txn[0] = (double)in->n_rows * (double)W * 8 / median(t, 7) / 1e6;
  scan_txn[1] = (double)in->n_rows * (double)W * 8 / t[0] / 1e6;

  if( time_batches(p, N, B, reps, ids, out, &s, cold, &err) ) return die("cold", &err);
  if( time_batches(p, N, 100, reps * 20, ids, out, &s, cold100, &err) )
    return die("cold100", &err);
  fly_pages_stats_get(p, &st);
  double dec_ms = st.decode_seconds * 1e3 / (double)st.page_reads;
  fly_pages_close(p);

  size_t all = (size_t)in->n_pages * (size_t)P * W * sizeof(double);
  if( fly_pages_open(db, FLY_TABLE_DATA, 1, all, &p, &err) ) return die("pages", &err);
  for(int64_t k = 0; k < in->n_pages; k++){
    const double *rows;
    if( fly_pages_get(p, k, &rows, NULL, &err) ) return die("warm-up", &err);
  }
  if( time_batches(p, N, B, reps, ids, out, &s, warm, &err) ) return die("warm", &err);
  if( time_batches(p, N, 100, reps * 20, ids, out, &s, warm100, &err) )
    return die("warm100", &err);
  fly_pages_close(p);

  printf("page_rows %lld (%lld pages, %.0f KB decoded a page), prec %d; "
         "median (best; median CPU time)\n", (long long)P, (long long)in->n_pages,
         (double)P * (double)W * 8 / 1024, prec);
  printf("  scan          %6.0f (%6.0f) MB/s   in a transaction %6.0f (%6.0f) MB/s\n",
         scan_mbs[0], scan_mbs[1], scan_txn[0], scan_txn[1]);
  printf("  fetch+verify+decode %.3f ms a page\n", dec_ms);
  printf("  %6zu rows  cold %7.3f (%7.3f; cpu %7.3f) us/row   warm %6.3f (%6.3f; cpu %6.3f)\n",
         B, cold[0], cold[1], cold[2], warm[0], warm[1], warm[2]);
  printf("  %6d rows  cold %7.3f (%7.3f; cpu %7.3f) us/row   warm %6.3f (%6.3f; cpu %6.3f)\n",
         100, cold100[0], cold100[1], cold100[2], warm100[0], warm100[1], warm100[2]);

  free(ids);
  free(out);
  free(page);
  fly_db_close(db);
  if( !keep ) unlink(path);
  return 0;
}
