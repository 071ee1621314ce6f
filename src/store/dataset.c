/*
 * dataset.c -- data set metadata and column statistics (see dataset.h):
 * all SQL on tables `dataset` and `dataset_column`.
 *
 * Invariants of a sound data set: n_pages = ceil(n_rows / page_rows),
 * raw_bytes = n_rows x width x prec, n_features = width - 1, stored_bytes
 * the sum of the page payloads; one dataset_column row per stored column,
 * idx 0..width-1, role 'intercept' for column 0 when has_intercept,
 * 'target' for the last (named target_name), 'feature' between; each
 * column's statistics are those fly_dataset_stats computes over the rows
 * as stored.
 *
 * A loaded fly_dataset is one allocation for the record, one for the
 * column array and one for all its strings.  Cost: one query for the
 * metadata and one for the columns.  The check reads every page once
 * (fly_pages_check) and keeps one page in memory.
 */
#include "store/dataset.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/codec.h"
#include "util/mem.h"

/* ---- lookup --------------------------------------------------------- */

fly_rc fly_dataset_find(fly_db *db, const char *name, int64_t *id,
                        fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  char names[256] = "";
  size_t used = 0;
  int64_t n = 0;

  if( name ){
    rc = fly_db_prepare(db, "SELECT id FROM dataset WHERE name = ?1", &st, err);
    if( rc ) return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    if( s == SQLITE_ROW ){
      *id = sqlite3_column_int64(st, 0);
      rc = FLY_OK;
    }else if( s == SQLITE_DONE ){
      rc = fly_fail(err, FLY_RANGE, "%s has no data set named '%s'",
                    fly_db_path(db), name);
    }else{
      rc = fly_db_fail(db, err, "looking up data set");
    }
    sqlite3_finalize(st);
    return rc;
  }
  rc = fly_db_prepare(db, "SELECT id, name FROM dataset WHERE id NOT IN"
                      " (SELECT dataset_id FROM derived) ORDER BY id", &st, err);
  if( rc ) return rc;
  int s;
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    if( n++ == 0 ) *id = sqlite3_column_int64(st, 0);
    const char *nm = (const char *)sqlite3_column_text(st, 1);
    int w = snprintf(names + used, sizeof names - used, "%s'%s'",
                     n > 1 ? ", " : "", nm ? nm : "");
    if( w > 0 && (size_t)w < sizeof names - used ) used += (size_t)w;
  }
  if( s != SQLITE_DONE ) rc = fly_db_fail(db, err, "listing data sets");
  else if( n == 0 )
    rc = fly_fail(err, FLY_RANGE, "%s holds no data set: run `flydb ingest` first",
                  fly_db_path(db));
  else if( n > 1 )
    rc = fly_fail(err, FLY_MISUSE, "%s holds %lld data sets (%s): choose one "
                  "with --data NAME", fly_db_path(db), (long long)n, names);
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_dataset_ids(fly_db *db, int64_t **ids, size_t *n, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  int64_t *a = NULL;
  size_t k = 0, cap = 0;
  int s;
  fly_rc rc = fly_db_prepare(db, "SELECT id FROM dataset ORDER BY id", &st, err);
  *ids = NULL;
  *n = 0;
  if( rc ) return rc;
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    if( k == cap ){
      size_t nc = cap ? 2 * cap : 8;
      int64_t *g = fly_realloc_array(a, nc, sizeof *a);
      if( !g ){ rc = fly_fail(err, FLY_NOMEM, "listing %zu data sets", nc); goto done; }
      a = g;
      cap = nc;
    }
    a[k++] = sqlite3_column_int64(st, 0);
  }
  if( s != SQLITE_DONE ) rc = fly_db_fail(db, err, "listing data sets");
done:
  sqlite3_finalize(st);
  if( rc ){ fly_free(a); return rc; }
  *ids = a;
  *n = k;
  return FLY_OK;
}

/* ---- loading -------------------------------------------------------- */

/* A string arena: the record's strings, copied at the end of one block. */
typedef struct arena { char *p; size_t used, cap; } arena;

static const char *keep(arena *a, const unsigned char *s)
{
  if( !s ) return NULL;
  size_t n = strlen((const char *)s) + 1;
  char *d = a->p + a->used;
  memcpy(d, s, n);
  a->used += n;
  return d;
}

static size_t text_bytes(sqlite3_stmt *st, int col)
{
  return sqlite3_column_type(st, col) == SQLITE_NULL
       ? 0 : (size_t)sqlite3_column_bytes(st, col) + 1;
}

struct ds_alloc {
  fly_dataset  ds;
  char        *strings;       /* names and metadata */
  char        *labels;        /* level labels */
  const char **lev;           /* every categorical column's labels */
  int64_t     *lev_n;         /* and counts */
};

