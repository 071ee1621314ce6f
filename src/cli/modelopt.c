/*
 * modelopt.c -- the model options parsed into a fly_model_spec (see
 * modelopt.h); the library checks what depends on the data set.
 */
#include "modelopt.h"

#include <string.h>

fly_rc fly_modelopt_spec(fly_args *a, fly_model_spec *s, fly_err *err)
{
  fly_rc rc;
  memset(s, 0, sizeof *s);
  s->model = fly_args_str(a, "model", NULL);
  s->prior = fly_args_str(a, "prior", NULL);
  if( (rc = fly_args_real(a, "prior-scale", 1.0, 1e-12, 1e12, &s->prior_scale, err)) )
    return rc;
  if( fly_args_set(a, "nu") &&
      (rc = fly_args_real(a, "nu", 4.0, 1e-6, 1e12, &s->nu, err)) ) return rc;
  if( fly_args_set(a, "scale") &&
      (rc = fly_args_real(a, "scale", 1.0, 1e-300, 1e300, &s->scale, err)) ) return rc;
  s->formula = fly_args_str(a, "formula", NULL);
  s->reference = fly_args_str(a, "reference", NULL);
  const char *na = fly_args_str(a, "na", "omit");
  if( !strcmp(na, "error") ) s->na_error = 1;
  else if( strcmp(na, "omit") )
    return fly_fail(err, FLY_MISUSE, "--na: '%s' is not omit or error", na);
  return FLY_OK;
}
