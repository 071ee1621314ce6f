/*
 * tune.c -- building and loading tuned bound sets.
 *
 * A build is four streaming passes over the data pages, each reading page
 * after page into one buffer with fly_pages_read_page (the page cache is
 * bypassed, so a scan never evicts what the sampler cached):
 *   (a) MAP: L-BFGS on -(log prior + sum_n log L_n), one scan per
 *       objective+gradient evaluation (type->eval with logB = NULL, then
 *       type->grad with wL = 1).  The first full scan also validates every
 *       row: finite values, a target the model accepts.  Run for fixed
 *       tuning too: the Laplace covariance shapes the proposals.
 *       Tall data (N >= 4 max(20000, 200 P) rows) with a normal prior
 *       start on a subsample: L-BFGS on every s-th page (s = N / max(20000,
 *       200 P), so each evaluation reads about max(20000, 200 P) rows),
 *       each row's log L weighted by N / rows read, whose optimum lies
 *       within about sqrt(s) posterior sds of the MAP; then Newton steps on
 *       the full data, each one scan for f, g and H (type->neg_hess), until
 *       the step is known to land within a decrement of 1e-6 of the MAP
 *       (Newton decrement g'H^-1 g: twice the decrease of f still to be
 *       had, the squared distance to the MAP in posterior sds, so 1e-3
 *       sds): that step is taken unscanned.  It is known to when its own
 *       decrement d is below 1e-6 (it lands within about d^2), or when
 *       the contraction of the two steps before it predicts so: with
 *       quadratic convergence sqrt(d') = kappa d, and kappa estimated as
 *       sqrt(d) / d_prev, a step lands at about d^3 / d_prev^2, which must
 *       be 10 times below 1e-6.  From sqrt(s) sds Newton converges
 *       quadratically, and the faster the larger N: two or three full
 *       scans where L-BFGS from 0 needs a dozen, and the last one's H (a
 *       few sds at most from the MAP, where H changes by O(1/sqrt(N)) of
 *       itself) is the Laplace precision, so (b) needs no scan of its
 *       own.  A rise of f halves the
 *       step; no convergence in 8 steps, a Hessian that is not positive
 *       definite or a failed subsample search fall back to L-BFGS on the
 *       full data from the best point seen.  The MAP is the same optimum
 *       either way, to the tolerances of the two searches.
 *   (b) Laplace: one scan summing type->neg_hess, plus the prior's; H is
 *       factored H = L L' (dpotrf; not positive definite -> FLY_NUMERIC with
 *       an explanation) and inverted, P = H^-1 (dpotri).  Then the D x D
 *       metric of the thinning keys, H_D = key_prec (see key_metric): H
 *       itself when n_params = D, a scaled average of the diagonal blocks of
 *       H for K x D parameters (softmax).  Factored H_D = L_D L_D'.
 *   (c) Bounds, inside the write transaction: per row the xi tight at the
 *       MAP (type->xi_at) or the fixed xi, rounded to f32 once; then the
 *       thinning key thin->key(xi_f32, ||x||_P) with P = H_D^-1 and
 *       ||x||_P = |L_D^-1 x| (a triangular solve per page), rounded *up* to
 *       f32 so the stored key stays an upper bound; the chain pairs it with
 *       thin->radius(th, theta_map, key_prec).  The rows go to a
 *       fly_pagewriter (f32, width n_xi + 1, the data set's page_rows, so
 *       bound page k covers data page k).  The moments are accumulated
 *       with type->moments_add from the same f32 xi, so the collapsed
 *       product equals the sum of the per-row bounds computed from the
 *       stored xi.
 *   (d) moment rows, the MAP, the Laplace matrices and key_prec as f64
 *       blobs, and status 'ready', all in the transaction of (c).
 * Passes (a) and (b) only read, so the write lock is held for (c) and (d)
 * alone; the transaction re-checks that nobody built the same set in the
 * meantime.  Any failure or a kill rolls everything back: a bound set is
 * either absent or complete and 'ready'.
 *
 * Two threads.  With the rows in memory, the scans of tall data (the
 * subsample search, the Newton steps, (c)) run in parts: TUNE_PARTS
 * ranges of consecutive pages (fewer where P x P sums a part would take
 * much memory), which two threads take one at a time (util/par.h:
 * fly_par_run), each part summing into sums of its own; the calling
 * thread adds the parts' sums in part order.  The parts depend on the
 * number of pages alone, so the same data give the same bits however the
 * threads are scheduled (derivs, write_bounds), and neither thread waits
 * on a fixed half the other has not finished.  In (c) each part also
 * encodes its bound pages (fly_pagewriter_encode), and the calling thread
 * inserts each finished part's pages in page order between its own
 * parts: the same pages as one thread writes, the inserts overlapping the
 * other thread's parts.  Short data, streamed pages and the full L-BFGS
 * stay on one thread.
 *
 * Memory: one page of rows, a few page_rows-long vectors, the model's work
 * (type->work_len(m, page_rows)), O(P^2) matrices (a split scan's parts:
 * at most TUNE_PARTS_BYTES of them), the L-BFGS workspace; nothing
 * proportional to N, but for the encoded bound pages of a split (c),
 * about the size of the bound set, whose rows are in memory anyway.
 * Cost: (evaluations + 2) scans of N D work,
 * or with a subsample start its evaluations times N / s, the Newton
 * scans (N D^2 each) and one for the bounds.
 */
#include "tune/tune.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/codec.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "tune/lbfgs.h"
#include "util/mem.h"
#include "util/par.h"

#define TUNE_MAX_ITER 500
#define TUNE_G_TOL    1e-9
#define TUNE_F_TOL    1e-14   /* relative f decrease over 3 iterations */
#define TUNE_DEC_TOL  1e-15   /* Newton decrement relative to |f|: below,
                                 f cannot resolve the step (N = 10^8) */
#define TUNE_LBFGS_M  8
#define MAX_SECTIONS  8
/* The subsample start of the MAP search (file comment, (a)). */
#define TUNE_SUB_ROWS       20000  /* rows of the subsample, at least ... */
#define TUNE_SUB_PER_P      200    /* ... and per parameter */
#define TUNE_SUB_MIN_STRIDE 4      /* fewer rows than 4x that: full L-BFGS */
#define TUNE_SUB_G_TOL      1e-6   /* the subsample MAP is only a start */
#define TUNE_NEWTON_MAX     8      /* full-data Newton steps, then L-BFGS */
#define TUNE_NEWTON_HALVE   4      /* step halvings when f rises */
#define TUNE_NEWTON_TOL     1e-10  /* half the Newton decrement: the
                                      decrease of f still to be had */
#define TUNE_NEWTON_SLACK   1e-12  /* relative rise of f taken as rounding */
#define TUNE_BLOCK          16     /* pages a Newton scan of rows in memory
                                      hands the model at once (one dsyrk) */
#define TUNE_NEWTON_LAST    1e-6   /* decrement g'H^-1 g within which a
                                      step must land to be the last, taken
                                      unscanned (file comment, (a)) */
#define TUNE_NEWTON_MARGIN  10.0   /* a predicted landing decrement must be
                                      this far below TUNE_NEWTON_LAST */
#define TUNE_PARTS          32     /* parts of a split scan (file comment) */
#define TUNE_PARTS_BYTES    ((size_t)64 << 20)  /* their sums' memory, at
                                      most (two parts whatever it takes) */

static double now_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fly_tune_opts_default(fly_tune_opts *o)
{
  memset(o, 0, sizeof *o);
  o->tuning = "map";
  o->fixed_xi = 1.5;
  o->max_iter = TUNE_MAX_ITER;
  o->g_tol = TUNE_G_TOL;
}

/* snprintf that reports truncation as FLY_RANGE. */
static fly_rc put(char *buf, size_t n, fly_err *err, const char *what,
                  const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 5, 6)))
#endif
  ;
static fly_rc put(char *buf, size_t n, fly_err *err, const char *what,
                  const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  if( w < 0 || (size_t)w >= n )
    return fly_fail(err, FLY_RANGE, "%s string needs %d bytes, buffer has %zu",
                    what, w, n);
  return FLY_OK;
}

fly_rc fly_tune_model_opts(const fly_model *m, char *buf, size_t n,
                           fly_err *err)
{
  char k[32] = "", t[80] = "";
  if( m->K > 1 ) snprintf(k, sizeof k, ";K=%zu", m->K);
  if( m->nu > 0 ) snprintf(t, sizeof t, ";nu=%.17g;sigma=%.17g", m->nu, m->scale);
  return put(buf, n, err, "model options", "prior=%s;scale=%.17g%s%s",
             m->prior == FLY_PRIOR_LAPLACE ? "laplace" : "normal",
             m->prior_scale, k, t);
}

fly_rc fly_tune_model_opts_parse(const char *name, const char *opts,
                                 int64_t width, fly_model *m, fly_err *err)
{
  char buf[256];
  int have_prior = 0, have_scale = 0;

  memset(m, 0, sizeof *m);
  m->type = fly_model_find(name);
  if( !m->type )
    return fly_fail(err, FLY_PARSE, "unknown model '%s'", name ? name : "NULL");
  m->D = (size_t)width - 1;
  m->tcol = (size_t)width - 1;
  m->K = 1;
  if( !opts || strlen(opts) >= sizeof buf )
    return fly_fail(err, FLY_PARSE, "model_opts missing or too long");
  snprintf(buf, sizeof buf, "%s", opts);
  for(char *kv = buf, *nx; kv; kv = nx){
    nx = strchr(kv, ';');
    if( nx ) *nx++ = 0;
    char *v = strchr(kv, '=');
    if( !v )
      return fly_fail(err, FLY_PARSE, "model_opts '%s': '%s' is not key=value",
                      opts, kv);
    *v++ = 0;
    if( strcmp(kv, "prior") == 0 ){
      have_prior = 1;
      if( strcmp(v, "normal") == 0 ) m->prior = FLY_PRIOR_NORMAL;
      else if( strcmp(v, "laplace") == 0 ) m->prior = FLY_PRIOR_LAPLACE;
      else return fly_fail(err, FLY_PARSE, "model_opts '%s': unknown prior '%s'",
                           opts, v);
    }else if( strcmp(kv, "scale") == 0 ){
      char *end;
      have_scale = 1;
      m->prior_scale = strtod(v, &end);
      if( end == v || *end || !(m->prior_scale > 0) || !isfinite(m->prior_scale) )
        return fly_fail(err, FLY_PARSE, "model_opts '%s': scale '%s' is not a "
                        "positive number", opts, v);
    }else if( (strcmp(kv, "K") == 0 && strcmp(m->type->name, "softmax") == 0) ||
              ((strcmp(kv, "nu") == 0 || strcmp(kv, "sigma") == 0) &&
               strcmp(m->type->name, "robust") == 0) ){
      char *end;
      double x = strtod(v, &end);
      if( end == v || *end || !(x > 0) || !isfinite(x) || (kv[0] == 'K' && x != floor(x)) )
        return fly_fail(err, FLY_PARSE, "model_opts '%s': %s '%s' is not a "
                        "positive %s", opts, kv, v,
                        kv[0] == 'K' ? "integer" : "number");
      if( kv[0] == 'K' ) m->K = (size_t)x;
      else if( kv[0] == 'n' ) m->nu = x;
      else m->scale = x;
    }else{
      return fly_fail(err, FLY_PARSE, "model_opts '%s': option '%s' does not "
                      "apply to model %s", opts, kv, m->type->name);
    }
  }
  if( !have_prior || !have_scale )
    return fly_fail(err, FLY_PARSE, "model_opts '%s' lacks the %s", opts,
                    have_prior ? "scale" : "prior");
  return FLY_OK;
}

