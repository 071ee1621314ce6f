/*
 * predict.h -- a fitted run's predictions for new rows, and their held-out
 * scores (`flydb predict`).
 *
 * The new rows come as CSV (or gzip/zstd/xz, through io/source.h; "-" for
 * standard input) with the columns of the data set the run modelled, by
 * name: extra columns are ignored, the target is optional.  Each row is
 * turned into a model-matrix row exactly as the run's rows were: numbers
 * rounded to the data set's precision, categorical cells coded with the
 * data set's stored levels, then the run's design (formula, transforms,
 * treatment contrasts, --reference), bound anew from the run's stored
 * formula and checked to give the design key of the run's data set.  For
 * every row, over the run's S post-warm-up draws (chains pooled, thinned
 * evenly to at most max_draws, as loo takes them), the posterior mean and
 * the central `level` interval (R's quantile type 7 of the S values, at
 * (1 -+ level)/2) of:
 *   logistic  P(y = 1 | x, th_s), the second level of a categorical target;
 *   softmax   each class's probability;
 *   robust    the posterior predictive of y: the mixture (1/S) sum_s
 *             t_nu(x'th_s, sigma); its mean is the mean of x'th_s (nu > 1)
 *             and its interval the mixture's exact quantiles.
 * With the target present, the held-out scores: lpd = sum_i log (1/S)
 * sum_s p(y_i | th_s) (log-sum-exp), and logistic: Brier = mean (p_i -
 * y_i)^2, AUC exact (Mann-Whitney, ties 1/2); softmax: accuracy of the
 * most probable class (the first on ties) and the multi-class Brier mean
 * sum_k (p_ik - [y_i = k])^2; robust: RMSE of the predictive mean.
 *
 * Streaming: rows in blocks of B (B S K doubles of linear predictors, at
 * most a few MB), the block's predictors by one BLAS dgemm per class.
 * Memory is flat in the number of rows but for the AUC, which keeps one
 * double per row with a target (logistic only).
 *
 * Storage (schema/011_prediction.sql): this module owns table prediction;
 * each call adds one row, in one transaction, after every row is written.
 * On any failure nothing is stored.
 */
#ifndef FLY_PREDICT_H
#define FLY_PREDICT_H

#include <stdint.h>
#include <stdio.h>

#include "store/check.h"
#include "store/db.h"
#include "util/err.h"

typedef struct fly_predict_opts {
  int64_t max_draws;  /* S at most (4000; <= 0: all) */
  double  level;      /* central interval's probability, in (0, 1) (0.9) */
} fly_predict_opts;

void fly_predict_opts_default(fly_predict_opts *o);

typedef struct fly_predict_result {
  int64_t id;                 /* the stored prediction row */
  int64_t run_id;
  int64_t n_rows;             /* rows predicted */
  int64_t S;                  /* draws used */
  char    model[16];          /* "logistic", "softmax", "robust" */
  int     has_target;         /* the scores below are set */
  double  lpd;                /* sum of the rows' log predictive densities */
  double  brier;              /* logistic, softmax; else NaN */
  double  auc;                /* logistic (NaN with one class only); else NaN */
  double  accuracy;           /* softmax; else NaN */
  double  rmse;               /* robust; else NaN */
  double  seconds;
} fly_predict_result;

/* Predict the rows of input path ("-": standard input) with run run_id (0:
 * the latest), writing CSV to out: a header, then per input row its 1-based
 * data row number and the prediction columns (logistic and robust: mean,
 * lower, upper; softmax: per class LABEL, LABEL_lower, LABEL_upper),
 * numbers with 17 significant digits.  Then store the prediction.
 * Returns
 *   FLY_PARSE   a bad cell, naming file:line:column, the column and the
 *               value: not a number in a numeric column, a level the data
 *               set does not have, a missing value (empty or NA) in a
 *               column the model uses, a target the model cannot take;
 *               a column the model uses absent from the header;
 *   FLY_RANGE   no such run; a transform undefined for a row's value;
 *   FLY_MISUSE  a run without draws, or whose formula no longer gives its
 *               data set's design;
 *   FLY_IO / FLY_SQL / FLY_NOMEM / FLY_CORRUPT otherwise.
 * Rows before a failing one may have been written to out; nothing is
 * stored.  res is filled on success. */
fly_rc fly_predict_run(fly_db *db, int64_t run_id, const char *path, FILE *out,
                       const fly_predict_opts *o, fly_predict_result *res,
                       fly_err *err);

/* flydb check of table prediction: each row's run exists; n_rows >= 0,
 * 1 <= n_draws <= the run's chains x post-warm-up iterations, 0 < level
 * < 1; without the target every score is NULL; with it (and rows) the
 * scores of the run's model are present and no others (logistic: lpd,
 * Brier, AUC (NULL with one class); softmax: lpd, Brier, accuracy;
 * robust: lpd, RMSE), each in its range (lpd <= 0 for a discrete target,
 * Brier in [0, 1] (softmax [0, 2]), AUC and accuracy in [0, 1], RMSE >=
 * 0, all finite).  Problems are reported in scope "run <id> prediction
 * <id>"; *n_predictions gets the number of rows read. */
void fly_predict_check(fly_db *db, fly_checker *ck, int64_t *n_predictions);

#endif
