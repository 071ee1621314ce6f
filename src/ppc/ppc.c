/*
 * ppc.c -- posterior predictive checks of a run, stored (ppc.h).
 *
 * One pass over the rows in blocks.  A classifier's block of n rows is
 * multiplied by the M draws at once (one dgemm: n x D times D x M K) into
 * the linear predictors, turned into probabilities row by row; each row's
 * mean over the draws picks its bin, then the row's M replicated targets
 * (M uniforms from one stream, in row order) are counted into the bin's M
 * replicated counts.  Per-bin sums are long double, so N = 10^8 rows lose
 * nothing.  The bands are the type-7 quantiles of the M replicated
 * frequencies, computed at the end from the counts.
 *
 * A residual check's table needs only the posterior mean bbar: each row's
 * residual is located among the t quantiles of the PIT bin edges and of
 * a fine grid of FINE cells by binary search (no t distribution function
 * is evaluated per row), and the grid's counts give the QQ points.  Its
 * bands replicate, as a classifier's do: the block's M linear predictors
 * per row by one dgemm, then per row and draw one Student-t variate
 * (Bailey's polar method, uniforms from one stream in row and draw order)
 * whose replicated residual is binned by the same binary search into the
 * bin's M replicated counts.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ppc/ppc.h"
#include "predict/score.h"
#include "run/posterior.h"
#include "stats/stats.h"
#include "util/mem.h"
#include "util/rng.h"

#define FINE      1000           /* cells of the residuals' QQ grid */
#define BLOCK_MAX 256            /* rows a block */
#define PRED_MAX  65536          /* predictions (rows x draws x classes) a block */
#define STR(x)    #x
#define XSTR(x)   STR(x)

static const double tail_level[FLY_PPC_TAILS] = { 0.10, 0.05, 0.01 };

void fly_ppc_opts_default(fly_ppc_opts *o)
{
  o->bins = 10;
  o->max_draws = 200;
  o->seed = 1;
  o->level = 0.9;
}

