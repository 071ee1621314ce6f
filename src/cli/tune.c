/*
 * tune.c -- `flydb tune`: build (or show) the tuned bounds of a data set
 * without sampling: the MAP by streaming L-BFGS, the Laplace matrices,
 * per-row xi and thinning keys, the moment tables.  `flydb sample` reuses
 * what this stores.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "modelopt.h"
#include "mpi/comm.h"
#include "run/run.h"
#include "store/db.h"
#include "tune/tune.h"

/* The library's news (what a formula did) on stderr. */
static void say_line(void *ctx, const char *line)
{
  (void)ctx;
  fprintf(stderr, "%s\n", line);
}

int fly_cmd_tune(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "data", FLY_OPT_VALUE, "data set name (default: the only one)", 0, 0 },
    FLY_MODEL_OPTS,
    { "bounds", FLY_OPT_VALUE, "map (default) | fixed[=xi]", 0, 0 },
    { "force", FLY_OPT_FLAG, "rebuild even if these bounds exist", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  fly_bounds *bd = NULL;
  fly_tune_opts to;
  fly_model_spec spec;
  fly_run_hooks hooks = { NULL, say_line, NULL };
  int usage = 0;
  const char *synopsis = "[options]";
  fly_rc rc;

  if( fly_args_parse(&a, argc, argv, 0, &err) ) return fly_usage_error(&a, "tune", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "tune", synopsis); return 0; }
  fly_tune_opts_default(&to);
  to.tuning = fly_args_str(&a, "bounds", "map");
  to.verbose = 1;
  to.force = fly_args_set(&a, "force");
  if( strncmp(to.tuning, "fixed=", 6) == 0 ){
    char *end;
    to.fixed_xi = strtod(to.tuning + 6, &end);
    if( *end || !(to.fixed_xi > 0) || !isfinite(to.fixed_xi) ){
      fly_fail(&err, FLY_MISUSE, "--bounds fixed=X: X must be a positive number");
      return fly_usage_error(&a, "tune", synopsis, &err);
    }
    to.tuning = "fixed";
  }else if( strcmp(to.tuning, "map") && strcmp(to.tuning, "fixed") ){
    fly_fail(&err, FLY_MISUSE, "--bounds: '%s' is not map or fixed[=xi]", to.tuning);
    return fly_usage_error(&a, "tune", synopsis, &err);
  }
  if( fly_modelopt_spec(&a, &spec, &err) )
    return fly_usage_error(&a, "tune", synopsis, &err);
  rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK &&
      (rc = fly_run_tune(db, fly_args_str(&a, "data", NULL), &spec, &to, &hooks, &bd,
                         &usage, &err)) && usage ){
    fly_db_close(db);
    return fly_usage_error(&a, "tune", synopsis, &err);
  }
  /* The ranks tuning a shard manifest hold the same result: rank 0 prints it. */
  if( rc == FLY_OK && fly_comm_launch_rank() == 0 ){
    printf("bound set %lld: %s bounds, MAP log posterior %.6g after %d L-BFGS iterations "
           "(|grad| %.3g), built in %.2f s\n", (long long)bd->id, bd->tuned ? "MAP-tuned" : "fixed",
           bd->map_logpost, bd->map_iters, bd->map_grad_norm, bd->tune_seconds);
    printf("%-6s %14s %14s\n", "param", "MAP", "Laplace sd");
    for(size_t i = 0; i < bd->P; i++)
      printf("%-6zu %14.6g %14.6g\n", i, bd->theta_map[i], sqrt(bd->cov[i * bd->P + i]));
  }
  fly_bounds_free(bd);
  fly_db_close(db);
  return fly_report(rc, &err);
}
