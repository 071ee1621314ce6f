/*
 * summary.h -- the tables derived from a run after it ran: `summary` (the
 * posterior table that `flydb summary` prints) and `profile` (where the
 * sampling loop's time went, `flydb sample --profile`).  This module is the
 * only one that writes them; users read them with SQL.
 */
#ifndef FLY_SUMMARY_H
#define FLY_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "util/err.h"

typedef struct fly_summary_row {   /* one parameter; NaN is stored as NULL */
  const char *name;                /* borrowed for the call */
  double mean, sd, median, mad, q5, q95, rhat, ess_bulk, ess_tail, mcse_mean;
} fly_summary_row;

/* Replace the summary of run_id by rows[0..P) (row p is parameter idx p),
 * in one savepoint: all rows or none.  FLY_SQL (e.g. a read-only file). */
fly_rc fly_summary_put(fly_db *db, int64_t run_id, const fly_summary_row *rows,
                       size_t P, fly_err *err);

typedef struct fly_profile_row {
  int         chain;               /* 0-based */
  const char *part;                /* theta z read decode write other */
  double      seconds;             /* exclusive wall seconds */
  double      share;               /* percent of the chain's loop time */
  int64_t     n_iters;             /* iterations profiled */
} fly_profile_row;

/* Insert or replace rows[0..n) of run_id's profile, in one transaction.
 * FLY_SQL. */
fly_rc fly_summary_put_profile(fly_db *db, int64_t run_id,
                               const fly_profile_row *rows, size_t n,
                               fly_err *err);

#endif