const char *fly_ppc_part_name(fly_ppc_part p)
{
  static const char *const name[] = { "calibration", "pit", "qq", "tail" };
  return (unsigned)p < 4 ? name[p] : "?";
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A Student-t(nu) variate by Bailey's polar method (Math. Comp. 62, 1994):
 * (U, V) uniform in the unit disc, W = U^2 + V^2, then U sqrt(nu (W^(-2/nu)
 * - 1) / W) is t_nu exactly.  Two uniforms an attempt, pi/4 accepted. */
static double rt(fly_rng *rng, double nu)
{
  for(;;){
    double u = 2 * fly_rng_uniform(rng) - 1, v = 2 * fly_rng_uniform(rng) - 1;
    double w = u * u + v * v;
    if( w > 0 && w <= 1 ) return u * sqrt(nu * (pow(w, -2 / nu) - 1) / w);
  }
}

/* Number of the n sorted edges e[] that are <= v: v's cell 0..n. */
static size_t cell_of(const double *e, size_t n, double v)
{
  size_t lo = 0, hi = n;
  while( lo < hi ){
    size_t mid = (lo + hi) / 2;
    if( e[mid] <= v ) lo = mid + 1; else hi = mid;
  }
  return lo;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* R's type-7 quantile of the sorted s[0..n). */
static double quantile7(const double *s, size_t n, double p)
{
  double h = (double)(n - 1) * p;
  size_t j = (size_t)floor(h);
  if( j + 1 >= n ) return s[n - 1];
  return s[j] + (h - (double)j) * (s[j + 1] - s[j]);
}

/* ---- the pass ------------------------------------------------------------ */

typedef struct acc {            /* a classifier check's sums */
  size_t       K, B, M;         /* classes checked, bins, draws */
  int64_t     *n;               /* K x B rows */
  long double *sp, *sy;         /* K x B: sum of pbar, of [y = k] */
  int64_t     *rep;             /* K x B x M replicated counts */
  int64_t      hits;            /* rows whose predicted class is y */
} acc;

typedef struct racc {           /* a residual check's counts */
  size_t   B, M;                /* PIT bins, draws */
  int64_t *rep;                 /* B x M replicated counts of the PIT bins */
  double   pit_e[FLY_PPC_MAX_BINS];
  double   fine_e[FINE - 1];
  double   tail_q[FLY_PPC_TAILS];
  int64_t  pit[FLY_PPC_MAX_BINS], fine[FINE], tail[FLY_PPC_TAILS];
  double   rmin, rmax;
} racc;

/* Classes a classifier check counts: 1 for logistic (the event y = 1). */
static size_t classes_of(const fly_model *m)
{
  return m->type == &fly_model_softmax ? m->K : 1;
}

static size_t bin_of(double p, size_t B)
{
  double b = floor(p * (double)B);
  return b < 0 ? 0 : b >= (double)B ? B - 1 : (size_t)b;
}

/* The rows of one block: n rows X, E (n x M Kp) scratch for the linear
 * predictors, then the probabilities in place.  u: M scratch. */
static fly_rc classify_block(const fly_posterior *p, acc *a, const double *X, size_t W,
                             size_t n, double *E, double *pbar, double *u, fly_rng *rng,
                             int64_t row0, fly_err *err)
{
  const fly_model *m = &p->m;
  size_t D = m->D, M = a->M, Kp = m->type == &fly_model_softmax ? m->K : 1;
  size_t K = a->K, B = a->B;
  /* E[i, s Kp + k] = x_i' th_{s,k}: the draws are M Kp rows of D */
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)(M * Kp), (int)D, 1.0,
              X, (int)W, p->th, (int)D, 0.0, E, (int)(M * Kp));
  for(size_t i = 0; i < n; i++){
    double *e = E + i * M * Kp, y = X[i * W + m->tcol];
    for(size_t k = 0; k < K; k++) pbar[k] = 0;
    if( Kp == 1 ){
      for(size_t s = 0; s < M; s++){
        e[s] = 1 / (1 + exp(-e[s]));
        pbar[0] += e[s];
      }
    }else{
      for(size_t s = 0; s < M; s++){
        double *v = e + s * Kp, mx = v[0], z = 0;
        for(size_t k = 1; k < Kp; k++) if( v[k] > mx ) mx = v[k];
        for(size_t k = 0; k < Kp; k++) z += v[k] = exp(v[k] - mx);
        for(size_t k = 0; k < Kp; k++){
          v[k] /= z;
          pbar[k] += v[k];
        }
      }
    }
    size_t best = 0;
    for(size_t k = 0; k < K; k++){
      pbar[k] /= (double)M;
      if( !isfinite(pbar[k]) )
        return fly_fail(err, FLY_NUMERIC, "run %lld: predicted probability of data row %lld "
                        "is %g", (long long)p->run_id, (long long)(row0 + (int64_t)i) + 1,
                        pbar[k]);
      if( pbar[k] > pbar[best] ) best = k;
      size_t b = bin_of(pbar[k], B), kb = k * B + b;
      a->n[kb]++;
      a->sp[kb] += pbar[k];
      a->sy[kb] += Kp == 1 ? (y == 1) : (y == (double)k);
    }
    a->hits += Kp == 1 ? ((pbar[0] > 0.5) == (y == 1)) : (y == (double)best);
    fly_rng_uniforms(rng, u, M);
    if( Kp == 1 ){
      int64_t *r = a->rep + bin_of(pbar[0], B) * M;
      for(size_t s = 0; s < M; s++) r[s] += u[s] < e[s];
    }else{
      for(size_t s = 0; s < M; s++){
        /* the replicated class: the first whose cumulative probability
         * exceeds u (the last if rounding leaves the sum below u) */
        const double *v = e + s * Kp;
        double c = 0;
        size_t k = 0;
        for(; k + 1 < Kp; k++){
          c += v[k];
          if( u[s] < c ) break;
        }
        a->rep[(k * B + bin_of(pbar[k], B)) * M + s]++;
      }
    }
  }
  return FLY_OK;
}

/* The rows of one block: n rows X, E (n x M) scratch for the linear
 * predictors.  Replicated residual at draw s: (x'th_s + sigma t - x'bbar)
 * / sigma, t ~ t_nu. */
static fly_rc residual_block(const fly_posterior *p, racc *r, const double *X, size_t W,
                             size_t n, double *E, fly_rng *rng, int64_t row0, fly_err *err)
{
  const fly_model *m = &p->m;
  size_t D = m->D, M = r->M;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)M, (int)D, 1.0,
              X, (int)W, p->th, (int)D, 0.0, E, (int)M);
  for(size_t i = 0; i < n; i++){
    const double *x = X + i * W, *e = E + i * M;
    double mu = cblas_ddot((int)D, x, 1, p->mean, 1);
    double z = (x[m->tcol] - mu) / m->scale;
    if( !isfinite(z) )
      return fly_fail(err, FLY_NUMERIC, "run %lld: standardised residual of data row %lld "
                      "is %g", (long long)p->run_id, (long long)(row0 + (int64_t)i) + 1, z);
    for(size_t s = 0; s < M; s++){
      double zr = (e[s] - mu) / m->scale + rt(rng, m->nu);
      r->rep[cell_of(r->pit_e, r->B - 1, zr) * M + s]++;
    }
    r->pit[cell_of(r->pit_e, r->B - 1, z)]++;
    r->fine[cell_of(r->fine_e, FINE - 1, z)]++;
    for(int t = 0; t < FLY_PPC_TAILS; t++) r->tail[t] += fabs(z) > r->tail_q[t];
    if( row0 + (int64_t)i == 0 || z < r->rmin ) r->rmin = z;
    if( row0 + (int64_t)i == 0 || z > r->rmax ) r->rmax = z;
  }
  return FLY_OK;
}