/* Parse o->tuning: *fixed = 0 for MAP tuning, 1 for fixed with *xi. */
static fly_rc parse_tuning(const fly_tune_opts *o, int *fixed, double *xi,
                           fly_err *err)
{
  const char *t = o->tuning ? o->tuning : "map";
  *fixed = 0;
  *xi = o->fixed_xi;
  if( strcmp(t, "map") == 0 ) return FLY_OK;
  if( strncmp(t, "fixed", 5) == 0 && (t[5] == 0 || t[5] == '=') ){
    *fixed = 1;
    if( t[5] == '=' ){
      char *end;
      *xi = strtod(t + 6, &end);
      if( end == t + 6 || *end )
        return fly_fail(err, FLY_MISUSE, "tuning '%s': want fixed=<number>", t);
    }
    if( !isfinite(*xi) || *xi < 0 )
      return fly_fail(err, FLY_MISUSE, "tuning '%s': the fixed xi must be a "
                      "finite number >= 0 (got %g)", t, *xi);
    return FLY_OK;
  }
  return fly_fail(err, FLY_MISUSE, "unknown tuning '%s' (want 'map' or "
                  "'fixed' or 'fixed=<xi>')", t);
}

fly_rc fly_tune_tuning_string(const fly_tune_opts *o, char *buf, size_t n,
                              fly_err *err)
{
  int fixed;
  double xi;
  fly_rc rc = parse_tuning(o, &fixed, &xi, err);
  if( rc ) return rc;
  if( !fixed ) return put(buf, n, err, "tuning", "map");
  return put(buf, n, err, "tuning", "fixed=%.17g", xi);
}

/* ---- streaming scans ------------------------------------------------- */

typedef struct scan {
  fly_pages       *pg;        /* data pages (borrowed while building) */
  fly_db          *db;        /* for a read transaction around each scan */
  const fly_model *m;
  int64_t          ds;        /* data set id, for messages */
  size_t           P, D, ldx; /* n_params, features, values per stored row */
  int64_t          page_rows, n_pages, n_rows;
  double          *X;         /* one page: page_rows x ldx */
  const double    *Xall;      /* all rows in memory (fly_tune_opts.X), or
                                 NULL: read the pages into X */
  int64_t          block;     /* pages a block of derivs() with Xall */
  double          *logL;      /* page_rows */
  double          *wts;       /* page_rows weights wL = w */
  int64_t          stride;    /* scan pages 0, stride, 2 stride, ... */
  double           w;         /* weight of each row: rows / rows scanned */
  double          *work;      /* type->work_len(m, page_rows) */
  double          *logL2, *work2;  /* the second thread's logL and work in a
                                 split scan (with Xall) */
  int64_t          parts;     /* a split scan's parts (scan_parts), at most */
  double          *pll, *pgr, *pH;  /* each part's sum of log L, gradient
                                 (P) and -hess (P x P; in write_bounds the
                                 moments), part i's at pH + i part_len */
  size_t           part_len;  /* max(P x P, n_moments) */
  fly_rc          *prc;       /* each part's result and message */
  fly_err         *perr;
  int              split;     /* scans in parts on two threads (derivs,
                                 write_bounds): set, with the rows in
                                 memory, for the subsample search and the
                                 Newton steps of tall data */
  int              checked;   /* a full scan has validated every row */
  int              n_scans;
  double           t0;        /* build start, for progress lines */
  int              verbose;
} scan;

static void say(const scan *sc, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
static void say(const scan *sc, const char *fmt, ...)
{
  va_list ap;
  if( !sc->verbose ) return;
  fprintf(stderr, "tune: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
}

/* Data page k (*n rows) at *X: its rows in sc->Xall, or read into sc->X;
 * on the first scan check every value is finite and every target is one
 * the model accepts. */
static fly_rc read_page(scan *sc, int64_t k, const double **X, size_t *n,
                        fly_err *err)
{
  fly_rc rc = FLY_OK;
  if( sc->Xall ){
    int64_t r0 = k * sc->page_rows, left = sc->n_rows - r0;
    *n = (size_t)(left < sc->page_rows ? left : sc->page_rows);
    *X = sc->Xall + (size_t)r0 * sc->ldx;
  }else{
    rc = fly_pages_read_page(sc->pg, k, sc->X, n, err);
    *X = sc->X;
  }
  if( rc || sc->checked ) return rc;
  /* every value finite: no exponent field all ones (a loop the compiler
   * vectorises); only a page that fails is searched for the message */
  const uint64_t EXP = UINT64_C(0x7ff0000000000000);
  uint64_t bad = 0;
  const size_t nv = *n * sc->ldx;
  for(size_t i = 0; i < nv; i++){
    uint64_t u;
    memcpy(&u, *X + i, sizeof u);
    bad |= (uint64_t)((u & EXP) == EXP);
  }
  for(size_t i = 0; i < *n; i++){
    const double *x = *X + i * sc->ldx;
    int64_t row = k * sc->page_rows + (int64_t)i;
    for(size_t j = 0; bad && j < sc->ldx; j++)
      if( !isfinite(x[j]) )
        return fly_fail(err, FLY_CORRUPT, "data set %lld, row %lld (page "
                        "%lld), column %zu: value %g is not finite",
                        (long long)sc->ds, (long long)row + 1, (long long)k,
                        j + 1, x[j]);
    rc = sc->m->type->check_target(sc->m, x[sc->m->tcol], row, err);
    if( rc ){
      fly_err_prefix(err, "data set %lld", (long long)sc->ds);
      return rc;
    }
  }
  return FLY_OK;
}

/* Pages lo, lo + step, ... below hi of the scan at th, added into *ll
 * (sum of log L_n), g (its gradient, unweighted but for sc->wts) and H
 * (the likelihood's part of -hess), each when non-NULL; logL and work are
 * the caller's buffers (sc->logL, sc->work or a part's own). */
static fly_rc derivs_range(scan *sc, const double *th, int64_t lo, int64_t hi,
                           double *logL, double *work, double *ll, double *g,
                           double *H, fly_err *err)
{
  const fly_model *m = sc->m;
  size_t n;
  /* with the rows in memory, sc->block consecutive pages at a time (their
   * rows are consecutive there) */
  const int64_t span = sc->Xall && sc->stride == 1 ? sc->block : 1;
  const int64_t step = span > 1 ? span : sc->stride;
  for(int64_t k = lo; k < hi; k += step){
    const double *X = NULL;
    size_t nb = 0;
    for(int64_t q = k; q < k + span && q < hi; q++){
      const double *Xq;
      fly_rc rc = read_page(sc, q, &Xq, &n, err);
      if( rc ) return rc;
      if( !X ) X = Xq;
      nb += n;
    }
    n = nb;
    if( g ){
      m->type->eval(m, th, X, sc->ldx, NULL, n, logL, NULL, work);
      double s = 0;
      for(size_t i = 0; i < n; i++) s += logL[i];
      *ll += s;
      m->type->grad(m, th, X, sc->ldx, NULL, n, sc->wts, NULL, g, work);
    }
    if( H ) m->type->neg_hess(m, th, X, sc->ldx, n, H, work);
  }
  return FLY_OK;
}

/* The pages of part i of a split scan's `parts` parts: consecutive units
 * (blocks of `unit` pages, or single pages of a scan of every unit-th
 * page), as many to a part as the division gives; the same for the same
 * data and scan, whoever runs them. */
static void part_pages(const scan *sc, int64_t unit, int64_t parts, int64_t i,
                       int64_t *lo, int64_t *hi)
{
  const int64_t n_units = (sc->n_pages + unit - 1) / unit;
  *lo = i * n_units / parts * unit;
  *hi = (i + 1) * n_units / parts * unit;
  if( *hi > sc->n_pages ) *hi = sc->n_pages;
}

/* Parts of a split scan in units of `unit` pages: sc->parts (TUNE_PARTS,
 * or as few as two where a part's P x P sums take much memory), fewer for
 * few units. */
static int64_t scan_parts(const scan *sc, int64_t unit)
{
  const int64_t n_units = (sc->n_pages + unit - 1) / unit;
  int64_t n = n_units < sc->parts ? n_units : sc->parts;
  return n < 1 ? 1 : n;
}

/* derivs_range's unit with the rows in memory: a page of a strided scan,
 * else a block. */
static int64_t derivs_unit(const scan *sc)
{
  return sc->stride > 1 ? sc->stride : sc->block;
}

/* A split derivs (see derivs): its scan and point; the calling thread's
 * sums, NULL where not wanted. */
typedef struct dsum {
  scan         *sc;
  const double *th;
  double        ll, *g, *H;
} dsum;

static int derivs_part(void *u, int64_t i, int t)
{
  dsum *d = u;
  scan *sc = d->sc;
  int64_t lo, hi;
  part_pages(sc, derivs_unit(sc), scan_parts(sc, derivs_unit(sc)), i, &lo, &hi);
  double *g = d->g ? sc->pgr + (size_t)i * sc->P : NULL;
  double *H = d->H ? sc->pH + (size_t)i * sc->part_len : NULL;
  sc->pll[i] = 0;
  if( g ) memset(g, 0, sc->P * sizeof *g);
  if( H ) memset(H, 0, sc->P * sc->P * sizeof *H);
  sc->prc[i] = derivs_range(sc, d->th, lo, hi, t ? sc->logL2 : sc->logL,
                            t ? sc->work2 : sc->work, &sc->pll[i], g, H, &sc->perr[i]);
  return sc->prc[i] != FLY_OK;
}

/* Part i's sums added to the calling thread's, in part order. */
static int derivs_done(void *u, int64_t i)
{
  dsum *d = u;
  const scan *sc = d->sc;
  d->ll += sc->pll[i];
  if( d->g ){
    const double *g = sc->pgr + (size_t)i * sc->P;
    for(size_t k = 0; k < sc->P; k++) d->g[k] += g[k];
  }
  if( d->H ){
    const double *H = sc->pH + (size_t)i * sc->part_len;
    for(size_t k = 0; k < sc->P * sc->P; k++) d->H[k] += H[k];
  }
  return 0;
}

/* One scan at th of every sc->stride-th page, each row weighted by sc->w:
 * with f non-NULL, *f = -(log prior + w sum_n log L_n), and g = its
 * gradient; with H non-NULL, H = -hess log posterior (w = 1, stride 1:
 * the Laplace precision).  A scan of every page validates every row.
 * A split scan (sc->split, rows in memory) runs in parts on two threads
 * (util/par.h: fly_par_run), each part's sums its own, added in part
 * order: the same bits however the threads run. */
static fly_rc derivs(scan *sc, const double *th, double *f, double *g,
                     double *H, fly_err *err)
{
  const fly_model *m = sc->m;
  double ll = 0, lp = 0;
  fly_rc rc = FLY_OK;

  if( f ){
    memset(g, 0, sc->P * sizeof *g);
    lp = fly_model_log_prior(m, th, g);
  }
  if( H ) memset(H, 0, sc->P * sc->P * sizeof *H);
  if( sc->split && scan_parts(sc, derivs_unit(sc)) >= 2 ){
    dsum d = { sc, th, 0.0, f ? g : NULL, H };
    fly_par_job job = { scan_parts(sc, derivs_unit(sc)), derivs_part, derivs_done, &d };
    int64_t bad = fly_par_run(&job, 2);
    if( bad ){
      *err = sc->perr[bad - 1];
      return sc->prc[bad - 1];
    }
    ll = d.ll;
  }else{
    int began = fly_db_read_begin(sc->db);
    rc = derivs_range(sc, th, 0, sc->n_pages, sc->logL, sc->work, &ll, f ? g : NULL, H, err);
    fly_db_read_end(sc->db, began);
    if( rc ) return rc;
  }
  if( sc->stride == 1 ) sc->checked = 1;
  sc->n_scans++;
  if( H ) fly_model_prior_neg_hess(m, H);
  if( f ){
    *f = -(lp + sc->w * ll);
    for(size_t j = 0; j < sc->P; j++) g[j] = -g[j];
  }
  return FLY_OK;
}

/* L-BFGS objective: f = -(log prior + w sum_n log L_n), g = grad f, over
 * the pages of the scan's stride. */
static fly_rc objective(void *u, const double *th, double *f, double *g,
                        fly_err *err)
{
  return derivs(u, th, f, g, NULL, err);
}

static void progress(void *u, const fly_lbfgs_result *r)
{
  const scan *sc = u;
  say(sc, "  MAP iteration %3d: -log posterior %.12g, |grad| %.3g "
      "(%d scans, %.1f s)", r->iters, r->f, r->g_norm, sc->n_scans,
      now_seconds() - sc->t0);
}

/* LAPACK is column-major and flydb's matrices are row-major: a symmetric
 * matrix is its own transpose, so the column-major 'U' triangle of the array
 * is its row-major lower triangle, and dpotrf with 'U' leaves the lower
 * factor L (A = L L') there.  LAPACKE's column-major calls hand the array
 * to LAPACK as it is (its row-major ones would copy it to transpose it);
 * they first check the triangle for NaN (info -4). */

/* In place: the row-major lower Cholesky factor of SPD A (n x n), upper
 * part zeroed.  Returns 0, or LAPACKE's info: k > 0 when the leading minor
 * of order k is not positive definite, < 0 when A holds a NaN. */
static int chol_lower(double *A, size_t n)
{
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)n, A,
                                   (lapack_int)n);
  if( info ) return (int)info;
  for(size_t i = 0; i < n; i++)
    for(size_t j = i + 1; j < n; j++) A[i * n + j] = 0;
  return 0;
}

