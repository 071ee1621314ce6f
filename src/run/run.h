/*
 * run.h -- a sampling job: tune the bounds (or reuse them), run C chains
 * in parallel threads, write their draws, checkpoints and diagnostics into
 * the database; and resume such a job from its stored configuration.
 *
 * This is the run driver every program uses: the flydb command line, the
 * statistical tests, and any C program linking libflydb (flydb.h).  It owns
 * the threads it starts and joins them before returning; the caller's
 * callbacks run on the calling thread only.
 *
 * Reproducibility: chain c draws from RNG stream c of the seed and chains
 * share no mutable state, so the draws do not depend on thread timing.  A
 * run's configuration is stored typed (store/run.h) in the transaction that
 * creates it; fly_run_resume reads it back and continues every chain from
 * its last checkpoint, committed together with the draws before it, so a
 * resumed run yields exactly the draws of an uninterrupted one (kill -9
 * included).
 *
 * err may be NULL.  Return codes of the functions below: FLY_OK; FLY_MISUSE for a
 * configuration that does not hold together (the message names the
 * option, as `--name`, the CLI's spelling of the field); FLY_DONE when the
 * progress callback asked to stop (every chain stopped at a checkpoint,
 * the run is resumable); otherwise the error of the store, tuning or
 * chains (FLY_SQL, FLY_IO, FLY_CORRUPT, FLY_NUMERIC, FLY_NOMEM, FLY_RANGE),
 * with the run marked 'failed'.
 */
#ifndef FLY_RUN_H
#define FLY_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "flymc/chain.h"
#include "util/err.h"
#include "util/prof.h"

/* The model of a run, as a user states it; fields left 0/NULL take the
 * defaults given. */
typedef struct fly_model_spec {
  const char *model;        /* "logistic" (NULL) | "softmax" | "robust" */
  const char *prior;        /* "normal" (NULL) | "laplace" */
  double      prior_scale;  /* sd of the normal, scale of the Laplace (0: 1) */
  double      nu;           /* robust: Student-t degrees of freedom (0: 4) */
  double      scale;        /* robust: Student-t scale (0: the target's sd) */
  /* The model matrix: an R formula over the data set's columns, e.g.
   * "y ~ x1 + log(x2) + cut + color:clarity" (NULL: the columns as stored,
   * the last the target, or "TARGET ~ ." when a column is categorical or
   * has missing values); categorical columns get treatment contrasts, their
   * levels sorted in byte order, the first the reference unless `reference`
   * ("col=level[,col=level...]") names another.  Coefficients are on the
   * scale of the columns as the formula makes them. */
  const char *formula;
  const char *reference;
  int         na_error;     /* 1: a row with a missing value in a column the
                               model uses is an error (0: left out, counted) */
} fly_model_spec;

/* Bits of fly_run_cfg.given: which fields the user set (recorded in
 * run_config.is_default; nothing else depends on them). */
enum {
  FLY_GIVEN_DATA = 1u << 0,  FLY_GIVEN_MODEL = 1u << 1, FLY_GIVEN_PRIOR = 1u << 2,
  FLY_GIVEN_PRIOR_SCALE = 1u << 3, FLY_GIVEN_NU = 1u << 4, FLY_GIVEN_SCALE = 1u << 5,
  FLY_GIVEN_ITERS = 1u << 6, FLY_GIVEN_WARMUP = 1u << 7, FLY_GIVEN_CHAINS = 1u << 8,
  FLY_GIVEN_SEED = 1u << 9,  FLY_GIVEN_THIN = 1u << 10, FLY_GIVEN_Z = 1u << 11,
  FLY_GIVEN_BOUNDS = 1u << 12, FLY_GIVEN_SAMPLER = 1u << 13,
  FLY_GIVEN_THETA_STEPS = 1u << 14, FLY_GIVEN_LEAPFROG = 1u << 15,
  FLY_GIVEN_PROPOSAL = 1u << 16, FLY_GIVEN_STEP = 1u << 17, FLY_GIVEN_INIT = 1u << 18,
  FLY_GIVEN_CACHE_MB = 1u << 19, FLY_GIVEN_SCAN_FRAC = 1u << 20,
  FLY_GIVEN_SKETCH = 1u << 21, FLY_GIVEN_FULL_EVERY = 1u << 22,
  FLY_GIVEN_CKPT_EVERY = 1u << 23, FLY_GIVEN_PROFILE = 1u << 24,
  FLY_GIVEN_FORMULA = 1u << 25, FLY_GIVEN_REFERENCE = 1u << 26, FLY_GIVEN_NA = 1u << 27,
};

/* A sampling job.  fly_run_cfg_default fills every field with its default;
 * fields marked "auto" are resolved when the run starts, from the others
 * and the data set. */
