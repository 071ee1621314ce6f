/*
 * test_psis.c -- PSIS (src/loo/psis.c) against R's loo package on fixed
 * log-ratio vectors (psis_reference.h, from tools/make_psis_reference.R):
 * every smoothed log weight and k-hat to 1e-8, and one row's elpd_loo and
 * p_loo as loo::loo() gives them; the tail length of loo's n_pareto;
 * reversed draws give reversed weights and the same k-hat (no case has
 * ties in its tail, whose order would decide).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loo/psis.h"
#include "psis_reference.h"
#include "tap.h"

static double rel(double a, double b)
{
  if( a == b ) return 0;          /* infinities too */
  return fabs(a - b) / fmax(1, fabs(b));
}

int main(void)
{
  size_t n_cases = sizeof psis_cases / sizeof psis_cases[0];
  for(size_t c = 0; c < n_cases; c++){
    const psis_case *pc = &psis_cases[c];
    size_t S = pc->S;
    fly_psis_ws *w = NULL;
    double *lw = malloc(S * sizeof *lw), *ll = malloc(S * sizeof *ll);
    double *lp = malloc(S * sizeof *lp);
    if( !lw || !ll || !lp || fly_psis_ws_new(S, &w, NULL) ){
      TAP_OK(0, "%s: workspace", pc->name);
      return tap_done();
    }
    memcpy(lw, pc->lr, S * sizeof *lw);
    double k = fly_psis_smooth(w, lw, S, pc->r_eff);
    double dmax = 0;
    for(size_t s = 0; s < S; s++){
      double d = rel(lw[s], pc->lw[s]);
      if( !(d <= dmax) ) dmax = isnan(d) ? INFINITY : d;
    }
    TAP_OK(dmax <= 1e-8, "%s: %zu smoothed log weights as loo::psis (max rel diff %.2g)",
           pc->name, S, dmax);
    TAP_OK(rel(k, pc->k) <= 1e-8, "%s: pareto k %.17g, loo %.17g", pc->name, k, pc->k);

    for(size_t s = 0; s < S; s++) ll[s] = -pc->lr[s];
    fly_psis_row r;
    fly_psis_loo_row(w, ll, S, pc->r_eff, &r);
    TAP_OK(rel(r.elpd_loo, pc->elpd_loo) <= 1e-8 && rel(r.p_loo, pc->p_loo) <= 1e-8 &&
           rel(r.pareto_k, pc->k) <= 1e-8,
           "%s: elpd_loo %.17g p_loo %.17g, loo::loo %.17g %.17g", pc->name, r.elpd_loo,
           r.p_loo, pc->elpd_loo, pc->p_loo);

    /* reversed draws: weights reversed, k unchanged (the sort decides) */
    for(size_t s = 0; s < S; s++) lp[s] = pc->lr[S - 1 - s];
    double k2 = fly_psis_smooth(w, lp, S, pc->r_eff);
    int same = rel(k2, k) <= 1e-12;
    for(size_t s = 0; s < S && same; s++) same = rel(lp[S - 1 - s], lw[s]) <= 1e-12;
    TAP_OK(same, "%s: reversed draws give reversed weights", pc->name);
    fly_psis_ws_free(w);
    free(lw);
    free(ll);
    free(lp);
  }
  /* loo's n_pareto: ceiling(min(0.2 S, 3 sqrt(S / r_eff))) */
  TAP_OK(fly_psis_tail_len(1000, 1) == 95 && fly_psis_tail_len(100, 1) == 20 &&
         fly_psis_tail_len(4000, 1) == 190 && fly_psis_tail_len(4000, 0.1) == 600 &&
         fly_psis_tail_len(20, 1) == 4, "tail lengths as loo's n_pareto");
  fly_psis_ws *w = NULL;
  fly_err err = {0};
  TAP_OK(fly_psis_ws_new(1, &w, &err) == FLY_MISUSE && !w, "one draw is refused: %s", err.msg);
  double x[] = { 1, 3, -INFINITY, 2 };
  TAP_OK(fabs(fly_psis_logsumexp(x, 4) - log(exp(1) + exp(3) + exp(2))) < 1e-15 &&
         fly_psis_logsumexp(x, 0) == -INFINITY, "logsumexp");
  return tap_done();
}
