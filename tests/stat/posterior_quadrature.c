/*
 * posterior_quadrature.c -- statistical exactness of every z-update mode
 * against the posterior computed by quadrature (docs/design.md §14).
 *
 *   posterior_quadrature [SEED]
 *
 * A 2-parameter logistic regression (intercept + one slope, N = 3000 rows,
 * x ~ N(0,1) rounded to multiples of 1/50 so that the likelihood groups
 * into a few hundred distinct (x, y) pairs) is generated from SEED and
 * written as CSV into a scratch directory.  The exact posterior mean and sd
 * of both coefficients under the default N(0, 1) prior are computed by
 * quadrature: the MAP and Laplace covariance C = L L' by Newton's method,
 * then theta = MAP + L u on a 401 x 401 grid of u over [-8, 8]^2 (so the
 * grid covers +-8 Laplace sds in every direction, spacing 0.04 sd), log
 * densities combined by log-sum-exp.  The quadrature is checked: the
 * log density on the edge of the grid is < max - 25, and the moments from
 * every other grid point (201 x 201) agree with the full grid to 1e-9 sd
 * (for a smooth density decaying like this the rule converges
 * geometrically, so the 401 grid is exact far below any MCSE).
 *
 * Then the library ingests the CSV and its run driver (fly_run_sample) runs
 * --regular, --z gibbs (its
 * default 32 theta updates per z update, and 1), implicit=0.1 (1 and 8
 * theta updates), explicit=0.2 (MAP bounds) and --bounds fixed with
 * implicit=0.1 and explicit=0.3 (2 chains each), then MALA, slice and HMC
 * under --regular, gibbs and fixed-bound implicit, and for each coefficient
 * the post-warm-up draws must satisfy
 *   |mean - truth| <= 4 mcse_mean  and  |sd - truth_sd| <= 4 mcse_sd,
 * the MCSEs estimated from the chains (statutil.h gives the definitions).
 * FLYDB_TEST_LEVEL=accurate runs 5 times longer.  TAP on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statutil.h"
#include "../unit/tap.h"
#include "util/rng.h"

#define N_ROWS   3000
#define G        401        /* grid points per axis (odd: the MAP is one) */
#define U_MAX    8.0        /* grid half-width in Laplace sds */
#define K_MCSE   4.0

typedef struct pair { double x; int y; double cnt; } pair;

static int cmp_pair(const void *a, const void *b)
{
  const pair *p = a, *q = b;
  if( p->x != q->x ) return p->x < q->x ? -1 : 1;
  return p->y - q->y;
}

static double logsig(double s)
{
  return s >= 0 ? -log1p(exp(-s)) : s - log1p(exp(s));
}

/* log posterior (prior N(0,1) per coefficient, constants dropped) over the
 * grouped data. */
static double logpost(const pair *p, size_t np, double a, double b)
{
  double lp = -0.5 * (a * a + b * b);
  for(size_t k = 0; k < np; k++){
    double s = a + b * p[k].x;
    lp += p[k].cnt * logsig(p[k].y ? s : -s);
  }
  return lp;
}

/* Newton's method for the MAP; H = -hessian at the MAP. */
static void newton(const pair *p, size_t np, double th[2], double H[4])
{
  th[0] = th[1] = 0;
  for(int it = 0; it < 50; it++){
    double g[2] = { -th[0], -th[1] };
    H[0] = 1; H[1] = 0; H[2] = 0; H[3] = 1;
    for(size_t k = 0; k < np; k++){
      double s = th[0] + th[1] * p[k].x, q = 1 / (1 + exp(-s));
      double r = (p[k].y - q) * p[k].cnt, w = q * (1 - q) * p[k].cnt;
      g[0] += r;
      g[1] += r * p[k].x;
      H[0] += w;
      H[1] += w * p[k].x;
      H[3] += w * p[k].x * p[k].x;
    }
    H[2] = H[1];
    double det = H[0] * H[3] - H[1] * H[2];
    th[0] += (H[3] * g[0] - H[1] * g[1]) / det;
    th[1] += (-H[2] * g[0] + H[0] * g[1]) / det;
  }
}

typedef struct truth { double mean[2], sd[2]; } truth;

/* Moments of the grid points with indices i, j = 0, step, 2 step, ... */
static void grid_moments(const double *lp, double lpmax, const double m[2],
                         const double L[3], double h, int step, truth *t)
{
  double w = 0, s[2] = {0, 0}, v[2] = {0, 0};
  t->mean[0] = t->mean[1] = 0;
  for(int pass = 0; pass < 2; pass++){
    for(int i = 0; i < G; i += step)
      for(int j = 0; j < G; j += step){
        double u0 = -U_MAX + h * i, u1 = -U_MAX + h * j;
        double th[2] = { m[0] + L[0] * u0, m[1] + L[1] * u0 + L[2] * u1 };
        double e = exp(lp[i * G + j] - lpmax);
        for(int k = 0; k < 2; k++){
          double d = th[k] - t->mean[k];
          if( pass == 0 ) s[k] += e * th[k];
          else v[k] += e * d * d;
        }
        if( pass == 0 ) w += e;
      }
    if( pass == 0 ){
      t->mean[0] = s[0] / w;
      t->mean[1] = s[1] / w;
    }
  }
  t->sd[0] = sqrt(v[0] / w);
  t->sd[1] = sqrt(v[1] / w);
}

