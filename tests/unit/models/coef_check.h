/*
 * coef_check.h -- a model's kept bound coefficients must give the same bits
 * as its xi: eval_coef(coef(X, xi)) against eval(xi), grad_coef against
 * grad, with and without logB / wB.  Shared by the model tests.
 */
#ifndef FLY_TEST_COEF_CHECK_H
#define FLY_TEST_COEF_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "models/model.h"

enum { COEF_EVAL = 1, COEF_EVAL_L = 2, COEF_GRAD = 4, COEF_GRAD_L = 8 };

/* Bit mask of the COEF_ checks that differ at th (0: all the same). */
static int coef_mismatch(const fly_model *m, const double *th, const double *X,
                         size_t ldx, const float *xi, size_t N,
                         const double *wL, const double *wB)
{
  size_t P = m->type->n_params(m), nc = m->type->n_coef(m);
  double *cf = malloc(N * nc * sizeof *cf), *w = malloc(m->type->work_len(m, N) * sizeof *w);
  double *l1 = malloc(N * sizeof *l1), *b1 = malloc(N * sizeof *b1);
  double *l2 = malloc(N * sizeof *l2), *b2 = malloc(N * sizeof *b2);
  double *g1 = malloc(P * sizeof *g1), *g2 = malloc(P * sizeof *g2);
  int bad = 0;
  m->type->coef(m, X, ldx, xi, N, cf);
  m->type->eval(m, th, X, ldx, xi, N, l1, b1, w);
  m->type->eval_coef(m, th, X, ldx, cf, N, l2, b2, w);
  if( memcmp(l1, l2, N * sizeof *l1) || memcmp(b1, b2, N * sizeof *b1) ) bad |= COEF_EVAL;
  m->type->eval(m, th, X, ldx, xi, N, l1, NULL, w);
  m->type->eval_coef(m, th, X, ldx, NULL, N, l2, NULL, w);
  if( memcmp(l1, l2, N * sizeof *l1) ) bad |= COEF_EVAL_L;
  for( size_t j = 0; j < P; j++ ) g1[j] = g2[j] = 0.5 * (double)j;
  m->type->grad(m, th, X, ldx, xi, N, wL, wB, g1, w);
  m->type->grad_coef(m, th, X, ldx, cf, N, wL, wB, g2, w);
  if( memcmp(g1, g2, P * sizeof *g1) ) bad |= COEF_GRAD;
  for( size_t j = 0; j < P; j++ ) g1[j] = g2[j] = 0;
  m->type->grad(m, th, X, ldx, xi, N, wL, NULL, g1, w);
  m->type->grad_coef(m, th, X, ldx, NULL, N, wL, NULL, g2, w);
  if( memcmp(g1, g2, P * sizeof *g1) ) bad |= COEF_GRAD_L;
  free(cf); free(w); free(l1); free(b1); free(l2); free(b2); free(g1); free(g2);
  return bad;
}

#endif
