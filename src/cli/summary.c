/*
 * summary.c -- `flydb summary [RUN_ID]`: the posterior table of a run
 * (run/report.h computes and stores it) printed as a table, CSV or JSON.
 *
 * Table: one line per parameter, then run-level lines: acceptance, mean
 * bright rows, likelihood evaluations and rows read per iteration, the
 * thinning waste of --z gibbs, ESS per second, and warnings as Stan gives
 * them when R-hat > 1.01 or ESS < 100 per chain, and for NUTS Stan's
 * sampler warnings: divergences, maximum tree depth, E-BFMI < 0.3.  CSV: the parameter
 * columns, NA for no estimate.  JSON: the run-level figures and the
 * parameters, null for no estimate.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run/report.h"
#include "store/db.h"

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

/* Row p's columns in the order of col_name. */
static void columns(const fly_summary_row *r, double v[NCOL])
{
  double w[NCOL] = { r->mean, r->median, r->sd, r->mad, r->q5, r->q95, r->rhat, r->ess_bulk,
                     r->ess_tail, r->mcse_mean };
  memcpy(v, w, sizeof w);
}

static void print_csv(const fly_summary *s)
{
  printf("variable");
  for(int k = 0; k < NCOL; k++) printf(",%s", col_name[k]);
  printf("\n");
  for(size_t p = 0; p < s->n_params; p++){
    double v[NCOL];
    columns(&s->rows[p], v);
    csv_str(s->rows[p].name);
    for(int k = 0; k < NCOL; k++){
      if( isfinite(v[k]) ) printf(",%.17g", v[k]);
      else printf(",NA");
    }
    printf("\n");
  }
}

static void print_json(const fly_summary *s)
{
  printf("{\"run_id\": %lld, \"chains\": %zu, \"draws_per_chain\": %zu, \"warmup\": %lld, "
         "\"z_mode\": ", (long long)s->run_id, s->n_chains, s->n_draws, (long long)s->n_warmup);
  json_str(s->z_mode);
  printf(", \"status\": ");
  json_str(s->status);
  printf(", \"acceptance\": "); json_num(s->acceptance);
  printf(", \"mean_bright\": "); json_num(s->mean_bright);
  printf(", \"lik_evals_per_iter\": "); json_num(s->lik_evals);
  printf(", \"rows_read_per_iter\": "); json_num(s->rows_read);
  printf(", \"thinning_waste\": "); json_num(s->waste);
  printf(", \"sample_seconds\": "); json_num(s->seconds);
  printf(", \"min_ess_bulk_per_second\": "); json_num(s->ess_per_second);
  if( s->n_kstats ){
    printf(", \"accept_stat\": "); json_num(s->accept_stat);
    printf(", \"kernel_iterations\": %zu, \"divergent\": %zu, \"max_treedepth_hits\": %zu, "
           "\"ebfmi\": [", s->n_kstats, s->n_divergent, s->n_max_depth);
    for(size_t c = 0; c < s->n_chains; c++){
      if( c ) printf(", ");
      json_num(s->ebfmi[c]);
    }
    printf("]");
  }
  printf(",\n \"variables\": [\n");
  for(size_t p = 0; p < s->n_params; p++){
    double v[NCOL];
    columns(&s->rows[p], v);
    printf("  {\"variable\": ");
    json_str(s->rows[p].name);
    for(int k = 0; k < NCOL; k++){ printf(", \"%s\": ", col_name[k]); json_num(v[k]); }
    printf("}%s\n", p + 1 < s->n_params ? "," : "");
  }
  printf(" ]}\n");
}

static void print_table(const fly_summary *s)
{
  printf("run %lld: %zu chains x %zu draws (after %lld warm-up), z %s, %s\n",
         (long long)s->run_id, s->n_chains, s->n_draws, (long long)s->n_warmup, s->z_mode,
         s->status);
  printf("%-20s %10s %10s %10s %10s %10s %10s %7s %9s %9s %10s\n", "variable", "mean",
         "median", "sd", "mad", "q5", "q95", "rhat", "ess_bulk", "ess_tail", "mcse_mean");
  for(size_t p = 0; p < s->n_params; p++){
    double v[NCOL];
    columns(&s->rows[p], v);
    printf("%-20.20s %10.4g %10.4g %10.4g %10.4g %10.4g %10.4g %7.3f %9.0f %9.0f %10.3g\n",
           s->rows[p].name, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
  }
  /* NUTS accepts every step (it moves to a point of its trajectory); its
   * acceptance is the mean acceptance statistic, as Stan reports it */
  if( isfinite(s->mean_bright) && isfinite(s->accept_stat) )
    printf("\nmean accept_stat %.3f (NUTS; the step size adapts it to 0.8); bright rows %.1f "
           "(%.3f%% of N = %lld); per iteration %.1f likelihood evaluations, %.1f rows read\n",
           s->accept_stat, s->mean_bright, 100.0 * s->mean_bright / (double)s->n_rows,
           (long long)s->n_rows, s->lik_evals, s->rows_read);
  else if( isfinite(s->mean_bright) )
    printf("\nacceptance %.3f; bright rows %.1f (%.3f%% of N = %lld); per iteration %.1f "
           "likelihood evaluations, %.1f rows read\n", s->acceptance, s->mean_bright,
           100.0 * s->mean_bright / (double)s->n_rows, (long long)s->n_rows, s->lik_evals,
           s->rows_read);
  if( isfinite(s->waste) )
    printf("thinning waste %.1f: rows read per iteration / mean bright rows (1 would "
           "read only rows that turn bright)\n", s->waste);
  if( isfinite(s->ess_per_second) )
    printf("min ess_bulk %.0f in %.2f s of sampling (iteration loops): %.1f effective "
           "draws per second\n", s->min_ess_bulk, s->seconds, s->ess_per_second);
  if( s->n_warn_rhat )
    printf("warning: %zu parameters have R-hat > 1.01: the chains have not mixed; run "
           "longer\n", s->n_warn_rhat);
  if( s->n_warn_ess )
    printf("warning: %zu parameters have bulk or tail ESS < %zu (100 per chain): "
           "estimates are unreliable; run longer\n", s->n_warn_ess, (size_t)(100 * s->n_chains));
  /* Stan's sampler warnings (rstan check_hmc_diagnostics) */
  if( s->n_divergent )
    printf("warning: %zu of %zu post-warm-up iterations ended with a divergence: the "
           "posterior has regions the integrator cannot follow, and the draws may be "
           "biased\n", s->n_divergent, s->n_kstats);
  if( s->n_max_depth )
    printf("warning: %zu of %zu post-warm-up iterations reached the maximum tree depth "
           "%d: the trajectories were cut short, which costs efficiency\n", s->n_max_depth,
           s->n_kstats, s->max_depth);
  if( s->n_kstats )
    for(size_t c = 0; c < s->n_chains; c++)
      if( s->ebfmi[c] < 0.3 )
        printf("warning: E-BFMI below 0.3 in chain %zu (%.2f): the momentum resampling "
               "explores the energy poorly\n", c + 1, s->ebfmi[c]);
}

fly_rc fly_summary_print(fly_db *db, int64_t run_id, fly_format fmt, fly_err *err)
{
  fly_summary *s = NULL;
  fly_rc rc = fly_report_summary(db, run_id, &s, err);
  if( rc ) return rc;
  if( fmt == FLY_FMT_CSV ) print_csv(s);
  else if( fmt == FLY_FMT_JSON ) print_json(s);
  else print_table(s);
  fly_report_free(s);
  return FLY_OK;
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
