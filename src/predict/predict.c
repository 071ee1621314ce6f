/*
 * predict.c -- a run's predictions for the rows of a new CSV, and their
 * held-out scores (predict.h).
 *
 * Set-up: the run's posterior (run/posterior.h: model and S thinned
 * draws), the data set it modelled and, for a data set derived by a
 * formula, the raw data set and the design bound anew from the run's
 * stored formula and reference (refused unless its key is the derived data
 * set's: the columns are the run's).  The CSV header is matched to the raw
 * columns by name; every column the design reads but the target must be
 * there.  Categorical cells are looked up among the raw column's stored
 * labels (a sorted index, binary search).
 *
 * Per block of B rows: X (B x D), one dgemm per class for the linear
 * predictors eta (K x B x S), then per row the S values of the predicted
 * quantity into a scratch vector, their mean and type-7 quantiles by
 * selection (score.h); robust regression's interval is the t mixture's
 * quantiles, solved for each row.  lpd accumulates per row log-sum-exp of
 * the S log-likelihoods minus log S, summed in long double.
 *
 * Invariants: a row is written only when it parsed completely; the stored
 * row is inserted after the last output row, in one transaction.
 */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formula/formula.h"
#include "io/csv.h"
#include "io/design.h"
#include "io/source.h"
#include "predict/predict.h"
#include "predict/score.h"
#include "run/data.h"
#include "run/posterior.h"
#include "store/codec.h"
#include "store/dataset.h"
#include "store/run.h"
#include "util/blas.h"
#include "util/mem.h"
#include "util/vmath.h"


#define BLOCK_VALUES ((size_t)1 << 19)   /* eta doubles per block, at most */
#define BLOCK_ROWS   512

void fly_predict_opts_default(fly_predict_opts *o)
{
  o->max_draws = 4000;
  o->level = 0.9;
}

/* ---- the new rows' columns ---------------------------------------------- */

/* A level of a categorical column. */
struct lab { const char *s; size_t code; };

/* A raw column as the new file gives it. */
typedef struct rcol {
  const fly_dataset_column *c;
  long   csv;          /* CSV column, -1: absent */
  int    need;         /* the model reads it */
  struct lab *by_label;   /* categorical: its levels sorted by label */
} rcol;

typedef struct layout {
  fly_dataset *ds, *raw;   /* raw == ds when the run used the columns as stored */
  fly_design  *d;          /* NULL: as stored */
  size_t       n_raw, resp, D;
  rcol        *col;
  double      *rawv, *mrow;   /* a raw row; a design row */
  const char  *path;
} layout;

static void layout_free(layout *L)
{
  for(size_t j = 0; L->col && j < L->n_raw; j++) fly_free(L->col[j].by_label);
  fly_free(L->col);
  fly_free(L->rawv);
  fly_free(L->mrow);
  fly_design_free(L->d);
  if( L->raw != L->ds ) fly_dataset_free(L->raw);
  fly_dataset_free(L->ds);
  memset(L, 0, sizeof *L);
}

static int lab_cmp(const char *a, size_t na, const char *b)
{
  size_t nb = strlen(b);
  int c = memcmp(a, b, na < nb ? na : nb);
  return c ? c : (na > nb) - (na < nb);
}

static int cmp_lab(const void *x, const void *y)
{
  return strcmp(((const struct lab *)x)->s, ((const struct lab *)y)->s);
}

/* The code of label s[0..n) in column c, or -1. */
static long code_of(const rcol *c, const char *s, size_t n)
{
  size_t lo = 0, hi = c->c->n_levels;
  while( lo < hi ){
    size_t mid = lo + (hi - lo) / 2;
    int k = lab_cmp(s, n, c->by_label[mid].s);
    if( k == 0 ) return (long)c->by_label[mid].code;
    if( k < 0 ) hi = mid; else lo = mid + 1;
  }
  return -1;
}

