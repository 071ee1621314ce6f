/*
 * test_sketch.c -- the per-row sketches of gibbs thinning (flymc/sketch.h)
 * bound what they claim to bound, at D above the 21 coordinates they keep.
 *
 * Three stores (logistic; robust, nu = 4; softmax, K = 3) of N_ROWS rows with D = 30
 * (intercept + 29 features of unequal scales, so the whitened rows are not
 * isotropic), a few rows of all-zero features and one row 10^7 times larger
 * than the rest, are MAP-tuned; the bucket index and the sketches are built as flydb sample
 * builds them.  For thetas at Laplace distances 0.5 .. 8 from the MAP (and
 * along the axes of the metric), every row must satisfy, with t_n =
 * x_n'(th - th_map) in long double and gap_n from the model's eval:
 *   |t_n| <= rho_n                         (the sketch's claim; softmax:
 *                                           sqrt(sum_k t_nk^2), t_nk with
 *                                           the centred class rows d_k),
 *   gap_n <= fly_buckets_row_upper(rho_n)  (the bucket's box at rho),
 *   gap_n <= fly_model_gap_upper_rho(rho_n) (the row's own xi),
 * a row goes without a sketch (rho = +inf) exactly when its whitened
 * coordinates pass the codes' range (the huge row, for robust; logistic's
 * MAP curvature along it whitens it down), and rho must be much tighter
 * than Cauchy-Schwarz ||x_n||_P r: the median of rho_n / (||x_n||_P r)
 * below 0.6 (for whitened rows with isotropic directions E|t| / (||x|| r)
 * is about sqrt(2 / (pi D)) = 0.15; the 9 coordinates not kept add about
 * 9/30 = 0.3 and the 5-bit rounding about 0.05: 0.5 here, against 1 for
 * Cauchy-Schwarz), or the sketch saves little.  Two threads filling the
 * sketches in chunks of pages (as flydb sample builds them) give the same
 * bytes as one scan.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flymc/buckets.h"
#include "flymc/sketch.h"
#include "models/model.h"
#include "store/db.h"
#include "store/pages.h"
#include "tap.h"
#include "store_fixture.h"
#include "logistic_fixture.h"
#include "tune/tune.h"
#include "util/rng.h"

#define N_ROWS 3000
#define DIM    30
#define WID    (DIM + 1)
#define HUGE_ROW 17
#define MAXK     3             /* softmax classes */
#define MAXP     (MAXK * DIM)

static char path[256];

/* One filler of a parallel fill: its own connection, as flydb sample's
 * threads have, filling every other range of `span` pages from `first`,
 * by row into the sketch's slots, or (buf) into a buffer of the range's
 * codes first, then copied to slot N-1-n for row n. */
typedef struct filler {
  int64_t ds, first, span; int buf; fly_sketch *s; fly_rc rc; fly_err err;
} filler;

static void *fill_one(void *arg)
{
  filler *f = arg;
  fly_db *db = NULL;
  fly_pages *dp = NULL;
  uint8_t *out = NULL;
  const size_t B = FLY_SKETCH_BYTES;
  int64_t pr = f->s->page_rows, N = f->s->N;
  f->rc = fly_db_open(path, FLY_DB_READONLY, &db, &f->err);
  if( f->rc == FLY_OK ) f->rc = fly_pages_open(db, FLY_TABLE_DATA, f->ds, 0, &dp, &f->err);
  if( f->rc == FLY_OK && !(out = malloc((size_t)(f->span * pr) * B)) ) f->rc = FLY_NOMEM;
  for(int64_t r0 = f->first * pr; f->rc == FLY_OK && r0 < N; r0 += 2 * f->span * pr){
    int64_t n = N - r0 < f->span * pr ? N - r0 : f->span * pr;
    f->rc = fly_sketch_fill_rows(dp, f->s, r0, n, f->buf ? out : NULL, &f->err);
    for(int64_t i = 0; f->buf && f->rc == FLY_OK && i < n; i++)
      memcpy(f->s->code + (size_t)(N - 1 - (r0 + i)) * B, out + (size_t)i * B, B);
  }
  free(out);
  fly_pages_close(dp);
  fly_db_close(db);
  return NULL;
}

