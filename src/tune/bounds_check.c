/*
 * bounds_check.c -- the integrity check of the bound-set tables
 * (bound_set, bound_page, moment), and the listing of `flydb info`.
 *
 * Per bound set: 'building' left by a crashed build, the model and its
 * options (parsed by fly_tune_model_opts_parse, and canonical: what
 * fly_tune_model_opts writes, or fly_tune_get never finds it), the shape
 * against the model and the data set, the MAP and Laplace blobs (sizes,
 * finite), the bound pages (fly_pages_check), every xi finite (and equal
 * to the fixed xi for fixed tuning), every thinning key finite and >= 0 for
 * MAP tuning, the moment table complete, and unless quick the moments
 * recomputed with the model's moments_add from the data pages (read
 * through fly_pages_read_page) and the stored xi, as tune.c accumulates
 * them.  Moments agree to fly_check_close with the scale the sum over
 * pages of |each page's contribution| (a moment may cancel to near 0).
 *
 * Memory: one data page and one bound page of values plus the moments.
 */
#include "tune/bounds_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "store/codec.h"
#include "tune/tune.h"
#include "util/mem.h"

#define MAX_SECTIONS 8             /* moment sections of a model */

/* A blob of want doubles, all finite. */
static void check_blob(fly_checker *ck, sqlite3_stmt *st, int col,
                       const char *what, size_t want)
{
  const void *p = sqlite3_column_blob(st, col);
  size_t bytes = (size_t)sqlite3_column_bytes(st, col);
  if( !p || bytes != want * sizeof(double) ){
    fly_check_problem(ck, "%s holds %zu bytes, want %zu (%zu doubles)", what, bytes,
            want * sizeof(double), want);
    return;
  }
  for(size_t i = 0; i < want; i++){
    double v;
    memcpy(&v, (const unsigned char *)p + i * sizeof v, sizeof v);
    if( !isfinite(v) ){
      fly_check_problem(ck, "%s[%zu] is %g", what, i, v);
      return;
    }
  }
}

/* Scan state of one bound set's pages. */
typedef struct bscan {
  fly_checker     *ck;
  const fly_model *m;
  size_t           n_xi, bw;      /* xi per row, values per bound row */
  int64_t          page_rows;
  int              tuned;         /* MAP tuning: keys must be finite >= 0 */
  int              fixed;         /* fixed tuning: xi must be fixed_xi */
  float            fixed_xi;
  /* moments (data != NULL) */
  fly_pages       *data;          /* borrowed: the data set's pages */
  size_t           W;             /* values per data row */
  double          *X, *work, *mom, *part, *scale;
  float           *xi;
  size_t           n_mom;
  int64_t          next;          /* next page expected */
  int              mom_ok;        /* every page so far went into mom */
} bscan;

static void bound_page(void *u, int64_t k, const double *rows, size_t n)
{
  bscan *b = u;
  fly_checker *ck = b->ck;
  for(size_t i = 0; i < n; i++){
    const double *r = rows + i * b->bw;
    int64_t row = k * b->page_rows + (int64_t)i;
    for(size_t q = 0; q < b->n_xi; q++){
      if( !isfinite(r[q]) )
        fly_check_problem(ck, "page %lld, row %lld: xi[%zu] is %g", (long long)k,
                (long long)row, q, r[q]);
      else if( b->fixed && (float)r[q] != b->fixed_xi )
        fly_check_problem(ck, "page %lld, row %lld: xi[%zu] is %.9g, but the tuning "
                "fixes it at %.9g", (long long)k, (long long)row, q, r[q],
                (double)b->fixed_xi);
      if( b->xi ) b->xi[i * b->n_xi + q] = (float)r[q];
    }
    double key = r[b->n_xi];
    if( b->tuned && !(isfinite(key) && key >= 0) )
      fly_check_problem(ck, "page %lld, row %lld: thinning key %g is not a finite "
              "number >= 0", (long long)k, (long long)row, key);
  }
  if( !b->data || !b->mom_ok ) return;
  if( k != b->next ){ b->mom_ok = 0; return; }
  b->next = k + 1;

  fly_err e = {0};
  size_t nd = 0;
  if( fly_pages_read_page(b->data, k, b->X, &nd, &e) ){
    fly_check_problem(ck, "moments: %s", e.msg);
    b->mom_ok = 0;
    return;
  }
  if( nd != n ){
    fly_check_problem(ck, "page %lld holds %zu rows, data page %lld holds %zu",
            (long long)k, n, (long long)k, nd);
    b->mom_ok = 0;
    return;
  }
  memset(b->part, 0, b->n_mom * sizeof *b->part);
  b->m->type->moments_add(b->m, b->X, b->W, b->xi, n, b->part, b->work);
  for(size_t q = 0; q < b->n_mom; q++){
    b->mom[q] += b->part[q];
    b->scale[q] += fabs(b->part[q]);
  }
}