/* chol_lower's failure in words for a message: "leading minor k of n" or
 * "a NaN entry"; buf holds at least 64 bytes. */
static const char *chol_why(int info, size_t n, char *buf)
{
  if( info < 0 ) return "a NaN entry";
  snprintf(buf, 64, "leading minor %d of %zu", info, n);
  return buf;
}

/* In place: from chol_lower's factor of A to A^-1, full and symmetric.
 * Returns 0, or LAPACK's info (> 0: a zero diagonal element of the
 * factor; < 0: a NaN in it). */
static int chol_inverse(double *L, size_t n)
{
  lapack_int info = LAPACKE_dpotri(LAPACK_COL_MAJOR, 'U', (lapack_int)n, L,
                                   (lapack_int)n);
  if( info ) return (int)info;
  for(size_t i = 0; i < n; i++)
    for(size_t j = i + 1; j < n; j++) L[i * n + j] = L[j * n + i];
  return 0;
}

/* The D x D metric H_D of the thinning keys (stored as key_prec) from the
 * P x P Laplace precision H.  Any SPD H_D gives valid keys (Cauchy-Schwarz
 * |d'x| <= ||d||_{H_D} ||x||_{H_D^-1} holds for every one); the choice only
 * decides how tight they are.
 *   P = D: H_D = H, the Laplace precision (the keys of logistic.c).
 *   P = K D (K x D parameters, K >= 2, softmax): the class rows share the
 *     features, and radius() measures each centred class row d_k in H_D.
 *     H_D = (K/(K-1))^2 (1/K) sum_k H_kk, the scaled average of the D x D
 *     diagonal blocks.  The average tracks where the data inform the class
 *     rows (H_kk = sum_n p_nk (1 - p_nk) x_n x_n' + I/s^2) and is SPD as an
 *     average of diagonal blocks of an SPD matrix.  The scale only matters
 *     through gap_upper's floor max(1, r^2): with uniform class
 *     probabilities the centred rows have covariance
 *     (1 - 1/K) (S/K + I/s^2)^-1, S = sum x x', whose inverse is
 *     (K/(K-1))^2 times the average block up to the prior term, so r^2 is
 *     then about K D at posterior draws and the floor rarely binds.  (The
 *     inverse of the average centred covariance block would be the exact
 *     analogue of the logistic choice, but computing it from H^-1 cancels
 *     the prior-sized variance of the unidentified shift against the
 *     data-sized rest.)
 * Returns 0, or -1 if P is neither D nor a multiple of D (no metric). */
static int key_metric(size_t P, size_t D, const double *H, double *HD)
{
  if( P == D ){
    memcpy(HD, H, D * D * sizeof *HD);
    return 0;
  }
  if( D == 0 || P % D != 0 || P / D < 2 ) return -1;
  size_t K = P / D;
  double w = (double)K / ((double)(K - 1) * (double)(K - 1));  /* K/(K-1)^2 */
  for(size_t i = 0; i < D; i++)
    for(size_t j = 0; j < D; j++){
      double t = 0;
      for(size_t k = 0; k < K; k++) t += H[(k * D + i) * P + k * D + j];
      HD[i * D + j] = w * t;
    }
  return 0;
}

/* ---- the bound_set row ---------------------------------------------- */

/* Find the bound set of this key: *id = 0 if none, else its id and
 * whether it is ready. */
static fly_rc find_set(fly_db *db, int64_t ds, const char *model,
                       const char *mopts, const char *tuning, int64_t *id,
                       int *ready, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT id, status = 'ready' FROM bound_set"
                             " WHERE dataset_id = ?1 AND model = ?2 AND"
                             " model_opts = ?3 AND tuning = ?4", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, ds);
  sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, mopts, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, tuning, -1, SQLITE_STATIC);
  *id = 0;
  *ready = 0;
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    *id = sqlite3_column_int64(st, 0);
    *ready = sqlite3_column_int(st, 1);
  }else if( s != SQLITE_DONE ){
    rc = fly_db_fail(db, err, "looking up bound sets");
  }
  sqlite3_finalize(st);
  return rc;
}

/* --force may only replace a bound set no run refers to. */
static fly_rc check_unused(fly_db *db, int64_t id, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT count(*), min(id) FROM run WHERE"
                             " bound_set_id = ?1", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, id);
  if( sqlite3_step(st) != SQLITE_ROW ){
    rc = fly_db_fail(db, err, "looking up runs of a bound set");
  }else if( sqlite3_column_int64(st, 0) > 0 ){
    rc = fly_fail(err, FLY_MISUSE, "bound set %lld is used by %lld run(s) "
                  "(e.g. run %lld): rebuilding it would orphan their "
                  "checkpoints; delete those runs first or tune without "
                  "--force", (long long)id,
                  (long long)sqlite3_column_int64(st, 0),
                  (long long)sqlite3_column_int64(st, 1));
  }
  sqlite3_finalize(st);
  return rc;
}

/* The data set's shape, checked against the model. */
static fly_rc load_shape(fly_db *db, int64_t ds, const fly_model *m,
                         int64_t *n_feat, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT n_features, width FROM dataset"
                             " WHERE id = ?1", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, ds);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    int64_t width = sqlite3_column_int64(st, 1);
    *n_feat = sqlite3_column_int64(st, 0);
    if( *n_feat != (int64_t)m->D || m->tcol >= (size_t)width
        || m->D > (size_t)width )
      rc = fly_fail(err, FLY_MISUSE, "model %s with %zu features and the "
                    "target in column %zu does not fit data set %lld (%lld "
                    "features, %lld values a row)", m->type->name, m->D,
                    m->tcol + 1, (long long)ds, (long long)*n_feat,
                    (long long)width);
  }else if( s == SQLITE_DONE ){
    rc = fly_fail(err, FLY_RANGE, "no data set %lld in %s", (long long)ds,
                  fly_db_path(db));
  }else{
    rc = fly_db_fail(db, err, "reading the data set");
  }
  sqlite3_finalize(st);
  return rc;
}

