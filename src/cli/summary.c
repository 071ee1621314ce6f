/*
 * summary.c -- `flydb summary [RUN_ID]`: the posterior table of a run.
 *
 * Per parameter, over post-warm-up draws of all chains: mean, median, sd,
 * mad, q5, q95, rhat, ess_bulk, ess_tail, mcse_mean -- the columns and
 * definitions of posterior::summarise_draws (src/stats) -- then run-level
 * lines: iterations, acceptance, mean bright fraction, likelihood
 * evaluations and rows read per iteration, ESS per second.  The table is
 * also stored in the `summary` table.  Warnings as Stan gives them when
 * R-hat > 1.01 or ESS < 100 per chain.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stats/stats.h"
#include "store/db.h"
#include "store/summary.h"
#include "store/trace.h"
#include "util/mem.h"

/* JSON string body: escapes quotes, backslashes and control characters. */
static void json_str(const char *t)
{
  putchar('"');
  for(; *t; t++){
    unsigned char ch = (unsigned char)*t;
    if( ch == '"' || ch == '\\' ) printf("\\%c", ch);
    else if( ch < 0x20 ) printf("\\u%04x", ch);
    else putchar(ch);
  }
  putchar('"');
}

static void json_num(double v)
{
  if( isfinite(v) ) printf("%.17g", v);
  else printf("null");
}

/* CSV field: quoted when it holds a comma, quote or line end. */
static void csv_str(const char *t)
{
  if( !strpbrk(t, ",\"\r\n") ){ fputs(t, stdout); return; }
  putchar('"');
  for(; *t; t++){ if( *t == '"' ) putchar('"'); putchar(*t); }
  putchar('"');
}

#define NCOL 10
static const char *const col_name[NCOL] = {
  "mean", "median", "sd", "mad", "q5", "q95", "rhat", "ess_bulk", "ess_tail", "mcse_mean"
};

