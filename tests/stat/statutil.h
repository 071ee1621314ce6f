/*
 * statutil.h -- helpers shared by the statistical tests: a scratch
 * directory, running the flydb program, reading post-warm-up draws back
 * with the sqlite3 C API, Monte Carlo standard errors, the test level.
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

/* 1 when FLYDB_TEST_LEVEL=accurate, else 0. */
int st_accurate(void);

/* A fresh directory /tmp/flydb_stat_<name>_XXXXXX (path into dir, n bytes);
 * 0 on failure.  st_rmtree removes it again (only regular files inside). */
int  st_tmpdir(const char *name, char *dir, size_t n);
void st_rmtree(const char *dir);

/* Run argv[0] with argv (NULL-terminated), stdout and stderr appended to
 * log.  Returns the exit status (-1 if it could not run or died by a
 * signal).  On failure the tail of the log is printed as TAP comments. */
int st_run(char *const argv[], const char *log);

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
