/*
 * flydb.c -- the program: dispatch to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util/blas.h"

#ifndef FLYDB_VERSION
#define FLYDB_VERSION "unknown"
#endif

typedef struct subcmd {
  const char *name;
  int (*fn)(int, char **);
  const char *what;
} subcmd;

static const subcmd cmds[] = {
  { "ingest",  fly_cmd_ingest,  "read a CSV file into a data set" },
  { "info",    fly_cmd_info,    "describe the data sets of a database" },
  { "dump",    fly_cmd_dump,    "write a data set back out as CSV (exact values)" },
  { "tune",    fly_cmd_tune,    "tune the lower bounds (MAP, Laplace, xi, moments)" },
  { "sample",  fly_cmd_sample,  "run FlyMC (or --regular) chains and store the draws" },
  { "summary", fly_cmd_summary, "posterior table of a run: mean, sd, quantiles, ESS, R-hat" },
  { "export",  fly_cmd_export,  "write a run's draws as CmdStan CSV files or plain CSV" },
  { "loo",     fly_cmd_loo,     "PSIS-LOO of a run (subsampled on tall data), stored" },
  { "ppc",     fly_cmd_ppc,     "posterior predictive checks of a run on its data, stored" },
  { "compare", fly_cmd_compare, "runs of the same rows ranked by elpd_loo (loo_compare)" },
  { "predict", fly_cmd_predict, "predictions of a run for new rows, with held-out scores" },
  { "plot",    fly_cmd_plot,    "trace, autocorrelation and density plots of a run (SVG)" },
  { "check",   fly_cmd_check,   "verify a database: SQLite, pages, statistics, bounds, runs" },
  { "shard",   fly_cmd_shard,   "split a data set into shard databases with a manifest; assemble, verify" },
  { "version", fly_cmd_version, "versions of flydb, its schema and the libraries it runs with" },
  { NULL, NULL, NULL },
};

static void usage(FILE *f)
{
  fprintf(f, "flydb %s -- exact Bayesian MCMC (Firefly Monte Carlo) for tall data\n\n"
             "usage: flydb COMMAND [options]   (flydb COMMAND --help for its options)\n\n",
          FLYDB_VERSION);
  for(const subcmd *c = cmds; c->name; c++)
    fprintf(f, "  %-9s %s\n", c->name, c->what);
}

int main(int argc, char **argv)
{
  /* before any thread of ours starts: OpenBLAS's pool would poll on
   * their cores (util/blas.h) */
  fly_blas_serial();
  if( argc < 2 ){ usage(stderr); return 2; }
  if( !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help") ){
    usage(stdout);
    return 0;
  }
  if( !strcmp(argv[1], "--version") ){ fly_cli_version(stdout); return 0; }
  for(const subcmd *c = cmds; c->name; c++)
    if( strcmp(c->name, argv[1]) == 0 ) return c->fn(argc - 2, argv + 2);
  fprintf(stderr, "flydb: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