/* The moment table of bound set id against the recomputed b->mom. */
static void compare_moments(fly_db *db, fly_checker *ck, int64_t id, const bscan *b)
{
  const fly_model *m = b->m;
  fly_moment_section sec[MAX_SECTIONS];
  size_t n_sec = m->type->moment_layout(m, sec), off[MAX_SECTIONS + 1];
  unsigned char *seen = NULL;
  sqlite3_stmt *st = NULL;
  int s;

  if( n_sec > MAX_SECTIONS ) return;
  off[0] = 0;
  for(size_t q = 0; q < n_sec; q++) off[q + 1] = off[q] + sec[q].rows * sec[q].cols;
  if( off[n_sec] != b->n_mom ) return;
  seen = fly_alloc_array(b->n_mom ? b->n_mom : 1, 1);
  if( !seen ){ fly_check_problem(ck, "out of memory for %zu moments", b->n_mom); return; }
  st = fly_check_prepare(db, ck,
      "SELECT name, i, j, value FROM moment WHERE bound_set_id = ?1"
      " ORDER BY name, i, j");
  if( !st ) goto done;
  sqlite3_bind_int64(st, 1, id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    const char *name = (const char *)sqlite3_column_text(st, 0);
    int64_t i = sqlite3_column_int64(st, 1), j = sqlite3_column_int64(st, 2);
    double v = sqlite3_column_double(st, 3);
    size_t q = 0;
    while( q < n_sec && (!name || strcmp(name, sec[q].name) != 0) ) q++;
    if( q == n_sec || i < 0 || j < 0 || (uint64_t)i >= sec[q].rows
        || (uint64_t)j >= sec[q].cols ){
      fly_check_problem(ck, "unexpected moment %s[%lld,%lld] for model %s",
              name ? name : "NULL", (long long)i, (long long)j, m->type->name);
      continue;
    }
    size_t e = off[q] + (size_t)i * sec[q].cols + (size_t)j;
    seen[e] = 1;
    if( sqlite3_column_type(st, 3) != SQLITE_FLOAT || !isfinite(v) )
      fly_check_problem(ck, "moment %s[%lld,%lld] is %s", name, (long long)i,
              (long long)j, sqlite3_column_type(st, 3) == SQLITE_FLOAT
              ? "not finite" : "not a real number");
    else if( b->mom_ok && !fly_check_close(v, b->mom[e], b->scale[e]) )
      fly_check_problem(ck, "moment %s[%lld,%lld] is %.17g, recomputed %.17g from the "
              "data pages and the stored xi", name, (long long)i,
              (long long)j, v, b->mom[e]);
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "reading table moment");
  else
    for(size_t q = 0; q < n_sec; q++)
      for(size_t i = 0; i < sec[q].rows; i++)
        for(size_t j = 0; j < sec[q].cols; j++)
          if( !seen[off[q] + i * sec[q].cols + j] )
            fly_check_problem(ck, "moment %s[%zu,%zu] is missing", sec[q].name, i, j);
done:
  sqlite3_finalize(st);
  fly_free(seen);
}