/* The levels of ds's categorical columns, from table level. */
static fly_rc load_levels(fly_db *db, struct ds_alloc *r, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  size_t total = 0, bytes = 0, k = 0, used = 0;
  fly_dataset *ds = &r->ds;
  int s;
  fly_rc rc = fly_db_prepare(db, "SELECT idx, code, label, count FROM level"
                             " WHERE dataset_id = ?1 ORDER BY idx, code", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, ds->id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    total++;
    bytes += text_bytes(st, 2);
  }
  if( s != SQLITE_DONE ){ rc = fly_db_fail(db, err, "reading the levels"); goto done; }
  if( total == 0 ) goto done;
  sqlite3_reset(st);
  r->labels = fly_alloc_array(bytes + 1, 1);
  r->lev = fly_alloc_array(total, sizeof *r->lev);
  r->lev_n = fly_alloc_array(total, sizeof *r->lev_n);
  if( !r->labels || !r->lev || !r->lev_n ){
    rc = fly_fail(err, FLY_NOMEM, "loading %zu levels of data set %lld", total,
                  (long long)ds->id);
    goto done;
  }
  /* Rows in (idx, code) order: a column's levels are contiguous, and
   * code = position unless the file is damaged (then the column gets the
   * labels it has, in code order, and flydb check reports it). */
  while( k < total && (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t idx = sqlite3_column_int64(st, 0);
    const unsigned char *t = sqlite3_column_text(st, 2);
    size_t n = t ? (size_t)sqlite3_column_bytes(st, 2) : 0;
    memcpy(r->labels + used, t ? (const char *)t : "", n);
    r->labels[used + n] = 0;
    r->lev[k] = r->labels + used;
    r->lev_n[k] = sqlite3_column_int64(st, 3);
    used += n + 1;
    for(size_t j = 0; j < ds->n_cols; j++){
      fly_dataset_column *c = &ds->cols[j];
      if( c->idx != idx ) continue;
      if( c->n_levels == 0 ){ c->levels = r->lev + k; c->level_counts = r->lev_n + k; }
      c->n_levels++;
    }
    k++;
  }
  if( k < total ) rc = fly_db_fail(db, err, "reading the levels");
done:
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_dataset_load(fly_db *db, int64_t id, fly_dataset **pds,
                        fly_err *err)
{
  sqlite3_stmt *st = NULL, *cs = NULL;
  struct ds_alloc *r = NULL;
  arena a = { NULL, 0, 0 };
  size_t n_cols = 0, bytes = 0;
  int s;
  fly_rc rc;

  *pds = NULL;
  rc = fly_db_prepare(db, "SELECT id, name, source, n_rows, width, n_features,"
      " has_intercept, target_name, page_rows, n_pages, prec, raw_bytes,"
      " stored_bytes, created_at, d.parent_id, d.design_key, d.n_omitted"
      " FROM dataset LEFT JOIN derived d ON d.dataset_id = id WHERE id = ?1",
      &st, err);
  if( rc ) goto done;
  rc = fly_db_prepare(db, "SELECT idx, name, role, csv_col, n, mean, sd, min,"
      " max, type = 'categorical', n_missing FROM dataset_column"
      " WHERE dataset_id = ?1 ORDER BY idx", &cs, err);
  if( rc ) goto done;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(cs, 1, id);
  s = sqlite3_step(st);
  if( s == SQLITE_DONE ){
    rc = fly_fail(err, FLY_RANGE, "%s has no data set %lld", fly_db_path(db),
                  (long long)id);
    goto done;
  }
  if( s != SQLITE_ROW ){ rc = fly_db_fail(db, err, "reading the data set"); goto done; }
  /* Sizes first (columns counted in a first pass), then one copy. */
  bytes = text_bytes(st, 1) + text_bytes(st, 2) + text_bytes(st, 7)
        + text_bytes(st, 13) + text_bytes(st, 15);
  while( (s = sqlite3_step(cs)) == SQLITE_ROW ){
    n_cols++;
    bytes += text_bytes(cs, 1) + text_bytes(cs, 2);
  }
  if( s != SQLITE_DONE ){ rc = fly_db_fail(db, err, "reading the columns"); goto done; }
  sqlite3_reset(cs);

  r = fly_alloc_array(1, sizeof *r);
  if( r ){
    r->strings = fly_alloc_array(bytes + 1, 1);
    r->ds.cols = fly_alloc_array(n_cols + 1, sizeof *r->ds.cols);
  }
  if( !r || !r->strings || !r->ds.cols ){
    rc = fly_fail(err, FLY_NOMEM, "loading data set %lld", (long long)id);
    goto done;
  }
  a.p = r->strings;
  a.cap = bytes;
  fly_dataset *ds = &r->ds;
  ds->id = sqlite3_column_int64(st, 0);
  ds->name = keep(&a, sqlite3_column_text(st, 1));
  ds->source = keep(&a, sqlite3_column_text(st, 2));
  ds->n_rows = sqlite3_column_int64(st, 3);
  ds->width = sqlite3_column_int64(st, 4);
  ds->n_features = sqlite3_column_int64(st, 5);
  ds->has_intercept = sqlite3_column_int(st, 6);
  ds->target_name = keep(&a, sqlite3_column_text(st, 7));
  ds->page_rows = sqlite3_column_int64(st, 8);
  ds->n_pages = sqlite3_column_int64(st, 9);
  ds->prec = sqlite3_column_int(st, 10);
  ds->raw_bytes = sqlite3_column_int64(st, 11);
  ds->stored_bytes = sqlite3_column_int64(st, 12);
  ds->created_at = keep(&a, sqlite3_column_text(st, 13));
  ds->parent_id = sqlite3_column_int64(st, 14);
  ds->design_key = keep(&a, sqlite3_column_text(st, 15));
  ds->n_omitted = sqlite3_column_int64(st, 16);
  /* Both passes read one snapshot: st, still on its row, holds it. */
  while( ds->n_cols < n_cols && (s = sqlite3_step(cs)) == SQLITE_ROW ){
    fly_dataset_column *c = &ds->cols[ds->n_cols++];
    c->idx = sqlite3_column_int64(cs, 0);
    c->name = keep(&a, sqlite3_column_text(cs, 1));
    c->role = keep(&a, sqlite3_column_text(cs, 2));
    c->csv_col = sqlite3_column_int64(cs, 3);
    c->n = sqlite3_column_int64(cs, 4);
    c->mean = sqlite3_column_double(cs, 5);
    c->sd = sqlite3_column_double(cs, 6);
    c->min = sqlite3_column_double(cs, 7);
    c->max = sqlite3_column_double(cs, 8);
    c->categorical = sqlite3_column_int(cs, 9);
    c->n_missing = sqlite3_column_int64(cs, 10);
  }
  if( ds->n_cols < n_cols ) rc = fly_db_fail(db, err, "reading the columns");
  if( rc == FLY_OK ) rc = load_levels(db, r, err);

done:
  sqlite3_finalize(st);
  sqlite3_finalize(cs);
  if( rc ){
    if( r ) fly_dataset_free(&r->ds);
    return rc;
  }
  *pds = &r->ds;
  return FLY_OK;
}

void fly_dataset_free(fly_dataset *ds)
{
  if( !ds ) return;
  struct ds_alloc *r = (struct ds_alloc *)ds;   /* ds is its first member */
  fly_free(r->strings);
  fly_free(r->labels);
  fly_free(r->lev);
  fly_free(r->lev_n);
  fly_free(r->ds.cols);
  fly_free(r);
}

const fly_dataset_column *fly_dataset_column_find(const fly_dataset *ds,
                                                  const char *name)
{
  for(size_t j = 0; j < ds->n_cols; j++)
    if( ds->cols[j].name && strcmp(ds->cols[j].name, name) == 0 )
      return &ds->cols[j];
  return NULL;
}

fly_rc fly_dataset_require_numeric(const fly_dataset *ds, fly_err *err)
{
  if( ds->parent_id ) return FLY_OK;
  for(size_t j = 0; j < ds->n_cols; j++){
    const fly_dataset_column *c = &ds->cols[j];
    if( c->categorical )
      return fly_fail(err, FLY_MISUSE, "data set '%s': column '%s' is "
                      "categorical: choose the model's columns with --formula",
                      ds->name, c->name ? c->name : "?");
    if( c->n_missing > 0 )
      return fly_fail(err, FLY_MISUSE, "data set '%s': column '%s' has %lld "
                      "missing values: choose the model's columns with "
                      "--formula, which leaves such rows out", ds->name,
                      c->name ? c->name : "?", (long long)c->n_missing);
  }
  return FLY_OK;
}

const fly_dataset_column *fly_dataset_target(const fly_dataset *ds)
{
  for(size_t j = 0; j < ds->n_cols; j++)
    if( ds->cols[j].role && strcmp(ds->cols[j].role, "target") == 0 )
      return &ds->cols[j];
  return NULL;
}

/* ---- column statistics ---------------------------------------------- */

/* Each statistic is an array over the columns (structure of arrays),
 * padded to whole vectors of LANES columns, and a row's update is the same
 * arithmetic on LANES columns at once, with a missing value masked out
 * rather than branched around (GCC/clang vector extensions).  The update
 * is compiled twice on x86-64: for the base ABI (SSE2: each vector is two
 * registers) and for AVX2 (one register), chosen at run time by the CPU;
 * elsewhere once (NEON on arm64, scalar code where there is no vector
 * unit).  Each lane does the scalar IEEE operations in the scalar order,
 * and neither build contracts them into FMAs (ISO C: no contraction
 * across statements; the AVX2 build has no FMA), so the bits depend
 * neither on the vector width nor on the CPU.  Counts are kept as doubles
 * (exact below 2^53 rows) so the whole update stays in one vector type.
 * All the vector helpers are inlined into the two row loops, so no vector
 * crosses a call. */
#define LANES 4
typedef double   vd __attribute__((vector_size(LANES * sizeof(double))));
typedef int64_t  vm __attribute__((vector_size(LANES * sizeof(double))));

typedef void add_fn(fly_dataset_stats *s, const double *rows, size_t n_rows);
static add_fn *add_pick(void);

struct fly_dataset_stats {
  add_fn  *add;                /* the row loop for this CPU */
  size_t   width, padded;      /* columns; rounded up to LANES */
  int64_t  n;                  /* rows added */
  double  *mean, *m2, *min, *max;  /* padded each, in one allocation */
  double  *cnt, *n_missing;    /* padded each: values added; NaNs seen */
};

fly_rc fly_dataset_stats_new(size_t width, fly_dataset_stats **ps,
                             fly_err *err)
{
  fly_dataset_stats *s = fly_alloc_array(1, sizeof *s);
  size_t w = width / LANES * LANES + LANES;
  *ps = NULL;
  if( s ) s->mean = fly_alloc_array(6 * w, sizeof *s->mean);
  if( !s || !s->mean ){
    fly_dataset_stats_free(s);
    return fly_fail(err, FLY_NOMEM, "column statistics of %zu columns", width);
  }
  s->add = add_pick();
  s->width = width;
  s->padded = w;
  s->n = 0;
  s->m2 = s->mean + w;
  s->min = s->m2 + w;
  s->max = s->min + w;
  s->cnt = s->max + w;
  s->n_missing = s->cnt + w;
  for(size_t j = 0; j < w; j++){
    s->mean[j] = s->m2[j] = s->cnt[j] = s->n_missing[j] = 0.0;
    s->min[j] = INFINITY;
    s->max[j] = -INFINITY;
  }
  *ps = s;
  return FLY_OK;
}

void fly_dataset_stats_free(fly_dataset_stats *s)
{
  if( !s ) return;
  fly_free(s->mean);
  fly_free(s);
}

#define INLINE static inline __attribute__((always_inline))
/* A 32-byte vector passed outside AVX code would change the ABI, which
 * compilers warn about (GCC at the end of the file, hence no pop); these
 * helpers are always inlined, so none is passed. */
#if defined(__clang__)
#  if __has_warning("-Wpsabi")
#    pragma clang diagnostic ignored "-Wpsabi"
#  endif
#elif defined(__GNUC__)
#  pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* m ? a : b, lane by lane (m: all ones or all zeros). */
INLINE vd pick(vm m, vd a, vd b)
{
  return (vd)((m & (vm)a) | (~m & (vm)b));
}

INLINE vd load(const double *p)
{
  vd v;
  memcpy(&v, p, sizeof v);
  return v;
}

INLINE void store(double *p, vd v) { memcpy(p, &v, sizeof v); }

/* Add value vector v to columns j..j+LANES-1 of s. */
INLINE void add_lanes(fly_dataset_stats *s, size_t j, vd v)
{
  /* Welford, in a form that cannot overflow to NaN for values near
   * +-DBL_MAX (v - mean can exceed DBL_MAX; each quotient cannot).  m2 may
   * still reach +inf, which is stored as such: the sd is then too large
   * for a double.  A NaN v leaves every statistic but n_missing as it was
   * (its quotients are computed and dropped; its comparisons are false). */
  const vd one = { 1.0, 1.0, 1.0, 1.0 }, zero = { 0.0, 0.0, 0.0, 0.0 };
  const vd inf = { INFINITY, INFINITY, INFINITY, INFINITY };
  vd old = load(s->mean + j), m2 = load(s->m2 + j);
  vd mn = load(s->min + j), mx = load(s->max + j);
  vm ok = (vm)(v == v);
  vd c = load(s->cnt + j) + pick(ok, one, zero);
  vd nmean = old + (v / c - old / c);
  vd nm2 = m2 + (v - old) * (v - nmean);
  nm2 = pick((vm)(nm2 == nm2), nm2, inf);
  store(s->cnt + j, c);
  store(s->n_missing + j, load(s->n_missing + j) + pick(ok, zero, one));
  store(s->mean + j, pick(ok, nmean, old));
  store(s->m2 + j, pick(ok, nm2, m2));
  store(s->min + j, pick((vm)(v < mn), v, mn));
  store(s->max + j, pick((vm)(v > mx), v, mx));
}

INLINE void add_rows(fly_dataset_stats *s, const double *rows, size_t n_rows)
{
  const size_t w = s->width, full = w / LANES * LANES;
  for(size_t i = 0; i < n_rows; i++){
    const double *x = rows + i * w;
    size_t j;
    for(j = 0; j < full; j += LANES) add_lanes(s, j, load(x + j));
    if( j < w ){
      /* the last columns, padded with NaN: the padding lanes count
       * missing values that nothing reads */
      double t[LANES] = { NAN, NAN, NAN, NAN };
      memcpy(t, x + j, (w - j) * sizeof *t);
      add_lanes(s, j, load(t));
    }
  }
}

static void add_base(fly_dataset_stats *s, const double *rows, size_t n_rows)
{
  add_rows(s, rows, n_rows);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2")))
static void add_avx2(fly_dataset_stats *s, const double *rows, size_t n_rows)
{
  add_rows(s, rows, n_rows);
}
static add_fn *add_pick(void)
{
  return __builtin_cpu_supports("avx2") ? add_avx2 : add_base;
}
#else
static add_fn *add_pick(void) { return add_base; }
#endif

void fly_dataset_stats_add(fly_dataset_stats *s, const double *rows,
                           size_t n_rows)
{
  s->add(s, rows, n_rows);
  s->n += (int64_t)n_rows;
}

int64_t fly_dataset_stats_rows(const fly_dataset_stats *s) { return s->n; }

void fly_dataset_stats_get(const fly_dataset_stats *s, size_t j,
                           fly_dataset_column *c)
{
  int64_t n = (int64_t)s->cnt[j];
  c->n = n;
  c->n_missing = (int64_t)s->n_missing[j];
  c->mean = s->mean[j];
  c->sd = n > 1 ? sqrt(s->m2[j] / (double)(n - 1)) : 0.0;
  c->min = s->min[j];
  c->max = s->max[j];
}

/* ---- writing -------------------------------------------------------- */

fly_rc fly_dataset_create(fly_db *db, const fly_dataset_spec *sp, int64_t *id,
                          fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "INSERT INTO dataset(name, source, n_rows, width, "
      "n_features, has_intercept, target_name, page_rows, n_pages, prec, "
      "raw_bytes, stored_bytes) VALUES (?1,?2,1,?3,?4,?5,?6,?7,0,?8,0,0)", &st, err);
  if( rc ) return rc;
  sqlite3_bind_text(st, 1, sp->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, sp->source, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, sp->width);
  sqlite3_bind_int64(st, 4, sp->width - 1);
  sqlite3_bind_int(st, 5, sp->has_intercept);
  sqlite3_bind_text(st, 6, sp->target_name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 7, sp->page_rows);
  sqlite3_bind_int(st, 8, sp->prec);
  if( sqlite3_step(st) != SQLITE_DONE ){
    if( sqlite3_extended_errcode(fly_db_sqlite(db)) == SQLITE_CONSTRAINT_UNIQUE )
      rc = fly_fail(err, FLY_MISUSE, "%s already has a data set named '%s' "
                    "(choose another with --name)", fly_db_path(db), sp->name);
    else
      rc = fly_db_fail(db, err, "creating the data set");
  }else{
    *id = sqlite3_last_insert_rowid(fly_db_sqlite(db));
  }
  sqlite3_finalize(st);
  return rc;
}

/* The level rows of column c of data set id. */
static fly_rc insert_levels(fly_db *db, sqlite3_stmt *st, int64_t id,
                            const fly_dataset_column *c, fly_err *err)
{
  for(size_t k = 0; k < c->n_levels; k++){
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, c->idx);
    sqlite3_bind_int64(st, 3, (int64_t)k);
    sqlite3_bind_text(st, 4, c->levels[k], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, c->level_counts[k]);
    if( sqlite3_step(st) != SQLITE_DONE )
      return fly_db_fail(db, err, "storing the levels of a categorical column");
    sqlite3_reset(st);
  }
  return FLY_OK;
}

static fly_rc insert_columns(fly_db *db, int64_t id, size_t width,
                             const fly_dataset_column *cols,
                             const fly_dataset_stats *sts, fly_err *err)
{
  sqlite3_stmt *st = NULL, *ls = NULL;
  fly_rc rc = fly_db_prepare(db,
      "INSERT INTO dataset_column(dataset_id, idx, name, role, csv_col, n, "
      "mean, sd, min, max, type, n_missing) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,"
      "?9,?10,?11,?12)", &st, err);
  if( rc == FLY_OK )
    rc = fly_db_prepare(db, "INSERT INTO level(dataset_id, idx, code, label,"
                        " count) VALUES (?1,?2,?3,?4,?5)", &ls, err);
  if( rc ) goto done;
  for(size_t j = 0; j < width; j++){
    fly_dataset_column c = cols[j];
    fly_dataset_stats_get(sts, j, &c);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, c.idx);
    sqlite3_bind_text(st, 3, c.name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, c.role, -1, SQLITE_STATIC);
    if( c.csv_col <= 0 ) sqlite3_bind_null(st, 5);
    else sqlite3_bind_int64(st, 5, c.csv_col);
    sqlite3_bind_int64(st, 6, c.n);
    sqlite3_bind_double(st, 7, c.mean);
    sqlite3_bind_double(st, 8, c.sd);
    sqlite3_bind_double(st, 9, c.min);
    sqlite3_bind_double(st, 10, c.max);
    sqlite3_bind_text(st, 11, c.categorical ? "categorical" : "numeric", -1,
                      SQLITE_STATIC);
    sqlite3_bind_int64(st, 12, c.n_missing);
    if( sqlite3_step(st) != SQLITE_DONE ){
      rc = fly_db_fail(db, err, "storing column statistics");
      break;
    }
    sqlite3_reset(st);
    if( c.categorical && (rc = insert_levels(db, ls, id, &c, err)) ) break;
  }
done:
  sqlite3_finalize(st);
  sqlite3_finalize(ls);
  return rc;
}

