/*
 * check.c -- `flydb check`: verify a database and report every problem, one
 * line each, naming the table and the data set, bound set, run, page, row or
 * iteration it concerns.  Exit status 0 when clean, 1 when anything is wrong
 * (or the file is refused), 2 for a usage error.
 *
 * Each module checks its own tables, in this order: SQLite itself
 * (fly_db_check), the data sets (fly_dataset_check, whose pages go through
 * fly_pages_check), the bound sets (fly_bounds_check) and the runs
 * (fly_run_check, which has fly_trace_check check each run's trace), then
 * the runs' loo results (fly_loo_check), predictive checks
 * (fly_ppc_check) and predictions (fly_predict_check); see their headers
 * for what each verifies.  On a shard manifest the shards are verified
 * against it (fly_shard_verify; every row's digest unless --quick); each
 * shard is checked by `flydb check` on its own file.  What the store cannot judge comes
 * from here: a checkpoint blob is parsed as the chain would (flymc/ckpt.h),
 * model and sampler names are looked up in their registries.  This file
 * prints: each problem as "<scope>: <what>", at most SHOW_MAX lines per
 * data set, bound set or run, the rest counted.
 *
 * The whole check runs in one read transaction with PRAGMA query_only on
 * (fly_db_check_begin): a consistent snapshot, and nothing is ever written.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "flymc/chain.h"
#include "flymc/ckpt.h"
#include "loo/loo.h"
#include "models/model.h"
#include "ppc/ppc.h"
#include "shard/shard.h"
#include "shard/shard_map.h"
#include "predict/predict.h"
#include "store/check.h"
#include "store/dataset.h"
#include "store/db.h"
#include "store/run.h"
#include "tune/bounds_check.h"

#define SHOW_MAX     20            /* problem lines printed per object */

/* Printing state: the scope of the last problem and its count. */
typedef struct printer {
  char    scope[256];
  int64_t n_scope;
} printer;

/* The "... and N more" line of the scope that ends. */
static void scope_end(printer *pr)
{
  if( pr->n_scope > SHOW_MAX )
    printf("%s: ... and %lld more problems\n", pr->scope,
           (long long)(pr->n_scope - SHOW_MAX));
  pr->scope[0] = 0;
  pr->n_scope = 0;
}

static void report(void *ctx, const char *scope, const char *what)
{
  printer *pr = ctx;
  if( strcmp(scope, pr->scope) != 0 ){
    scope_end(pr);
    snprintf(pr->scope, sizeof pr->scope, "%s", scope);
  }
  if( ++pr->n_scope > SHOW_MAX ) return;
  if( scope[0] ) printf("%s: ", scope);
  printf("%s\n", what);
}

/* ---- what the store leaves to the layers above ------------------------- */

/* A checkpoint blob: the checks of fly_chain_restore (the shared parser of
 * flymc/ckpt.h), plus the run's mode. */
static void check_ckpt(void *u, fly_checker *ck, const fly_run_checked *r, int64_t c,
                       const void *p, size_t len)
{
  fly_ckpt_view v;
  fly_err e = {0};
  (void)u;
  if( fly_ckpt_parse(p, len, (size_t)r->n_params, r->n_rows >= 0 ? r->n_rows : 0, &v, &e) ){
    fly_check_problem(ck, "chain %lld: %s", (long long)c, e.msg);
    return;
  }
  if( !strcmp(r->z_mode, "regular") && v.head.B != 0 )
    fly_check_problem(ck, "chain %lld: checkpoint holds %lld bright rows; a regular run has none",
            (long long)c, (long long)v.head.B);
}

static int model_known(void *u, const char *name)
{
  (void)u;
  return fly_model_find(name) != NULL;
}

static int sampler_known(void *u, const char *name)
{
  (void)u;
  return fly_kernel_find(name) >= 0;
}

/* ---- the command ------------------------------------------------------ */