/* The run's data set, design and the raw columns; post->ds modelled. */
static fly_rc layout_open(fly_db *db, int64_t run_id, int64_t ds_id, size_t D, layout *L,
                          fly_err *err)
{
  char formula[4096], ref[4096];
  int found_f = 0, found_r = 0;
  fly_rc rc;
  memset(L, 0, sizeof *L);
  if( (rc = fly_dataset_load(db, ds_id, &L->ds, err)) ) return rc;
  L->raw = L->ds;
  if( L->ds->parent_id ){
    if( (rc = fly_dataset_load(db, L->ds->parent_id, &L->raw, err)) ) return rc;
    if( (rc = fly_run_config_value(db, run_id, "formula", formula, sizeof formula, &found_f,
                                   err)) ||
        (rc = fly_run_config_value(db, run_id, "reference", ref, sizeof ref, &found_r, err)) )
      return rc;
    if( !found_r || !strcmp(ref, "(first levels)") ) ref[0] = 0;
    if( found_f ) rc = fly_run_design_bind(db, L->raw->id, formula, ref, &L->d, err);
    if( !found_f || rc || !L->ds->design_key || strcmp(fly_design_key(L->d), L->ds->design_key) ){
      fly_err_clear(err);
      return fly_fail(err, FLY_MISUSE, "run %lld: its stored formula '%s' does not give the "
                      "design of its data set '%s'", (long long)run_id,
                      found_f ? formula : "(none)", L->ds->name ? L->ds->name : "?");
    }
  }
  size_t j0 = L->raw->has_intercept ? 1 : 0;
  L->n_raw = L->raw->n_cols - j0;
  L->D = D;
  if( !(L->col = fly_alloc_array(L->n_raw, sizeof *L->col)) ||
      !(L->rawv = fly_alloc_array(L->n_raw, sizeof *L->rawv)) ||
      !(L->mrow = fly_alloc_array(D + 1, sizeof *L->mrow)) )
    return fly_fail(err, FLY_NOMEM, "predict: columns of '%s'", L->raw->name);
  memset(L->col, 0, L->n_raw * sizeof *L->col);
  if( L->d ){
    size_t n_uses;
    const size_t *uses = fly_design_uses(L->d, &n_uses);
    L->resp = fly_design_response(L->d);
    for(size_t u = 0; u < n_uses; u++) L->col[uses[u]].need = 1;
    if( fly_design_width(L->d) != D )
      return fly_fail(err, FLY_CORRUPT, "run %lld: %zu features, its design has %zu",
                      (long long)run_id, D, fly_design_width(L->d));
  }else{
    L->resp = L->n_raw - 1;
    for(size_t j = 0; j < L->n_raw; j++) L->col[j].need = 1;
    if( L->n_raw - 1 + j0 != D )
      return fly_fail(err, FLY_CORRUPT, "run %lld: %zu features, its data set has %zu",
                      (long long)run_id, D, L->n_raw - 1 + j0);
  }
  L->col[L->resp].need = 0;
  for(size_t j = 0; j < L->n_raw; j++){
    rcol *c = &L->col[j];
    c->c = &L->raw->cols[j + j0];
    c->csv = -1;
    if( !c->c->categorical ) continue;
    if( !(c->by_label = fly_alloc_array(c->c->n_levels ? c->c->n_levels : 1,
                                        sizeof *c->by_label)) )
      return fly_fail(err, FLY_NOMEM, "predict: levels of '%s'", c->c->name);
    for(size_t k = 0; k < c->c->n_levels; k++)
      c->by_label[k] = (struct lab){ c->c->levels[k] ? c->c->levels[k] : "", k };
    qsort(c->by_label, c->c->n_levels, sizeof *c->by_label, cmp_lab);
  }
  return FLY_OK;
}

/* Match the header of csv to the columns.  *has_target: the target is there. */
static fly_rc layout_header(layout *L, fly_csv *csv, int *has_target, fly_err *err)
{
  size_t nc = fly_csv_ncols(csv);
  for(size_t k = 0; k < nc; k++)
    for(size_t j = 0; j < L->n_raw; j++)
      if( L->col[j].c->name && !strcmp(fly_csv_colname(csv, k), L->col[j].c->name) )
        L->col[j].csv = (long)k;
  for(size_t j = 0; j < L->n_raw; j++)
    if( L->col[j].need && L->col[j].csv < 0 )
      return fly_fail(err, FLY_PARSE, "%s:1: no column '%s', which the run's model reads "
                      "(the columns of data set '%s')", L->path, L->col[j].c->name,
                      L->raw->name);
  *has_target = L->col[L->resp].csv >= 0;
  return FLY_OK;
}

/* Parse one record into the raw row (rounded to the data set's precision)
 * and the model-matrix row x (D) and, with the target, *y. */