static const st_mode modes[] = {
  { "regular",                     FLY_Z_REGULAR,  0,   0, FLY_K_MH,   0, 0 },
  { "gibbs (MAP bounds)",          FLY_Z_GIBBS,    0,   0, FLY_K_MH,   0, 0 },
  { "gibbs, 1 theta step",         FLY_Z_GIBBS,    0,   0, FLY_K_MH,   1, 0 },
  { "implicit=0.1 (MAP bounds)",   FLY_Z_IMPLICIT, 0.1, 0, FLY_K_MH,   0, 0 },
  { "implicit=0.1, 8 theta steps", FLY_Z_IMPLICIT, 0.1, 0, FLY_K_MH,   8, 0 },
  { "explicit=0.2 (MAP bounds)",   FLY_Z_EXPLICIT, 0.2, 0, FLY_K_MH,   0, 0 },
  { "implicit=0.1 (fixed bounds)", FLY_Z_IMPLICIT, 0.1, 1, FLY_K_MH,   0, 0 },
  { "explicit=0.3 (fixed bounds)", FLY_Z_EXPLICIT, 0.3, 1, FLY_K_MH,   0, 0 },
  { "mala, regular",               FLY_Z_REGULAR,  0,   0, FLY_K_MALA, 0, 0 },
  { "mala, gibbs",                 FLY_Z_GIBBS,    0,   0, FLY_K_MALA, 0, 0 },
  { "mala, implicit (fixed)",      FLY_Z_IMPLICIT, 0.1, 1, FLY_K_MALA, 0, 0 },
  { "slice, regular",              FLY_Z_REGULAR,  0,   0, FLY_K_SLICE, 0, 0 },
  { "slice, gibbs",                FLY_Z_GIBBS,    0,   0, FLY_K_SLICE, 0, 0 },
  { "slice, implicit (fixed)",     FLY_Z_IMPLICIT, 0.1, 1, FLY_K_SLICE, 0, 0 },
  { "hmc, regular",                FLY_Z_REGULAR,  0,   0, FLY_K_HMC,  0, 0 },
  { "hmc, gibbs",                  FLY_Z_GIBBS,    0,   0, FLY_K_HMC,  0, 0 },
  { "hmc, implicit (fixed)",       FLY_Z_IMPLICIT, 0.1, 1, FLY_K_HMC,  0, 0 },
  { "nuts, regular",               FLY_Z_REGULAR,  0,   0, FLY_K_NUTS, 0, 0 },
  { "nuts, gibbs",                 FLY_Z_GIBBS,    0,   0, FLY_K_NUTS, 0, 0 },
  { "nuts, implicit (fixed)",      FLY_Z_IMPLICIT, 0.1, 1, FLY_K_NUTS, 0, 0 },
};