/* ---- results ----------------------------------------------------------- */

static void bin_set(fly_ppc_bin *b, fly_ppc_part part, int64_t cls, int64_t bin, double lo,
                    double hi, int64_t n, double pred, double obs, double blo, double bhi)
{
  *b = (fly_ppc_bin){ part, cls, bin, lo, hi, n, pred, obs, blo, bhi };
}

/* The band of a bin of n rows out of `of` (a calibration bin's n, or N for
 * a PIT bin) from its M replicated counts: R's type-7 quantiles of
 * rep[s]/of at (1 -+ level)/2.  f: M scratch. */
static void band(const int64_t *rep, size_t M, double of, double level, double *f,
                 double *lo, double *hi)
{
  for(size_t s = 0; s < M; s++) f[s] = (double)rep[s] / of;
  qsort(f, M, sizeof *f, cmp_double);
  *lo = quantile7(f, M, (1 - level) / 2);
  *hi = quantile7(f, M, (1 + level) / 2);
}

/* The calibration lines and summaries from the sums. */
static fly_rc calib_lines(const acc *a, int softmax, double level, fly_ppc_result *res,
                          fly_ppc_bin *out, fly_err *err)
{
  size_t K = a->K, B = a->B, M = a->M;
  double *f = fly_alloc_array(M, sizeof *f);
  if( !f ) return fly_fail(err, FLY_NOMEM, "ppc bands");
  double ece = 0, mce = 0;
  res->n_outside = res->n_nonempty = 0;
  for(size_t k = 0; k < K; k++){
    double ek = 0;
    for(size_t b = 0; b < B; b++){
      size_t kb = k * B + b;
      int64_t n = a->n[kb];
      double pred = NAN, obs = NAN, blo = NAN, bhi = NAN;
      if( n > 0 ){
        pred = (double)(a->sp[kb] / (long double)n);
        obs = (double)(a->sy[kb] / (long double)n);
        band(a->rep + kb * M, M, (double)n, level, f, &blo, &bhi);
        double d = fabs(obs - pred);
        ek += (double)n / (double)res->N * d;
        if( d > mce ) mce = d;
        res->n_nonempty++;
        res->n_outside += obs < blo || obs > bhi;
      }
      bin_set(&out[kb], FLY_PPC_PART_CAL, softmax ? (int64_t)k : 1, (int64_t)b,
              (double)b / (double)B, (double)(b + 1) / (double)B, n, pred, obs, blo, bhi);
    }
    ece += ek / (double)K;
  }
  res->ece = ece;
  res->mce = mce;
  res->accuracy = (double)a->hits / (double)res->N;
  fly_free(f);
  return FLY_OK;
}

/* The residual lines: B PIT bins with their bands, FLY_PPC_QQ QQ points,
 * the tails; and how many PIT bins lie outside their band. */
static fly_rc resid_lines(const racc *r, const fly_tmix *tm, double level, fly_ppc_result *res,
                          fly_ppc_bin *out, size_t *n_out, fly_err *err)
{
  size_t B = r->B, o = 0;
  double dN = (double)res->N;
  double *f = fly_alloc_array(r->M, sizeof *f);
  if( !f ) return fly_fail(err, FLY_NOMEM, "ppc bands");
  res->n_outside = 0;
  res->n_nonempty = 0;
  for(size_t b = 0; b < B; b++){
    double blo, bhi, obs = (double)r->pit[b] / dN;
    band(r->rep + b * r->M, r->M, dN, level, f, &blo, &bhi);
    res->n_nonempty += r->pit[b] > 0;
    res->n_outside += obs < blo || obs > bhi;
    bin_set(&out[o++], FLY_PPC_PART_PIT, 0, (int64_t)b, (double)b / (double)B,
            (double)(b + 1) / (double)B, r->pit[b], 1.0 / (double)B, obs, blo, bhi);
  }
  fly_free(f);
  for(size_t j = 0; j < FLY_PPC_QQ; j++){
    double p = ((double)j + 0.5) / FLY_PPC_QQ, target = p * dN;
    int64_t below = 0;
    size_t c = 0;
    while( c + 1 < FINE && (double)(below + r->fine[c]) < target ) below += r->fine[c++];
    double lo = c == 0 ? r->rmin : r->fine_e[c - 1];
    double hi = c == FINE - 1 ? r->rmax : r->fine_e[c];
    double frac = r->fine[c] ? (target - (double)below) / (double)r->fine[c] : 0;
    bin_set(&out[o++], FLY_PPC_PART_QQ, 0, (int64_t)j, p, p, -1, fly_tmix_qt(tm, p),
            lo + frac * (hi - lo), NAN, NAN);
  }
  for(int t = 0; t < FLY_PPC_TAILS; t++)
    bin_set(&out[o++], FLY_PPC_PART_TAIL, 0, t, tail_level[t], r->tail_q[t], r->tail[t],
            tail_level[t], (double)r->tail[t] / dN, NAN, NAN);
  *n_out = o;
  return FLY_OK;
}

