/*
 * bright.c -- dense block of bright rows (see bright.h).
 *
 * Invariant: for i < B, slot i holds the data of row fly_zset_ith_bright(z, i)
 * and its gap at the chain's current theta.  Cost: add/remove are O(W).
 */
#include "flymc/bright.h"

#include <string.h>

#include "util/mem.h"

fly_rc fly_bright_init(fly_bright *b, int64_t N, size_t W, size_t n_xi,
                       size_t n_coef, fly_err *err)
{
  memset(b, 0, sizeof *b);
  b->W = W;
  b->n_xi = n_xi;
  b->n_coef = n_coef;
  fly_rc rc = fly_zset_new(N, &b->z, err);
  if( rc ) return rc;
  return fly_bright_reserve(b, 256, err);
}

void fly_bright_free(fly_bright *b)
{
  if( !b ) return;
  fly_zset_free(b->z);
  fly_free(b->X);
  fly_free(b->xi);
  fly_free(b->coef);
  fly_free(b->gap);
  fly_free(b->gap_new);
  memset(b, 0, sizeof *b);
}

fly_rc fly_bright_reserve(fly_bright *b, size_t n, fly_err *err)
{
  if( n <= b->cap ) return FLY_OK;
  size_t cap = b->cap ? b->cap : 256;
  while( cap < n ) cap *= 2;
  double *X = fly_realloc_array(b->X, cap, b->W * sizeof(double));
  if( X ) b->X = X;
  float *xi = fly_realloc_array(b->xi, cap, (b->n_xi ? b->n_xi : 1) * sizeof(float));
  if( xi ) b->xi = xi;
  double *cf = fly_realloc_array(b->coef, cap, (b->n_coef ? b->n_coef : 1) * sizeof(double));
  if( cf ) b->coef = cf;
  double *g = fly_realloc_array(b->gap, cap, sizeof(double));
  if( g ) b->gap = g;
  double *gn = fly_realloc_array(b->gap_new, cap, sizeof(double));
  if( gn ) b->gap_new = gn;
  if( !X || !xi || !cf || !g || !gn )
    return fly_fail(err, FLY_NOMEM, "bright rows: %zu slots of %zu values", cap, b->W);
  fly_rc rc = fly_zset_reserve(b->z, (int64_t)cap, err);
  if( rc ) return rc;
  b->cap = cap;
  return FLY_OK;
}

fly_rc fly_bright_add(fly_bright *b, int64_t n, const double *x,
                      const float *xi, const double *coef, double gap,
                      fly_err *err)
{
  size_t B = (size_t)fly_zset_n_bright(b->z);
  fly_rc rc = fly_bright_reserve(b, B + 1, err);
  if( rc ) return rc;
  int64_t pos = fly_zset_brighten(b->z, n);
  if( pos == FLY_ZSET_NOMEM )
    return fly_fail(err, FLY_NOMEM, "bright rows: no room for row %lld", (long long)n);
  if( pos < 0 ) return fly_fail(err, FLY_MISUSE, "row %lld is already bright", (long long)n);
  memcpy(b->X + (size_t)pos * b->W, x, b->W * sizeof *x);
  memcpy(b->xi + (size_t)pos * b->n_xi, xi, b->n_xi * sizeof *xi);
  if( b->n_coef ) memcpy(b->coef + (size_t)pos * b->n_coef, coef, b->n_coef * sizeof *coef);
  b->gap[pos] = gap;
  return FLY_OK;
}

void fly_bright_remove(fly_bright *b, int64_t n)
{
  int64_t from = -1;
  int64_t pos = fly_zset_darken(b->z, n, &from);
  if( pos < 0 || from == pos ) return;
  size_t p = (size_t)pos, f = (size_t)from;
  memcpy(b->X + p * b->W, b->X + f * b->W, b->W * sizeof *b->X);
  memcpy(b->xi + p * b->n_xi, b->xi + f * b->n_xi, b->n_xi * sizeof *b->xi);
  memcpy(b->coef + p * b->n_coef, b->coef + f * b->n_coef, b->n_coef * sizeof *b->coef);
  b->gap[p] = b->gap[f];
}

void fly_bright_accept(fly_bright *b)
{
  double *t = b->gap;
  b->gap = b->gap_new;
  b->gap_new = t;
}
