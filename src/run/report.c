/*
 * report.c -- the posterior summary of a run (see report.h).
 *
 * Per parameter, over post-warm-up draws of all chains: mean, median, sd,
 * mad, q5, q95, rhat, ess_bulk, ess_tail, mcse_mean -- the columns and
 * definitions of posterior::summarise_draws (src/stats).  An unfinished run
 * is summarised over the iterations every chain has (the common length).
 * Run level: the mean diagnostics of the post-warm-up iterations, the
 * thinning waste of --z gibbs, min ess_bulk per second of sampling, and
 * the counts behind Stan's warnings (R-hat > 1.01, ESS < 100 per chain).
 *
 * Every number is computed before the `summary` table is written, so a run
 * without draws leaves the table alone.  Memory: one parameter's draws of
 * all chains at a time plus the P result rows.
 */
#include "run/report.h"

#include <math.h>
#include <string.h>

#include "samplers/nuts.h"       /* FLY_NUTS_MAX_DEPTH: the tree-depth warning */
#include "stats/stats.h"
#include "store/trace.h"
#include "util/mem.h"

void fly_report_free(fly_summary *s)
{
  if( !s ) return;
  if( s->rows )
    for(size_t p = 0; p < s->n_params; p++) fly_free((char *)s->rows[p].name);
  fly_free(s->rows);
  fly_free(s);
}

/* The NUTS statistics of the post-warm-up iterations (at most n_keep per
 * chain) into s: divergences, tree-depth hits and E-BFMI per chain.  rows:
 * caller's workspace of n_keep. */
static fly_rc kernel_stats(fly_trace_reader *tr, fly_summary *s, size_t n_keep,
                           fly_trace_row *rows, fly_err *err)
{
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  double acc = 0;
  size_t n_acc = 0;
  s->max_depth = FLY_NUTS_MAX_DEPTH;
  s->accept_stat = NAN;
  for(size_t c = 0; c < s->n_chains; c++){
    size_t n = 0, m = 0;
    double mean = 0, ss = 0, dd = 0, prev = 0;
    fly_rc rc = fly_trace_diagnostics(tr, c, ri->n_warmup, n_keep, rows, NULL, &n, err);
    if( rc ) return rc;
    for(size_t t = 0; t < n; t++){
      const fly_trace_row *w = &rows[t];
      if( !w->has_kstats ) continue;
      s->n_kstats++;
      s->n_divergent += w->divergent != 0;
      s->n_max_depth += w->treedepth >= s->max_depth;
      if( isfinite(w->accept_stat) ){ acc += w->accept_stat; n_acc++; }
      if( !isfinite(w->energy) ) continue;
      /* Welford for the variance, successive differences for the numerator */
      m++;
      double d = w->energy - mean;
      mean += d / (double)m;
      ss += d * (w->energy - mean);
      if( m > 1 ) dd += (w->energy - prev) * (w->energy - prev);
      prev = w->energy;
    }
    s->ebfmi[c] = m > 1 && ss > 0 ? (dd / (double)m) / (ss / (double)(m - 1)) : NAN;
  }
  if( n_acc ) s->accept_stat = acc / (double)n_acc;
  return FLY_OK;
}

