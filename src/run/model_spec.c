/*
 * model_spec.c -- a model as the user states it (fly_model_spec), resolved
 * against a data set into a fly_model.
 *
 * The stored row is [intercept?] features... target, so D = width - 1 and
 * the target is the last value.  Softmax takes K from the target column's
 * maximum (its values are checked to be integers 0..K-1 when tuning reads
 * every row); robust regression's scale defaults to the target's sd.
 */
#include <math.h>
#include <string.h>

#include "run/run.h"
#include "store/dataset.h"

fly_rc fly_model_spec_resolve(const fly_model_spec *s, fly_db *db, int64_t dataset_id,
                              fly_model *m, fly_err *err)
{
  fly_dataset *ds = NULL;
  fly_rc rc;
  const char *name = s->model ? s->model : "logistic";
  memset(m, 0, sizeof *m);
  m->type = fly_model_find(name);
  if( !m->type )
    return fly_fail(err, FLY_MISUSE, "--model: '%s' is not an available model "
                    "(logistic, softmax, robust)", name);
  if( (rc = fly_dataset_load(db, dataset_id, &ds, err)) ) return rc;
  const fly_dataset_column *t = fly_dataset_target(ds);
  if( !t ){
    rc = fly_fail(err, FLY_CORRUPT, "data set %lld has no target column", (long long)dataset_id);
    fly_dataset_free(ds);
    return rc;
  }
  struct { double tmin, tmax, tsd; } d = { t->min, t->max, t->sd };
  m->D = (size_t)ds->width - 1;
  m->tcol = (size_t)ds->width - 1;
  fly_dataset_free(ds);
  m->K = 1;
  const char *pr = s->prior ? s->prior : "normal";
  if( !strcmp(pr, "normal") ) m->prior = FLY_PRIOR_NORMAL;
  else if( !strcmp(pr, "laplace") ) m->prior = FLY_PRIOR_LAPLACE;
  else return fly_fail(err, FLY_MISUSE, "--prior: '%s' is not normal or laplace", pr);
  m->prior_scale = s->prior_scale != 0 ? s->prior_scale : 1.0;
  if( !(m->prior_scale > 0) || !isfinite(m->prior_scale) )
    return fly_fail(err, FLY_MISUSE, "--prior-scale must be a positive number");
  int robust = !strcmp(m->type->name, "robust");
  if( !robust && (s->nu != 0 || s->scale != 0) )
    return fly_fail(err, FLY_MISUSE, "--nu and --scale are options of --model robust");
  if( robust ){
    m->nu = s->nu != 0 ? s->nu : 4.0;
    m->scale = s->scale != 0 ? s->scale : d.tsd > 0 && isfinite(d.tsd) ? d.tsd : 1.0;
    if( !(m->nu > 0) || !isfinite(m->nu) )
      return fly_fail(err, FLY_MISUSE, "--nu must be a positive number");
    if( !(m->scale > 0) || !isfinite(m->scale) )
      return fly_fail(err, FLY_MISUSE, "--scale must be a positive number");
  }
  if( !strcmp(m->type->name, "softmax") ){
    if( !(d.tmin >= 0) || d.tmax != floor(d.tmax) || d.tmax < 1 || d.tmax > 1000 )
      return fly_fail(err, FLY_MISUSE, "--model softmax needs class labels 0..K-1 in the "
                      "target (found %g .. %g)", d.tmin, d.tmax);
    m->K = (size_t)d.tmax + 1;
    if( m->prior == FLY_PRIOR_LAPLACE )
      return fly_fail(err, FLY_MISUSE, "--model softmax with --prior laplace: adding the "
                      "same vector to every class row leaves the likelihood unchanged, so "
                      "only a normal prior pins it down (the Laplace approximation needs "
                      "a positive definite Hessian)");
  }
  return FLY_OK;
}
