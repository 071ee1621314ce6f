/*
 * modelopt.c -- model options resolved against a data set (see modelopt.h).
 *
 * The stored row is [intercept?] features... target, so D = width - 1 and
 * the target is the last value.  Softmax takes K from the target column's
 * maximum (its values are checked to be integers 0..K-1 when tuning reads
 * every row); robust regression's scale defaults to the target's sd.
 */
#include "modelopt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static fly_rc target_stats(fly_db *db, int64_t ds, int64_t *width, double *tmin,
                           double *tmax, double *tsd, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT d.width, c.min, c.max, c.sd FROM dataset d "
                             "JOIN dataset_column c ON c.dataset_id = d.id AND "
                             "c.role = 'target' WHERE d.id = ?1", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, ds);
  if( sqlite3_step(st) == SQLITE_ROW ){
    *width = sqlite3_column_int64(st, 0);
    *tmin = sqlite3_column_double(st, 1);
    *tmax = sqlite3_column_double(st, 2);
    *tsd = sqlite3_column_double(st, 3);
  }else rc = fly_fail(err, FLY_CORRUPT, "data set %lld has no target column", (long long)ds);
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_modelopt_resolve(fly_args *a, fly_db *db, int64_t ds, fly_model *m,
                            fly_err *err)
{
  int64_t width = 0;
  double tmin = 0, tmax = 0, tsd = 0;
  fly_rc rc;
  const char *name = fly_args_str(a, "model", "logistic");
  memset(m, 0, sizeof *m);
  m->type = fly_model_find(name);
  if( !m->type )
    return fly_fail(err, FLY_MISUSE, "--model: '%s' is not an available model "
                    "(logistic, softmax, robust)", name);
  if( (rc = target_stats(db, ds, &width, &tmin, &tmax, &tsd, err)) ) return rc;
  m->D = (size_t)width - 1;
  m->tcol = (size_t)width - 1;
  m->K = 1;
  const char *pr = fly_args_str(a, "prior", "normal");
  if( !strcmp(pr, "normal") ) m->prior = FLY_PRIOR_NORMAL;
  else if( !strcmp(pr, "laplace") ) m->prior = FLY_PRIOR_LAPLACE;
  else return fly_fail(err, FLY_MISUSE, "--prior: '%s' is not normal or laplace", pr);
  if( (rc = fly_args_real(a, "prior-scale", 1.0, 1e-12, 1e12, &m->prior_scale, err)) )
    return rc;
  int robust = !strcmp(m->type->name, "robust");
  if( !robust && (fly_args_set(a, "nu") || fly_args_set(a, "scale")) )
    return fly_fail(err, FLY_MISUSE, "--nu and --scale are options of --model robust");
  if( robust ){
    if( (rc = fly_args_real(a, "nu", 4.0, 1e-6, 1e12, &m->nu, err)) ) return rc;
    double def = tsd > 0 && isfinite(tsd) ? tsd : 1.0;
    if( (rc = fly_args_real(a, "scale", def, 1e-300, 1e300, &m->scale, err)) ) return rc;
  }
  if( !strcmp(m->type->name, "softmax") ){
    if( !(tmin >= 0) || tmax != floor(tmax) || tmax < 1 || tmax > 1000 )
      return fly_fail(err, FLY_MISUSE, "--model softmax needs class labels 0..K-1 in the "
                      "target (found %g .. %g)", tmin, tmax);
    m->K = (size_t)tmax + 1;
    if( m->prior == FLY_PRIOR_LAPLACE )
      return fly_fail(err, FLY_MISUSE, "--model softmax with --prior laplace: adding the "
                      "same vector to every class row leaves the likelihood unchanged, so "
                      "only a normal prior pins it down (the Laplace approximation needs "
                      "a positive definite Hessian)");
  }
  return FLY_OK;
}

int fly_modelopt_value(const fly_model *m, const char *name, char *buf, size_t n)
{
  if( !strcmp(name, "model") ) snprintf(buf, n, "%s", m->type->name);
  else if( !strcmp(name, "prior") ) snprintf(buf, n, "%s", m->prior == FLY_PRIOR_LAPLACE ?
                                              "laplace" : "normal");
  else if( !strcmp(name, "prior-scale") ) snprintf(buf, n, "%.17g", m->prior_scale);
  else if( !strcmp(name, "nu") ) snprintf(buf, n, "%.17g", m->nu);
  else if( !strcmp(name, "scale") ) snprintf(buf, n, "%.17g", m->scale);
  else return 0;
  return 1;
}

fly_rc fly_modelopt_params(fly_db *db, int64_t run_id, int64_t ds,
                           const fly_model *m, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  if( m->K <= 1 ){
    rc = fly_db_prepare(db, "INSERT INTO param(run_id, idx, name) SELECT ?1, idx, name "
                        "FROM dataset_column WHERE dataset_id=?2 AND role != 'target'",
                        &st, err);
  }else{
    /* class k's row of theta: parameters k*D .. k*D+D-1, named "k:feature" */
    rc = fly_db_prepare(db, "WITH RECURSIVE k(v) AS (SELECT 0 UNION ALL SELECT v+1 FROM k "
                        "WHERE v+1 < ?3) INSERT INTO param(run_id, idx, name) SELECT ?1, "
                        "k.v * ?4 + c.idx, k.v || ':' || c.name FROM k, dataset_column c "
                        "WHERE c.dataset_id=?2 AND c.role != 'target'", &st, err);
  }
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int64(st, 2, ds);
  if( m->K > 1 ){
    sqlite3_bind_int64(st, 3, (int64_t)m->K);
    sqlite3_bind_int64(st, 4, (int64_t)m->D);
  }
  if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "naming parameters");
  sqlite3_finalize(st);
  return rc;
}
