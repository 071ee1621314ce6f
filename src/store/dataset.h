/*
 * dataset.h -- a data set's metadata and column table: the only code that
 * reads or writes tables `dataset` and `dataset_column` (its rows, in
 * table `page`, are written by store/pagewriter.h and read by
 * store/pages.h).
 *
 * A data set holds n_rows rows of width values each, stored as
 * [1 (intercept)] features... target: n_features = width - 1 (intercept
 * included) and the target last, so a block of rows is the design matrix
 * with the target in its last column.  Every stored column has a
 * dataset_column row (idx 0..width-1) with its name, role, type (numeric
 * or categorical), missing count and statistics over its values as stored
 * (after f32 rounding), missing ones left out.  A categorical column holds
 * level codes 0..n_levels-1, its labels and counts in table `level`; a
 * missing value is a NaN in any column.  A data set derived from another
 * by a model design (io/design.h) has a row in table `derived`
 * (docs/format.md §2.1, §2.5).
 *
 * The statistics are computed by fly_dataset_stats: ingest feeds it the
 * rows as it stores them, and fly_dataset_check feeds it the decoded pages,
 * so a sound data set reproduces the stored bits.
 *
 * Handles belong to one thread; nothing here keeps a statement open
 * between calls.
 */
#ifndef FLY_DATASET_H
#define FLY_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "store/check.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/err.h"

/* One stored column.  Strings belong to the fly_dataset they came from. */
typedef struct fly_dataset_column {
  int64_t     idx;        /* stored column, 0-based */
  const char *name;       /* "(Intercept)" for the intercept */
  const char *role;       /* "intercept", "feature" or "target" */
  int64_t     csv_col;    /* 1-based CSV column, 0 for the intercept */
  int64_t     n;          /* rows the statistics cover: those not missing */
  double      mean, sd, min, max;  /* sd: n-1 denominator, 0 for one row */
  int         categorical;/* 1: values are level codes 0..n_levels-1 */
  int64_t     n_missing;  /* rows holding NaN (a missing cell) */
  size_t      n_levels;   /* categorical: levels, by code */
  const char *const *levels;      /* categorical: label of each code */
  const int64_t     *level_counts;/* categorical: rows holding each code */
} fly_dataset_column;

/* A data set's metadata and columns, as stored.  Strings are NULL where
 * the file holds NULL (only in a damaged file). */
typedef struct fly_dataset {
  int64_t     id;
  const char *name;
  const char *source;         /* CSV path or "<stdin>" */
  const char *target_name;
  const char *created_at;     /* "YYYY-MM-DDTHH:MM:SSZ" */
  int64_t     n_rows;
  int64_t     width;          /* values per stored row */
  int64_t     n_features;     /* D, intercept included: width - 1 */
  int         has_intercept;  /* 1: column 0 is the constant 1 */
  int64_t     page_rows;      /* rows per page (the last may hold fewer) */
  int64_t     n_pages;
  int         prec;           /* FLY_PREC_F64 or FLY_PREC_F32 */
  int64_t     raw_bytes;      /* n_rows x width x prec */
  int64_t     stored_bytes;   /* sum of the page payloads */
  size_t      n_cols;         /* column rows, in idx order */
  fly_dataset_column *cols;
  int64_t     parent_id;      /* derived (io/design.h): the data set it
                                 was built from; 0 for an ingested one */
  const char *design_key;     /* derived: the design's key; else NULL */
  int64_t     n_omitted;      /* derived: parent rows left out */
} fly_dataset;

/* The id of data set `name`; name NULL: the only ingested one (data sets
 * derived by a design are not counted).  FLY_RANGE if there is no such
 * data set (or none at all), FLY_MISUSE if name is NULL and there are
 * several (the message lists their names). */
fly_rc fly_dataset_find(fly_db *db, const char *name, int64_t *id,
                        fly_err *err);

/* The ids of all data sets, ascending, in *ids (*n of them; free with
 * fly_free; NULL when there are none). */
fly_rc fly_dataset_ids(fly_db *db, int64_t **ids, size_t *n, fly_err *err);

/* Load data set id with its column table.  FLY_RANGE if there is none.
 * *pds NULL on failure; free with fly_dataset_free. */
fly_rc fly_dataset_load(fly_db *db, int64_t id, fly_dataset **pds,
                        fly_err *err);
void   fly_dataset_free(fly_dataset *ds);              /* NULL: no-op */

/* The column called name, or NULL.  O(width). */
const fly_dataset_column *fly_dataset_column_find(const fly_dataset *ds,
                                                  const char *name);

/* FLY_OK if every stored column of ds is numeric without missing values,
 * so that a model can use its rows as they are; else FLY_MISUSE naming
 * the first categorical column or column with missing values ("data set
 * 'd': column 'cut' is categorical: choose the model's columns with
 * --formula").  Derived data sets pass (their categorical target holds
 * class indices). */
fly_rc fly_dataset_require_numeric(const fly_dataset *ds, fly_err *err);

/* The target column (role 'target'), or NULL in a damaged file. */
const fly_dataset_column *fly_dataset_target(const fly_dataset *ds);

/* ---- column statistics ---------------------------------------------- */

/* Running mean and variance (Welford) and range of each column of rows of
 * width values, in a form that cannot overflow to NaN for values near
 * +-DBL_MAX; a variance beyond a double is +inf.  A NaN (a missing value)
 * is counted as missing and left out of the column's statistics.  Rows
 * must be added in stored order for the bits to match a data set's stored
 * statistics. */
typedef struct fly_dataset_stats fly_dataset_stats;

fly_rc fly_dataset_stats_new(size_t width, fly_dataset_stats **ps,
                             fly_err *err);                 /* *ps NULL on failure */
