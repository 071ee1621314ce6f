/*
 * fuzz_formula.c -- libFuzzer target for the formula parser and binder
 * (src/formula): parse, bind to a fixed set of columns, expand rows.
 *
 * Input: the formula text up to the first NUL byte (at most 4096 bytes);
 * after it, one byte choosing --reference levels, then row bytes, one per
 * column and row (numeric: (b - 128) / 16, or NaN for 255; categorical:
 * b mod (levels + 1), the last value NaN).  Checked: the parser gives
 * FLY_OK or FLY_PARSE ("formula:COL: expected ...", COL within the text),
 * the binder FLY_OK or FLY_RANGE ("formula: ..."); a bound design has a
 * width in 1..FLY_DESIGN_MAX_WIDTH, a name for every column,
 * "(Intercept)" first when it has an intercept, ascending uses that
 * include the response, and binding twice gives the same key and names;
 * a row gives 0 (intercept 1, every value finite), 1 (a used column, out
 * untouched) or 2 (a used column).  A failed check aborts.  Without
 * libFuzzer, replay_main.c drives this function over a corpus.
 *
 * Sources: src/formula/{parse,terms,design}.c, src/util/{err,mem}.c; -lm.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula/formula.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                          \
  do{ if( !(cond) ){                                                         \
    fprintf(stderr, "fuzz_formula: check failed at %s:%d: %s\n", __FILE__,  \
            __LINE__, #cond);                                                \
    abort();                                                                 \
  } }while( 0 )

static const char *const f_lev[] = { "b", "a", "c" };
static const char *const g_lev[] = { "u", "v" };
static const char *const k_lev[] = { "b", "B", "a", "10", "9" };
static const char *const r_lev[] = { "no", "yes" };
static const fly_fcol cols[] = {
  { "y", 0, 0, NULL },
  { "x", 0, 0, NULL },
  { "z", 0, 0, NULL },
  { "f", 1, 3, f_lev },
  { "g", 1, 2, g_lev },
  { "odd name", 0, 0, NULL },
  { "k", 1, 5, k_lev },
  { "r", 1, 2, r_lev },
};
#define N_COLS (sizeof cols / sizeof cols[0])
#define MAX_TEXT 4096

static fly_design *bind(const fly_formula *fm, uint8_t refs, fly_err *err)
{
  const char *rc[3], *rl[3];
  fly_design_opts o;
  fly_design *d = NULL;
  fly_rc rc_;
  memset(&o, 0, sizeof o);
  if( refs & 1 ){ rc[o.n_ref] = "f"; rl[o.n_ref++] = f_lev[(refs >> 1) % 3]; }
  if( refs & 8 ){ rc[o.n_ref] = "k"; rl[o.n_ref++] = k_lev[(refs >> 4) % 5]; }
  if( refs & 128 ){ rc[o.n_ref] = "x"; rl[o.n_ref++] = "1"; }   /* refused: numeric */
  o.ref_col = rc;
  o.ref_level = rl;
  rc_ = fly_design_new(fm, cols, N_COLS, &o, &d, err);
  CHECK(rc_ == FLY_OK || rc_ == FLY_RANGE);
  CHECK((rc_ == FLY_OK) == (d != NULL));
  if( rc_ != FLY_OK ) CHECK(strncmp(err->msg, "formula: ", 9) == 0);
  return d;
}

static void check_design(const fly_design *d, const fly_design *d2)
{
  size_t w = fly_design_width(d), j, n;
  const size_t *uses = fly_design_uses(d, &n);
  int has_resp = 0;
  CHECK(w >= 1 && w <= FLY_DESIGN_MAX_WIDTH);
  CHECK(fly_design_width(d2) == w);
  CHECK(strcmp(fly_design_key(d), fly_design_key(d2)) == 0);
  for(j = 0; j < w; j++){
    CHECK(fly_design_name(d, j) && fly_design_name(d, j)[0]);
    CHECK(strcmp(fly_design_name(d, j), fly_design_name(d2, j)) == 0);
  }
  if( fly_design_has_intercept(d) ) CHECK(strcmp(fly_design_name(d, 0), "(Intercept)") == 0);
  CHECK(n >= 1);
  for(j = 0; j < n; j++){
    CHECK(uses[j] < N_COLS);
    if( j ) CHECK(uses[j] > uses[j-1]);
    if( uses[j] == fly_design_response(d) ) has_resp = 1;
  }
  CHECK(has_resp);
}

