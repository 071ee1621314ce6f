/*
 * logistic_fixture.h -- synthetic logistic-regression stores for the chain
 * tests: rows [1, D-1 standard normals, y ~ Bernoulli(sigma(beta'x))],
 * the model table for them (and for the other models on such rows, with a
 * softmax class draw), and the thinning buckets and row sketches of a
 * bound set.  Include after tap.h and store_fixture.h.
 */
#ifndef FLY_LOGISTIC_FIXTURE_H
#define FLY_LOGISTIC_FIXTURE_H

#include <math.h>
#include <string.h>

#include "flymc/buckets.h"
#include "flymc/index.h"
#include "flymc/sketch.h"
#include "models/model.h"
#include "store/pages.h"
#include "tune/tune.h"
#include "util/rng.h"

/* Fill X (n rows of D + 1 values) from RNG stream 0 of seed and store it as
 * data set `name` in pages of page_rows rows.  1 on success. */
static inline int fx_logistic_store(fly_db *db, const char *name, double *X, size_t n,
                                    size_t D, const double *beta, uint64_t seed,
                                    int64_t page_rows, int64_t *ds)
{
  fly_rng rng;
  fly_rng_seed(&rng, seed, 0);
  for(size_t i = 0; i < n; i++){
    double *x = X + i * (D + 1), s = 0;
    x[0] = 1;
    for(size_t j = 1; j < D; j++) x[j] = fly_rng_normal(&rng);
    for(size_t j = 0; j < D; j++) s += beta[j] * x[j];
    x[D] = fly_rng_uniform(&rng) < 1 / (1 + exp(-s)) ? 1 : 0;
  }
  return fx_store_rows(db, name, X, n, D + 1, page_rows, ds);
}

/* Model `type` on rows of D features (intercept included) and the target
 * after them, K classes (1 but for softmax), a N(0, prior_scale^2) prior. */
static inline void fx_model(fly_model *m, const fly_model_type *type, size_t D,
                            size_t K, double prior_scale)
{
  memset(m, 0, sizeof *m);
  m->type = type;
  m->D = D;
  m->tcol = D;
  m->K = K;
  m->prior = FLY_PRIOR_NORMAL;
  m->prior_scale = prior_scale;
}

/* Logistic regression on those rows with a N(0, prior_scale^2) prior. */
static inline void fx_logistic_model(fly_model *m, size_t D, double prior_scale)
{
  fx_model(m, &fly_model_logistic, D, 1, prior_scale);
}

/* A class drawn with probabilities softmax(sc[0..K)) (Gumbel-max). */
static inline int fx_softmax_class(fly_rng *rng, const double *sc, int K)
{
  double best = -INFINITY;
  int y = 0;
  for(int k = 0; k < K; k++){
    double v = sc[k] - log(-log(fly_rng_uniform(rng) + 1e-300));
    if( v > best ){ best = v; y = k; }
  }
  return y;
}

/* Fill X (n rows of D + 1 values) from RNG stream 1 of seed with softmax
 * rows of 3 classes: [1, D-1 standard normals, class], class scores 0 and
 * x'beta_k for k = 1, 2, beta_k[j] = beta[(j + k) mod D]. */
static inline void fx_softmax_rows(double *X, size_t n, size_t D, const double *beta,
                                   uint64_t seed)
{
  fly_rng r;
  fly_rng_seed(&r, seed, 1);
  for(size_t i = 0; i < n; i++){
    double *x = X + i * (D + 1), sc[3] = { 0, 0, 0 };
    x[0] = 1;
    for(size_t j = 1; j < D; j++) x[j] = fly_rng_normal(&r);
    for(int k = 1; k < 3; k++)
      for(size_t j = 0; j < D; j++) sc[k] += x[j] * beta[(j + (size_t)k) % D];
    x[D] = fx_softmax_class(&r, sc, 3);
  }
}

/* The MAP-tuned bound set of data set ds for model m (built if there is
 * none): its id in *bs and the bounds loaded into *bd. */
static inline fly_rc fx_map_bounds(fly_db *db, int64_t ds, const fly_model *m,
                                   int64_t *bs, fly_bounds **bd, fly_err *err)
{
  fly_tune_opts o;
  fly_tune_opts_default(&o);
  o.tuning = "map";
  fly_rc rc = fly_tune_get(db, ds, m, &o, bs, err);
  if( rc == FLY_OK ) rc = fly_bounds_load(db, *bs, m, bd, err);
  return rc;
}

/* The thinning buckets of bound set bs of model m. */
static inline fly_rc fx_buckets(fly_db *db, int64_t bs, const fly_model *m,
                                fly_buckets *bk, fly_err *err)
{
  fly_pages *bp = NULL;
  fly_rc rc = fly_pages_open(db, FLY_TABLE_BOUND, bs, 0, &bp, err);
  if( rc == FLY_OK ) rc = fly_buckets_build(bp, m, bk, err);
  fly_pages_close(bp);
  return rc;
}

/* The thinning buckets of bound set bs with the row sketches of data set
 * ds placed in their records, as flydb sample builds them (two threads). */
static inline fly_rc fx_index(fly_db *db, int64_t bs, int64_t ds, const fly_model *m,
                              const double *L, fly_buckets *bk, fly_sketch *sk,
                              fly_err *err)
{
  return fly_index_build(fly_db_path(db), ds, bs, NULL, NULL, m, L, 2, bk, sk, err);
}

/* The row sketches of data set ds for model m in the coordinates of L
 * (fly_bounds.chol_key), as flydb sample builds them. */
static inline fly_rc fx_sketch(fly_db *db, int64_t ds, const fly_model *m,
                               const double *L, fly_sketch *sk, fly_err *err)
{
  fly_pages *dp = NULL;
  fly_rc rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &dp, err);
  if( rc == FLY_OK ) rc = fly_sketch_build(dp, m, L, sk, err);
  fly_pages_close(dp);
  return rc;
}

#endif
