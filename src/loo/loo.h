/*
 * loo.h -- leave-one-out cross-validation of a run on tall data: PSIS-LOO
 * without the N x S matrix of pointwise log-likelihoods, and the
 * comparison of runs by it.
 *
 * A run's draws (post-warm-up, chains pooled, thinned evenly to at most
 * max_draws = S) and the rows of the data set it modelled give each row's
 * elpd_loo_i = log p(y_i | y_-i), estimated by PSIS (loo/psis.h).  On tall
 * data (Magnusson, Andersen, Jonasson & Vehtari, ICML 2019; R's
 * loo::loo_subsample with its defaults, estimator "diff_srs" and
 * approximation "plpd"):
 *  - one streaming pass gives every row's cheap approximation plpd_i =
 *    log p(y_i | mean of the draws), kept only as two running sums;
 *  - in the same pass m rows are drawn by simple random sampling without
 *    replacement (Knuth's selection sampling, seeded: the rows depend only
 *    on N, m and the seed, so runs on the same rows get the same sample);
 *    each gets exact PSIS-LOO from its S log-likelihoods (m x S
 *    evaluations, one S-vector per row at a time);
 *  - the difference estimator sum_i plpd_i + N mean_j (elpd_j - plpd_j)
 *    gives elpd_loo, with the standard error of the rows' spread (se) and
 *    that of sampling m of N rows (subsampling_se); p_loo is N times the
 *    sampled rows' mean.
 * With m = N (method 'exact', the default for N <= FLY_LOO_EXACT_ROWS) the
 * result is loo::loo()'s: sums over the rows and se = sqrt(N var).
 * Memory: O(S P + m + B S) for a block of B rows, whatever N.  Names and
 * definitions are those of R's loo 2.5.1, r_eff included (given, default
 * 1: the draws are treated as independent, as loo() does without r_eff).
 *
 * Storage (schema/010_loo.sql): this module owns tables loo (one result per
 * run) and loo_point (its sampled rows); a result replaces the run's
 * previous one in one transaction.
 */
#ifndef FLY_LOO_H
#define FLY_LOO_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "util/err.h"

/* Data sets up to this many rows get exact PSIS-LOO by default. */
#define FLY_LOO_EXACT_ROWS 20000
/* Sampled rows by default above it. */
#define FLY_LOO_DEFAULT_M 1000
/* Runs a comparison takes. */
#define FLY_LOO_MAX_RUNS 8

typedef struct fly_loo_opts {
  int64_t  m;           /* rows with exact PSIS-LOO: -1 all, 0 auto (all up to
                           FLY_LOO_EXACT_ROWS rows, else FLY_LOO_DEFAULT_M) */
  int64_t  max_draws;   /* S at most (4000) */
  uint64_t seed;        /* the row sample's (1) */
  double   r_eff;       /* relative efficiency of the draws (1) */
} fly_loo_opts;

void fly_loo_opts_default(fly_loo_opts *o);

/* A run's result, as stored in table loo. */
typedef struct fly_loo_result {
  int64_t  run_id;
  int      exact;              /* m == N */
  int64_t  N, m, S;
  uint64_t seed;
  double   r_eff;
  double   elpd_loo, se, subsampling_se;
  double   p_loo, p_loo_se;
  double   looic, looic_se;
  int64_t  k_good, k_ok, k_bad, k_verybad;   /* sampled rows by Pareto k bin */
  double   seconds;
} fly_loo_result;

/* Compute run run_id's loo (0: the latest run) and store it, replacing its
 * previous one.  FLY_RANGE for no such run or m > N; FLY_MISUSE for a run
 * with fewer than 2 post-warm-up draws or whose model cannot be resolved;
 * FLY_NUMERIC for a non-finite log-likelihood (naming the row); the store's
 * errors.  res is filled on success.  Nothing is written on failure. */
fly_rc fly_loo_run(fly_db *db, int64_t run_id, const fly_loo_opts *o,
                   fly_loo_result *res, fly_err *err);

/* Run run_id's stored result.  FLY_RANGE if it has none. */
fly_rc fly_loo_load(fly_db *db, int64_t run_id, fly_loo_result *res,
                    fly_err *err);

/* One line of a comparison, best model first. */
typedef struct fly_loo_diff {
  int64_t run_id;
  double  elpd_loo, se;        /* the run's own */
  double  elpd_diff;           /* elpd_loo minus the best's (<= 0; 0 for the best) */
  double  se_diff;             /* SE of the difference (paired on the rows) */
  double  subsampling_se_diff; /* its subsampling SE (0 when exact) */
} fly_loo_diff;

/* Compare runs ids[0..K) (2 <= K <= FLY_LOO_MAX_RUNS) as loo::loo_compare
 * does, on the same rows: each run's loo is computed with o (and stored)
 * unless one with o's m, S and r_eff (and seed, when m < N) is stored; the differences to the best
 * are paired row by row (exact: sum and sqrt(N) sd of the pointwise
 * differences; subsampled: the difference estimator on the differences,
 * one more pass over the rows).  The runs must model the same rows: the
 * same data set, or data sets of the same number of rows read from the same
 * source file; FLY_MISUSE otherwise, naming the runs.  out: K lines. */
fly_rc fly_loo_compare(fly_db *db, const int64_t *ids, size_t K,
                       const fly_loo_opts *o, fly_loo_diff *out, fly_err *err);

#endif
