/*
 * predict.c -- `flydb predict [RUN_ID] FILE|- [--out FILE] [--draws M]
 * [--level L]`: a run's predictions for the rows of a new CSV
 * (predict/predict.h), written as CSV to --out or standard output, and
 * the held-out scores when the file holds the target, printed and stored
 * in table prediction.
 *
 * --out is written to a temporary file beside it and renamed into place on
 * success, so a failure leaves no partial file.  Standard output is
 * streamed, not buffered (memory stays flat in the rows): on a failure the
 * rows before the failing one have been written there, and only the exit
 * status and the message tell; --help says so.  The scores go to standard
 * output with --out, else to standard error (the predictions hold stdout).
 * On any failure nothing is stored.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli.h"
#include "predict/predict.h"
#include "store/db.h"

static const char help_note[] =
  "\nOutput: CSV with the input's 1-based data row number (row) and, over the\n"
  "run's post-warm-up draws (chains pooled, thinned evenly to --draws), the\n"
  "posterior mean and the central --level interval (R's quantile type 7 of\n"
  "the draws' values) of: logistic P(y = 1) (columns mean, lower, upper);\n"
  "softmax each class's probability (LABEL, LABEL_lower, LABEL_upper per\n"
  "class); robust the posterior predictive of y, the mixture over the draws\n"
  "of Student-t(nu, x'theta, scale): its mean is the mean of x'theta, and\n"
  "lower and upper are its exact quantiles, solved on the mixture CDF\n"
  "(Newton steps safeguarded by bisection; no simulation).\n"
  "The new file needs the columns the run's formula reads, by name (others\n"
  "are ignored); categorical cells must be levels of the run's data set.\n"
  "With the target column present: lpd (sum of log mean_s p(y|theta_s)),\n"
  "and Brier and AUC (logistic), accuracy and Brier (softmax) or RMSE\n"
  "(robust), printed and stored in table prediction.\n"
  "On an error (a bad cell names file:line:column) the exit status is 1 and\n"
  "nothing is stored; with --out no file is created (written beside it and\n"
  "renamed on success; a pipe or device such as /dev/null is written as it\n"
  "is), while to standard output the rows before the failing\n"
  "one have already been written: use --out, or check the exit status.\n";

int fly_cmd_predict(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "out", FLY_OPT_VALUE, "write the predictions to this CSV file, created only on "
      "success (default: standard output, streamed: on an error the rows before it stay "
      "written)", 0, 0 },
    { "draws", FLY_OPT_VALUE, "posterior draws used, at most (default 4000; chains pooled, "
      "thinned evenly)", 0, 0 },
    { "level", FLY_OPT_VALUE, "probability of the central interval (default 0.9): R's type-7 "
      "quantiles of the draws' values; robust: the exact quantiles of the Student-t mixture "
      "over the draws, solved on its CDF", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  fly_predict_opts o;
  fly_predict_result r;
  FILE *out = stdout;
  char tmp[4096] = "";
  int64_t run_id = 0;
  const char *synopsis = "[RUN_ID] FILE|- [--db PATH] [--out FILE] [--draws M] [--level L]";
  fly_predict_opts_default(&o);
  if( fly_args_parse(&a, argc, argv, 2, &err) ) return fly_usage_error(&a, "predict", synopsis, &err);
  if( fly_args_set(&a, "help") ){
    fly_args_usage(&a, "predict", synopsis);
    fputs(help_note, stderr);
    return 0;
  }
  if( a.n_pos == 0 ){
    fly_fail(&err, FLY_MISUSE, "name the file of new rows (or - for standard input)");
    return fly_usage_error(&a, "predict", synopsis, &err);
  }
  if( a.n_pos == 2 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "predict", synopsis, &err);
    }
    run_id = v;
  }
  const char *path = a.pos[a.n_pos - 1];
  if( fly_args_int(&a, "draws", o.max_draws, 1, 1000000, &o.max_draws, &err) ||
      fly_args_real(&a, "level", o.level, 1e-9, 1 - 1e-9, &o.level, &err) )
    return fly_usage_error(&a, "predict", synopsis, &err);
  const char *out_path = fly_args_str(&a, "out", NULL);

  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  /* A regular file is written beside and renamed into place on success; a
   * device or pipe (--out /dev/null, a FIFO) is written as it is: renaming
   * onto it would replace the device node with a file. */
  struct stat sb;
  int direct = out_path && stat(out_path, &sb) == 0 && !S_ISREG(sb.st_mode);
  if( rc == FLY_OK && direct && !(out = fopen(out_path, "w")) ){
    out = stdout;
    rc = fly_fail(&err, FLY_IO, "--out %s: cannot open it: %s", out_path, strerror(errno));
  }else if( rc == FLY_OK && out_path && !direct ){
    if( snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_path, (long)getpid()) >= (int)sizeof tmp )
      rc = fly_fail(&err, FLY_RANGE, "--out: path too long");
    else if( !(out = fopen(tmp, "w")) ){
      out = stdout;
      rc = fly_fail(&err, FLY_IO, "--out %s: cannot create %s", out_path, tmp);
    }
  }
  if( rc == FLY_OK ) rc = fly_predict_run(db, run_id, path, out, &o, &r, &err);
  if( out != stdout ){
    if( fclose(out) && rc == FLY_OK )
      rc = fly_fail(&err, FLY_IO, "--out %s: write failed", direct ? out_path : tmp);
    if( !direct && rc == FLY_OK && rename(tmp, out_path) != 0 )
      rc = fly_fail(&err, FLY_IO, "--out: cannot rename %s to %s", tmp, out_path);
    if( !direct && rc ) remove(tmp);
  }
  if( rc == FLY_OK ){
    FILE *f = out_path ? stdout : stderr;
    fprintf(f, "run %lld (%s): %lld rows predicted from %s with %lld draws (prediction %lld)\n",
            (long long)r.run_id, r.model, (long long)r.n_rows, strcmp(path, "-") ? path : "<stdin>",
            (long long)r.S, (long long)r.id);
    if( r.has_target ){
      fprintf(f, "  lpd       %.6f  (mean %.6f a row)\n", r.lpd, r.lpd / (double)r.n_rows);
      if( !isnan(r.brier) ) fprintf(f, "  brier     %.6f\n", r.brier);
      if( !isnan(r.auc) ) fprintf(f, "  auc       %.6f\n", r.auc);
      if( !isnan(r.accuracy) ) fprintf(f, "  accuracy  %.6f\n", r.accuracy);
      if( !isnan(r.rmse) ) fprintf(f, "  rmse      %.6f\n", r.rmse);
    }
  }
  fly_db_close(db);
  return fly_report(rc, &err);
}