fly_rc fly_dataset_set_derived(fly_db *db, int64_t id, int64_t parent,
                               const char *key, int64_t n_omitted,
                               size_t n_omit, const int64_t *omit_idx,
                               const int64_t *omit, fly_err *err)
{
  sqlite3_stmt *st = NULL, *os = NULL;
  fly_rc rc = fly_db_prepare(db, "INSERT INTO derived(dataset_id, parent_id,"
                             " design_key, n_omitted) VALUES (?1,?2,?3,?4)", &st, err);
  if( rc == FLY_OK )
    rc = fly_db_prepare(db, "INSERT INTO derived_omit(dataset_id, idx, n_rows)"
                        " VALUES (?1,?2,?3)", &os, err);
  if( rc ) goto done;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, parent);
  sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, n_omitted);
  if( sqlite3_step(st) != SQLITE_DONE ){
    rc = fly_db_fail(db, err, "recording the derived data set");
    goto done;
  }
  for(size_t j = 0; j < n_omit; j++){
    if( omit[j] == 0 ) continue;
    sqlite3_bind_int64(os, 1, id);
    sqlite3_bind_int64(os, 2, omit_idx[j]);
    sqlite3_bind_int64(os, 3, omit[j]);
    if( sqlite3_step(os) != SQLITE_DONE ){
      rc = fly_db_fail(db, err, "recording the rows a design left out");
      goto done;
    }
    sqlite3_reset(os);
  }
