/*
 * check.c -- the problem reporting the module checkers share (check.h):
 * a scope, a counter, a printf-style problem line handed to the caller's
 * callback, and the tolerances for recomputed sums.
 */
#include "store/check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define REL_TOL   1e-9             /* relative to the values compared */
#define SCALE_TOL 1e-11            /* relative to the magnitude summed */

void fly_check_scope(fly_checker *ck, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ck->scope, sizeof ck->scope, fmt, ap);
  va_end(ap);
}

void fly_check_problem(fly_checker *ck, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck->n_problems++;
  if( ck->report ) ck->report(ck->ctx, ck->scope, msg);
}

int fly_check_close(double a, double b, double scale)
{
  if( a == b ) return 1;
  if( isnan(a) || isnan(b) ) return 0;
  return fabs(a - b) <= REL_TOL * fmax(fabs(a), fabs(b)) + SCALE_TOL * scale;
}

int fly_check_same(double a, double b)
{
  return a == b || (isnan(a) && isnan(b));
}

const char *fly_check_span(char *buf, size_t n, int64_t a, int64_t b)
{
  if( a == b ) snprintf(buf, n, "%lld", (long long)a);
  else snprintf(buf, n, "%lld..%lld", (long long)a, (long long)b);
  return buf;
}

sqlite3_stmt *fly_check_prepare(fly_db *db, fly_checker *ck, const char *sql)
{
  sqlite3_stmt *st = NULL;
  fly_err e = {0};
  if( fly_db_prepare(db, sql, &st, &e) ) fly_check_problem(ck, "%s", e.msg);
  return st;
}

void fly_check_step_failed(fly_db *db, fly_checker *ck, const char *what)
{
  fly_check_problem(ck, "%s: %s", what, sqlite3_errmsg(fly_db_sqlite(db)));
}

/* ---- SQLite's own check ---------------------------------------------- */

void fly_db_check(fly_db *db, fly_checker *ck)
{
  const char *pragma = ck->quick ? "PRAGMA quick_check" : "PRAGMA integrity_check";
  sqlite3_stmt *st;
  int s;

  fly_check_scope(ck, "SQLite");
  if( (st = fly_check_prepare(db, ck, pragma)) ){
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      const char *msg = (const char *)sqlite3_column_text(st, 0);
      if( !msg ){ fly_check_problem(ck, "%s: NULL", pragma + 7); continue; }
      if( strcmp(msg, "ok") == 0 ) continue;
      /* One row may carry several messages, a line each. */
      for(const char *l = msg, *e; *l; l = *e ? e + 1 : e){
        e = strchr(l, '\n');
        if( !e ) e = l + strlen(l);
        if( e > l && strncmp(l, "*** in database ", 16) != 0 )
          fly_check_problem(ck, "%s: %.*s", pragma + 7, (int)(e - l), l);
      }
    }
    if( s != SQLITE_DONE )
      fly_check_problem(ck, "%s: %s", pragma + 7, sqlite3_errmsg(fly_db_sqlite(db)));
    sqlite3_finalize(st);
  }
  if( (st = fly_check_prepare(db, ck, "PRAGMA foreign_key_check")) ){
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      const char *tab = (const char *)sqlite3_column_text(st, 0);
      const char *par = (const char *)sqlite3_column_text(st, 2);
      if( sqlite3_column_type(st, 1) == SQLITE_NULL )
        fly_check_problem(ck, "a row of table %s refers to a missing %s row",
                          tab ? tab : "?", par ? par : "?");
      else
        fly_check_problem(ck, "table %s, row id %lld: refers to a missing %s row",
                          tab ? tab : "?", (long long)sqlite3_column_int64(st, 1),
                          par ? par : "?");
    }
    if( s != SQLITE_DONE )
      fly_check_problem(ck, "foreign_key_check: %s", sqlite3_errmsg(fly_db_sqlite(db)));
    sqlite3_finalize(st);
  }
  fly_check_scope(ck, "%s", "");
}
