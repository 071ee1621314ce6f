/*
 * test_scancoef.c -- gibbs scans give the same chain bit for bit whatever
 * they keep of every row: nothing, its bound coefficients, or those and an
 * f32 copy of the row for the model's screen.
 *
 * A scan evaluates every row's bound; chain.c keeps the rows' coefficients
 * (model.h: fly_model_coef), filled by the first complete scan, when
 * N coef->n doubles fit half of the cache the decoded data pages leave, and
 * with a screen (model.h: fly_model_coef.scan; logistic) an f32 copy of
 * every row when that fits too (fly_chain_keeps_coef 0, 1, 2).  With the coefficients a scan
 * evaluates only the dark rows whose u falls below the screen's bound,
 * computed from each page's rows rounded to f32 as it is scanned (1) or
 * from the kept copy a block at a time, reading only those rows (2).
 * For logistic and softmax (K = 3, whose coefficients
 * depend on the row's class too, and which has no screen) three chains
 * with the same seed run with scan_frac 0, so every z step is a scan, with
 * caches that keep 2, 1 and 0 (softmax: 1, 0, 0).  After every iteration,
 * warm-up adaptation included, theta and the log joint must be
 * bit-identical and the bright counts equal, and at the end every row's z.
 * A kept coefficient that differed from what eval computes (left unfilled,
 * filled for other rows, or refilled from the wrong page), a survivor
 * evaluated with another row's coefficients, or a screen that ruled out a
 * row it should not have changes gaps, and through the z draws and the
 * theta kernel the whole chain.  N = 2000 makes two blocks of the screen.
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

/* Three chains stepped side by side and compared after each iteration:
 * a 64 MiB cache keeps the coefficients and, with a screen, the f32 rows
 * (fly_chain_keeps_coef 2); a cache with room for the coefficients of a
 * model with 3 a row but not for the rows as well (1); the smallest cache
 * keeps nothing (0).  keep[] is what each should keep. */
#define NCH 3
static void compare(const char *path, const char *name, int64_t ds, const fly_model *m,
                    const fly_bounds *bd, const fly_buckets *bk, size_t W,
                    const int keep[NCH])
{
  /* data pages: 21 of 96 rows x W values; room = cache - pages; logistic:
   * coefficients 2000 x 24 bytes, rows 2000 x (W + 1) x 4 bytes */
  const size_t pages = (size_t)((N_ROWS + PAGE_ROWS - 1) / PAGE_ROWS) * PAGE_ROWS * W * 8;
  const size_t cache[NCH] = { (size_t)64 << 20, pages + 150000, 1 };
  fly_chain_cfg cfg[NCH];
  fly_chain *ch[NCH] = { NULL, NULL, NULL };
  fly_err err = {0};
  fly_rc rc = FLY_OK;
  for(int k = 0; k < NCH; k++){
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
    cfg[k].cache_bytes = cache[k];
    if( rc == FLY_OK ) rc = fly_chain_open(&cfg[k], 0, SEED, &ch[k], &err);
    if( rc == FLY_OK ) rc = fly_chain_init(ch[k], &err);
  }
  if( !TAP_OK(rc == FLY_OK, "%s: three chains open (%s)", name, err.msg) ) goto out;
  TAP_OK(fly_chain_keeps_coef(ch[0]) == keep[0] && fly_chain_keeps_coef(ch[1]) == keep[1]
         && fly_chain_keeps_coef(ch[2]) == keep[2],
         "%s: the caches keep %d, %d, %d (expected %d, %d, %d)", name,
         fly_chain_keeps_coef(ch[0]), fly_chain_keeps_coef(ch[1]),
         fly_chain_keeps_coef(ch[2]), keep[0], keep[1], keep[2]);

  size_t P = fly_chain_dim(ch[0]);
  int first_diff = -1, scans = 0;
  int64_t sum_bright = 0;
  for(int it = 0; it < WARM + ITERS && rc == FLY_OK; it++){
    fly_iter_stats s[NCH];
    int all = 1;
    for(int k = 0; k < NCH && rc == FLY_OK; k++){
      rc = fly_chain_step(ch[k], it < WARM, &s[k], &err);
      all &= s[k].scanned;
    }
    if( rc ) break;
    scans += all;
    sum_bright += s[0].n_bright;
    for(int k = 1; k < NCH; k++)
      if( memcmp(fly_chain_theta(ch[0]), fly_chain_theta(ch[k]), P * sizeof(double)) != 0
          || s[0].n_bright != s[k].n_bright || memcmp(&s[0].lp, &s[k].lp, sizeof s[0].lp) != 0 )
        if( first_diff < 0 ) first_diff = it;
  }
  if( !TAP_OK(rc == FLY_OK, "%s: %d iterations (%s)", name, WARM + ITERS, err.msg) )
    goto out;
  TAP_OK(scans == WARM + ITERS, "%s: every z step was a scan in every chain (%d of %d)",
         name, scans, WARM + ITERS);
  TAP_OK(first_diff < 0, "%s: theta, log joint and bright counts bit-identical whatever "
         "the chains keep, through %d iterations (first difference: %d)", name,
         WARM + ITERS, first_diff);
  /* with a screen and kept coefficients (keep 1: each page's rows rounded
   * to f32 as it is scanned; keep 2: from the kept copy, reading only the
   * survivors) a chain evaluates few dark rows, most of them rows that
   * stay dark (u >= p: the screen's bound is not exact), the same ones
   * either way; without coefficients it screens nothing */
  int64_t out[NCH], ev[NCH], unscreened = 0;
  for(int k = 0; k < NCH; k++){
    fly_chain_screen_counts(ch[k], &out[k], &ev[k]);
    if( !(m->type->coef->scan && keep[k] > 0) ) unscreened += out[k] + ev[k];
  }
  if( m->type->coef->scan )
    TAP_OK(out[0] > 10 * ev[0] && ev[0] > sum_bright && out[1] == out[0] &&
           ev[1] == ev[0] && unscreened == 0,
           "%s: the screen ruled out %lld dark rows and let %lld through (%lld bright "
           "after the z steps; %lld and %lld keeping only the coefficients; without "
           "them: %lld)", name, (long long)out[0], (long long)ev[0],
           (long long)sum_bright, (long long)out[1], (long long)ev[1],
           (long long)unscreened);
  else
    TAP_OK(unscreened == 0, "%s: no screen, no row screened", name);
  int64_t zdiff = 0, bright = 0;
  for(int64_t n = 0; n < N_ROWS; n++){
    int a = fly_chain_is_bright(ch[0], n);
    for(int k = 1; k < NCH; k++) zdiff += a != fly_chain_is_bright(ch[k], n);
    bright += a;
  }
  TAP_OK(zdiff == 0 && bright > 0, "%s: the same %lld bright rows at the end (%lld differ)",
         name, (long long)bright, (long long)zdiff);
out:
  for(int k = 0; k < NCH; k++) fly_chain_close(ch[k]);
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
        compare(path, "logistic", ds, &m, bd, &bk, WID, (const int[NCH]){ 2, 1, 0 });
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
        compare(path, "softmax", dss, &m, bd, &bk, WID, (const int[NCH]){ 1, 0, 0 });
    }
    fly_buckets_free(&bk);
    fly_bounds_free(bd);
  }

  fly_db_close(db);
  fx_unlink_db(path);
  return tap_done();
}
