/*
 * compare.c -- `flydb compare RUN_A RUN_B ...`: runs of the same data rows
 * ranked by elpd_loo, with each one's difference to the best and its
 * standard error, paired on the rows (loo/loo.h; R's loo::loo_compare).
 * A run without a stored loo of these options gets one first.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "loo/loo.h"
#include "store/db.h"

int fly_cmd_compare(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    FLY_CLI_LOO_OPTS,
    { "csv", FLY_OPT_FLAG, "print CSV with every digit (run,elpd_diff,se_diff,"
      "subsampling_se,elpd_loo,se)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  fly_loo_opts o;
  fly_loo_diff d[FLY_LOO_MAX_RUNS];
  int64_t ids[FLY_LOO_MAX_RUNS];
  const char *synopsis = "RUN_A RUN_B [RUN ...] [--db PATH] [--subsample m|all] [--draws S] "
                         "[--seed s] [--r-eff R] [--csv]";
  if( fly_args_parse(&a, argc, argv, FLY_LOO_MAX_RUNS, &err) )
    return fly_usage_error(&a, "compare", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "compare", synopsis); return 0; }
  if( a.n_pos < 2 ){
    fly_fail(&err, FLY_MISUSE, "name at least two runs");
    return fly_usage_error(&a, "compare", synopsis, &err);
  }
  for(int i = 0; i < a.n_pos; i++){
    char *end;
    long long v = strtoll(a.pos[i], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN must be a positive integer, not '%s'", a.pos[i]);
      return fly_usage_error(&a, "compare", synopsis, &err);
    }
    ids[i] = v;
  }
  if( fly_cli_loo_opts(&a, &o, &err) ) return fly_usage_error(&a, "compare", synopsis, &err);
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK ) rc = fly_loo_compare(db, ids, (size_t)a.n_pos, &o, d, &err);
  if( rc == FLY_OK && fly_args_set(&a, "csv") ){
    printf("run,elpd_diff,se_diff,subsampling_se,elpd_loo,se\n");
    for(int i = 0; i < a.n_pos; i++)
      printf("%lld,%.17g,%.17g,%.17g,%.17g,%.17g\n", (long long)d[i].run_id, d[i].elpd_diff,
             d[i].se_diff, d[i].subsampling_se_diff, d[i].elpd_loo, d[i].se);
  }else if( rc == FLY_OK ){
    printf("%-8s %12s %10s %16s %14s %10s\n", "run", "elpd_diff", "se_diff",
           "subsampling_se", "elpd_loo", "se");
    for(int i = 0; i < a.n_pos; i++)
      printf("%-8lld %12.1f %10.1f %16.1f %14.1f %10.1f\n", (long long)d[i].run_id,
             d[i].elpd_diff, d[i].se_diff, d[i].subsampling_se_diff, d[i].elpd_loo, d[i].se);
  }
  fly_db_close(db);
  return fly_report(rc, &err);
}
