/*
 * check.h -- what every module's integrity checker reports through.
 *
 * A checker (fly_db_check, fly_dataset_check, fly_pages_check,
 * fly_bounds_check, fly_run_check) never stops at the first problem: it
 * reports each one, a line of text, through the caller's callback, and goes
 * on.  Each problem belongs to a scope naming the object it concerns
 * ("data set 'toy' (id 1)", "run 3"; "" for none), so the caller can group
 * and cap its lines per object.  Page, row, column and chain numbers are as
 * stored (0-based); iterations count from 1.
 *
 * Checkers read only: they are run inside a read transaction with PRAGMA
 * query_only on (fly_db_check_begin), one snapshot for the whole check.
 */
#ifndef FLY_CHECK_H
#define FLY_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"

/* One problem: scope (never NULL, "" for none) and what is wrong (never
 * NULL, one line).  Both are valid only during the call. */
typedef void fly_check_report(void *ctx, const char *scope, const char *what);

typedef struct fly_checker {
  fly_check_report *report;     /* the caller's callback */
  void             *ctx;        /* its first argument */
  int               quick;      /* skip recomputing statistics and moments */
  int64_t           n_problems; /* problems reported so far */
  char              scope[256]; /* scope of the next problems */
} fly_checker;

/* Set the scope of the problems that follow (printf format). */
void fly_check_scope(fly_checker *ck, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;

/* Report one problem in the current scope (printf format); counts it. */
void fly_check_problem(fly_checker *ck, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;

/* Prepare sql; a statement that cannot be prepared (a damaged file, a
 * missing table) is reported as a problem and gives NULL. */
sqlite3_stmt *fly_check_prepare(fly_db *db, fly_checker *ck, const char *sql);

/* Report a failed step: "<what>: <SQLite's message>". */
void fly_check_step_failed(fly_db *db, fly_checker *ck, const char *what);

/* Tolerances shared by the checkers.  Recomputing in the same order with
 * the same code gives the same bits, so the slack only absorbs summation
 * in another order (an older ingest, another BLAS): a and b agree to 1e-9
 * relative plus 1e-11 of scale, the magnitude summed to get them. */
int fly_check_close(double a, double b, double scale);

/* Exact equality that treats two NaNs as equal. */
int fly_check_same(double a, double b);

/* "a" or "a..b" into buf (n bytes); returns buf. */
const char *fly_check_span(char *buf, size_t n, int64_t a, int64_t b);

/* SQLite's own check: PRAGMA integrity_check (quick_check when ck->quick)
 * and PRAGMA foreign_key_check, each problem reported through ck in scope
 * "SQLite".  The identity (application_id, a known user_version) was
 * checked by fly_db_open, which refuses the file. */
void   fly_db_check(fly_db *db, fly_checker *ck);

#endif
