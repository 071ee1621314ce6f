/*
 * modes_agree.c -- every z-update mode agrees with --regular on a
 * 21-parameter problem (docs/design.md §14).
 *
 *   modes_agree [SEED]
 *
 * Synthetic logistic regression: N = 5000 rows, D = 20 features
 * x_j ~ N(0, 1) plus the intercept, coefficients ~ N(0, 0.3^2), intercept
 * 0.2, generated from SEED.  The library's run driver (fly_run_sample) runs
 * --regular and the FlyMC
 * modes gibbs, implicit=0.1, explicit=0.2 (MAP bounds), implicit=0.1 and
 * explicit=0.3 (fixed bounds), and the gradient kernels NUTS (regular and
 * gibbs), MALA and HMC (regular), 2 chains each; for every mode and every one
 * of the 21 coefficients
 *   |mean_mode - mean_regular| <= 4 sqrt(mcse_mode^2 + mcse_regular^2)
 * with mcse_mean estimated from each run's chains (statutil.h).  The sds
 * are compared the same way for information only (printed, not tested).
 * Random-walk Metropolis mixes slowly in 21 dimensions (ESS ~ 1% of the
 * draws), hence 20000 iterations per chain; FLYDB_TEST_LEVEL=accurate runs
 * 100000.  TAP on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statutil.h"
#include "../unit/tap.h"
#include "util/rng.h"

#define N_ROWS 5000
#define D_FEAT 20
#define P      (D_FEAT + 1)
#define K_MCSE 4.0

static const st_mode modes[] = {
  { "regular",                     FLY_Z_REGULAR,  0,   0, FLY_K_MH, 0, 0 },
  { "gibbs (MAP bounds)",          FLY_Z_GIBBS,    0,   0, FLY_K_MH, 0, 0 },
  { "implicit=0.1 (MAP bounds)",   FLY_Z_IMPLICIT, 0.1, 0, FLY_K_MH, 0, 0 },
  { "explicit=0.2 (MAP bounds)",   FLY_Z_EXPLICIT, 0.2, 0, FLY_K_MH, 0, 0 },
  { "implicit=0.1 (fixed bounds)", FLY_Z_IMPLICIT, 0.1, 1, FLY_K_MH, 0, 0 },
  { "explicit=0.3 (fixed bounds)", FLY_Z_EXPLICIT, 0.3, 1, FLY_K_MH, 0, 0 },
  /* the gradient kernels against the same reference: NUTS mixes in a few
   * leapfrogs (ESS near one a draw), MALA and HMC need no more than MH */
  { "regular nuts",                FLY_Z_REGULAR,  0,   0, FLY_K_NUTS, 0, 1000 },
  { "gibbs nuts (MAP bounds)",     FLY_Z_GIBBS,    0,   0, FLY_K_NUTS, 0, 2000 },
  { "regular mala",                FLY_Z_REGULAR,  0,   0, FLY_K_MALA, 0, 8000 },
  { "regular hmc",                 FLY_Z_REGULAR,  0,   0, FLY_K_HMC,  0, 1000 },
};
#define N_MODES (sizeof modes / sizeof modes[0])