static fly_rc step_done(fly_db *db, sqlite3_stmt *st, const char *what,
                        fly_err *err)
{
  int s = sqlite3_step(st);
  sqlite3_reset(st);
  if( s != SQLITE_DONE ) return fly_db_fail(db, err, what);
  return FLY_OK;
}

/* Write the moment table of bound set id. */
static fly_rc store_moments(fly_db *db, int64_t id, const fly_model *m,
                            const double *mom, size_t n_mom, fly_err *err)
{
  fly_moment_section sec[MAX_SECTIONS];
  sqlite3_stmt *st = NULL;
  size_t n_sec = m->type->moment_layout(m, sec), off = 0;
  fly_rc rc;

  if( n_sec > MAX_SECTIONS )
    return fly_fail(err, FLY_MISUSE, "model %s: %zu moment sections, at most "
                    "%d", m->type->name, n_sec, MAX_SECTIONS);
  rc = fly_db_prepare(db, "INSERT INTO moment(bound_set_id, name, i, j, value)"
                      " VALUES (?1, ?2, ?3, ?4, ?5)", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, id);
  for(size_t q = 0; q < n_sec && rc == FLY_OK; q++){
    sqlite3_bind_text(st, 2, sec[q].name, -1, SQLITE_STATIC);
    for(size_t i = 0; i < sec[q].rows && rc == FLY_OK; i++)
      for(size_t j = 0; j < sec[q].cols && rc == FLY_OK; j++, off++){
        if( off >= n_mom ){
          rc = fly_fail(err, FLY_MISUSE, "model %s: moment sections exceed "
                        "its %zu moments", m->type->name, n_mom);
          break;
        }
        if( !isfinite(mom[off]) ){
          rc = fly_fail(err, FLY_NUMERIC, "moment %s[%zu,%zu] is %g",
                        sec[q].name, i, j, mom[off]);
          break;
        }
        sqlite3_bind_int64(st, 3, (sqlite3_int64)i);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)j);
        sqlite3_bind_double(st, 5, mom[off]);
        rc = step_done(db, st, "storing moments", err);
      }
  }
  if( rc == FLY_OK && off != n_mom )
    rc = fly_fail(err, FLY_MISUSE, "model %s: moment sections cover %zu of "
                  "its %zu moments", m->type->name, off, n_mom);
  sqlite3_finalize(st);
  return rc;
}

/* ---- building ------------------------------------------------------- */

typedef struct build {
  const char *mopts, *tuning;
  int         fixed;        /* fixed tuning */
  double      fixed_xi;
  int         force;
  int         max_iter;
  double      g_tol;
  int         full_lbfgs;   /* no subsample start (fly_tune_opts) */
  const double *X;          /* all rows in memory, or NULL (fly_tune_opts) */
  const fly_pages *data_map; /* (fly_tune_opts) */
  const fly_tune_given *given;  /* NULL: search the MAP and H here */
} build;

/* One thread's buffers for bound rows (bound_page). */
typedef struct bwork {
  double *xid;    /* page_rows x n_xi */
  float  *xf;     /* the same rounded to f32 */
  double *Y;      /* page_rows x D */
  double *logL;   /* page_rows */
  double *work;   /* type->work_len(m, page_rows) */
  double *rows;   /* page_rows x (n_xi + 1): the page's bound rows */
  double *xn;     /* page_rows: the rows' |x|_P */
  double *keys;   /* page_rows: their thinning keys (fly_model_keys) */
} bwork;

static void bwork_free(bwork *b)
{
  fly_free(b->xid);
  fly_free(b->xf);
  fly_free(b->Y);
  fly_free(b->logL);
  fly_free(b->work);
  fly_free(b->rows);
  fly_free(b->xn);
  fly_free(b->keys);
  memset(b, 0, sizeof *b);
}

static fly_rc bwork_new(const scan *sc, size_t pages, bwork *b, fly_err *err)
{
  const fly_model *m = sc->m;
  const size_t n_xi = m->type->n_xi(m), pr = (size_t)sc->page_rows * pages;
  size_t wl = m->type->work_len(m, pr);
  memset(b, 0, sizeof *b);
  b->xid = fly_alloc_array(pr * n_xi, sizeof *b->xid);
  b->xf = fly_alloc_array(pr * n_xi, sizeof *b->xf);
  b->Y = fly_alloc_array(pr * (sc->D ? sc->D : 1), sizeof *b->Y);
  b->logL = fly_alloc_array(pr, sizeof *b->logL);
  b->work = fly_alloc_array(wl ? wl : 1, sizeof *b->work);
  b->rows = fly_alloc_array(pr, (n_xi + 1) * sizeof *b->rows);
  b->xn = fly_alloc_array(pr, sizeof *b->xn);
  b->keys = fly_alloc_array(pr, sizeof *b->keys);
  if( !b->xid || !b->xf || !b->Y || !b->logL || !b->work || !b->rows || !b->xn || !b->keys ){
    bwork_free(b);
    return fly_fail(err, FLY_NOMEM, "bound page buffers (%zu rows)", pr);
  }
  return FLY_OK;
}

/* The bound rows of data pages k .. k + np - 1 into bw->rows (*n rows of
 * n_xi + 1 values, as stored: the xi rounded to f32 once, the key rounded
 * up to f32, NaN with fixed tuning), their moments added into mom and,
 * with g non-NULL, their sum of log L_n at th into *ll and gradient into
 * g.  np > 1 only with the rows in memory (consecutive there), bw sized
 * for np pages.  LD: lower Cholesky factor of the key metric H_D (D x D). */
static fly_rc bound_page(scan *sc, const build *bd, const double *th, const double *LD,
                         int64_t k, int64_t np, bwork *bw, size_t *n, double *mom,
                         double *ll, double *g, fly_err *err)
{
  const fly_model *m = sc->m;
  const size_t n_xi = m->type->n_xi(m), D = sc->D;
  const double *X = NULL;
  fly_rc rc;
  *n = 0;
  for(int64_t q = k; q < k + np; q++){
    const double *Xq;
    size_t nq;
    if( (rc = read_page(sc, q, &Xq, &nq, err)) ) return rc;
    if( !X ) X = Xq;
    *n += nq;
  }
  if( g ){
    m->type->eval(m, th, X, sc->ldx, NULL, *n, bw->logL, NULL, bw->work);
    for(size_t i = 0; i < *n; i++) *ll += bw->logL[i];
    m->type->grad(m, th, X, sc->ldx, NULL, *n, sc->wts, NULL, g, bw->work);
  }
  if( !bd->fixed ){
    m->type->xi_at(m, th, X, sc->ldx, *n, bw->xid, bw->work);
    for(size_t i = 0; i < *n; i++)
      memcpy(bw->Y + i * D, X + i * sc->ldx, D * sizeof *bw->Y);
    /* Y = X_D L_D^-T: row i is L_D^-1 x_i, so |row i|^2 = x_i' H_D^-1 x_i. */
    if( D && *n )
      cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                  CblasNonUnit, (int)*n, (int)D, 1.0, LD, (int)D, bw->Y, (int)D);
  }else{
    for(size_t i = 0; i < *n * n_xi; i++) bw->xid[i] = bd->fixed_xi;
  }
  for(size_t i = 0; i < *n; i++){
    int64_t r = k * sc->page_rows + (int64_t)i;
    float *xr = bw->xf + i * n_xi;
    double *row = bw->rows + i * (n_xi + 1);
    for(size_t q = 0; q < n_xi; q++){
      xr[q] = (float)bw->xid[i * n_xi + q];  /* rounded to nearest, once */
      row[q] = xr[q];
      if( !isfinite(xr[q]) )
        return fly_fail(err, FLY_NUMERIC, "data set %lld, row %lld: bound "
                        "parameter %g is not finite at the MAP",
                        (long long)sc->ds, (long long)r + 1, bw->xid[i * n_xi + q]);
    }
    if( bd->fixed ) row[n_xi] = NAN;
  }
  if( !bd->fixed ){
    /* the keys of all the rows at once (fly_model_keys) */
    for(size_t i = 0; i < *n; i++){
      double y2 = 0;
      for(size_t j = 0; j < D; j++) y2 += bw->Y[i * D + j] * bw->Y[i * D + j];
      bw->xn[i] = sqrt(y2);
    }
    if( m->type->thin ) fly_model_keys(m, bw->xf, bw->xn, *n, bw->keys, bw->work);
    else for(size_t i = 0; i < *n; i++) bw->keys[i] = INFINITY;
    for(size_t i = 0; i < *n; i++){
      double key = bw->keys[i];
      float kf = (float)key;
      if( (double)kf < key ) kf = nextafterf(kf, INFINITY);
      if( !(key >= 0) )
        return fly_fail(err, FLY_NUMERIC, "data set %lld, row %lld: thinning "
                        "key %g (|x|_P = %g) is not a number >= 0", (long long)sc->ds,
                        (long long)(k * sc->page_rows + (int64_t)i) + 1, key, bw->xn[i]);
      bw->rows[i * (n_xi + 1) + n_xi] = kf;
    }
  }
  m->type->moments_add(m, X, sc->ldx, bw->xf, *n, mom, bw->work);
  return FLY_OK;
}

/* A split bounds' scan (write_bounds): part i (part_pages in blocks of
 * TUNE_BLOCK pages) computes its pages' bound rows with its thread's
 * buffers, encodes each full page into enc + k * cap with blob[k] saying
 * how (a short last page's rows go to `last`), and sums its moments, log L
 * and gradient into the scan's part sums; bound_done, on the calling
 * thread and in part order, adds those to the calling thread's sums and
 * inserts the part's pages. */
typedef struct bjob {
  scan                 *sc;
  const build          *bd;
  fly_pagewriter       *w;
  const double         *th, *LD;
  int64_t               parts;
  bwork                 bw[2];
  void                 *scratch[2];
  unsigned char        *enc;
  size_t                cap, width, n_mom;
  fly_page_blob        *blob;
  double               *last;
  size_t                n_last;
  double               *mom, ll, *g;
} bjob;