/* The sketches filled by two threads in alternate ranges of pages
 * (fly_sketch_fill_rows, as flydb sample's index build fills them) equal
 * fly_sketch_build's byte for byte, by row and through a buffer; a filler
 * on pages of another shape, or of a range that is not whole pages, is
 * refused. */
static void check_parallel(const char *label, fly_db *db, int64_t ds, int64_t other,
                           const fly_model *m, const fly_sketch *one)
{
  fly_sketch two = {0};
  fly_pages *dp = NULL, *op = NULL;
  fly_err err = {0};
  pthread_t t[2];
  size_t B = FLY_SKETCH_BYTES;
  fly_rc rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &dp, &err);
  if( rc == FLY_OK ) rc = fly_sketch_init(fly_pages_info_of(dp), m, one->L, &two, &err);
  if( !TAP_OK(rc == FLY_OK && two.n_pages > 16, "%s: sketches allocated for a parallel "
              "fill (%s)", label, err.msg) ) goto out;
  for(int rev = 0; rev < 2; rev++){    /* rev: through buffers, to reversed slots */
    filler f[2] = { { ds, 0, 3, rev, &two, FLY_OK, {0} }, { ds, 3, 3, rev, &two, FLY_OK, {0} } };
    int started[2] = { 0, 0 }, same = 1;
    memset(two.code, 0, (size_t)one->N * B);
    two.n_none = 0;
    for(int i = 0; i < 2; i++) started[i] = pthread_create(&t[i], NULL, fill_one, &f[i]) == 0;
    for(int i = 0; i < 2; i++){
      if( started[i] ) pthread_join(t[i], NULL);
      else fill_one(&f[i]);
    }
    for(int64_t n = 0; same && n < one->N; n++)
      same = !memcmp(two.code + (size_t)(rev ? one->N - 1 - n : n) * B, one->code + n * B, B);
    TAP_OK(f[0].rc == FLY_OK && f[1].rc == FLY_OK && same && two.n_none == one->n_none,
           "%s: two threads fill the same %lld x %zu bytes as one scan, %s (%lld pages; "
           "%s %s)", label, (long long)one->N, B, rev ? "through a buffer" : "by row",
           (long long)two.n_pages, f[0].err.msg, f[1].err.msg);
  }
  rc = fly_sketch_fill_rows(dp, &two, two.page_rows / 2, two.page_rows, NULL, &err);
  TAP_OK(rc == FLY_MISUSE && strstr(err.msg, "not whole pages"),
         "%s: a range that is not whole pages is refused (%s)", label, err.msg);
  rc = fly_pages_open(db, FLY_TABLE_DATA, other, 0, &op, &err);
  if( rc == FLY_OK ) rc = fly_sketch_fill(op, &two, &err);
  TAP_OK(rc == FLY_MISUSE && strstr(err.msg, "sketch: pages of"),
         "%s: pages of another shape are refused (%s)", label, err.msg);
out:
  fly_pages_close(op);
  fly_pages_close(dp);
  fly_sketch_free(&two);
}

/* The sketches placed in the bucket index's records, as flydb sample builds
 * them, are the same codes at each row's position as the row-ordered ones
 * (own), and the index's heads are unchanged by them. */
