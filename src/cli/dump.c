/*
 * dump.c -- `flydb dump`: a data set back out as CSV, exactly.
 *
 * Streams the pages in order (one page in memory) and prints every stored
 * number in the fewest of 15, 16 or 17 significant digits that read back
 * to the same double (%.17g always would; %.15g is what the CSV usually
 * held), a categorical column's codes as their labels (quoted where a
 * reader would otherwise trim or split them), and a missing value as NA;
 * the intercept column is printed only with --intercept.  The header row carries the column names,
 * the target last, as ingested.  Ingesting the output again stores the
 * same data set (codes in first-seen order come out the same), except that
 * a categorical column whose labels all read as numbers needs
 * --categorical again.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store/dataset.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/mem.h"

/* s as a CSV field: quoted when it holds a separator, a quote, a line
 * end or blanks at either end (which an unquoted field loses). */
static void put_field(const char *s)
{
  size_t n = strlen(s);
  if( strpbrk(s, ",\"\r\n") || (n && (s[0] == ' ' || s[0] == '\t'
      || s[n - 1] == ' ' || s[n - 1] == '\t')) ){
    putchar('"');
    for(const char *t = s; *t; t++){ if( *t == '"' ) putchar('"'); putchar(*t); }
    putchar('"');
  }else fputs(s, stdout);
}

/* v in the fewest significant digits (15, 16 or 17) that read back to the
 * same bits, as %g writes them. */
static void put_num(double v)
{
  char b[40];
  for(int p = 15; p <= 17; p++){
    double w;
    snprintf(b, sizeof b, "%.*g", p, v);
    w = strtod(b, NULL);
    if( p == 17 || memcmp(&w, &v, sizeof v) == 0 ) break;
  }
  fputs(b, stdout);
}

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
    if( !first ) putchar(',');
    first = 0;
    put_field(d->cols[col].name ? d->cols[col].name : "");
  }
  putchar('\n');
  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &p, err)) ) goto done;
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
      for(size_t j = j0; j < in->width; j++){
        const fly_dataset_column *c = j < d->n_cols ? &d->cols[j] : NULL;
        if( j > j0 ) putchar(',');
        if( isnan(r[j]) ) fputs("NA", stdout);
        else if( c && c->categorical ){
          if( r[j] >= 0 && r[j] < (double)c->n_levels && r[j] == floor(r[j]) )
            put_field(c->levels[(size_t)r[j]]);
          else{
            rc = fly_fail(err, FLY_CORRUPT, "data set '%s', page %lld: %.17g in "
                          "column '%s' is no level code (%zu levels): run flydb "
                          "check", d->name, (long long)pg, r[j], c->name, c->n_levels);
            break;
          }
        }else put_num(r[j]);
      }
      if( rc ) break;
      putchar('\n');
    }
  }
  fly_db_read_end(db, began);
  if( rc == FLY_OK && (fflush(stdout) != 0 || ferror(stdout)) )
    rc = fly_fail(err, FLY_IO, "writing the CSV to standard output failed");
done:
  fly_free(rows);
  fly_pages_close(p);
  fly_dataset_free(d);
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
