/*
 * cli.h -- the subcommands of the flydb program and their shared helpers.
 * Exit codes: 0 OK, 1 error, 2 usage.  Messages go to stderr.
 */
#ifndef FLY_CLI_H
#define FLY_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "args.h"
#include "util/err.h"

int fly_cmd_ingest(int argc, char **argv);
int fly_cmd_info(int argc, char **argv);
int fly_cmd_sample(int argc, char **argv);
int fly_cmd_summary(int argc, char **argv);
int fly_cmd_tune(int argc, char **argv);
int fly_cmd_dump(int argc, char **argv);
int fly_cmd_export(int argc, char **argv);
int fly_cmd_plot(int argc, char **argv);
int fly_cmd_check(int argc, char **argv);
int fly_cmd_version(int argc, char **argv);
int fly_cmd_shard(int argc, char **argv);
int fly_cmd_loo(int argc, char **argv);      /* loo.c, compare.c */
int fly_cmd_ppc(int argc, char **argv);
int fly_cmd_compare(int argc, char **argv);
int fly_cmd_predict(int argc, char **argv);  /* predict.c */
/* The options of loo and compare that say how a run's loo is computed
 * (FLY_CLI_LOO_OPTS in their tables), parsed by fly_cli_loo_opts (loo.c). */
#define FLY_CLI_LOO_OPTS \
  { "subsample", FLY_OPT_VALUE, "rows with exact PSIS-LOO: a number, or all (default: " \
    "all up to 20000 rows, else 1000)", 0, 0 }, \
  { "draws", FLY_OPT_VALUE, "posterior draws used per run, at most (default 4000; " \
    "chains pooled, thinned evenly)", 0, 0 }, \
  { "seed", FLY_OPT_VALUE, "seed of the row subsample (default 1; the same seed " \
    "samples the same rows for every run of the data)", 0, 0 }, \
  { "r-eff", FLY_OPT_VALUE, "relative efficiency of the draws, as loo's r_eff, for " \
    "every row: sets the Pareto tail length (default: each row's, estimated from the " \
    "chains as loo::relative_eff)", 0, 0 }
struct fly_loo_opts;
fly_rc fly_cli_loo_opts(fly_args *a, struct fly_loo_opts *o, fly_err *err);

typedef enum { FLY_FMT_TABLE, FLY_FMT_CSV, FLY_FMT_JSON } fly_format;

/* Print the posterior table of run_id (0: the latest) in fmt and store it
 * in the summary table.  Nothing is printed when it fails. */
struct fly_db;
fly_rc fly_summary_print(struct fly_db *db, int64_t run_id, fly_format fmt,
                         fly_err *err);

/* Print the versions of flydb and of the libraries it runs with to f (the
 * output of `flydb --version`). */
void fly_cli_version(FILE *f);

#endif
