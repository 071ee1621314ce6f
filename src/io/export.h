/*
 * export.h -- a run's draws as files that R, Python and spreadsheets read
 * unchanged: CmdStan CSV (one file per chain, for cmdstanr, posterior and
 * ArviZ) or long and wide CSV.  The writers stream through the trace
 * reader (store/trace.h): one ordered scan of each chain, memory O(P).
 * Values are written in the shortest form that reads back as the same
 * double, so an export round-trips exactly.  Chains are numbered from 1 in
 * the files, iterations keep their numbers (warm-up first); warm-up draws
 * are written only when asked for.  export.c states the layouts.
 */
#ifndef FLY_EXPORT_H
#define FLY_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store/trace.h"
#include "util/err.h"

typedef enum { FLY_EXPORT_CMDSTAN, FLY_EXPORT_CSV } fly_export_format;

/* What a CmdStan export of a run writes: every chain is cut to the
 * iterations all chains have, as readers need chains of one length. */
typedef struct fly_export_plan {
  int     warm;            /* write the warm-up rows (save_warmup = 1) */
  int64_t n_warm, n_post;  /* rows per chain: kept warm-up and post-warm-up */
  int64_t num_warmup;      /* header values: the run's, or the kept counts */
  int64_t num_samples;     /*   times thin when they differ (exact == 0) */
  int     exact;           /* the header states the run's own options */
  int     partial;         /* some chain lacks draws: cut to the others */
} fly_export_plan;

/* Plan the CmdStan export of tr's run (warm: include warm-up rows).
 * FLY_RANGE "run N has no post-warm-up draws in every chain yet",
 * FLY_SQL. */
fly_rc fly_export_cmdstan_plan(fly_trace_reader *tr, int warm,
                               fly_export_plan *plan, fly_err *err);

/* Write chain c < n_chains as one CmdStan CSV file to f, as planned;
 * file_name is what the header's "output file" line says.  f is the
 * caller's (not closed; write errors are the caller's to check with
 * ferror).  FLY_CORRUPT, FLY_SQL from the trace. */
fly_rc fly_export_cmdstan_chain(fly_trace_reader *tr, const fly_export_plan *plan,
                                size_t c, const char *file_name, FILE *f,
                                fly_err *err);

/* Write every stored draw of every chain (warm-up ones only when warm) as
 * long CSV (run_id,chain,iter,name,value,warmup) to long_f and wide CSV
 * (chain,iter,warmup, one column per parameter) to wide_f; *n_rows gets
 * the number of iterations written.  FLY_RANGE when there is none,
 * FLY_CORRUPT, FLY_SQL. */
fly_rc fly_export_csv(fly_trace_reader *tr, int warm, FILE *long_f,
                      FILE *wide_f, size_t *n_rows, fly_err *err);

/* The files fly_export_dir wrote. */
typedef struct fly_export_files {
  size_t  n;              /* files written: 0 after a failure */
  char  **path;           /* [n] "<dir>/<name>", owned */
  int64_t n_draws;        /* cmdstan: post-warm-up rows per chain; csv: iterations */
  int     partial;        /* cmdstan: chains cut to a common length (set
                             before writing, also when it then fails) */
} fly_export_files;

/* Write tr's run into the existing directory dir: cmdstan as
 * <run>_chain<k>.csv for k = 1..n_chains, csv as <run>_draws.csv (long)
 * and <run>_wide.csv.  Each file is written as "<name>.tmp" and all are
 * renamed into place when all are complete; on failure none is left.
 * *out gets the paths (none after a failure) and, as soon as they are
 * known, n_draws and partial; release it with fly_export_files_clear,
 * also after a failure.  FLY_IO naming the file, FLY_RANGE (no draws,
 * path longer than 4095 bytes), FLY_NOMEM, and the writers' codes. */
fly_rc fly_export_dir(fly_trace_reader *tr, fly_export_format fmt, int warm,
                      const char *dir, fly_export_files *out, fly_err *err);
void   fly_export_files_clear(fly_export_files *out);   /* frees the paths and
                                                           zeroes *out; NULL: no-op */

#endif
