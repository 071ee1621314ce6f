/*
 * test_buckets.c -- the bucket index of gibbs thinning (flymc/buckets.h)
 * groups the rows as buckets.c says it does.
 *
 * Bound pages with the logistic layout (xi, then the gap key) are written
 * directly (f32, as tune writes them), with keys of 0 and from 2^-140 to
 * 2^126 (log-uniform over 265 doublings: 1,060 levels, so the 512 kept
 * clamp the lowest keys into level 0) and |xi| of 0, 1e-4 .. 1e6 and a few
 * infinities, over 29 pages.  Against an
 * independent computation of each row's cell (level floor(4 log2 key)
 * minus the lowest level kept, clamped to [0, 512); xi bin 0 below 1/16,
 * else 1 + floor(4 log2 16|xi|), non-finite in the last bin):
 *   the records hold each row once, each bucket's rows in row order;
 *   two rows share a bucket iff they share a cell, and buckets follow the
 *   cells' order;
 *   each bucket's key is the exact largest key of its rows, xi_lo / xi_hi
 *   the exact smallest and largest |xi| (+inf for a non-finite one);
 *   the records hold every row's xi as stored (f32), and each tail is at
 *   the position the build gave for its row.
 * The index is built in chunks by two workspaces in scrambled orders, and
 * in one (fly_buckets_build): the same index.  A negative key is refused
 * with FLY_NUMERIC, naming the row, by the one-thread and the threaded
 * build; bound pages that change between the two scans with FLY_CORRUPT.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flymc/buckets.h"
#include "flymc/index.h"
#include "models/model.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "tap.h"
#include "store_fixture.h"
#include "logistic_fixture.h"
#include "util/rng.h"

#define N_ROWS 20000
#define PAGE   700

static char path[256];
static double key[N_ROWS], xi[N_ROWS];

/* A bound set of the logistic layout (xi, key) for data set ds. */
static int write_bounds(fly_db *db, int64_t ds, int64_t id, const char *tuning)
{
  fly_err err = {0};
  fly_pagewriter *w = NULL;
  char sql[400];
  int ok = fly_db_begin(db, &err) == FLY_OK;
  snprintf(sql, sizeof sql, "INSERT INTO bound_set(id, dataset_id, model, model_opts, "
           "tuning, status, n_params, width, page_rows) VALUES(%lld, %lld, 'logistic', '', "
           "'%s', 'building', 2, 2, %d)", (long long)id, (long long)ds, tuning, PAGE);
  ok = ok && fly_db_exec(db, sql, &err) == FLY_OK;
  ok = ok && fly_pagewriter_open(db, FLY_TABLE_BOUND, id, 2, PAGE, FLY_PREC_F32, &w,
                                 &err) == FLY_OK;
  for(size_t n = 0; ok && n < N_ROWS; n++){
    double row[2] = { xi[n], key[n] };
    ok = fly_pagewriter_add(w, row, &err) == FLY_OK;
  }
  ok = ok && fly_pagewriter_finish(w, &err) == FLY_OK;
  if( ok ){
    snprintf(sql, sizeof sql, "UPDATE bound_set SET n_pages = %lld, status = 'ready' "
             "WHERE id = %lld", (long long)fly_pagewriter_pages(w), (long long)id);
    ok = fly_db_exec(db, sql, &err) == FLY_OK;
  }
  fly_pagewriter_free(w);
  ok = ok && fly_db_commit(db, &err) == FLY_OK;
  if( !ok ) fprintf(stderr, "# bound set %lld: %s\n", (long long)id, err.msg);
  return ok;
}

/* 7 bytes naming row n (a record tail in the test). */
static void name_row(uint8_t *t, int64_t n)
{
  for(int i = 0; i < 7; i++) t[i] = (uint8_t)((uint64_t)n * 0x9E3779B97F4A7C15u >> (8 * i));
}

/* The cell of a key and |xi| as buckets.c documents it, from scratch. */
static int64_t level_of(double k) { return (int64_t)floor(4.0 * log2(k)); }
static int64_t bin_of(double v)
{
  if( !isfinite(v) ) return 255;
  if( v < 0.0625 ) return 0;
  double g = 1.0 + floor(4.0 * log2(16.0 * v));
  return g < 255 ? (int64_t)g : 255;
}

/* fly_buckets_quarter_log2 against floor(4 log2 x): every 251st f32 bit
 * pattern of positive finite floats (keys and xi are stored as f32), a
 * million random doubles over 2^-1070 .. 2^1000, and the doubles either
 * side of each quarter power 2^(j/4) 2^e, where the answer is known
 * exactly (the constants' neighbours). */
