/*
 * modelopt.h -- the model options shared by `flydb tune` and `flydb sample`
 * (--model, --prior, --prior-scale, --nu, --scale), resolved against a data
 * set into a fly_model, and the names of its parameters.
 */
#ifndef FLY_MODELOPT_H
#define FLY_MODELOPT_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "models/model.h"
#include "store/db.h"

/* The option table entries, to splice into a subcommand's table. */
#define FLY_MODEL_OPTS \
  { "model", FLY_OPT_VALUE, "logistic (default) | softmax (K classes 0..K-1) | " \
                            "robust (Student-t regression)", 0, 0 }, \
  { "prior", FLY_OPT_VALUE, "normal (default) | laplace", 0, 0 }, \
  { "prior-scale", FLY_OPT_VALUE, "sd of the normal prior, scale of the Laplace " \
                                  "prior (default 1)", 0, 0 }, \
  { "nu", FLY_OPT_VALUE, "robust: Student-t degrees of freedom (default 4)", 0, 0 }, \
  { "scale", FLY_OPT_VALUE, "robust: Student-t scale (default: the target's sd)", 0, 0 }

/* Fill *m for data set ds from the options: dimensions from the data set,
 * K = (largest target) + 1 for softmax.  FLY_MISUSE naming the option for a
 * bad value or an option that does not fit the model. */
fly_rc fly_modelopt_resolve(fly_args *a, fly_db *db, int64_t ds, fly_model *m,
                            fly_err *err);

/* The resolved value of one of the options above as text (for run_config);
 * returns 0 if name is not a model option. */
int    fly_modelopt_value(const fly_model *m, const char *name, char *buf, size_t n);

/* Insert the names of m's parameters for run_id into table param: the data
 * set's feature names, prefixed "k:" per class for softmax. */
fly_rc fly_modelopt_params(fly_db *db, int64_t run_id, int64_t ds,
                           const fly_model *m, fly_err *err);

#endif
