/*
 * plot.c -- `flydb plot [RUN_ID] --out DIR`: pictures of a run, as SVG
 * files (svg.c) and an index.html that shows them all.
 *
 * Per parameter p (files p<k>_<name>_*.svg, k from 1, the name reduced to
 * letters, digits, '-', '.' and '_'):
 *   _trace.svg    draws against iteration, chains overlaid in distinct
 *                 colours, warm-up shaded;
 *   _acf.svg      autocorrelation of each chain's post-warm-up draws up to
 *                 lag 100 (R's acf(), src/stats), with the +-1.96/sqrt(n)
 *                 band of white noise;
 *   _density.svg  marginal density of the post-warm-up draws of all chains:
 *                 a Gaussian kernel density estimate with Silverman's
 *                 bandwidth (R's bw.nrd0: 0.9 min(sd, IQR/1.34) n^-1/5) on
 *                 512 points over the range +- 3 bandwidths (R's density()
 *                 defaults), one curve per chain over it, the mean, the 90%
 *                 interval and a rug.
 * Per run, the panels of the FlyMC paper's Figure 4 (run_*.svg): the log
 * joint density, the bright count, likelihood evaluations and rows read,
 * each per iteration and chain.
 *
 * A series of more than 2000 points is drawn as the minimum and maximum of
 * each of 1000 buckets (in the order they occur), which keeps every spike
 * a full-resolution line would show and a file near 30 KB per chain.  The
 * density is computed by linear binning and a direct convolution with the
 * kernel (R bins too, and convolves by FFT): O(n + 512 K) for K grid
 * points within 4 bandwidths.
 *
 * Memory: the run's iteration table (5 numbers a kept iteration) and the
 * draws of a block of parameters, at most 2^24 doubles (128 MiB); more
 * parameters than fit cost one more scan of the draws per block.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "outdir.h"
#include "stats/stats.h"
#include "store/db.h"
#include "svg.h"
#include "util/mem.h"

#define PATH_CAP   4096
#define MAX_POINTS 2000          /* per series, after min/max bucketing */
#define KDE_POINTS 512
#define MAX_LAG    100
#define BLOCK_VALS ((size_t)1 << 24)
#define N_COLOURS  8

/* Okabe & Ito's colour-blind safe palette (yellow dropped), then brown, grey. */
static const char *colours[N_COLOURS] = {
  "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#8c564b", "#7f7f7f",
};
#define INK   "#222222"
#define GREY  "#666666"
#define GRID  "#e6e6e6"

typedef struct runinfo {
  int64_t id, n_chains, n_warmup, n_iters, thin, n_params;
  char    model[32], sampler[32], z[16], status[16], dataset[256];
} runinfo;

typedef struct chain {        /* one chain's kept iterations, in order */
  size_t   n;
  size_t   n_warm;            /* of which warm-up */
  int64_t *iter;
  double  *lp, *bright, *lik, *reads;
  double  *x;                 /* draws of the current parameter (block) */
} chain;

typedef struct plotter {
  fly_db       *db;
  runinfo       ri;
  const char   *dir;
  chain        *ch;           /* [n_chains] */
  char        **names;        /* [n_params] */
  fly_stats_ws *ws;
  double       *xs, *ys;      /* MAX_POINTS scratch for a path */
  double       *pool;         /* post-warm-up draws of all chains */
  double       *grid, *dens, *bins, *kern;   /* KDE scratch */
  double       *rho;          /* MAX_LAG + 1 */
  FILE         *html;         /* index.html.tmp */
  size_t        n_files;
  int64_t       last_iter;    /* largest kept iteration */
} plotter;

/* ---- small helpers ------------------------------------------------------ */

static void copy_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
  const char *s = (const char *)sqlite3_column_text(st, col);
  snprintf(dst, cap, "%s", s ? s : "");
}


/* "p<k>_<name>" for parameter p: the name reduced to [A-Za-z0-9._-]. */
static void file_stem(char *b, size_t cap, size_t p, size_t P, const char *name)
{
  int w = P >= 1000 ? 4 : P >= 100 ? 3 : P >= 10 ? 2 : 1;
  size_t n = (size_t)snprintf(b, cap, "p%0*zu", w, p + 1);
  size_t start = n;
  int under = 1;                       /* last char written is '_' */
  b[n++] = '_';
  for(const char *s = name; *s && n + 2 < cap && n - start < 40; s++){
    char c = *s;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '-' || c == '.';
    if( ok ){ b[n++] = c; under = 0; }
    else if( !under ){ b[n++] = '_'; under = 1; }
  }
  while( n > start && b[n - 1] == '_' ) n--;
  b[n] = 0;
}

/* ---- axes --------------------------------------------------------------- */

typedef struct frame {
  double L, T, W, H;          /* plot area in px */
  double x0, x1, y0, y1;      /* data range shown */
} frame;

static double fx(const frame *f, double x) { return f->L + (x - f->x0) / (f->x1 - f->x0) * f->W; }
static double fy(const frame *f, double y) { return f->T + f->H - (y - f->y0) / (f->y1 - f->y0) * f->H; }

