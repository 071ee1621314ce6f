/*
 * modelopt.h -- the model options shared by `flydb tune` and `flydb sample`
 * (--model, --prior, --prior-scale, --nu, --scale, --formula, --reference,
 * --na), parsed into the
 * library's fly_model_spec (run/run.h), which resolves it against a data
 * set.
 */
#ifndef FLY_MODELOPT_H
#define FLY_MODELOPT_H

#include "args.h"
#include "run/run.h"

/* The option table entries, to splice into a subcommand's table. */
#define FLY_MODEL_OPTS \
  { "model", FLY_OPT_VALUE, "logistic (default) | softmax (K classes 0..K-1) | " \
                            "robust (Student-t regression)", 0, 0 }, \
  { "prior", FLY_OPT_VALUE, "normal (default) | laplace", 0, 0 }, \
  { "prior-scale", FLY_OPT_VALUE, "sd of the normal prior, scale of the Laplace " \
                                  "prior (default 1), on every coefficient as the " \
                                  "model matrix has it: the scale of your columns " \
                                  "(flydb does not standardise them)", 0, 0 }, \
  { "nu", FLY_OPT_VALUE, "robust: Student-t degrees of freedom (default 4)", 0, 0 }, \
  { "scale", FLY_OPT_VALUE, "robust: Student-t scale (default: the target's sd)", 0, 0 }, \
  { "formula", FLY_OPT_VALUE, "the model as an R formula over the data set's columns, " \
                              "e.g. 'y ~ x1 + log(x2) + cut + color:clarity' (terms, ., -, " \
                              ":, *, -1, log(), sqrt(), exp(), I()); categorical columns " \
                              "get treatment contrasts, levels in byte order, the first " \
                              "the reference (default: the columns as stored, or " \
                              "'TARGET ~ .' when a column is categorical or has missing " \
                              "values)", 0, 0 }, \
  { "reference", FLY_OPT_VALUE, "COL=LEVEL[,COL=LEVEL...]: reference levels of " \
                                "categorical columns", 0, 0 }, \
  { "na", FLY_OPT_VALUE, "omit (default: rows with a missing value in a column the " \
                         "model uses are left out and counted) | error", 0, 0 }

/* Fill *s from the options (the strings borrow from argv).  FLY_MISUSE
 * naming the option for a value out of range. */
fly_rc fly_modelopt_spec(fly_args *a, fly_model_spec *s, fly_err *err);

#endif