static fly_rc run_check(const char *path, int quick, int64_t *n_problems,
                        fly_err *err)
{
  fly_checker ck;
  printer pr;
  fly_db *db = NULL;
  fly_dataset_checked *ds = NULL;
  size_t n_ds = 0;
  int64_t n_sets = 0, n_runs = 0, n_loo = 0, n_ppc = 0, n_pred = 0, n_sharded = 0;
  int manifest = 0;
  fly_rc rc;

  memset(&ck, 0, sizeof ck);
  memset(&pr, 0, sizeof pr);
  ck.quick = quick;
  ck.report = report;
  ck.ctx = &pr;
  /* A read-only open checks the identity without creating a schema in an
   * empty file or migrating an old one.  Then, if the file is writable, a
   * read-write connection with query_only on: it never writes either, but
   * unlike a read-only one it removes the -wal and -shm files of a WAL
   * database when it closes. */
  if( (rc = fly_db_open(path, FLY_DB_READONLY, &db, err)) ) return rc;
  {
    fly_db *rw = NULL;
    if( fly_db_open(path, 0, &rw, NULL) == FLY_OK ){
      fly_db_close(db);
      db = rw;
    }
  }
  if( (rc = fly_db_check_begin(db, err)) ) goto done;

  fly_db_check(db, &ck);
  if( rc == FLY_OK ) rc = fly_dataset_check(db, &ck, &ds, &n_ds, err);
  if( rc == FLY_OK ) rc = fly_bounds_check(db, ds, n_ds, &ck, &n_sets, err);
  if( rc == FLY_OK ){
    fly_run_check_hooks h = { NULL, check_ckpt, model_known, sampler_known };
    rc = fly_run_check(db, ds, n_ds, &h, &ck, &n_runs, err);
  }
  if( rc == FLY_OK ){
    fly_loo_check(db, &ck, &n_loo);
    fly_ppc_check(db, &ck, &n_ppc);
    fly_predict_check(db, &ck, &n_pred);
  }
  fly_db_check_end(db);
  if( rc == FLY_OK && (manifest = fly_shard_is_manifest(db)) ){
    fly_err e = {0};
    fly_check_scope(&ck, "shards");
    if( fly_shard_verify(path, !quick, NULL, NULL, &n_sharded, &e) )
      fly_check_problem(&ck, "%s", e.msg);
    fly_check_scope(&ck, "%s", "");
  }
  scope_end(&pr);
  if( rc ) goto done;

  if( ck.n_problems == 0 ){
    char extra[320] = "";
    if( n_loo || n_ppc || n_pred )
      snprintf(extra, sizeof extra, ", %lld loo result%s, %lld predictive check%s, "
               "%lld prediction%s", (long long)n_loo, n_loo == 1 ? "" : "s",
               (long long)n_ppc, n_ppc == 1 ? "" : "s", (long long)n_pred,
               n_pred == 1 ? "" : "s");
    if( manifest )
      snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
               "; a shard manifest: its shards hold the %lld rows it lists%s",
               (long long)n_sharded, quick ? "" : ", digests compared");
    printf("%s: no problems found (%zu data set%s, %lld bound set%s, %lld "
           "run%s%s%s)\n", path, n_ds, n_ds == 1 ? "" : "s", (long long)n_sets,
           n_sets == 1 ? "" : "s", (long long)n_runs, n_runs == 1 ? "" : "s", extra,
           quick ? "; quick: statistics and moments not recomputed" : "");
  }else
    printf("%lld problem%s found\n", (long long)ck.n_problems,
           ck.n_problems == 1 ? "" : "s");
  if( fflush(stdout) != 0 || ferror(stdout) )
    rc = fly_fail(err, FLY_IO, "writing the report to standard output failed");
  *n_problems = ck.n_problems;
done:
  fly_dataset_checked_free(ds, n_ds);
  fly_db_close(db);
  return rc;
}

int fly_cmd_check(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "quick", FLY_OPT_FLAG, "SQLite quick_check, and do not recompute column "
                             "statistics or moments", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  int64_t n = 0;
  const char *synopsis = "[--db PATH] [--quick]";

  if( fly_args_parse(&a, argc, argv, 0, &err) )
    return fly_usage_error(&a, "check", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "check", synopsis); return 0; }
  fly_rc rc = run_check(fly_args_str(&a, "db", "flydb.db"),
                        fly_args_set(&a, "quick"), &n, &err);
  if( rc ) return fly_report(rc, &err);
  return n ? 1 : 0;
}
