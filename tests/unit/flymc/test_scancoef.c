/*
 * test_scancoef.c -- gibbs scans that keep every row's bound coefficients
 * give the chain that computes them afresh at every scan, bit for bit.
 *
 * A scan evaluates every row's bound; chain.c keeps the rows' coefficients
 * (model.h: coef), filled by the first complete scan, when N n_coef doubles
 * fit half of the cache the decoded data pages leave
 * (fly_chain_keeps_coef).  For logistic and softmax (K = 3, whose
 * coefficients depend on the row's class too) two chains with the same
 * seed run with scan_frac 0, so every z step is a scan: one with a 64 MiB
 * cache (coefficients kept), one with the smallest cache (not kept; pages
 * fetched afresh, which must not matter either).  After every iteration,
 * warm-up adaptation included, theta and the log joint must be
 * bit-identical and the bright counts equal, and at the end every row's z.  A kept coefficient that
 * differed from what eval computes (left unfilled, filled for other rows,
 * or refilled from the wrong page) changes gaps, and through the z draws
 * and the theta kernel the whole chain.  With kept coefficients a model
 * with a screen (model.h: scan_upper; logistic) evaluates only the dark
 * rows whose u falls below the screen's bound; the chain without kept
 * coefficients evaluates every row, so the comparison checks the screen
 * too, and that it ruled out most dark rows.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "flymc/chain.h"
#include "models/model.h"
#include "store/db.h"
#include "tap.h"
#include "store_fixture.h"
#include "logistic_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

#define N_ROWS    2000
#define D_FEAT    4          /* intercept + 3 */
#define WID       (D_FEAT + 1)
#define PAGE_ROWS 96         /* the last page holds 80 rows */
#define WARM      150
#define ITERS     150
#define SEED      4242u

/* MAP bounds and the bucket index of data set ds for model m. */
static fly_rc prepare(fly_db *db, int64_t ds, const fly_model *m, fly_bounds **bd,
                      fly_buckets *bk, fly_err *err)
{
  int64_t bs = -1;
  fly_rc rc = fx_map_bounds(db, ds, m, &bs, bd, err);
  fly_sketch none;          /* no sketch: zeroed by the build */
  if( rc == FLY_OK ) rc = fx_index(db, bs, ds, m, NULL, bk, &none, err);
  return rc;
}

/* Two chains, one keeping the coefficients and one not, stepped side by
 * side and compared after each iteration. */