static void bind_real(sqlite3_stmt *st, int i, double v)
{
  if( isfinite(v) ) sqlite3_bind_double(st, i, v);
  else sqlite3_bind_null(st, i);
}

static void bind_count(sqlite3_stmt *st, int i, int64_t v)
{
  if( v >= 0 ) sqlite3_bind_int64(st, i, v);
  else sqlite3_bind_null(st, i);
}

/* The replicated counts to store: K classes x B bins x M draws, class
 * numbers cls(k) = k when K > 1, else cls1. */
typedef struct reps {
  const int64_t *n;
  size_t         K, B, M;
  int64_t        cls1;
} reps;

static fly_rc store(fly_db *db, const fly_ppc_result *r, const fly_ppc_bin *b, size_t nb,
                    const reps *a, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  char sql[256];
  fly_rc rc;
  if( (rc = fly_db_begin(db, err)) ) return rc;
  snprintf(sql, sizeof sql, "DELETE FROM ppc_rep WHERE run_id = %lld; DELETE FROM ppc_bin "
           "WHERE run_id = %lld; DELETE FROM ppc WHERE run_id = %lld", (long long)r->run_id,
           (long long)r->run_id, (long long)r->run_id);
  if( (rc = fly_db_exec(db, sql, err)) ) goto done;
  if( (rc = fly_db_prepare(db, "INSERT INTO ppc(run_id, kind, model, n_rows, n_draws, n_bins, "
                           "n_classes, seed, level, ece, mce, accuracy, n_outside, n_nonempty, "
                           "nu, sigma, seconds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           &st, err)) ) goto done;
  sqlite3_bind_int64(st, 1, r->run_id);
  sqlite3_bind_text(st, 2, r->kind == FLY_PPC_CALIBRATION ? "calibration" : "residual", -1,
                    SQLITE_STATIC);
  sqlite3_bind_text(st, 3, r->model, -1, SQLITE_TRANSIENT);
  const int64_t iv[] = { r->N, r->M, r->bins, r->K, (int64_t)r->seed };
  for(int i = 0; i < 5; i++) sqlite3_bind_int64(st, 4 + i, iv[i]);
  sqlite3_bind_double(st, 9, r->level);
  bind_real(st, 10, r->ece);
  bind_real(st, 11, r->mce);
  bind_real(st, 12, r->accuracy);
  bind_count(st, 13, r->n_outside);
  bind_count(st, 14, r->n_nonempty);
  bind_real(st, 15, r->nu);
  bind_real(st, 16, r->sigma);
  sqlite3_bind_double(st, 17, r->seconds);
  if( sqlite3_step(st) != SQLITE_DONE ){ rc = fly_db_fail(db, err, "insert ppc"); goto done; }
  sqlite3_finalize(st);
  st = NULL;
  if( (rc = fly_db_prepare(db, "INSERT INTO ppc_bin(run_id, part, class, bin, lo, hi, n, "
                           "predicted, observed, band_lo, band_hi) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           &st, err)) ) goto done;
  for(size_t i = 0; i < nb; i++){
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, r->run_id);
    sqlite3_bind_text(st, 2, fly_ppc_part_name(b[i].part), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, b[i].cls);
    sqlite3_bind_int64(st, 4, b[i].bin);
    sqlite3_bind_double(st, 5, b[i].lo);
    sqlite3_bind_double(st, 6, b[i].hi);
    bind_count(st, 7, b[i].n);
    bind_real(st, 8, b[i].predicted);
    bind_real(st, 9, b[i].observed);
    bind_real(st, 10, b[i].band_lo);
    bind_real(st, 11, b[i].band_hi);
    if( sqlite3_step(st) != SQLITE_DONE ){ rc = fly_db_fail(db, err, "insert ppc_bin"); goto done; }
  }
  sqlite3_finalize(st);
  st = NULL;
  {
    if( (rc = fly_db_prepare(db, "INSERT INTO ppc_rep(run_id, class, bin, draw, n_rep) "
                             "VALUES (?,?,?,?,?)", &st, err)) ) goto done;
    for(size_t k = 0; k < a->K; k++)
      for(size_t bb = 0; bb < a->B; bb++)
        for(size_t s = 0; s < a->M; s++){
          sqlite3_reset(st);
          sqlite3_bind_int64(st, 1, r->run_id);
          sqlite3_bind_int64(st, 2, a->K > 1 ? (int64_t)k : a->cls1);
          sqlite3_bind_int64(st, 3, (int64_t)bb);
          sqlite3_bind_int64(st, 4, (int64_t)s);
          sqlite3_bind_int64(st, 5, a->n[(k * a->B + bb) * a->M + s]);
          if( sqlite3_step(st) != SQLITE_DONE ){
            rc = fly_db_fail(db, err, "insert ppc_rep");
            goto done;
          }
        }
    sqlite3_finalize(st);
    st = NULL;
  }
  rc = fly_db_commit(db, err);
done:
  sqlite3_finalize(st);
  if( rc ) fly_db_rollback(db);
  return rc;
}

fly_rc fly_ppc_run(fly_db *db, int64_t run_id, const fly_ppc_opts *o,
                   fly_ppc_result *res, fly_err *err)
{
  fly_posterior p;
  fly_posterior_rows cu;
  acc a;
  racc *r = NULL;
  double *X = NULL, *E = NULL, *pbar = NULL, *u = NULL;
  fly_ppc_bin *lines = NULL;
  fly_tmix tm;
  double t0 = now();
  fly_rc rc;
  memset(&cu, 0, sizeof cu);
  memset(&a, 0, sizeof a);
  if( o->bins < 1 || o->bins > FLY_PPC_MAX_BINS )
    return fly_fail(err, FLY_RANGE, "--bins %lld: want 1 to %d", (long long)o->bins,
                    FLY_PPC_MAX_BINS);
  if( !(o->level > 0 && o->level < 1) )
    return fly_fail(err, FLY_RANGE, "--level %g: want a probability in (0, 1)", o->level);
  if( (rc = fly_posterior_load(db, run_id, o->max_draws, 2, "ppc", &p, err)) ) return rc;
  const fly_model *m = &p.m;
  int softmax = m->type == &fly_model_softmax, robust = m->type == &fly_model_robust;
  if( !softmax && !robust && m->type != &fly_model_logistic ){
    rc = fly_fail(err, FLY_MISUSE, "run %lld: no predictive check for model %s",
                  (long long)p.run_id, m->type->name);
    goto done;
  }
  if( (rc = fly_posterior_rows_open(db, p.ds, &cu, err)) ) goto done;
  size_t W = cu.W, B = (size_t)o->bins, M = p.S, Kp = softmax ? m->K : 1;
  memset(res, 0, sizeof *res);
  res->run_id = p.run_id;
  res->kind = robust ? FLY_PPC_RESIDUAL : FLY_PPC_CALIBRATION;
  snprintf(res->model, sizeof res->model, "%s", m->type->name);
  res->N = cu.N;
  res->M = (int64_t)M;
  res->bins = o->bins;
  res->K = (int64_t)classes_of(m);
  res->seed = o->seed;
  res->level = o->level;
  res->ece = res->mce = res->accuracy = res->nu = res->sigma = NAN;
  res->n_outside = res->n_nonempty = -1;
  size_t blk = PRED_MAX / (M * Kp);
  if( blk < 1 ) blk = 1;
  if( blk > BLOCK_MAX ) blk = BLOCK_MAX;
  size_t n_lines = robust ? B + FLY_PPC_QQ + FLY_PPC_TAILS : (size_t)res->K * B;
  if( !(X = fly_alloc_array(blk, W * sizeof *X)) ||
      !(lines = fly_alloc_array(n_lines, sizeof *lines)) ) goto nomem;
  int64_t row = 0;
  int began = fly_db_read_begin(db);
  if( robust ){
    if( !(r = fly_alloc_array(1, sizeof *r)) ){
      fly_db_read_end(db, began);
      goto nomem;
    }
    r->B = B;
    r->M = M;
    if( !(r->rep = fly_alloc_array(B, M * sizeof *r->rep)) ||
        !(E = fly_alloc_array(blk, M * sizeof *E)) ){
      fly_db_read_end(db, began);
      goto nomem;
    }
    res->nu = m->nu;
    res->sigma = m->scale;
    fly_tmix_init(&tm, m->nu, 1);
    for(size_t k = 1; k < B; k++) r->pit_e[k - 1] = fly_tmix_qt(&tm, (double)k / (double)B);
    for(size_t k = 1; k < FINE; k++) r->fine_e[k - 1] = fly_tmix_qt(&tm, (double)k / FINE);
    for(int t = 0; t < FLY_PPC_TAILS; t++)
      r->tail_q[t] = fly_tmix_qt(&tm, 1 - tail_level[t] / 2);
  }else{
    a.K = (size_t)res->K;
    a.B = B;
    a.M = M;
    if( !(a.n = fly_alloc_array(a.K * B, sizeof *a.n)) ||
        !(a.sp = fly_alloc_array(a.K * B, sizeof *a.sp)) ||
        !(a.sy = fly_alloc_array(a.K * B, sizeof *a.sy)) ||
        !(a.rep = fly_alloc_array(a.K * B, M * sizeof *a.rep)) ||
        !(E = fly_alloc_array(blk, M * Kp * sizeof *E)) ||
        !(pbar = fly_alloc_array(Kp, sizeof *pbar)) || !(u = fly_alloc_array(M, sizeof *u)) ){
      fly_db_read_end(db, began);
      goto nomem;
    }
  }
  fly_rng rng;
  fly_rng_seed(&rng, o->seed, 0);
  for(;;){
    size_t n;
    if( (rc = fly_posterior_rows_block(&cu, X, blk, &n, err)) || n == 0 ) break;
    rc = robust ? residual_block(&p, r, X, W, n, E, &rng, row, err)
                : classify_block(&p, &a, X, W, n, E, pbar, u, &rng, row, err);
    if( rc ) break;
    row += (int64_t)n;
  }
  fly_db_read_end(db, began);
  if( rc ) goto done;
  if( row != cu.N ){
    rc = fly_fail(err, FLY_CORRUPT, "data set %lld: %lld rows read of %lld", (long long)p.ds,
                  (long long)row, (long long)cu.N);
    goto done;
  }
  if( robust ) rc = resid_lines(r, &tm, o->level, res, lines, &n_lines, err);
  else rc = calib_lines(&a, softmax, o->level, res, lines, err);
  if( rc ) goto done;
  res->seconds = now() - t0;
  reps rp = robust ? (reps){ r->rep, 1, B, M, 0 } : (reps){ a.rep, a.K, B, M, 1 };
  rc = store(db, res, lines, n_lines, &rp, err);
  goto done;
nomem:
  rc = fly_fail(err, FLY_NOMEM, "ppc of run %lld: buffers", (long long)p.run_id);
done:
  fly_posterior_rows_close(&cu);
  fly_posterior_free(&p);
  fly_free(a.n);
  fly_free(a.sp);
  fly_free(a.sy);
  fly_free(a.rep);
  if( r ) fly_free(r->rep);
  fly_free(r);
  fly_free(X);
  fly_free(E);
  fly_free(pbar);
  fly_free(u);
  fly_free(lines);
  return rc;
}

/* ---- reading back ------------------------------------------------------- */

static double col_real(sqlite3_stmt *st, int i)
{
  return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static int64_t col_count(sqlite3_stmt *st, int i)
{
  return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static int part_of(const char *s)
{
  for(int p = 0; p < 4; p++) if( s && !strcmp(s, fly_ppc_part_name((fly_ppc_part)p)) ) return p;
  return -1;
}

fly_rc fly_ppc_load(fly_db *db, int64_t run_id, fly_ppc_result *res,
                    fly_ppc_bin **bins, size_t *n_bins, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_ppc_bin *b = NULL;
  size_t n = 0, cap = 0;
  int s;
  if( bins ){ *bins = NULL; *n_bins = 0; }
  fly_rc rc = fly_db_prepare(db, "SELECT run_id, kind = 'residual', model, n_rows, n_draws, "
                             "n_bins, n_classes, seed, level, ece, mce, accuracy, n_outside, "
                             "n_nonempty, nu, sigma, coalesce(seconds, 0) FROM ppc "
                             "WHERE run_id = ?1 OR (?1 = 0 AND run_id = (SELECT max(run_id) "
                             "FROM ppc))", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  s = sqlite3_step(st);
  if( s == SQLITE_DONE ){
    sqlite3_finalize(st);
    if( run_id == 0 ) return fly_fail(err, FLY_RANGE, "no run has a predictive check");
    return fly_fail(err, FLY_RANGE, "run %lld has no predictive check: run flydb ppc %lld",
                    (long long)run_id, (long long)run_id);
  }
  if( s != SQLITE_ROW ){
    rc = fly_db_fail(db, err, "read ppc");
    goto done;
  }
  memset(res, 0, sizeof *res);
  res->run_id = sqlite3_column_int64(st, 0);
  res->kind = sqlite3_column_int(st, 1) ? FLY_PPC_RESIDUAL : FLY_PPC_CALIBRATION;
  const char *model = (const char *)sqlite3_column_text(st, 2);
  snprintf(res->model, sizeof res->model, "%s", model ? model : "?");
  int64_t *iv[] = { &res->N, &res->M, &res->bins, &res->K };
  for(int i = 0; i < 4; i++) *iv[i] = sqlite3_column_int64(st, 3 + i);
  res->seed = (uint64_t)sqlite3_column_int64(st, 7);
  res->level = sqlite3_column_double(st, 8);
  res->ece = col_real(st, 9);
  res->mce = col_real(st, 10);
  res->accuracy = col_real(st, 11);
  res->n_outside = col_count(st, 12);
  res->n_nonempty = col_count(st, 13);
  res->nu = col_real(st, 14);
  res->sigma = col_real(st, 15);
  res->seconds = sqlite3_column_double(st, 16);
  sqlite3_finalize(st);
  st = NULL;
  if( !bins ) return FLY_OK;
  if( (rc = fly_db_prepare(db, "SELECT part, class, bin, lo, hi, n, predicted, observed, "
                           "band_lo, band_hi FROM ppc_bin WHERE run_id = ? "
                           "ORDER BY CASE part WHEN 'calibration' THEN 0 WHEN 'pit' THEN 1 "
                           "WHEN 'qq' THEN 2 ELSE 3 END, class, bin", &st, err)) ) goto done;
  sqlite3_bind_int64(st, 1, res->run_id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    if( n == cap ){
      size_t nc = cap ? 2 * cap : 64;
      fly_ppc_bin *nb = fly_realloc_array(b, nc, sizeof *b);
      if( !nb ){ rc = fly_fail(err, FLY_NOMEM, "ppc_bin of run %lld", (long long)res->run_id); goto done; }
      b = nb;
      cap = nc;
    }
    int part = part_of((const char *)sqlite3_column_text(st, 0));
    if( part < 0 ){
      rc = fly_fail(err, FLY_CORRUPT, "run %lld: ppc_bin line of an unknown part",
                    (long long)res->run_id);
      goto done;
    }
    bin_set(&b[n++], (fly_ppc_part)part, sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_double(st, 3),
            sqlite3_column_double(st, 4), col_count(st, 5), col_real(st, 6), col_real(st, 7),
            col_real(st, 8), col_real(st, 9));
  }
  if( s != SQLITE_DONE ) rc = fly_db_fail(db, err, "read ppc_bin");
done:
  sqlite3_finalize(st);
  if( rc ) fly_free(b);
  else{ *bins = b; *n_bins = n; }
  return rc;
}

/* ---- flydb check ---------------------------------------------------------- */

void fly_ppc_check(fly_db *db, fly_checker *ck, int64_t *n_checks)
{
  sqlite3_stmt *st, *q;
  int s;
  *n_checks = 0;
  /* per check: the header, its data set's rows (NULL: no run), and the
   * counts of its lines */
  st = fly_check_prepare(db, ck,
    "SELECT p.run_id, p.kind, p.n_rows, p.n_draws, p.n_bins, p.n_classes, "
    "  (SELECT d.n_rows FROM run r JOIN dataset d ON d.id = r.dataset_id WHERE r.id = p.run_id), "
    "  (SELECT count(*) FROM ppc_bin b WHERE b.run_id = p.run_id AND b.part = 'calibration'), "
    "  (SELECT count(*) FROM ppc_bin b WHERE b.run_id = p.run_id AND b.part = 'pit'), "
    "  (SELECT count(*) FROM ppc_bin b WHERE b.run_id = p.run_id AND b.part = 'qq'), "
    "  (SELECT count(*) FROM ppc_bin b WHERE b.run_id = p.run_id AND b.part = 'tail'), "
    "  (SELECT count(*) FROM ppc_rep r WHERE r.run_id = p.run_id), "
    "  (SELECT count(*) FROM ppc_bin b WHERE b.run_id = p.run_id AND "
    "     (b.n < 0 OR b.bin < 0 OR b.lo > b.hi OR "
    "      (b.part IN ('calibration', 'pit') AND b.bin >= p.n_bins) OR "
    "      (b.part = 'qq' AND b.bin >= " XSTR(FLY_PPC_QQ) ") OR "
    "      (b.part = 'tail' AND b.bin >= " XSTR(FLY_PPC_TAILS) "))) "
    "FROM ppc p ORDER BY p.run_id");
  if( !st ) return;
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t run = sqlite3_column_int64(st, 0);
    const char *kind = (const char *)sqlite3_column_text(st, 1);
    int64_t N = sqlite3_column_int64(st, 2), M = sqlite3_column_int64(st, 3);
    int64_t B = sqlite3_column_int64(st, 4), K = sqlite3_column_int64(st, 5);
    int64_t n_cal = sqlite3_column_int64(st, 7), n_pit = sqlite3_column_int64(st, 8);
    int64_t n_qq = sqlite3_column_int64(st, 9), n_tail = sqlite3_column_int64(st, 10);
    int64_t n_rep = sqlite3_column_int64(st, 11), n_odd = sqlite3_column_int64(st, 12);
    int resid = kind && !strcmp(kind, "residual");
    (*n_checks)++;
    fly_check_scope(ck, "run %lld ppc", (long long)run);
    if( sqlite3_column_type(st, 6) == SQLITE_NULL )
      fly_check_problem(ck, "a predictive check of a run that does not exist");
    else if( sqlite3_column_int64(st, 6) != N )
      fly_check_problem(ck, "n_rows %lld, the run's data set has %lld rows", (long long)N,
                        (long long)sqlite3_column_int64(st, 6));
    int64_t want_cal = resid ? 0 : K * B, want_rep = K * B * M;
    int64_t want_pit = resid ? B : 0, want_qq = resid ? FLY_PPC_QQ : 0;
    int64_t want_tail = resid ? FLY_PPC_TAILS : 0;
    if( n_cal != want_cal || n_pit != want_pit || n_qq != want_qq || n_tail != want_tail )
      fly_check_problem(ck, "ppc_bin holds %lld calibration, %lld pit, %lld qq and %lld tail "
                        "lines; the header (%s, %lld classes x %lld bins) wants %lld, %lld, "
                        "%lld and %lld", (long long)n_cal, (long long)n_pit, (long long)n_qq,
                        (long long)n_tail, kind ? kind : "?", (long long)K, (long long)B,
                        (long long)want_cal, (long long)want_pit, (long long)want_qq,
                        (long long)want_tail);
    if( n_rep != want_rep )
      fly_check_problem(ck, "ppc_rep holds %lld replicated counts; the header wants %lld "
                        "(%lld classes x %lld bins x %lld draws)", (long long)n_rep,
                        (long long)want_rep, (long long)K, (long long)B, (long long)M);
    if( n_odd )
      fly_check_problem(ck, "%lld ppc_bin lines with a negative count, a bin out of range "
                        "or lo > hi", (long long)n_odd);
    /* the rows of each class's bins (of the PIT bins) add up to n_rows */
    if( (q = fly_check_prepare(db, ck, "SELECT class, sum(n) FROM ppc_bin WHERE run_id = ? "
                               "AND part IN ('calibration', 'pit') GROUP BY class")) ){
      sqlite3_bind_int64(q, 1, run);
      while( (s = sqlite3_step(q)) == SQLITE_ROW )
        if( sqlite3_column_int64(q, 1) != N )
          fly_check_problem(ck, "the bins of class %lld hold %lld rows, not n_rows %lld",
                            (long long)sqlite3_column_int64(q, 0),
                            (long long)sqlite3_column_int64(q, 1), (long long)N);
      if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "ppc_bin sums");
      sqlite3_finalize(q);
    }
    /* a replicated count within its bin's rows */
    if( (q = fly_check_prepare(db, ck, "SELECT count(*) FROM ppc_rep r LEFT JOIN ppc_bin b "
                               "ON b.run_id = r.run_id AND b.part IN ('calibration', 'pit') AND "
                               "b.class = r.class AND b.bin = r.bin WHERE r.run_id = ? AND "
                               "(b.n IS NULL OR r.n_rep < 0 OR r.draw < 0 OR r.draw >= ? OR "
                               "r.n_rep > CASE b.part WHEN 'pit' THEN ? ELSE b.n END)")) ){
      sqlite3_bind_int64(q, 1, run);
      sqlite3_bind_int64(q, 2, M);
      sqlite3_bind_int64(q, 3, N);
      if( sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) )
        fly_check_problem(ck, "%lld replicated counts outside 0..n of their bin (a PIT "
                          "bin's: 0..n_rows; or of no bin, or of a draw out of range)", (long long)sqlite3_column_int64(q, 0));
      sqlite3_finalize(q);
    }
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "read ppc");
  sqlite3_finalize(st);
  /* lines of no check */
  fly_check_scope(ck, "ppc");
  if( (st = fly_check_prepare(db, ck, "SELECT (SELECT count(*) FROM ppc_bin WHERE run_id NOT IN "
                              "(SELECT run_id FROM ppc)), (SELECT count(*) FROM ppc_rep WHERE "
                              "run_id NOT IN (SELECT run_id FROM ppc))")) ){
    if( sqlite3_step(st) == SQLITE_ROW && (sqlite3_column_int64(st, 0) || sqlite3_column_int64(st, 1)) )
      fly_check_problem(ck, "%lld ppc_bin and %lld ppc_rep lines of no stored check",
                        (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
  }
  fly_check_scope(ck, "%s", "");
}
