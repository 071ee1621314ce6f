/*
 * logistic_fixture.h -- synthetic logistic-regression stores for the chain
 * tests: rows [1, D-1 standard normals, y ~ Bernoulli(sigma(beta'x))],
 * the model table for them, and the thinning buckets of a bound set.
 * Include after tap.h and store_fixture.h.
 */
#ifndef FLY_LOGISTIC_FIXTURE_H
#define FLY_LOGISTIC_FIXTURE_H

#include <math.h>
#include <string.h>

#include "flymc/buckets.h"
#include "models/model.h"
#include "store/pages.h"
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

/* Logistic regression on those rows with a N(0, prior_scale^2) prior. */
static inline void fx_logistic_model(fly_model *m, size_t D, double prior_scale)
{
  memset(m, 0, sizeof *m);
  m->type = &fly_model_logistic;
  m->D = D;
  m->tcol = D;
  m->K = 1;
  m->prior = FLY_PRIOR_NORMAL;
  m->prior_scale = prior_scale;
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

#endif
