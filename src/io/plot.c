/*
 * plot.c -- pictures of a run (plot.h): SVG files drawn with PLplot (its
 * svg device: axes, ticks, labels, legends) and an index.html that shows
 * them all.
 *
 * Per parameter p (files p<k>_<name>_*.svg, k from 1, the name reduced to
 * letters, digits, '-', '.' and '_'):
 *   _trace.svg    draws against iteration, chains overlaid in distinct
 *                 colours, warm-up shaded;
 *   _acf.svg      autocorrelation of each chain's post-warm-up draws up to
 *                 lag 100 (R's acf(), src/stats), with the +-1.96/sqrt(n)
 *                 band of white noise;
 *   _density.svg  marginal density of the post-warm-up draws of all chains
 *                 (R's density() defaults, src/stats/kde.c), one curve per
 *                 chain over it, the mean, the 90% interval and a rug.
 * Per run, the panels of the FlyMC paper's Figure 4 (run_*.svg): the log
 * joint density, the bright count, likelihood evaluations and rows read,
 * each per iteration and chain.
 * From the run's stored posterior predictive check (ppc/ppc.h), when it
 * has one:
 *   calibration.svg (softmax: calibration_class<k>.svg per class)
 *                 each bin's observed frequency against its mean predicted
 *                 probability, with the band of the replicated frequency
 *                 as a bar and the diagonal of perfect calibration;
 *   residuals_qq.svg   the standardised residuals' quantiles against the
 *                 Student-t's, with the diagonal;
 *   residuals_pit.svg  the PIT histogram against its expected height, with
 *                 the band of each bin's replicated fraction.
 *
 * A series of more than 2000 points is drawn as the minimum and maximum of
 * each of 1000 buckets (in the order they occur), which keeps every spike
 * a full-resolution line would show and a file near 30 KB per chain.
 * PLplot writes each picture to "<file>.plot"; it is then copied to
 * "<file>.tmp" with a <title> element (the picture's title, for browsers
 * and screen readers) and renamed into place, so a failed picture leaves
 * no file behind.  PLplot keeps global state: pictures are drawn one at a
 * time, from one thread.
 *
 * Memory: the run's diagnostics (5 numbers a kept iteration) and the
 * draws of a block of parameters, at most 2^24 doubles (128 MiB); more
 * parameters than fit cost one more scan of the draws per block.
 */
#include "io/plot.h"

#include <errno.h>
#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppc/ppc.h"
#include "stats/stats.h"
#include "store/trace.h"
#include "util/mem.h"

#define PATH_CAP   4096
#define MAX_POINTS 2000          /* per series, after min/max bucketing */
#define KDE_POINTS 512
#define MAX_LAG    100
#define BLOCK_VALS ((size_t)1 << 24)
#define N_COLOURS  8

/* cmap0 entries: PLplot draws in indexed colours. */
enum { C_BG, C_INK, C_GREY, C_GRID, C_SHADE, C_BAND, C_FILL, C_CHAIN0,
       C_N = C_CHAIN0 + N_COLOURS };
static const unsigned char palette[C_N][3] = {
  { 255, 255, 255 }, { 0x22, 0x22, 0x22 }, { 0x66, 0x66, 0x66 }, { 0xe6, 0xe6, 0xe6 },
  { 0xec, 0xec, 0xec }, { 0xdb, 0xe6, 0xf1 }, { 0x9a, 0xb8, 0xd8 },
  /* Okabe & Ito's colour-blind safe palette (yellow dropped), then brown, grey */
  { 0x00, 0x72, 0xb2 }, { 0xd5, 0x5e, 0x00 }, { 0x00, 0x9e, 0x73 }, { 0xcc, 0x79, 0xa7 },
  { 0xe6, 0x9f, 0x00 }, { 0x56, 0xb4, 0xe9 }, { 0x8c, 0x56, 0x4b }, { 0x7f, 0x7f, 0x7f },
};

typedef struct chain {        /* one chain's kept iterations, in order */
  size_t   n;
  size_t   n_warm;            /* of which warm-up */
  int64_t *iter;
  double  *lp, *bright, *lik, *reads;
  double  *x;                 /* draws of the current parameter (block) */
} chain;

typedef struct fly_plot {
  fly_db              *db;    /* borrowed */
  unsigned             kinds; /* FLY_PLOT_* drawn */
  fly_trace_reader    *tr;
  const fly_trace_run *ri;    /* borrowed from tr */
  const char          *dir;
  chain               *ch;    /* [n_chains] */
  fly_stats_ws        *ws;
  double              *xs, *ys;      /* MAX_POINTS scratch for a path */
  double              *pool;         /* post-warm-up draws of all chains */
  double              *grid, *dens, *cd;  /* KDE grid, pooled and one chain's density */
  double              *rho;          /* MAX_LAG + 1 */
  FILE                *html;         /* index.html.tmp */
  size_t               n_files;
  int64_t              last_iter;    /* largest kept iteration */
} plotter;                           /* fly_plot of plot.h */

/* ---- small helpers ------------------------------------------------------ */

/* Text for XML character data and attribute values (& < > " '; control
 * characters other than tab become '?'). */
static void xml_escape(FILE *f, const char *t)
{
  for( ; *t; t++){
    unsigned char c = (unsigned char)*t;
    switch( c ){
    case '&':  fputs("&amp;", f); break;
    case '<':  fputs("&lt;", f); break;
    case '>':  fputs("&gt;", f); break;
    case '"':  fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:   fputc(c < 0x20 && c != '\t' ? '?' : c, f);
    }
  }
}