done:
  sqlite3_finalize(st);
  sqlite3_finalize(os);
  return rc;
}

fly_rc fly_dataset_find_derived(fly_db *db, int64_t parent, const char *key,
                                int64_t *id, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT dataset_id FROM derived WHERE"
                             " parent_id = ?1 AND design_key = ?2", &st, err);
  if( rc ) return rc;
  *id = 0;
  sqlite3_bind_int64(st, 1, parent);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ) *id = sqlite3_column_int64(st, 0);
  else if( s != SQLITE_DONE ) rc = fly_db_fail(db, err, "looking up a derived data set");
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_dataset_omitted(fly_db *db, int64_t id, fly_dataset_omit_fn *fn,
                           void *u, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  int s;
  fly_rc rc = fly_db_prepare(db, "SELECT idx, n_rows FROM derived_omit WHERE"
                             " dataset_id = ?1 ORDER BY idx", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW )
    fn(u, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
  if( s != SQLITE_DONE ) rc = fly_db_fail(db, err, "reading table derived_omit");
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_dataset_set_counts(fly_db *db, int64_t id, int64_t n_rows,
                              int64_t n_pages, int64_t raw_bytes,
                              int64_t stored_bytes, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "UPDATE dataset SET n_rows=?2, n_pages=?3, "
                             "raw_bytes=?4, stored_bytes=?5 WHERE id=?1", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, n_rows);
  sqlite3_bind_int64(st, 3, n_pages);
  sqlite3_bind_int64(st, 4, raw_bytes);
  sqlite3_bind_int64(st, 5, stored_bytes);
  if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "finishing the data set");
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_dataset_finish(fly_db *db, int64_t id, int64_t n_pages,
                          int64_t raw_bytes, int64_t stored_bytes,
                          const fly_dataset_column *cols,
                          const fly_dataset_stats *sts, fly_err *err)
{
  fly_rc rc = fly_dataset_set_counts(db, id, sts->n, n_pages, raw_bytes,
                                     stored_bytes, err);
  if( rc == FLY_OK ) rc = insert_columns(db, id, sts->width, cols, sts, err);
  return rc;
}

/* ---- integrity check ------------------------------------------------ */

/* What the check recomputes from the pages: the statistics, and for each
 * categorical column the rows holding each code and the values that are
 * not a code. */
typedef struct recount {
  fly_dataset_stats *st;
  size_t    width;
  int64_t  *n_levels;    /* width: levels of column j, -1 if numeric */
  int64_t **counts;      /* width: n_levels[j] counters, or NULL */
  int64_t  *n_bad;       /* width: values neither a code nor NaN */
  double   *first_bad;   /* width: the first such value */
} recount;

static void recount_free(recount *r)
{
  if( r->counts )
    for(size_t j = 0; j < r->width; j++) fly_free(r->counts[j]);
  fly_free(r->counts);
  fly_free(r->n_levels);
  fly_free(r->n_bad);
  fly_free(r->first_bad);
  fly_dataset_stats_free(r->st);
  memset(r, 0, sizeof *r);
}

/* Set up r for data set id of width columns from its column types and
 * level rows.  0 on success. */
static int recount_new(fly_db *db, fly_checker *ck, int64_t id, size_t width,
                       recount *r)
{
  sqlite3_stmt *st;
  int s, ok = 1;
  memset(r, 0, sizeof *r);
  r->width = width;
  r->n_levels = fly_alloc_array(width, sizeof *r->n_levels);
  r->counts = fly_alloc_array(width, sizeof *r->counts);
  r->n_bad = fly_alloc_array(width, sizeof *r->n_bad);
  r->first_bad = fly_alloc_array(width, sizeof *r->first_bad);
  if( !r->n_levels || !r->counts || !r->n_bad || !r->first_bad
      || fly_dataset_stats_new(width, &r->st, NULL) ){
    recount_free(r);
    return 1;
  }
  for(size_t j = 0; j < width; j++) r->n_levels[j] = -1;
  st = fly_check_prepare(db, ck, "SELECT c.idx, (SELECT count(*) FROM level l"
      " WHERE l.dataset_id = c.dataset_id AND l.idx = c.idx) FROM dataset_column c"
      " WHERE c.dataset_id = ?1 AND c.type = 'categorical'");
  if( !st ){ recount_free(r); return 1; }
  sqlite3_bind_int64(st, 1, id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t j = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
    if( j < 0 || (uint64_t)j >= width ) continue;   /* check_columns reports it */
    r->n_levels[j] = n;
    r->counts[j] = fly_alloc_array(n ? (size_t)n : 1, sizeof **r->counts);
    if( !r->counts[j] ) ok = 0;
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "reading table dataset_column");
  sqlite3_finalize(st);
  if( !ok || s != SQLITE_DONE ){ recount_free(r); return 1; }
  return 0;
}

static void stats_page(void *u, int64_t k, const double *rows, size_t n)
{
  recount *r = u;
  (void)k;
  fly_dataset_stats_add(r->st, rows, n);
  for(size_t j = 0; j < r->width; j++){
    if( !r->counts[j] ) continue;
    for(size_t i = 0; i < n; i++){
      double v = rows[i * r->width + j];
      if( isnan(v) ) continue;
      if( v >= 0 && v < (double)r->n_levels[j] && v == floor(v) )
        r->counts[j][(size_t)v]++;
      else if( r->n_bad[j]++ == 0 )
        r->first_bad[j] = v;
    }
  }
}

/* The level rows of data set ds: only on categorical columns, codes
 * 0..n-1 in order, and (r non-NULL) the counts r recomputed. */
static void check_levels(fly_db *db, fly_checker *ck,
                         const fly_dataset_checked *ds, const recount *r)
{
  sqlite3_stmt *st = fly_check_prepare(db, ck,
      "SELECT l.idx, l.code, l.count, c.type FROM level l LEFT JOIN"
      " dataset_column c ON c.dataset_id = l.dataset_id AND c.idx = l.idx"
      " WHERE l.dataset_id = ?1 ORDER BY l.idx, l.code");
  int64_t prev = -1, next = 0;
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, ds->id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t j = sqlite3_column_int64(st, 0), code = sqlite3_column_int64(st, 1);
    int64_t cnt = sqlite3_column_int64(st, 2);
    const char *type = (const char *)sqlite3_column_text(st, 3);
    if( j != prev ){ prev = j; next = 0; }
    if( !type || strcmp(type, "categorical") != 0 ){
      if( code == 0 )
        fly_check_problem(ck, "level rows for column %lld, which is not "
                          "categorical", (long long)j);
      continue;
    }
    if( code != next )
      fly_check_problem(ck, "column %lld: level code %lld, want %lld (codes "
                        "are 0..n_levels-1)", (long long)j, (long long)code,
                        (long long)next);
    next = code + 1;
    if( r && j >= 0 && (uint64_t)j < r->width && r->counts[j]
        && code >= 0 && code < r->n_levels[j] && r->counts[j][code] != cnt )
      fly_check_problem(ck, "column %lld: level %lld counts %lld rows, the "
                        "pages hold %lld", (long long)j, (long long)code,
                        (long long)cnt, (long long)r->counts[j][code]);
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "reading table level");
  sqlite3_finalize(st);
  if( r )
    for(size_t j = 0; j < r->width; j++)
      if( r->n_bad[j] )
        fly_check_problem(ck, "column %zu is categorical with %lld levels, but "
                          "the pages hold %lld values that are no level code "
                          "(the first %.17g)", j, (long long)r->n_levels[j],
                          (long long)r->n_bad[j], r->first_bad[j]);
}