static int bound_part(void *u, int64_t i, int t)
{
  bjob *j = u;
  scan *sc = j->sc;
  const int64_t pr = sc->page_rows;
  int64_t lo, hi;
  fly_rc rc = FLY_OK;
  part_pages(sc, TUNE_BLOCK, j->parts, i, &lo, &hi);
  double *mom = sc->pH + (size_t)i * sc->part_len;
  double *g = j->g ? sc->pgr + (size_t)i * sc->P : NULL;
  memset(mom, 0, j->n_mom * sizeof *mom);
  if( g ) memset(g, 0, sc->P * sizeof *g);
  sc->pll[i] = 0;
  for(int64_t k = lo; k < hi && rc == FLY_OK; k += TUNE_BLOCK){
    int64_t np = hi - k < TUNE_BLOCK ? hi - k : TUNE_BLOCK;
    size_t n = 0;
    rc = bound_page(sc, j->bd, j->th, j->LD, k, np, &j->bw[t], &n, mom, &sc->pll[i], g,
                    &sc->perr[i]);
    for(int64_t q = 0; rc == FLY_OK && q < np; q++){
      const double *rows = j->bw[t].rows + (size_t)(q * pr) * j->width;
      if( (int64_t)n - q * pr < pr ){          /* the last page, short */
        j->n_last = n - (size_t)(q * pr);
        memcpy(j->last, rows, j->n_last * j->width * sizeof *rows);
        break;
      }
      rc = fly_pagewriter_encode(j->w, rows, j->scratch[t], j->enc + (size_t)(k + q) * j->cap,
                                 &j->blob[k + q], &sc->perr[i]);
    }
  }
  sc->prc[i] = rc;
  return rc != FLY_OK;
}

static int bound_done(void *u, int64_t i)
{
  bjob *j = u;
  scan *sc = j->sc;
  int64_t lo, hi;
  fly_rc rc = FLY_OK;
  part_pages(sc, TUNE_BLOCK, j->parts, i, &lo, &hi);
  const double *mom = sc->pH + (size_t)i * sc->part_len;
  for(size_t k = 0; k < j->n_mom; k++) j->mom[k] += mom[k];
  j->ll += sc->pll[i];
  if( j->g ){
    const double *g = sc->pgr + (size_t)i * sc->P;
    for(size_t k = 0; k < sc->P; k++) j->g[k] += g[k];
  }
  for(int64_t k = lo; k < hi && rc == FLY_OK; k++){
    if( k == sc->n_pages - 1 && j->n_last ){
      for(size_t r = 0; r < j->n_last && rc == FLY_OK; r++)
        rc = fly_pagewriter_add(j->w, j->last + r * j->width, &sc->perr[i]);
    }else{
      rc = fly_pagewriter_put(j->w, &j->blob[k], &sc->perr[i]);
    }
  }
  sc->prc[i] = rc;
  return rc != FLY_OK;
}

static void bjob_free(bjob *j)
{
  for(int t = 0; t < 2; t++){
    bwork_free(&j->bw[t]);
    fly_free(j->scratch[t]);
  }
  fly_free(j->enc);
  fly_free(j->blob);
  fly_free(j->last);
}

/* Pass (c): bound pages and moments for bound set id, in the caller's
 * transaction.  LD: lower Cholesky factor of the key metric H_D (D x D).
 * f non-NULL: also f = -log posterior and g = its gradient at th (P
 * values) in the same scan.  With sc->split (rows in memory after Newton
 * steps) two threads compute and encode a half of the pages each, the
 * calling thread inserts them in order: the pages are those of one
 * thread, the second half's moments (and sums) are added to the
 * first's. */
static fly_rc write_bounds(fly_db *db, scan *sc, int64_t id, const build *bd,
                           const double *th, const double *LD, double *mom,
                           double *f, double *g, int64_t *n_pages,
                           fly_err *err)
{
  double ll = 0, lp = 0;
  const fly_model *m = sc->m;
  const size_t n_xi = m->type->n_xi(m), n_mom = m->type->n_moments(m);
  fly_pagewriter *w = NULL;
  bwork bw;
  bjob bj;
  int split = sc->split && scan_parts(sc, TUNE_BLOCK) >= 2;
  fly_rc rc;
  size_t n;

  memset(&bw, 0, sizeof bw);
  memset(&bj, 0, sizeof bj);
  rc = fly_pagewriter_open(db, FLY_TABLE_BOUND, id, n_xi + 1, sc->page_rows,
                           FLY_PREC_F32, &w, err);
  if( rc ) return rc;
  memset(mom, 0, n_mom * sizeof *mom);
  if( f ){
    memset(g, 0, sc->P * sizeof *g);
    lp = fly_model_log_prior(m, th, g);
  }

  if( !split ){
    if( (rc = bwork_new(sc, 1, &bw, err)) ) goto done;
    for(int64_t k = 0; k < sc->n_pages; k++){
      if( (rc = bound_page(sc, bd, th, LD, k, 1, &bw, &n, mom, &ll, f ? g : NULL, err)) )
        goto done;
      for(size_t i = 0; i < n; i++)
        if( (rc = fly_pagewriter_add(w, bw.rows + i * (n_xi + 1), err)) ) goto done;
    }
  }else{
    const size_t sb = fly_pagewriter_scratch_bytes(w);
    bj = (bjob){ .sc = sc, .bd = bd, .w = w, .th = th, .LD = LD,
                 .parts = scan_parts(sc, TUNE_BLOCK), .cap = fly_pagewriter_enc_bound(w),
                 .width = n_xi + 1, .n_mom = n_mom, .mom = mom, .g = f ? g : NULL };
    for(int t = 0; t < 2 && rc == FLY_OK; t++){
      rc = bwork_new(sc, TUNE_BLOCK, &bj.bw[t], err);
      if( rc == FLY_OK && !(bj.scratch[t] = fly_alloc_array(sb ? sb : 1, 1)) )
        rc = fly_fail(err, FLY_NOMEM, "bound page encoding");
    }
    if( rc ) goto done;
    bj.enc = fly_alloc_array((size_t)sc->n_pages, bj.cap);
    bj.blob = fly_alloc_array((size_t)sc->n_pages, sizeof *bj.blob);
    bj.last = fly_alloc_array((size_t)sc->page_rows, bj.width * sizeof *bj.last);
    if( !bj.enc || !bj.blob || !bj.last ){
      rc = fly_fail(err, FLY_NOMEM, "bound pages of %lld data pages", (long long)sc->n_pages);
      goto done;
    }
    fly_par_job job = { bj.parts, bound_part, bound_done, &bj };
    int64_t bad = fly_par_run(&job, 2);
    if( bad ){
      *err = sc->perr[bad - 1];
      rc = sc->prc[bad - 1];
      goto done;
    }
    ll = bj.ll;
  }
  sc->n_scans++;
  if( f ){
    *f = -(lp + ll);
    for(size_t j = 0; j < sc->P; j++) g[j] = -g[j];
  }
  if( (rc = fly_pagewriter_finish(w, err)) ) goto done;
  *n_pages = fly_pagewriter_pages(w);
  if( *n_pages != sc->n_pages || fly_pagewriter_rows(w) != sc->n_rows )
    rc = fly_fail(err, FLY_CORRUPT, "data set %lld: wrote %lld bound rows in "
                  "%lld pages for %lld rows in %lld pages", (long long)sc->ds,
                  (long long)fly_pagewriter_rows(w), (long long)*n_pages,
                  (long long)sc->n_rows, (long long)sc->n_pages);
done:
  bjob_free(&bj);
  bwork_free(&bw);
  fly_pagewriter_free(w);
  return rc;
}

/* Explain a failed MAP search to a statistician. */
static fly_rc map_failed(const scan *sc, const fly_lbfgs_result *r,
                         fly_err *err)
{
  return fly_err_prefix(err, "finding the MAP of data set %lld failed after "
                        "%d iterations (%s); the posterior may have no mode: "
                        "if the data are (nearly) separable or a feature is "
                        "constant, use a stronger prior (prior scale below "
                        "%g)", (long long)sc->ds, r->iters,
                        fly_lbfgs_stop_str(r->stop), sc->m->prior_scale);
}

/* The MAP from a subsample start (file comment, (a)): L-BFGS on every
 * stride-th page, each row weighted by rows / rows read, then Newton steps
 * on the full data, each one scan for f, g and H.  *found = 1: th is the
 * MAP, H the Laplace precision there and *lr the search's figures; 0: the
 * data are too short for a subsample to pay (or the prior is not smooth),
 * or Newton did not converge, and th is the best point seen (0 if none),
 * for the full L-BFGS to start from.  *unscanned = 1: th is a last step
 * not scanned, lr->f and lr->g_norm are those before it.  L: P x P
 * scratch. */