/* A 1, 2 or 5 times a power of ten near range / n. */
static double nice_step(double range, int n)
{
  double raw = range / n, mag = pow(10, floor(log10(raw))), r = raw / mag;
  return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

/* [lo, hi] padded by 4% each side; a point gets a unit-sized window. */
static void pad_range(double lo, double hi, double *a, double *b)
{
  if( !isfinite(lo) || !isfinite(hi) ){ *a = 0; *b = 1; return; }
  double span = hi - lo;
  if( span <= 1e-12 * fmax(fabs(lo), fabs(hi)) || span == 0 ){
    double d = fabs(lo) > 0 ? 0.1 * fabs(lo) : 1;
    *a = lo - d;
    *b = hi + d;
    return;
  }
  *a = lo - 0.04 * span;
  *b = hi + 0.04 * span;
}

static void tick_label(char *b, size_t cap, double v, double step)
{
  int dec = (int)ceil(-log10(step) - 1e-9);
  if( fabs(v) < 1e-9 * step ) v = 0;
  if( dec < 0 ) dec = 0;
  if( (fabs(v) >= 1e6 || dec > 5) && v != 0 ){
    int prec = (int)ceil(log10(fabs(v) / step) + 1e-9) + 1;
    snprintf(b, cap, "%.*g", prec < 1 ? 1 : prec > 17 ? 17 : prec, v);
  }else{
    snprintf(b, cap, "%.*f", dec, v);
  }
}

/* Frame, grid lines, ticks and their labels. */
static void axes(fly_svg *s, const frame *f, int x_integer)
{
  fly_svg_style grid = { GRID, NULL, 1, 0, NULL };
  fly_svg_style tick = { GREY, NULL, 1, 0, NULL };
  fly_svg_style box = { "#bbbbbb", NULL, 1, 0, NULL };
  char b[64];
  double step = nice_step(f->x1 - f->x0, 6);
  if( x_integer && step < 1 ) step = 1;
  for(double v = ceil(f->x0 / step) * step; v <= f->x1 + 1e-9 * step; v += step){
    double x = fx(f, v);
    fly_svg_line(s, x, f->T, x, f->T + f->H, &grid);
    fly_svg_line(s, x, f->T + f->H, x, f->T + f->H + 5, &tick);
    tick_label(b, sizeof b, v, step);
    fly_svg_text(s, x, f->T + f->H + 18, 11, FLY_SVG_MIDDLE, 0, INK, 0, "%s", b);
  }
  step = nice_step(f->y1 - f->y0, 5);
  for(double v = ceil(f->y0 / step) * step; v <= f->y1 + 1e-9 * step; v += step){
    double y = fy(f, v);
    fly_svg_line(s, f->L, y, f->L + f->W, y, &grid);
    fly_svg_line(s, f->L - 5, y, f->L, y, &tick);
    tick_label(b, sizeof b, v, step);
    fly_svg_text(s, f->L - 8, y + 4, 11, FLY_SVG_END, 0, INK, 0, "%s", b);
  }
  fly_svg_rect(s, f->L, f->T, f->W, f->H, &box);
}

/* Title, subtitle and axis labels around frame f. */
static void labels(fly_svg *s, const frame *f, const char *title, const char *subtitle,
                   const char *xlabel, const char *ylabel)
{
  fly_svg_text(s, f->L, 22, 15, FLY_SVG_START, 0, INK, 1, "%s", title);
  if( subtitle ) fly_svg_text(s, f->L, 39, 11, FLY_SVG_START, 0, GREY, 0, "%s", subtitle);
  fly_svg_text(s, f->L + f->W / 2, f->T + f->H + 38, 12, FLY_SVG_MIDDLE, 0, INK, 0, "%s", xlabel);
  fly_svg_text(s, 16, f->T + f->H / 2, 12, FLY_SVG_MIDDLE, -90, INK, 0, "%s", ylabel);
}

/* The legend: "all chains" (when pooled) and one entry per chain, in rows
 * right-aligned to the plot area, from baseline y down; more than
 * N_COLOURS chains get one line of text.  legend_rows() is its height in
 * rows of LEGEND_DY px, so the plot area can start below it. */
#define LEGEND_DY 15
#define W_CHAIN   62                  /* px per "chain k" entry */
#define W_POOLED  76                  /* px for "all chains" */

static size_t legend_per_row(const frame *f)
{
  size_t k = (size_t)((f->L + f->W - 10) / W_CHAIN);
  return k ? k : 1;
}

static size_t legend_rows(const frame *f, size_t C, int pooled)
{
  size_t E = (C > N_COLOURS ? 1 : C) + (pooled != 0), k = legend_per_row(f);
  return E ? (E + k - 1) / k : 0;
}

static void legend(fly_svg *s, const frame *f, size_t C, int pooled, double y)
{
  fly_svg_style st = { NULL, NULL, 3, 0, NULL };
  size_t E = (C > N_COLOURS ? 0 : C) + (pooled != 0), k = legend_per_row(f);
  double right = f->L + f->W;
  if( C > N_COLOURS ){
    fly_svg_text(s, right, y, 11, FLY_SVG_END, 0, GREY, 0, "%zu chains (colours repeat after %d)",
                 C, N_COLOURS);
    y += LEGEND_DY;
  }
  for(size_t r0 = 0; r0 < E; r0 += k, y += LEGEND_DY){
    size_t r1 = r0 + k < E ? r0 + k : E;
    double x = right;
    for(size_t e = r0; e < r1; e++) x -= (pooled && e == 0) ? W_POOLED : W_CHAIN;
    for(size_t e = r0; e < r1; e++){
      int pool = pooled && e == 0;
      size_t c = e - (pooled != 0);
      st.stroke = pool ? INK : colours[c % N_COLOURS];
      fly_svg_line(s, x + 4, y - 4, x + 20, y - 4, &st);
      if( pool ) fly_svg_text(s, x + 24, y, 11, FLY_SVG_START, 0, INK, 0, "all chains");
      else fly_svg_text(s, x + 24, y, 11, FLY_SVG_START, 0, INK, 0, "chain %zu", c + 1);
      x += pool ? W_POOLED : W_CHAIN;
    }
  }
}

/* Put the plot area of frame f (height H) below a header whose last line
 * has baseline y0 and a legend of `rows` rows; returns the picture's
 * height. */
static double place(frame *f, double y0, size_t rows)
{
  f->T = y0 + (double)rows * LEGEND_DY + 12;
  return f->T + f->H + 50;
}

/* ---- series ------------------------------------------------------------- */

/* (it[t], v[t]) for t < n as at most MAX_POINTS px points in xs, ys: all
 * of them, or the minimum and maximum of each of MAX_POINTS/2 buckets in
 * the order they occur.  Non-finite values are skipped (a bucket of them
 * becomes a break in the path).  Returns the number of points. */
static size_t decimate(const frame *f, const int64_t *it, const double *v, size_t n,
                       double *xs, double *ys)
{
  size_t m = 0, B = MAX_POINTS / 2;
  if( n <= MAX_POINTS ){
    for(size_t t = 0; t < n; t++){
      xs[m] = fx(f, (double)it[t]);
      ys[m++] = isfinite(v[t]) ? fy(f, v[t]) : NAN;
    }
    return m;
  }
  for(size_t b = 0; b < B; b++){
    size_t lo = b * n / B, hi = (b + 1) * n / B, imin = SIZE_MAX, imax = SIZE_MAX;
    for(size_t t = lo; t < hi; t++){
      if( !isfinite(v[t]) ) continue;
      if( imin == SIZE_MAX || v[t] < v[imin] ) imin = t;
      if( imax == SIZE_MAX || v[t] > v[imax] ) imax = t;
    }
    if( imin == SIZE_MAX ){
      xs[m] = fx(f, (double)it[lo]);
      ys[m++] = NAN;
      continue;
    }
    size_t a = imin < imax ? imin : imax, z = imin < imax ? imax : imin;
    xs[m] = fx(f, (double)it[a]);
    ys[m++] = fy(f, v[a]);
    if( z != a ){
      xs[m] = fx(f, (double)it[z]);
      ys[m++] = fy(f, v[z]);
    }
  }
  return m;
}

typedef enum { V_DRAW, V_LP, V_BRIGHT, V_LIK, V_READS } which;

static const double *values(const chain *c, which w)
{
  switch( w ){
  case V_LP:     return c->lp;
  case V_BRIGHT: return c->bright;
  case V_LIK:    return c->lik;
  case V_READS:  return c->reads;
  default:       return c->x;
  }
}

/* Open DIR/<name> and add it to index.html. */
static fly_rc open_svg(plotter *pl, const char *name, double w, double h, const char *title,
                       fly_svg **ps, fly_err *err)
{
  char path[PATH_CAP];
  if( snprintf(path, sizeof path, "%s/%s", pl->dir, name) >= (int)sizeof path )
    return fly_fail(err, FLY_RANGE, "--out: path too long");
  fly_rc rc = fly_svg_open(path, w, h, title, ps, err);
  if( rc ) return rc;
  fprintf(pl->html, "<a href=\"");
  fly_svg_escape(pl->html, name);
  fprintf(pl->html, "\"><img src=\"");
  fly_svg_escape(pl->html, name);
  fprintf(pl->html, "\" width=\"%.0f\" alt=\"", w);
  fly_svg_escape(pl->html, title);
  fprintf(pl->html, "\"></a>\n");
  pl->n_files++;
  return FLY_OK;
}

static fly_rc close_svg(fly_svg *s, fly_rc rc, fly_err *err)
{
  if( rc == FLY_OK ) rc = fly_svg_finish(s, err);
  fly_svg_close(s);
  return rc;
}

/* Series w of every chain against iteration, warm-up shaded. */
static fly_rc trace_plot(plotter *pl, const char *file, which w, const char *title,
                         const char *ylabel, fly_err *err)
{
  const runinfo *ri = &pl->ri;
  size_t C = (size_t)ri->n_chains;
  fly_svg *s = NULL;
  frame f = { 72, 0, 670, 250, 0, 1, 0, 1 };
  double lo = INFINITY, hi = -INFINITY;
  size_t rows = legend_rows(&f, C, 0);
  double h = place(&f, 42, rows);
  char sub[256];
  fly_rc rc;

  for(size_t c = 0; c < C; c++){
    const double *v = values(&pl->ch[c], w);
    for(size_t t = 0; t < pl->ch[c].n; t++){
      if( !isfinite(v[t]) ) continue;
      if( v[t] < lo ) lo = v[t];
      if( v[t] > hi ) hi = v[t];
    }
  }
  if( w != V_DRAW && w != V_LP && lo >= 0 ){   /* counts: from zero */
    lo = 0;
    if( hi <= 0 ) hi = 1;
    pad_range(lo, hi, &f.y0, &f.y1);
    f.y0 = 0;
  }else{
    pad_range(lo, hi, &f.y0, &f.y1);
  }
  f.x0 = 0;
  f.x1 = (double)(pl->last_iter > 0 ? pl->last_iter : 1);
  snprintf(sub, sizeof sub, "run %lld: %zu chain%s, %lld warm-up (shaded) + %lld iterations%s",
           (long long)ri->id, C, C == 1 ? "" : "s", (long long)ri->n_warmup,
           (long long)ri->n_iters, ri->thin > 1 ? ", thinned" : "");
  if( (rc = open_svg(pl, file, 760, h, title, &s, err)) ) return rc;
  if( ri->n_warmup > 0 ){
    double xw = fmin((double)ri->n_warmup, f.x1);
    fly_svg_style shade = { NULL, "#ececec", 0, 0, NULL };
    fly_svg_rect(s, f.L, f.T, fx(&f, xw) - f.L, f.H, &shade);
    fly_svg_text(s, f.L + 2, f.T - 4, 11, FLY_SVG_START, 0, GREY, 0, "warm-up");
  }
  axes(s, &f, 1);
  labels(s, &f, title, sub, "iteration", ylabel);
  legend(s, &f, C, 0, 42 + LEGEND_DY);
  for(size_t c = 0; c < C; c++){
    fly_svg_style st = { colours[c % N_COLOURS], NULL, 1, 0.8, NULL };
    size_t m = decimate(&f, pl->ch[c].iter, values(&pl->ch[c], w), pl->ch[c].n, pl->xs, pl->ys);
    fly_svg_path(s, pl->xs, pl->ys, m, &st);
  }
  return close_svg(s, FLY_OK, err);
}

/* ---- autocorrelation ---------------------------------------------------- */

static fly_rc acf_plot(plotter *pl, const char *file, const char *name, fly_err *err)
{
  const runinfo *ri = &pl->ri;
  size_t C = (size_t)ri->n_chains, n_min = SIZE_MAX;
  fly_svg *s = NULL;
  frame f = { 72, 0, 420, 250, 0, 1, -0.2, 1.05 };
  size_t rows = legend_rows(&f, C, 0);
  double h = place(&f, 42, rows);
  char title[300], sub[256];
  fly_rc rc = FLY_OK;

  for(size_t c = 0; c < C; c++){
    size_t n = pl->ch[c].n - pl->ch[c].n_warm;
    if( n < n_min ) n_min = n;
  }
  size_t L = n_min > MAX_LAG ? MAX_LAG : n_min > 0 ? n_min - 1 : 0;
  f.x1 = L > 0 ? (double)L : 1;
  /* the y range: [min(-0.2, lowest rho), 1], computed first */
  double lo = -0.2;
  for(size_t c = 0; c < C && L > 0; c++){
    chain *ch = &pl->ch[c];
    if( fly_stats_acf(pl->ws, ch->x + ch->n_warm, ch->n - ch->n_warm, L, pl->rho, NULL) )
      continue;
    for(size_t k = 0; k <= L; k++) if( pl->rho[k] < lo ) lo = pl->rho[k];
  }
  f.y0 = lo < -0.2 ? lo - 0.05 : -0.2;
  snprintf(title, sizeof title, "Autocorrelation of %s", name);
  snprintf(sub, sizeof sub, "post-warm-up draws%s; dashed: \u00b11.96/\u221an, n = %zu",
           ri->thin > 1 ? " (thinned)" : "", n_min == SIZE_MAX ? (size_t)0 : n_min);
  if( (rc = open_svg(pl, file, 520, h, title, &s, err)) ) return rc;
  axes(s, &f, 1);
  labels(s, &f, title, sub, ri->thin > 1 ? "lag (kept draws)" : "lag", "autocorrelation");
  legend(s, &f, C, 0, 42 + LEGEND_DY);
  {
    fly_svg_style zero = { GREY, NULL, 1, 0, NULL }, band = { GREY, NULL, 1, 0, "5 4" };
    fly_svg_line(s, f.L, fy(&f, 0), f.L + f.W, fy(&f, 0), &zero);
    if( n_min > 0 && n_min != SIZE_MAX ){
      double b = 1.96 / sqrt((double)n_min);
      if( b < 1 ){
        fly_svg_line(s, f.L, fy(&f, b), f.L + f.W, fy(&f, b), &band);
        fly_svg_line(s, f.L, fy(&f, -b), f.L + f.W, fy(&f, -b), &band);
      }
    }
  }
  if( L == 0 )
    fly_svg_text(s, f.L + f.W / 2, f.T + f.H / 2, 13, FLY_SVG_MIDDLE, 0, GREY, 0,
                 "too few post-warm-up draws");
  for(size_t c = 0; c < C && L > 0; c++){
    chain *ch = &pl->ch[c];
    fly_svg_style st = { colours[c % N_COLOURS], NULL, 1.3, 0.85, NULL };
    fly_svg_style dot = { NULL, colours[c % N_COLOURS], 0, 0.85, NULL };
    if( fly_stats_acf(pl->ws, ch->x + ch->n_warm, ch->n - ch->n_warm, L, pl->rho, NULL) )
      continue;
    for(size_t k = 0; k <= L; k++){
      pl->xs[k] = fx(&f, (double)k);
      pl->ys[k] = isfinite(pl->rho[k]) ? fy(&f, pl->rho[k]) : NAN;
    }
    fly_svg_path(s, pl->xs, pl->ys, L + 1, &st);
    if( L <= 50 )
      for(size_t k = 0; k <= L; k++)
        if( isfinite(pl->ys[k]) ) fly_svg_circle(s, pl->xs[k], pl->ys[k], 2, &dot);
  }
  return close_svg(s, rc, err);
}

/* ---- density ------------------------------------------------------------ */

/* Gaussian KDE of x[0..n) with bandwidth bw on the KDE_POINTS points of
 * pl->grid (equally spaced): linear binning, then a direct convolution
 * with the kernel cut at 4 bandwidths. */
static void kde(plotter *pl, const double *x, size_t n, double bw, double *out)
{
  size_t G = KDE_POINTS;
  double lo = pl->grid[0], d = (pl->grid[G - 1] - lo) / (double)(G - 1);
  size_t K = (size_t)fmin((double)(G - 1), ceil(4 * bw / d));
  memset(pl->bins, 0, G * sizeof *pl->bins);
  for(size_t i = 0; i < n; i++){
    double pos = (x[i] - lo) / d;
    if( !(pos >= 0) || pos > (double)(G - 1) ) continue;
    size_t j = (size_t)pos;
    double w = pos - (double)j;
    pl->bins[j] += 1 - w;
    if( j + 1 < G ) pl->bins[j + 1] += w;
  }
  for(size_t k = 0; k <= K; k++){
    double u = (double)k * d / bw;
    pl->kern[k] = exp(-0.5 * u * u) / (sqrt(2 * M_PI) * bw * (double)n);
  }
  for(size_t i = 0; i < G; i++){
    double sum = pl->bins[i] * pl->kern[0];
    for(size_t k = 1; k <= K; k++){
      if( i >= k ) sum += pl->bins[i - k] * pl->kern[k];
      if( i + k < G ) sum += pl->bins[i + k] * pl->kern[k];
    }
    out[i] = sum;
  }
}

static fly_rc density_plot(plotter *pl, const char *file, const char *name, fly_err *err)
{
  const runinfo *ri = &pl->ri;
  size_t C = (size_t)ri->n_chains, n = 0, G = KDE_POINTS, rows;
  fly_svg *s = NULL;
  frame f = { 72, 0, 420, 250, 0, 1, 0, 1 };
  char title[300], sub[256], stats[256];
  double probs[4] = { 0.05, 0.25, 0.75, 0.95 }, q[4], lo = INFINITY, hi = -INFINITY, h;
  double *cd = pl->bins + G;          /* a chain's density */
  fly_rc rc;

  for(size_t c = 0; c < C; c++){
    chain *ch = &pl->ch[c];
    for(size_t t = ch->n_warm; t < ch->n; t++){
      double v = ch->x[t];
      if( !isfinite(v) ) continue;
      pl->pool[n++] = v;
      if( v < lo ) lo = v;
      if( v > hi ) hi = v;
    }
  }
  snprintf(title, sizeof title, "Posterior density of %s", name);
  double mean = fly_stats_mean(pl->pool, n), sd = fly_stats_sd(pl->pool, n), bw = NAN;
  if( n >= 2 && fly_stats_quantile(pl->ws, pl->pool, n, probs, 4, q, NULL) == FLY_OK ){
    double a = fmin(sd, (q[2] - q[1]) / 1.34);         /* R's bw.nrd0 */
    if( !(a > 0) ) a = sd;
    if( !(a > 0) ) a = fabs(pl->pool[0]);
    if( !(a > 0) ) a = 1;
    bw = 0.9 * a * pow((double)n, -0.2);
  }else{
    q[0] = q[3] = NAN;
  }
  int spread = n >= 2 && hi > lo && isfinite(bw);
  int per_chain = spread && C > 1;
  stats[0] = 0;
  if( spread ){
    double top = 0;
    for(size_t i = 0; i < G; i++)
      pl->grid[i] = (lo - 3 * bw) + (hi - lo + 6 * bw) * (double)i / (double)(G - 1);
    kde(pl, pl->pool, n, bw, pl->dens);
    for(size_t i = 0; i < G; i++) if( pl->dens[i] > top ) top = pl->dens[i];
    for(size_t c = 0; per_chain && c < C; c++){    /* the y range covers every chain */
      chain *ch = &pl->ch[c];
      if( ch->n <= ch->n_warm ) continue;
      kde(pl, ch->x + ch->n_warm, ch->n - ch->n_warm, bw, cd);
      for(size_t i = 0; i < G; i++) if( cd[i] > top ) top = cd[i];
    }
    f.x0 = pl->grid[0];
    f.x1 = pl->grid[G - 1];
    f.y1 = top > 0 ? 1.05 * top : 1;
    snprintf(sub, sizeof sub, "%zu post-warm-up draws; Gaussian kernel, Silverman bandwidth %.3g",
             n, bw);
    snprintf(stats, sizeof stats, "mean %.4g (dashed line), sd %.3g; 90%% interval [%.3g, %.3g] "
             "(band)", mean, sd, q[0], q[3]);
  }else{
    pad_range(lo, hi, &f.x0, &f.x1);
    if( n ) snprintf(sub, sizeof sub, "%zu post-warm-up draws, all equal to %.6g", n, lo);
    else snprintf(sub, sizeof sub, "no post-warm-up draws");
  }
  rows = legend_rows(&f, per_chain ? C : 0, per_chain);
  h = place(&f, stats[0] ? 56 : 42, rows);
  if( (rc = open_svg(pl, file, 520, h, title, &s, err)) ) return rc;
  axes(s, &f, 0);
  labels(s, &f, title, sub, name, "density");
  if( stats[0] ) fly_svg_text(s, f.L, 53, 11, FLY_SVG_START, 0, GREY, 0, "%s", stats);
  legend(s, &f, per_chain ? C : 0, per_chain, (stats[0] ? 56 : 42) + LEGEND_DY);
  if( spread ){
    fly_svg_style band = { NULL, "#dbe6f1", 0, 0, NULL };
    fly_svg_style fill = { NULL, "#9ab8d8", 0, 0.35, NULL };
    fly_svg_style line = { INK, NULL, 2, 0, NULL };
    fly_svg_style mline = { INK, NULL, 1, 0, "5 4" };
    fly_svg_style rug = { INK, NULL, 1, 0.35, NULL };
    /* the 90% interval as a band, then the pooled density, filled */
    if( isfinite(q[0]) && isfinite(q[3]) )
      fly_svg_rect(s, fx(&f, q[0]), f.T + 1, fx(&f, q[3]) - fx(&f, q[0]), f.H - 2, &band);
    for(size_t i = 0; i < G; i++){
      pl->xs[i] = fx(&f, pl->grid[i]);
      pl->ys[i] = fy(&f, pl->dens[i]);
    }
    pl->xs[G] = pl->xs[G - 1];
    pl->ys[G] = fy(&f, 0);
    pl->xs[G + 1] = pl->xs[0];
    pl->ys[G + 1] = fy(&f, 0);
    fly_svg_path(s, pl->xs, pl->ys, G + 2, &fill);
    for(size_t c = 0; per_chain && c < C; c++){
      chain *ch = &pl->ch[c];
      fly_svg_style st = { colours[c % N_COLOURS], NULL, 1.2, C > 4 ? 0.6 : 0.9, NULL };
      if( ch->n <= ch->n_warm ) continue;
      kde(pl, ch->x + ch->n_warm, ch->n - ch->n_warm, bw, cd);
      for(size_t i = 0; i < G; i++) pl->ys[i] = fy(&f, cd[i]);
      fly_svg_path(s, pl->xs, pl->ys, G, &st);
    }
    for(size_t i = 0; i < G; i++) pl->ys[i] = fy(&f, pl->dens[i]);
    fly_svg_path(s, pl->xs, pl->ys, G, &line);
    fly_svg_line(s, fx(&f, mean), f.T, fx(&f, mean), f.T + f.H, &mline);
    /* a rug of at most 200 draws spread evenly over the pool, as one path
     * of ticks separated by breaks */
    size_t step = n > 200 ? n / 200 : 1, m = 0;
    for(size_t i = 0; i < n && m + 3 <= MAX_POINTS; i += step){
      double x = fx(&f, pl->pool[i]);
      pl->xs[m] = x;
      pl->ys[m++] = f.T + f.H;
      pl->xs[m] = x;
      pl->ys[m++] = f.T + f.H - 8;
      pl->xs[m] = pl->ys[m] = NAN;
      m++;
    }
    fly_svg_path(s, pl->xs, pl->ys, m, &rug);
  }else if( n ){
    fly_svg_style line = { INK, NULL, 2, 0, NULL };
    fly_svg_line(s, fx(&f, lo), f.T, fx(&f, lo), f.T + f.H, &line);
  }
  return close_svg(s, FLY_OK, err);
}

/* ---- loading ------------------------------------------------------------ */

static fly_rc load_run(plotter *pl, int64_t run_id, fly_err *err)
{
  runinfo *ri = &pl->ri;
  sqlite3_stmt *st = NULL;
  static const char *cols = "SELECT r.id, n_chains, n_warmup, n_iters, thin, n_params, model, "
      "sampler, z_mode, status, d.name FROM run r JOIN dataset d ON d.id = r.dataset_id ";
  char sql[512];
  snprintf(sql, sizeof sql, "%s%s", cols, run_id > 0 ? "WHERE r.id = ?1" : "ORDER BY r.id DESC LIMIT 1");
  fly_rc rc = fly_db_prepare(pl->db, sql, &st, err);
  if( rc ) return rc;
  if( run_id > 0 ) sqlite3_bind_int64(st, 1, run_id);
  if( sqlite3_step(st) == SQLITE_ROW ){
    ri->id = sqlite3_column_int64(st, 0);
    ri->n_chains = sqlite3_column_int64(st, 1);
    ri->n_warmup = sqlite3_column_int64(st, 2);
    ri->n_iters = sqlite3_column_int64(st, 3);
    ri->thin = sqlite3_column_int64(st, 4);
    ri->n_params = sqlite3_column_int64(st, 5);
    copy_text(ri->model, sizeof ri->model, st, 6);
    copy_text(ri->sampler, sizeof ri->sampler, st, 7);
    copy_text(ri->z, sizeof ri->z, st, 8);
    copy_text(ri->status, sizeof ri->status, st, 9);
    copy_text(ri->dataset, sizeof ri->dataset, st, 10);
    if( ri->n_chains < 1 || ri->n_chains > 4096 || ri->n_params < 1 || ri->thin < 1 )
      rc = fly_fail(err, FLY_CORRUPT, "run %lld: bad shape (%lld chains, %lld parameters, "
                    "thin %lld)", (long long)ri->id, (long long)ri->n_chains,
                    (long long)ri->n_params, (long long)ri->thin);
  }else if( run_id > 0 ){
    rc = fly_fail(err, FLY_RANGE, "%s has no run %lld", fly_db_path(pl->db), (long long)run_id);
  }else{
    rc = fly_fail(err, FLY_RANGE, "%s has no runs: run `flydb sample` first", fly_db_path(pl->db));
  }
  sqlite3_finalize(st);
  return rc;
}

static fly_rc load_names(plotter *pl, fly_err *err)
{
  size_t P = (size_t)pl->ri.n_params;
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  if( !(pl->names = fly_alloc_array(P, sizeof *pl->names)) )
    return fly_fail(err, FLY_NOMEM, "parameter names");
  if( (rc = fly_db_prepare(pl->db, "SELECT idx, name FROM param WHERE run_id = ?1", &st, err)) )
    return rc;
  sqlite3_bind_int64(st, 1, pl->ri.id);
  while( rc == FLY_OK && sqlite3_step(st) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    const char *s = (const char *)sqlite3_column_text(st, 1);
    if( i < 0 || (size_t)i >= P || pl->names[i] ) continue;
    if( !(pl->names[i] = fly_strdup(s ? s : "")) ) rc = fly_fail(err, FLY_NOMEM, "names");
  }
  sqlite3_finalize(st);
  for(size_t p = 0; rc == FLY_OK && p < P; p++){
    char b[32];
    if( pl->names[p] ) continue;
    snprintf(b, sizeof b, "theta[%zu]", p + 1);
    if( !(pl->names[p] = fly_strdup(b)) ) rc = fly_fail(err, FLY_NOMEM, "names");
  }
  return rc;
}

/* The iteration table of the run, per chain. */
static fly_rc load_iterations(plotter *pl, fly_err *err)
{
  const runinfo *ri = &pl->ri;
  size_t C = (size_t)ri->n_chains;
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  if( !(pl->ch = fly_alloc_array(C, sizeof *pl->ch)) ) return fly_fail(err, FLY_NOMEM, "chains");
  if( (rc = fly_db_prepare(pl->db, "SELECT chain, count(*), sum(iter <= ?2) FROM iteration "
                           "WHERE run_id = ?1 GROUP BY chain", &st, err)) ) return rc;
  sqlite3_bind_int64(st, 1, ri->id);
  sqlite3_bind_int64(st, 2, ri->n_warmup);
  while( sqlite3_step(st) == SQLITE_ROW ){
    int64_t c = sqlite3_column_int64(st, 0);
    if( c < 0 || (size_t)c >= C ) continue;
    pl->ch[c].n = (size_t)sqlite3_column_int64(st, 1);
    pl->ch[c].n_warm = (size_t)sqlite3_column_int64(st, 2);
  }
  sqlite3_finalize(st);
  st = NULL;
  size_t total = 0;
  for(size_t c = 0; c < C; c++){
    chain *ch = &pl->ch[c];
    size_t n = ch->n ? ch->n : 1;
    total += ch->n;
    ch->iter = fly_alloc_array(n, sizeof *ch->iter);
    ch->lp = fly_alloc_array(n, sizeof *ch->lp);
    ch->bright = fly_alloc_array(n, sizeof *ch->bright);
    ch->lik = fly_alloc_array(n, sizeof *ch->lik);
    ch->reads = fly_alloc_array(n, sizeof *ch->reads);
    if( !ch->iter || !ch->lp || !ch->bright || !ch->lik || !ch->reads )
      return fly_fail(err, FLY_NOMEM, "iterations of chain %zu", c + 1);
    ch->n = 0;
  }
  if( total == 0 ) return fly_fail(err, FLY_RANGE, "run %lld has no draws yet", (long long)ri->id);
  if( (rc = fly_db_prepare(pl->db, "SELECT chain, iter, log_joint, n_bright, n_lik_evals, "
                           "n_reads FROM iteration WHERE run_id = ?1 ORDER BY chain, iter",
                           &st, err)) ) return rc;
  sqlite3_bind_int64(st, 1, ri->id);
  while( sqlite3_step(st) == SQLITE_ROW ){
    int64_t c = sqlite3_column_int64(st, 0);
    if( c < 0 || (size_t)c >= C ) continue;
    chain *ch = &pl->ch[c];
    size_t t = ch->n++;
    ch->iter[t] = sqlite3_column_int64(st, 1);
    ch->lp[t] = sqlite3_column_type(st, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 2);
    ch->bright[t] = sqlite3_column_double(st, 3);
    ch->lik[t] = sqlite3_column_double(st, 4);
    ch->reads[t] = sqlite3_column_double(st, 5);
    if( ch->iter[t] > pl->last_iter ) pl->last_iter = ch->iter[t];
  }
  sqlite3_finalize(st);
  return FLY_OK;
}

/* Position of iteration it in chain ch, or SIZE_MAX. */
static size_t find_iter(const chain *ch, int64_t it)
{
  size_t a = 0, b = ch->n;
  while( a < b ){
    size_t m = a + (b - a) / 2;
    if( ch->iter[m] < it ) a = m + 1;
    else b = m;
  }
  return a < ch->n && ch->iter[a] == it ? a : SIZE_MAX;
}

/* Draws of parameters [p0, p1) into blk: parameter p of chain c, row t at
 * blk[c][(p - p0) * n_c + t]; NaN where a draw is missing. */
static fly_rc load_block(plotter *pl, double **blk, size_t p0, size_t p1, fly_err *err)
{
  size_t C = (size_t)pl->ri.n_chains;
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  for(size_t c = 0; c < C; c++)
    for(size_t i = 0; i < (p1 - p0) * pl->ch[c].n; i++) blk[c][i] = NAN;
  if( (rc = fly_db_prepare(pl->db, "SELECT chain, iter, idx, value FROM draw WHERE run_id = ?1 "
                           "AND idx >= ?2 AND idx < ?3", &st, err)) ) return rc;
  sqlite3_bind_int64(st, 1, pl->ri.id);
  sqlite3_bind_int64(st, 2, (int64_t)p0);
  sqlite3_bind_int64(st, 3, (int64_t)p1);
  size_t last_c = SIZE_MAX, last_t = 0;
  int64_t last_it = -1;
  while( sqlite3_step(st) == SQLITE_ROW ){
    int64_t c = sqlite3_column_int64(st, 0), it = sqlite3_column_int64(st, 1);
    int64_t p = sqlite3_column_int64(st, 2);
    if( c < 0 || (size_t)c >= C ) continue;
    chain *ch = &pl->ch[c];
    size_t t = ((size_t)c == last_c && it == last_it) ? last_t : find_iter(ch, it);
    if( t == SIZE_MAX ) continue;
    last_c = (size_t)c;
    last_it = it;
    last_t = t;
    blk[c][((size_t)p - p0) * ch->n + t] = sqlite3_column_double(st, 3);
  }
  sqlite3_finalize(st);
  return FLY_OK;
}

/* ---- index.html --------------------------------------------------------- */

static void html_head(plotter *pl)
{
  const runinfo *ri = &pl->ri;
  FILE *h = pl->html;
  fprintf(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<title>flydb run %lld</title>\n<style>\n"
             "body { font-family: Helvetica, Arial, sans-serif; margin: 1em 2em; color: #222; }\n"
             "img { max-width: 100%%; border: 1px solid #ddd; margin: 3px; vertical-align: top; }\n"
             "h2 { margin-top: 1.5em; border-bottom: 1px solid #ccc; }\n"
             "h3 { margin: 1.2em 0 0.3em; font-family: monospace; font-size: 1.1em; }\n"
             "</style></head><body>\n<h1>flydb run %lld</h1>\n<p>Data set <b>",
          (long long)ri->id, (long long)ri->id);
  fly_svg_escape(h, ri->dataset);
  fprintf(h, "</b>, model ");
  fly_svg_escape(h, ri->model);
  fprintf(h, ", sampler ");
  fly_svg_escape(h, ri->sampler);
  fprintf(h, ", z ");
  fly_svg_escape(h, ri->z);
  fprintf(h, "; %lld chain%s &times; %lld iterations after %lld warm-up, thin %lld; "
             "%lld parameters; status ", (long long)ri->n_chains, ri->n_chains == 1 ? "" : "s",
          (long long)ri->n_iters, (long long)ri->n_warmup, (long long)ri->thin,
          (long long)ri->n_params);
  fly_svg_escape(h, ri->status);
  fprintf(h, ". Click a picture for the SVG file.</p>\n<p>Parameters:");
  for(size_t p = 0; p < (size_t)ri->n_params; p++){
    fprintf(h, " <a href=\"#p%zu\">", p + 1);
    fly_svg_escape(h, pl->names[p]);
    fprintf(h, "</a>");
  }
  fprintf(h, "</p>\n<h2>Run: log joint, bright data, likelihood evaluations and rows read "
             "per iteration</h2>\n<div>\n");
}

/* ---- the pictures ------------------------------------------------------- */

static fly_rc plot_all(plotter *pl, fly_err *err)
{
  const runinfo *ri = &pl->ri;
  size_t C = (size_t)ri->n_chains, P = (size_t)ri->n_params, rows = 0, max_n = 0;
  double **blk = NULL;
  fly_rc rc;

  for(size_t c = 0; c < C; c++){
    rows += pl->ch[c].n;
    if( pl->ch[c].n > max_n ) max_n = pl->ch[c].n;
  }
  pl->xs = fly_alloc_array(MAX_POINTS + KDE_POINTS + 2, sizeof *pl->xs);
  pl->ys = fly_alloc_array(MAX_POINTS + KDE_POINTS + 2, sizeof *pl->ys);
  pl->pool = fly_alloc_array(rows, sizeof *pl->pool);
  pl->grid = fly_alloc_array(KDE_POINTS, sizeof *pl->grid);
  pl->dens = fly_alloc_array(KDE_POINTS, sizeof *pl->dens);
  pl->bins = fly_alloc_array(2 * KDE_POINTS, sizeof *pl->bins);
  pl->kern = fly_alloc_array(KDE_POINTS, sizeof *pl->kern);
  pl->rho = fly_alloc_array(MAX_LAG + 1, sizeof *pl->rho);
  blk = fly_alloc_array(C, sizeof *blk);
  if( !pl->xs || !pl->ys || !pl->pool || !pl->grid || !pl->dens || !pl->bins || !pl->kern ||
      !pl->rho || !blk ){ rc = fly_fail(err, FLY_NOMEM, "plot"); goto done; }
  if( (rc = fly_stats_ws_new(1, max_n, &pl->ws, err)) ) goto done;

  html_head(pl);
  if( (rc = trace_plot(pl, "run_lp.svg", V_LP, "Log joint density",
                       "log p(\u03b8, z | x) + const", err)) ) goto done;
  if( (rc = trace_plot(pl, "run_bright.svg", V_BRIGHT, "Bright data points",
                       "bright rows (z = 1)", err)) ) goto done;
  if( (rc = trace_plot(pl, "run_lik_evals.svg", V_LIK, "Likelihood evaluations per iteration",
                       "likelihood evaluations", err)) ) goto done;
  if( (rc = trace_plot(pl, "run_reads.svg", V_READS, "Rows read per iteration",
                       "rows read", err)) ) goto done;
  fprintf(pl->html, "</div>\n<h2>Parameters: trace, autocorrelation, density</h2>\n");

  size_t B = rows ? BLOCK_VALS / rows : P;
  if( B < 1 ) B = 1;
  if( B > P ) B = P;
  for(size_t c = 0; c < C; c++)
    if( !(blk[c] = fly_alloc_array(B * (pl->ch[c].n ? pl->ch[c].n : 1), sizeof **blk)) ){
      rc = fly_fail(err, FLY_NOMEM, "draws of %zu parameters", B);
      goto done;
    }
  for(size_t p0 = 0; p0 < P; p0 += B){
    size_t p1 = p0 + B < P ? p0 + B : P;
    if( (rc = load_block(pl, blk, p0, p1, err)) ) goto done;
    for(size_t p = p0; p < p1; p++){
      char stem[128], file[160], title[300];
      for(size_t c = 0; c < C; c++) pl->ch[c].x = blk[c] + (p - p0) * pl->ch[c].n;
      file_stem(stem, sizeof stem, p, P, pl->names[p]);
      fprintf(pl->html, "<h3 id=\"p%zu\">", p + 1);
      fly_svg_escape(pl->html, pl->names[p]);
      fprintf(pl->html, " <small>(theta.%zu)</small></h3>\n<div>\n", p + 1);
      snprintf(file, sizeof file, "%s_trace.svg", stem);
      snprintf(title, sizeof title, "Trace of %s", pl->names[p]);
      if( (rc = trace_plot(pl, file, V_DRAW, title, pl->names[p], err)) ) goto done;
      snprintf(file, sizeof file, "%s_acf.svg", stem);
      if( (rc = acf_plot(pl, file, pl->names[p], err)) ) goto done;
      snprintf(file, sizeof file, "%s_density.svg", stem);
      if( (rc = density_plot(pl, file, pl->names[p], err)) ) goto done;
      fprintf(pl->html, "</div>\n");
    }
  }
  fprintf(pl->html, "</body></html>\n");
done:
  if( blk ) for(size_t c = 0; c < C; c++) fly_free(blk[c]);
  fly_free(blk);
  return rc;
}

static void plotter_free(plotter *pl)
{
  if( pl->ch )
    for(size_t c = 0; c < (size_t)pl->ri.n_chains; c++){
      fly_free(pl->ch[c].iter);
      fly_free(pl->ch[c].lp);
      fly_free(pl->ch[c].bright);
      fly_free(pl->ch[c].lik);
      fly_free(pl->ch[c].reads);
    }
  if( pl->names ) for(size_t p = 0; p < (size_t)pl->ri.n_params; p++) fly_free(pl->names[p]);
  fly_free(pl->names);
  fly_free(pl->ch);
  fly_free(pl->xs);
  fly_free(pl->ys);
  fly_free(pl->pool);
  fly_free(pl->grid);
  fly_free(pl->dens);
  fly_free(pl->bins);
  fly_free(pl->kern);
  fly_free(pl->rho);
  fly_stats_ws_free(pl->ws);
}

static fly_rc plot_run(plotter *pl, int64_t run_id, fly_err *err)
{
  char path[PATH_CAP], tmp[PATH_CAP + 8];
  fly_rc rc;
  if( (rc = load_run(pl, run_id, err)) ) return rc;
  if( (rc = load_names(pl, err)) ) return rc;
  if( (rc = load_iterations(pl, err)) ) return rc;
  if( (rc = fly_make_dir(pl->dir, err)) ) return rc;
  if( snprintf(path, sizeof path, "%s/index.html", pl->dir) >= (int)sizeof path )
    return fly_fail(err, FLY_RANGE, "--out: path too long");
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if( !(pl->html = fopen(tmp, "w")) )
    return fly_fail(err, FLY_IO, "cannot create %s: %s", tmp, strerror(errno));
  rc = plot_all(pl, err);
  int bad = ferror(pl->html);
  bad |= fclose(pl->html) != 0;
  pl->html = NULL;
  if( rc == FLY_OK && bad ) rc = fly_fail(err, FLY_IO, "writing %s: %s", tmp, strerror(errno));
  if( rc == FLY_OK && rename(tmp, path) != 0 )
    rc = fly_fail(err, FLY_IO, "renaming %s: %s", tmp, strerror(errno));
  if( rc ) remove(tmp);
  else printf("run %lld: %zu SVG files and %s\n", (long long)pl->ri.id, pl->n_files, path);
  return rc;
}

int fly_cmd_plot(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "out", FLY_OPT_VALUE, "output directory (created if missing)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  plotter pl;
  int64_t run_id = 0;
  const char *synopsis = "[RUN_ID] [--db PATH] --out DIR";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "plot", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "plot", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "plot", synopsis, &err);
    }
    run_id = v;
  }
  memset(&pl, 0, sizeof pl);
  pl.dir = fly_args_str(&a, "out", NULL);
  if( !pl.dir ){
    fly_fail(&err, FLY_MISUSE, "--out DIR is required");
    return fly_usage_error(&a, "plot", synopsis, &err);
  }
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), FLY_DB_READONLY, &pl.db, &err);
  if( rc == FLY_OK ) rc = plot_run(&pl, run_id, &err);
  plotter_free(&pl);
  fly_db_close(pl.db);
  return fly_report(rc, &err);
}
