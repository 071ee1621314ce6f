/*
 * info.c -- `flydb info`: what a database holds.  Per data set: rows,
 * columns, pages, raw vs stored bytes and the compression ratio, then a
 * statistics table per column; then tuned bound sets and runs.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "store/db.h"

static const char *human(double b, char *buf, size_t cap)
{
  const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  int i = 0;
  while( b >= 1024 && i < 4 ){ b /= 1024; i++; }
  snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", b, u[i]);
  return buf;
}

static fly_rc show_columns(fly_db *db, int64_t ds, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT idx, name, role, n, mean, sd, min, max "
      "FROM dataset_column WHERE dataset_id=?1 ORDER BY idx", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, ds);
  printf("    %4s  %-20s %-9s %12s %12s %12s %12s\n", "col", "name", "role",
         "mean", "sd", "min", "max");
  while( sqlite3_step(st) == SQLITE_ROW ){
    printf("    %4d  %-20.20s %-9s %12.5g %12.5g %12.5g %12.5g\n",
           sqlite3_column_int(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2), sqlite3_column_double(st, 4),
           sqlite3_column_double(st, 5), sqlite3_column_double(st, 6),
           sqlite3_column_double(st, 7));
  }
  sqlite3_finalize(st);
  return FLY_OK;
}

static fly_rc show(fly_db *db, int columns, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  char a[32], b[32];
  int n = 0;
  fly_rc rc = fly_db_prepare(db, "SELECT id, name, source, n_rows, width, "
      "n_features, has_intercept, target_name, page_rows, n_pages, prec, "
      "raw_bytes, stored_bytes, created_at FROM dataset ORDER BY id", &st, err);
  if( rc ) return rc;
  printf("database %s\n", fly_db_path(db));
  while( sqlite3_step(st) == SQLITE_ROW ){
    int64_t raw = sqlite3_column_int64(st, 11), stored = sqlite3_column_int64(st, 12);
    n++;
    printf("\ndata set '%s' (id %lld), from %s, %s\n",
           (const char *)sqlite3_column_text(st, 1), sqlite3_column_int64(st, 0),
           (const char *)sqlite3_column_text(st, 2),
           (const char *)sqlite3_column_text(st, 13));
    printf("  rows       %lld\n", sqlite3_column_int64(st, 3));
    printf("  columns    %lld stored: %lld features (%s), target '%s'\n",
           sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
           sqlite3_column_int(st, 6) ? "intercept included" : "no intercept",
           (const char *)sqlite3_column_text(st, 7));
    printf("  pages      %lld of %lld rows, %s values\n", sqlite3_column_int64(st, 9),
           sqlite3_column_int64(st, 8), sqlite3_column_int(st, 10) == 4 ? "f32" : "f64");
    printf("  bytes      %s raw, %s stored, compression ratio %.2f\n",
           human((double)raw, a, sizeof a), human((double)stored, b, sizeof b),
           stored > 0 ? (double)raw / (double)stored : 0.0);
    if( columns && (rc = show_columns(db, sqlite3_column_int64(st, 0), err)) ) break;
  }
  sqlite3_finalize(st);
  if( rc ) return rc;
  if( n == 0 ) printf("\n(no data sets: run `flydb ingest FILE`)\n");

  rc = fly_db_prepare(db, "SELECT b.id, d.name, b.model, b.model_opts, b.tuning, "
      "b.map_iters, b.tune_seconds FROM bound_set b JOIN dataset d ON d.id = "
      "b.dataset_id WHERE b.status = 'ready' ORDER BY b.id", &st, err);
  if( rc ) return rc;
  n = 0;
  while( sqlite3_step(st) == SQLITE_ROW ){
    if( n++ == 0 ) printf("\ntuned bounds\n");
    printf("  %lld: data set '%s', %s (%s), bounds %s, MAP in %d iterations, %.2f s\n",
           sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2),
           (const char *)sqlite3_column_text(st, 3),
           (const char *)sqlite3_column_text(st, 4), sqlite3_column_int(st, 5),
           sqlite3_column_double(st, 6));
  }
  sqlite3_finalize(st);

  rc = fly_db_prepare(db, "SELECT run_id, dataset, model, sampler, z_mode, n_chains, "
      "n_warmup, n_iters, status, wall_seconds FROM runs ORDER BY run_id", &st, err);
  if( rc ) return rc;
  n = 0;
  while( sqlite3_step(st) == SQLITE_ROW ){
    if( n++ == 0 ) printf("\nruns\n");
    printf("  %lld: data set '%s', %s, %s, z %s, %d chains x (%d warm-up + %d), %s",
           sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2),
           (const char *)sqlite3_column_text(st, 3),
           (const char *)sqlite3_column_text(st, 4), sqlite3_column_int(st, 5),
           sqlite3_column_int(st, 6), sqlite3_column_int(st, 7),
           (const char *)sqlite3_column_text(st, 8));
    if( sqlite3_column_type(st, 9) != SQLITE_NULL )
      printf(", %.1f s", sqlite3_column_double(st, 9));
    printf("\n");
  }
  sqlite3_finalize(st);
  return FLY_OK;
}

int fly_cmd_info(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "no-columns", FLY_OPT_FLAG, "omit the per-column statistics", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  const char *synopsis = "[--db PATH]";

  if( fly_args_parse(&a, argc, argv, 0, &err) )
    return fly_usage_error(&a, "info", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "info", synopsis); return 0; }
  /* Read-write although info only reads: a read-only connection to a WAL
   * database leaves -wal and -shm files behind when it closes. */
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK ) rc = show(db, !fly_args_set(&a, "no-columns"), &err);
  fly_db_close(db);
  return fly_report(rc, &err);
}
