/*
 * determinism.c -- same seed => bit-identical draws (docs/design.md §10).
 *
 *   determinism [SEED]
 *
 * A small synthetic logistic data set (N = 2000, 3 features + intercept) is
 * ingested once; for --regular, --z gibbs, --z implicit and --z explicit
 * the run driver (fly_run_sample, 2 chains, seed SEED) runs twice into the
 * same database, in the same process (the chains run in parallel threads,
 * so thread timing must not matter, and the library keeps no state between
 * runs),
 * and the two draw tables must have the same number of rows and no row
 * (chain, iter, idx) whose values differ, compared in SQL (`!=` on REAL is
 * an exact comparison); likewise the per-iteration log joint and bright
 * counts.  A control run with SEED + 1 must differ, so the comparison can
 * fail.  TAP on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statutil.h"
#include "../unit/tap.h"
#include "util/rng.h"

#define N_ROWS 2000

static char sqlbuf[1024];
#define Q2(db, fmt, a, b) (snprintf(sqlbuf, sizeof sqlbuf, fmt, (long long)(a), \
                                    (long long)(b)), st_int64(db, sqlbuf, -1))

#define SQL_N \
  "SELECT (SELECT count(*) FROM draw WHERE run_id=%lld) - (SELECT count(*) FROM draw" \
  " WHERE run_id=%lld)"
#define SQL_DIFF \
  "SELECT count(*) FROM draw a JOIN draw b USING(chain, iter, idx)" \
  " WHERE a.run_id=%lld AND b.run_id=%lld AND a.value != b.value"
#define SQL_SAME \
  "SELECT count(*) FROM draw a JOIN draw b USING(chain, iter, idx)" \
  " WHERE a.run_id=%lld AND b.run_id=%lld AND a.value = b.value"
#define SQL_ITDIFF \
  "SELECT count(*) FROM iteration a JOIN iteration b USING(chain, iter)" \
  " WHERE a.run_id=%lld AND b.run_id=%lld AND (a.log_joint IS NOT b.log_joint" \
  " OR a.n_bright != b.n_bright OR a.accepted != b.accepted)"

int main(int argc, char **argv)
{
  char dir[512], csv[600], dbp[600];
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 4242u;
  static const st_mode modes[] = {
    { "regular",                          FLY_Z_REGULAR,  0,   0, FLY_K_MH,    0, 0 },
    { "gibbs",                            FLY_Z_GIBBS,    0,   0, FLY_K_MH,    0, 0 },
    { "implicit=0.2",                     FLY_Z_IMPLICIT, 0.2, 0, FLY_K_MH,    0, 0 },
    { "explicit=0.1 (fixed bounds)",      FLY_Z_EXPLICIT, 0.1, 1, FLY_K_MH,    0, 0 },
    { "mala, gibbs",                      FLY_Z_GIBBS,    0,   0, FLY_K_MALA,  0, 0 },
    { "slice, implicit=0.2",              FLY_Z_IMPLICIT, 0.2, 0, FLY_K_SLICE, 0, 0 },
    { "hmc, regular",                     FLY_Z_REGULAR,  0,   0, FLY_K_HMC,   0, 0 },
    { "hmc, explicit=0.1 (fixed bounds)", FLY_Z_EXPLICIT, 0.1, 1, FLY_K_HMC,   0, 0 },
    { "nuts, gibbs",                      FLY_Z_GIBBS,    0,   0, FLY_K_NUTS,  0, 0 },
  };
  fly_rng rng;

  printf("# seed %llu\n", (unsigned long long)seed);
  if( !TAP_OK(st_tmpdir("det", dir, sizeof dir), "scratch directory %s", dir) )
    return tap_done();
  snprintf(csv, sizeof csv, "%s/det.csv", dir);
  snprintf(dbp, sizeof dbp, "%s/det.db", dir);
  {
    FILE *f = fopen(csv, "w");
    fly_rng_seed(&rng, seed, 0);
    if( f ) fprintf(f, "a,b,c,y\n");
    for(int n = 0; n < N_ROWS; n++){
      double a = fly_rng_normal(&rng), b = fly_rng_normal(&rng), c = fly_rng_normal(&rng);
      double s = 0.3 + 0.8 * a - 0.5 * b + 0.2 * c;
      int y = fly_rng_uniform(&rng) < 1 / (1 + exp(-s));
      if( f ) fprintf(f, "%.17g,%.17g,%.17g,%d\n", a, b, c, y);
    }
    TAP_OK(f && fclose(f) == 0, "wrote %d rows to %s", N_ROWS, csv);
  }
  {
    if( !TAP_OK(st_ingest(csv, dbp), "ingest") ) goto out;
  }
  for(size_t md = 0; md < sizeof modes / sizeof modes[0]; md++){
    int64_t r1 = st_sample(dbp, &modes[md], 600, 300, 2, seed, 250);
    int64_t r2 = st_sample(dbp, &modes[md], 600, 300, 2, seed, 250);
    int64_t r3 = st_sample(dbp, &modes[md], 600, 300, 2, seed + 1, 250);
    if( !TAP_OK(r1 > 0 && r2 > r1 && r3 > r2, "%s: three runs (%lld, %lld, %lld)",
                modes[md].name, (long long)r1, (long long)r2, (long long)r3) ) continue;
    sqlite3 *db = st_open(dbp);
    int64_t n1 = Q2(db, "SELECT count(*) FROM draw WHERE run_id=%lld AND %lld=0", r1, 0);
    int64_t dn = Q2(db, SQL_N, r1, r2), diff = Q2(db, SQL_DIFF, r1, r2);
    int64_t same = Q2(db, SQL_SAME, r1, r2), itd = Q2(db, SQL_ITDIFF, r1, r2);
    int64_t it1 = Q2(db, "SELECT count(*) FROM iteration a JOIN iteration b USING(chain, iter)"
                     " WHERE a.run_id=%lld AND b.run_id=%lld", r1, r2);
    TAP_OK(n1 == 2 * 900 * 4 && dn == 0 && same == n1,
           "%s: runs %lld and %lld have %lld draws each (want %d), all matched",
           modes[md].name, (long long)r1, (long long)r2, (long long)n1, 2 * 900 * 4);
    TAP_OK(diff == 0, "%s: seed %llu twice: %lld draws differ (want 0)", modes[md].name,
           (unsigned long long)seed, (long long)diff);
    TAP_OK(it1 == 2 * 900 && itd == 0, "%s: seed %llu twice: %lld of %lld iteration rows "
           "differ (want 0 of %d)", modes[md].name, (unsigned long long)seed, (long long)itd,
           (long long)it1, 2 * 900);
    int64_t dctl = Q2(db, SQL_DIFF, r1, r3);
    TAP_OK(dctl > n1 / 2, "%s: control, seed %llu vs %llu: %lld of %lld draws differ",
           modes[md].name, (unsigned long long)seed, (unsigned long long)seed + 1,
           (long long)dctl, (long long)n1);
    sqlite3_close(db);
  }
out:
  if( tap_failed == 0 ) st_rmtree(dir);
  else printf("# kept %s for inspection\n", dir);
  return tap_done();
}