int main(int argc, char **argv)
{
  char dir[512], csv[600], dbp[600];
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20250101u;
  int acc = st_accurate();
  long iters = acc ? 75000 : 15000, warmup = acc ? 2000 : 1000;
  pair *p = NULL;
  size_t np = 0;
  double *lp = NULL;
  fly_rng rng;

  printf("# seed %llu, level %s: %ld warm-up + %ld iterations x 2 chains per mode\n",
         (unsigned long long)seed, acc ? "accurate" : "default", warmup, iters);
  if( !TAP_OK(st_tmpdir("quad", dir, sizeof dir), "scratch directory %s", dir) )
    return tap_done();
  snprintf(csv, sizeof csv, "%s/quad.csv", dir);
  snprintf(dbp, sizeof dbp, "%s/quad.db", dir);

  /* ---- data ---- */
  {
    FILE *f = fopen(csv, "w");
    p = calloc(N_ROWS, sizeof *p);
    fly_rng_seed(&rng, seed, 0);
    if( f ) fprintf(f, "x,y\n");
    for(size_t n = 0; n < N_ROWS; n++){
      double x = round(50 * fly_rng_normal(&rng)) / 50;
      double s = -0.4 + 0.9 * x;
      int y = fly_rng_uniform(&rng) < 1 / (1 + exp(-s));
      p[n].x = x;
      p[n].y = y;
      p[n].cnt = 1;
      if( f ) fprintf(f, "%.17g,%d\n", x, y);
    }
    TAP_OK(f && fclose(f) == 0, "wrote %d rows to %s", N_ROWS, csv);
    qsort(p, N_ROWS, sizeof *p, cmp_pair);
    for(size_t n = 0; n < N_ROWS; n++){
      if( np && p[np - 1].x == p[n].x && p[np - 1].y == p[n].y ) p[np - 1].cnt++;
      else p[np++] = p[n];
    }
  }

  /* ---- quadrature ---- */
  truth t, t2;
  {
    double m[2], H[4], L[3], h = 2 * U_MAX / (G - 1), lpmax = -INFINITY, edge = -INFINITY;
    double t0 = st_now();
    newton(p, np, m, H);
    double det = H[0] * H[3] - H[1] * H[2];
    double C[3] = { H[3] / det, -H[1] / det, H[0] / det };   /* C00, C01, C11 */
    L[0] = sqrt(C[0]);
    L[1] = C[1] / L[0];
    L[2] = sqrt(C[2] - L[1] * L[1]);
    lp = malloc((size_t)G * G * sizeof *lp);
    for(int i = 0; i < G; i++)
      for(int j = 0; j < G; j++){
        double u0 = -U_MAX + h * i, u1 = -U_MAX + h * j;
        double v = logpost(p, np, m[0] + L[0] * u0, m[1] + L[1] * u0 + L[2] * u1);
        lp[i * G + j] = v;
        if( v > lpmax ) lpmax = v;
        if( (i == 0 || j == 0 || i == G - 1 || j == G - 1) && v > edge ) edge = v;
      }
    grid_moments(lp, lpmax, m, L, h, 1, &t);
    grid_moments(lp, lpmax, m, L, h, 2, &t2);
    printf("# %zu distinct (x, y) pairs; MAP (%.6f, %.6f), Laplace sd (%.6f, %.6f); "
           "quadrature in %.2f s\n", np, m[0], m[1], sqrt(C[0]), sqrt(C[2]), st_now() - t0);
    printf("# truth: mean (%.8f, %.8f), sd (%.8f, %.8f)\n", t.mean[0], t.mean[1],
           t.sd[0], t.sd[1]);
    TAP_OK(edge < lpmax - 25, "quadrature: grid edge negligible (max - edge = %.1f)",
           lpmax - edge);
    double dq = 0;
    for(int k = 0; k < 2; k++){
      dq = fmax(dq, fabs(t.mean[k] - t2.mean[k]) / t.sd[k]);
      dq = fmax(dq, fabs(t.sd[k] - t2.sd[k]) / t.sd[k]);
    }
    TAP_OK(dq < 1e-9, "quadrature converged: %d^2 vs %d^2 grid differ by %.2g sd",
           G, (G + 1) / 2, dq);
  }

  /* ---- flydb ---- */
  {
    if( !TAP_OK(st_ingest(csv, dbp), "ingest") ) goto out;
  }
  for(size_t md = 0; md < sizeof modes / sizeof modes[0]; md++){
    uint64_t rseed = seed + 1 + md;
    double t0 = st_now();
    int64_t run = st_sample(dbp, &modes[md], iters, warmup, 2, rseed, 0);
    double secs = st_now() - t0;
    if( !TAP_OK(run > 0, "%s: fly_run_sample seed %llu (%.1f s)", modes[md].name,
                (unsigned long long)rseed, secs) ) continue;
    sqlite3 *db = st_open(dbp);
    for(int idx = 0; idx < 2; idx++){
      double *x = NULL;
      size_t nc, ni;
      st_est e;
      if( !TAP_OK(db && st_draws(db, run, idx, &x, &nc, &ni) && st_estimate(x, nc, ni, &e),
                  "%s: draws of theta[%d] (run %lld)", modes[md].name, idx, (long long)run) ){
        free(x);
        continue;
      }
      double zm = (e.mean - t.mean[idx]) / e.mcse_mean;
      double zs = (e.sd - t.sd[idx]) / e.mcse_sd;
      printf("# %s theta[%d]: mean %.6f (truth %.6f, mcse %.2g), sd %.6f (truth %.6f, "
             "mcse %.2g), ess_bulk %.0f, rhat %.4f\n", modes[md].name, idx, e.mean,
             t.mean[idx], e.mcse_mean, e.sd, t.sd[idx], e.mcse_sd, e.ess_bulk, e.rhat);
      TAP_OK(fabs(zm) <= K_MCSE, "%s: theta[%d] mean: z = %+.2f (|z| <= %g)",
             modes[md].name, idx, zm, K_MCSE);
      TAP_OK(fabs(zs) <= K_MCSE, "%s: theta[%d] sd: z = %+.2f (|z| <= %g)",
             modes[md].name, idx, zs, K_MCSE);
      free(x);
    }
    sqlite3_close(db);
  }
out:
  free(p);
  free(lp);
  if( tap_failed == 0 ) st_rmtree(dir);
  else printf("# kept %s for inspection\n", dir);
  return tap_done();
}
