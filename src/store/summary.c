/*
 * summary.c -- writing the summary and profile tables (see summary.h).
 *
 * Both are small (a row per parameter, six rows per chain) and rewritten
 * whole: the summary when `flydb summary` runs again, the profile by each
 * `sample --profile` invocation of a run.
 */
#include "store/summary.h"

#include <math.h>

static void bind_real(sqlite3_stmt *st, int k, double v)
{
  if( isfinite(v) ) sqlite3_bind_double(st, k, v);
  else sqlite3_bind_null(st, k);
}

fly_rc fly_summary_put(fly_db *db, int64_t run_id, const fly_summary_row *rows,
                       size_t P, fly_err *err)
{
  sqlite3_stmt *del = NULL, *ins = NULL;
  fly_rc rc = fly_db_exec(db, "SAVEPOINT summary", err);
  if( rc ) return rc;
  rc = fly_db_prepare(db, "DELETE FROM summary WHERE run_id=?1", &del, err);
  if( rc == FLY_OK ){
    sqlite3_bind_int64(del, 1, run_id);
    if( sqlite3_step(del) != SQLITE_DONE ) rc = fly_db_fail(db, err, "clearing the summary");
  }
  if( rc == FLY_OK )
    rc = fly_db_prepare(db, "INSERT INTO summary(run_id, idx, name, mean, sd, median, mad, "
                        "q5, q95, rhat, ess_bulk, ess_tail, mcse_mean) VALUES (?1,?2,?3,?4,"
                        "?5,?6,?7,?8,?9,?10,?11,?12,?13)", &ins, err);
  for(size_t p = 0; rc == FLY_OK && p < P; p++){
    const fly_summary_row *w = &rows[p];
    double v[10] = { w->mean, w->sd, w->median, w->mad, w->q5, w->q95, w->rhat,
                     w->ess_bulk, w->ess_tail, w->mcse_mean };
    sqlite3_bind_int64(ins, 1, run_id);
    sqlite3_bind_int64(ins, 2, (int64_t)p);
    sqlite3_bind_text(ins, 3, w->name, -1, SQLITE_STATIC);
    for(int k = 0; k < 10; k++) bind_real(ins, 4 + k, v[k]);
    if( sqlite3_step(ins) != SQLITE_DONE ) rc = fly_db_fail(db, err, "storing the summary");
    sqlite3_reset(ins);
  }
  sqlite3_finalize(del);
  sqlite3_finalize(ins);
  if( rc ) fly_db_exec(db, "ROLLBACK TO summary", NULL);
  fly_db_exec(db, "RELEASE summary", NULL);
  return rc;
}

fly_rc fly_summary_put_profile(fly_db *db, int64_t run_id, const fly_profile_row *rows,
                               size_t n, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_begin(db, err);
  if( rc ) return rc;
  rc = fly_db_prepare(db, "INSERT OR REPLACE INTO profile(run_id, chain, part, seconds, "
                      "share, n_iters) VALUES (?1,?2,?3,?4,?5,?6)", &st, err);
  for(size_t i = 0; rc == FLY_OK && i < n; i++){
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, rows[i].chain);
    sqlite3_bind_text(st, 3, rows[i].part, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, rows[i].seconds);
    sqlite3_bind_double(st, 5, rows[i].share);
    sqlite3_bind_int64(st, 6, rows[i].n_iters);
    if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "storing the profile");
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  if( rc == FLY_OK ) rc = fly_db_commit(db, err);
  if( rc ) fly_db_rollback(db);
  return rc;
}