static void compare(const char *path, const char *name, int64_t ds, const fly_model *m,
                    const fly_bounds *bd, const fly_buckets *bk, size_t W)
{
  fly_chain_cfg cfg[2];
  fly_chain *ch[2] = { NULL, NULL };
  fly_err err = {0};
  fly_rc rc = FLY_OK;
  for(int k = 0; k < 2; k++){
    memset(&cfg[k], 0, sizeof cfg[k]);
    cfg[k].db_path = path;
    cfg[k].dataset_id = ds;
    cfg[k].m = m;
    cfg[k].bounds = bd;
    cfg[k].buckets = bk;
    cfg[k].N = N_ROWS;
    cfg[k].W = W;
    cfg[k].z = FLY_Z_GIBBS;
    cfg[k].scan_frac = 0;
    cfg[k].kernel = FLY_K_MH;
    cfg[k].eps0 = 0.5;
    cfg[k].theta_steps = 2;
    cfg[k].n_warmup = WARM;
    cfg[k].cache_bytes = k == 0 ? (size_t)64 << 20 : 1;
    if( rc == FLY_OK ) rc = fly_chain_open(&cfg[k], 0, SEED, &ch[k], &err);
    if( rc == FLY_OK ) rc = fly_chain_init(ch[k], &err);
  }
  if( !TAP_OK(rc == FLY_OK, "%s: two chains open (%s)", name, err.msg) ) goto out;
  TAP_OK(fly_chain_keeps_coef(ch[0]) && !fly_chain_keeps_coef(ch[1]),
         "%s: a 64 MiB cache keeps the coefficients (%d), the smallest does not (%d)",
         name, fly_chain_keeps_coef(ch[0]), fly_chain_keeps_coef(ch[1]));

  size_t P = fly_chain_dim(ch[0]);
  int first_diff = -1, scans = 0;
  int64_t sum_bright = 0;
  for(int it = 0; it < WARM + ITERS && rc == FLY_OK; it++){
    fly_iter_stats s[2];
    for(int k = 0; k < 2 && rc == FLY_OK; k++)
      rc = fly_chain_step(ch[k], it < WARM, &s[k], &err);
    if( rc ) break;
    scans += s[0].scanned && s[1].scanned;
    sum_bright += s[0].n_bright;
    if( memcmp(fly_chain_theta(ch[0]), fly_chain_theta(ch[1]), P * sizeof(double)) != 0
        || s[0].n_bright != s[1].n_bright || memcmp(&s[0].lp, &s[1].lp, sizeof s[0].lp) != 0 )
      if( first_diff < 0 ) first_diff = it;
  }
  if( !TAP_OK(rc == FLY_OK, "%s: %d iterations (%s)", name, WARM + ITERS, err.msg) )
    goto out;
  TAP_OK(scans == WARM + ITERS, "%s: every z step was a scan in both chains (%d of %d)",
         name, scans, WARM + ITERS);
  TAP_OK(first_diff < 0, "%s: theta, log joint and bright counts bit-identical with and "
         "without kept coefficients through %d iterations (first difference: %d)", name,
         WARM + ITERS, first_diff);
  /* with a screen (logistic) the kept chain evaluates the likelihood of
   * few dark rows, most of them rows that stay dark (u >= p: the screen's
   * bound is not exact), and its draws are the same; the other chain
   * screens nothing */
  int64_t out[2], ev[2];
  for(int k = 0; k < 2; k++) fly_chain_screen_counts(ch[k], &out[k], &ev[k]);
  if( m->type->scan_upper )
    TAP_OK(out[0] > 10 * ev[0] && ev[0] > sum_bright && out[1] == 0 && ev[1] == 0,
           "%s: the screen ruled out %lld dark rows and let %lld through (%lld bright "
           "after the z steps; the chain without kept coefficients: %lld, %lld)",
           name, (long long)out[0], (long long)ev[0], (long long)sum_bright,
           (long long)out[1], (long long)ev[1]);
  else
    TAP_OK(out[0] == 0 && ev[0] == 0 && out[1] == 0 && ev[1] == 0,
           "%s: no screen, no row screened", name);
  int64_t zdiff = 0, bright = 0;
  for(int64_t n = 0; n < N_ROWS; n++){
    int a = fly_chain_is_bright(ch[0], n);
    zdiff += a != fly_chain_is_bright(ch[1], n);
    bright += a;
  }
  TAP_OK(zdiff == 0 && bright > 0, "%s: the same %lld bright rows at the end (%lld differ)",
         name, (long long)bright, (long long)zdiff);
out:
  for(int k = 0; k < 2; k++) fly_chain_close(ch[k]);
}

int main(void)
{
  static double X[N_ROWS * WID], Xs[N_ROWS * WID];
  const double beta[D_FEAT] = { -0.4, 1.2, -0.8, 0.5 };
  char path[256];
  fly_db *db = NULL;
  fly_err err = {0};
  int64_t ds = 0, dss = 0;
  fly_rc rc;

  printf("# seed %u, N = %d, D = %d, %d warm-up + %d iterations, every z step a scan\n",
         SEED, N_ROWS, D_FEAT, WARM, ITERS);
  rc = fx_create_db("scancoef", path, sizeof path, &db, &err);
  if( !TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg) ) return tap_done();

  /* logistic */
  {
    fly_model m;
    fly_bounds *bd = NULL;
    fly_buckets bk = {0};
    fx_logistic_model(&m, D_FEAT, 1);
    if( TAP_OK(fx_logistic_store(db, "a", X, N_ROWS, D_FEAT, beta, SEED, PAGE_ROWS, &ds),
               "logistic store of %d rows", N_ROWS) ){
      rc = prepare(db, ds, &m, &bd, &bk, &err);
      if( TAP_OK(rc == FLY_OK, "logistic: MAP bounds and buckets (%s)", err.msg) )
        compare(path, "logistic", ds, &m, bd, &bk, WID);
    }
    fly_buckets_free(&bk);
    fly_bounds_free(bd);
  }

  /* softmax, K = 3: a row's coefficients depend on its class */
  {
    fly_model m;
    fly_bounds *bd = NULL;
    fly_buckets bk = {0};
    fx_softmax_rows(Xs, N_ROWS, D_FEAT, beta, SEED);
    fx_model(&m, &fly_model_softmax, D_FEAT, 3, 2.5);
    if( TAP_OK(fx_store_rows(db, "s", Xs, N_ROWS, WID, PAGE_ROWS, &dss),
               "softmax store of %d rows", N_ROWS) ){
      rc = prepare(db, dss, &m, &bd, &bk, &err);
      if( TAP_OK(rc == FLY_OK, "softmax: MAP bounds and buckets (%s)", err.msg) )
        compare(path, "softmax", dss, &m, bd, &bk, WID);
    }
    fly_buckets_free(&bk);
    fly_bounds_free(bd);
  }

  fly_db_close(db);
  fx_unlink_db(path);
  return tap_done();
}
