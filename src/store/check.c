/*
 * check.c -- the problem reporting the module checkers share (check.h):
 * a scope, a counter, a printf-style problem line handed to the caller's
 * callback, and the tolerances for recomputed sums.
 */
#include "store/check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

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
