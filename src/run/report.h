/*
 * report.h -- the posterior summary of a run: per parameter, over the
 * post-warm-up draws of all chains, the columns of
 * posterior::summarise_draws (src/stats), and the run-level figures that
 * `flydb summary` prints under its table (acceptance, bright rows,
 * likelihood evaluations and rows read per iteration, ESS per second,
 * Stan's warnings).  Computed from the trace (store/trace.h) and stored in
 * the `summary` table (store/summary.h); formatting is the caller's.
 */
#ifndef FLY_REPORT_H
#define FLY_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "store/summary.h"
#include "util/err.h"

/* The maximum number of chains a summary takes. */
#define FLY_REPORT_MAX_CHAINS 64

typedef struct fly_summary {
  int64_t  run_id;            /* the run summarised (never 0) */
  size_t   n_chains, n_params;
  size_t   n_draws;           /* post-warm-up draws per chain used: the common
                                 length of an unfinished run */
  int64_t  n_warmup;          /* warm-up iterations of the run */
  int64_t  n_rows;            /* rows of the data set (N) */
  char     z_mode[16], status[16];
  fly_summary_row *rows;      /* [n_params], row p is parameter p; names owned
                                 by the struct */
  /* means over all chains of the post-warm-up iterations; NaN when none */
  double   acceptance;        /* fraction of theta proposals accepted */
  double   mean_bright;       /* bright rows */
  double   lik_evals;         /* likelihood evaluations per iteration */
  double   rows_read;         /* rows read per iteration */
  double   waste;             /* rows_read / mean_bright for --z gibbs, else NaN */
  double   seconds;           /* sampling loops (else whole command), 0 if unknown */
  double   min_ess_bulk;      /* over parameters; +Inf if none is finite */
  double   ess_per_second;    /* min_ess_bulk / seconds; NaN if not both finite, > 0 */
  size_t   n_warn_rhat;       /* parameters with rhat > 1.01 */
  size_t   n_warn_ess;        /* ... with ess_bulk or ess_tail < 100 per chain */
  /* The theta kernel's statistics (NUTS), over the post-warm-up iterations
   * that carry them: n_kstats of them (0: none, and the rest is unset) */
  size_t   n_kstats;
  size_t   n_divergent;       /* ... that ended with a divergence */
  size_t   n_max_depth;       /* ... that reached the maximum tree depth */
  int      max_depth;         /* that depth */
  double   accept_stat;       /* mean acceptance statistic (Stan's accept_stat__,
                                 what the step size adapts to); NaN if none */
  double   ebfmi[FLY_REPORT_MAX_CHAINS];  /* per chain: mean squared energy change
                                 over the energy's variance; NaN if not defined */
} fly_summary;

/* Summarise run_id of db (0: the latest run) into *out, and replace the
 * run's rows of the `summary` table by it (best effort: a read-only file
 * still gets the result).  FLY_RANGE for no such run, more than
 * FLY_REPORT_MAX_CHAINS chains or a run without post-warm-up draws;
 * FLY_CORRUPT, FLY_SQL, FLY_NOMEM.  *out is NULL on failure; the caller
 * frees it with fly_report_free.  Cost: one read of each parameter's
 * draws per chain and a sort of them; memory O(chains x draws + P).
 * E-BFMI is rstan's get_bfmi: sum of squared successive energy differences
 * over n, divided by the sample variance of the energy (n - 1). */
fly_rc fly_report_summary(fly_db *db, int64_t run_id, fly_summary **out,
                          fly_err *err);
void   fly_report_free(fly_summary *s);                  /* NULL: no-op */

#endif