static fly_rc layout_row(layout *L, const fly_csv_cell *cells, int64_t line, int has_target,
                         double *x, double *y, fly_err *err)
{
  for(size_t j = 0; j < L->n_raw; j++){
    rcol *c = &L->col[j];
    double v = NAN;
    if( c->need || (j == L->resp && has_target) ){
      const fly_csv_cell *e = &cells[c->csv];
      int na = e->n == 0 || (e->n == 2 && e->s[0] == 'N' && e->s[1] == 'A');
      int sh = e->n > 40 ? 40 : (int)e->n;
      if( na )
        return fly_fail(err, FLY_PARSE, "%s:%lld:%ld: column '%s' is missing ('%.*s'); "
                        "the run's model reads it", L->path, (long long)line, c->csv + 1,
                        c->c->name, sh, e->s);
      if( c->c->categorical ){
        long k = code_of(c, e->s, e->n);
        if( k < 0 )
          return fly_fail(err, FLY_PARSE, "%s:%lld:%ld: column '%s': level '%.*s%s' is not "
                          "one of the %zu levels of data set '%s'", L->path, (long long)line,
                          c->csv + 1, c->c->name, sh, e->s, e->n > 40 ? "..." : "",
                          c->c->n_levels, L->raw->name);
        v = (double)k;
      }else{
        if( !e->num )
          return fly_fail(err, FLY_PARSE, "%s:%lld:%ld: column '%s': '%.*s%s' is not a "
                          "number (the column is numeric in data set '%s')", L->path,
                          (long long)line, c->csv + 1, c->c->name, sh, e->s,
                          e->n > 40 ? "..." : "", L->raw->name);
        v = L->raw->prec == FLY_PREC_F32 ? (double)(float)e->v : e->v;
      }
    }else if( j == L->resp ){
      v = 0;    /* not in the model matrix: any valid value */
    }
    L->rawv[j] = v;
  }
  if( L->d ){
    size_t col = 0;
    int k = fly_design_row(L->d, L->rawv, x, &col);
    if( k ){
      const rcol *c = &L->col[col];
      return fly_fail(err, k == 2 ? FLY_RANGE : FLY_PARSE, "%s:%lld:%ld: column '%s': %s "
                      "for its value %.17g", L->path, (long long)line, c->csv + 1,
                      c->c->name, k == 2 ? "a transform of the formula is undefined"
                                         : "no model-matrix row", L->rawv[col]);
    }
    if( L->raw->prec == FLY_PREC_F32 )
      for(size_t j = 0; j < L->D; j++) x[j] = (double)(float)x[j];
    *y = fly_design_y(L->d, L->rawv);
  }else{
    size_t k = 0;
    if( L->raw->has_intercept ) x[k++] = 1;
    for(size_t j = 0; j < L->n_raw; j++) if( j != L->resp ) x[k++] = L->rawv[j];
    *y = L->rawv[L->resp];
  }
  return FLY_OK;
}

/* ---- the predicted quantities ------------------------------------------- */

typedef struct scores {
  long double lpd, brier, sq;
  int64_t n, hits;
  double *pos, *neg;          /* logistic: mean probabilities by class */
  size_t n1, n0, cap1, cap0;
} scores;

static int push(double **a, size_t *n, size_t *cap, double v)
{
  if( *n == *cap ){
    size_t c = *cap ? 2 * *cap : 1024;
    double *p = fly_realloc_array(*a, c, sizeof *p);
    if( !p ) return -1;
    *a = p;
    *cap = c;
  }
  (*a)[(*n)++] = v;
  return 0;
}

/* log (1/S) sum_s exp(l[s]); w: S doubles of scratch */
static double log_mean_exp(const double *l, size_t S, double *w)
{
  double m = l[0];
  for(size_t s = 1; s < S; s++) if( l[s] > m ) m = l[s];
  if( !isfinite(m) ) return m;
  for(size_t s = 0; s < S; s++) w[s] = l[s] - m;
  fly_vexp(w, w, S);
  return m + log(fly_vsum(w, S)) - log((double)S);
}

static void put_num(FILE *out, double v)
{
  if( isnan(v) ) fputs(",NA", out);
  else fprintf(out, ",%.17g", v);
}