fly_rc fly_report_summary(fly_db *db, int64_t run_id, fly_summary **out, fly_err *err)
{
  fly_trace_reader *tr = NULL;
  const fly_trace_run *ri;
  fly_stats_ws *ws = NULL;
  fly_summary *s = NULL;
  double *x = NULL;
  fly_rc rc;
  size_t n_keep, C, P;
  fly_trace_means dm;

  *out = NULL;
  if( (rc = fly_trace_reader_open(db, run_id, &tr, err)) ) return rc;
  ri = fly_trace_reader_run(tr);
  C = ri->n_chains;
  P = ri->n_params;
  if( C > FLY_REPORT_MAX_CHAINS ){
    rc = fly_fail(err, FLY_RANGE, "run %lld has %zu chains; at most %d are summarised",
                  (long long)ri->id, C, FLY_REPORT_MAX_CHAINS);
    goto done;
  }
  if( !(s = fly_alloc_array(1, sizeof *s)) ){ rc = fly_fail(err, FLY_NOMEM, "summary"); goto done; }
  memset(s, 0, sizeof *s);
  s->run_id = ri->id;
  s->n_chains = C;
  s->n_warmup = ri->n_warmup;
  s->n_rows = ri->n_rows;
  memcpy(s->z_mode, ri->z_mode, sizeof s->z_mode);
  memcpy(s->status, ri->status, sizeof s->status);
  s->seconds = isnan(ri->sample_seconds) ? isnan(ri->wall_seconds) ? 0 : ri->wall_seconds
                                         : ri->sample_seconds;
  s->min_ess_bulk = INFINITY;
  s->waste = NAN;
  /* kept post-warm-up iterations: multiples of thin in (warmup, warmup+iters] */
  n_keep = (size_t)((ri->n_warmup + ri->n_iters) / ri->thin - ri->n_warmup / ri->thin);
  x = fly_alloc_array(C * (n_keep ? n_keep : 1), sizeof *x);
  s->rows = fly_alloc_array(P, sizeof *s->rows);
  if( !x || !s->rows ){ rc = fly_fail(err, FLY_NOMEM, "summary"); goto done; }
  memset(s->rows, 0, P * sizeof *s->rows);
  s->n_params = P;
  if( (rc = fly_stats_ws_new(C, n_keep, &ws, err)) ) goto done;

  for(size_t p = 0; p < P; p++){
    size_t n_it = n_keep;
    fly_stats_summary m;
    for(size_t c = 0; c < C; c++){
      size_t got = 0;
      if( (rc = fly_trace_draws(tr, c, p, 1, ri->n_warmup, n_keep, x + c * n_keep, NULL,
                                &got, err)) ) goto done;
      if( got < n_it ) n_it = got;
    }
    if( n_it == 0 ){
      rc = fly_fail(err, FLY_RANGE, "run %lld has no post-warm-up draws yet", (long long)ri->id);
      goto done;
    }
    if( n_it < n_keep )   /* an unfinished run: use the common length */
      for(size_t c = 1; c < C; c++) memmove(x + c * n_it, x + c * n_keep, n_it * sizeof *x);
    s->n_draws = n_it;
    if( (rc = fly_stats_summarise(ws, x, C, n_it, &m, err)) ) goto done;
    char *name = fly_strdup(fly_trace_param_name(tr, p));
    if( !name ){ rc = fly_fail(err, FLY_NOMEM, "summary"); goto done; }
    s->rows[p] = (fly_summary_row){ name, m.mean, m.sd, m.median, m.mad, m.q5, m.q95, m.rhat,
                                    m.ess_bulk, m.ess_tail, m.mcse_mean };
    if( m.rhat > 1.01 ) s->n_warn_rhat++;
    if( m.ess_bulk < 100.0 * (double)C || m.ess_tail < 100.0 * (double)C ) s->n_warn_ess++;
    if( m.ess_bulk < s->min_ess_bulk ) s->min_ess_bulk = m.ess_bulk;
  }
  if( (rc = fly_trace_diagnostics_mean(tr, ri->n_warmup, &dm, err)) ) goto done;
  {
    fly_trace_row *rows = fly_alloc_array(n_keep ? n_keep : 1, sizeof *rows);
    if( !rows ){ rc = fly_fail(err, FLY_NOMEM, "summary"); goto done; }
    rc = kernel_stats(tr, s, n_keep, rows, err);
    fly_free(rows);
    if( rc ) goto done;
  }
  s->acceptance = dm.accepted;
  s->mean_bright = dm.n_bright;
  s->lik_evals = dm.n_lik;
  s->rows_read = dm.n_reads;
  /* --z gibbs reads only thinning candidates (or all N rows when it falls
   * back to a scan): rows read per bright row is the bound's waste. */
  if( strcmp(ri->z_mode, "gibbs") == 0 && dm.n_bright > 0 ) s->waste = dm.n_reads / dm.n_bright;
  s->ess_per_second = s->seconds > 0 && isfinite(s->min_ess_bulk) ? s->min_ess_bulk / s->seconds
                                                                  : NAN;
  /* best effort: a read-only file still gets the summary */
  fly_summary_put(db, s->run_id, s->rows, P, NULL);
done:
  fly_stats_ws_free(ws);
  fly_free(x);
  fly_trace_reader_close(tr);
  if( rc ) fly_report_free(s);
  else *out = s;
  return rc;
}