static fly_rc sub_newton(scan *sc, fly_lbfgs *lb, const build *bd, double *th,
                         double *H, double *L, fly_lbfgs_result *lr,
                         int *found, int *unscanned, fly_err *err)
{
  const size_t P = sc->P;
  const double want = fmax(TUNE_SUB_ROWS, TUNE_SUB_PER_P * (double)P);
  const int64_t stride = (int64_t)floor((double)sc->n_rows / want);
  double *g = NULL, *best = NULL, f = 0, fbest = INFINITY, lam2_prev = INFINITY;
  fly_lbfgs_opts lo;
  fly_lbfgs_result ls;
  fly_rc rc = FLY_OK;
  int halve = 0;

  *found = 0;
  *unscanned = 0;
  if( bd->full_lbfgs || sc->m->prior != FLY_PRIOR_NORMAL
      || stride < TUNE_SUB_MIN_STRIDE )
    return FLY_OK;
  g = fly_alloc_array(P, sizeof *g);
  best = fly_alloc_array(P, sizeof *best);
  if( !g || !best ){
    rc = fly_fail(err, FLY_NOMEM, "MAP search (%zu parameters)", P);
    goto done;
  }
  /* rows of pages 0, stride, 2 stride, ...: whole pages but the last */
  int64_t n_sub = 0;
  for(int64_t k = 0; k < sc->n_pages; k += stride)
    n_sub += k + 1 < sc->n_pages ? sc->page_rows
                                 : sc->n_rows - k * sc->page_rows;
  sc->stride = stride;
  sc->w = (double)sc->n_rows / (double)n_sub;
  for(int64_t i = 0; i < sc->page_rows; i++) sc->wts[i] = sc->w;
  fly_lbfgs_opts_default(&lo);
  lo.m = TUNE_LBFGS_M;
  lo.g_tol = TUNE_SUB_G_TOL;
  lo.f_tol = TUNE_F_TOL;
  lo.dec_tol = TUNE_DEC_TOL;
  lo.max_iter = bd->max_iter;
  lo.max_evals = 4 * bd->max_iter + 20;
  lo.progress = progress;
  lo.progress_user = sc;
  sc->split = sc->Xall != NULL;
  rc = fly_lbfgs_run(lb, objective, sc, th, &lo, &ls, err);
  sc->split = 0;
  sc->stride = 1;
  sc->w = 1;
  for(int64_t i = 0; i < sc->page_rows; i++) sc->wts[i] = 1;
  if( rc == FLY_NUMERIC ){
    /* a subsample can be separable where the whole is not */
    say(sc, "  subsample MAP search failed (%s); searching the full data",
        fly_lbfgs_stop_str(ls.stop));
    fly_err_clear(err);
    memset(th, 0, P * sizeof *th);
    rc = FLY_OK;
    goto done;
  }
  if( rc ) goto done;
  say(sc, "  subsample of every %lld-th page (%lld rows): %d iterations, "
      "%d scans of it", (long long)stride, (long long)n_sub, ls.iters, ls.evals);

  memcpy(best, th, P * sizeof *best);
  sc->split = sc->Xall != NULL;
  for(int it = 1; it <= TUNE_NEWTON_MAX; it++){
    sc->block = TUNE_BLOCK;
    rc = derivs(sc, th, &f, g, H, err);
    sc->block = 1;
    if( rc ) goto done;
    if( !(f <= fbest + TUNE_NEWTON_SLACK * fabs(fbest)) ){
      /* worse (or not finite): halve the step from the best point */
      if( !isfinite(fbest) || ++halve > TUNE_NEWTON_HALVE ) break;
      for(size_t j = 0; j < P; j++) th[j] = best[j] + 0.5 * (th[j] - best[j]);
      lam2_prev = INFINITY;     /* a halved step tells no contraction */
      continue;
    }
    halve = 0;
    fbest = f;
    memcpy(best, th, P * sizeof *best);
    memcpy(L, H, P * P * sizeof *L);
    if( chol_lower(L, P) != 0 ) break;   /* not convex here: L-BFGS */
    double gn = cblas_dnrm2((int)P, g, 1);
    /* g <- L^-1 g: its squared norm is the Newton decrement g' H^-1 g */
    cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)P,
                L, (int)P, g, 1);
    double lam2 = cblas_ddot((int)P, g, 1, g, 1);
    lr->iters = ls.iters + it;
    lr->evals = ls.evals + it;
    lr->f = f;
    lr->g_norm = gn;
    lr->g_norm0 = ls.g_norm0;
    lr->stop = FLY_LBFGS_DECREMENT;
    say(sc, "  Newton step %d on the full data: -log posterior %.12g, |grad| "
        "%.3g, decrement %.3g (%d scans, %.1f s)", it, f, gn, lam2,
        sc->n_scans, now_seconds() - sc->t0);
    /* the step lands within about lam2^2 (quadratic convergence), or
     * within lam2^3 / lam2_prev^2 by the contraction of the last step */
    int last = lam2 <= TUNE_NEWTON_LAST
               || (lam2 < lam2_prev && isfinite(lam2_prev)
                   && TUNE_NEWTON_MARGIN * lam2 * lam2 * lam2
                      <= TUNE_NEWTON_LAST * lam2_prev * lam2_prev);
    lam2_prev = lam2;
    if( 0.5 * lam2 <= fmax(TUNE_NEWTON_TOL, TUNE_DEC_TOL * fabs(f)) ){
      *found = 1;   /* H is at th */
      goto done;
    }
    /* th <- th - H^-1 g */
    cblas_dtrsv(CblasRowMajor, CblasLower, CblasTrans, CblasNonUnit, (int)P,
                L, (int)P, g, 1);
    for(size_t j = 0; j < P; j++) th[j] -= g[j];
    if( last ){
      /* The step lands within TUNE_NEWTON_LAST of the MAP, and H, from
       * sqrt(lam2) sds away, is the Laplace precision to O(sqrt(lam2 / N))
       * of itself.  f and g there come from the bounds' scan. */
      *unscanned = 1;
      *found = 1;
      goto done;
    }
  }
  if( isfinite(fbest) ) memcpy(th, best, P * sizeof *th);
  else memset(th, 0, P * sizeof *th);
  sc->split = 0;     /* the full L-BFGS as without a subsample start */
  say(sc, "  Newton steps did not converge; L-BFGS on the full data");
done:
  fly_free(g);
  fly_free(best);
  return rc;
}

