/*
 * run.h -- the run tables: a sampling run's record, its typed
 * configuration, its parameter names, its status, its chains' checkpoints
 * and its profile.
 *
 * This module owns the tables run, run_setting, run_config and param
 * (schema/001_init.sql, 006_run_setting.sql).  Draws, diagnostics and
 * checkpoints are store/trace.h's; the summary and profile tables
 * store/summary.h's.
 *
 * fly_run_rec is what a run needs to start again: the typed configuration
 * as stored, names as text (the layers above map them to their tables).  A
 * record written by fly_run_create reads back from fly_run_load field for
 * field, bit for bit (REAL columns hold doubles exactly).
 *
 * Handles are not shared: every function takes a fly_db used by one
 * thread at a time.  Return codes: FLY_OK, FLY_RANGE (no such run),
 * FLY_CORRUPT (a stored value out of its domain), FLY_SQL, FLY_NOMEM.
 */
#ifndef FLY_STORE_RUN_H
#define FLY_STORE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "util/err.h"

#define FLY_RUN_NAME 16   /* bytes of a stored name, NUL included */

typedef struct fly_run_rec {
  int64_t  dataset_id;
  int64_t  bound_set_id;      /* the tuned bounds the run uses */
  char     model[FLY_RUN_NAME];   /* model type name ("logistic", ...) */
  char     prior[FLY_RUN_NAME];   /* "normal" | "laplace" */
  double   prior_scale;
  double   nu, scale;         /* robust; 0 for other models (stored NULL) */
  int64_t  iters;             /* post-warm-up iterations per chain */
  int64_t  warmup;
  int64_t  chains;
  int64_t  thin;
  uint64_t seed;              /* below 2^63 */
  int64_t  n_params;
  char     z_mode[FLY_RUN_NAME];  /* "regular" | "explicit" | "implicit" | "gibbs" */
  double   z_param;           /* explicit: fraction; implicit: q_db; else 0 */
  int      bounds_fixed;      /* 1: fixed xi; 0: MAP-tuned */
  double   fixed_xi;          /* fixed bounds' xi, else 0 */
  char     sampler[FLY_RUN_NAME]; /* theta kernel name ("mh", ...) */
  int64_t  theta_steps;       /* theta updates per z update */
  int64_t  leapfrog;          /* HMC leapfrog steps */
  int      isotropic;         /* proposals N(0, step^2 I) */
  int      init_map;          /* start at the MAP, not a Laplace draw */
  double   step;              /* initial step size; 0 (stored NULL): the
                                 kernel's default, for runs migrated from
                                 files that did not store it */
  int64_t  cache_mb;          /* 0 (stored NULL): the running machine's default */
  double   scan_frac;         /* gibbs: scan above this expected candidate fraction */
  int      sketch;            /* gibbs: row sketches kept (0/1) */
  int64_t  checkpoint_every;
  int64_t  full_logpost_every;   /* 0: never */
} fly_run_rec;

/* One line of run_config: an option as the user sees it, with its value as
 * resolved and whether it took its default. */
typedef struct fly_run_kv {
  const char *key;
  const char *value;
  int         is_default;
} fly_run_kv;

/* Create run: the run row (status 'running'), its run_setting row, the
 * n_kv lines of run_config and the names of its r->n_params parameters
 * (the D = n_params / n_classes feature names, prefixed "k:" per class when
 * n_classes > 1), in one transaction.  version is the writing flydb's
 * version.  *run_id: the new id.  On failure nothing is written. */
fly_rc fly_run_create(fly_db *db, const fly_run_rec *r, size_t n_classes,
                      const char *const *feature_names, const fly_run_kv *kv,
                      size_t n_kv, const char *version, int64_t *run_id,
                      fly_err *err);

/* Load run run_id's record and its status ("running", "done", "failed";
 * status may be NULL).  FLY_RANGE "<db> has no run N" if there is none;
 * FLY_CORRUPT if its run_setting row is missing or out of domain. */
fly_rc fly_run_load(fly_db *db, int64_t run_id, fly_run_rec *r,
                    char status[FLY_RUN_NAME], fly_err *err);

/* Set the status (and message, may be NULL) of run_id and add wall and
 * loop seconds to its totals; stamps finished_at. */
fly_rc fly_run_finish(fly_db *db, int64_t run_id, const char *status,
                      const char *msg, double wall, double loop, fly_err *err);

/* The id of the newest run (0 if none). */
fly_rc fly_run_latest(fly_db *db, int64_t *run_id, fly_err *err);

#endif