/* dataset_column rows of ds: one per stored column with the right role,
 * and (rs non-NULL) the statistics rs recomputed. */
static void check_columns(fly_db *db, fly_checker *ck,
                          const fly_dataset_checked *ds, int has_icpt,
                          const char *target, const fly_dataset_stats *rs)
{
  sqlite3_stmt *st = fly_check_prepare(db, ck,
      "SELECT idx, name, role, n, mean, sd, min, max, type, n_missing,"
      " (SELECT sum(count) FROM level l WHERE l.dataset_id = c.dataset_id"
      "  AND l.idx = c.idx)"
      " FROM dataset_column c WHERE dataset_id = ?1"
      " ORDER BY idx");
  int64_t next = 0, w = ds->width;
  char buf[48];
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, ds->id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t j = sqlite3_column_int64(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    const char *role = (const char *)sqlite3_column_text(st, 2);
    const char *want = j == w - 1 ? "target"
                     : j == 0 && has_icpt ? "intercept" : "feature";
    if( !name ) name = "";
    if( j < 0 || j >= w ){
      fly_check_problem(ck, "dataset_column idx %lld ('%s'): the data set stores "
                        "columns 0..%lld", (long long)j, name, (long long)w - 1);
      continue;
    }
    if( j > next )
      fly_check_problem(ck, "dataset_column rows of column%s %s missing",
                        j - 1 > next ? "s" : "",
                        fly_check_span(buf, sizeof buf, next, j - 1));
    next = j + 1;
    if( !role || strcmp(role, want) != 0 )
      fly_check_problem(ck, "column %lld ('%s'): role '%s', want '%s'",
                        (long long)j, name, role ? role : "NULL", want);
    if( j == w - 1 && target && strcmp(name, target) != 0 )
      fly_check_problem(ck, "column %lld: name '%s', but dataset.target_name is '%s'",
                        (long long)j, name, target);
    const char *type = (const char *)sqlite3_column_text(st, 8);
    int64_t n = sqlite3_column_int64(st, 3), n_miss = sqlite3_column_int64(st, 9);
    if( n + n_miss != ds->n_rows )
      fly_check_problem(ck, "column %lld ('%s'): %lld values and %lld missing, "
                        "but the data set has %lld rows", (long long)j, name,
                        (long long)n, (long long)n_miss, (long long)ds->n_rows);
    if( type && strcmp(type, "categorical") == 0 ){
      int64_t sum = sqlite3_column_int64(st, 10);
      if( sum != n )
        fly_check_problem(ck, "column %lld ('%s'): its levels count %lld rows, "
                          "want %lld (the values not missing)", (long long)j,
                          name, (long long)sum, (long long)n);
    }
    if( !rs ) continue;

    fly_dataset_column c;
    fly_dataset_stats_get(rs, (size_t)j, &c);
    if( n_miss != c.n_missing )
      fly_check_problem(ck, "column %lld ('%s'): n_missing %lld, but the pages "
                        "hold %lld missing values", (long long)j, name,
                        (long long)n_miss, (long long)c.n_missing);
    double v[4], r[4] = { c.mean, c.sd, c.min, c.max };
    const char *what[4] = { "mean", "sd", "min", "max" };
    double scale = fmax(fabs(c.min), fabs(c.max));
    for(int q = 0; q < 4; q++) v[q] = sqlite3_column_double(st, 4 + q);
    if( n != c.n )
      fly_check_problem(ck, "column %lld ('%s'): n %lld, but the pages hold %lld rows",
                        (long long)j, name, (long long)n, (long long)c.n);
    for(int q = 0; q < 4; q++){
      int okq = q < 2 ? fly_check_close(v[q], r[q], scale)
                      : fly_check_same(v[q], r[q]);
      if( !okq )
        fly_check_problem(ck, "column %lld ('%s'): %s %.17g stored, %.17g "
                          "recomputed from the pages", (long long)j, name,
                          what[q], v[q], r[q]);
    }
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "reading table dataset_column");
  else if( next < w )
    fly_check_problem(ck, "dataset_column rows of column%s %s missing",
                      w - 1 > next ? "s" : "",
                      fly_check_span(buf, sizeof buf, next, w - 1));
  sqlite3_finalize(st);
}