static fly_rc build_set(fly_db *db, int64_t ds, const fly_model *m,
                        const build *bd, int verbose, int64_t *out_id,
                        fly_err *err)
{
  scan sc;
  fly_lbfgs *lb = NULL;
  fly_lbfgs_opts lo;
  fly_lbfgs_result lr;
  sqlite3_stmt *st = NULL;
  double *th = NULL, *H = NULL, *L = NULL, *cov = NULL, *mom = NULL;
  double *HD = NULL, *LD = NULL;
  int64_t n_feat = 0, id = 0, old = 0, n_pages = 0;
  int in_tx = 0, ready = 0, info, have_H = 0, unscanned = 0;
  char why[64];
  size_t P, pr, br, wl;
  fly_rc rc;

  memset(&sc, 0, sizeof sc);
  sc.db = db;
  sc.m = m;
  sc.ds = ds;
  sc.verbose = verbose;
  sc.t0 = now_seconds();
  if( (rc = load_shape(db, ds, m, &n_feat, err)) ) return rc;
  P = m->type->n_params(m);
  if( !bd->fixed && P != m->D && (m->D == 0 || P % m->D != 0) ){
    /* ||x||_P needs a D x D metric (key_metric): D or K x D parameters. */
    return fly_fail(err, FLY_MISUSE, "model %s: MAP-tuned thinning keys need "
                    "a D x D metric, which %zu parameters over %zu features "
                    "do not give; use fixed tuning", m->type->name, P, m->D);
  }
  if( (rc = fly_pages_open_like(db, FLY_TABLE_DATA, ds, bd->data_map, 0, &sc.pg, err)) )
    return rc;
  const fly_pages_info *in = fly_pages_info_of(sc.pg);
  sc.P = P;
  sc.D = m->D;
  sc.ldx = in->width;
  sc.page_rows = in->page_rows;
  sc.n_pages = in->n_pages;
  sc.n_rows = in->n_rows;
  pr = (size_t)in->page_rows;
  sc.Xall = bd->X;
  sc.block = 1;
  /* the evaluation buffers hold a block of TUNE_BLOCK pages with Xall */
  br = sc.Xall ? pr * TUNE_BLOCK : pr;
  wl = m->type->work_len(m, br);
  sc.X = fly_alloc_array(pr, in->width * sizeof(double));
  sc.logL = fly_alloc_array(br, sizeof(double));
  sc.wts = fly_alloc_array(br, sizeof(double));
  sc.work = fly_alloc_array(wl ? wl : 1, sizeof(double));
  if( sc.Xall ){
    /* a split scan's parts: each holds P x P sums in derivs and the
     * moments in write_bounds; at most TUNE_PARTS_BYTES of them */
    size_t n_mom = m->type->n_moments(m), per = P * P > n_mom ? P * P : n_mom;
    size_t cap = TUNE_PARTS_BYTES / (sizeof(double) * (per + P + 1));
    sc.part_len = per;
    sc.parts = cap < 2 ? 2 : cap > TUNE_PARTS ? TUNE_PARTS : (int64_t)cap;
    sc.logL2 = fly_alloc_array(br, sizeof(double));
    sc.work2 = fly_alloc_array(wl ? wl : 1, sizeof(double));
    sc.pll = fly_alloc_array((size_t)sc.parts, sizeof(double));
    sc.pgr = fly_alloc_array((size_t)sc.parts * P, sizeof(double));
    sc.pH = fly_alloc_array((size_t)sc.parts * per, sizeof(double));
    sc.prc = fly_alloc_array((size_t)sc.parts, sizeof *sc.prc);
    sc.perr = fly_alloc_array((size_t)sc.parts, sizeof *sc.perr);
    if( !sc.logL2 || !sc.work2 || !sc.pll || !sc.pgr || !sc.pH || !sc.prc || !sc.perr ){
      rc = fly_fail(err, FLY_NOMEM, "tuning buffers for pages of %zu rows", pr);
      goto done;
    }
  }
  th = fly_alloc_array(P, sizeof *th);
  H = fly_alloc_array(P * P, sizeof *H);
  L = fly_alloc_array(P * P, sizeof *L);
  cov = fly_alloc_array(P * P, sizeof *cov);
  mom = fly_alloc_array(m->type->n_moments(m), sizeof *mom);
  HD = fly_alloc_array(m->D ? m->D * m->D : 1, sizeof *HD);
  LD = fly_alloc_array(m->D ? m->D * m->D : 1, sizeof *LD);
  if( !sc.X || !sc.logL || !sc.wts || !sc.work || !th || !H || !L || !cov
      || !mom || !HD || !LD ){
    rc = fly_fail(err, FLY_NOMEM, "tuning buffers for pages of %zu rows", pr);
    goto done;
  }
  for(size_t i = 0; i < br; i++) sc.wts[i] = 1;
  sc.stride = 1;
  sc.w = 1;

  /* (a) MAP. */
  say(&sc, "data set %lld: %lld rows, %zu features, %lld pages; model %s "
      "(%s), tuning %s", (long long)ds, (long long)sc.n_rows, m->D,
      (long long)sc.n_pages, m->type->name, bd->mopts, bd->tuning);
  if( bd->given ){
    /* The MAP and H of the whole, found elsewhere: only the bounds here. */
    memcpy(th, bd->given->theta, P * sizeof *th);
    memset(&lr, 0, sizeof lr);
    lr.f = -bd->given->logpost;
    lr.iters = bd->given->iters;
    lr.g_norm = bd->given->g_norm;
    goto laplace;
  }
  if( (rc = fly_lbfgs_new(P, TUNE_LBFGS_M, &lb, err)) ) goto done;
  if( (rc = sub_newton(&sc, lb, bd, th, H, L, &lr, &have_H, &unscanned, err)) )
    goto done;
  if( have_H ){
    say(&sc, "MAP: %d iterations, %d scans, %.2f s; log posterior %.12g, "
        "|grad| %.3g%s", lr.iters, sc.n_scans,
        now_seconds() - sc.t0, -lr.f, lr.g_norm,
        unscanned ? " before the last step" : "");
    goto laplace;
  }
  fly_lbfgs_opts_default(&lo);
  lo.m = TUNE_LBFGS_M;
  lo.g_tol = bd->g_tol;
  lo.f_tol = TUNE_F_TOL;
  lo.dec_tol = TUNE_DEC_TOL;
  lo.max_iter = bd->max_iter;
  lo.max_evals = 4 * bd->max_iter + 20;
  lo.progress = progress;
  lo.progress_user = &sc;
  rc = fly_lbfgs_run(lb, objective, &sc, th, &lo, &lr, err);
  if( rc == FLY_NUMERIC && lr.stop == FLY_LBFGS_LINESEARCH
      && (m->prior == FLY_PRIOR_LAPLACE
          || lr.g_norm <= 1e-6 * fmax(1, lr.g_norm0)) ){
    /* No decrease along steepest descent: at the kinks of a Laplace prior
     * (not differentiable at 0), or at the precision of the sum.  The point
     * is as good a centre as any: bounds are exact for every xi. */
    say(&sc, "  MAP search stopped at the precision limit (|grad| %.3g); "
        "using that point", lr.g_norm);
    fly_err_clear(err);
    rc = FLY_OK;
  }
  if( rc ){
    if( rc == FLY_NUMERIC ) map_failed(&sc, &lr, err);
    goto done;
  }
  if( lr.stop == FLY_LBFGS_MAXITER || lr.stop == FLY_LBFGS_MAXEVAL )
    say(&sc, "  warning: MAP not converged (%s; |grad| %.3g from %.3g); the "
        "bounds stay exact but looser", fly_lbfgs_stop_str(lr.stop),
        lr.g_norm, lr.g_norm0);
  say(&sc, "MAP: %d iterations, %d scans, %.2f s; log posterior %.12g, "
      "|grad| %.3g (%s)", lr.iters, lr.evals, now_seconds() - sc.t0, -lr.f,
      lr.g_norm, fly_lbfgs_stop_str(lr.stop));

  /* (b) Laplace matrices. */
  if( (rc = derivs(&sc, th, NULL, NULL, H, err)) ) goto done;
laplace:
  if( bd->given ) memcpy(H, bd->given->H, P * P * sizeof *H);
  memcpy(L, H, P * P * sizeof *L);
  if( (info = chol_lower(L, P)) != 0 ){
    double big = 0;
    for(size_t j = 0; j < P; j++) big = fmax(big, fabs(th[j]));
    rc = fly_fail(err, FLY_NUMERIC, "the Hessian of the log posterior at the "
                  "MAP of data set %lld is not positive definite (%s; "
                  "largest |theta| %.3g): the MAP may not "
                  "exist, or a feature is constant or collinear with others; "
                  "with (nearly) separable data use a stronger prior (prior "
                  "scale below %g)", (long long)ds, chol_why(info, P, why), big,
                  m->prior_scale);
    goto done;
  }
  memcpy(cov, L, P * P * sizeof *cov);
  if( (info = chol_inverse(cov, P)) != 0 ){
    rc = fly_fail(err, FLY_NUMERIC, "inverting the Hessian at the MAP of data "
                  "set %lld failed (LAPACK info %d)", (long long)ds, info);
    goto done;
  }
  if( key_metric(P, m->D, H, HD) != 0 ){
    /* fixed tuning of a model without a D x D metric: keys are unused */
    memset(HD, 0, m->D * m->D * sizeof *HD);
    for(size_t j = 0; j < m->D; j++) HD[j * m->D + j] = 1;
  }
  memcpy(LD, HD, m->D * m->D * sizeof *LD);
  if( (info = chol_lower(LD, m->D)) != 0 ){
    rc = fly_fail(err, FLY_NUMERIC, "the %zu x %zu metric of the thinning "
                  "keys of data set %lld is not positive definite (%s)", m->D,
                  m->D, (long long)ds, chol_why(info, m->D, why));
    goto done;
  }
  say(&sc, "Laplace covariance from the Hessian (%.2f s)",
      now_seconds() - sc.t0);

  /* (c), (d) in one write transaction. */
  if( (rc = fly_db_begin(db, err)) ) goto done;
  in_tx = 1;
  if( (rc = find_set(db, ds, m->type->name, bd->mopts, bd->tuning, &old,
                     &ready, err)) ) goto done;
  if( old && ready && !bd->force ){
    id = old;  /* built by someone else meanwhile */
    goto done;
  }
  if( old ){
    if( (rc = check_unused(db, old, err)) ) goto done;
    if( (rc = fly_db_prepare(db, "DELETE FROM bound_set WHERE id = ?1", &st,
                             err)) ) goto done;
    sqlite3_bind_int64(st, 1, old);
    rc = step_done(db, st, "removing the old bound set", err);
    sqlite3_finalize(st);
    st = NULL;
    if( rc ) goto done;
  }
  if( (rc = fly_db_prepare(db, "INSERT INTO bound_set(dataset_id, model,"
                           " model_opts, tuning, status, n_params, width,"
                           " page_rows) VALUES (?1, ?2, ?3, ?4, 'building',"
                           " ?5, ?6, ?7)", &st, err)) ) goto done;
  sqlite3_bind_int64(st, 1, ds);
  sqlite3_bind_text(st, 2, m->type->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, bd->mopts, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, bd->tuning, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, (sqlite3_int64)P);
  sqlite3_bind_int64(st, 6, (sqlite3_int64)(m->type->n_xi(m) + 1));
  sqlite3_bind_int64(st, 7, sc.page_rows);
  rc = step_done(db, st, "creating the bound set", err);
  sqlite3_finalize(st);
  st = NULL;
  if( rc ) goto done;
  id = sqlite3_last_insert_rowid(fly_db_sqlite(db));

  /* after an unscanned last Newton step, the figures at th come from the
   * bounds' scan (L is free by now) */
  if( (rc = write_bounds(db, &sc, id, bd, th, LD, mom, unscanned ? &lr.f : NULL,
                         L, &n_pages, err)) )
    goto done;
  if( unscanned ) lr.g_norm = cblas_dnrm2((int)P, L, 1);
  if( (rc = store_moments(db, id, m, mom, m->type->n_moments(m), err)) )
    goto done;
  if( (rc = fly_db_prepare(db, "UPDATE bound_set SET status = 'ready',"
                           " n_pages = ?2, theta_map = ?3, laplace_cov = ?4,"
                           " laplace_prec = ?5, map_logpost = ?6,"
                           " map_iters = ?7, map_grad_norm = ?8,"
                           " tune_seconds = ?9, key_prec = ?10 WHERE id = ?1",
                           &st, err)) )
    goto done;
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, n_pages);
  sqlite3_bind_blob64(st, 3, th, P * sizeof *th, SQLITE_STATIC);
  sqlite3_bind_blob64(st, 4, cov, P * P * sizeof *cov, SQLITE_STATIC);
  sqlite3_bind_blob64(st, 5, H, P * P * sizeof *H, SQLITE_STATIC);
  sqlite3_bind_double(st, 6, -lr.f);
  sqlite3_bind_int(st, 7, lr.iters);
  sqlite3_bind_double(st, 8, lr.g_norm);
  sqlite3_bind_double(st, 9, now_seconds() - sc.t0);
  sqlite3_bind_blob64(st, 10, HD, m->D * m->D * sizeof *HD, SQLITE_STATIC);
  rc = step_done(db, st, "completing the bound set", err);
  sqlite3_finalize(st);
  st = NULL;
  if( rc ) goto done;
  fly_pages_close(sc.pg);
  sc.pg = NULL;
  if( (rc = fly_db_commit(db, err)) ) goto done;
  in_tx = 0;
  say(&sc, "bound set %lld ready: %lld bound pages, %d scans, %.2f s",
      (long long)id, (long long)n_pages, sc.n_scans, now_seconds() - sc.t0);

done:
  sqlite3_finalize(st);
  if( in_tx ){
    if( rc ) fly_db_rollback(db);
    else if( (rc = fly_db_commit(db, err)) ) fly_db_rollback(db);
  }
  if( rc == FLY_OK ) *out_id = id;
  fly_pages_close(sc.pg);
  fly_lbfgs_free(lb);
  fly_free(sc.X);
  fly_free(sc.logL);
  fly_free(sc.wts);
  fly_free(sc.work);
  fly_free(sc.logL2);
  fly_free(sc.work2);
  fly_free(sc.pll);
  fly_free(sc.pgr);
  fly_free(sc.pH);
  fly_free(sc.prc);
  fly_free(sc.perr);
  fly_free(th);
  fly_free(H);
  fly_free(L);
  fly_free(cov);
  fly_free(mom);
  fly_free(HD);
  fly_free(LD);
  return rc;
}

fly_rc fly_tune_get(fly_db *db, int64_t dataset_id, const fly_model *m,
                    const fly_tune_opts *o, int64_t *bound_set_id,
                    fly_err *err)
{
  fly_tune_opts def;
  char mopts[256], tuning[64];
  build bd;
  int64_t id = 0;
  int ready = 0;
  fly_rc rc;

  if( !o ){
    fly_tune_opts_default(&def);
    o = &def;
  }
  memset(&bd, 0, sizeof bd);
  if( (rc = parse_tuning(o, &bd.fixed, &bd.fixed_xi, err)) ) return rc;
  if( (rc = fly_tune_model_opts(m, mopts, sizeof mopts, err)) ) return rc;
  if( (rc = fly_tune_tuning_string(o, tuning, sizeof tuning, err)) ) return rc;
  bd.mopts = mopts;
  bd.tuning = tuning;
  bd.force = o->force;
  bd.max_iter = o->max_iter > 0 ? o->max_iter : TUNE_MAX_ITER;
  bd.g_tol = o->g_tol > 0 ? o->g_tol : TUNE_G_TOL;
  bd.given = o->given;
  bd.full_lbfgs = o->full_lbfgs;
  bd.X = o->X;
  bd.data_map = o->data_map;

  if( (rc = find_set(db, dataset_id, m->type->name, mopts, tuning, &id,
                     &ready, err)) ) return rc;
  if( id && ready && !o->force ){
    if( o->verbose )
      fprintf(stderr, "tune: using bound set %lld (%s, %s, %s)\n",
              (long long)id, m->type->name, mopts, tuning);
    *bound_set_id = id;
    return FLY_OK;
  }
  if( id && (rc = check_unused(db, id, err)) ) return rc;
  return build_set(db, dataset_id, m, &bd, o->verbose, bound_set_id, err);
}

