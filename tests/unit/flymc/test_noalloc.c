/*
 * test_noalloc.c -- the per-iteration path allocates nothing (STYLE.md: "the
 * inner loop never allocates").
 *
 * This executable replaces malloc, calloc, realloc, free and the aligned
 * allocators with counting wrappers around glibc's __libc_* functions, so
 * every allocation in the process is seen: flydb's, SQLite's, OpenBLAS's
 * and libc's.  For every theta kernel (mh, mala, slice, hmc) and z mode
 * (regular, explicit, implicit, gibbs) a chain runs WARM adapting
 * iterations on a small store (all pages cached after the first touch),
 * then COUNT more with the counter on: there must be none.  Softmax runs
 * gibbs thinning with and without its K-direction sketch.  Checkpoints and
 * trace commits are not per-iteration and are not counted.
 *
 * Not built with sanitizers (they bring their own allocator); glibc only.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flymc/buckets.h"
#include "flymc/sketch.h"
#include "flymc/chain.h"
#include "models/model.h"
#include "store/db.h"
#include "store/pages.h"
#include "tap.h"
#include "store_fixture.h"
#include "logistic_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

#define N_ROWS    3000
#define D_FEAT    5          /* intercept + 4 */
#define WID       (D_FEAT + 1)
#define PAGE_ROWS 128
#define WARM      400
#define COUNT     400
#define SEED      777u

/* ---- counting allocator ---------------------------------------------- */

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t s);
extern void *__libc_realloc(void *p, size_t n);
extern void  __libc_free(void *p);
extern void *__libc_memalign(size_t a, size_t n);

static volatile int counting;
static volatile long n_alloc;

void *malloc(size_t n)
{
  if( counting ) n_alloc++;
  return __libc_malloc(n);
}

void *calloc(size_t n, size_t s)
{
  if( counting ) n_alloc++;
  return __libc_calloc(n, s);
}

void *realloc(void *p, size_t n)
{
  if( counting ) n_alloc++;
  return __libc_realloc(p, n);
}

void free(void *p) { __libc_free(p); }

void *aligned_alloc(size_t a, size_t n)
{
  if( counting ) n_alloc++;
  return __libc_memalign(a, n);
}

int posix_memalign(void **p, size_t a, size_t n)
{
  if( counting ) n_alloc++;
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;  /* ENOMEM */
}

/* WARM adapting iterations, then COUNT counted ones; allocations seen. */
static long run(fly_chain_cfg *cfg, uint64_t seed, const char *name)
{
  fly_chain *ch = NULL;
  fly_err err = {0};
  fly_iter_stats s;
  fly_rc rc = fly_chain_open(cfg, 0, seed, &ch, &err);
  if( rc == FLY_OK ) rc = fly_chain_init(ch, &err);
  for(int it = 0; it < WARM && rc == FLY_OK; it++) rc = fly_chain_step(ch, 1, &s, &err);
  n_alloc = 0;
  counting = 1;
  for(int it = 0; it < COUNT && rc == FLY_OK; it++) rc = fly_chain_step(ch, 0, &s, &err);
  counting = 0;
  long n = n_alloc;
  if( rc ) TAP_DIAG("%s: %s", name, err.msg);
  fly_chain_close(ch);
  return rc ? -1 : n;
}

/* MAP bounds, buckets and row sketches of data set ds for model m. */
static fly_rc prepare(fly_db *db, int64_t ds, const fly_model *m, fly_bounds **bd,
                      fly_buckets *bk, fly_sketch *sk, fly_err *err)
{
  int64_t bs = -1;
  fly_rc rc = fx_map_bounds(db, ds, m, &bs, bd, err);
  if( rc == FLY_OK ) rc = fx_index(db, bs, ds, m, (*bd)->chol_key, bk, sk, err);
  return rc;
}

