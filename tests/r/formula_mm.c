/*
 * formula_mm.c -- a test tool: the model matrix flydb's formula module
 * builds for a CSV, printed for comparison with R's model.matrix
 * (tests/r/formula_r.R).
 *
 *   formula_mm FILE.csv FORMULA [COL=LEVEL ...]
 *
 * Reads a plain CSV (no quotes; a header row; cells split at commas) as
 * read.csv(stringsAsFactors = TRUE, na.strings = c("NA", "")) types it: a
 * column with any cell that is not a number is categorical, its levels
 * coded in first-seen order; "NA" and empty cells are missing.  Binds the
 * formula (COL=LEVEL: reference levels) and prints CSV: a header "row" and
 * the model-matrix names, then for every row the design keeps its 1-based
 * data row number and the values with 17 significant digits.  Exit 1 with
 * the message on any error.  Not the product's ingest: a test tool.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula/formula.h"

typedef struct tcol {
  char   *name;
  int     cat;
  size_t  n_lev, cap_lev;
  char  **lev;
} tcol;

static char *xstrdup(const char *s)
{
  char *p = malloc(strlen(s) + 1);
  if( !p ){ perror("malloc"); exit(1); }
  return strcpy(p, s);
}

/* Split line at commas in place; at most max fields. */
static size_t split(char *line, char **f, size_t max)
{
  size_t n = 0;
  char *p = line;
  line[strcspn(line, "\r\n")] = 0;
  for(;;){
    char *c = strchr(p, ',');
    if( n == max ){ fprintf(stderr, "formula_mm: too many fields\n"); exit(1); }
    f[n++] = p;
    if( !c ) break;
    *c = 0;
    p = c + 1;
  }
  return n;
}

static int is_na(const char *s){ return !*s || strcmp(s, "NA") == 0; }

static int is_num(const char *s)
{
  char *e;
  strtod(s, &e);
  return e != s && *e == 0;
}

int main(int argc, char **argv)
{
  enum { MAXF = 256 };
  FILE *in;
  char line[65536], *f[MAXF], ***cells = NULL;
  size_t nc, nr = 0, cap = 0, i, j, k;
  tcol *tc;
  fly_fcol *fc;
  fly_formula *fm = NULL;
  fly_design *d = NULL;
  fly_design_opts o;
  fly_err err = { 0 };
  const char **rc = NULL, **rl = NULL;
  double *raw, *out;

  if( argc < 3 ){ fprintf(stderr, "usage: formula_mm FILE.csv FORMULA [COL=LEVEL ...]\n"); return 2; }
  if( !(in = fopen(argv[1], "r")) ){ perror(argv[1]); return 1; }
  if( !fgets(line, sizeof line, in) ){ fprintf(stderr, "formula_mm: empty file\n"); return 1; }
  nc = split(line, f, MAXF);
  tc = calloc(nc, sizeof *tc);
  fc = calloc(nc, sizeof *fc);
  raw = calloc(nc, sizeof *raw);
  for(j = 0; j < nc; j++) tc[j].name = xstrdup(f[j]);
  while( fgets(line, sizeof line, in) ){
    if( line[0] == '\n' ) continue;
    if( nr == cap ){
      cap = cap ? 2 * cap : 64;
      cells = realloc(cells, cap * sizeof *cells);
    }
    if( split(line, f, MAXF) != nc ){ fprintf(stderr, "formula_mm: ragged row %zu\n", nr + 1); return 1; }
    cells[nr] = malloc(nc * sizeof **cells);
    for(j = 0; j < nc; j++){
      cells[nr][j] = xstrdup(f[j]);
      if( !is_na(f[j]) && !is_num(f[j]) ) tc[j].cat = 1;
    }
    nr++;
  }
  fclose(in);
  /* levels in first-seen order */
  for(j = 0; j < nc; j++){
    if( !tc[j].cat ) continue;
    for(i = 0; i < nr; i++){
      const char *s = cells[i][j];
      if( is_na(s) ) continue;
      for(k = 0; k < tc[j].n_lev; k++) if( strcmp(tc[j].lev[k], s) == 0 ) break;
      if( k < tc[j].n_lev ) continue;
      if( tc[j].n_lev == tc[j].cap_lev ){
        tc[j].cap_lev = tc[j].cap_lev ? 2 * tc[j].cap_lev : 8;
        tc[j].lev = realloc(tc[j].lev, tc[j].cap_lev * sizeof *tc[j].lev);
      }
      tc[j].lev[tc[j].n_lev++] = xstrdup(s);
    }
  }
  for(j = 0; j < nc; j++){
    fc[j].name = tc[j].name;
    fc[j].categorical = tc[j].cat;
    fc[j].n_levels = tc[j].n_lev;
    fc[j].levels = (const char *const *)tc[j].lev;
  }
  memset(&o, 0, sizeof o);
  o.n_ref = (size_t)(argc - 3);
  rc = calloc(o.n_ref + 1, sizeof *rc);
  rl = calloc(o.n_ref + 1, sizeof *rl);
  for(k = 0; k < o.n_ref; k++){
    char *a = xstrdup(argv[3 + k]), *eq = strrchr(a, '=');
    if( !eq ){ fprintf(stderr, "formula_mm: reference '%s' is not COL=LEVEL\n", a); return 2; }
    *eq = 0;
    rc[k] = a;
    rl[k] = eq + 1;
  }
  o.ref_col = rc;
  o.ref_level = rl;
  if( fly_formula_parse(argv[2], &fm, &err) != FLY_OK
      || fly_design_new(fm, fc, nc, &o, &d, &err) != FLY_OK ){
    fprintf(stderr, "formula_mm: %s\n", err.msg);
    return 1;
  }
  out = calloc(fly_design_width(d), sizeof *out);
  printf("\"row\"");
  for(k = 0; k < fly_design_width(d); k++) printf(",\"%s\"", fly_design_name(d, k));
  printf("\n");
  for(i = 0; i < nr; i++){
    size_t col;
    int r;
    for(j = 0; j < nc; j++){
      const char *s = cells[i][j];
      if( is_na(s) ) raw[j] = NAN;
      else if( !tc[j].cat ) raw[j] = strtod(s, NULL);
      else {
        for(k = 0; strcmp(tc[j].lev[k], s) != 0; k++) {}
        raw[j] = (double)k;
      }
    }
    r = fly_design_row(d, raw, out, &col);
    if( r == 1 ) continue;
    if( r == 2 ){
      fprintf(stderr, "formula_mm: row %zu: a transform is undefined (column '%s')\n",
              i + 1, tc[col].name);
      return 1;
    }
    printf("%zu", i + 1);
    for(k = 0; k < fly_design_width(d); k++) printf(",%.17g", out[k]);
    printf("\n");
  }
  fly_design_free(d);
  fly_formula_free(fm);
  for(i = 0; i < nr; i++){
    for(j = 0; j < nc; j++) free(cells[i][j]);
    free(cells[i]);
  }
  free(cells);
  for(j = 0; j < nc; j++){
    for(k = 0; k < tc[j].n_lev; k++) free(tc[j].lev[k]);
    free(tc[j].lev);
    free(tc[j].name);
  }
  for(k = 0; k < o.n_ref; k++) free((char *)rc[k]);
  free(rc);
  free(rl);
  free(tc);
  free(fc);
  free(raw);
  free(out);
  return 0;
}
