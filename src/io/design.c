/*
 * design.c -- a bound model design materialised as a derived data set
 * (see design.h).
 *
 * One pass over the raw pages in order: each raw row (the stored row
 * without its intercept) goes through fly_design_row; a row with a missing
 * value in a used column is counted against every used column it misses
 * and left out (or refused); the others become [model-matrix row, y],
 * rounded to the raw data set's precision, added to the statistics and to
 * the page writer.  Then the column table (R's names; a categorical
 * response as a categorical target with its levels in R's order and their
 * counts), and the `derived` rows that make it findable by (parent, key).
 * All in one transaction, so a derived data set is complete or absent.
 *
 * Cost: one decode of every raw page, one fly_design_row per row (no
 * allocation), one encode of every derived page.  Memory: one raw page,
 * one derived page, the statistics, and counters per raw column.
 */
#include "io/design.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/ingest.h"
#include "store/codec.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "util/mem.h"

fly_rc fly_design_columns(const fly_dataset *ds, fly_fcol **cols, size_t *n,
                          fly_err *err)
{
  size_t j0 = ds->has_intercept ? 1 : 0, m = ds->n_cols > j0 ? ds->n_cols - j0 : 0;
  fly_fcol *c = fly_alloc_array(m ? m : 1, sizeof *c);
  *cols = NULL;
  *n = 0;
  if( !c ) return fly_fail(err, FLY_NOMEM, "design columns of '%s'", ds->name);
  for(size_t j = 0; j < m; j++){
    const fly_dataset_column *s = &ds->cols[j + j0];
    c[j].name = s->name ? s->name : "";
    c[j].categorical = s->categorical;
    c[j].n_levels = s->n_levels;
    c[j].levels = s->levels;
  }
  *cols = c;
  *n = m;
  return FLY_OK;
}

fly_rc fly_design_bind(fly_db *db, int64_t raw_id, const char *formula,
                       const fly_design_opts *o, fly_design **pd,
                       fly_err *err)
{
  fly_dataset *ds = NULL;
  fly_formula *f = NULL;
  fly_fcol *cols = NULL;
  size_t n = 0;
  fly_rc rc;

  *pd = NULL;
  if( (rc = fly_dataset_load(db, raw_id, &ds, err)) ) return rc;
  if( ds->parent_id ){
    rc = fly_fail(err, FLY_MISUSE, "data set '%s' is derived by a design: "
                  "apply a formula to the data set it came from", ds->name);
    goto done;
  }
  if( (rc = fly_formula_parse(formula, &f, err)) ) goto done;
  if( (rc = fly_design_columns(ds, &cols, &n, err)) ) goto done;
  rc = fly_design_new(f, cols, n, o, pd, err);
  if( rc ) fly_err_prefix(err, "data set '%s'", ds->name);
done:
  fly_free(cols);
  fly_formula_free(f);
  fly_dataset_free(ds);
  return rc;
}

/* The report's text: rows left out and the columns that made them. */
static void explain(fly_design_report *rep, int64_t n_omitted, size_t n,
                    const int64_t *omit, const fly_dataset *raw, size_t j0)
{
  size_t k = 0;
  int first = 1;
  rep->why[0] = 0;
  if( n_omitted == 0 ) return;
  k = (size_t)snprintf(rep->why, sizeof rep->why, "left out %lld row%s with a "
                       "missing value:", (long long)n_omitted,
                       n_omitted == 1 ? "" : "s");
  for(size_t j = 0; j < n && k < sizeof rep->why; j++){
    if( !omit[j] ) continue;
    int w = snprintf(rep->why + k, sizeof rep->why - k, "%s %lld in '%s'",
                     first ? "" : ",", (long long)omit[j], raw->cols[j + j0].name);
    if( w < 0 ) break;
    k += (size_t)w;
    first = 0;
  }
}

/* The omit callback of a reused derived data set: counts by raw column. */
typedef struct omit_ctx { int64_t *omit; size_t n, j0; } omit_ctx;

static void take_omit(void *u, int64_t idx, int64_t n_rows)
{
  omit_ctx *c = u;
  if( idx >= (int64_t)c->j0 && (size_t)idx - c->j0 < c->n )
    c->omit[(size_t)idx - c->j0] = n_rows;
}

/* A deterministic name for the derived data set of raw under key. */
static void derived_name(char *out, size_t cap, const char *raw, const char *key)
{
  uint64_t x = UINT64_C(1469598103934665603);
  for(const unsigned char *u = (const unsigned char *)key; *u; u++)
    x = (x ^ *u) * UINT64_C(1099511628211);
  snprintf(out, cap, "%.200s~%016llx", raw, (unsigned long long)x);
}

