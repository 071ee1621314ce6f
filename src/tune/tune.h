/*
 * tune.h -- tuned lower bounds for a data set: the MAP, the Laplace
 * matrices, per-row bound parameters (xi) with thinning keys, and the
 * collapsed moment tables, built once per (data set, model, model options,
 * tuning) and stored in the same SQLite file (bound_set, bound_page,
 * moment).
 *
 * Building streams the data: every objective/gradient evaluation of the MAP
 * search (on a subsample of the pages, or all of them), each Newton step,
 * the Hessian and the bound pages is one sequential scan of the data pages
 * through one page buffer, so memory is O(page_rows * width +
 * n_params^2) whatever the number of rows.  A bound set is written in one
 * transaction and marked 'ready' in it: a failed or killed build leaves
 * nothing behind.
 *
 * Bound page k covers the rows of data page k (same page_rows); each row is
 * n_xi + 1 f32 values: the xi of the row, then its thinning key (MAP tuning:
 * gap_n(th) <= thin->upper(key_n, thin->radius(th, theta_map,
 * key_prec)), the key rounded up to f32; fixed tuning: NaN, unusable).  The
 * moments are accumulated from the f32 xi exactly as stored, so
 * type->bound_sum equals the sum of the per-row log bounds computed from the
 * stored xi.
 */
#ifndef FLY_TUNE_H
#define FLY_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/err.h"

/* A MAP found elsewhere (for one shard of a data set: the MAP of all the
 * shards, issue 28), for fly_tune_get to build the bounds at instead of
 * searching this data set's own.  Borrowed for the call. */
typedef struct fly_tune_given {
  const double *theta;     /* n_params: the MAP */
  const double *H;         /* n_params^2: -hess log posterior there */
  double        logpost;   /* log posterior there (no constants) */
  int           iters;     /* L-BFGS iterations that found it */
  double        g_norm;    /* |grad| there */
} fly_tune_given;

typedef struct fly_tune_opts {
  const char *tuning;     /* "map" (NULL: "map"), "fixed" or "fixed=XI" */
  double      fixed_xi;   /* xi for "fixed" (default 1.5) */
  int         verbose;    /* progress lines on stderr */
  int         force;      /* rebuild even if a ready bound set exists */
  int         max_iter;   /* L-BFGS iterations (default 500) */
  double      g_tol;      /* L-BFGS gradient tolerance relative to the
                             gradient at th = 0 (default 1e-9) */
  int         full_lbfgs; /* 1: L-BFGS on the full data from 0; 0 (default):
                             on data with at least 4 x max(20000, 200 P)
                             rows and a normal prior, L-BFGS on a
                             subsample, then Newton steps on the full data
                             (the same MAP, about 3 scans instead of 13) */
  const double *X;        /* NULL (default): scans read the data pages;
                             else every row of the data set in memory (N x
                             width, as the pages decode them), which the
                             scans read instead (the same values, so the
                             same bound set); borrowed for the call */
  const fly_pages *data_map; /* NULL (default), or an open handle on the
                             data set's pages whose map the scans' handle
                             copies (fly_pages_open_like); borrowed */
  const fly_tune_given *given; /* NULL (default): search the MAP; else
                             build at this MAP and H without scanning for
                             them (MAP tuning: xi and keys at it) */
} fly_tune_opts;

/* The defaults listed above. */
void fly_tune_opts_default(fly_tune_opts *o);

/* The model options string stored in bound_set.model_opts, e.g.
 * "prior=normal;scale=1" (plus ";K=3" for K > 1 and ";nu=4;sigma=1" when
 * nu > 0).  Two models with equal strings have equal posteriors.
 * FLY_RANGE if buf (n bytes) is too small. */
fly_rc fly_tune_model_opts(const fly_model *m, char *buf, size_t n,
                           fly_err *err);

/* The inverse of fly_tune_model_opts: model m of type `name` on a data set
 * of rows of width values (D = width - 1, the target last) from a stored
 * model_opts string.  FLY_PARSE, naming what is wrong, for an unknown
 * model, a missing prior or scale, a bad value, or an option the model
 * does not take.  The string fly_tune_model_opts writes for the result is
 * the canonical form; a stored string that differs from it never matches
 * fly_tune_get's lookup. */
