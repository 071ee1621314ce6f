/*
 * slice.c -- hit-and-run slice sampling in the Laplace metric (see slice.h).
 *
 * One update along the unit direction d, with f(t) = log p(th + t d):
 *   y   = f(0) - Exp(1)                       (the slice level, log scale)
 *   stepping out (Neal 2003, Fig. 3):  lo = -w U, hi = lo + w;
 *       J = floor(m V), K = m - 1 - J;
 *       while J > 0 and f(lo) >= y: lo -= w, J--;
 *       while K > 0 and f(hi) >= y: hi += w, K--;
 *   shrinkage (Fig. 5): t = lo + U (hi - lo); accept if f(t) >= y, else
 *       shrink the side of t that does not contain 0, and repeat.
 * ">=" rather than Neal's ">" keeps the current point inside the slice when
 * Exp(1) is below half an ulp of f(0); the difference has measure zero.
 * Because the interval always contains 0 (a point of the slice), shrinkage
 * ends; a cap of 200 proposals turns a non-deterministic target into an
 * error rather than a hang.
 *
 * Invariants: *lp is log p at th after every update; each update's last
 * logp call is at the accepted point, then accept() is called.
 * Cost per direction: O(P^2) for d, plus 1 (if J > 0) + 1 (if K > 0) +
 * (extra intervals) + (shrinkage proposals) logp calls; about 5 for a
 * Gaussian with the adapted w.  No allocation after fly_slice_init.
 */
#include "samplers/slice.h"

#include <math.h>
#include <string.h>

#include "samplers/kernel.h"
#include "util/mem.h"

#define MAX_SHRINK 200

fly_rc fly_slice_init(fly_slice *k, size_t P, const double *L, double w0,
                      fly_err *err)
{
  memset(k, 0, sizeof *k);
  if( P == 0 || !(w0 > 0) || !isfinite(w0) )
    return fly_fail(err, FLY_MISUSE, "slice sampler needs P > 0 and a positive width");
  k->P = P;
  k->L = L;
  k->n_dir = P;
  k->m = 32;
  k->st.w = w0;
  k->d = fly_alloc_array(P, sizeof(double));
  k->e = fly_alloc_array(P, sizeof(double));
  k->x = fly_alloc_array(P, sizeof(double));
  if( !k->d || !k->e || !k->x ){
    fly_slice_free(k);
    return fly_fail(err, FLY_NOMEM, "slice workspace (P = %zu)", P);
  }
  return FLY_OK;
}

void fly_slice_free(fly_slice *k)
{
  if( !k ) return;
  fly_free(k->d);
  fly_free(k->e);
  fly_free(k->x);
  k->d = k->e = k->x = NULL;
}

/* f(t) = log p(th + t d) into *f; the point stays in k->x. */
static fly_rc eval_at(fly_slice *k, fly_target *tgt, const double *th, double t,
                      double *f, fly_err *err)
{
  for(size_t i = 0; i < k->P; i++) k->x[i] = th[i] + t * k->d[i];
  k->n_eval++;
  fly_rc rc = tgt->logp(tgt->ctx, k->x, f, NULL, err);
  if( rc == FLY_OK && isnan(*f) )
    rc = fly_fail(err, FLY_NUMERIC, "slice: log density is NaN");
  return rc;
}