/* s for PLplot, whose text escape character '#' is doubled to stay literal. */
static const char *pl_text(char *b, size_t cap, const char *s)
{
  size_t n = 0;
  for( ; *s && n + 2 < cap; s++){
    if( *s == '#' ) b[n++] = '#';
    b[n++] = *s;
  }
  b[n] = 0;
  return b;
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

/* ---- one picture -------------------------------------------------------- */

/* The layout of a picture in px: the plot area (L, T, W, H) inside a page
 * of pw x ph, and the data range shown. */
typedef struct frame {
  double pw, ph;
  double L, T, W, H;
  double x0, x1, y0, y1;
} frame;

#define LEGEND_DY 15               /* px per legend row */
#define W_CHAIN   62               /* px per "chain k" entry */
#define W_POOLED  76               /* px for "all chains" */

static size_t legend_per_row(const frame *f)
{
  size_t k = (size_t)((f->L + f->W - 10) / W_CHAIN);
  return k ? k : 1;
}

/* Rows of the legend: "all chains" (when pooled) and one entry per chain;
 * more than N_COLOURS chains get one line of text instead. */
static size_t legend_rows(const frame *f, size_t C, int pooled)
{
  size_t E = (C > N_COLOURS ? 1 : C) + (pooled != 0), k = legend_per_row(f);
  return E ? (E + k - 1) / k : 0;
}

/* Put the plot area (height H) below a header of `lines` text lines and a
 * legend of `rows` rows; sets the page height. */
static void place(frame *f, int lines, size_t rows)
{
  f->T = 26 + 15.0 * lines + (double)rows * LEGEND_DY + 16;
  f->ph = f->T + f->H + 52;
}

/* Start a picture: PLplot's svg device on "<path>.plot", the palette, and
 * the plot area of f in world coordinates. */
static fly_rc pic_open(const char *path, const frame *f, fly_err *err)
{
  char tmp[PATH_CAP + 8];
  FILE *probe;
  snprintf(tmp, sizeof tmp, "%s.plot", path);
  /* PLplot exits the process when it cannot open its file: try first */
  if( !(probe = fopen(tmp, "w")) )
    return fly_fail(err, FLY_IO, "cannot create %s: %s", tmp, strerror(errno));
  fclose(probe);
  plsdev("svg");
  plsfnam(tmp);
  plspage(0, 0, (PLINT)f->pw, (PLINT)f->ph, 0, 0);
  plscmap0n(C_N);
  for(int k = 0; k < C_N; k++) plscol0(k, palette[k][0], palette[k][1], palette[k][2]);
  plscol0a(C_FILL, palette[C_FILL][0], palette[C_FILL][1], palette[C_FILL][2], 0.35);
  plinit();
  pladv(0);
  plvpor(f->L / f->pw, (f->L + f->W) / f->pw, 1 - (f->T + f->H) / f->ph, 1 - f->T / f->ph);
  plwind(f->x0, f->x1, f->y0, f->y1);
  return FLY_OK;
}

/* PLplot places text outside the plot area in character heights: the
 * default height on these pages is about 11 px. */
#define CH_PX 11.0

/* A line of text at scale sc whose baseline is y px from the page's top. */
static void top_text(const frame *f, double y, double sc, const char *text)
{
  char b[600];
  plschr(0, sc);
  plmtex("t", (f->T - y) / (CH_PX * sc), 0.0, 0.0, pl_text(b, sizeof b, text));
}

/* Grid, box, ticks and labels; the title (baseline 20 px) and subtitle
 * lines (15 px apart) above. */
static void pic_axes(const frame *f, const char *title, const char *const *sub, int n_sub,
                     const char *xlabel, const char *ylabel)
{
  char b[600];
  plwidth(1);
  pllsty(1);
  plcol0(C_GRID);
  plbox("g", 0, 0, "g", 0, 0);
  plcol0(C_INK);
  plschr(0, 0.8);
  plbox("bcnst", 0, 0, "bcnstv", 0, 0);
  plschr(0, 0.9);
  plmtex("b", 3.0, 0.5, 0.5, pl_text(b, sizeof b, xlabel));
  plmtex("l", 4.6, 0.5, 0.5, pl_text(b, sizeof b, ylabel));
  top_text(f, 20, 1.1, title);
  plcol0(C_GREY);
  for(int i = 0; i < n_sub; i++) top_text(f, 38 + 15.0 * i, 0.8, sub[i]);
  plschr(0, 1.0);
  plcol0(C_INK);
}

/* The legend above the plot area, right-aligned: "all chains" (when pooled)
 * and one line per chain; its top row just below the subtitle lines. */
static void pic_legend(const frame *f, size_t C, int pooled)
{
  size_t k = legend_per_row(f), E;
  PLINT opt[N_COLOURS + 1], lcol[N_COLOURS + 1], lsty[N_COLOURS + 1], tcol[N_COLOURS + 1];
  PLFLT lw[N_COLOURS + 1];
  const char *text[N_COLOURS + 1];
  char names[N_COLOURS][24], many[64];
  PLFLT wd, ht;
  size_t rows = legend_rows(f, C, pooled);
  E = 0;
  if( pooled ){
    opt[E] = PL_LEGEND_LINE; lcol[E] = C_INK; text[E] = "all chains";
    E++;
  }
  if( C > N_COLOURS ){
    snprintf(many, sizeof many, "%zu chains (colours repeat after %d)", C, N_COLOURS);
    opt[E] = PL_LEGEND_NONE; lcol[E] = C_GREY; text[E] = many;
    E++;
  }else{
    for(size_t c = 0; c < C; c++){
      snprintf(names[c], sizeof names[c], "chain %zu", c + 1);
      opt[E] = PL_LEGEND_LINE; lcol[E] = (PLINT)(C_CHAIN0 + c); text[E] = names[c];
      E++;
    }
  }
  if( E == 0 ) return;
  for(size_t e = 0; e < E; e++){ lsty[e] = 1; lw[e] = 2.5; tcol[e] = C_INK; }
  size_t ncol = E < k ? E : k;
  plschr(0, 0.8);
  /* y: from the top of the plot area up to the legend's top edge, in
   * fractions of the plot area's height */
  pllegend(&wd, &ht, 0, PL_POSITION_VIEWPORT | PL_POSITION_INSIDE | PL_POSITION_TOP |
           PL_POSITION_RIGHT, 0.0, -((double)rows * LEGEND_DY + 6) / f->H, 0.05, C_BG, C_BG, 1,
           (PLINT)rows, (PLINT)ncol, (PLINT)E, opt, 0.6, 0.75, 2.0, 0.0, tcol, text,
           NULL, NULL, NULL, NULL, lcol, lsty, lw, NULL, NULL, NULL, NULL);
  plschr(0, 1.0);
}

/* Polyline of n points, broken where a coordinate is not finite. */
static void pic_line(const double *x, const double *y, size_t n)
{
  size_t a = 0;
  while( a < n ){
    while( a < n && !(isfinite(x[a]) && isfinite(y[a])) ) a++;
    size_t b = a;
    while( b < n && isfinite(x[b]) && isfinite(y[b]) ) b++;
    if( b - a >= 2 ) plline((PLINT)(b - a), x + a, y + a);
    a = b;
  }
}

/* End the picture, copy it to <path>.tmp with a <title>, rename into place,
 * and add it to index.html.  The PLplot file is removed in any case. */
static fly_rc pic_close(plotter *pl, const char *path, const char *name, const frame *f,
                        const char *title, fly_err *err)
{
  char plot[PATH_CAP + 8], tmp[PATH_CAP + 8], buf[1 << 15];
  FILE *in = NULL, *out = NULL;
  fly_rc rc = FLY_OK;
  int titled = 0;
  size_t n, got = 0;
  char tail[8] = {0};
  plend1();
  snprintf(plot, sizeof plot, "%s.plot", path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if( !(in = fopen(plot, "r")) ){
    rc = fly_fail(err, FLY_IO, "cannot read %s: %s", plot, strerror(errno));
    goto done;
  }
  if( !(out = fopen(tmp, "w")) ){
    rc = fly_fail(err, FLY_IO, "cannot create %s: %s", tmp, strerror(errno));
    goto done;
  }
  /* the <title> goes right after the svg element's start tag, the first '>'
   * after "<svg" */
  while( (n = fread(buf, 1, sizeof buf, in)) > 0 ){
    size_t from = 0;
    if( !titled ){
      char *svg = NULL;
      for(size_t i = 0; i + 4 <= n && !svg; i++) if( !memcmp(buf + i, "<svg", 4) ) svg = buf + i;
      char *gt = svg ? memchr(svg, '>', (size_t)(buf + n - svg)) : NULL;
      if( gt ){
        from = (size_t)(gt - buf) + 1;
        fwrite(buf, 1, from, out);
        fputs("\n  <title>", out);
        xml_escape(out, title);
        fputs("</title>", out);
        titled = 1;
      }
    }
    fwrite(buf + from, 1, n - from, out);
    for(size_t i = 0; i < n; i++){ memmove(tail, tail + 1, 6); tail[6] = buf[i]; }
    got += n;
  }
  if( ferror(in) ) rc = fly_fail(err, FLY_IO, "reading %s: %s", plot, strerror(errno));
  else if( !titled || !strstr(tail, "</svg>") )
    rc = fly_fail(err, FLY_IO, "%s: PLplot wrote an incomplete picture (%zu bytes)", plot, got);
  if( fclose(out) != 0 && rc == FLY_OK )
    rc = fly_fail(err, FLY_IO, "writing %s: %s", tmp, strerror(errno));
  out = NULL;
  if( rc == FLY_OK && rename(tmp, path) != 0 )
    rc = fly_fail(err, FLY_IO, "renaming %s: %s", tmp, strerror(errno));
done:
  if( in ) fclose(in);
  if( out ) fclose(out);
  remove(plot);
  if( rc ){
    remove(tmp);
    return rc;
  }
  fprintf(pl->html, "<a href=\"");
  xml_escape(pl->html, name);
  fprintf(pl->html, "\"><img src=\"");
  xml_escape(pl->html, name);
  fprintf(pl->html, "\" width=\"%.0f\" alt=\"", f->pw);
  xml_escape(pl->html, title);
  fprintf(pl->html, "\"></a>\n");
  pl->n_files++;
  return FLY_OK;
}

static fly_rc pic_path(plotter *pl, const char *name, char *path, fly_err *err)
{
  if( snprintf(path, PATH_CAP, "%s/%s", pl->dir, name) >= PATH_CAP )
    return fly_fail(err, FLY_RANGE, "%s: path too long for %s", pl->dir, name);
  return FLY_OK;
}

/* ---- series ------------------------------------------------------------- */

/* (it[t], v[t]) for t < n as at most MAX_POINTS points in xs, ys: all of
 * them, or the minimum and maximum of each of MAX_POINTS/2 buckets in the
 * order they occur.  Non-finite values become NaN (a break in the line).
 * Returns the number of points. */
static size_t decimate(const int64_t *it, const double *v, size_t n, double *xs, double *ys)
{
  size_t m = 0, B = MAX_POINTS / 2;
  if( n <= MAX_POINTS ){
    for(size_t t = 0; t < n; t++){
      xs[m] = (double)it[t];
      ys[m++] = isfinite(v[t]) ? v[t] : NAN;
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
      xs[m] = (double)it[lo];
      ys[m++] = NAN;
      continue;
    }
    size_t a = imin < imax ? imin : imax, z = imin < imax ? imax : imin;
    xs[m] = (double)it[a];
    ys[m++] = v[a];
    if( z != a ){
      xs[m] = (double)it[z];
      ys[m++] = v[z];
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

/* Series w of every chain against iteration, warm-up shaded. */
static fly_rc trace_plot(plotter *pl, const char *file, which w, const char *title,
                         const char *ylabel, fly_err *err)
{
  const fly_trace_run *ri = pl->ri;
  size_t C = ri->n_chains;
  frame f = { 760, 0, 72, 0, 670, 250, 0, 1, 0, 1 };
  double lo = INFINITY, hi = -INFINITY;
  char sub[256], path[PATH_CAP];
  const char *subs[1] = { sub };
  fly_rc rc;

  place(&f, 1, legend_rows(&f, C, 0));
  for(size_t c = 0; c < C; c++){
    const double *v = values(&pl->ch[c], w);
    for(size_t t = 0; t < pl->ch[c].n; t++){
      if( !isfinite(v[t]) ) continue;
      if( v[t] < lo ) lo = v[t];
      if( v[t] > hi ) hi = v[t];
    }
  }
  if( w != V_DRAW && w != V_LP && lo >= 0 ){   /* counts: from zero */
    if( hi <= 0 ) hi = 1;
    pad_range(0, hi, &f.y0, &f.y1);
    f.y0 = 0;
  }else{
    pad_range(lo, hi, &f.y0, &f.y1);
  }
  f.x0 = 0;
  f.x1 = (double)(pl->last_iter > 0 ? pl->last_iter : 1);
  snprintf(sub, sizeof sub, "run %lld: %zu chain%s, %lld warm-up (shaded) + %lld iterations%s",
           (long long)ri->id, C, C == 1 ? "" : "s", (long long)ri->n_warmup,
           (long long)ri->n_iters, ri->thin > 1 ? ", thinned" : "");
  if( (rc = pic_path(pl, file, path, err)) ) return rc;
  if( (rc = pic_open(path, &f, err)) ) return rc;
  if( ri->n_warmup > 0 ){
    double xw = fmin((double)ri->n_warmup, f.x1);
    PLFLT bx[4] = { f.x0, xw, xw, f.x0 }, by[4] = { f.y0, f.y0, f.y1, f.y1 };
    plcol0(C_SHADE);
    plfill(4, bx, by);
    plcol0(C_GREY);
    plschr(0, 0.8);
    plptex(f.x0 + 0.004 * (f.x1 - f.x0), f.y1 - 0.05 * (f.y1 - f.y0), 1, 0, 0, "warm-up");
    plschr(0, 1.0);
  }
  pic_axes(&f, title, subs, 1, "iteration", ylabel);
  pic_legend(&f, C, 0);
  plwidth(1);
  for(size_t c = 0; c < C; c++){
    size_t m = decimate(pl->ch[c].iter, values(&pl->ch[c], w), pl->ch[c].n, pl->xs, pl->ys);
    plcol0((PLINT)(C_CHAIN0 + c % N_COLOURS));
    pic_line(pl->xs, pl->ys, m);
  }
  return pic_close(pl, path, file, &f, title, err);
}

/* ---- autocorrelation ---------------------------------------------------- */

static fly_rc acf_plot(plotter *pl, const char *file, const char *name, fly_err *err)
{
  const fly_trace_run *ri = pl->ri;
  size_t C = ri->n_chains, n_min = SIZE_MAX;
  frame f = { 520, 0, 72, 0, 420, 250, 0, 1, -0.2, 1.05 };
  char title[300], sub[256], path[PATH_CAP];
  const char *subs[1] = { sub };
  fly_rc rc;

  place(&f, 1, legend_rows(&f, C, 0));
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
  if( (rc = pic_path(pl, file, path, err)) ) return rc;
  if( (rc = pic_open(path, &f, err)) ) return rc;
  pic_axes(&f, title, subs, 1, ri->thin > 1 ? "lag (kept draws)" : "lag", "autocorrelation");
  pic_legend(&f, C, 0);
  plcol0(C_GREY);
  pljoin(f.x0, 0, f.x1, 0);
  if( n_min > 0 && n_min != SIZE_MAX ){
    double b = 1.96 / sqrt((double)n_min);
    if( b < 1 ){
      pllsty(3);
      pljoin(f.x0, b, f.x1, b);
      pljoin(f.x0, -b, f.x1, -b);
      pllsty(1);
    }
  }
  if( L == 0 ){
    plschr(0, 1.1);
    plptex((f.x0 + f.x1) / 2, (f.y0 + f.y1) / 2, 1, 0, 0.5, "too few post-warm-up draws");
    plschr(0, 1.0);
  }
  plwidth(1.3);
  for(size_t c = 0; c < C && L > 0; c++){
    chain *ch = &pl->ch[c];
    if( fly_stats_acf(pl->ws, ch->x + ch->n_warm, ch->n - ch->n_warm, L, pl->rho, NULL) )
      continue;
    for(size_t k = 0; k <= L; k++){
      pl->xs[k] = (double)k;
      pl->ys[k] = isfinite(pl->rho[k]) ? pl->rho[k] : NAN;
    }
    plcol0((PLINT)(C_CHAIN0 + c % N_COLOURS));
    pic_line(pl->xs, pl->ys, L + 1);
    if( L <= 50 ){                  /* a dot at each lag */
      plschr(0, 0.45);
      for(size_t k = 0; k <= L; k++)
        if( isfinite(pl->ys[k]) ) plstring(1, pl->xs + k, pl->ys + k, "\u25cf");
      plschr(0, 1.0);
    }
  }
  plwidth(1);
  return pic_close(pl, path, file, &f, title, err);
}

/* ---- density ------------------------------------------------------------ */

static fly_rc density_plot(plotter *pl, const char *file, const char *name, fly_err *err)
{
  const fly_trace_run *ri = pl->ri;
  size_t C = ri->n_chains, n = 0, G = KDE_POINTS;
  frame f = { 520, 0, 72, 0, 420, 250, 0, 1, 0, 1 };
  char title[300], sub[256], stats[256], path[PATH_CAP];
  const char *subs[2] = { sub, stats };
  double probs[2] = { 0.05, 0.95 }, q[2] = { NAN, NAN }, lo = INFINITY, hi = -INFINITY;
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
  if( n >= 2 && fly_stats_bw_nrd0(pl->ws, pl->pool, n, &bw, NULL) == FLY_OK )
    fly_stats_quantile(pl->ws, pl->pool, n, probs, 2, q, NULL);
  int spread = n >= 2 && hi > lo && isfinite(bw);
  int per_chain = spread && C > 1;
  stats[0] = 0;
  if( spread ){
    double top = 0, g0 = lo - 3 * bw, g1 = hi + 3 * bw;
    for(size_t i = 0; i < G; i++) pl->grid[i] = g0 + (g1 - g0) * (double)i / (double)(G - 1);
    if( (rc = fly_stats_kde(pl->pool, n, bw, g0, g1, G, pl->dens, err)) ) return rc;
    for(size_t i = 0; i < G; i++) if( pl->dens[i] > top ) top = pl->dens[i];
    for(size_t c = 0; per_chain && c < C; c++){    /* the y range covers every chain */
      chain *ch = &pl->ch[c];
      if( ch->n <= ch->n_warm ) continue;
      if( (rc = fly_stats_kde(ch->x + ch->n_warm, ch->n - ch->n_warm, bw, g0, g1, G, pl->cd,
                              err)) ) return rc;
      for(size_t i = 0; i < G; i++) if( pl->cd[i] > top ) top = pl->cd[i];
    }
    f.x0 = g0;
    f.x1 = g1;
    f.y1 = top > 0 ? 1.05 * top : 1;
    snprintf(sub, sizeof sub, "%zu post-warm-up draws; Gaussian kernel, Silverman bandwidth %.3g",
             n, bw);
    snprintf(stats, sizeof stats, "mean %.4g (dashed line), sd %.3g; 90%% interval [%.3g, %.3g] "
             "(band)", mean, sd, q[0], q[1]);
  }else{
    pad_range(lo, hi, &f.x0, &f.x1);
    if( n ) snprintf(sub, sizeof sub, "%zu post-warm-up draws, all equal to %.6g", n, lo);
    else snprintf(sub, sizeof sub, "no post-warm-up draws");
  }
  place(&f, stats[0] ? 2 : 1, legend_rows(&f, per_chain ? C : 0, per_chain));
  if( (rc = pic_path(pl, file, path, err)) ) return rc;
  if( (rc = pic_open(path, &f, err)) ) return rc;
  if( spread && isfinite(q[0]) && isfinite(q[1]) ){    /* the 90% interval as a band */
    PLFLT bx[4] = { q[0], q[1], q[1], q[0] }, by[4] = { f.y0, f.y0, f.y1, f.y1 };
    plcol0(C_BAND);
    plfill(4, bx, by);
  }
  pic_axes(&f, title, subs, stats[0] ? 2 : 1, name, "density");
  pic_legend(&f, per_chain ? C : 0, per_chain);
  if( spread ){
    /* the pooled density, filled, then each chain's, then the pooled line */
    memcpy(pl->xs, pl->grid, G * sizeof *pl->xs);
    memcpy(pl->ys, pl->dens, G * sizeof *pl->ys);
    pl->xs[G] = pl->grid[G - 1];
    pl->ys[G] = 0;
    pl->xs[G + 1] = pl->grid[0];
    pl->ys[G + 1] = 0;
    plcol0(C_FILL);
    plfill((PLINT)(G + 2), pl->xs, pl->ys);
    plwidth(1.2);
    for(size_t c = 0; per_chain && c < C; c++){
      chain *ch = &pl->ch[c];
      if( ch->n <= ch->n_warm ) continue;
      if( (rc = fly_stats_kde(ch->x + ch->n_warm, ch->n - ch->n_warm, bw, f.x0, f.x1, G, pl->cd,
                              err)) ) break;
      plcol0((PLINT)(C_CHAIN0 + c % N_COLOURS));
      pic_line(pl->grid, pl->cd, G);
    }
    plcol0(C_INK);
    plwidth(2);
    pic_line(pl->grid, pl->dens, G);
    plwidth(1);
    pllsty(3);
    pljoin(mean, f.y0, mean, f.y1);
    pllsty(1);
    /* a rug of at most 200 draws spread evenly over the pool, 8 px high */
    size_t step = n > 200 ? n / 200 : 1;
    double tick = 8 * (f.y1 - f.y0) / f.H;
    plcol0(C_GREY);
    for(size_t i = 0; i < n; i += step) pljoin(pl->pool[i], f.y0, pl->pool[i], f.y0 + tick);
  }else if( n ){
    plcol0(C_INK);
    plwidth(2);
    pljoin(lo, f.y0, lo, f.y1);
    plwidth(1);
  }
  if( rc ){
    plend1();
    snprintf(path + strlen(path), 8, ".plot");
    remove(path);
    return rc;
  }
  return pic_close(pl, path, file, &f, title, err);
}

/* ---- loading ------------------------------------------------------------ */

/* The diagnostics of the run, per chain. */
static fly_rc load_iterations(plotter *pl, fly_err *err)
{
  size_t C = pl->ri->n_chains, total = 0;
  fly_trace_row *rows = NULL;
  fly_rc rc = FLY_OK;
  if( !(pl->ch = fly_alloc_array(C, sizeof *pl->ch)) ) return fly_fail(err, FLY_NOMEM, "chains");
  for(size_t c = 0; c < C; c++){
    chain *ch = &pl->ch[c];
    size_t nw, ns, n;
    if( (rc = fly_trace_chain_len(pl->tr, c, &nw, &ns, err)) ) goto done;
    ch->n_warm = nw;
    n = nw + ns ? nw + ns : 1;
    total += nw + ns;
    ch->iter = fly_alloc_array(n, sizeof *ch->iter);
    ch->lp = fly_alloc_array(n, sizeof *ch->lp);
    ch->bright = fly_alloc_array(n, sizeof *ch->bright);
    ch->lik = fly_alloc_array(n, sizeof *ch->lik);
    ch->reads = fly_alloc_array(n, sizeof *ch->reads);
    fly_free(rows);
    rows = fly_alloc_array(n, sizeof *rows);
    if( !ch->iter || !ch->lp || !ch->bright || !ch->lik || !ch->reads || !rows ){
      rc = fly_fail(err, FLY_NOMEM, "iterations of chain %zu", c + 1);
      goto done;
    }
    if( (rc = fly_trace_diagnostics(pl->tr, c, 0, nw + ns, rows, ch->iter, &ch->n, err)) )
      goto done;
    for(size_t t = 0; t < ch->n; t++){
      ch->lp[t] = rows[t].log_joint;
      ch->bright[t] = (double)rows[t].n_bright;
      ch->lik[t] = (double)rows[t].n_lik;
      ch->reads[t] = (double)rows[t].n_reads;
      if( ch->iter[t] > pl->last_iter ) pl->last_iter = ch->iter[t];
    }
  }
  if( total == 0 ) rc = fly_fail(err, FLY_RANGE, "run %lld has no draws yet", (long long)pl->ri->id);
done:
  fly_free(rows);
  return rc;
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
 * blk[c][(p - p0) * n_c + t]; NaN where a draw is missing.  scratch holds
 * (p1 - p0) * max n_c values and as many iterations. */
static fly_rc load_block(plotter *pl, double **blk, size_t p0, size_t p1, double *scratch,
                         int64_t *its, fly_err *err)
{
  size_t C = pl->ri->n_chains, B = p1 - p0;
  for(size_t c = 0; c < C; c++){
    chain *ch = &pl->ch[c];
    size_t got = 0;
    fly_rc rc;
    for(size_t i = 0; i < B * ch->n; i++) blk[c][i] = NAN;
    if( ch->n == 0 ) continue;
    if( (rc = fly_trace_draws(pl->tr, c, p0, B, 0, ch->n, scratch, its, &got, err)) ) return rc;
    for(size_t t = 0, u = 0; t < got; t++){      /* align with the diagnostics rows */
      u = u < ch->n && ch->iter[u] == its[t] ? u : find_iter(ch, its[t]);
      if( u == SIZE_MAX ){ u = 0; continue; }
      for(size_t k = 0; k < B; k++) blk[c][k * ch->n + u] = scratch[k * ch->n + t];
      u++;
    }
  }
  return FLY_OK;
}

/* ---- index.html --------------------------------------------------------- */

static void html_head(plotter *pl)
{
  const fly_trace_run *ri = pl->ri;
  FILE *h = pl->html;
  fprintf(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<title>flydb run %lld</title>\n<style>\n"
             "body { font-family: Helvetica, Arial, sans-serif; margin: 1em 2em; color: #222; }\n"
             "img { max-width: 100%%; border: 1px solid #ddd; margin: 3px; vertical-align: top; }\n"
             "h2 { margin-top: 1.5em; border-bottom: 1px solid #ccc; }\n"
             "h3 { margin: 1.2em 0 0.3em; font-family: monospace; font-size: 1.1em; }\n"
             "</style></head><body>\n<h1>flydb run %lld</h1>\n<p>Data set <b>",
          (long long)ri->id, (long long)ri->id);
  xml_escape(h, ri->dataset);
  fprintf(h, "</b>, model ");
  xml_escape(h, ri->model);
  fprintf(h, ", sampler ");
  xml_escape(h, ri->sampler);
  fprintf(h, ", z ");
  xml_escape(h, ri->z_mode);
  fprintf(h, "; %zu chain%s &times; %lld iterations after %lld warm-up, thin %lld; "
             "%zu parameters; status ", ri->n_chains, ri->n_chains == 1 ? "" : "s",
          (long long)ri->n_iters, (long long)ri->n_warmup, (long long)ri->thin, ri->n_params);
  xml_escape(h, ri->status);
  fprintf(h, ". Click a picture for the SVG file.</p>\n");
  if( !(pl->kinds & FLY_PLOT_MCMC) ) return;
  fprintf(h, "<p>Parameters:");
  for(size_t p = 0; p < ri->n_params; p++){
    fprintf(h, " <a href=\"#p%zu\">", p + 1);
    xml_escape(h, fly_trace_param_name(pl->tr, p));
    fprintf(h, "</a>");
  }
  fprintf(h, "</p>\n");
}

/* ---- posterior predictive checks ---------------------------------------- */

/* A bin's bar from lo to hi at x, with caps of half-width w. */
static void bar(double x, double lo, double hi, double w)
{
  pljoin(x, lo, x, hi);
  pljoin(x - w, lo, x + w, lo);
  pljoin(x - w, hi, x + w, hi);
}

/* Calibration of class cls from the n lines b (calibration part). */
static fly_rc calib_plot(plotter *pl, const fly_ppc_result *r, const fly_ppc_bin *b, size_t n,
                         int64_t cls, fly_err *err)
{
  frame f = { 520, 0, 72, 0, 400, 400, 0, 1, 0, 1 };
  char file[64], title[160], sub[256], path[PATH_CAP];
  const char *subs[1] = { sub };
  fly_rc rc;
  place(&f, 1, 0);
  if( r->K > 1 ){
    snprintf(file, sizeof file, "calibration_class%lld.svg", (long long)cls);
    snprintf(title, sizeof title, "Calibration of class %lld (one vs rest)", (long long)cls);
  }else{
    snprintf(file, sizeof file, "calibration.svg");
    snprintf(title, sizeof title, "Calibration of P(y = 1)");
  }
  snprintf(sub, sizeof sub, "%lld rows in %lld bins, %lld draws; bars: %.0f%% band of the "
           "replicated frequency", (long long)r->N, (long long)r->bins, (long long)r->M,
           100 * r->level);
  if( (rc = pic_path(pl, file, path, err)) ) return rc;
  if( (rc = pic_open(path, &f, err)) ) return rc;
  pic_axes(&f, title, subs, 1, "mean predicted probability", "observed frequency");
  plcol0(C_GREY);
  pllsty(3);
  pljoin(0, 0, 1, 1);
  pllsty(1);
  double w = 0.25 / (double)r->bins;
  for(size_t i = 0; i < n; i++){
    if( b[i].part != FLY_PPC_PART_CAL || b[i].cls != cls || b[i].n <= 0 ) continue;
    int out = b[i].observed < b[i].band_lo || b[i].observed > b[i].band_hi;
    plcol0(C_CHAIN0);
    plwidth(1.5);
    bar(b[i].predicted, b[i].band_lo, b[i].band_hi, w);
    plwidth(1);
    plcol0(out ? C_CHAIN0 + 1 : C_INK);
    plschr(0, 0.7);
    plstring(1, &b[i].predicted, &b[i].observed, "\u25cf");
    plschr(0, 1.0);
  }
  return pic_close(pl, path, file, &f, title, err);
}

/* QQ plot and PIT histogram of a residual check. */
static fly_rc resid_plots(plotter *pl, const fly_ppc_result *r, const fly_ppc_bin *b, size_t n,
                          fly_err *err)
{
  frame f = { 520, 0, 72, 0, 400, 400, 0, 1, 0, 1 };
  char title[160], sub[256], path[PATH_CAP];
  const char *subs[1] = { sub };
  double lo = INFINITY, hi = -INFINITY;
  size_t k = 0;
  fly_rc rc;
  for(size_t i = 0; i < n; i++)
    if( b[i].part == FLY_PPC_PART_QQ && isfinite(b[i].predicted) && isfinite(b[i].observed) ){
      lo = fmin(lo, fmin(b[i].predicted, b[i].observed));
      hi = fmax(hi, fmax(b[i].predicted, b[i].observed));
      pl->xs[k] = b[i].predicted;
      pl->ys[k++] = b[i].observed;
    }
  place(&f, 1, 0);
  pad_range(lo, hi, &f.x0, &f.x1);
  f.y0 = f.x0;
  f.y1 = f.x1;
  snprintf(title, sizeof title, "Standardised residuals against Student-t(%g)", r->nu);
  snprintf(sub, sizeof sub, "(y - x'b)/sigma at the posterior mean, sigma %g, %lld rows",
           r->sigma, (long long)r->N);
  if( (rc = pic_path(pl, "residuals_qq.svg", path, err)) ) return rc;
  if( (rc = pic_open(path, &f, err)) ) return rc;
  pic_axes(&f, title, subs, 1, "Student-t quantile", "residual quantile");
  plcol0(C_GREY);
  pllsty(3);
  pljoin(f.x0, f.x0, f.x1, f.x1);
  pllsty(1);
  plcol0(C_CHAIN0);
  plschr(0, 0.5);
  for(size_t i = 0; i < k; i++) plstring(1, pl->xs + i, pl->ys + i, "\u25cf");
  plschr(0, 1.0);
  if( (rc = pic_close(pl, path, "residuals_qq.svg", &f, title, err)) ) return rc;

  /* PIT histogram */
  frame g = { 520, 0, 72, 0, 420, 250, 0, 1, 0, 1 };
  double top = 0, expect = 0;
  for(size_t i = 0; i < n; i++)
    if( b[i].part == FLY_PPC_PART_PIT ){
      top = fmax(top, fmax(b[i].observed, b[i].predicted));
      if( isfinite(b[i].band_hi) ) top = fmax(top, b[i].band_hi);
      expect = b[i].predicted;
    }
  g.y1 = top > 0 ? 1.1 * top : 1;
  place(&g, 1, 0);
  snprintf(title, sizeof title, "PIT of the standardised residuals");
  snprintf(sub, sizeof sub, "F_t(%g)(r) in %lld bins; dashed: the expected fraction %.4g; "
           "bars: %.0f%% band of the replicated fraction", r->nu, (long long)r->bins, expect,
           100 * r->level);
  if( (rc = pic_path(pl, "residuals_pit.svg", path, err)) ) return rc;
  if( (rc = pic_open(path, &g, err)) ) return rc;
  pic_axes(&g, title, subs, 1, "PIT", "fraction of rows");
  for(size_t i = 0; i < n; i++){
    if( b[i].part != FLY_PPC_PART_PIT ) continue;
    double bx[4] = { b[i].lo, b[i].lo, b[i].hi, b[i].hi };
    double by[4] = { 0, b[i].observed, b[i].observed, 0 };
    plcol0(C_FILL);
    plfill(4, bx, by);
    plcol0(C_CHAIN0);
    plline(4, bx, by);
    if( isfinite(b[i].band_lo) && isfinite(b[i].band_hi) ){
      plcol0(C_INK);
      bar((b[i].lo + b[i].hi) / 2, b[i].band_lo, b[i].band_hi, (b[i].hi - b[i].lo) / 4);
    }
  }
  plcol0(C_INK);
  pllsty(3);
  pljoin(0, expect, 1, expect);
  pllsty(1);
  return pic_close(pl, path, "residuals_pit.svg", &g, title, err);
}

/* The pictures of the run's stored predictive check that pl->kinds asks
 * for; with FLY_PLOT_ALL none when the run has no check. */
static fly_rc ppc_plots(plotter *pl, fly_err *err)
{
  fly_ppc_result r;
  fly_ppc_bin *b = NULL;
  size_t n = 0;
  unsigned want = pl->kinds & (FLY_PLOT_CALIBRATION | FLY_PLOT_RESIDUALS);
  if( !want ) return FLY_OK;
  fly_rc rc = fly_ppc_load(pl->db, pl->ri->id, &r, &b, &n, err);
  if( rc == FLY_RANGE && pl->kinds == FLY_PLOT_ALL ) return FLY_OK;
  if( rc ) return rc;
  unsigned have = r.kind == FLY_PPC_RESIDUAL ? FLY_PLOT_RESIDUALS : FLY_PLOT_CALIBRATION;
  if( pl->kinds != FLY_PLOT_ALL && (want & ~have) ){
    rc = fly_fail(err, FLY_RANGE, "run %lld's predictive check is a %s check, not %s",
                  (long long)r.run_id, have == FLY_PLOT_RESIDUALS ? "residual" : "calibration",
                  have == FLY_PLOT_RESIDUALS ? "calibration" : "residuals");
    goto done;
  }
  if( have == FLY_PLOT_RESIDUALS ){
    fprintf(pl->html, "<h2>Posterior predictive check: standardised residuals</h2>\n<div>\n");
    rc = resid_plots(pl, &r, b, n, err);
  }else{
    fprintf(pl->html, "<h2>Posterior predictive check: calibration</h2>\n<div>\n");
    for(int64_t k = r.K > 1 ? 0 : 1; k < (r.K > 1 ? r.K : 2) && !rc; k++)
      rc = calib_plot(pl, &r, b, n, k, err);
  }
  fprintf(pl->html, "</div>\n");
done:
  fly_free(b);
  return rc;
}

/* ---- the pictures ------------------------------------------------------- */

static fly_rc plot_all(plotter *pl, fly_err *err)
{
  const fly_trace_run *ri = pl->ri;
  size_t C = ri->n_chains, P = ri->n_params, rows = 0, max_n = 0;
  double **blk = NULL, *scratch = NULL;
  int64_t *its = NULL;
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
  pl->cd = fly_alloc_array(KDE_POINTS, sizeof *pl->cd);
  pl->rho = fly_alloc_array(MAX_LAG + 1, sizeof *pl->rho);
  blk = fly_alloc_array(C, sizeof *blk);
  its = fly_alloc_array(max_n ? max_n : 1, sizeof *its);
  if( !pl->xs || !pl->ys || !pl->pool || !pl->grid || !pl->dens || !pl->cd || !pl->rho ||
      !blk || !its ){ rc = fly_fail(err, FLY_NOMEM, "plot"); goto done; }
  if( (rc = fly_stats_ws_new(1, max_n, &pl->ws, err)) ) goto done;

  html_head(pl);
  if( (rc = ppc_plots(pl, err)) ) goto done;
  if( !(pl->kinds & FLY_PLOT_MCMC) ){
    fprintf(pl->html, "</body></html>\n");
    goto done;
  }
  fprintf(pl->html, "<h2>Run: log joint, bright data, likelihood evaluations and rows read "
                    "per iteration</h2>\n<div>\n");
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
  if( !(scratch = fly_alloc_array(B * (max_n ? max_n : 1), sizeof *scratch)) ){
    rc = fly_fail(err, FLY_NOMEM, "draws of %zu parameters", B);
    goto done;
  }
  for(size_t p0 = 0; p0 < P; p0 += B){
    size_t p1 = p0 + B < P ? p0 + B : P;
    if( (rc = load_block(pl, blk, p0, p1, scratch, its, err)) ) goto done;
    for(size_t p = p0; p < p1; p++){
      const char *name = fly_trace_param_name(pl->tr, p);
      char stem[128], file[160], title[300];
      for(size_t c = 0; c < C; c++) pl->ch[c].x = blk[c] + (p - p0) * pl->ch[c].n;
      file_stem(stem, sizeof stem, p, P, name);
      fprintf(pl->html, "<h3 id=\"p%zu\">", p + 1);
      xml_escape(pl->html, name);
      fprintf(pl->html, " <small>(theta.%zu)</small></h3>\n<div>\n", p + 1);
      snprintf(file, sizeof file, "%s_trace.svg", stem);
      snprintf(title, sizeof title, "Trace of %s", name);
      if( (rc = trace_plot(pl, file, V_DRAW, title, name, err)) ) goto done;
      snprintf(file, sizeof file, "%s_acf.svg", stem);
      if( (rc = acf_plot(pl, file, name, err)) ) goto done;
      snprintf(file, sizeof file, "%s_density.svg", stem);
      if( (rc = density_plot(pl, file, name, err)) ) goto done;
      fprintf(pl->html, "</div>\n");
    }
  }
  fprintf(pl->html, "</body></html>\n");
done:
  if( blk ) for(size_t c = 0; c < C; c++) fly_free(blk[c]);
  fly_free(blk);
  fly_free(scratch);
  fly_free(its);
  return rc;
}

void fly_plot_close(fly_plot *pl)
{
  if( !pl ) return;
  if( pl->ch )
    for(size_t c = 0; c < pl->ri->n_chains; c++){
      fly_free(pl->ch[c].iter);
      fly_free(pl->ch[c].lp);
      fly_free(pl->ch[c].bright);
      fly_free(pl->ch[c].lik);
      fly_free(pl->ch[c].reads);
    }
  fly_free(pl->ch);
  fly_free(pl->xs);
  fly_free(pl->ys);
  fly_free(pl->pool);
  fly_free(pl->grid);
  fly_free(pl->dens);
  fly_free(pl->cd);
  fly_free(pl->rho);
  fly_stats_ws_free(pl->ws);
  fly_trace_reader_close(pl->tr);
  fly_free(pl);
}

fly_rc fly_plot_open(fly_db *db, int64_t run_id, fly_plot **pp, fly_err *err)
{
  plotter *pl = fly_alloc_array(1, sizeof *pl);
  fly_rc rc;
  *pp = NULL;
  if( !pl ) return fly_fail(err, FLY_NOMEM, "plot");
  memset(pl, 0, sizeof *pl);
  pl->db = db;
  if( (rc = fly_trace_reader_open(db, run_id, &pl->tr, err)) ) goto done;
  pl->ri = fly_trace_reader_run(pl->tr);
  if( pl->ri->n_chains > FLY_PLOT_MAX_CHAINS ){
    rc = fly_fail(err, FLY_RANGE, "run %lld has %zu chains; at most %d are plotted",
                  (long long)pl->ri->id, pl->ri->n_chains, FLY_PLOT_MAX_CHAINS);
    goto done;
  }
  rc = load_iterations(pl, err);
done:
  if( rc ) fly_plot_close(pl);
  else *pp = pl;
  return rc;
}

int64_t fly_plot_run_id(const fly_plot *pl)
{
  return pl->ri->id;
}

fly_rc fly_plot_write(fly_plot *pl, const char *dir, unsigned kinds, size_t *n_files,
                      fly_err *err)
{
  char path[PATH_CAP], tmp[PATH_CAP + 8];
  fly_rc rc;
  *n_files = 0;
  if( pl->xs ) return fly_fail(err, FLY_MISUSE, "fly_plot_write: the run is plotted already");
  if( !kinds || (kinds & ~(unsigned)FLY_PLOT_ALL) )
    return fly_fail(err, FLY_MISUSE, "fly_plot_write: kinds %#x", kinds);
  pl->kinds = kinds;
  pl->dir = dir;
  pl->n_files = 0;
  if( snprintf(path, sizeof path, "%s/index.html", dir) >= (int)sizeof path )
    return fly_fail(err, FLY_RANGE, "%s: path too long for index.html", dir);
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
  else *n_files = pl->n_files;
  return rc;
}