/* A CSV field: quoted when it holds a comma, quote or line end. */
static void put_field(FILE *out, const char *s, const char *suffix)
{
  if( strpbrk(s, ",\"\r\n") ){
    fputc('"', out);
    for(const char *p = s; *p; p++){
      if( *p == '"' ) fputc('"', out);
      fputc(*p, out);
    }
    fprintf(out, "%s\"", suffix);
  }else fprintf(out, "%s%s", s, suffix);
}

typedef struct job {
  const fly_posterior *p;
  int    kind;                 /* 0 logistic, 1 softmax, 2 robust */
  size_t K, D, S, B;
  double p_lo, p_hi;
  fly_tmix tm;
  double q_lo, q_hi;           /* robust: standard t quantiles */
  double *X, *y, *eta, *v, *ll, *lse;
  fly_qws *qw;
  int64_t *row;
  FILE  *out;
} job;

static fly_rc block(job *J, size_t nb, int has_target, scores *sc, fly_err *err)
{
  const size_t K = J->K, D = J->D, S = J->S, P = J->p->P;
  for(size_t k = 0; k < K; k++)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)S, (int)D, 1.0,
                J->X, (int)D, J->p->th + k * D, (int)P, 0.0, J->eta + k * J->B * S, (int)S);
  for(size_t i = 0; i < nb; i++){
    FILE *out = J->out;
    double y = J->y[i];
    fprintf(out, "%lld", (long long)J->row[i]);
    if( J->kind == 0 ){
      const double *e = J->eta + i * S;
      /* from s = -eta: log sigma(-eta) = log(1 - p) and sigma(eta) = p */
      for(size_t s = 0; s < S; s++) J->v[s] = -e[s];
      fly_vlogsig_dsig(J->v, J->ll, J->v, S);
      if( has_target && y == 1 ) for(size_t s = 0; s < S; s++) J->ll[s] += e[s];
      double mean = fly_vsum(J->v, S) / (double)S, lo, hi;
      fly_predict_quantile2(J->qw, J->v, S, J->p_lo, J->p_hi, &lo, &hi);
      put_num(out, mean);
      put_num(out, lo);
      put_num(out, hi);
      if( has_target ){
        sc->brier += (long double)(mean - y) * (mean - y);
        if( (y == 1 ? push(&sc->pos, &sc->n1, &sc->cap1, mean)
                    : push(&sc->neg, &sc->n0, &sc->cap0, mean)) )
          return fly_fail(err, FLY_NOMEM, "predict: scores of %lld rows", (long long)sc->n);
      }
    }else if( J->kind == 1 ){
      for(size_t s = 0; s < S; s++){
        double m = -INFINITY, t = 0;
        for(size_t k = 0; k < K; k++){
          double e = J->eta[(k * J->B + i) * S + s];
          if( e > m ) m = e;
        }
        for(size_t k = 0; k < K; k++) t += exp(J->eta[(k * J->B + i) * S + s] - m);
        J->lse[s] = m + log(t);
        if( has_target ) J->ll[s] = J->eta[((size_t)y * J->B + i) * S + s] - J->lse[s];
      }
      size_t best = 0;
      double pbest = -1;
      for(size_t k = 0; k < K; k++){
        const double *e = J->eta + (k * J->B + i) * S;
        for(size_t s = 0; s < S; s++) J->v[s] = e[s] - J->lse[s];
        fly_vexp(J->v, J->v, S);
        double mean = fly_vsum(J->v, S) / (double)S, lo, hi;
        fly_predict_quantile2(J->qw, J->v, S, J->p_lo, J->p_hi, &lo, &hi);
        put_num(out, mean);
        put_num(out, lo);
        put_num(out, hi);
        if( mean > pbest ){ pbest = mean; best = k; }
        if( has_target ){
          double d = mean - ((size_t)y == k ? 1 : 0);
          sc->brier += (long double)d * d;
        }
      }
      if( has_target && best == (size_t)y ) sc->hits++;
    }else{
      const double *mu = J->eta + i * S;
      if( has_target ) for(size_t s = 0; s < S; s++) J->ll[s] = fly_tmix_logpdf(&J->tm, y, mu[s]);
      double mean = fly_vsum(mu, S) / (double)S;
      put_num(out, mean);
      put_num(out, fly_tmix_quantile(&J->tm, mu, S, J->p_lo, J->q_lo));
      put_num(out, fly_tmix_quantile(&J->tm, mu, S, J->p_hi, J->q_hi));
      if( has_target ) sc->sq += (long double)(y - mean) * (y - mean);
    }
    fputc('\n', out);
    if( has_target ){
      double l = log_mean_exp(J->ll, S, J->v);
      if( !isfinite(l) )
        return fly_fail(err, FLY_NUMERIC, "data row %lld: log predictive density %g",
                        (long long)J->row[i], l);
      sc->lpd += l;
      sc->n++;
    }
  }
  if( ferror(J->out) ) return fly_fail(err, FLY_IO, "predict: writing the predictions failed");
  return FLY_OK;
}

