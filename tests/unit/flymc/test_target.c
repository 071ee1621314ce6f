/*
 * test_target.c -- the log densities the theta kernels see, and their
 * gradients: regular (log posterior over all rows, from memory and from
 * pages) and FlyMC (log p(theta | z): prior + collapsed bounds + bright
 * log Ltilde), against central finite differences at several theta, for
 * MAP-tuned and fixed bounds (fixed bounds leave many rows bright).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "store_fixture.h"
#include "logistic_fixture.h"

#include "flymc/buckets.h"
#include "flymc/chain.h"
#include "models/model.h"
#include "samplers/target.h"
#include "store/codec.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "tune/tune.h"
#include "util/rng.h"

#define N_ROWS 400
#define D_FEAT 4
#define WID    (D_FEAT + 1)
#define PAGE_ROWS 50
#define SEED   77u

static char path[256];

/* Max relative error of the gradient against central differences. */
static double fd_check(fly_target *t, const double *th, double *lp_out)
{
  double g[D_FEAT], x[D_FEAT], lp, lp1, lp2, worst = 0;
  fly_err err = {0};
  if( t->logp(t->ctx, th, &lp, g, &err) ) return INFINITY;
  *lp_out = lp;
  for(int j = 0; j < D_FEAT; j++){
    double h = 1e-5 * (1 + fabs(th[j]));
    memcpy(x, th, sizeof x);
    x[j] = th[j] + h;
    if( t->logp(t->ctx, x, &lp1, NULL, &err) ) return INFINITY;
    x[j] = th[j] - h;
    if( t->logp(t->ctx, x, &lp2, NULL, &err) ) return INFINITY;
    double fd = (lp1 - lp2) / (2 * h);
    double rel = fabs(fd - g[j]) / (1 + fabs(g[j]));
    if( rel > worst ) worst = rel;
  }
  return worst;
}

int main(void)
{
  static double X[N_ROWS * WID];
  const double beta[D_FEAT] = { 0.4, -1.2, 0.8, 0.3 };
  fly_db *db = NULL;
  fly_err err = {0};
  fly_model m;
  fly_bounds *bmap = NULL, *bfix = NULL;
  fly_buckets bk = {0};
  fly_tune_opts o;
  int64_t ds = 0, id_map = 0, id_fix = 0;
  fly_rng rng;
  fly_rc rc;

  printf("# seed %u\n", SEED);
  rc = fx_create_db("target", path, sizeof path, &db, &err);
  if( !TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg) ) return tap_done();
  if( !TAP_OK(fx_logistic_store(db, "t", X, N_ROWS, D_FEAT, beta, SEED, PAGE_ROWS, &ds),
              "store of %d rows", N_ROWS) ) goto out;
  fx_logistic_model(&m, D_FEAT, 2);
  fly_tune_opts_default(&o);
  rc = fly_tune_get(db, ds, &m, &o, &id_map, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(db, id_map, &m, &bmap, &err);
  o.tuning = "fixed";
  if( rc == FLY_OK ) rc = fly_tune_get(db, ds, &m, &o, &id_fix, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(db, id_fix, &m, &bfix, &err);
  if( rc == FLY_OK ) rc = fx_buckets(db, id_map, &m, &bk, &err);
  if( !TAP_OK(rc == FLY_OK, "tuned MAP and fixed bounds (%s)", err.msg) ) goto out;

  struct { const char *name; fly_zmode z; int fixed; int in_memory; } cases[] = {
    { "regular, rows in memory", FLY_Z_REGULAR, 0, 1 },
    { "regular, rows from pages", FLY_Z_REGULAR, 0, 0 },
    { "FlyMC gibbs, MAP bounds", FLY_Z_GIBBS, 0, 0 },
    { "FlyMC implicit, fixed bounds", FLY_Z_IMPLICIT, 1, 0 },
  };
  fly_rng_seed(&rng, SEED, 1);
  for(size_t k = 0; k < sizeof cases / sizeof cases[0]; k++){
    fly_chain_cfg cfg;
    fly_chain *ch = NULL;
    memset(&cfg, 0, sizeof cfg);
    cfg.db_path = path;
    cfg.dataset_id = ds;
    cfg.m = &m;
    cfg.bounds = cases[k].fixed ? bfix : bmap;
    cfg.buckets = cases[k].z == FLY_Z_GIBBS ? &bk : NULL;
    cfg.Xall = cases[k].in_memory ? X : NULL;
    cfg.N = N_ROWS;
    cfg.W = WID;
    cfg.z = cases[k].z;
    cfg.z_param = 0.1;
    cfg.scan_frac = 0.25;
    cfg.eps0 = 0.5;
    cfg.cache_bytes = 1 << 20;
    rc = fly_chain_open(&cfg, 0, SEED, &ch, &err);
    if( rc == FLY_OK ) rc = fly_chain_init(ch, &err);
    if( !TAP_OK(rc == FLY_OK, "%s: open and init (%s)", cases[k].name, err.msg) ){
      fly_chain_close(ch);
      continue;
    }
    /* Several z states: a few full iterations between checks. */
    double worst = 0, lp = 0;
    int64_t bright_max = 0;
    for(int rep = 0; rep < 6; rep++){
      fly_iter_stats s;
      for(int i = 0; i < 5; i++) fly_chain_step(ch, 1, &s, &err);
      if( s.n_bright > bright_max ) bright_max = s.n_bright;
      double th[D_FEAT];
      for(int j = 0; j < D_FEAT; j++)
        th[j] = fly_chain_theta(ch)[j] + 0.2 * fly_rng_normal(&rng);
      double e = fd_check(fly_chain_target(ch), th, &lp);
      if( !(e <= worst) ) worst = e;
    }
    TAP_OK(worst < 1e-5, "%s: gradient vs finite differences, max rel. error %.2e "
           "(up to %lld bright rows)", cases[k].name, worst, (long long)bright_max);
    fly_chain_close(ch);
  }
out:
  fly_buckets_free(&bk);
  fly_bounds_free(bmap);
  fly_bounds_free(bfix);
  fly_db_close(db);
  unlink(path);
  return tap_done();
}
