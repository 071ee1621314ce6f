/*
 * data.h -- inside the run driver: the data set a model reads, as stored or
 * derived by the model's formula (see data.c).
 */
#ifndef FLY_RUN_DATA_H
#define FLY_RUN_DATA_H

#include <stdint.h>

#include "run/run.h"
#include "store/db.h"
#include "util/err.h"

typedef struct fly_run_data_out {
  int64_t dataset_id;        /* the data set to model */
  int     derived;           /* 1: derived by formula */
  char    formula[1024];     /* the formula used ("" when as stored) */
  int64_t n_rows;            /* derived: its rows */
  int64_t n_omitted;         /* derived: raw rows left out */
  char    why[2048];         /* derived: one line for the user */
  char    target_note[512];  /* a categorical target's coding, or "" */
} fly_run_data_out;

/* The data set that model spec s reads from raw (ingested) data set raw_id
 * of db: raw_id itself, or the one derived by the formula (s->formula, or
 * "TARGET ~ ." where a column is categorical or has missing values), built
 * in its own write transaction if it is not cached.  *usage is set when
 * the failure is the spec's (a bad formula or reference, a missing value
 * with na_error, a target that does not fit the model). */
fly_rc fly_run_data(fly_db *db, int64_t raw_id, const fly_model_spec *s,
                    fly_run_data_out *out, int *usage, fly_err *err);

#endif