/* One data set row: shape, pages, columns.  Fills ds. */
/* A shard manifest's record of its sharded data set: the whole's shape
 * (n_rows, width, page_rows and prec as the shards have them), and no
 * pages, bytes or columns of its own. */
static void check_sharded(fly_db *db, fly_checker *ck, fly_dataset_checked *ds,
                          int64_t n_feat, int64_t raw, int64_t stored)
{
  fly_pages_info none = { 0, (size_t)ds->width, ds->page_rows, 0, ds->prec };
  fly_pages_scan sr;
  sqlite3_stmt *st;

  ds->sharded = 1;
  if( n_feat != ds->width - 1 )
    fly_check_problem(ck, "n_features is %lld, but rows of %lld values hold %lld "
                      "features and the target", (long long)n_feat,
                      (long long)ds->width, (long long)ds->width - 1);
  if( ds->n_pages != 0 || raw != 0 || stored != 0 )
    fly_check_problem(ck, "a record of sharded rows with n_pages %lld, raw_bytes %lld, "
                      "stored_bytes %lld (want 0: its rows are in the shards)",
                      (long long)ds->n_pages, (long long)raw, (long long)stored);
  fly_pages_check(db, FLY_TABLE_DATA, ds->id, &none, NULL, NULL, ck, &sr);
  st = fly_check_prepare(db, ck, "SELECT count(*) FROM dataset_column WHERE dataset_id = ?1");
  if( !st ) return;
  sqlite3_bind_int64(st, 1, ds->id);
  if( sqlite3_step(st) != SQLITE_ROW )
    fly_check_step_failed(db, ck, "reading dataset_column");
  else if( sqlite3_column_int64(st, 0) != 0 )
    fly_check_problem(ck, "%lld dataset_column rows for a record of sharded rows (its "
                      "columns are in the manifest's shard_column)",
                      (long long)sqlite3_column_int64(st, 0));
  sqlite3_finalize(st);
}

