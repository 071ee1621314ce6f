/*
 * info.c -- `flydb info`: what a database holds.  Per data set: rows,
 * columns, pages, raw vs stored bytes and the compression ratio, then a
 * table of the columns (type, missing values, statistics of a numeric
 * column, levels and counts of a categorical one); for a data set derived
 * by a design, its parent and the rows left out; then tuned bound sets and
 * runs.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "store/dataset.h"
#include "store/db.h"
#include "store/run.h"
#include "tune/bounds_check.h"
#include "util/mem.h"

static const char *human(double b, char *buf, size_t cap)
{
  const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  int i = 0;
  while( b >= 1024 && i < 4 ){ b /= 1024; i++; }
  snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", b, u[i]);
  return buf;
}

#define LEVELS_SHOWN 20   /* levels listed per categorical column */

/* A categorical column's levels with their counts, in code order. */
static void show_levels(const fly_dataset_column *c)
{
  printf("          levels of '%s' (%zu):", c->name, c->n_levels);
  for(size_t k = 0; k < c->n_levels && k < LEVELS_SHOWN; k++)
    printf("%s '%s' %lld", k ? "," : "", c->levels[k], (long long)c->level_counts[k]);
  if( c->n_levels > LEVELS_SHOWN )
    printf(", ... and %zu more", c->n_levels - LEVELS_SHOWN);
  printf("\n");
}

/* The column table: numeric columns with their statistics, categorical
 * ones with their levels; the missing values of each. */
static void show_columns(const fly_dataset *ds)
{
  printf("    %4s  %-20s %-9s %-11s %9s %12s %12s %12s %12s\n", "col", "name",
         "role", "type", "missing", "mean", "sd", "min", "max");
  for(size_t j = 0; j < ds->n_cols; j++){
    const fly_dataset_column *c = &ds->cols[j];
    if( c->categorical ){
      printf("    %4d  %-20.20s %-9s %-11s %9lld\n", (int)c->idx, c->name,
             c->role, "categorical", (long long)c->n_missing);
      show_levels(c);
    }else
      printf("    %4d  %-20.20s %-9s %-11s %9lld %12.5g %12.5g %12.5g %12.5g\n",
             (int)c->idx, c->name, c->role, "numeric", (long long)c->n_missing,
             c->mean, c->sd, c->min, c->max);
  }
}

static void show_omit(void *u, int64_t idx, int64_t n)
{
  const fly_dataset *parent = u;
  const char *nm = "?";
  for(size_t j = 0; parent && j < parent->n_cols; j++)
    if( parent->cols[j].idx == idx ) nm = parent->cols[j].name;
  printf("  left out   %lld rows missing '%s'\n", (long long)n, nm);
}

/* What a derived data set was built from, and the rows it left out. */
static fly_rc show_derived(fly_db *db, const fly_dataset *ds, fly_err *err)
{
  fly_dataset *parent = NULL;
  fly_rc rc = fly_dataset_load(db, ds->parent_id, &parent, err);
  if( rc ) return rc;
  printf("  derived    from data set '%s' by the design %s: %lld rows left out "
         "for a missing value\n", parent->name, ds->design_key,
         (long long)ds->n_omitted);
  rc = fly_dataset_omitted(db, ds->id, show_omit, parent, err);
  fly_dataset_free(parent);
  return rc;
}

static fly_rc show_dataset(fly_db *db, const fly_dataset *ds, int columns,
                           fly_err *err)
{
  char a[32], b[32];
  printf("\ndata set '%s' (id %lld), from %s, %s\n", ds->name,
         (long long)ds->id, ds->source, ds->created_at);
  printf("  rows       %lld\n", (long long)ds->n_rows);
  printf("  columns    %lld stored: %lld features (%s), target '%s'\n",
         (long long)ds->width, (long long)ds->n_features,
         ds->has_intercept ? "intercept included" : "no intercept",
         ds->target_name);
  printf("  pages      %lld of %lld rows, %s values\n", (long long)ds->n_pages,
         (long long)ds->page_rows, ds->prec == 4 ? "f32" : "f64");
  printf("  bytes      %s raw, %s stored, compression ratio %.2f\n",
         human((double)ds->raw_bytes, a, sizeof a),
         human((double)ds->stored_bytes, b, sizeof b),
         ds->stored_bytes > 0 ? (double)ds->raw_bytes / (double)ds->stored_bytes
                              : 0.0);
  if( ds->parent_id ){
    fly_rc rc = show_derived(db, ds, err);
    if( rc ) return rc;
  }
  if( columns ) show_columns(ds);
  return FLY_OK;
}

static void show_bounds(void *ctx, const fly_bounds_brief *b)
{
  int *n = ctx;
  if( (*n)++ == 0 ) printf("\ntuned bounds\n");
  printf("  %lld: data set '%s', %s (%s), bounds %s, MAP in %d iterations, %.2f s\n",
         (long long)b->id, b->dataset, b->model, b->model_opts, b->tuning,
         b->map_iters, b->tune_seconds);
}

static void show_run(void *ctx, const fly_run_brief *r)
{
  int *n = ctx;
  if( (*n)++ == 0 ) printf("\nruns\n");
  printf("  %lld: data set '%s', %s, %s, z %s, %d chains x (%d warm-up + %d), %s",
         (long long)r->id, r->dataset, r->model, r->sampler, r->z_mode,
         r->n_chains, r->n_warmup, r->n_iters, r->status);
  if( r->has_wall ) printf(", %.1f s", r->wall_seconds);
  printf("\n");
}

static fly_rc show(fly_db *db, int columns, fly_err *err)
{
  int64_t *ids = NULL;
  size_t n_ds = 0;
  int n = 0;
  fly_rc rc = fly_dataset_ids(db, &ids, &n_ds, err);
  if( rc ) return rc;
  printf("database %s\n", fly_db_path(db));
  for(size_t i = 0; i < n_ds && rc == FLY_OK; i++){
    fly_dataset *ds = NULL;
    if( (rc = fly_dataset_load(db, ids[i], &ds, err)) == FLY_OK )
      rc = show_dataset(db, ds, columns, err);
    fly_dataset_free(ds);
  }
  fly_free(ids);
  if( rc ) return rc;
  if( n_ds == 0 ) printf("\n(no data sets: run `flydb ingest FILE`)\n");
  if( (rc = fly_bounds_list(db, show_bounds, &n, err)) ) return rc;
  n = 0;
  return fly_runs_list(db, show_run, &n, err);
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
