/*
 * statutil.h -- helpers shared by the statistical tests: a scratch
 * directory, ingesting and sampling through the library (flydb.h), reading
 * post-warm-up draws back with the sqlite3 C API, Monte Carlo standard
 * errors, the test level.
 *
 * MCSEs are estimated from the chains themselves, as the R package
 * posterior (1.5) defines them:
 *   mcse_mean = sd(x) / sqrt(ess_mean(x))         (fly_stats_mcse_mean)
 *   mcse_sd   = sqrt(varvar / (4 E[c^2])) with c = x - mean(x),
 *               varvar = (mean(c^4) - mean(c^2)^2) / ess_mean(c^2)
 * (the delta method: var(sd) ~ var(var) / (4 var); ess_mean is the split
 * basic ESS, fly_stats_ess_basic(split = 1), of the centred squares).
 */
#ifndef FLY_STATUTIL_H
#define FLY_STATUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "flydb.h"

/* 1 when FLYDB_TEST_LEVEL=accurate, else 0. */
int st_accurate(void);

/* A fresh directory /tmp/flydb_stat_<name>_XXXXXX (path into dir, n bytes);
 * 0 on failure.  st_rmtree removes it again (only regular files inside). */
int  st_tmpdir(const char *name, char *dir, size_t n);
void st_rmtree(const char *dir);

/* A sampler configuration under test: the z mode (FLY_Z_REGULAR for
 * full-data MCMC) with its parameter, fixed (1) or MAP-tuned (0) bounds,
 * the theta kernel and theta updates per z update (0: the default). */
typedef struct st_mode {
  const char *name;
  fly_zmode   z;
  double      z_param;
  int         fixed;
  fly_kernel  kernel;
  int64_t     theta_steps;
  int64_t     iters;        /* iterations (warm-up: a quarter) instead of the
                               test's, for kernels that need fewer; 0: the test's */
} st_mode;

/* Ingest csv into a new database dbp (fly_ingest).  1 on success; on
 * failure 0 and the error as a TAP comment. */
int st_ingest(const char *csv, const char *dbp);

/* One run of mode m on the only data set of dbp (fly_run_sample): chains
 * chains of warmup + iters iterations from seed, committing every
 * ckpt_every iterations (0: the default).  Returns the run id, or -1 with
 * the error as a TAP comment. */
int64_t st_sample(const char *dbp, const st_mode *m, int64_t iters, int64_t warmup,
                  int chains, uint64_t seed, int64_t ckpt_every);

/* Wall clock seconds. */
double st_now(void);

/* sqlite helpers on db (opened read-only by st_open).  st_int64: the first
 * column of the first row of sql, or def. */
sqlite3 *st_open(const char *path);
int64_t  st_int64(sqlite3 *db, const char *sql, int64_t def);

/* Post-warm-up draws of parameter idx of run_id: *x gets n_chains x n_iter
 * values, chain-major (as fly_stats expects).  Returns 1 on success (every
 * chain has the same number of draws), 0 otherwise.  Caller frees *x. */
int st_draws(sqlite3 *db, int64_t run_id, int idx, double **x,
             size_t *n_chains, size_t *n_iter);

typedef struct st_est {
  double mean, sd, mcse_mean, mcse_sd, ess_bulk, rhat;
} st_est;

/* mean, sd and their MCSEs (definitions above), ess_bulk and R-hat.
 * Returns 1 on success. */
int st_estimate(const double *x, size_t n_chains, size_t n_iter, st_est *e);

#endif