static void check_one(fly_db *db, fly_checker *ck, sqlite3_stmt *row,
                      fly_dataset_checked *ds)
{
  int64_t n_feat = sqlite3_column_int64(row, 4);
  int has_icpt = sqlite3_column_int(row, 5);
  const char *target = (const char *)sqlite3_column_text(row, 6);
  int64_t raw = sqlite3_column_int64(row, 9);
  int64_t stored = sqlite3_column_int64(row, 10);
  const char *name = (const char *)sqlite3_column_text(row, 1);
  const char *source = (const char *)sqlite3_column_text(row, 12);
  recount rc = { 0 };
  int counted = 0;
  fly_pages_scan sr;
  fly_pages_info t;
  int64_t before;

  memset(ds, 0, sizeof *ds);
  ds->id = sqlite3_column_int64(row, 0);
  snprintf(ds->name, sizeof ds->name, "%s", name ? name : "?");
  ds->n_rows = sqlite3_column_int64(row, 2);
  ds->width = sqlite3_column_int64(row, 3);
  ds->page_rows = sqlite3_column_int64(row, 7);
  ds->n_pages = sqlite3_column_int64(row, 8);
  ds->prec = sqlite3_column_int(row, 11);
  fly_check_scope(ck, "data set '%s' (id %lld)", ds->name, (long long)ds->id);
  before = ck->n_problems;

  if( ds->width < 2 || ds->width > INT32_MAX || ds->page_rows < 1
      || ds->n_rows < 1 || ds->n_rows > INT64_MAX / 8 / ds->width
      || (ds->prec != FLY_PREC_F64 && ds->prec != FLY_PREC_F32)
      || (uint64_t)ds->page_rows * (uint64_t)ds->width > (uint64_t)INT32_MAX / 8 ){
    fly_check_problem(ck, "bad shape (n_rows %lld, width %lld, page_rows %lld, "
                      "prec %d): pages not checked", (long long)ds->n_rows,
                      (long long)ds->width, (long long)ds->page_rows, ds->prec);
    return;
  }
  ds->shape_ok = 1;
  if( source && strcmp(source, FLY_DATASET_SHARDS) == 0 ){
    check_sharded(db, ck, ds, n_feat, raw, stored);
    return;
  }
  int64_t want_pages = (ds->n_rows - 1) / ds->page_rows + 1;
  if( ds->n_pages != want_pages )
    fly_check_problem(ck, "n_pages is %lld, but %lld rows of %lld a page need %lld",
                      (long long)ds->n_pages, (long long)ds->n_rows,
                      (long long)ds->page_rows, (long long)want_pages);
  if( raw != ds->n_rows * ds->width * ds->prec )
    fly_check_problem(ck, "raw_bytes is %lld, want %lld (%lld rows x %lld values "
                      "x %d bytes)", (long long)raw,
                      (long long)(ds->n_rows * ds->width * ds->prec),
                      (long long)ds->n_rows, (long long)ds->width, ds->prec);
  if( n_feat != ds->width - 1 )
    fly_check_problem(ck, "n_features is %lld, but rows of %lld values hold %lld "
                      "features and the target", (long long)n_feat,
                      (long long)ds->width, (long long)ds->width - 1);

  t.n_rows = ds->n_rows;
  t.width = (size_t)ds->width;
  t.page_rows = ds->page_rows;
  t.n_pages = want_pages;
  t.prec = ds->prec;
  if( !ck->quick ){
    counted = recount_new(db, ck, ds->id, t.width, &rc) == 0;
    if( !counted ) fly_check_problem(ck, "out of memory for column statistics");
  }
  fly_pages_check(db, FLY_TABLE_DATA, ds->id, &t, counted ? stats_page : NULL,
                  &rc, ck, &sr);
  if( !sr.layout_bad && sr.n_rows != (uint64_t)ds->n_rows )
    fly_check_problem(ck, "the pages hold %llu rows, dataset.n_rows is %lld",
                      (unsigned long long)sr.n_rows, (long long)ds->n_rows);
  if( !sr.layout_bad && sr.bytes != (uint64_t)stored )
    fly_check_problem(ck, "stored_bytes is %lld, the payloads hold %llu bytes",
                      (long long)stored, (unsigned long long)sr.bytes);
  /* Sound: the rows are what ingest stored (the columns' rows aside). */
  ds->sound = ck->n_problems == before;
  check_columns(db, ck, ds, has_icpt, target, counted && !sr.bad ? rc.st : NULL);
  check_levels(db, ck, ds, counted && !sr.bad ? &rc : NULL);
  recount_free(&rc);

  if( ds->sound ){
    fly_err e = {0};
    if( fly_pages_open(db, FLY_TABLE_DATA, ds->id, 0, &ds->pg, &e) ){
      fly_check_problem(ck, "the page reader refuses it: %s", e.msg);
      ds->sound = 0;
    }
  }
}

