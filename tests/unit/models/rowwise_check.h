/*
 * rowwise_check.h -- a model's eval on at most FLY_ROWWISE rows must give a
 * row the same bits whatever other rows share the call (model.h): the
 * chain evaluates candidate batches that the page cache decides in such
 * chunks, so a seed's draws do not depend on --cache-mb.  Shared by the
 * model tests.
 */
#ifndef FLY_TEST_ROWWISE_CHECK_H
#define FLY_TEST_ROWWISE_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "util/rng.h"

/* Rows i of the N whose logL or logB differ between eval on row i alone
 * and eval on any chunk of n = 2..FLY_ROWWISE rows holding it (chunks
 * start at every offset). */
static size_t rowwise_mismatch(const fly_model *m, const double *th,
                               const double *X, size_t ldx, const float *xi,
                               size_t nxi, size_t N)
{
  double *w = malloc(m->type->work_len(m, N) * sizeof *w);
  double *l1 = malloc(N * sizeof *l1), *b1 = malloc(N * sizeof *b1);
  double l[FLY_ROWWISE], b[FLY_ROWWISE];
  char *bad = calloc(N, 1);
  size_t nbad = 0;
  for( size_t i = 0; i < N; i++ )
    m->type->eval(m, th, X + i * ldx, ldx, xi + i * nxi, 1, l1 + i, b1 + i, w);
  for( size_t n = 2; n <= FLY_ROWWISE; n++ )
    for( size_t o = 0; o + n <= N; o++ ){
      m->type->eval(m, th, X + o * ldx, ldx, xi + o * nxi, n, l, b, w);
      for( size_t i = 0; i < n; i++ )
        if( memcmp(&l[i], &l1[o + i], sizeof *l) || memcmp(&b[i], &b1[o + i], sizeof *b) )
          bad[o + i] = 1;
    }
  for( size_t i = 0; i < N; i++ ) nbad += bad[i];
  free(w); free(l1); free(b1); free(bad);
  return nbad;
}

/* rowwise_mismatch summed over REPS draws of th ~ N(0, I) and of every
 * row's n_xi bound parameters by draw_xi. */
static size_t rowwise_reps(const fly_model *m, const double *X, size_t ldx,
                           size_t N, fly_rng *r, int reps,
                           void (*draw_xi)(fly_rng *r, float *xi))
{
  size_t P = m->type->n_params(m), nxi = m->type->n_xi(m), nbad = 0;
  double *th = malloc(P * sizeof *th);
  float *xi = malloc(N * nxi * sizeof *xi);
  for( int rep = 0; rep < reps; rep++ ){
    for( size_t j = 0; j < P; j++ ) th[j] = fly_rng_normal(r);
    for( size_t i = 0; i < N; i++ ) draw_xi(r, xi + i * nxi);
    nbad += rowwise_mismatch(m, th, X, ldx, xi, nxi, N);
  }
  free(th); free(xi);
  return nbad;
}

#endif
