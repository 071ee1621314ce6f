/*
 * chainbuf.c -- a chain's evaluation and candidate buffers (chain_impl.h).
 * They grow, doubling, only when a batch is larger than any before, so a
 * chain in its steady state allocates nothing.
 */
#include "flymc/chain_impl.h"
#include "util/mem.h"

fly_rc fly_chain_ev_reserve(fly_chain *c, size_t n, fly_err *err)
{
  if( n <= c->ev_cap ) return FLY_OK;
  size_t cap = c->ev_cap ? c->ev_cap : 1024;
  while( cap < n ) cap *= 2;
  size_t wl = c->m->type->work_len(c->m, cap);
  double *a = fly_realloc_array(c->logL, cap, sizeof(double));
  if( a ) c->logL = a;
  double *b = fly_realloc_array(c->logB, cap, sizeof(double));
  if( b ) c->logB = b;
  double *w = fly_realloc_array(c->work, wl ? wl : 1, sizeof(double));
  if( w ) c->work = w;
  double *sd = fly_realloc_array(c->sd, cap, 2 * sizeof(double));
  if( sd ) c->sd = sd;
  double *o = fly_realloc_array(c->ones, cap, sizeof(double));
  if( o ){
    c->ones = o;
    for(size_t i = 0; i < cap; i++) o[i] = 1.0;
  }
  if( !a || !b || !w || !sd || !o ) return fly_fail(err, FLY_NOMEM, "evaluation buffers (%zu rows)", cap);
  c->ev_cap = cap;
  return FLY_OK;
}

fly_rc fly_chain_cand_reserve(fly_chain *c, size_t n, fly_err *err)
{
  if( n <= c->c_cap ) return FLY_OK;
  size_t cap = c->c_cap ? c->c_cap : 1024;
  while( cap < n ) cap *= 2;
  int ok = 1;
  FLY_GROW(c->cid, cap, 1, ok);
  FLY_GROW(c->cX, cap, c->W, ok);
  FLY_GROW(c->cB, cap, c->bw, ok);
  FLY_GROW(c->cgap, cap, 1, ok);
  FLY_GROW(c->cxi, cap, c->nxi, ok);
  if( !ok ) return fly_fail(err, FLY_NOMEM, "candidate buffers (%zu rows)", cap);
  c->c_cap = cap;
  return fly_chain_ev_reserve(c, cap, err);
}