static void test_quarter_log2(void)
{
  long bad = 0, n = 0;
  for(uint32_t u = 1; u < 0x7f800000u; u += 251){
    float f;
    memcpy(&f, &u, sizeof f);
    double x = f;
    bad += fly_buckets_quarter_log2(x) != (int64_t)floor(4.0 * log2(x));
    n++;
  }
  fly_rng rng;
  fly_rng_seed(&rng, 5, 0);
  for(int i = 0; i < 1000000; i++){
    double x = ldexp(1.0 + fly_rng_uniform(&rng), (int)(fly_rng_uniform(&rng) * 2070) - 1070);
    if( !(x > 0) ) continue;
    bad += fly_buckets_quarter_log2(x) != (int64_t)floor(4.0 * log2(x));
    n++;
  }
  TAP_OK(bad == 0, "quarter_log2 = floor(4 log2 x) on %ld f32 and random doubles (%ld differ)",
         n, bad);
  static const double up[3] = { 0x1.306fe0a31b716p+0, 0x1.6a09e667f3bcdp+0,
                                0x1.ae89f995ad3aep+0 };
  int edges = 1;
  for(int e = -20; e <= 20; e++)
    for(int j = 0; j < 3; j++){
      double above = ldexp(up[j], e), below = nextafter(above, 0);
      edges &= fly_buckets_quarter_log2(above) == 4 * e + j + 1 &&
               fly_buckets_quarter_log2(below) == 4 * e + j &&
               fly_buckets_quarter_log2(ldexp(1.0, e)) == 4 * e &&
               fly_buckets_quarter_log2(nextafter(ldexp(1.0, e), 0)) == 4 * e - 1;
    }
  TAP_OK(edges, "quarter_log2 at the quarter powers' neighbours and the powers of 2");
}

