/*
 * check_runs.h -- the integrity check of the run tables (run, param,
 * checkpoint, draw, iteration) and the run listing of `flydb info`.
 *
 * Interim home: these read tables that store/run.c (run, param,
 * checkpoint) and store/trace.c (draw, iteration) own; they move there as
 * fly_run_check and fly_trace_check.
 */
#ifndef FLY_CHECK_RUNS_H
#define FLY_CHECK_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "store/check.h"
#include "store/dataset.h"
#include "store/db.h"
#include "util/err.h"

/* Check every run, reporting each problem through ck: its shape, z_mode,
 * n_params against its bound set, param rows 0..n_params-1; per chain the
 * checkpoint blob (the checks of fly_chain_restore, without building a
 * chain), and draw and iteration rows at exactly the iterations thin,
 * 2 thin, ... up to the chain's checkpoint (up to n_warmup + n_iters for a
 * run marked 'done'), each with all n_params draws; rows of chains the run
 * does not have.  ds (n_ds, from fly_dataset_check) gives each run's
 * number of rows.  *n_runs: runs seen.  Problems are reported, not
 * returned: FLY_OK unless ck is NULL. */
fly_rc fly_runs_check(fly_db *db, fly_dataset_checked *ds, size_t n_ds,
                      fly_checker *ck, int64_t *n_runs, fly_err *err);

/* One run as `flydb info` lists it.  Strings valid during the callback. */
typedef struct fly_run_brief {
  int64_t     id;
  const char *dataset, *model, *sampler, *z_mode, *status;
  int         n_chains, n_warmup, n_iters;
  int         has_wall;         /* wall_seconds recorded */
  double      wall_seconds;     /* whole command(s), tuning included */
} fly_run_brief;

typedef void fly_run_brief_fn(void *ctx, const fly_run_brief *r);

/* Call fn for every run, by id. */
fly_rc fly_runs_list(fly_db *db, fly_run_brief_fn *fn, void *ctx,
                     fly_err *err);

#endif
