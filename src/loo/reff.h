/*
 * reff.h -- the relative efficiency r_eff of a row's draws for PSIS, as R's
 * loo 2.5.1 estimates it: loo::relative_eff(exp(log_lik), chain_id), the
 * effective sample size of the likelihood values exp(ll_s) over the chains
 * divided by the number of draws.
 *
 * The ESS is loo's own (ess_rfun, the Geyer initial positive sequence of
 * Stan 2.18 without rank normalisation or splitting):
 *   acov_c(k)   = (M/n) (1/n) sum_t yc_t yc_{t+k}  per chain (yc centred),
 *                 M the next 2^a 3^b 5^c >= n (loo's FFT padding: its
 *                 autocovariance carries this factor, and with several
 *                 chains it weighs the between-chain variance, so it is
 *                 kept to give loo's numbers);
 *   W = mean_c acov_c(0) n/(n-1),  var+ = W (n-1)/n + var_c(chain means);
 *   rho(k) = 1 - (W - mean_c acov_c(k)) / var+, summed in pairs while a
 *   pair is positive, made monotone, tau = -1 + 2 sum rho, at least
 *   1/log10(C n);  r_eff = 1/tau.
 * Chains are the run's (run/posterior.h): with kept draws of unequal
 * length each chain contributes its first n = the shortest length (loo
 * needs equal lengths); chains with no kept draw are left out.  Fewer than 2 draws a
 * chain give r_eff = 1.
 */
#ifndef FLY_REFF_H
#define FLY_REFF_H

#include <stddef.h>

#include "util/err.h"

typedef struct fly_reff_ws fly_reff_ws;

/* A workspace for draws laid out in C chains of chain_len[c] (in order,
 * draw-major as fly_posterior keeps them).  chain_len is copied.  FLY_NOMEM;
 * *pw NULL on failure. */
fly_rc fly_reff_ws_new(const size_t *chain_len, size_t C, fly_reff_ws **pw,
                       fly_err *err);
void   fly_reff_ws_free(fly_reff_ws *w);                /* NULL: no-op */

/* r_eff of one row from its S log-likelihoods ll (the draws' order).
 * FLY_NOMEM from the FFT workspace.  A non-finite estimate gives 1. */
fly_rc fly_reff_row(fly_reff_ws *w, const double *ll, double *r_eff,
                    fly_err *err);

#endif