/* One bound_set row. */
static void check_bound_set(fly_db *db, fly_checker *ck, sqlite3_stmt *row, fly_dataset_checked *dss, size_t n_ds)
{
  int64_t id = sqlite3_column_int64(row, 0);
  int64_t ds_id = sqlite3_column_int64(row, 1);
  const char *model = (const char *)sqlite3_column_text(row, 2);
  const char *mopts = (const char *)sqlite3_column_text(row, 3);
  const char *tuning = (const char *)sqlite3_column_text(row, 4);
  const char *status = (const char *)sqlite3_column_text(row, 5);
  int64_t n_params = sqlite3_column_int64(row, 6);
  int64_t width = sqlite3_column_int64(row, 7);
  int64_t page_rows = sqlite3_column_int64(row, 8);
  int64_t n_pages = sqlite3_column_int64(row, 9);
  fly_dataset_checked *ds = fly_dataset_checked_find(dss, n_ds, ds_id);
  fly_model m;
  bscan b;
  char why[768];
  fly_err e = {0};
  int shape_ok = 1;

  memset(&b, 0, sizeof b);
  fly_check_scope(ck, "bound set %lld (data set '%s', %s %s, %s)", (long long)id,
              ds ? ds->name : "?", model ? model : "?", mopts ? mopts : "?",
              tuning ? tuning : "?");
  if( !ds ){
    fly_check_problem(ck, "data set %lld does not exist", (long long)ds_id);
    goto done;
  }
  if( !ds->shape_ok ){
    fly_check_problem(ck, "not checked: its data set has a bad shape");
    goto done;
  }
  if( status && strcmp(status, "building") == 0 ){
    fly_check_problem(ck, "status 'building': left by an interrupted build (`flydb "
            "tune --force` rebuilds it)");
    goto done;
  }
  if( !status || strcmp(status, "ready") != 0 ){
    fly_check_problem(ck, "status '%s', want 'ready'", status ? status : "NULL");
    goto done;
  }
  if( fly_tune_model_opts_parse(model, mopts, ds->width, &m, &e) ){
    fly_check_problem(ck, "%s", e.msg);
    goto done;
  }
  /* fly_tune_get finds a bound set by this string: it must be the one
   * fly_tune_model_opts writes for the same model. */
  if( fly_tune_model_opts(&m, why, sizeof why, NULL) == FLY_OK
      && strcmp(why, mopts) != 0 )
    fly_check_problem(ck, "model_opts '%s' is not the canonical '%s' (sample would "
            "never find this bound set)", mopts, why);
  if( tuning && strcmp(tuning, "map") == 0 ){
    b.tuned = 1;
  }else if( tuning && strncmp(tuning, "fixed=", 6) == 0 ){
    char *end;
    double x = strtod(tuning + 6, &end);
    if( end == tuning + 6 || *end || !isfinite(x) || x < 0 ){
      fly_check_problem(ck, "tuning '%s': the fixed xi is not a number >= 0", tuning);
      goto done;
    }
    b.fixed = 1;
    b.fixed_xi = (float)x;
  }else{
    fly_check_problem(ck, "unknown tuning '%s' (want 'map' or 'fixed=XI')",
            tuning ? tuning : "NULL");
    goto done;
  }

  size_t P = m.type->n_params(&m);
  b.n_xi = m.type->n_xi(&m);
  if( n_params != (int64_t)P )
    fly_check_problem(ck, "n_params is %lld, model %s on %lld features has %zu",
            (long long)n_params, m.type->name, (long long)ds->width - 1, P);
  if( width != (int64_t)(b.n_xi + 1) ){
    fly_check_problem(ck, "width is %lld, want %zu (%zu xi and the thinning key)",
            (long long)width, b.n_xi + 1, b.n_xi);
    shape_ok = 0;
  }
  if( page_rows != ds->page_rows ){
    fly_check_problem(ck, "page_rows is %lld, but data set pages hold %lld rows (bound "
            "page k must cover data page k)", (long long)page_rows,
            (long long)ds->page_rows);
    shape_ok = 0;
  }
  if( ds->sharded ){
    /* The manifest's record of bounds tuned over the shards: ξ and the
     * moments are in each shard, checked by `flydb check` on the shard. */
    if( n_pages != 0 )
      fly_check_problem(ck, "n_pages is %lld for bounds of sharded rows (want 0: they "
                        "are in the shards)", (long long)n_pages);
    check_blob(ck, row, 10, "theta_map", P);
    check_blob(ck, row, 11, "laplace_cov", P * P);
    check_blob(ck, row, 12, "laplace_prec", P * P);
    fly_pages_info none = { 0, b.n_xi + 1, page_rows, 0, FLY_PREC_F32 };
    fly_pages_scan sr;
    fly_pages_check(db, FLY_TABLE_BOUND, id, &none, NULL, NULL, ck, &sr);
    sqlite3_stmt *st = fly_check_prepare(db, ck, "SELECT count(*) FROM moment "
                                         "WHERE bound_set_id = ?1");
    if( st ){
      sqlite3_bind_int64(st, 1, id);
      if( sqlite3_step(st) != SQLITE_ROW ) fly_check_step_failed(db, ck, "reading moment");
      else if( sqlite3_column_int64(st, 0) != 0 )
        fly_check_problem(ck, "%lld moment rows for bounds of sharded rows (want none: "
                          "each shard holds its own)", (long long)sqlite3_column_int64(st, 0));
      sqlite3_finalize(st);
    }
    goto done;
  }
  int64_t want_pages = (ds->n_rows - 1) / ds->page_rows + 1;
  if( n_pages != want_pages )
    fly_check_problem(ck, "n_pages is %lld, but %lld rows of %lld a page need %lld",
            (long long)n_pages, (long long)ds->n_rows,
            (long long)ds->page_rows, (long long)want_pages);
  check_blob(ck, row, 10, "theta_map", P);
  check_blob(ck, row, 11, "laplace_cov", P * P);
  check_blob(ck, row, 12, "laplace_prec", P * P);
  if( !shape_ok ) goto done;

  /* The pages, with the moments recomputed alongside. */
  b.ck = ck;
  b.m = &m;
  b.bw = b.n_xi + 1;
  b.page_rows = page_rows;
  b.n_mom = m.type->n_moments(&m);
  if( !ck->quick && ds->sound && ds->pg ){
    size_t pr = (size_t)page_rows;
    b.W = (size_t)ds->width;
    b.X = fly_alloc_array(pr, b.W * sizeof *b.X);
    b.work = fly_alloc_array(m.type->work_len(&m, pr) + 1, sizeof *b.work);
    b.xi = fly_alloc_array(pr * b.n_xi + 1, sizeof *b.xi);
    b.mom = fly_alloc_array(b.n_mom + 1, sizeof *b.mom);
    b.part = fly_alloc_array(b.n_mom + 1, sizeof *b.part);
    b.scale = fly_alloc_array(b.n_mom + 1, sizeof *b.scale);
    if( !b.X || !b.work || !b.xi || !b.mom || !b.part || !b.scale )
      fly_check_problem(ck, "out of memory for the moments");
    else{
      b.data = ds->pg;
      b.mom_ok = 1;
    }
  }
  fly_pages_info t = { ds->n_rows, b.bw, page_rows, want_pages, FLY_PREC_F32 };
  fly_pages_scan sr;
  fly_pages_check(db, FLY_TABLE_BOUND, id, &t, bound_page, &b, ck, &sr);
  if( sr.bad || b.next != t.n_pages ) b.mom_ok = 0;
  compare_moments(db, ck, id, &b);
done:
  fly_free(b.X);
  fly_free(b.work);
  fly_free(b.xi);
  fly_free(b.mom);
  fly_free(b.part);
  fly_free(b.scale);
  fly_check_scope(ck, "%s", "");
}