/* ---- loading -------------------------------------------------------- */

/* Copy a blob of want doubles into *dst (allocated). */
static fly_rc blob_doubles(sqlite3_stmt *st, int col, size_t want,
                           double **dst, int64_t id, const char *what,
                           fly_err *err)
{
  const void *p = sqlite3_column_blob(st, col);
  size_t bytes = (size_t)sqlite3_column_bytes(st, col);
  if( !p || bytes != want * sizeof(double) )
    return fly_fail(err, FLY_CORRUPT, "bound set %lld: %s holds %zu bytes, "
                    "want %zu", (long long)id, what, bytes,
                    want * sizeof(double));
  *dst = fly_alloc_array(want, sizeof(double));
  if( !*dst ) return fly_fail(err, FLY_NOMEM, "bound set %lld: %s",
                              (long long)id, what);
  memcpy(*dst, p, bytes);
  for(size_t i = 0; i < want; i++)
    if( !isfinite((*dst)[i]) )
      return fly_fail(err, FLY_CORRUPT, "bound set %lld: %s[%zu] is %g",
                      (long long)id, what, i, (*dst)[i]);
  return FLY_OK;
}

static fly_rc load_moments(fly_db *db, fly_bounds *b, const fly_model *m,
                           fly_err *err)
{
  fly_moment_section sec[MAX_SECTIONS];
  size_t n_sec = m->type->moment_layout(m, sec), off[MAX_SECTIONS + 1];
  size_t filled = 0;
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  int s;

  if( n_sec > MAX_SECTIONS )
    return fly_fail(err, FLY_MISUSE, "model %s: %zu moment sections, at most "
                    "%d", m->type->name, n_sec, MAX_SECTIONS);
  off[0] = 0;
  for(size_t q = 0; q < n_sec; q++) off[q + 1] = off[q] + sec[q].rows * sec[q].cols;
  if( off[n_sec] != b->n_mom )
    return fly_fail(err, FLY_MISUSE, "model %s: moment sections cover %zu of "
                    "its %zu moments", m->type->name, off[n_sec], b->n_mom);
  rc = fly_db_prepare(db, "SELECT name, i, j, value FROM moment WHERE"
                      " bound_set_id = ?1", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, b->id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    const char *name = (const char *)sqlite3_column_text(st, 0);
    int64_t i = sqlite3_column_int64(st, 1), j = sqlite3_column_int64(st, 2);
    size_t q = 0;
    while( q < n_sec && (!name || strcmp(name, sec[q].name) != 0) ) q++;
    if( q == n_sec || i < 0 || j < 0 || (uint64_t)i >= sec[q].rows
        || (uint64_t)j >= sec[q].cols ){
      rc = fly_fail(err, FLY_CORRUPT, "bound set %lld: unexpected moment "
                    "%s[%lld,%lld] for model %s", (long long)b->id,
                    name ? name : "NULL", (long long)i, (long long)j,
                    m->type->name);
      break;
    }
    b->mom[off[q] + (size_t)i * sec[q].cols + (size_t)j] =
      sqlite3_column_double(st, 3);
    filled++;   /* (name, i, j) is the primary key: no repeats */
  }
  if( rc == FLY_OK && s != SQLITE_DONE )
    rc = fly_db_fail(db, err, "reading moments");
  if( rc == FLY_OK && filled != b->n_mom )
    rc = fly_fail(err, FLY_CORRUPT, "bound set %lld: %zu of %zu moment "
                  "entries present", (long long)b->id, filled, b->n_mom);
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_bounds_load(fly_db *db, int64_t bound_set_id, const fly_model *m,
                       fly_bounds **pb, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_bounds *b = NULL;
  fly_rc rc;
  size_t P = m->type->n_params(m);
  int info;
  char why[64];

  *pb = NULL;
  rc = fly_db_prepare(db, "SELECT b.dataset_id, b.model, b.tuning, b.status,"
                      " b.n_params, b.width, b.page_rows, b.n_pages,"
                      " b.theta_map, b.laplace_cov, b.laplace_prec,"
                      " b.map_logpost, b.map_iters, b.map_grad_norm,"
                      " b.tune_seconds, d.n_rows, b.key_prec FROM bound_set b"
                      " JOIN dataset d ON d.id = b.dataset_id WHERE b.id = ?1",
                      &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, bound_set_id);
  int s = sqlite3_step(st);
  if( s != SQLITE_ROW ){
    rc = s == SQLITE_DONE
       ? fly_fail(err, FLY_RANGE, "no bound set %lld in %s",
                  (long long)bound_set_id, fly_db_path(db))
       : fly_db_fail(db, err, "reading the bound set");
    goto done;
  }
  const char *model = (const char *)sqlite3_column_text(st, 1);
  const char *tuning = (const char *)sqlite3_column_text(st, 2);
  const char *status = (const char *)sqlite3_column_text(st, 3);
  if( !model || strcmp(model, m->type->name) != 0 ){
    rc = fly_fail(err, FLY_MISUSE, "bound set %lld is for model %s, not %s",
                  (long long)bound_set_id, model ? model : "?", m->type->name);
    goto done;
  }
  if( !status || strcmp(status, "ready") != 0 ){
    rc = fly_fail(err, FLY_MISUSE, "bound set %lld is not ready (status %s)",
                  (long long)bound_set_id, status ? status : "?");
    goto done;
  }
  if( sqlite3_column_int64(st, 4) != (int64_t)P
      || sqlite3_column_int64(st, 5) != (int64_t)(m->type->n_xi(m) + 1) ){
    rc = fly_fail(err, FLY_MISUSE, "bound set %lld has %lld parameters and "
                  "%lld values a row; model %s wants %zu and %zu",
                  (long long)bound_set_id,
                  (long long)sqlite3_column_int64(st, 4),
                  (long long)sqlite3_column_int64(st, 5), m->type->name, P,
                  m->type->n_xi(m) + 1);
    goto done;
  }
  b = fly_alloc_array(1, sizeof *b);
  if( !b ){ rc = fly_fail(err, FLY_NOMEM, "bound set %lld",
                          (long long)bound_set_id); goto done; }
  b->id = bound_set_id;
  b->dataset_id = sqlite3_column_int64(st, 0);
  b->P = P;
  b->n_xi = m->type->n_xi(m);
  b->page_rows = sqlite3_column_int64(st, 6);
  b->n_pages = sqlite3_column_int64(st, 7);
  b->n_rows = sqlite3_column_int64(st, 15);
  b->tuned = tuning && strcmp(tuning, "map") == 0;
  b->fixed_xi = NAN;
  if( tuning && strncmp(tuning, "fixed=", 6) == 0 )
    b->fixed_xi = strtod(tuning + 6, NULL);
  b->map_logpost = sqlite3_column_double(st, 11);
  b->map_iters = sqlite3_column_int(st, 12);
  b->map_grad_norm = sqlite3_column_double(st, 13);
  b->tune_seconds = sqlite3_column_double(st, 14);
  if( (rc = blob_doubles(st, 8, P, &b->theta_map, b->id, "theta_map", err))
      || (rc = blob_doubles(st, 9, P * P, &b->cov, b->id, "laplace_cov", err))
      || (rc = blob_doubles(st, 10, P * P, &b->prec, b->id, "laplace_prec",
                            err))
      || (rc = blob_doubles(st, 16, m->D * m->D, &b->key_prec, b->id,
                            "key_prec", err)) )
    goto done;
  sqlite3_finalize(st);
  st = NULL;

  b->chol_cov = fly_alloc_array(P * P, sizeof(double));
  b->chol_prec = fly_alloc_array(P * P, sizeof(double));
  b->n_mom = m->type->n_moments(m);
  b->mom = fly_alloc_array(b->n_mom ? b->n_mom : 1, sizeof(double));
  if( !b->chol_cov || !b->chol_prec || !b->mom ){
    rc = fly_fail(err, FLY_NOMEM, "bound set %lld", (long long)b->id);
    goto done;
  }
  memcpy(b->chol_cov, b->cov, P * P * sizeof(double));
  memcpy(b->chol_prec, b->prec, P * P * sizeof(double));
  if( (info = chol_lower(b->chol_cov, P)) != 0
      || (info = chol_lower(b->chol_prec, P)) != 0 ){
    rc = fly_fail(err, FLY_CORRUPT, "bound set %lld: stored Laplace matrices "
                  "are not positive definite (%s)", (long long)b->id,
                  chol_why(info, P, why));
    goto done;
  }
  if( m->D ){                   /* key_prec must be SPD too */
    b->chol_key = fly_alloc_array(m->D * m->D, sizeof(double));
    if( !b->chol_key ){
      rc = fly_fail(err, FLY_NOMEM, "bound set %lld", (long long)b->id);
      goto done;
    }
    memcpy(b->chol_key, b->key_prec, m->D * m->D * sizeof(double));
    info = chol_lower(b->chol_key, m->D);
    if( info != 0 ){
      rc = fly_fail(err, FLY_CORRUPT, "bound set %lld: stored key_prec is "
                    "not positive definite (%s)", (long long)b->id,
                    chol_why(info, m->D, why));
      goto done;
    }
  }
  rc = load_moments(db, b, m, err);

done:
  sqlite3_finalize(st);
  if( rc ){
    fly_bounds_free(b);
    return rc;
  }
  *pb = b;
  return FLY_OK;
}

void fly_bounds_free(fly_bounds *b)
{
  if( !b ) return;
  fly_free(b->theta_map);
  fly_free(b->cov);
  fly_free(b->prec);
  fly_free(b->key_prec);
  fly_free(b->chol_cov);
  fly_free(b->chol_prec);
  fly_free(b->chol_key);
  fly_free(b->mom);
  fly_free(b);
}
