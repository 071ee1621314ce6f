/*
 * loo.c -- `flydb loo [RUN_ID] [--subsample m|all] [--draws S] [--seed s]`:
 * a run's PSIS-LOO (loo/loo.h), stored in tables loo and loo_point and
 * printed as R's loo package prints it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "loo/loo.h"
#include "store/db.h"

/* Parse the loo options shared with `flydb compare` into o. */
fly_rc fly_cli_loo_opts(fly_args *a, fly_loo_opts *o, fly_err *err)
{
  fly_rc rc;
  int64_t v;
  fly_loo_opts_default(o);
  const char *ss = fly_args_str(a, "subsample", NULL);
  if( ss && !strcmp(ss, "all") ) o->m = -1;
  else if( ss && (rc = fly_args_int(a, "subsample", 0, 1, INT64_MAX, &o->m, err)) ) return rc;
  if( (rc = fly_args_int(a, "draws", o->max_draws, 2, 1000000, &o->max_draws, err)) ) return rc;
  if( (rc = fly_args_int(a, "seed", 1, 0, INT64_MAX, &v, err)) ) return rc;
  o->seed = (uint64_t)v;
  return fly_args_real(a, "r-eff", 1, 1e-6, 1e6, &o->r_eff, err);
}

static void print_result(const fly_loo_result *r)
{
  if( r->exact )
    printf("run %lld: PSIS-LOO of %lld rows, %lld draws\n\n", (long long)r->run_id,
           (long long)r->N, (long long)r->S);
  else
    printf("run %lld: PSIS-LOO of %lld rows from a subsample of %lld (seed %llu), "
           "%lld draws\n\n", (long long)r->run_id, (long long)r->N, (long long)r->m,
           (unsigned long long)r->seed, (long long)r->S);
  printf("%-10s %14s %12s %16s\n", "", "Estimate", "SE", "subsampling SE");
  printf("%-10s %14.1f %12.1f %16.1f\n", "elpd_loo", r->elpd_loo, r->se, r->subsampling_se);
  printf("%-10s %14.1f %12.1f\n", "p_loo", r->p_loo, r->p_loo_se);
  printf("%-10s %14.1f %12.1f %16.1f\n\n", "looic", r->looic, r->looic_se,
         2 * r->subsampling_se);
  double m = (double)r->m;
  printf("Pareto k diagnostic values%s:\n", r->exact ? "" : " of the sampled rows");
  printf("  %-22s %10s %8s\n", "", "Count", "Pct.");
  printf("  %-22s %10lld %7.1f%%\n", "(-Inf, 0.5]  (good)", (long long)r->k_good, 100 * (double)r->k_good / m);
  printf("  %-22s %10lld %7.1f%%\n", " (0.5, 0.7]  (ok)", (long long)r->k_ok, 100 * (double)r->k_ok / m);
  printf("  %-22s %10lld %7.1f%%\n", "   (0.7, 1]  (bad)", (long long)r->k_bad, 100 * (double)r->k_bad / m);
  printf("  %-22s %10lld %7.1f%%\n", "   (1, Inf)  (very bad)", (long long)r->k_verybad,
         100 * (double)r->k_verybad / m);
}

int fly_cmd_loo(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    FLY_CLI_LOO_OPTS,
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  fly_loo_opts o;
  fly_loo_result r;
  int64_t run_id = 0;
  const char *synopsis = "[RUN_ID] [--db PATH] [--subsample m|all] [--draws S] [--seed s] "
                         "[--r-eff R]";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "loo", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "loo", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "loo", synopsis, &err);
    }
    run_id = v;
  }
  if( fly_cli_loo_opts(&a, &o, &err) ) return fly_usage_error(&a, "loo", synopsis, &err);
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK ) rc = fly_loo_run(db, run_id, &o, &r, &err);
  if( rc == FLY_OK ) print_result(&r);
  fly_db_close(db);
  return fly_report(rc, &err);
}
