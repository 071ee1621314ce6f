/*
 * plot.c -- `flydb plot [RUN_ID] --out DIR [--kind K]`: pictures of a run as
 * SVG files and an index.html (io/plot.h) in DIR, created if missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io/plot.h"
#include "outdir.h"
#include "store/db.h"

int fly_cmd_plot(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "out", FLY_OPT_VALUE, "output directory (created if missing)", 0, 0 },
    { "kind", FLY_OPT_VALUE, "all (default: the MCMC pictures and the stored predictive "
      "check, if any), mcmc, calibration or residuals (the check stored by flydb ppc)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  fly_plot *pl = NULL;
  int64_t run_id = 0;
  size_t n_files = 0;
  const char *synopsis = "[RUN_ID] [--db PATH] --out DIR [--kind all|mcmc|calibration|residuals]";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "plot", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "plot", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "plot", synopsis, &err);
    }
    run_id = v;
  }
  const char *dir = fly_args_str(&a, "out", NULL);
  if( !dir ){
    fly_fail(&err, FLY_MISUSE, "--out DIR is required");
    return fly_usage_error(&a, "plot", synopsis, &err);
  }
  static const struct { const char *name; unsigned kinds; } kind[] = {
    { "all", FLY_PLOT_ALL }, { "mcmc", FLY_PLOT_MCMC },
    { "calibration", FLY_PLOT_CALIBRATION }, { "residuals", FLY_PLOT_RESIDUALS },
  };
  const char *ks = fly_args_str(&a, "kind", "all");
  unsigned kinds = 0;
  for(size_t i = 0; i < sizeof kind / sizeof kind[0]; i++)
    if( !strcmp(ks, kind[i].name) ) kinds = kind[i].kinds;
  if( !kinds ){
    fly_fail(&err, FLY_MISUSE, "--kind %s: want all, mcmc, calibration or residuals", ks);
    return fly_usage_error(&a, "plot", synopsis, &err);
  }
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), FLY_DB_READONLY, &db, &err);
  if( rc == FLY_OK ) rc = fly_plot_open(db, run_id, &pl, &err);
  if( rc == FLY_OK ) rc = fly_make_dir(dir, &err);
  if( rc == FLY_OK ) rc = fly_plot_write(pl, dir, kinds, &n_files, &err);
  if( rc == FLY_OK )
    printf("run %lld: %zu SVG files and %s/index.html\n", (long long)fly_plot_run_id(pl),
           n_files, dir);
  fly_plot_close(pl);
  fly_db_close(db);
  return fly_report(rc, &err);
}