int main(void)
{
  test_quarter_log2();
  static int64_t cell[N_ROWS], seen[N_ROWS];
  static double Xd[N_ROWS * 2];
  fly_db *db = NULL;
  fly_err err = {0};
  fly_rng rng;
  fly_model m;
  fly_buckets b = {0};
  fly_buckets_ws *ws[2] = { NULL, NULL };
  fly_pages *bp = NULL;
  int64_t ds = 0;
  fly_rc rc;

  rc = fx_create_db("buckets", path, sizeof path, &db, &err);
  if( !TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg) ) return tap_done();

  fly_rng_seed(&rng, 77, 0);
  for(size_t n = 0; n < N_ROWS; n++){
    /* stored as f32: draw the values as floats so the test sees them exactly */
    double e = -140.0 + 265.0 * fly_rng_uniform(&rng);        /* 2^-140 .. 2^125 */
    key[n] = n % 53 == 0 ? 0.0 : (double)(float)ldexp(1.0 + fly_rng_uniform(&rng), (int)e);
    double v = n % 101 == 0 ? INFINITY : n % 37 == 0 ? 0.0
             : pow(10.0, -4.0 + 10.0 * fly_rng_uniform(&rng));
    xi[n] = (double)(float)((n % 2 ? -1 : 1) * v);
    Xd[2 * n] = 1;
    Xd[2 * n + 1] = (double)(n % 2);
  }
  if( !TAP_OK(fx_store_rows(db, "d", Xd, N_ROWS, 2, PAGE, &ds) && write_bounds(db, ds, 1, "map"),
              "a data set and a bound set of %d rows in pages of %d", N_ROWS, PAGE) )
    goto out;
  fx_logistic_model(&m, 1, 1);
  /* in parts, as flydb index.c builds it, but in a scrambled order: chunks
   * of 300 rows (not whole pages of 700) counted and placed by two
   * workspaces taking turns, in orders unrelated to each other; each
   * placed chunk given 7-byte tails naming its rows */
  rc = fly_pages_open(db, FLY_TABLE_BOUND, 1, 0, &bp, &err);
  if( rc == FLY_OK ) rc = fly_buckets_init(fly_pages_info_of(bp), &m, 7, 300, &b, &err);
  if( rc == FLY_OK ) rc = fly_buckets_ws_new(&b, &ws[0], &err);
  if( rc == FLY_OK ) rc = fly_buckets_ws_new(&b, &ws[1], &err);
  int64_t nc = b.n_chunks;
  for(int64_t i = 0; rc == FLY_OK && i < nc; i++)
    rc = fly_buckets_count(bp, &b, ws[i % 2], (i * 37 + 5) % nc, &err);
  if( rc == FLY_OK ) rc = fly_buckets_layout(&b, &err);
  for(int64_t i = 0; rc == FLY_OK && i < nc; i++){
    static uint8_t tails[300 * 7];
    int64_t c = nc - 1 - (i * 11) % nc;
    int64_t r0 = c * b.chunk_rows, n = N_ROWS - r0 < b.chunk_rows ? N_ROWS - r0 : b.chunk_rows;
    for(int64_t r = 0; r < n; r++) name_row(tails + 7 * r, r0 + r);
    rc = fly_buckets_place(bp, &b, ws[(i / 3) % 2], c, tails, &err);
  }
  if( rc == FLY_OK ) rc = fly_buckets_finish(&b, &m, ws, 2, &err);
  fly_buckets_ws_free(ws[0]);
  fly_buckets_ws_free(ws[1]);
  ws[0] = ws[1] = NULL;
  fly_pages_close(bp);
  bp = NULL;
  TAP_OK(rc == FLY_OK && nc == (N_ROWS + 299) / 300 && b.chunk_rows == 300 && !b.plan,
         "%lld chunks of %lld rows; the build state freed", (long long)nc,
         (long long)b.chunk_rows);
  if( !TAP_OK(rc == FLY_OK && b.N == N_ROWS && b.nxi == 1 && b.xi_lo && b.xi_hi &&
              b.tail == 7 && b.stride == 4 + 4 + 7,
              "the index builds, records of 4 + 4 + 7 bytes (%s)", err.msg) ) goto out;

  /* the reference cells */
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for(size_t n = 0; n < N_ROWS; n++)
    if( key[n] > 0 ){
      int64_t g = level_of(key[n]);
      if( g < lo ) lo = g;
      if( g > hi ) hi = g;
    }
  int64_t span = hi - lo + 1;
  int clamped = span > 512;
  if( clamped ) lo = hi - 511;
  for(size_t n = 0; n < N_ROWS; n++){
    int64_t li = key[n] > 0 ? level_of(key[n]) - lo : 0;
    if( li < 0 ) li = 0;
    cell[n] = li * 256 + bin_of(fabs(xi[n]));
  }
  TAP_OK(clamped, "the keys span more than the 512 levels kept (%lld)", (long long)span);

  /* a permutation, each bucket non-empty, its rows in row order */
  int perm_ok = b.start[0] == 0 && b.start[b.nb] == N_ROWS;
  for(size_t i = 0; i < b.nb && perm_ok; i++){
    perm_ok = b.start[i + 1] > b.start[i];
    for(int64_t p = b.start[i]; p < b.start[i + 1] && perm_ok; p++){
      uint32_t r = fly_buckets_row(&b, p);
      perm_ok = r < N_ROWS && !seen[r] && (p == b.start[i] || fly_buckets_row(&b, p - 1) < r);
      if( perm_ok ) seen[r] = 1;
    }
  }
  TAP_OK(perm_ok, "records: every row once, %zu non-empty buckets, rows in row order",
         b.nb);

  /* same bucket iff same cell; buckets in the cells' order; exact extremes */
  size_t bad_cell = 0, bad_order = 0, bad_key = 0, bad_xi = 0;
  for(size_t i = 0; perm_ok && i < b.nb; i++){
    int64_t c = cell[fly_buckets_row(&b, b.start[i])];
    double kmax = 0, vlo = INFINITY, vhi = 0;
    for(int64_t p = b.start[i]; p < b.start[i + 1]; p++){
      uint32_t r = fly_buckets_row(&b, p);
      if( cell[r] != c ) bad_cell++;
      if( key[r] > kmax ) kmax = key[r];
      double v = fabs(xi[r]);
      if( v < vlo ) vlo = v;
      if( v > vhi ) vhi = v;
    }
    if( i > 0 && !(cell[fly_buckets_row(&b, b.start[i - 1])] < c) ) bad_order++;
    if( b.key[i] != kmax ) bad_key++;
    if( b.xi_lo[i] != vlo || b.xi_hi[i] != vhi ) bad_xi++;
  }
  TAP_OK(perm_ok && bad_cell == 0 && bad_order == 0,
         "two rows share a bucket iff they share a cell; buckets in cell order "
         "(%zu rows misplaced, %zu buckets out of order)", bad_cell, bad_order);
  TAP_OK(perm_ok && bad_key == 0 && bad_xi == 0,
         "each bucket's largest key and |xi| range are exact (%zu keys, %zu ranges wrong)",
         bad_key, bad_xi);
  size_t bad_row = 0, bad_tail = 0;
  for(int64_t p = 0; perm_ok && p < N_ROWS; p++){
    float x;
    uint8_t want[7];
    uint32_t r = fly_buckets_row(&b, p);
    fly_buckets_xi(&b, p, &x);
    if( (double)x != xi[r] ) bad_row++;
    name_row(want, r);
    if( memcmp(fly_buckets_tail(&b, p), want, sizeof want) ) bad_tail++;
  }
  TAP_OK(perm_ok && bad_row == 0, "every row's xi kept as stored (%zu differ)", bad_row);
  TAP_OK(perm_ok && bad_tail == 0, "each position holds its row's tail, the other "
         "chunks' places leaving it alone (%zu differ)", bad_tail);
  /* the one-thread build gives the same records and buckets */
  {
    fly_buckets one = {0};
    rc = fly_pages_open(db, FLY_TABLE_BOUND, 1, 0, &bp, &err);
    if( rc == FLY_OK ) rc = fly_buckets_build(bp, &m, &one, &err);
    int same = rc == FLY_OK && one.nb == b.nb &&
               !memcmp(one.start, b.start, (b.nb + 1) * sizeof *b.start) &&
               !memcmp(one.key, b.key, b.nb * sizeof *b.key) &&
               !memcmp(one.xi_lo, b.xi_lo, b.nb * sizeof *b.xi_lo) &&
               !memcmp(one.xi_hi, b.xi_hi, b.nb * sizeof *b.xi_hi);
    for(int64_t p = 0; same && p < N_ROWS; p++){
      float x, y;
      fly_buckets_xi(&one, p, &x);
      fly_buckets_xi(&b, p, &y);
      same = fly_buckets_row(&one, p) == fly_buckets_row(&b, p) && x == y;
    }
    TAP_OK(same, "fly_buckets_build (chunks of a page, in order) gives the same "
           "buckets and records (%s)", err.msg);
    fly_pages_close(bp);
    bp = NULL;
    fly_buckets_free(&one);
  }
  fly_buckets_free(&b);

  /* a negative key: the bounds are not MAP-tuned */
  key[12345] = -1;
  rc = write_bounds(db, ds, 2, "fixed") ? FLY_OK : FLY_IO;
  if( rc == FLY_OK ) rc = fly_pages_open(db, FLY_TABLE_BOUND, 2, 0, &bp, &err);
  if( rc == FLY_OK ) rc = fly_buckets_build(bp, &m, &b, &err);
  TAP_OK(rc == FLY_NUMERIC && strstr(err.msg, "row 12346 has gap key -1"),
         "a negative key is refused, naming its row (%s)", err.msg);
  fly_pages_close(bp);
  bp = NULL;
  fly_buckets_free(&b);
  /* the same through the threaded build: the failing chunk's error is the
   * one returned, and nothing is left allocated */
  {
    fly_sketch sk = {0};
    rc = fly_index_build(path, ds, 2, NULL, NULL, &m, NULL, 2, &b, &sk, &err);
    TAP_OK(rc == FLY_NUMERIC && strstr(err.msg, "row 12346 has gap key -1") && !b.rec &&
           !b.plan && !b.start, "the two-thread build returns it too, freed (%s)", err.msg);
  }
  key[12345] = 0.5;

  /* bound pages that change between the scans: counted on set 1, placed
   * on set 3, where one row's key moved to another bucket */
  key[7] = key[7] > 0 && level_of(key[7]) == 0 ? 4.0 : 1.0;
  rc = fly_db_exec(db, "DELETE FROM bound_set WHERE id = 2", &err);   /* pages cascade */
  if( rc == FLY_OK ) rc = write_bounds(db, ds, 3, "fixed") ? FLY_OK : FLY_IO;
  {
    fly_pages *p1 = NULL, *p3 = NULL;
    if( rc == FLY_OK ) rc = fly_pages_open(db, FLY_TABLE_BOUND, 1, 0, &p1, &err);
    if( rc == FLY_OK ) rc = fly_pages_open(db, FLY_TABLE_BOUND, 3, 0, &p3, &err);
    if( rc == FLY_OK ) rc = fly_buckets_init(fly_pages_info_of(p1), &m, 0, 700, &b, &err);
    if( rc == FLY_OK ) rc = fly_buckets_ws_new(&b, &ws[0], &err);
    for(int64_t c = 0; rc == FLY_OK && c < b.n_chunks; c++)
      rc = fly_buckets_count(p1, &b, ws[0], c, &err);
    if( rc == FLY_OK ) rc = fly_buckets_layout(&b, &err);
    for(int64_t c = 0; rc == FLY_OK && c < b.n_chunks; c++)
      rc = fly_buckets_place(p3, &b, ws[0], c, NULL, &err);
    TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "changed between the scans"),
           "bound pages that change between the scans are refused (%s)", err.msg);
    fly_buckets_ws_free(ws[0]);
    fly_pages_close(p1);
    fly_pages_close(p3);
    fly_buckets_free(&b);
  }

out:
  fly_db_close(db);
  fx_unlink_db(path);
  return tap_done();
}