/* Build the derived data set; inside the caller's transaction. */
static fly_rc build(fly_db *db, const fly_dataset *raw, const fly_design *d,
                    fly_design_na na, int64_t *out_id, int64_t *out_rows,
                    int64_t *omit, int64_t *out_omitted, fly_err *err)
{
  const size_t j0 = raw->has_intercept ? 1 : 0, n_raw = raw->n_cols - j0;
  const size_t D = fly_design_width(d), width = D + 1;
  const int icpt = fly_design_has_intercept(d);
  size_t n_uses = 0, n_ylev = 0;
  const size_t *uses = fly_design_uses(d, &n_uses);
  const char *const *ylev = fly_design_response_levels(d, &n_ylev);
  fly_pages *pg = NULL;
  fly_pagewriter *pw = NULL;
  fly_dataset_stats *st = NULL;
  fly_dataset_column *cols = NULL;
  double *in = NULL, *row = NULL;
  int64_t *ycount = NULL, id = 0, n_out = 0, n_omit = 0, page_rows = 0;
  char name[256];
  fly_rc rc;

  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, raw->id, 0, &pg, err)) ) goto done;
  const fly_pages_info *pi = fly_pages_info_of(pg);
  if( pi->width != j0 + n_raw ){
    rc = fly_fail(err, FLY_CORRUPT, "data set '%s': %zu values a row, %zu columns",
                  raw->name, pi->width, raw->n_cols);
    goto done;
  }
  in = fly_alloc_array((size_t)pi->page_rows, pi->width * sizeof *in);
  row = fly_alloc_array(width, sizeof *row);
  cols = fly_alloc_array(width, sizeof *cols);
  ycount = fly_alloc_array(n_ylev + 1, sizeof *ycount);
  if( !in || !row || !cols || !ycount ){
    rc = fly_fail(err, FLY_NOMEM, "materialising a design of %zu columns", D);
    goto done;
  }
  if( (rc = fly_ingest_page_rows(db, width, raw->prec, &page_rows, err)) ) goto done;
  derived_name(name, sizeof name, raw->name, fly_design_key(d));
  fly_dataset_spec spec = { name, raw->source,
                            raw->cols[j0 + fly_design_response(d)].name,
                            (int64_t)width, icpt, page_rows, raw->prec };
  if( (rc = fly_dataset_create(db, &spec, &id, err)) ) goto done;
  if( (rc = fly_pagewriter_open(db, FLY_TABLE_DATA, id, width, page_rows,
                                raw->prec, &pw, err)) ) goto done;
  if( (rc = fly_dataset_stats_new(width, &st, err)) ) goto done;

  for(int64_t p = 0; p < pi->n_pages; p++){
    size_t n;
    if( (rc = fly_pages_read_page(pg, p, in, &n, err)) ) goto done;
    for(size_t i = 0; i < n; i++){
      const double *x = in + i * pi->width + j0;
      int64_t r = p * pi->page_rows + (int64_t)i;
      size_t col = 0;
      int k = fly_design_row(d, x, row, &col);
      if( k == 1 ){
        if( na == FLY_DESIGN_NA_ERROR ){
          rc = fly_fail(err, FLY_RANGE, "data set '%s', row %lld: '%s' is "
                        "missing (--na omit leaves such rows out)", raw->name,
                        (long long)r + 1, raw->cols[j0 + col].name);
          goto done;
        }
        for(size_t u = 0; u < n_uses; u++) if( isnan(x[uses[u]]) ) omit[uses[u]]++;
        n_omit++;
        continue;
      }
      if( k == 2 ){
        rc = fly_fail(err, FLY_RANGE, "data set '%s', row %lld: a transform of "
                      "'%s' is undefined for its value %.17g", raw->name,
                      (long long)r + 1, raw->cols[j0 + col].name, x[col]);
        goto done;
      }
      row[D] = fly_design_y(d, x);
      if( ylev && row[D] >= 0 && row[D] < (double)n_ylev ) ycount[(size_t)row[D]]++;
      if( raw->prec == FLY_PREC_F32 )
        for(size_t j = 0; j < width; j++) row[j] = (double)(float)row[j];
      fly_dataset_stats_add(st, row, 1);
      if( (rc = fly_pagewriter_add(pw, row, err)) ) goto done;
      n_out++;
    }
  }
  if( n_out == 0 ){
    rc = fly_fail(err, FLY_RANGE, "data set '%s': every one of its %lld rows has "
                  "a missing value in a column the formula uses", raw->name,
                  (long long)raw->n_rows);
    goto done;
  }
  if( (rc = fly_pagewriter_finish(pw, err)) ) goto done;
  for(size_t j = 0; j < width; j++){
    cols[j].idx = (int64_t)j;
    cols[j].name = j < D ? fly_design_name(d, j) : spec.target_name;
    cols[j].role = j == D ? "target" : j == 0 && icpt ? "intercept" : "feature";
    cols[j].csv_col = 0;
  }
  if( ylev ){
    cols[D].categorical = 1;
    cols[D].n_levels = n_ylev;
    cols[D].levels = ylev;
    cols[D].level_counts = ycount;
  }
  rc = fly_dataset_finish(db, id, fly_pagewriter_pages(pw),
                          fly_pagewriter_raw_bytes(pw),
                          fly_pagewriter_stored_bytes(pw), cols, st, err);
  if( rc ) goto done;
  {
    int64_t *idx = fly_alloc_array(n_raw + 1, sizeof *idx);
    if( !idx ){ rc = fly_fail(err, FLY_NOMEM, "materialising a design"); goto done; }
    for(size_t j = 0; j < n_raw; j++) idx[j] = (int64_t)(j + j0);
    rc = fly_dataset_set_derived(db, id, raw->id, fly_design_key(d), n_omit,
                                 n_raw, idx, omit, err);
    fly_free(idx);
  }
  if( rc == FLY_OK ){
    *out_id = id;
    *out_rows = n_out;
    *out_omitted = n_omit;
  }
