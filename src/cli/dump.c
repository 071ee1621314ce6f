/*
 * dump.c -- `flydb dump`: a data set back out as CSV, exactly.
 *
 * Streams the pages in order (one page in memory) and prints every stored
 * value with %.17g, which reads back to the same double; with --no-intercept
 * style data sets the intercept column is printed only with --intercept.
 * The header row carries the column names, the target last, as ingested.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "store/dataset.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/mem.h"

static fly_rc dump(fly_db *db, const char *name, int with_icpt, fly_err *err)
{
  fly_dataset *d = NULL;
  fly_pages *p = NULL;
  double *rows = NULL;
  int64_t ds;
  int has_icpt = 0;
  fly_rc rc = fly_dataset_find(db, name, &ds, err);
  if( rc ) return rc;
  if( (rc = fly_dataset_load(db, ds, &d, err)) ) return rc;
  int first = 1;
  has_icpt = d->n_cols ? d->has_intercept : 0;
  for(size_t col = 0; col < d->n_cols; col++){
    if( col == 0 && has_icpt && !with_icpt ) continue;
    const char *nm = d->cols[col].name ? d->cols[col].name : "";
    if( !first ) putchar(',');
    first = 0;
    if( strpbrk(nm, ",\"\r\n") ){
      putchar('"');
      for(const char *t = nm; *t; t++){ if( *t == '"' ) putchar('"'); putchar(*t); }
      putchar('"');
    }else fputs(nm, stdout);
  }
  putchar('\n');
  fly_dataset_free(d);
  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &p, err)) ) return rc;
  const fly_pages_info *in = fly_pages_info_of(p);
  rows = fly_alloc_array((size_t)in->page_rows, in->width * sizeof *rows);
  if( !rows ){ rc = fly_fail(err, FLY_NOMEM, "dump"); goto done; }
  size_t j0 = has_icpt && !with_icpt ? 1 : 0;
  int began = fly_db_read_begin(db);
  for(int64_t pg = 0; pg < in->n_pages && rc == FLY_OK; pg++){
    size_t n;
    if( (rc = fly_pages_read_page(p, pg, rows, &n, err)) ) break;
    for(size_t i = 0; i < n; i++){
      const double *r = rows + i * in->width;
      for(size_t j = j0; j < in->width; j++) printf(j > j0 ? ",%.17g" : "%.17g", r[j]);
      putchar('\n');
    }
  }
  fly_db_read_end(db, began);
  if( rc == FLY_OK && (fflush(stdout) != 0 || ferror(stdout)) )
    rc = fly_fail(err, FLY_IO, "writing the CSV to standard output failed");
done:
  fly_free(rows);
  fly_pages_close(p);
  return rc;
}

int fly_cmd_dump(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "data", FLY_OPT_VALUE, "data set name (default: the only one)", 0, 0 },
    { "intercept", FLY_OPT_FLAG, "also print the intercept column flydb added", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  const char *synopsis = "[--db PATH] [--data NAME] [--intercept]";
  if( fly_args_parse(&a, argc, argv, 0, &err) ) return fly_usage_error(&a, "dump", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "dump", synopsis); return 0; }
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK ) rc = dump(db, fly_args_str(&a, "data", NULL),
                               fly_args_set(&a, "intercept"), &err);
  fly_db_close(db);
  return fly_report(rc, &err);
}
