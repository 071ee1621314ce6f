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
 *
 * Checking: fly_run_check verifies every run's row, setting and
 * configuration, and has store/trace.h check its trace (`flydb check`).
 * Listing: fly_runs_list gives `flydb info` its lines.
 */
#ifndef FLY_STORE_RUN_H
#define FLY_STORE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "store/check.h"
#include "store/dataset.h"
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
 * (the D = n_params / n_classes feature names, prefixed "c:" per class when
 * n_classes > 1, c the class's label from class_names, or its number k when
 * class_names is NULL), in one transaction.  version is the writing flydb's
 * version.  *run_id: the new id.  On failure nothing is written. */
fly_rc fly_run_create(fly_db *db, const fly_run_rec *r, size_t n_classes,
                      const char *const *class_names,
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

/* ---- listing ------------------------------------------------------------ */

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

/* ---- checking ----------------------------------------------------------- */

/* A run as the check sees it, for the caller's part of the check.  Strings
 * valid during the callback. */
typedef struct fly_run_checked {
  int64_t     id;
  int64_t     n_params;
  int64_t     n_rows;           /* rows of its data set, -1 if unknown */
  const char *z_mode;           /* never NULL ("NULL" when stored NULL) */
} fly_run_checked;

/* What the store cannot judge: the chain's checkpoint format and the names
 * of models and samplers belong to the layers above.  Any member may be
 * NULL (that part is not checked). */
typedef struct fly_run_check_hooks {
  void *u;                      /* first argument of each hook */
  /* Verify chain's checkpoint blob p (len bytes) of run r, reporting each
   * problem through ck (its scope is the run's). */
  void (*ckpt)(void *u, fly_checker *ck, const fly_run_checked *r,
               int64_t chain, const void *p, size_t len);
  /* 1 if a model (a theta kernel) of that name exists, else 0. */
  int  (*model_known)(void *u, const char *name);
  int  (*sampler_known)(void *u, const char *name);
} fly_run_check_hooks;

/* Check every run, in id order, reporting each problem through ck in
 * scope "run N".  Per run: its shape (n_chains, n_warmup, n_iters, thin,
 * n_params; a run of impossible shape gets only that problem and the
 * checks of its setting), z_mode, n_params against its bound set; then its
 * trace (fly_trace_check: param rows, checkpoints through h->ckpt, draw
 * and iteration rows); then status, model and sampler names, the data set
 * and bound set it refers to (the bound set of the same data set), its
 * run_setting row (present, every value in its domain, nu/scale only for
 * a robust model, z_param only for an implicit or explicit z mode,
 * fixed_xi only for fixed bounds), and each run_config line that states
 * what run or run_setting states (model, sampler, chains, warm-up,
 * iterations, thin, seed, z mode and parameter, prior, bounds, kernel
 * options, checkpoint and full-log-posterior periods) agreeing with it.
 * ds (n_ds, from fly_dataset_check) gives each run's number of rows.
 * *n_runs: runs seen.  Reads only, inside the caller's read transaction.
 * Problems are reported, not returned: FLY_OK unless ck is NULL. */
fly_rc fly_run_check(fly_db *db, fly_dataset_checked *ds, size_t n_ds,
                     const fly_run_check_hooks *h, fly_checker *ck,
                     int64_t *n_runs, fly_err *err);

#endif