done:
  fly_pagewriter_free(pw);
  fly_pages_close(pg);
  fly_dataset_stats_free(st);
  fly_free(in);
  fly_free(row);
  fly_free(cols);
  fly_free(ycount);
  return rc;
}

fly_rc fly_design_materialise(fly_db *db, int64_t raw_id, const fly_design *d,
                              fly_design_na na, int64_t *derived_id,
                              fly_design_report *rep, fly_err *err)
{
  fly_dataset *raw = NULL, *dv = NULL;
  fly_design_report r;
  int64_t *omit = NULL, id = 0;
  size_t j0, n_raw;
  fly_rc rc;

  memset(&r, 0, sizeof r);
  if( (rc = fly_dataset_load(db, raw_id, &raw, err)) ) return rc;
  j0 = raw->has_intercept ? 1 : 0;
  n_raw = raw->n_cols > j0 ? raw->n_cols - j0 : 0;
  if( raw->parent_id ){
    rc = fly_fail(err, FLY_MISUSE, "data set '%s' is derived by a design: "
                  "apply a formula to the data set it came from", raw->name);
    goto done;
  }
  if( fly_design_response(d) >= n_raw ){
    rc = fly_fail(err, FLY_MISUSE, "data set '%s': the design is not bound to "
                  "its %zu columns", raw->name, n_raw);
    goto done;
  }
  omit = fly_alloc_array(n_raw + 1, sizeof *omit);
  if( !omit ){ rc = fly_fail(err, FLY_NOMEM, "materialising a design"); goto done; }
  if( (rc = fly_dataset_find_derived(db, raw_id, fly_design_key(d), &id, err)) )
    goto done;
  if( id ){
    omit_ctx oc = { omit, n_raw, j0 };
    if( (rc = fly_dataset_load(db, id, &dv, err)) ) goto done;
    if( (rc = fly_dataset_omitted(db, id, take_omit, &oc, err)) ) goto done;
    if( na == FLY_DESIGN_NA_ERROR && dv->n_omitted > 0 ){
      rc = fly_fail(err, FLY_RANGE, "data set '%s': %lld rows have a missing "
                    "value in a column the formula uses (--na omit leaves them "
                    "out)", raw->name, (long long)dv->n_omitted);
      goto done;
    }
    r.reused = 1;
    r.n_rows = dv->n_rows;
    r.n_omitted = dv->n_omitted;
  }else{
    if( (rc = fly_db_begin(db, err)) ) goto done;
    rc = build(db, raw, d, na, &id, &r.n_rows, omit, &r.n_omitted, err);
    if( rc == FLY_OK ) rc = fly_db_commit(db, err);
    if( rc ){ fly_db_rollback(db); goto done; }
  }
  r.derived_id = id;
  explain(&r, r.n_omitted, n_raw, omit, raw, j0);
  *derived_id = id;
  if( rep ) *rep = r;
done:
  fly_free(omit);
  fly_dataset_free(dv);
  fly_dataset_free(raw);
  return rc;
}