fly_rc fly_bounds_check(fly_db *db, fly_dataset_checked *ds, size_t n_ds,
                        fly_checker *ck, int64_t *n_sets, fly_err *err)
{
  sqlite3_stmt *st;
  int s;
  *n_sets = 0;
  if( !ck ) return fly_fail(err, FLY_MISUSE, "fly_bounds_check: no checker");
  fly_check_scope(ck, "table bound_set");
  st = fly_check_prepare(db, ck,
      "SELECT id, dataset_id, model, model_opts, tuning, status,"
      " n_params, width, page_rows, n_pages, theta_map, laplace_cov,"
      " laplace_prec FROM bound_set ORDER BY id");
  if( !st ){ fly_check_scope(ck, "%s", ""); return FLY_OK; }
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    check_bound_set(db, ck, st, ds, n_ds);
    ++*n_sets;
  }
  if( s != SQLITE_DONE ){
    fly_check_scope(ck, "table bound_set");
    fly_check_step_failed(db, ck, "reading table bound_set");
  }
  fly_check_scope(ck, "%s", "");
  sqlite3_finalize(st);
  return FLY_OK;
}

fly_rc fly_bounds_list(fly_db *db, fly_bounds_brief_fn *fn, void *ctx,
                       fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT b.id, d.name, b.model, b.model_opts, b.tuning, "
      "b.map_iters, b.tune_seconds FROM bound_set b JOIN dataset d ON d.id = "
      "b.dataset_id WHERE b.status = 'ready' ORDER BY b.id", &st, err);
  if( rc ) return rc;
  while( sqlite3_step(st) == SQLITE_ROW ){
    fly_bounds_brief b;
    b.id = sqlite3_column_int64(st, 0);
    b.dataset = (const char *)sqlite3_column_text(st, 1);
    b.model = (const char *)sqlite3_column_text(st, 2);
    b.model_opts = (const char *)sqlite3_column_text(st, 3);
    b.tuning = (const char *)sqlite3_column_text(st, 4);
    b.map_iters = sqlite3_column_int(st, 5);
    b.tune_seconds = sqlite3_column_double(st, 6);
    fn(ctx, &b);
  }
  sqlite3_finalize(st);
  return FLY_OK;
}