/* One slice update of th along a fresh direction. */
static fly_rc update(fly_slice *k, fly_target *tgt, fly_rng *rng, double *th,
                     double *lp, int adapt, fly_err *err)
{
  size_t P = k->P;
  double w = k->st.w, ne = 0, f, lo, hi, t, y;
  long J, K;
  fly_rc rc;

  do{
    ne = 0;
    fly_rng_normals(rng, k->e, P);
    for(size_t i = 0; i < P; i++) ne += k->e[i] * k->e[i];
  }while( !(ne > 0) );
  ne = 1.0 / sqrt(ne);
  for(size_t i = 0; i < P; i++){
    double s = 0;
    if( k->L ){
      const double *row = k->L + i * P;
      for(size_t j = 0; j <= i; j++) s += row[j] * k->e[j];
    }else{
      s = k->e[i];
    }
    k->d[i] = s * ne;
  }

  y = *lp + log(fly_rng_uniform(rng));       /* f(0) - Exp(1) */
  lo = -w * fly_rng_uniform(rng);
  hi = lo + w;
  J = (long)floor((double)k->m * fly_rng_uniform(rng));
  K = (long)k->m - 1 - J;
  while( J > 0 ){
    if( (rc = eval_at(k, tgt, th, lo, &f, err)) ) return rc;
    if( !(f >= y) ) break;
    lo -= w;
    J--;
  }
  while( K > 0 ){
    if( (rc = eval_at(k, tgt, th, hi, &f, err)) ) return rc;
    if( !(f >= y) ) break;
    hi += w;
    K--;
  }
  for(int n = 0; ; n++){
    if( n == MAX_SHRINK )
      return fly_fail(err, FLY_NUMERIC,
                      "slice: shrinkage found no point of the slice in %d "
                      "proposals (is log p deterministic?)", MAX_SHRINK);
    t = lo + fly_rng_uniform(rng) * (hi - lo);
    if( (rc = eval_at(k, tgt, th, t, &f, err)) ) return rc;
    if( f >= y ) break;
    if( t < 0 ) lo = t; else hi = t;
  }
  memcpy(th, k->x, P * sizeof *th);
  *lp = f;
  tgt->accept(tgt->ctx);
  if( adapt ){
    k->st.n_adapt += 1;
    k->st.w += (3.0 * fabs(t) - k->st.w) / (k->st.n_adapt + 1.0);
    if( !(k->st.w > 0) ) k->st.w = w;      /* t == 0 exactly at the start */
  }
  return FLY_OK;
}

fly_rc fly_slice_step(fly_slice *k, fly_target *tgt, fly_rng *rng, double *th,
                      double *lp, int adapt, int *accepted, fly_err *err)
{
  fly_rc rc;
  k->n_eval = 0;
  *accepted = 0;
  if( !(*lp > -INFINITY) || isnan(*lp) || *lp == INFINITY )
    return fly_fail(err, FLY_NUMERIC, "slice: log density of the current point is %g",
                    *lp);
  for(size_t j = 0; j < k->n_dir; j++)
    if( (rc = update(k, tgt, rng, th, lp, adapt, err)) ) return rc;
  *accepted = 1;
  return FLY_OK;
}

/* ---- the type table (kernel.h) ----------------------------------------- */

static double slice_default_step(size_t P, size_t n_leap)
{
  (void)P; (void)n_leap;
  return 2.0;                                     /* about 2 sds */
}
static fly_rc slice_init(void *k, const fly_kernel_cfg *kc, fly_err *err)
{
  return fly_slice_init(k, kc->P, kc->L, kc->eps0, err);
}
static void slice_free(void *k) { fly_slice_free(k); }
static fly_rc slice_step(void *k, fly_target *tgt, fly_rng *rng, double *th,
                         double *lp, int adapt, int *accepted, fly_err *err)
{
  return fly_slice_step(k, tgt, rng, th, lp, adapt, accepted, err);
}
static double slice_eps(const void *k, int adapt)
{
  (void)adapt;
  return ((const fly_slice *)k)->st.w;
}
static size_t slice_ckpt_size(const void *k) { return sizeof ((const fly_slice *)k)->st; }
static void slice_ckpt_save(const void *k, void *buf)
{
  memcpy(buf, &((const fly_slice *)k)->st, sizeof ((const fly_slice *)k)->st);
}
static fly_rc slice_ckpt_load(void *k, const void *buf, size_t len, fly_err *err)
{
  fly_slice *s = k;
  if( len != sizeof s->st )
    return fly_fail(err, FLY_CORRUPT, "slice state of %zu bytes, want %zu", len,
                    sizeof s->st);
  memcpy(&s->st, buf, sizeof s->st);
  return FLY_OK;
}

const fly_kernel_type fly_kernel_slice = {
  "slice", sizeof(fly_slice), slice_default_step, slice_init, slice_free, slice_step,
  slice_eps, NULL, slice_ckpt_size, slice_ckpt_save, slice_ckpt_load, NULL
};
