/*
 * test_formula_noalloc.c -- fly_design_row, fly_design_y and the accessors
 * allocate nothing (formula.h: "never allocates"), for a design with
 * numeric, categorical, interaction and transform columns, on kept rows,
 * rows with a missing value and rows with an undefined transform.
 *
 * Replaces malloc, calloc and realloc with counting wrappers around
 * glibc's __libc_* functions (as test_noalloc does), so every allocation
 * of the process is seen.  Not built with sanitizers; glibc only.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "formula/formula.h"
#include "tap.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t s);
extern void *__libc_realloc(void *p, size_t n);
extern void  __libc_free(void *p);

static volatile int counting;
static volatile long n_alloc;

void *malloc(size_t n){ if( counting ) n_alloc++; return __libc_malloc(n); }
void *calloc(size_t n, size_t s){ if( counting ) n_alloc++; return __libc_calloc(n, s); }
void *realloc(void *p, size_t n){ if( counting ) n_alloc++; return __libc_realloc(p, n); }
void free(void *p){ __libc_free(p); }

int main(void)
{
  static const char *const f_lev[] = { "b", "a", "c" };
  static const char *const g_lev[] = { "u", "v" };
  const fly_fcol cols[] = {
    { "y", 1, 2, g_lev }, { "x", 0, 0, NULL }, { "z", 0, 0, NULL },
    { "f", 1, 3, f_lev }, { "g", 1, 2, g_lev },
  };
  fly_formula *fm = NULL;
  fly_design *d = NULL;
  fly_err err = { 0 };
  double raw[5], out[64], sum = 0;
  size_t col, n, i;
  int r, codes[3] = { 0, 0, 0 };

  if( fly_formula_parse("y ~ x*f + f:g + log(z) + I(x^2 / z) - 1", &fm, &err) != FLY_OK
      || fly_design_new(fm, cols, 5, NULL, &d, &err) != FLY_OK ){
    TAP_OK(0, "bind: %s", err.msg);
    return tap_done();
  }
  TAP_OK(fly_design_width(d) <= 64, "width %zu", fly_design_width(d));
  n_alloc = 0;
  counting = 1;
  for(i = 0; i < 3000; i++){
    raw[0] = (double)(i % 2);
    raw[1] = (double)i / 100.0 - 10.0;
    raw[2] = i % 97 == 0 ? -1.0 : 0.5 + (double)(i % 13);   /* log(-1): 2 */
    raw[3] = i % 89 == 0 ? NAN : (double)(i % 3);           /* missing: 1 */
    raw[4] = (double)((i / 3) % 2);
    r = fly_design_row(d, raw, out, &col);
    codes[r]++;
    if( r == 0 ) sum += out[0] + fly_design_y(d, raw);
    (void)fly_design_uses(d, &n);
    (void)fly_design_response_levels(d, &n);
    (void)fly_design_key(d);
    (void)fly_design_name(d, 0);
  }
  counting = 0;
  TAP_OK(codes[0] > 0 && codes[1] > 0 && codes[2] > 0,
         "rows kept %d, missing %d, undefined %d", codes[0], codes[1], codes[2]);
  TAP_OK(n_alloc == 0, "3000 rows: %ld allocations (checksum %g)", n_alloc, sum);
  fly_design_free(d);
  fly_formula_free(fm);
  return tap_done();
}