typedef struct fly_run_cfg {
  const char    *data;          /* data set name; NULL: the only one */
  fly_model_spec model;
  int64_t  iters;               /* post-warm-up iterations per chain (1000) */
  int64_t  warmup;              /* warm-up iterations; -1 auto: iters / 2 */
  int64_t  chains;              /* chains, one thread each (2) */
  int64_t  thin;                /* keep every thin-th iteration (1) */
  uint64_t seed;                /* RNG seed, below 2^62 ... */
  int      seed_set;            /* ... if set; 0 auto: drawn from the clock */
  int      z_set;               /* 0 auto: gibbs with MAP bounds, implicit with fixed */
  fly_zmode z;                  /* FLY_Z_REGULAR: full-data MCMC, the baseline */
  double   z_param;             /* explicit: fraction, implicit: q_db; 0 auto: 0.1 */
  int      bounds_fixed;        /* 0: MAP-tuned bounds; 1: fixed xi */
  double   fixed_xi;            /* fixed bounds' xi (1.5) */
  fly_kernel kernel;            /* theta kernel (FLY_K_MH) */
  int64_t  theta_steps;         /* theta updates per z update; 0 auto: 32 with
                                   gibbs and mh, else 1 */
  int64_t  leapfrog;            /* HMC leapfrog steps (16) */
  int      isotropic;           /* proposals N(0, step^2 I) (0: Laplace-shaped) */
  int      init_map;            /* start at the MAP (0: a Laplace draw) */
  double   step;                /* initial step size; 0 auto: the kernel's default */
  int64_t  cache_mb;            /* decoded-page cache per chain in MiB; 0 auto:
                                   a quarter of RAM shared by the chains, >= 256 */
  double   scan_frac;           /* gibbs: scan above this expected candidate
                                   fraction of N (0.25) */
  int      sketch;              /* gibbs row sketches: 1 on, 0 off, -1 auto (on
                                   where they apply) */
  int64_t  checkpoint_every;    /* commit draws and a checkpoint every K
                                   iterations (1000; also every 2 s) */
  int64_t  full_logpost_every;  /* store the exact log posterior every K kept
                                   iterations (0: never) */
  int      profile;             /* time the parts of the loop (fly_run_result) */
  int      verbose;             /* tuning's progress lines on stderr */
  unsigned given;               /* FLY_GIVEN_* bits */
} fly_run_cfg;

void fly_run_cfg_default(fly_run_cfg *c);

/* The FLY_GIVEN_* bit of the field an option names, spelled as the CLI and
 * run_config spell it ("iters", "theta-steps", "regular" and "z" share
 * one); 0 for a name that is not a run setting. */
unsigned fly_run_given_bit(const char *key);

/* Progress, passed to the progress hook on the calling thread while the
 * chains run (at FLY_RUN_POLL_MS intervals: often enough for a progress
 * line and a prompt stop, rarely enough to cost the chains nothing). */
#define FLY_RUN_POLL_MS 50
typedef struct fly_run_progress {
  int64_t run_id;
  int64_t done, total;      /* iterations over all chains, of warm-up + iters */
  int64_t start;            /* of done, those a resumed run had before */
  double  accept;           /* fraction of theta proposals accepted so far */
  double  bright_frac;      /* mean bright fraction of N over the chains now */
  double  seconds;          /* since the chains started */
} fly_run_progress;

typedef struct fly_run_hooks {
  /* Called on the calling thread every FLY_RUN_POLL_MS; return nonzero
   * to stop the run at the chains' next checkpoint (FLY_DONE; resumable).
   * NULL: none. */
  int  (*progress)(void *ctx, const fly_run_progress *p);
  /* One line of news (the run and its set-up, no trailing newline); NULL:
   * silent. */
  void (*message)(void *ctx, const char *line);
  void  *ctx;
} fly_run_hooks;

#define FLY_RUN_MAX_CHAINS 64

/* What a run did. */
typedef struct fly_run_result {
  int64_t  run_id;           /* the run (also set when it failed or stopped) */
  int      chains;
  uint64_t seed;             /* as resolved */
  double   wall;             /* seconds of the whole call */
  double   loop;             /* seconds of the slowest chain's iteration loop */
  double   full_seconds;     /* chain seconds spent on full_logpost_every */
  int64_t  iters_done;       /* iterations run by this call, over all chains */
  int      profiled;         /* prof[] holds each chain's profile */
  fly_prof prof[FLY_RUN_MAX_CHAINS];
  int64_t  prof_iters[FLY_RUN_MAX_CHAINS];
  int64_t  cache_mb;         /* per chain, as resolved (memory advice) */
  int      usage;            /* the failure is the configuration's: FLY_MISUSE
                                from checking it against itself, the data set
                                or the model (a usage error for a CLI) */
} fly_run_result;

/* Run a new sampling job on the database at db_path (in WAL mode from
 * then on).  hooks may be NULL; res is always filled as far as the run
 * got.  The bounds are tuned first if no ready bound set fits. */
fly_rc fly_run_sample(const char *db_path, const fly_run_cfg *cfg,
                      const fly_run_hooks *hooks, fly_run_result *res,
                      fly_err *err);

/* Continue run run_id with its stored configuration.  cache_mb (0: the
 * stored one, or this machine's default), profile and verbose are this
 * call's own.  FLY_RANGE if there is no such run, FLY_MISUSE if it is
 * complete. */
fly_rc fly_run_resume(const char *db_path, int64_t run_id, int64_t cache_mb,
                      int profile, int verbose, const fly_run_hooks *hooks,
                      fly_run_result *res, fly_err *err);

/* Tune (or find) the bounds of data set `data` (NULL: the only one) for the
 * model spec: the data set its formula derives (built if need be), then
 * fly_tune_get and fly_bounds_load into *pb (free with fly_bounds_free).
 * *usage is set when the failure is the spec's (FLY_MISUSE from resolving
 * it, FLY_PARSE / FLY_RANGE from its formula).  o NULL: defaults.  hooks
 * (NULL: none): its message hook gets what the formula did. */
struct fly_bounds;
struct fly_tune_opts;
fly_rc fly_run_tune(struct fly_db *db, const char *data, const fly_model_spec *s,
                    const struct fly_tune_opts *o, const fly_run_hooks *hooks,
                    struct fly_bounds **pb, int *usage, fly_err *err);

/* Resolve the model spec against data set dataset_id of db into *m
 * (dimensions from the data set; K = largest target + 1 for softmax).
 * FLY_MISUSE naming the option for a bad value or one that does not fit
 * the model. */
struct fly_db;
fly_rc fly_model_spec_resolve(const fly_model_spec *s, struct fly_db *db,
                              int64_t dataset_id, fly_model *m, fly_err *err);

#endif
