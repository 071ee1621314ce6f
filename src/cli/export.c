/*
 * export.c -- `flydb export [RUN_ID] --format cmdstan|csv --out DIR`: a
 * run's draws as CmdStan CSV (one file per chain) or long and wide CSV,
 * written by io/export.h into DIR (created if missing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io/export.h"
#include "outdir.h"
#include "store/db.h"
#include "store/trace.h"

/* Export tr's run into dir and say what was written. */
static fly_rc export_run(fly_trace_reader *tr, fly_export_format fmt, int warm,
                         const char *dir, fly_err *err)
{
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  size_t C = ri->n_chains, P = ri->n_params;
  fly_export_files out;
  fly_rc rc = fly_export_dir(tr, fmt, warm, dir, &out, err);
  if( out.partial )
    fprintf(stderr, "flydb export: warning: run %lld (%s): not every chain has all its "
            "draws; exporting the first %lld post-warm-up draws of each chain\n",
            (long long)ri->id, ri->status, (long long)out.n_draws);
  if( rc == FLY_OK && fmt == FLY_EXPORT_CMDSTAN ){
    printf("run %lld: %zu chain%s x %lld draws%s, %zu parameter%s, CmdStan CSV:\n",
           (long long)ri->id, C, C == 1 ? "" : "s", (long long)out.n_draws,
           warm ? " (+ warm-up)" : "", P, P == 1 ? "" : "s");
    for(size_t i = 0; i < out.n; i++) printf("  %s\n", out.path[i]);
  }else if( rc == FLY_OK ){
    printf("run %lld: %lld iterations x %zu parameter%s (%zu chain%s), long and wide CSV:\n"
           "  %s\n  %s\n", (long long)ri->id, (long long)out.n_draws, P, P == 1 ? "" : "s",
           C, C == 1 ? "" : "s", out.path[0], out.path[1]);
  }
  fly_export_files_clear(&out);
  return rc;
}

int fly_cmd_export(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "format", FLY_OPT_VALUE, "cmdstan (default: one CmdStan CSV per chain) or csv "
      "(long and wide)", 0, 0 },
    { "out", FLY_OPT_VALUE, "output directory (created if missing)", 0, 0 },
    { "warmup", FLY_OPT_FLAG, "include the warm-up draws (CmdStan: save_warmup = 1)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  fly_trace_reader *tr = NULL;
  int64_t run_id = 0;
  fly_export_format fmt;
  const char *synopsis = "[RUN_ID] [--db PATH] [--format cmdstan|csv] --out DIR [--warmup]";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "export", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "export", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "export", synopsis, &err);
    }
    run_id = v;
  }
  const char *f = fly_args_str(&a, "format", "cmdstan");
  if( strcmp(f, "cmdstan") == 0 ) fmt = FLY_EXPORT_CMDSTAN;
  else if( strcmp(f, "csv") == 0 ) fmt = FLY_EXPORT_CSV;
  else{
    fly_fail(&err, FLY_MISUSE, "--format: '%s' is not cmdstan or csv", f);
    return fly_usage_error(&a, "export", synopsis, &err);
  }
  const char *dir = fly_args_str(&a, "out", NULL);
  if( !dir ){
    fly_fail(&err, FLY_MISUSE, "--out DIR is required");
    return fly_usage_error(&a, "export", synopsis, &err);
  }
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), FLY_DB_READONLY, &db, &err);
  if( rc == FLY_OK ) rc = fly_trace_reader_open(db, run_id, &tr, &err);
  if( rc == FLY_OK ) rc = fly_make_dir(dir, &err);
  if( rc == FLY_OK ) rc = export_run(tr, fmt, fly_args_set(&a, "warmup"), dir, &err);
  fly_trace_reader_close(tr);
  fly_db_close(db);
  return fly_report(rc, &err);
}