int main(int argc, char **argv)
{
  char dir[512], csv[600], dbp[600];
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20250202u;
  int acc = st_accurate();
  long iters = acc ? 100000 : 20000, warmup = acc ? 5000 : 2000;
  static st_est est[N_MODES][P];
  int have[N_MODES] = {0};
  fly_rng rng;

  printf("# seed %llu, level %s: %ld warm-up + %ld iterations x 2 chains per mode\n",
         (unsigned long long)seed, acc ? "accurate" : "default", warmup, iters);
  if( !TAP_OK(st_tmpdir("agree", dir, sizeof dir), "scratch directory %s", dir) )
    return tap_done();
  snprintf(csv, sizeof csv, "%s/agree.csv", dir);
  snprintf(dbp, sizeof dbp, "%s/agree.db", dir);

  {
    FILE *f = fopen(csv, "w");
    double beta[D_FEAT], x[D_FEAT];
    fly_rng_seed(&rng, seed, 0);
    for(int j = 0; j < D_FEAT; j++) beta[j] = 0.3 * fly_rng_normal(&rng);
    if( f ){
      for(int j = 0; j < D_FEAT; j++) fprintf(f, "x%d,", j + 1);
      fprintf(f, "y\n");
    }
    for(int n = 0; n < N_ROWS; n++){
      double s = 0.2;
      for(int j = 0; j < D_FEAT; j++){
        x[j] = fly_rng_normal(&rng);
        s += beta[j] * x[j];
      }
      int y = fly_rng_uniform(&rng) < 1 / (1 + exp(-s));
      if( f ){
        for(int j = 0; j < D_FEAT; j++) fprintf(f, "%.17g,", x[j]);
        fprintf(f, "%d\n", y);
      }
    }
    TAP_OK(f && fclose(f) == 0, "wrote %d rows x %d features to %s", N_ROWS, D_FEAT, csv);
  }
  {
    if( !TAP_OK(st_ingest(csv, dbp), "ingest") ) goto out;
  }

  for(size_t md = 0; md < N_MODES; md++){
    uint64_t rseed = seed + 1 + md;
    double t0 = st_now();
    int64_t run = st_sample(dbp, &modes[md], iters, warmup, 2, rseed, 0);
    double secs = st_now() - t0;
    if( !TAP_OK(run > 0, "%s: fly_run_sample seed %llu (%.1f s)", modes[md].name,
                (unsigned long long)rseed, secs) ) continue;
    sqlite3 *db = st_open(dbp);
    int ok = db != NULL;
    double min_ess = INFINITY, max_rhat = 0;
    for(int idx = 0; idx < P && ok; idx++){
      double *x = NULL;
      size_t nc, ni;
      ok = st_draws(db, run, idx, &x, &nc, &ni) && st_estimate(x, nc, ni, &est[md][idx]);
      min_ess = fmin(min_ess, est[md][idx].ess_bulk);
      max_rhat = fmax(max_rhat, est[md][idx].rhat);
      free(x);
    }
    sqlite3_close(db);
    have[md] = TAP_OK(ok, "%s: estimates of %d coefficients (run %lld, min ess_bulk %.0f, "
                      "max rhat %.4f)", modes[md].name, P, (long long)run, min_ess, max_rhat);
  }

  if( have[0] )
    for(size_t md = 1; md < N_MODES; md++){
      if( !have[md] ) continue;
      double worst_sd = 0;
      int worst_sd_idx = 0;
      for(int idx = 0; idx < P; idx++){
        const st_est *a = &est[md][idx], *r = &est[0][idx];
        double z = (a->mean - r->mean) / hypot(a->mcse_mean, r->mcse_mean);
        double zs = (a->sd - r->sd) / hypot(a->mcse_sd, r->mcse_sd);
        if( fabs(zs) > fabs(worst_sd) ){ worst_sd = zs; worst_sd_idx = idx; }
        if( !TAP_OK(fabs(z) <= K_MCSE, "%s vs regular: theta[%d] mean z = %+.2f (|z| <= %g)",
                    modes[md].name, idx, z, K_MCSE) )
          printf("#   mode %.6f (mcse %.2g, ess %.0f), regular %.6f (mcse %.2g, ess %.0f)\n",
                 a->mean, a->mcse_mean, a->ess_bulk, r->mean, r->mcse_mean, r->ess_bulk);
      }
      printf("# %s vs regular: largest sd z-score %+.2f at theta[%d] (not tested)\n",
             modes[md].name, worst_sd, worst_sd_idx);
    }
out:
  if( tap_failed == 0 ) st_rmtree(dir);
  else printf("# kept %s for inspection\n", dir);
  return tap_done();
}
