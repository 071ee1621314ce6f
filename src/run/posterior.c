/*
 * posterior.c -- a run's model and its evenly thinned, pooled post-warm-up
 * draws, and its data set's rows in blocks (posterior.h).
 *
 * Each chain's post-warm-up draws are read in turn (one chain in memory,
 * the longest chain's worth of scratch) and the kept ones copied
 * draw-major.  The mean of the kept draws is summed in long double, in the
 * draws' order.
 */
#include <string.h>

#include "run/config.h"
#include "run/posterior.h"
#include "run/run.h"
#include "store/run.h"
#include "store/trace.h"
#include "util/mem.h"

void fly_posterior_free(fly_posterior *p)
{
  fly_free(p->th);
  fly_free(p->mean);
  fly_free(p->chain_len);
  memset(p, 0, sizeof *p);
}

fly_rc fly_posterior_load(fly_db *db, int64_t run_id, int64_t max_draws,
                          size_t min_draws, const char *what,
                          fly_posterior *p, fly_err *err)
{
  fly_trace_reader *tr = NULL;
  double *x = NULL;
  size_t *len = NULL;
  fly_run_rec rec;
  fly_run_cfg cfg;
  fly_rc rc;
  memset(p, 0, sizeof *p);
  if( (rc = fly_trace_reader_open(db, run_id, &tr, err)) ) goto done;
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  p->run_id = ri->id;
  if( (rc = fly_run_load(db, p->run_id, &rec, NULL, err)) ) goto done;
  p->ds = rec.dataset_id;
  if( (rc = fly_run_cfg_from_rec(&rec, &cfg, err)) ) goto done;
  if( (rc = fly_model_spec_resolve(&cfg.model, db, p->ds, &p->m, err)) ) goto done;
  p->P = ri->n_params;
  if( p->m.type->n_params(&p->m) != p->P ){
    rc = fly_fail(err, FLY_CORRUPT, "run %lld: %zu parameters stored, its %s model has %zu",
                  (long long)p->run_id, p->P, p->m.type->name, p->m.type->n_params(&p->m));
    goto done;
  }
  size_t C = ri->n_chains, T = 0, cap = 0;
  p->C = C;
  if( !(len = fly_alloc_array(C ? C : 1, sizeof *len)) ||
      !(p->chain_len = fly_alloc_array(C ? C : 1, sizeof *p->chain_len)) ) goto nomem;
  for(size_t c = 0; c < C; c++){
    if( (rc = fly_trace_chain_len(tr, c, NULL, &len[c], err)) ) goto done;
    T += len[c];
    if( len[c] > cap ) cap = len[c];
  }
  if( min_draws == 0 ) min_draws = 1;
  if( T < min_draws ){
    rc = fly_fail(err, FLY_MISUSE, "run %lld has %zu post-warm-up draws; %s needs at least %zu",
                  (long long)p->run_id, T, what, min_draws);
    goto done;
  }
  p->S = max_draws > 0 && (size_t)max_draws < T ? (size_t)max_draws : T;
  if( !(x = fly_alloc_array(cap, p->P * sizeof *x)) ||
      !(p->th = fly_alloc_array(p->S, p->P * sizeof *p->th)) ||
      !(p->mean = fly_alloc_array(p->P, sizeof *p->mean)) ) goto nomem;
  size_t t0 = 0, j = 0;
  for(size_t c = 0; c < C && j < p->S; t0 += len[c], c++){
    size_t n;
    if( (rc = fly_trace_draws(tr, c, 0, p->P, ri->n_warmup, cap, x, NULL, &n, err)) ) goto done;
    for(; j < p->S; j++){
      size_t t = (size_t)((double)j * (double)T / (double)p->S);
      if( t >= t0 + n ) break;
      for(size_t k = 0; k < p->P; k++) p->th[j * p->P + k] = x[k * cap + (t - t0)];
      p->chain_len[c]++;
    }
  }
  if( j < p->S ){
    rc = fly_fail(err, FLY_CORRUPT, "run %lld: draws missing from its stored chains",
                  (long long)p->run_id);
    goto done;
  }
  for(size_t k = 0; k < p->P; k++){
    long double s = 0;
    for(size_t i = 0; i < p->S; i++) s += p->th[i * p->P + k];
    p->mean[k] = (double)(s / (long double)p->S);
  }
  rc = FLY_OK;
  goto done;
nomem:
  rc = fly_fail(err, FLY_NOMEM, "run %lld: draws for %s", (long long)p->run_id, what);
done:
  if( rc ) fly_posterior_free(p);
  fly_free(x);
  fly_free(len);
  fly_trace_reader_close(tr);
  return rc;
}

/* ---- rows in blocks ----------------------------------------------------- */

void fly_posterior_rows_close(fly_posterior_rows *c)
{
  fly_pages_close(c->pg);
  fly_free(c->page);
  memset(c, 0, sizeof *c);
}

fly_rc fly_posterior_rows_open(fly_db *db, int64_t ds, fly_posterior_rows *c, fly_err *err)
{
  fly_rc rc;
  memset(c, 0, sizeof *c);
  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &c->pg, err)) ) return rc;
  const fly_pages_info *in = fly_pages_info_of(c->pg);
  c->N = in->n_rows;
  c->W = in->width;
  c->n_pages = in->n_pages;
  if( !(c->page = fly_alloc_array((size_t)in->page_rows, c->W * sizeof(double))) ){
    fly_posterior_rows_close(c);
    return fly_fail(err, FLY_NOMEM, "a page of data set %lld", (long long)ds);
  }
  return FLY_OK;
}

fly_rc fly_posterior_rows_block(fly_posterior_rows *c, double *X, size_t want, size_t *got, fly_err *err)
{
  size_t n = 0;
  fly_rc rc;
  while( n < want ){
    if( c->i == c->nr ){
      if( c->page_no == c->n_pages ) break;
      if( (rc = fly_pages_read_page(c->pg, c->page_no++, c->page, &c->nr, err)) ) return rc;
      c->i = 0;
      continue;
    }
    size_t k = c->nr - c->i < want - n ? c->nr - c->i : want - n;
    memcpy(X + n * c->W, c->page + c->i * c->W, k * c->W * sizeof *X);
    c->i += k;
    n += k;
  }
  *got = n;
  return FLY_OK;
}