int main(void)
{
  static double X[N_ROWS * WID];
  const double beta[D_FEAT] = { -0.3, 1.0, -0.7, 0.4, 0.2 };
  char path[256];
  fly_db *db = NULL;
  fly_err err = {0};
  fly_model m;
  fly_bounds *bd = NULL;
  fly_buckets bk = {0};
  fly_sketch sk = {0};
  int64_t ds = 0;
  fly_rc rc;

  printf("# seed %u, N = %d, D = %d, %d warm-up + %d counted iterations\n",
         SEED, N_ROWS, D_FEAT, WARM, COUNT);
  rc = fx_create_db("noalloc", path, sizeof path, &db, &err);
  if( !TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg) ) return tap_done();
  if( !TAP_OK(fx_logistic_store(db, "a", X, N_ROWS, D_FEAT, beta, SEED, PAGE_ROWS, &ds),
              "store of %d rows", N_ROWS) ) goto out;
  fx_logistic_model(&m, D_FEAT, 1);
  rc = prepare(db, ds, &m, &bd, &bk, &sk, &err);
  if( !TAP_OK(rc == FLY_OK, "MAP bounds, buckets and sketches (%s)", err.msg) ) goto out;

  struct { const char *name; fly_zmode z; double zp; } modes[] = {
    { "regular", FLY_Z_REGULAR, 0 }, { "explicit=0.05", FLY_Z_EXPLICIT, 0.05 },
    { "implicit=0.1", FLY_Z_IMPLICIT, 0.1 }, { "gibbs", FLY_Z_GIBBS, 0 },
    { "gibbs + sketch", FLY_Z_GIBBS, 1 },
    { "gibbs, every z step a screened scan", FLY_Z_GIBBS, 2 },
  };
  for(int k = FLY_K_MH; k <= FLY_K_NUTS; k++)
    for(size_t i = 0; i < sizeof modes / sizeof modes[0]; i++){
      fly_chain_cfg cfg;
      char name[64];
      memset(&cfg, 0, sizeof cfg);
      cfg.db_path = path;
      cfg.dataset_id = ds;
      cfg.m = &m;
      cfg.bounds = bd;
      cfg.buckets = modes[i].z == FLY_Z_GIBBS ? &bk : NULL;
      cfg.sketch = modes[i].z == FLY_Z_GIBBS && modes[i].zp == 1 ? &sk : NULL;
      cfg.sketch_all = 1;
      cfg.Xall = modes[i].z == FLY_Z_REGULAR ? X : NULL;
      cfg.N = N_ROWS;
      cfg.W = WID;
      cfg.z = modes[i].z;
      cfg.z_param = modes[i].z == FLY_Z_GIBBS ? 0 : modes[i].zp;
      cfg.scan_frac = modes[i].zp == 2 ? 0 : 0.25;
      cfg.kernel = (fly_kernel)k;
      cfg.eps0 = k == FLY_K_SLICE ? 2.0 : k == FLY_K_HMC ? 0.25 : k == FLY_K_NUTS ? 1.0 : 0.5;
      cfg.n_warmup = WARM;
      cfg.n_leap = 8;
      cfg.cache_bytes = 64 << 20;
      snprintf(name, sizeof name, "%s, z %s", fly_kernel_name((fly_kernel)k), modes[i].name);
      long n = run(&cfg, SEED + (uint64_t)(10 * k) + i, name);
      TAP_OK(n == 0, "%s: %ld allocations in %d iterations after warm-up", name, n, COUNT);
    }

  /* softmax (K = 3): gibbs thinning with its K-direction sketch (scan_frac 2:
   * always thinned; every candidate checked) and without */
  {
    static double Xs[N_ROWS * WID];
    const size_t Ws = WID;
    fly_model ms;
    fly_bounds *bds = NULL;
    fly_buckets bks = {0};
    fly_sketch sks = {0};
    int64_t dss = 0;
    fx_softmax_rows(Xs, N_ROWS, D_FEAT, beta, SEED);
    fx_model(&ms, &fly_model_softmax, D_FEAT, 3, 2.5);
    rc = fx_store_rows(db, "s", Xs, N_ROWS, Ws, PAGE_ROWS, &dss) ? FLY_OK : FLY_SQL;
    if( rc == FLY_OK ) rc = prepare(db, dss, &ms, &bds, &bks, &sks, &err);
    if( TAP_OK(rc == FLY_OK && sks.nd == 3, "softmax: MAP bounds, buckets and a "
               "3-direction sketch (%s)", err.msg) ){
      for(int withsk = 0; withsk <= 1; withsk++){
        fly_chain_cfg cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.db_path = path;
        cfg.dataset_id = dss;
        cfg.m = &ms;
        cfg.bounds = bds;
        cfg.buckets = &bks;
        cfg.sketch = withsk ? &sks : NULL;
        cfg.sketch_all = 1;
        cfg.N = N_ROWS;
        cfg.W = Ws;
        cfg.z = FLY_Z_GIBBS;
        cfg.scan_frac = 2;
        cfg.kernel = FLY_K_MH;
        cfg.eps0 = 0.5;
        cfg.n_warmup = WARM;
        cfg.cache_bytes = 64 << 20;
        const char *name = withsk ? "softmax, mh, z gibbs + sketch" : "softmax, mh, z gibbs";
        long n = run(&cfg, SEED + 100 + (uint64_t)withsk, name);
        TAP_OK(n == 0, "%s: %ld allocations in %d iterations after warm-up", name, n, COUNT);
      }
    }
    fly_buckets_free(&bks);
    fly_sketch_free(&sks);
    fly_bounds_free(bds);
  }

out:
  fly_buckets_free(&bk);
  fly_sketch_free(&sk);
  fly_bounds_free(bd);
  fly_db_close(db);
  fx_unlink_db(path);
  return tap_done();
}