fly_rc fly_summary_print(fly_db *db, int64_t run_id, fly_format fmt, fly_err *err)
{
  fly_trace_reader *tr = NULL;
  const fly_trace_run *ri;
  fly_stats_ws *ws = NULL;
  double *x = NULL, (*res)[NCOL] = NULL;
  fly_summary_row *rows = NULL;
  fly_rc rc;
  size_t n_keep, C, P, n_used = 0, warn_rhat = 0, warn_ess = 0;
  double min_ess = INFINITY, waste = NAN, wall;
  fly_trace_means dm;

  if( (rc = fly_trace_reader_open(db, run_id, &tr, err)) ) return rc;
  ri = fly_trace_reader_run(tr);
  run_id = ri->id;
  C = ri->n_chains;
  P = ri->n_params;
  wall = isnan(ri->sample_seconds) ? isnan(ri->wall_seconds) ? 0 : ri->wall_seconds
                                   : ri->sample_seconds;
  if( C > 64 ){
    rc = fly_fail(err, FLY_RANGE, "run %lld has %zu chains; at most 64 are summarised",
                  (long long)run_id, C);
    goto done;
  }
  /* kept post-warm-up iterations: multiples of thin in (warmup, warmup+iters] */
  n_keep = (size_t)((ri->n_warmup + ri->n_iters) / ri->thin - ri->n_warmup / ri->thin);
  x = fly_alloc_array(C * (n_keep ? n_keep : 1), sizeof *x);
  res = fly_alloc_array(P, sizeof *res);
  rows = fly_alloc_array(P, sizeof *rows);
  if( !x || !res || !rows ){ rc = fly_fail(err, FLY_NOMEM, "summary"); goto done; }
  if( (rc = fly_stats_ws_new(C, n_keep, &ws, err)) ) goto done;

  /* Compute everything first: nothing is printed for a run without draws. */
  for(size_t p = 0; p < P; p++){
    size_t n_it = n_keep;
    for(size_t c = 0; c < C; c++){
      size_t got = 0;
      if( (rc = fly_trace_draws(tr, c, p, 1, ri->n_warmup, n_keep, x + c * n_keep, NULL,
                                &got, err)) ) goto done;
      if( got < n_it ) n_it = got;
    }
    if( n_it == 0 ){
      rc = fly_fail(err, FLY_RANGE, "run %lld has no post-warm-up draws yet", (long long)run_id);
      goto done;
    }
    if( n_it < n_keep )   /* an unfinished run: use the common length */
      for(size_t c = 1; c < C; c++) memmove(x + c * n_it, x + c * n_keep, n_it * sizeof *x);
    n_used = n_it;
    fly_stats_summary s;
    if( (rc = fly_stats_summarise(ws, x, C, n_it, &s, err)) ) goto done;
    double v[NCOL] = { s.mean, s.median, s.sd, s.mad, s.q5, s.q95, s.rhat, s.ess_bulk,
                       s.ess_tail, s.mcse_mean };
    memcpy(res[p], v, sizeof v);
    rows[p] = (fly_summary_row){ fly_trace_param_name(tr, p), s.mean, s.sd, s.median, s.mad,
                                 s.q5, s.q95, s.rhat, s.ess_bulk, s.ess_tail, s.mcse_mean };
    if( s.rhat > 1.01 ) warn_rhat++;
    if( s.ess_bulk < 100.0 * (double)C || s.ess_tail < 100.0 * (double)C ) warn_ess++;
    if( s.ess_bulk < min_ess ) min_ess = s.ess_bulk;
  }
  if( (rc = fly_trace_diagnostics_mean(tr, ri->n_warmup, &dm, err)) ) goto done;
  /* --z gibbs reads only thinning candidates (or all N rows when it falls
   * back to a scan): rows read per bright row is the bound's waste. */
  if( strcmp(ri->z_mode, "gibbs") == 0 && dm.n_bright > 0 ) waste = dm.n_reads / dm.n_bright;

  /* Store the table (best effort: a read-only file still gets the print). */
  fly_summary_put(db, run_id, rows, P, NULL);

  double ess_s = wall > 0 && isfinite(min_ess) ? min_ess / wall : NAN;
  if( fmt == FLY_FMT_CSV ){
    printf("variable");
    for(int k = 0; k < NCOL; k++) printf(",%s", col_name[k]);
    printf("\n");
    for(size_t p = 0; p < P; p++){
      csv_str(fly_trace_param_name(tr, p));
      for(int k = 0; k < NCOL; k++){
        if( isfinite(res[p][k]) ) printf(",%.17g", res[p][k]);
        else printf(",NA");
      }
      printf("\n");
    }
  }else if( fmt == FLY_FMT_JSON ){
    printf("{\"run_id\": %lld, \"chains\": %zu, \"draws_per_chain\": %zu, \"warmup\": %lld, "
           "\"z_mode\": ", (long long)run_id, C, n_used, (long long)ri->n_warmup);
    json_str(ri->z_mode);
    printf(", \"status\": ");
    json_str(ri->status);
    printf(", \"acceptance\": "); json_num(dm.accepted);
    printf(", \"mean_bright\": "); json_num(dm.n_bright);
    printf(", \"lik_evals_per_iter\": "); json_num(dm.n_lik);
    printf(", \"rows_read_per_iter\": "); json_num(dm.n_reads);
    printf(", \"thinning_waste\": "); json_num(waste);
    printf(", \"sample_seconds\": "); json_num(wall);
    printf(", \"min_ess_bulk_per_second\": "); json_num(ess_s);
    printf(",\n \"variables\": [\n");
    for(size_t p = 0; p < P; p++){
      printf("  {\"variable\": ");
      json_str(fly_trace_param_name(tr, p));
      for(int k = 0; k < NCOL; k++){ printf(", \"%s\": ", col_name[k]); json_num(res[p][k]); }
      printf("}%s\n", p + 1 < P ? "," : "");
    }
    printf(" ]}\n");
  }else{
    printf("run %lld: %zu chains x %zu draws (after %lld warm-up), z %s, %s\n",
           (long long)run_id, C, n_used, (long long)ri->n_warmup, ri->z_mode, ri->status);
    printf("%-20s %10s %10s %10s %10s %10s %10s %7s %9s %9s %10s\n", "variable", "mean",
           "median", "sd", "mad", "q5", "q95", "rhat", "ess_bulk", "ess_tail", "mcse_mean");
    for(size_t p = 0; p < P; p++){
      const double *v = res[p];
      printf("%-20.20s %10.4g %10.4g %10.4g %10.4g %10.4g %10.4g %7.3f %9.0f %9.0f %10.3g\n",
             fly_trace_param_name(tr, p), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
    }
    if( isfinite(dm.n_bright) )
      printf("\nacceptance %.3f; bright rows %.1f (%.3f%% of N = %lld); per iteration %.1f "
             "likelihood evaluations, %.1f rows read\n", dm.accepted, dm.n_bright,
             100.0 * dm.n_bright / (double)ri->n_rows, (long long)ri->n_rows, dm.n_lik,
             dm.n_reads);
    if( isfinite(waste) )
      printf("thinning waste %.1f: rows read per iteration / mean bright rows (1 would "
             "read only rows that turn bright)\n", waste);
    if( isfinite(ess_s) )
      printf("min ess_bulk %.0f in %.2f s of sampling (iteration loops): %.1f effective "
             "draws per second\n", min_ess, wall, ess_s);
    if( warn_rhat )
      printf("warning: %zu parameters have R-hat > 1.01: the chains have not mixed; run "
             "longer\n", warn_rhat);
    if( warn_ess )
      printf("warning: %zu parameters have bulk or tail ESS < %zu (100 per chain): "
             "estimates are unreliable; run longer\n", warn_ess, (size_t)(100 * C));
  }
done:
  fly_stats_ws_free(ws);
  fly_free(x);
  fly_free(res);
  fly_free(rows);
  fly_trace_reader_close(tr);
  return rc;
}

int fly_cmd_summary(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "format", FLY_OPT_VALUE, "table (default) | csv | json", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  int64_t run_id = 0;
  fly_format fmt = FLY_FMT_TABLE;
  const char *synopsis = "[RUN_ID] [--db PATH] [--format table|csv|json]";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "summary", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "summary", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "summary", synopsis, &err);
    }
    run_id = v;
  }
  const char *f = fly_args_str(&a, "format", "table");
  if( !strcmp(f, "csv") ) fmt = FLY_FMT_CSV;
  else if( !strcmp(f, "json") ) fmt = FLY_FMT_JSON;
  else if( strcmp(f, "table") ){
    fly_fail(&err, FLY_MISUSE, "--format: '%s' is not table, csv or json", f);
    return fly_usage_error(&a, "summary", synopsis, &err);
  }
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK ) rc = fly_summary_print(db, run_id, fmt, &err);
  fly_db_close(db);
  return fly_report(rc, &err);
}