/* The header: row and the prediction columns. */
static void header(FILE *out, int kind, const fly_design *d, size_t K)
{
  size_t nl = 0;
  const char *const *lv = d ? fly_design_response_levels(d, &nl) : NULL;
  fputs("row", out);
  if( kind != 1 ){
    fputs(",mean,lower,upper\n", out);
    return;
  }
  for(size_t k = 0; k < K; k++){
    char num[32];
    const char *lab = lv && k < nl ? lv[k] : (snprintf(num, sizeof num, "%zu", k), num);
    static const char *const suf[] = { "", "_lower", "_upper" };
    for(int j = 0; j < 3; j++){
      fputc(',', out);
      put_field(out, lab, suf[j]);
    }
  }
  fputc('\n', out);
}

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void bind_score(sqlite3_stmt *st, int i, int has, double v)
{
  if( has && isfinite(v) ) sqlite3_bind_double(st, i, v);
  else sqlite3_bind_null(st, i);
}

static fly_rc store(fly_db *db, const char *source, double level, fly_predict_result *r,
                    fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_begin(db, err);
  if( rc ) return rc;
  if( (rc = fly_db_prepare(db, "INSERT INTO prediction(run_id, source, n_rows, n_draws, "
                           "level, has_target, lpd, brier, auc, accuracy, rmse, seconds) "
                           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", &st, err)) ) goto done;
  sqlite3_bind_int64(st, 1, r->run_id);
  sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, r->n_rows);
  sqlite3_bind_int64(st, 4, r->S);
  sqlite3_bind_double(st, 5, level);
  sqlite3_bind_int(st, 6, r->has_target);
  bind_score(st, 7, r->has_target, r->lpd);
  bind_score(st, 8, r->has_target, r->brier);
  bind_score(st, 9, r->has_target, r->auc);
  bind_score(st, 10, r->has_target, r->accuracy);
  bind_score(st, 11, r->has_target, r->rmse);
  sqlite3_bind_double(st, 12, r->seconds);
  if( sqlite3_step(st) != SQLITE_DONE ){ rc = fly_db_fail(db, err, "insert prediction"); goto done; }
  r->id = sqlite3_last_insert_rowid(fly_db_sqlite(db));
  rc = fly_db_commit(db, err);
done:
  sqlite3_finalize(st);
  if( rc ) fly_db_rollback(db);
  return rc;
}

fly_rc fly_predict_run(fly_db *db, int64_t run_id, const char *path, FILE *out,
                       const fly_predict_opts *o, fly_predict_result *res, fly_err *err)
{
  fly_posterior p;
  layout L;
  job J;
  scores sc;
  fly_source *src = NULL;
  fly_csv *csv = NULL;
  fly_csv_cell *cells = NULL;
  double t0 = now();
  int has_target = 0;
  fly_rc rc;
  memset(&L, 0, sizeof L);
  memset(&J, 0, sizeof J);
  memset(&sc, 0, sizeof sc);
  memset(&p, 0, sizeof p);
  memset(res, 0, sizeof *res);
  if( !(o->level > 0 && o->level < 1) )
    return fly_fail(err, FLY_MISUSE, "--level must be in (0, 1), not %g", o->level);

  fly_blas_serial();
  int began = fly_db_read_begin(db);
  rc = fly_posterior_load(db, run_id, o->max_draws, 1, "predict", &p, err);
  if( !rc ) rc = layout_open(db, p.run_id, p.ds, p.m.D, &L, err);
  fly_db_read_end(db, began);
  if( rc ) goto done;
  const char *name = p.m.type->name;
  J.kind = !strcmp(name, "softmax") ? 1 : !strcmp(name, "robust") ? 2 : 0;
  if( J.kind == 0 && strcmp(name, "logistic") ){
    rc = fly_fail(err, FLY_MISUSE, "run %lld: predict does not know model '%s'",
                  (long long)p.run_id, name);
    goto done;
  }
  J.p = &p;
  J.K = J.kind == 1 ? p.m.K : 1;
  J.D = p.m.D;
  J.S = p.S;
  J.p_lo = (1 - o->level) / 2;
  J.p_hi = (1 + o->level) / 2;
  J.out = out;
  if( J.kind == 2 ){
    fly_tmix_init(&J.tm, p.m.nu, p.m.scale);
    J.q_lo = fly_tmix_qt(&J.tm, J.p_lo);
    J.q_hi = fly_tmix_qt(&J.tm, J.p_hi);
  }
  J.B = BLOCK_VALUES / (J.S * J.K);
  if( J.B > BLOCK_ROWS ) J.B = BLOCK_ROWS;
  if( J.B < 1 ) J.B = 1;

  L.path = !strcmp(path, "-") ? "<stdin>" : path;
  if( (rc = fly_source_open(path, NULL, &src, err)) ) goto done;
  if( (rc = fly_csv_open_stream(fly_source_file(src), L.path, &csv, err)) ) goto done;
  if( (rc = layout_header(&L, csv, &has_target, err)) ) goto done;
  if( !(cells = fly_alloc_array(fly_csv_ncols(csv), sizeof *cells)) ||
      !(J.X = fly_alloc_array(J.B, J.D * sizeof *J.X)) ||
      !(J.y = fly_alloc_array(J.B, sizeof *J.y)) ||
      !(J.row = fly_alloc_array(J.B, sizeof *J.row)) ||
      !(J.eta = fly_alloc_array(J.K * J.B, J.S * sizeof *J.eta)) ||
      !(J.v = fly_alloc_array(J.S, sizeof *J.v)) ||
      !(J.ll = fly_alloc_array(J.S, sizeof *J.ll)) ||
      !(J.lse = fly_alloc_array(J.S, sizeof *J.lse)) ){
    rc = fly_fail(err, FLY_NOMEM, "predict: buffers for %zu draws", J.S);
    goto done;
  }
  if( (rc = fly_qws_new(J.S, &J.qw, err)) ) goto done;
  header(out, J.kind, L.d, J.K);
  int64_t n = 0;
  size_t nb = 0;
  for(;;){
    fly_rc s = fly_csv_next_cells(csv, cells, err);
    if( s == FLY_DONE ) break;
    if( s != FLY_ROW ){
      rc = s;
      if( rc == FLY_IO && fly_source_error(src) )
        rc = fly_fail(err, FLY_IO, "%s", fly_source_error(src));
      goto done;
    }
    int64_t line = fly_csv_line(csv);
    if( (rc = layout_row(&L, cells, line, has_target, J.X + nb * J.D, &J.y[nb], err)) )
      goto done;
    if( has_target && (rc = p.m.type->check_target(&p.m, J.y[nb], n, err)) ){
      fly_err_prefix(err, "%s:%lld: column '%s'", L.path, (long long)line,
                     L.col[L.resp].c->name);
      rc = FLY_PARSE;
      goto done;
    }
    J.row[nb++] = ++n;
    if( nb == J.B ){
      if( (rc = block(&J, nb, has_target, &sc, err)) ) goto done;
      nb = 0;
    }
  }
  if( nb && (rc = block(&J, nb, has_target, &sc, err)) ) goto done;
  if( fflush(out) || ferror(out) ){
    rc = fly_fail(err, FLY_IO, "predict: writing the predictions failed");
    goto done;
  }

  res->run_id = p.run_id;
  res->n_rows = n;
  res->S = (int64_t)J.S;
  snprintf(res->model, sizeof res->model, "%s", name);
  res->has_target = has_target && n > 0;
  res->lpd = (double)sc.lpd;
  res->brier = res->auc = res->accuracy = res->rmse = NAN;
  if( res->has_target ){
    double dn = (double)n;
    if( J.kind != 2 ) res->brier = (double)(sc.brier / (long double)dn);
    if( J.kind == 0 ) res->auc = fly_predict_auc(sc.pos, sc.n1, sc.neg, sc.n0);
    if( J.kind == 1 ) res->accuracy = (double)sc.hits / dn;
    if( J.kind == 2 ) res->rmse = sqrt((double)(sc.sq / (long double)dn));
  }
  res->seconds = now() - t0;
  rc = store(db, L.path, o->level, res, err);
done:
  fly_free(cells);
  fly_csv_close(csv);
  fly_source_close(src);
  fly_free(J.X);
  fly_free(J.y);
  fly_free(J.row);
  fly_free(J.eta);
  fly_free(J.v);
  fly_free(J.ll);
  fly_free(J.lse);
  fly_qws_free(J.qw);
  fly_free(sc.pos);
  fly_free(sc.neg);
  layout_free(&L);
  fly_posterior_free(&p);
  return rc;
}

/* ---- flydb check ---------------------------------------------------------- */

/* What a score column must be: NULL, possibly NULL, or present. */
enum { NONE, MAYBE, WANT };

static void check_score(fly_checker *ck, sqlite3_stmt *st, int col, const char *name,
                        int want, double lo, double hi)
{
  int null = sqlite3_column_type(st, col) == SQLITE_NULL;
  double v = sqlite3_column_double(st, col);
  if( null ){
    if( want == WANT ) fly_check_problem(ck, "%s is NULL; the model's held-out scores have it", name);
  }else if( want == NONE )
    fly_check_problem(ck, "%s is %.17g; the model's held-out scores have none", name, v);
  else if( !(v >= lo && v <= hi) )
    fly_check_problem(ck, "%s is %.17g, outside [%g, %g]", name, v, lo, hi);
}

void fly_predict_check(fly_db *db, fly_checker *ck, int64_t *n_predictions)
{
  sqlite3_stmt *st;
  int s;
  *n_predictions = 0;
  st = fly_check_prepare(db, ck,
    "SELECT p.id, p.run_id, r.id, r.model, r.n_chains * r.n_iters, p.n_rows, p.n_draws, "
    "  p.level, p.has_target, p.lpd, p.brier, p.auc, p.accuracy, p.rmse "
    "FROM prediction p LEFT JOIN run r ON r.id = p.run_id ORDER BY p.id");
  if( !st ) return;
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t run = sqlite3_column_int64(st, 1);
    const char *model = (const char *)sqlite3_column_text(st, 3);
    int64_t n_rows = sqlite3_column_int64(st, 5), S = sqlite3_column_int64(st, 6);
    double level = sqlite3_column_double(st, 7);
    int64_t has = sqlite3_column_int64(st, 8);
    (*n_predictions)++;
    fly_check_scope(ck, "run %lld prediction %lld", (long long)run,
                    (long long)sqlite3_column_int64(st, 0));
    if( sqlite3_column_type(st, 2) == SQLITE_NULL ){
      fly_check_problem(ck, "a prediction of a run that does not exist");
      model = "";
    }else if( S < 1 || S > sqlite3_column_int64(st, 4) )
      fly_check_problem(ck, "n_draws %lld, the run has %lld post-warm-up iterations",
                        (long long)S, (long long)sqlite3_column_int64(st, 4));
    if( n_rows < 0 ) fly_check_problem(ck, "n_rows %lld", (long long)n_rows);
    if( !(level > 0 && level < 1) ) fly_check_problem(ck, "level %.17g, not in (0, 1)", level);
    if( has != 0 && has != 1 ){
      fly_check_problem(ck, "has_target %lld, not 0 or 1", (long long)has);
      continue;
    }
    /* the scores each model's target gives; without rows any may be NULL */
    int lg = model && !strcmp(model, "logistic"), sm = model && !strcmp(model, "softmax");
    int rb = model && !strcmp(model, "robust"), known = lg || sm || rb;
    int w = !has ? NONE : !known || n_rows == 0 ? MAYBE : WANT;
    int o = !has ? NONE : known ? NONE : MAYBE;
    check_score(ck, st, 9, "lpd", w, -DBL_MAX, rb || !known ? DBL_MAX : 0);
    check_score(ck, st, 10, "brier", lg || sm ? w : o, 0, sm ? 2 : 1);
    check_score(ck, st, 11, "auc", lg ? (has ? MAYBE : NONE) : o, 0, 1);
    check_score(ck, st, 12, "accuracy", sm ? w : o, 0, 1);
    check_score(ck, st, 13, "rmse", rb ? w : o, 0, DBL_MAX);
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(db, ck, "read prediction");
  sqlite3_finalize(st);
  fly_check_scope(ck, "%s", "");
}