fly_rc fly_tune_model_opts_parse(const char *name, const char *opts,
                                 int64_t width, fly_model *m, fly_err *err);

/* The tuning string stored in bound_set.tuning: "map" or "fixed=1.5".
 * FLY_MISUSE for an unknown tuning or a non-finite / negative fixed xi. */
fly_rc fly_tune_tuning_string(const fly_tune_opts *o, char *buf, size_t n,
                              fly_err *err);

/* The id of the ready bound set of (dataset_id, m->type->name, model
 * options, tuning), building it first if there is none (or if o->force).
 * o NULL means defaults.  Building runs the MAP search even for fixed
 * tuning (the Laplace covariance shapes the proposals).  Returns
 *   FLY_MISUSE  the model does not fit the data set (D, target column), an
 *               unknown tuning, or --force on a bound set runs still use;
 *   FLY_RANGE   a target the model does not accept (the row is named);
 *   FLY_CORRUPT a non-finite value in the data (the row is named), or a bad
 *               page;
 *   FLY_NUMERIC the MAP search failed or the Hessian at the MAP is not
 *               positive definite, with an explanation (separable data,
 *               collinear or constant features: use a stronger prior);
 *   FLY_SQL / FLY_IO / FLY_NOMEM otherwise.
 * On failure nothing is written and *bound_set_id is untouched. */
fly_rc fly_tune_get(fly_db *db, int64_t dataset_id, const fly_model *m,
                    const fly_tune_opts *o, int64_t *bound_set_id,
                    fly_err *err);

/* A loaded bound set: everything but the per-row pages (read those with
 * fly_pages_open(db, FLY_TABLE_BOUND, id, ...)).  Matrices are P x P,
 * row-major, P = n_params, except key_prec (D x D, D = m->D). */
typedef struct fly_bounds {
  int64_t id;             /* bound_set id */
  int64_t dataset_id;
  size_t  P;              /* n_params */
  size_t  n_xi;           /* bound parameters per row; a bound row has
                             n_xi + 1 values (the key last) */
  int64_t n_rows, page_rows, n_pages;  /* shape of the bound pages */
  int     tuned;          /* 1: MAP-tuned (keys valid); 0: fixed xi */
  double  fixed_xi;       /* the xi of fixed tuning (NaN if tuned) */
  double *theta_map;      /* P: the MAP */
  double *cov;            /* P x P: Laplace covariance H^-1 */
  double *prec;           /* P x P: H = -hess log posterior at the MAP
                             (after a subsample start: at the last Newton
                             iterate, within 1e-3 sds of it) */
  double *chol_cov;       /* P x P: lower L, L L' = cov (MH proposals) */
  double *chol_prec;      /* P x P: lower L, L L' = prec (HMC momenta) */
  double *key_prec;       /* D x D: the metric H_D of the thinning keys, the
                             H to pass to thin->radius (keys were made with
                             ||x||_P, P = H_D^-1); a copy of prec when
                             P == D, see tune.c for K x D parameters */
  double *chol_key;       /* D x D: lower L, L L' = key_prec (the row
                             sketches' coordinates, flymc/sketch.h) */
  double *mom;            /* n_mom moments, layout type->moment_layout */
  size_t  n_mom;
  double  map_logpost;    /* log prior + sum log L at the MAP (no consts) */
  int     map_iters;      /* L-BFGS iterations */
  double  map_grad_norm;  /* |grad log posterior| at the MAP */
  double  tune_seconds;   /* wall time of the build */
} fly_bounds;

/* Load ready bound set bound_set_id for model m (whose type and n_params
 * must match).  FLY_RANGE if there is no such bound set, FLY_MISUSE if it
 * is for another model or not ready, FLY_CORRUPT if a stored matrix or
 * moment table is malformed.  *pb NULL on failure; free with
 * fly_bounds_free. */
fly_rc fly_bounds_load(fly_db *db, int64_t bound_set_id, const fly_model *m,
                       fly_bounds **pb, fly_err *err);
void   fly_bounds_free(fly_bounds *b);                 /* NULL: no-op */

#endif
