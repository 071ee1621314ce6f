/*
 * ingest.c -- `flydb ingest FILE`: CSV into a data set of LZ4 pages, through
 * fly_ingest (io/ingest.h), which keeps the database as it was on any
 * failure.
 *
 * SIGINT/SIGTERM/SIGHUP only set a flag: the ingest notices it (a blocked
 * read returns EINTR, as the handler is installed without SA_RESTART),
 * rolls back or removes its temporary file, and then the signal is
 * re-raised so the exit status says what happened.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "io/ingest.h"
#include "io/source.h"
#include "util/mem.h"
#include "progress.h"
#include "store/codec.h"

static volatile sig_atomic_t g_sig;

static void on_signal(int s) { g_sig = s; }

static void catch_signals(void)
{
  int sigs[] = { SIGINT, SIGTERM, SIGHUP };
  for(size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++){
    struct sigaction old, sa;
    if( sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN ) continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(sigs[i], &sa, NULL);
  }
}

static void reraise(void)
{
  if( !g_sig ) return;
  signal(g_sig, SIG_DFL);
  raise(g_sig);
}

static void progress(void *ctx, const char *name, int64_t n, uint64_t bytes)
{
  fly_progress *pg = ctx;
  if( !fly_progress_due(pg) ) return;
  double t = fly_now() - pg->t0, mb = (double)bytes / 1e6;
  fly_progress_draw(pg, "ingest %s: %lld rows, %.0f MB, %.0f MB/s", name,
                    (long long)n, mb, t > 0 ? mb / t : 0.0);
}

int fly_cmd_ingest(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "target", FLY_OPT_VALUE, "target column name (default: the last column)", 0, 0 },
    { "no-intercept", FLY_OPT_FLAG, "do not add an intercept column", 0, 0 },
    { "page-rows", FLY_OPT_VALUE, "rows per page (default: what fills one SQLite page, "
                                  "16 KiB in a new file: e.g. 92 rows of 22 f64 values)", 0, 0 },
    { "precision", FLY_OPT_VALUE, "f64 (default) or f32", 0, 0 },
    { "name", FLY_OPT_VALUE, "data set name (default: file name without extension)", 0, 0 },
    { "categorical", FLY_OPT_VALUE, "COL,COL...: categorical columns, every cell a label "
                                    "(default: a column is categorical when a cell is "
                                    "not a number)", 0, 0 },
    { "numeric", FLY_OPT_VALUE, "COL,COL...: numeric columns: a cell that is not a "
                                "number is an error", 0, 0 },
    { "na-strings", FLY_OPT_VALUE, "S,S...: cell texts meaning a missing value, besides "
                                   "the empty cell and NA (e.g. '.,NULL')", 0, 0 },
    { "threads", FLY_OPT_VALUE, "threads that parse and compress, beside a reader and "
                                "the typing thread (default: the processors, at most 8; "
                                "1: all on one thread); the data set is the same whatever "
                                "the number", 0, 0 },
    { "from", FLY_OPT_VALUE, "SQLite database to read --query from (opened read-only), "
                             "instead of FILE", 0, 0 },
    { "query", FLY_OPT_VALUE, "SQL query on the --from database: its result is the data", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_ingest_opts o;
  fly_ingest_result res;
  fly_progress pg;
  const char *synopsis = "FILE|- [options]   (FILE: CSV, .gz, .zst, .xz, .dta, .sav, "
                         ".sas7bdat; or --from DB --query SQL)";
  fly_source *src = NULL;
  fly_source_opts so;

  fly_ingest_opts_default(&o);
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "ingest", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "ingest", synopsis); return 0; }
  fly_source_opts_default(&so);
  so.query = fly_args_str(&a, "query", NULL);
  const char *from = fly_args_str(&a, "from", NULL);
  if( a.n_pos != !from || !from != !so.query ){
    fly_fail(&err, FLY_MISUSE, from || so.query ? "--from and --query go together, without FILE"
                                                : "expected one CSV file (or - for standard input)");
    return fly_usage_error(&a, "ingest", synopsis, &err);
  }
  const char *file = from ? from : a.pos[0];
  const char *db_path = fly_args_str(&a, "db", "flydb.db");
  o.target = fly_args_str(&a, "target", NULL);
  o.name = fly_args_str(&a, "name", NULL);
  o.categorical = fly_args_str(&a, "categorical", NULL);
  o.numeric = fly_args_str(&a, "numeric", NULL);
  o.na_strings = fly_args_str(&a, "na-strings", NULL);
  o.intercept = !fly_args_set(&a, "no-intercept");
  if( fly_args_int(&a, "page-rows", 0, 1, 1 << 24, &o.page_rows, &err) )
    return fly_usage_error(&a, "ingest", synopsis, &err);
  int64_t threads = 0;
  if( fly_args_int(&a, "threads", 0, 1, 1024, &threads, &err) )
    return fly_usage_error(&a, "ingest", synopsis, &err);
  o.threads = (int)threads;
  const char *prec = fly_args_str(&a, "precision", "f64");
  if( strcmp(prec, "f64") == 0 ) o.prec = FLY_PREC_F64;
  else if( strcmp(prec, "f32") == 0 ) o.prec = FLY_PREC_F32;
  else{
    fly_fail(&err, FLY_MISUSE, "--precision: '%s' is not f64 or f32", prec);
    return fly_usage_error(&a, "ingest", synopsis, &err);
  }
  if( o.name && !o.name[0] ){
    fly_fail(&err, FLY_MISUSE, "--name must not be empty");
    return fly_usage_error(&a, "ingest", synopsis, &err);
  }
  o.interrupt = &g_sig;
  o.progress = progress;
  o.progress_ctx = &pg;

  double t0 = fly_now();
  catch_signals();
  fly_progress_start(&pg);
  fly_rc rc = fly_source_open(file, &so, &src, &err);
  char *cats = NULL;
  if( rc == FLY_OK ){
    /* variables with value labels (Stata, SPSS, SAS) are categorical,
     * besides those --categorical names */
    const char *const *cn;
    size_t ncn, len = o.categorical ? strlen(o.categorical) + 1 : 1;
    fly_source_categorical(src, &cn, &ncn);
    for(size_t i = 0; i < ncn; i++) len += strlen(cn[i]) + 1;
    if( ncn && (cats = fly_alloc_array(len, 1)) ){
      strcpy(cats, o.categorical ? o.categorical : "");
      for(size_t i = 0; i < ncn; i++){
        if( cats[0] ) strcat(cats, ",");
        strcat(cats, cn[i]);
      }
      o.categorical = cats;
    }else if( ncn ) rc = fly_fail(&err, FLY_NOMEM, "categorical column names");
  }
  if( rc == FLY_OK ){
    rc = fly_ingest(db_path, fly_source_file(src), strcmp(file, "-") == 0 ? "<stdin>" : file,
                    &o, &res, &err);
    /* a read error of the source: say what went wrong where */
    if( rc != FLY_OK && !g_sig && fly_source_error(src) )
      fly_fail(&err, rc, "%s", fly_source_error(src));
  }
  fly_source_close(src);
  fly_free(cats);
  fly_progress_end(&pg);
  if( rc == FLY_OK ){
    double t = fly_now() - t0, mb = (double)res.bytes_read / 1e6;
    fprintf(stderr, "ingested %lld rows of %s into data set '%s' of %s "
            "(%.1f MB in %.2f s, %.0f MB/s)\n", (long long)res.n_rows,
            strcmp(file, "-") == 0 ? "<stdin>" : file, res.name, db_path, mb, t,
            t > 0 ? mb / t : 0.0);
  }
  int code = fly_report(rc, &err);
  reraise();
  return code;
}