/* Table derived: a derived data set's rows and the parent rows it left
 * out add up to the parent's rows, each derived_omit count is at most the
 * rows left out and together at least them (a row may count for several
 * columns), and the columns named are the parent's. */
static void check_derived(fly_db *db, fly_checker *ck)
{
  sqlite3_stmt *st;
  int s;
  fly_check_scope(ck, "table derived");
  st = fly_check_prepare(db, ck,
      "SELECT d.dataset_id, c.name, c.n_rows, p.name, p.n_rows, d.n_omitted,"
      " (SELECT coalesce(sum(n_rows), 0) FROM derived_omit o"
      "   WHERE o.dataset_id = d.dataset_id),"
      " (SELECT coalesce(max(n_rows), 0) FROM derived_omit o"
      "   WHERE o.dataset_id = d.dataset_id),"
      " (SELECT count(*) FROM derived_omit o WHERE o.dataset_id = d.dataset_id"
      "   AND NOT EXISTS (SELECT 1 FROM dataset_column pc WHERE"
      "   pc.dataset_id = d.parent_id AND pc.idx = o.idx)),"
      " (SELECT count(*) FROM derived x WHERE x.dataset_id = d.parent_id)"
      " FROM derived d JOIN dataset c ON c.id = d.dataset_id"
      " JOIN dataset p ON p.id = d.parent_id ORDER BY d.dataset_id");
  if( !st ) return;
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    long long id = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 2);
    long long pn = sqlite3_column_int64(st, 4), om = sqlite3_column_int64(st, 5);
    long long sum = sqlite3_column_int64(st, 6), mx = sqlite3_column_int64(st, 7);
    const char *nm = (const char *)sqlite3_column_text(st, 1);
    const char *pnm = (const char *)sqlite3_column_text(st, 3);
    if( !nm ) nm = "?";
    if( !pnm ) pnm = "?";
    if( n + om != pn )
      fly_check_problem(ck, "data set '%s' (id %lld): %lld rows and %lld left out, "
                        "but its parent '%s' has %lld", nm, id, n, om, pnm, pn);
    if( sum < om || mx > om )
      fly_check_problem(ck, "data set '%s' (id %lld): the rows left out per column "
                        "(%lld in all, at most %lld) do not account for the %lld "
                        "left out", nm, id, sum, mx, om);
    if( sqlite3_column_int64(st, 8) > 0 )
      fly_check_problem(ck, "data set '%s' (id %lld): derived_omit names columns "
                        "its parent '%s' does not have", nm, id, pnm);
    if( sqlite3_column_int64(st, 9) > 0 )
      fly_check_problem(ck, "data set '%s' (id %lld): its parent '%s' is itself "
                        "derived", nm, id, pnm);
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "reading table derived");
  sqlite3_finalize(st);
}

fly_rc fly_dataset_check(fly_db *db, fly_checker *ck,
                         fly_dataset_checked **pds, size_t *pn, fly_err *err)
{
  sqlite3_stmt *st;
  fly_dataset_checked *ds = NULL;
  size_t n = 0, cap = 0;
  int s;

  *pds = NULL;
  *pn = 0;
  if( !ck ) return fly_fail(err, FLY_MISUSE, "fly_dataset_check: no checker");
  fly_check_scope(ck, "table dataset");
  st = fly_check_prepare(db, ck,
      "SELECT id, name, n_rows, width, n_features, has_intercept,"
      " target_name, page_rows, n_pages, raw_bytes, stored_bytes, prec, source"
      " FROM dataset ORDER BY id");
  if( !st ) goto done;
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    if( n == cap ){
      size_t nc = cap ? 2 * cap : 8;
      fly_dataset_checked *g = fly_realloc_array(ds, nc, sizeof *ds);
      if( !g ){ fly_check_problem(ck, "out of memory for %zu data sets", nc); break; }
      ds = g;
      cap = nc;
    }
    check_one(db, ck, st, &ds[n++]);
    fly_check_scope(ck, "%s", "");
  }
  if( s != SQLITE_DONE && s != SQLITE_ROW ){
    fly_check_scope(ck, "table dataset");
    fly_check_step_failed(db, ck, "reading table dataset");
  }
  sqlite3_finalize(st);
  check_derived(db, ck);
done:
  fly_check_scope(ck, "%s", "");
  *pds = ds;
  *pn = n;
  return FLY_OK;
}

void fly_dataset_checked_free(fly_dataset_checked *ds, size_t n)
{
  if( !ds ) return;
  for(size_t i = 0; i < n; i++) fly_pages_close(ds[i].pg);
  fly_free(ds);
}

fly_dataset_checked *fly_dataset_checked_find(fly_dataset_checked *ds,
                                              size_t n, int64_t id)
{
  for(size_t i = 0; i < n; i++) if( ds[i].id == id ) return &ds[i];
  return NULL;
}