static void check_placed(const char *label, fly_db *db, int64_t bs, int64_t ds,
                         const fly_model *m, const double *L, const fly_sketch *own)
{
  fly_buckets plain = {0}, bk = {0};
  fly_sketch sk = {0};
  fly_err err = {0};
  fly_rc rc = fx_buckets(db, bs, m, &plain, &err);
  if( rc == FLY_OK ) rc = fx_index(db, bs, ds, m, L, &bk, &sk, &err);
  if( TAP_OK(rc == FLY_OK && bk.tail == FLY_SKETCH_BYTES && sk.n_none == own->n_none &&
             bk.nb == plain.nb && bk.stride == plain.stride + FLY_SKETCH_BYTES,
             "%s: sketches placed in the index's records (%s)", label, err.msg) ){
    int64_t bad_code = 0, bad_head = 0;
    for(int64_t i = 0; i < bk.N; i++){
      uint32_t n = fly_buckets_row(&bk, i);
      if( memcmp(fly_buckets_tail(&bk, i), own->code + (size_t)n * FLY_SKETCH_BYTES,
                 FLY_SKETCH_BYTES) ) bad_code++;
      if( memcmp(bk.rec + (size_t)i * bk.stride, plain.rec + (size_t)i * plain.stride,
                 plain.stride) ) bad_head++;
    }
    TAP_OK(bad_code == 0 && bad_head == 0, "%s: every position holds its row's code "
           "(%lld differ) after the same row id and xi as without (%lld differ)",
           label, (long long)bad_code, (long long)bad_head);
  }
  fly_sketch_free(&sk);
  fly_buckets_free(&bk);
  fly_buckets_free(&plain);
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Tune model m on data set ds (rows X), build its buckets and sketches and
 * check every row at every theta (see the file comment). */
static void check(const char *label, fly_db *db, int64_t ds, int64_t other, fly_model *m,
                  const double *X, fly_rng *rng)
{
  static double xn[N_ROWS], ratio[N_ROWS], logL[N_ROWS], logB[N_ROWS];
  static float xi[N_ROWS * MAXK];
  static uint32_t bucket[N_ROWS];
  const size_t P = m->type->n_params(m), nxi = m->type->n_xi(m), nd = P / DIM;
  fly_err err = {0};
  fly_bounds *bd = NULL;
  fly_buckets bk = {0};
  fly_sketch sk = {0};
  fly_pages *bp = NULL;
  double *work = NULL;
  int64_t id = 0;
  fly_tune_opts o;
  fly_rc rc;

  fly_tune_opts_default(&o);
  o.tuning = "map";
  rc = fly_tune_get(db, ds, m, &o, &id, &err);
  if( rc == FLY_OK ) rc = fly_bounds_load(db, id, m, &bd, &err);
  if( rc == FLY_OK ) rc = fly_pages_open(db, FLY_TABLE_BOUND, id, 0, &bp, &err);
  if( rc == FLY_OK ) rc = fly_buckets_build(bp, m, &bk, &err);
  if( rc == FLY_OK ) rc = fx_sketch(db, ds, m, bd->chol_key, &sk, &err);
  fly_sketch_at at = {0};
  if( rc == FLY_OK ) rc = fly_sketch_at_init(&sk, &at, &err);
  if( !TAP_OK(rc == FLY_OK, "%s: MAP bounds, buckets and sketches (%s)", label, err.msg) )
    goto out;
  check_parallel(label, db, ds, other, m, &sk);
  TAP_OK(fly_sketch_fits(m) && sk.k == FLY_SKETCH_DIMS && sk.D == DIM && sk.nd == nd,
         "%s: k = %zu of D = %zu coordinates kept, %zu direction(s)", label, sk.k,
         sk.D, sk.nd);
  /* only a row whose whitened coordinates pass 15 step[254] (or the norm
   * of whose coordinates not kept passes 2048 step[254]) goes without; the huge row does unless the MAP's curvature along it
   * whitens it down (logistic: sigma' > 0 there) */
  double ymax = 0, yres = 0;
  {
    double y[DIM];
    for(size_t i = 0; i < DIM; i++){
      double v = X[HUGE_ROW * WID + i];
      for(size_t j = 0; j < i; j++) v -= sk.L[i * DIM + j] * y[j];
      y[i] = v / sk.L[i * DIM + i];
      if( i < sk.k ) ymax = fmax(ymax, fabs(y[i])); else yres += y[i] * y[i];
    }
  }
  int want_none = ymax / 15 > sk.step[254] || sqrt(yres) / 2048 > sk.step[254];
  TAP_OK(sk.n_none == want_none, "%s: %lld rows without a sketch, want %d (the huge "
         "row's largest whitened coordinate %.3g, residual %.3g)", label,
         (long long)sk.n_none, want_none, ymax, sqrt(yres));
  /* every code says what sketch.h claims of it: |y_j - q_j s| <= s/2 for
   * the k coordinates kept, and E >= the norm of the error vector (those
   * errors, then the coordinates not kept), and not by more than the code's
   * step of 2^(1/8) (E = 0 only for no error), y = L^-1 x in long double */
  {
    int64_t bad_q = 0, bad_e = 0, loose_e = 0, coded = 0;
    for(size_t n = 0; n < N_ROWS; n++){
      long double y[DIM], e2 = 0;
      int q[FLY_SKETCH_DIMS];
      double sc, E;
      for(size_t i = 0; i < DIM; i++){
        long double v = X[n * WID + i];
        for(size_t j = 0; j < i; j++) v -= (long double)sk.L[i * DIM + j] * y[j];
        y[i] = v / sk.L[i * DIM + i];
      }
      if( !fly_sketch_decode(&sk, (int64_t)n, q, &sc, &E) ) continue;
      coded++;
      for(size_t j = 0; j < DIM; j++){
        long double d = j < sk.k ? y[j] - (long double)q[j] * sc : y[j];
        if( j < sk.k && !(fabsl(d) <= 0.5L * sc * (1 + 1e-12L)) ) bad_q++;
        e2 += d * d;
      }
      if( !(sqrtl(e2) <= (long double)E * (1 + 1e-12L)) ) bad_e++;
      if( !((long double)E <= sqrtl(e2) * 1.0905077326652577L * (1 + 1e-12L)) ) loose_e++;
    }
    TAP_OK(bad_q == 0 && bad_e == 0 && coded == N_ROWS - sk.n_none,
           "%s: %lld codes: %lld coordinates off by more than s/2, %lld error norms "
           "above E", label, (long long)coded, (long long)bad_q, (long long)bad_e);
    TAP_OK(loose_e == 0, "%s: E within a step of 2^(1/8) of the error norm: %lld "
           "codes above", label, (long long)loose_e);
  }
  for(size_t b = 0; b < bk.nb; b++)
    for(int64_t i = bk.start[b]; i < bk.start[b + 1]; i++){
      uint32_t n = fly_buckets_row(&bk, i);
      bucket[n] = (uint32_t)b;
      fly_buckets_xi(&bk, i, xi + n * nxi);
    }
  check_placed(label, db, id, ds, m, bd->chol_key, &sk);
  for(size_t n = 0; n < N_ROWS; n++){          /* ||L^-1 x||: forward substitution */
    double y[DIM], s2 = 0;
    for(size_t i = 0; i < DIM; i++){
      double v = X[n * WID + i];
      for(size_t j = 0; j < i; j++) v -= sk.L[i * DIM + j] * y[j];
      y[i] = v / sk.L[i * DIM + i];
      s2 += y[i] * y[i];
    }
    xn[n] = sqrt(s2);
  }

  work = calloc(m->type->work_len(m, N_ROWS), sizeof *work);
  int64_t bad_rho = 0, bad_row = 0, bad_own = 0, checked = 0, bad_all = 0, bad_all_row = 0;
  double *ball = calloc(bk.nb + 1, sizeof *ball), *bwork = calloc(2 * bk.nb + 1, sizeof *bwork);
  int huge_inf = 1;
  double worst_med = 0;
  static const double dist[] = { 0.5, 1, 2, 4, 8 };
  for(size_t di = 0; di < sizeof dist / sizeof dist[0]; di++){
    for(int rep = 0; rep < 6; rep++){
      double u[MAXP], th[MAXP], un = 0;
      for(size_t j = 0; j < P; j++){
        u[j] = rep < 4 ? fly_rng_normal(rng) : (j == (rep == 4 ? 0 : P - 1));
        un += u[j] * u[j];
      }
      for(size_t j = 0; j < P; j++) u[j] *= dist[di] / sqrt(un);
      for(size_t i = 0; i < P; i++){
        th[i] = bd->theta_map[i];
        for(size_t j = 0; j <= i; j++) th[i] += bd->chol_cov[i * P + j] * u[j];
      }
      double r = m->type->thin->radius(m, th, bd->theta_map, bd->key_prec, work);
      fly_sketch_prep(&sk, m, th, bd->theta_map, &at);
      m->type->eval(m, th, X, WID, xi, N_ROWS, logL, logB, work);
      /* every bucket's bound at once (vectorised boxes) against one at a
       * time, and against every row's gap */
      fly_buckets_gap_upper_all(&bk, m, r, ball, bwork);
      for(size_t b = 0; b < bk.nb; b++){
        double one = fly_buckets_gap_upper(&bk, b, m, r);
        if( !(fabs(ball[b] - one) <= 1e-13 * fmax(1.0, fabs(one))) &&
            !(isinf(one) && ball[b] == one) ) bad_all++;
      }
      for(size_t n = 0; n < N_ROWS; n++)
        if( logL[n] - logB[n] > ball[bucket[n]] ) bad_all_row++;
      size_t nr = 0;
      for(size_t n = 0; n < N_ROWS; n++){
        /* sqrt(sum_k (x'd_k)^2) in long double, d_k the centred class
         * rows (softmax) or th - th_map */
        long double t2 = 0, mean[DIM] = { 0 };
        for(size_t k = 0; k < nd; k++)
          for(int j = 0; j < DIM; j++)
            mean[j] += ((long double)th[k * DIM + j] - bd->theta_map[k * DIM + j]) / nd;
        for(size_t k = 0; k < nd; k++){
          long double t = 0;
          for(int j = 0; j < DIM; j++)
            t += (long double)X[n * WID + j]
               * ((long double)th[k * DIM + j] - bd->theta_map[k * DIM + j]
                  - (nd > 1 ? mean[j] : 0));
          t2 += t * t;
        }
        double rho = fly_sketch_rho(&sk, (int64_t)n, &at);
        double gap = logL[n] - logB[n];
        const float *xr = xi + n * nxi;
        checked++;
        if( n == HUGE_ROW && want_none ){ huge_inf &= isinf(rho); continue; }
        if( !(sqrtl(t2) <= rho) ) bad_rho++;
        if( gap > fly_buckets_row_upper(&bk, bucket[n], m, xr, rho) ) bad_row++;
        if( gap > fly_model_gap_upper_rho(m, xr, rho) ) bad_own++;
        if( xn[n] > 0 && r > 0 ) ratio[nr++] = rho / (xn[n] * r);
      }
      qsort(ratio, nr, sizeof *ratio, cmp_d);
      if( nr && ratio[nr / 2] > worst_med ) worst_med = ratio[nr / 2];
    }
  }
  TAP_OK(bad_rho == 0, "%s: sqrt(sum_k (x_n'd_k)^2) <= rho_n: %lld of %lld (row, "
         "theta) pairs fail", label, (long long)bad_rho, (long long)checked);
  TAP_OK(bad_row == 0, "%s: gap_n <= the bucket's bound at rho_n: %lld fail", label,
         (long long)bad_row);
  TAP_OK(bad_own == 0, "%s: gap_n <= the row's own bound at rho_n: %lld fail", label,
         (long long)bad_own);
  TAP_OK(huge_inf, "%s: a row without a sketch has rho = +inf", label);
  TAP_OK(bad_all == 0 && bad_all_row == 0, "%s: every bucket's bound at once is each "
         "one's to 1e-13 (%lld differ) and bounds every row's gap (%lld fail)", label,
         (long long)bad_all, (long long)bad_all_row);
  free(ball);
  free(bwork);
  TAP_OK(worst_med < 0.6, "%s: median rho_n / (||x_n||_P r) at most %.3f over the "
         "thetas (< 0.6: much tighter than Cauchy-Schwarz)", label, worst_med);
out:
  free(work);
  fly_sketch_at_free(&at);
  fly_pages_close(bp);
  fly_sketch_free(&sk);
  fly_buckets_free(&bk);
  fly_bounds_free(bd);
}

int main(void)
{
  static double X[N_ROWS * WID], Xr[N_ROWS * WID], Xs[N_ROWS * WID];
  fly_db *db = NULL;
  fly_err err = {0};
  fly_rng rng;
  int64_t ds = 0, dsr = 0, dss = 0, dsp = 0;
  fly_rc rc;

  rc = fx_create_db("sketch", path, sizeof path, &db, &err);
  if( !TAP_OK(rc == FLY_OK, "create %s (%s)", path, err.msg) ) return tap_done();

  /* logistic rows, and the same features with a Student-t (nu = 4) target
   * and with one of 3 classes (Gumbel-max of 0, s and a second score) */
  fly_rng_seed(&rng, 4242, 0);
  for(size_t n = 0; n < N_ROWS; n++){
    double *x = X + n * WID, s = -0.2;
    x[0] = 1;
    for(size_t j = 1; j < DIM; j++){
      x[j] = (n % 97 == 5) ? 0 : fly_rng_normal(&rng) * (0.2 + 0.1 * (double)j);
      s += x[j] * (j % 3 == 0 ? 0.3 : -0.1) / (0.2 + 0.1 * (double)j);
    }
    if( n == HUGE_ROW ) for(size_t j = 1; j < DIM; j++) x[j] *= 1e7;
    x[DIM] = fly_rng_uniform(&rng) < 1 / (1 + exp(-s)) ? 1 : 0;
    memcpy(Xr + n * WID, x, DIM * sizeof *x);
    double g = 0;
    for(int k = 0; k < 4; k++){ double e = fly_rng_normal(&rng); g += e * e; }
    Xr[n * WID + DIM] = (n == HUGE_ROW ? 0 : s) + fly_rng_normal(&rng) / sqrt(g / 4);
    memcpy(Xs + n * WID, x, DIM * sizeof *x);
    double sc[3] = { 0, s, 0.4 };
    for(size_t j = 1; j < DIM; j++) sc[2] += x[j] * (j % 2 ? 0.2 : -0.15) / (0.2 + 0.1 * (double)j);
    Xs[n * WID + DIM] = fx_softmax_class(&rng, sc, 3);
  }
  if( !TAP_OK(fx_store_rows(db, "sk", X, N_ROWS, WID, 128, &ds) &&
              fx_store_rows(db, "skr", Xr, N_ROWS, WID, 128, &dsr) &&
              fx_store_rows(db, "sks", Xs, N_ROWS, WID, 128, &dss) &&
              fx_store_rows(db, "skp", X, N_ROWS, WID, 100, &dsp),
              "stores of %d rows, D = %d", N_ROWS, DIM) ) goto out;

  fly_model m;
  fx_logistic_model(&m, DIM, 10);
  check("logistic", db, ds, dsp, &m, X, &rng);
  m.type = &fly_model_robust;
  m.nu = 4;
  m.scale = 1;
  check("robust (nu = 4)", db, dsr, dsp, &m, Xr, &rng);
  m.type = &fly_model_softmax;
  m.K = MAXK;
  m.prior_scale = 5;
  check("softmax (K = 3)", db, dss, dsp, &m, Xs, &rng);

out:
  fly_db_close(db);
  fx_unlink_db(path);
  return tap_done();
}
