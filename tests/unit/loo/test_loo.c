/*
 * test_loo.c -- PSIS-LOO of runs (src/loo/loo.c) through the library: a
 * generated logistic data set of 3000 rows, two runs (priors sd 1 and
 * 0.05), then
 *  - exact (m = -1) and m = N give the same stored result, every row;
 *  - subsampled results: m distinct rows, the same rows for both runs with
 *    one seed and other rows with another, within 4 subsampling SEs of the
 *    exact elpd_loo, se near the exact se, a result replacing the last;
 *  - max_draws thins to exactly that many draws;
 *  - compare: best first with 0, the exact difference equal to the
 *    difference of the sums, the subsampled one within 4 of its SEs;
 *  - bad requests: m > N, one run, a run named twice, no such run.
 * The numbers against R's loo package are tests/e2e/loo.sh's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flydb.h"
#include "loo/loo.h"
#include "tap.h"
#include "util/rng.h"

#define NROWS 3000

static int64_t count(fly_db *db, const char *sql)
{
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  if( fly_db_prepare(db, sql, &st, NULL) == FLY_OK && sqlite3_step(st) == SQLITE_ROW )
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

int main(void)
{
  char csv[64], path[64];
  snprintf(csv, sizeof csv, "/tmp/flydb_test_loo_%d.csv", (int)getpid());
  snprintf(path, sizeof path, "/tmp/flydb_test_loo_%d.db", (int)getpid());
  FILE *f = fopen(csv, "w");
  fly_rng rng;
  fly_rng_seed(&rng, 27, 0);
  fprintf(f, "x1,x2,y\n");
  for(int i = 0; i < NROWS; i++){
    double x1 = fly_rng_normal(&rng), x2 = fly_rng_normal(&rng);
    double p = 1 / (1 + exp(-(0.5 + x1 - 0.5 * x2)));
    fprintf(f, "%.6f,%.6f,%d\n", x1, x2, fly_rng_uniform(&rng) < p);
  }
  fclose(f);
  unlink(path);

  fly_err err = {0};
  fly_ingest_opts io;
  fly_ingest_opts_default(&io);
  fly_run_cfg cfg;
  fly_run_result rr[2];
  fly_db *db = NULL;
  int ok = fly_ingest(path, NULL, csv, &io, NULL, &err) == FLY_OK;
  for(int k = 0; k < 2 && ok; k++){
    fly_run_cfg_default(&cfg);
    cfg.iters = 300;
    cfg.seed = 5 + (uint64_t)k;
    cfg.seed_set = 1;
    cfg.model.prior_scale = k ? 0.05 : 1;
    ok = fly_run_sample(path, &cfg, NULL, &rr[k], &err) == FLY_OK;
  }
  ok = ok && fly_db_open(path, 0, &db, &err) == FLY_OK;
  if( !TAP_OK(ok, "data set and two runs: %s", err.msg) ) return tap_done();
  int64_t r1 = rr[0].run_id, r2 = rr[1].run_id;

  fly_loo_opts o;
  fly_loo_result ex, a, b;
  fly_loo_opts_default(&o);
  o.m = -1;
  int r = fly_loo_run(db, r1, &o, &ex, &err) == FLY_OK;
  TAP_OK(r && ex.exact && ex.m == NROWS && ex.N == NROWS &&
         ex.S == 600 && ex.subsampling_se == 0, "exact loo of run 1: %s", err.msg);
  TAP_OK(ex.k_good + ex.k_ok + ex.k_bad + ex.k_verybad == NROWS && ex.looic == -2 * ex.elpd_loo &&
         ex.elpd_loo < 0 && ex.p_loo > 1 && ex.p_loo < 6,
         "elpd_loo %.3f (se %.3f), p_loo %.3f, k bins add up", ex.elpd_loo, ex.se, ex.p_loo);
  o.m = NROWS;
  r = fly_loo_run(db, r1, &o, &a, &err) == FLY_OK;
  TAP_OK(r && a.exact && a.elpd_loo == ex.elpd_loo &&
         a.se == ex.se && a.p_loo == ex.p_loo, "m = N is the exact result");
  o.m = 0;
  r = fly_loo_run(db, r1, &o, &a, &err) == FLY_OK;
  TAP_OK(r && a.exact, "exact by default for N <= %d",
         FLY_LOO_EXACT_ROWS);
  TAP_OK(count(db, "SELECT count(*) FROM loo_point") == NROWS, "N points stored");

  o.m = 300;
  o.seed = 1;
  for(uint64_t s = 1; s <= 3; s++){
    o.seed = s;
    r = fly_loo_run(db, r1, &o, &a, &err) == FLY_OK;
    TAP_OK(r && !a.exact && a.m == 300 && a.seed == s &&
           fabs(a.elpd_loo - ex.elpd_loo) <= 4 * a.subsampling_se && a.subsampling_se > 0 &&
           fabs(a.se - ex.se) < 0.1 * ex.se,
           "seed %llu: elpd_loo %.3f (se %.3f, subsampling se %.3f), exact %.3f (se %.3f)",
           (unsigned long long)s, a.elpd_loo, a.se, a.subsampling_se, ex.elpd_loo, ex.se);
  }
  TAP_OK(count(db, "SELECT count(*) FROM loo") == 1 &&
         count(db, "SELECT count(DISTINCT row) FROM loo_point") == 300 &&
         count(db, "SELECT min(row) >= 0 AND max(row) < 3000 FROM loo_point") == 1,
         "a result replaces the last: 300 distinct rows");
  o.seed = 3;
  TAP_OK(fly_loo_run(db, r2, &o, &b, &err) == FLY_OK &&
         count(db, "SELECT count(*) FROM loo_point p JOIN loo_point q ON p.row = q.row "
                   "AND p.run_id < q.run_id") == 300, "the same seed samples the same rows");
  o.seed = 4;
  TAP_OK(fly_loo_run(db, r2, &o, &b, &err) == FLY_OK &&
         count(db, "SELECT count(*) FROM loo_point p JOIN loo_point q ON p.row = q.row "
                   "AND p.run_id < q.run_id") < 100, "another seed samples other rows");
  o.max_draws = 100;
  r = fly_loo_run(db, r2, &o, &b, &err) == FLY_OK;
  TAP_OK(r && b.S == 100, "--draws 100: S = %lld",
         (long long)b.S);

  fly_loo_diff d[2];
  int64_t ids[2] = { r2, r1 };
  fly_loo_result e2;
  fly_loo_opts_default(&o);
  o.m = -1;
  r = fly_loo_compare(db, ids, 2, &o, d, &err) == FLY_OK &&
      fly_loo_load(db, r2, &e2, &err) == FLY_OK;
  TAP_OK(r && d[0].run_id == r1 && d[0].elpd_diff == 0 && d[1].run_id == r2 &&
         fabs(d[1].elpd_diff - (e2.elpd_loo - ex.elpd_loo)) < 1e-9 * fabs(ex.elpd_loo) &&
         d[1].se_diff > 0 && d[1].subsampling_se_diff == 0,
         "exact compare: run %lld best, diff %.3f (se %.3f) = %.3f - %.3f", (long long)d[0].run_id,
         d[1].elpd_diff, d[1].se_diff, e2.elpd_loo, ex.elpd_loo);
  double exact_diff = d[1].elpd_diff;
  o.m = 500;
  o.seed = 9;
  r = fly_loo_compare(db, ids, 2, &o, d, &err) == FLY_OK;
  TAP_OK(r && d[0].run_id == r1 &&
         fabs(d[1].elpd_diff - exact_diff) <= 4 * d[1].subsampling_se_diff &&
         d[1].subsampling_se_diff > 0,
         "subsampled compare: diff %.3f (se %.3f, subsampling se %.3f), exact %.3f",
         d[1].elpd_diff, d[1].se_diff, d[1].subsampling_se_diff, exact_diff);

  int64_t before = count(db, "SELECT count(*) FROM loo_point");
  o.m = NROWS + 1;
  TAP_OK(fly_loo_run(db, r1, &o, &a, &err) == FLY_RANGE, "m > N: %s", err.msg);
  TAP_OK(fly_loo_compare(db, ids, 1, &o, d, &err) == FLY_MISUSE, "one run: %s", err.msg);
  int64_t twice[2] = { r1, r1 };
  o.m = 0;
  TAP_OK(fly_loo_compare(db, twice, 2, &o, d, &err) == FLY_MISUSE, "twice: %s", err.msg);
  TAP_OK(fly_loo_run(db, 99, &o, &a, &err) == FLY_RANGE, "no run: %s", err.msg);
  TAP_OK(count(db, "SELECT count(*) FROM loo_point") == before, "failures write nothing");

  fly_db_close(db);
  unlink(path);
  char side[80];
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  unlink(csv);
  return tap_done();
}