void   fly_dataset_stats_free(fly_dataset_stats *s);        /* NULL: no-op */

/* Add n_rows rows (row-major, width values each).  Never allocates. */
void   fly_dataset_stats_add(fly_dataset_stats *s, const double *rows,
                             size_t n_rows);

/* Rows added so far. */
int64_t fly_dataset_stats_rows(const fly_dataset_stats *s);

/* Column j's statistics into c->n, mean, sd, min, max and n_missing
 * (other fields untouched).  A column with no value: mean and sd 0, min
 * +inf, max -inf. */
void   fly_dataset_stats_get(const fly_dataset_stats *s, size_t j,
                             fly_dataset_column *c);

/* ---- writing (ingest) ------------------------------------------------ */

/* What a new data set is before its rows are known. */
typedef struct fly_dataset_spec {
  const char *name;
  const char *source;         /* CSV path or "<stdin>" */
  const char *target_name;
  int64_t     width;          /* values per stored row, >= 2 */
  int         has_intercept;
  int64_t     page_rows;      /* >= 1 */
  int         prec;           /* FLY_PREC_F64 or FLY_PREC_F32 */
} fly_dataset_spec;

/* Insert the dataset row of s (its counts provisional until
 * fly_dataset_finish), inside the caller's transaction; *id is its id, the
 * owner to pass to fly_pagewriter_open.  FLY_MISUSE if the file already has
 * a data set of that name. */
fly_rc fly_dataset_create(fly_db *db, const fly_dataset_spec *s, int64_t *id,
                          fly_err *err);

/* Record the counts of data set id (what fly_pages_open reads), before
 * its columns are known: for a pass over the pages inside the ingest's
 * transaction.  fly_dataset_finish records them again. */
fly_rc fly_dataset_set_counts(fly_db *db, int64_t id, int64_t n_rows,
                              int64_t n_pages, int64_t raw_bytes,
                              int64_t stored_bytes, fly_err *err);

/* Record the final counts of data set id and its column table: cols[j]
 * (j < width) gives idx, name, role, csv_col and categorical of stored
 * column j, and for a categorical column its levels (n_levels labels and
 * level_counts, by code); the statistics and missing counts come from st,
 * which saw every row.  Inside the caller's transaction. */
fly_rc fly_dataset_finish(fly_db *db, int64_t id, int64_t n_pages,
                          int64_t raw_bytes, int64_t stored_bytes,
                          const fly_dataset_column *cols,
                          const fly_dataset_stats *st, fly_err *err);

/* Record that data set id is derived from parent by the design whose key
 * is key, n_omitted parent rows left out, omit[j] of them (j < n_omit) for
 * a missing value in the parent's column omit_idx[j] (zeros are not
 * stored).  Inside the caller's transaction. */
fly_rc fly_dataset_set_derived(fly_db *db, int64_t id, int64_t parent,
                               const char *key, int64_t n_omitted,
                               size_t n_omit, const int64_t *omit_idx,
                               const int64_t *omit, fly_err *err);

/* The derived data set of parent for design key, in *id (0 if none). */
fly_rc fly_dataset_find_derived(fly_db *db, int64_t parent, const char *key,
                                int64_t *id, fly_err *err);

/* Rows of the parent left out of derived data set id because of its
 * column idx, through fn (idx ascending). */
typedef void fly_dataset_omit_fn(void *u, int64_t idx, int64_t n_rows);
fly_rc fly_dataset_omitted(fly_db *db, int64_t id, fly_dataset_omit_fn *fn,
                           void *u, fly_err *err);

/* ---- integrity check ------------------------------------------------ */

/* A data set as the check found it, for the checks of what refers to it
 * (bound sets, runs). */
/* dataset.source of a shard manifest's record of the whole data set that
 * its runs refer to (shard/shard_sample.c writes it): no pages, no columns. */
#define FLY_DATASET_SHARDS "shards"

typedef struct fly_dataset_checked {
  int64_t    id, n_rows, width, page_rows, n_pages;
  int        prec;
  int        shape_ok;        /* n_rows, width, page_rows, prec usable */
  int        sound;           /* shape and every page verified */
  int        sharded;         /* a shard manifest's record (source 'shards'):
                                 rows, columns and bounds are in the shards */
  fly_pages *pg;              /* open when sound; else NULL */
  char       name[128];
} fly_dataset_checked;

/* Check every data set, reporting each problem through ck: the shape
 * (n_pages from n_rows and page_rows, raw_bytes = rows x width x prec,
 * n_features), the pages (fly_pages_check: map, checksums, decode),
 * stored_bytes, the dataset_column rows (idx 0..width-1, roles, the
 * target's name, types), the levels of categorical columns (codes
 * 0..n-1, counts and n_missing adding up to n_rows), a derived data set's
 * rows and rows left out against its parent (table derived), and unless
 * ck->quick the statistics, missing counts and level
 * counts recomputed from the decoded pages (a categorical column holds
 * only codes or NaN).  A shard manifest's record of its data set (source
 * 'shards') has no pages and no columns of its own: its shape is checked,
 * and that nothing is stored under it (the shards are checked by
 * fly_shard_verify).  *pds (*n of them, in id order) is
 * for the checks that follow; free with fly_dataset_checked_free.
 * Problems are reported, not returned: FLY_OK unless ck is NULL. */
fly_rc fly_dataset_check(fly_db *db, fly_checker *ck,
                         fly_dataset_checked **pds, size_t *n, fly_err *err);
void   fly_dataset_checked_free(fly_dataset_checked *ds, size_t n);

/* The entry of data set id in ds (n of them), or NULL. */
fly_dataset_checked *fly_dataset_checked_find(fly_dataset_checked *ds,
                                              size_t n, int64_t id);

#endif
