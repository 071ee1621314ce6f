/*
 * ppc.h -- posterior predictive checks of a run on its own data, in one
 * streaming pass over the rows with memory flat in N (docs/design.md §19).
 *
 * The run's posterior is loo's (run/posterior.h): M post-warm-up draws pooled
 * over the chains and thinned evenly, the model resolved from the run's
 * settings, the rows of the data set it modelled.
 *
 * Classifiers (kind 'calibration'):
 *  - logistic: row i's predicted probability pbar_i = (1/M) sum_s p_s(x_i),
 *    the posterior mean of P(y_i = 1); rows are binned by pbar_i into
 *    `bins` equal-width bins of [0, 1]; per bin: n, the mean of pbar, the
 *    observed frequency of y = 1, and the band of the replicated frequency:
 *    at each draw s every row of the bin gets y_rep ~ Bernoulli(p_s(x_i))
 *    (one seeded stream, rows and draws in order), its frequency f_s in
 *    the bin, and the band is R's type-7 quantiles of f_1..f_M at
 *    (1 -+ level)/2.  Summaries: ECE = sum_b n_b/N |observed_b -
 *    predicted_b|, MCE = its largest term, accuracy of pbar > 1/2, and how
 *    many non-empty bins lie outside their band (about 1 - level of them
 *    for a calibrated model);
 *  - softmax: the same for each class k one-vs-rest (pbar_ik, y = k;
 *    y_rep ~ Categorical(p_s(x_i))), ECE the mean over classes, accuracy
 *    of argmax_k pbar_ik.
 * Robust regression (kind 'residual'): the standardised residual at the
 * posterior mean r_i = (y_i - x_i'bbar)/sigma (the posterior mean of the
 * residual, which is linear in the coefficients), its PIT
 * u_i = F_t(nu)(r_i) binned into `bins` equal bins (expected n = N/bins
 * each) with a band for each bin's fraction: at each draw s every row gets
 * y_rep ~ t_nu(x_i'th_s, sigma) (one seeded stream, rows and draws in
 * order), its replicated residual (y_rep - x_i'bbar)/sigma is binned the
 * same way, and the band is R's type-7 quantiles of the M replicated
 * fractions at (1 -+ level)/2; the QQ points of the residuals against the Student-t at levels
 * (j - 1/2)/100 (from counts on a grid of 1000 t quantiles, linearly
 * interpolated within a cell), and the two-sided tails at 10%, 5% and 1%.
 *
 * Cost: N M D multiply-adds (softmax N M K D) and N M uniforms for a
 * classifier; N M D and N M t variates (about 2.5 uniforms each) for
 * robust.  Memory: M x P draws, a block of rows and their M predictions,
 * K x bins x M replicated counts.
 *
 * Storage (schema/012_ppc.sql): this module owns tables ppc, ppc_bin and
 * ppc_rep; a check replaces the run's previous one in one transaction.
 */
#ifndef FLY_PPC_H
#define FLY_PPC_H

#include <stddef.h>
#include <stdint.h>

#include "store/check.h"
#include "store/db.h"
#include "util/err.h"

#define FLY_PPC_MAX_BINS 1000
#define FLY_PPC_QQ       100    /* QQ points of a residual check */
#define FLY_PPC_TAILS    3      /* two-sided tail levels: 10%, 5%, 1% */

typedef struct fly_ppc_opts {
  int64_t  bins;        /* bins of [0, 1] (10), 1..FLY_PPC_MAX_BINS */
  int64_t  max_draws;   /* M at most (200) */
  uint64_t seed;        /* the replications' (1) */
  double   level;       /* central probability of the bands (0.9) */
} fly_ppc_opts;

void fly_ppc_opts_default(fly_ppc_opts *o);

typedef enum { FLY_PPC_CALIBRATION = 0, FLY_PPC_RESIDUAL = 1 } fly_ppc_kind;
typedef enum { FLY_PPC_PART_CAL = 0, FLY_PPC_PART_PIT, FLY_PPC_PART_QQ,
               FLY_PPC_PART_TAIL } fly_ppc_part;

/* A stored check's header, as table ppc holds it (NaN / -1: NULL). */
typedef struct fly_ppc_result {
  int64_t      run_id;
  fly_ppc_kind kind;
  char         model[16];
  int64_t      N, M, bins, K;   /* rows, draws, bins, classes checked */
  uint64_t     seed;
  double       level;
  double       ece, mce, accuracy;
  int64_t      n_outside, n_nonempty;
  double       nu, sigma;
  double       seconds;
} fly_ppc_result;

/* One line of ppc_bin (NaN: NULL; n -1: NULL). */
typedef struct fly_ppc_bin {
  fly_ppc_part part;
  int64_t      cls, bin;
  double       lo, hi;
  int64_t      n;
  double       predicted, observed, band_lo, band_hi;
} fly_ppc_bin;

/* Check run run_id (0: the latest run) and store the result, replacing
 * its previous one.  FLY_RANGE for no such run or options out of range;
 * FLY_MISUSE for fewer than 2 post-warm-up draws or a model that cannot be
 * resolved; FLY_NUMERIC for a non-finite prediction or residual (naming
 * the row); the store's errors.  res is filled on success; nothing is
 * written on failure. */
fly_rc fly_ppc_run(fly_db *db, int64_t run_id, const fly_ppc_opts *o,
                   fly_ppc_result *res, fly_err *err);

/* Run run_id's stored check (0: the latest run that has one): its header
 * and, unless bins is NULL, its ppc_bin lines ordered by part, class and
 * bin in *bins (caller frees with fly_free), *n_bins of them.  FLY_RANGE
 * if it has none; FLY_NOMEM, FLY_SQL. */
fly_rc fly_ppc_load(fly_db *db, int64_t run_id, fly_ppc_result *res,
                    fly_ppc_bin **bins, size_t *n_bins, fly_err *err);

/* Name of a part as stored ("calibration", "pit", "qq", "tail"). */
const char *fly_ppc_part_name(fly_ppc_part p);

/* flydb check of tables ppc, ppc_bin and ppc_rep: each check's run
 * exists and modelled a data set of n_rows rows; its bins are those the
 * header counts (classes x bins calibration lines, bins PIT lines and
 * FLY_PPC_QQ + FLY_PPC_TAILS others for a residual check) whose n add up
 * to n_rows per class; ppc_rep holds classes x bins x n_draws counts,
 * each within 0..n of its calibration bin (a residual check's, of its PIT
 * bins: within 0..n_rows).  Each problem is reported in scope "run <id>
 * ppc".  *n_checks gets the number of checks read. */
void fly_ppc_check(fly_db *db, fly_checker *ck, int64_t *n_checks);

#endif