static void check_row(const fly_design *d, const double *raw)
{
  static double out[FLY_DESIGN_MAX_WIDTH];
  size_t w = fly_design_width(d), j, n, col = SIZE_MAX;
  const size_t *uses = fly_design_uses(d, &n);
  int r, in_uses = 0;
  if( w > 4096 ) return;                /* keep an execution cheap */
  for(j = 0; j < w; j++) out[j] = -12345.0;
  r = fly_design_row(d, raw, out, &col);
  CHECK(r == 0 || r == 1 || r == 2);
  if( r == 0 ){
    double y = fly_design_y(d, raw);
    size_t nl;
    const char *const *lv = fly_design_response_levels(d, &nl);
    if( fly_design_has_intercept(d) ) CHECK(out[0] == 1.0);
    for(j = 0; j < w; j++) CHECK(isfinite(out[j]));
    CHECK(!isnan(y));
    if( lv ) CHECK(y >= 0 && y < (double)nl && y == floor(y));
    return;
  }
  for(j = 0; j < n; j++) if( uses[j] == col ) in_uses = 1;
  CHECK(in_uses);
  if( r == 1 ) for(j = 0; j < w; j++) CHECK(out[j] == -12345.0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char text[MAX_TEXT + 1];
  size_t len = 0, rest, i, j;
  fly_formula *fm = NULL;
  fly_design *d = NULL, *d2 = NULL;
  fly_err err = { 0 };
  fly_rc rc;
  uint8_t refs = 0;
  double raw[N_COLS];

  while( len < size && len < MAX_TEXT && data[len] ) len++;
  memcpy(text, data, len);
  text[len] = 0;
  rest = len < size ? len + 1 : size;   /* after the NUL */

  rc = fly_formula_parse(text, &fm, &err);
  CHECK(rc == FLY_OK || rc == FLY_PARSE);
  CHECK((rc == FLY_OK) == (fm != NULL));
  if( rc != FLY_OK ){
    unsigned long colno = 0;
    CHECK(sscanf(err.msg, "formula:%lu: expected ", &colno) == 1);
    CHECK(colno >= 1 && colno <= len + 1);
    return 0;
  }
  CHECK(fly_formula_response(fm) && fly_formula_response(fm)[0]);

  if( rest < size ) refs = data[rest++];
  d = bind(fm, refs, &err);
  if( d ){
    d2 = bind(fm, refs, &err);
    CHECK(d2 != NULL);
    check_design(d, d2);
    if( rest >= size ){
      /* a few fixed rows: all levels present, then missing values */
      for(i = 0; i < 3; i++){
        for(j = 0; j < N_COLS; j++)
          raw[j] = cols[j].categorical ? (double)((i + j) % cols[j].n_levels) : 0.5 + (double)i;
        check_row(d, raw);
      }
      raw[1] = NAN;
      check_row(d, raw);
    }
    for(; rest + N_COLS <= size; rest += N_COLS){
      for(j = 0; j < N_COLS; j++){
        uint8_t b = data[rest + j];
        if( cols[j].categorical ){
          size_t c = b % (cols[j].n_levels + 1);
          raw[j] = c == cols[j].n_levels ? NAN : (double)c;
        }else{
          raw[j] = b == 255 ? NAN : ((double)b - 128.0) / 16.0;
        }
      }
      check_row(d, raw);
    }
  }
  fly_design_free(d);
  fly_design_free(d2);
  fly_formula_free(fm);
  return 0;
}
