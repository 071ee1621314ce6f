/*
 * design.h -- a model design materialised as a data set derived from a raw
 * one, in the same database.
 *
 * A raw (ingested) data set holds the user's columns: numbers, level codes
 * of categorical columns, NaN for missing values.  A bound design
 * (formula/formula.h) turns one raw row into one model-matrix row.  The
 * derived data set holds those rows in the stored layout every model reads
 * (store/dataset.h): [1 (intercept)] features... target, the target being
 * the design's response (fly_design_y: a categorical response as its
 * level's index in R's sorted order, stored as a categorical column whose
 * levels are in that order).  Column names are R's model.matrix names.
 * Storage: docs/format.md §2.5.
 *
 * Rows with a missing value in a column the design uses are left out (with
 * FLY_DESIGN_NA_OMIT) and counted per column, or refused (FLY_DESIGN_NA_ERROR,
 * naming the first such row).  The derived data set is cached under
 * (raw data set, fly_design_key): a second call with an equal design
 * reuses it.  It is written in one transaction, streaming: one page of
 * raw rows and one page of derived rows in memory, whatever the size.
 *
 * A raw data set whose columns are all numeric without missing values can
 * still be used as it is, without a design (the default model: the last
 * column the target, all others features).
 */
#ifndef FLY_IO_DESIGN_H
#define FLY_IO_DESIGN_H

#include <stddef.h>
#include <stdint.h>

#include "formula/formula.h"
#include "store/dataset.h"
#include "store/db.h"
#include "util/err.h"

typedef enum {
  FLY_DESIGN_NA_OMIT = 0,     /* leave rows with a missing value out */
  FLY_DESIGN_NA_ERROR = 1     /* refuse, naming the first such row */
} fly_design_na;

/* What fly_design_materialise did. */
typedef struct fly_design_report {
  int64_t derived_id;         /* the derived data set */
  int     reused;             /* 1: it existed already */
  int64_t n_rows;             /* its rows */
  int64_t n_omitted;          /* raw rows left out */
  char    why[512];           /* "" or e.g. "left out 12 rows with a missing
                                 value: 10 in 'x', 3 in 'cut'" (a row
                                 missing in two columns counts in both) */
} fly_design_report;

/* The raw columns of data set ds as the design sees them (the stored
 * columns but the intercept, in stored order: features, then the target),
 * in *cols (*n of them; free with fly_free).  The names and labels are
 * borrowed from ds: valid while ds is.  Column j of the design is stored
 * column j + ds->has_intercept. */
fly_rc fly_design_columns(const fly_dataset *ds, fly_fcol **cols, size_t *n,
                          fly_err *err);

/* Parse formula and bind it to the columns of raw data set raw_id:
 * *pd (free with fly_design_free).  FLY_PARSE / FLY_RANGE from the formula
 * module, prefixed with the data set's name; FLY_MISUSE for a derived
 * data set. */
fly_rc fly_design_bind(fly_db *db, int64_t raw_id, const char *formula,
                       const fly_design_opts *o, fly_design **pd,
                       fly_err *err);

/* The derived data set of raw data set raw_id for design d (bound to its
 * columns, e.g. by fly_design_bind): found, or built in its own write
 * transaction (db must not be inside one).  Returns
 *   FLY_RANGE   with FLY_DESIGN_NA_ERROR, a row with a missing value in a
 *               used column ("data set 'd', row 17: 'x' is missing");
 *               a transform undefined for a row (log of a negative value);
 *               every row left out;
 *   FLY_MISUSE  raw_id is itself derived, or d's width does not fit;
 *   FLY_SQL / FLY_CORRUPT / FLY_NOMEM / FLY_IO otherwise.
 * On failure nothing is written.  rep may be NULL. */
fly_rc fly_design_materialise(fly_db *db, int64_t raw_id, const fly_design *d,
                              fly_design_na na, int64_t *derived_id,
                              fly_design_report *rep, fly_err *err);

#endif
