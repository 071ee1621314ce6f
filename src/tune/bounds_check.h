/*
 * bounds_check.h -- the integrity check of the bound-set tables (bound_set,
 * bound_page, moment) and the listing of ready bound sets.
 */
#ifndef FLY_BOUNDS_CHECK_H
#define FLY_BOUNDS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "store/check.h"
#include "store/dataset.h"
#include "store/db.h"
#include "util/err.h"

/* Check every bound set against its data set (ds, n_ds from
 * fly_dataset_check; the moments are recomputed, unless ck->quick, only
 * over a data set found sound), reporting each problem through ck (see
 * bounds_check.c for the list).  *n_sets: bound sets seen.  Problems are
 * reported, not returned: FLY_OK unless ck is NULL. */
fly_rc fly_bounds_check(fly_db *db, fly_dataset_checked *ds, size_t n_ds,
                        fly_checker *ck, int64_t *n_sets, fly_err *err);

/* A ready bound set as `flydb info` lists it.  Strings valid during the
 * callback. */
typedef struct fly_bounds_brief {
  int64_t     id;
  const char *dataset;        /* the data set's name */
  const char *model, *model_opts, *tuning;
  int         map_iters;      /* L-BFGS iterations of the MAP search */
  double      tune_seconds;   /* wall time of the build */
} fly_bounds_brief;

typedef void fly_bounds_brief_fn(void *ctx, const fly_bounds_brief *b);

/* Call fn for every ready bound set, by id. */
fly_rc fly_bounds_list(fly_db *db, fly_bounds_brief_fn *fn, void *ctx,
                       fly_err *err);

#endif
