/*
 * test_formula.c -- the formula module: the parser and its errors, the
 * terms expansion (through the design key, which lists the terms in
 * order), model-matrix names and rows, missing values and undefined
 * transforms, the response, references, and the binding errors.
 *
 * Expected names and orders were read off R 4.2 (terms(), model.matrix()
 * under LC_COLLATE=C); tests/r/formula_r.sh checks the same against R on
 * data.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula/formula_int.h"
#include "tap.h"

/* Columns: y x z (numeric), f (levels b a c, first-seen order), g (u v),
 * h (one level), `odd name` (numeric), k (levels b B a 10 9). */
static const char *const f_lev[] = { "b", "a", "c" };
static const char *const g_lev[] = { "u", "v" };
static const char *const h_lev[] = { "only" };
static const char *const k_lev[] = { "b", "B", "a", "10", "9" };
static const fly_fcol cols[] = {
  { "y", 0, 0, NULL },
  { "x", 0, 0, NULL },
  { "z", 0, 0, NULL },
  { "f", 1, 3, f_lev },
  { "g", 1, 2, g_lev },
  { "h", 1, 1, h_lev },
  { "odd name", 0, 0, NULL },
  { "k", 1, 5, k_lev },
};
#define N_COLS (sizeof cols / sizeof cols[0])
enum { Y, X, Z, F, G, H, ODD, K };

/* The deparsed right-hand side, or the parse error message. */
static const char *rhs_of(const char *text, char *buf, size_t cap)
{
  fly_formula *f = NULL;
  fly_err err = { 0 };
  if( fly_formula_parse(text, &f, &err) != FLY_OK ){
    snprintf(buf, cap, "%s", err.msg);
  }else{
    fsbuf b = { 0 };
    fly_formula_deparse(f, f->rhs, &b);
    snprintf(buf, cap, "%s ~ %s", fly_formula_response(f), b.p ? b.p : "?");
    free(b.p);
  }
  fly_formula_free(f);
  return buf;
}

/* Bind text to cols with refs "col=level" (NULL-terminated); the design, or
 * NULL with the message in err. */
static fly_design *bind(const char *text, const char *const *refs, fly_err *err)
{
  fly_formula *f = NULL;
  fly_design *d = NULL;
  fly_design_opts o;
  const char *rc[8], *rl[8];
  char buf[8][64];
  memset(&o, 0, sizeof o);
  for(o.n_ref = 0; refs && refs[o.n_ref]; o.n_ref++){
    char *eq;
    snprintf(buf[o.n_ref], sizeof buf[0], "%s", refs[o.n_ref]);
    eq = strchr(buf[o.n_ref], '=');
    *eq = 0;
    rc[o.n_ref] = buf[o.n_ref];
    rl[o.n_ref] = eq + 1;
  }
  o.ref_col = rc;
  o.ref_level = rl;
  memset(err, 0, sizeof *err);
  if( fly_formula_parse(text, &f, err) == FLY_OK )
    fly_design_new(f, cols, N_COLS, &o, &d, err);
  fly_formula_free(f);
  return d;
}

/* All names joined with '|'. */
static const char *names_of(const fly_design *d, char *buf, size_t cap)
{
  size_t j, n = 0;
  buf[0] = 0;
  for(j = 0; j < fly_design_width(d); j++)
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", j ? "|" : "",
                          fly_design_name(d, j));
  return buf;
}

static void test_parse(void)
{
  static const struct { const char *in, *want; } ok[] = {
    { "y ~ x", "y ~ x" },
    { "  y~x+z  ", "y ~ x + z" },
    { "`odd name` ~ `x` + `a b`", "odd name ~ x + `a b`" },
    { "y ~ I(x/z+x*z-x^2+1e5+0.001+1e-4+123456+.5+-x)",
      "y ~ I(x/z + x * z - x^2 + 1e+05 + 0.001 + 1e-04 + 123456 + 0.5 + -x)" },
    { "y ~ I(1e15 + 123456789012345678 + 0.1 + 1/3 + 1e-300 + 100 + 1000000 + 0.00012 + 2.5e-5)",
      "y ~ I(1e+15 + 123456789012345680 + 0.1 + 1/3 + 1e-300 + 100 + 1e+06 + 0.00012 + 2.5e-05)" },
    { "y ~ I((x+1)^2 * exp(-x) / sqrt(x) - +x)", "y ~ I((x + 1)^2 * exp(-x)/sqrt(x) - +x)" },
    { "y ~ log( x )", "y ~ log(x)" },
    { "y ~ -1 + x", "y ~ -1 + x" },
    { "y ~ (a + b)^2 - a:b", "y ~ (a + b)^2 - a:b" },
    { "y ~ a*b:c/d", "y ~ a * b:c/d" },
    { "y ~ .", "y ~ ." },
    { "y ~ `if` + `_a` + x.1 + .a + `.1a`", "y ~ `if` + `_a` + x.1 + .a + `.1a`" },
    { "y ~ I(2^x^3)", "y ~ I(2^x^3)" },
    { "y\n~\tx", "y ~ x" },
  };
  static const struct { const char *in, *want; } bad[] = {
    { "", "formula:1: expected a term, found the end" },
    { "~ x", "formula:1: expected a response column before '~', found '~'" },
    { "y", "formula:2: expected '~', found the end" },
    { "y x", "formula:3: expected '~', found 'x'" },
    { "y ~", "formula:4: expected a term, found the end" },
    { "y ~ x +", "formula:8: expected a term, found the end" },
    { "y ~ 2", "formula:5: expected 0 or 1 as a term, found '2'" },
    { "y ~ x^1", "formula:7: expected an integer power of 2 or more, found '1'" },
    { "y ~ (x+z)^2.5", "formula:11: expected an integer power of 2 or more, found '2.5'" },
    { "y ~ x^z", "formula:7: expected an integer power of 2 or more, found 'z'" },
    { "y ~ foo(x)", "formula:5: expected a column or one of the functions log, sqrt, exp, I, found 'foo'" },
    { "y ~ log(x:z)", "formula:10: expected ')', found ':'" },
    { "y ~ log(x, 2)", "formula:10: expected ')', found ','" },
    { "y ~ log(.)", "formula:9: expected a number or a column, found '.'" },
    { "y ~ x z", "formula:7: expected an operator or the end of the formula, found 'z'" },
    { "y ~ x ~ z", "formula:7: expected an operator or the end of the formula, found '~'" },
    { "log(y) ~ x", "formula:1: expected a column name as the response (left of '~'), found 'log'" },
    { "y ~ `abc", "formula:9: expected a closing '`', found the end" },
    { "y ~ ``", "formula:5: expected a name between the backquotes, found '``'" },
    { "y ~ (x", "formula:7: expected ')', found the end" },
    { "y ~ x)", "formula:6: expected an operator or the end of the formula, found ')'" },
    { "y ~ x %in% z", "formula:7: expected an operator or the end of the formula, found '%'" },
    { "y ~ 1e999", "formula:5: expected a finite number, found '1e999'" },
    { "y ~ _x", "formula:5: expected a term, found '_'" },
  };
  char buf[512];
  size_t i;
  for(i = 0; i < sizeof ok / sizeof ok[0]; i++){
    const char *got = rhs_of(ok[i].in, buf, sizeof buf);
    if( !TAP_OK(strcmp(got, ok[i].want) == 0, "parse case %zu (%s)", i, ok[i].want) )
      TAP_DIAG("got '%s', want '%s'", got, ok[i].want);
  }
  for(i = 0; i < sizeof bad / sizeof bad[0]; i++){
    const char *got = rhs_of(bad[i].in, buf, sizeof buf);
    if( !TAP_OK(strcmp(got, bad[i].want) == 0, "error for '%s'", bad[i].in) )
      TAP_DIAG("got '%s', want '%s'", got, bad[i].want);
  }
  /* nesting: 255 levels parse, 256 are refused, never a deep recursion */
  {
    static char t[1200];
    size_t n = (size_t)snprintf(t, sizeof t, "y ~ ");
    for(i = 0; i < 255; i++) t[n++] = '(';
    t[n++] = 'x';
    for(i = 0; i < 255; i++) t[n++] = ')';
    t[n] = 0;
    TAP_OK(strncmp(rhs_of(t, buf, sizeof buf), "y ~ (((", 7) == 0, "255 nested parentheses parse");
    n = (size_t)snprintf(t, sizeof t, "y ~ ");
    for(i = 0; i < 256; i++) t[n++] = '(';
    t[n++] = 'x';
    t[n] = 0;
    TAP_OK(strstr(rhs_of(t, buf, sizeof buf), "at most 256 parentheses") != NULL,
           "256 nested parentheses are refused: %s", buf);
  }
  {
    static char longf[20000];
    size_t n = (size_t)snprintf(longf, sizeof longf, "y ~ x");
    for(i = 0; i < 1200; i++) n += (size_t)snprintf(longf + n, sizeof longf - n, " + x");
    TAP_OK(strstr(rhs_of(longf, buf, sizeof buf), "expected a shorter formula") != NULL,
           "1200 terms written out are refused: %s", buf);
  }
}

/* Terms: R's expansion and order, through the key. */
static void test_terms(void)
{
  static const struct { const char *in, *want; } cases[] = {
    { "y ~ x", "y ~ 1 + x | uses y,x" },
    { "y ~ x - 1", "y ~ 0 + x | uses y,x" },
    { "y ~ 0 + x", "y ~ 0 + x | uses y,x" },
    { "y ~ -1 + x", "y ~ 0 + x | uses y,x" },
    { "y ~ x - 1 + 1", "y ~ 1 + x | uses y,x" },
    { "y ~ x + 0 - 0", "y ~ 1 + x | uses y,x" },
    { "y ~ x - (1 - 1)", "y ~ 1 + x | uses y,x" },
    { "y ~ 1", "y ~ 1 | uses y" },
    { "y ~ x + z + x", "y ~ 1 + x + z | uses y,x,z" },
    { "y ~ `x` + x", "y ~ 1 + x | uses y,x" },
    { "y ~ f*g", "y ~ 1 + f + g + f:g | uses y,f,g" },
    { "y ~ g:f + f", "y ~ 1 + f + g:f | uses y,f,g" },
    { "y ~ x:f:g + f:x + g", "y ~ 1 + g + x:f + x:f:g | uses y,x,f,g" },
    { "y ~ (x + f + g)^2", "y ~ 1 + x + f + g + x:f + x:g + f:g | uses y,x,f,g" },
    { "y ~ (x + f + g)^3", "y ~ 1 + x + f + g + x:f + x:g + f:g + x:f:g | uses y,x,f,g" },
    { "y ~ (x + f + g)^100 - x:f:g", "y ~ 1 + x + f + g + x:f + x:g + f:g | uses y,x,f,g" },
    { "y ~ x^2", "y ~ 1 + x | uses y,x" },
    { "y ~ f/x", "y ~ 1 + f + f:x | uses y,x,f" },
    { "y ~ (f + g)/x", "y ~ 1 + f + g + f:g:x | uses y,x,f,g" },
    { "y ~ f*g - f", "y ~ 1 + g + f:g | uses y,f,g" },
    { "y ~ x + z - z", "y ~ 1 + x | uses y,x,z" },
    { "y ~ -x", "y ~ 1 | uses y,x" },
    /* h has one level: R refuses it even in a dropped term (its contrasts) */
    { "y ~ .", "formula: the categorical column 'h' has 1 level, a model needs 2 or more" },
    { "y ~ . - h", "formula: the categorical column 'h' has 1 level, a model needs 2 or more" },
    { "y ~ log(x) + I(x^2) + log( x ) + sqrt(z)", "y ~ 1 + log(x) + I(x^2) + sqrt(z) | uses y,x,z" },
    { "y ~ I(x * z) + x:z", "y ~ 1 + I(x * z) + x:z | uses y,x,z" },
    { "`odd name` ~ x", "`odd name` ~ 1 + x | uses x,`odd name`" },
    { "y ~ g + x", "y ~ 1 + g + x | uses y,x,g | ref g=v" },
  };
  static const char *const ref_gv[] = { "g=v", "f=c", NULL };
  static const char *const ref_x[] = { "x=1", NULL };
  size_t i;
  for(i = 0; i < sizeof cases / sizeof cases[0]; i++){
    fly_err err;
    /* the last case: only references of columns the design reads enter the key */
    int last = i + 1 == sizeof cases / sizeof cases[0];
    fly_design *d = bind(cases[i].in, last ? ref_gv : NULL, &err);
    const char *got = d ? fly_design_key(d) : err.msg;
    if( !TAP_OK(strcmp(got, cases[i].want) == 0, "terms of '%s'", cases[i].in) )
      TAP_DIAG("got '%s', want '%s'", got, cases[i].want);
    fly_design_free(d);
  }
  /* x is numeric: a reference on it is refused */
  {
    fly_err err;
    fly_design *d = bind("y ~ f", ref_x, &err);
    TAP_OK(!d && err.code == FLY_RANGE
           && strcmp(err.msg, "formula: --reference x=1: 'x' is not categorical") == 0,
           "a reference on a numeric column: %s", err.msg);
    fly_design_free(d);
  }
  /* equal designs, equal keys; different rows read, different keys */
  {
    fly_err e1, e2;
    fly_design *a = bind("y ~ f*g", NULL, &e1), *b = bind("y~f+g+f:g", NULL, &e2);
    TAP_OK(a && b && strcmp(fly_design_key(a), fly_design_key(b)) == 0, "f*g and f + g + f:g: one key");
    fly_design_free(a);
    fly_design_free(b);
    a = bind("y ~ x", NULL, &e1);
    b = bind("y ~ x + z - z", NULL, &e2);
    TAP_OK(a && b && strcmp(fly_design_key(a), fly_design_key(b)) != 0,
           "y ~ x and y ~ x + z - z: two keys (z's NAs drop rows)");
    fly_design_free(a);
    fly_design_free(b);
  }
}

static void test_names(void)
{
  static const struct { const char *in, *want; } cases[] = {
    { "y ~ x + f", "(Intercept)|x|fb|fc" },
    { "y ~ x + x:f", "(Intercept)|x|x:fb|x:fc" },
    { "y ~ x:f", "(Intercept)|x:fa|x:fb|x:fc" },
    { "y ~ f:g", "(Intercept)|fa:gu|fb:gu|fc:gu|fa:gv|fb:gv|fc:gv" },
    { "y ~ x:f - 1", "x:fa|x:fb|x:fc" },
    { "y ~ x + x:f - 1", "x|x:fa|x:fb|x:fc" },
    { "y ~ f - 1", "fa|fb|fc" },
    { "y ~ 0 + f + g", "fa|fb|fc|gv" },
    { "y ~ f/x", "(Intercept)|fb|fc|fa:x|fb:x|fc:x" },
    { "y ~ g + f:g:x", "(Intercept)|gv|gu:fa:x|gv:fa:x|gu:fb:x|gv:fb:x|gu:fc:x|gv:fc:x" },
    { "y ~ f:x + x:g", "(Intercept)|fa:x|fb:x|fc:x|x:gv" },
    { "y ~ (f + g + x)^2", "(Intercept)|fb|fc|gv|x|fb:gv|fc:gv|fb:x|fc:x|gv:x" },
    { "y ~ `odd name` + f:`odd name`", "(Intercept)|`odd name`|`odd name`:fb|`odd name`:fc" },
    { "y ~ k", "(Intercept)|k9|kB|ka|kb" },
    { "y ~ I(x * 1e5) + log(x + 1)", "(Intercept)|I(x * 1e+05)|log(x + 1)" },
  };
  char buf[1024];
  size_t i;
  for(i = 0; i < sizeof cases / sizeof cases[0]; i++){
    fly_err err;
    fly_design *d = bind(cases[i].in, NULL, &err);
    const char *got = d ? names_of(d, buf, sizeof buf) : err.msg;
    if( !TAP_OK(strcmp(got, cases[i].want) == 0, "names of '%s'", cases[i].in) )
      TAP_DIAG("got '%s', want '%s'", got, cases[i].want);
    fly_design_free(d);
  }
  {
    static const char *const refs[] = { "f=c", "k=a", NULL };
    fly_err err;
    fly_design *d = bind("y ~ f + k + f:g", refs, &err);
    const char *want = "(Intercept)|fa|fb|k10|k9|kB|kb|fc:gv|fa:gv|fb:gv";
    const char *got = d ? names_of(d, buf, sizeof buf) : err.msg;
    if( !TAP_OK(strcmp(got, want) == 0, "names with references f=c, k=a") )
      TAP_DIAG("got '%s', want '%s'", got, want);
    fly_design_free(d);
  }
}

static int row_is(const double *out, const double *want, size_t n)
{
  size_t j;
  for(j = 0; j < n; j++) if( out[j] != want[j] ) return 0;
  return 1;
}

static void test_rows(void)
{
  fly_err err;
  fly_design *d;
  double out[32], raw[N_COLS];
  size_t col, n, j;
  const size_t *uses;
  int r;

  /* raw: y x z f g h odd k; f code 1 = "a" (the reference), 0 = "b", 2 = "c" */
  d = bind("y ~ x + f + f:g + log(z) + I(x^2)", NULL, &err);
  TAP_OK(d != NULL, "bind a mixed design: %s", d ? "" : err.msg);
  if( !d ) return;
  {
    const char *want = "(Intercept)|x|fb|fc|log(z)|I(x^2)|fa:gv|fb:gv|fc:gv";
    TAP_OK(strcmp(names_of(d, (char *)out, sizeof out), want) == 0, "its names");
  }
  raw[Y] = 1; raw[X] = 3; raw[Z] = 1; raw[F] = 0; raw[G] = 1; raw[H] = 0; raw[ODD] = 0; raw[K] = 0;
  {
    double want[] = { 1, 3, 1, 0, 0, 9, 0, 1, 0 };
    r = fly_design_row(d, raw, out, &col);
    TAP_OK(r == 0 && row_is(out, want, 9), "f=b, g=v row");
  }
  raw[F] = 1; raw[G] = 0; raw[Z] = exp(2.0);
  {
    double want[] = { 1, 3, 0, 0, 2, 9, 0, 0, 0 };
    r = fly_design_row(d, raw, out, &col);
    TAP_OK(r == 0 && row_is(out, want, 9), "f=a (reference), g=u row");
  }
  raw[F] = 2; raw[G] = 1;
  {
    double want[] = { 1, 3, 0, 1, 2, 9, 0, 0, 1 };
    r = fly_design_row(d, raw, out, &col);
    TAP_OK(r == 0 && row_is(out, want, 9), "f=c, g=v row");
  }
  uses = fly_design_uses(d, &n);
  TAP_OK(n == 5 && uses[0] == Y && uses[1] == X && uses[2] == Z && uses[3] == F && uses[4] == G,
         "uses y x z f g, ascending");
  /* missing: 1, out untouched */
  for(j = 0; j < 9; j++) out[j] = -7;
  raw[G] = NAN;
  r = fly_design_row(d, raw, out, &col);
  TAP_OK(r == 1 && col == G && out[0] == -7 && out[8] == -7, "NaN in g: 1, col g, out untouched");
  raw[G] = 1;
  raw[Y] = NAN;
  r = fly_design_row(d, raw, out, &col);
  TAP_OK(r == 1 && col == Y, "NaN in the response: 1");
  raw[Y] = 1;
  raw[H] = NAN;
  r = fly_design_row(d, raw, out, &col);
  TAP_OK(r == 0, "NaN in an unused column: kept");
  raw[F] = 3;
  r = fly_design_row(d, raw, out, &col);
  TAP_OK(r == 1 && col == F, "a code that is no level: 1");
  raw[F] = 0.5;
  r = fly_design_row(d, raw, out, &col);
  TAP_OK(r == 1 && col == F, "a fractional code: 1");
  raw[F] = 0;
  raw[Z] = -1;
  r = fly_design_row(d, raw, out, &col);
  TAP_OK(r == 2 && col == Z, "log of a negative value: 2, col z");
  raw[Z] = 0;
  r = fly_design_row(d, raw, out, &col);
  TAP_OK(r == 2 && col == Z, "log(0): 2");
  fly_design_free(d);

  d = bind("y ~ I(x/z) + x - I(x/z) + log(x)", NULL, &err);
  TAP_OK(d && fly_design_width(d) == 3, "a dropped transform");
  raw[X] = 2; raw[Z] = 0;
  r = d ? fly_design_row(d, raw, out, &col) : -1;
  TAP_OK(r == 2 && col == X, "a dropped transform undefined on the row: 2 (R's model frame evaluates it)");
  fly_design_free(d);

  /* arithmetic as R computes it */
  d = bind("y ~ 0 + I(x^2) + I(-x^3) + I(x - z * 2) + I((x + z)/2) + exp(x) + sqrt(z) + I(2^-x)",
           NULL, &err);
  raw[X] = 1.5; raw[Z] = 4;
  r = d ? fly_design_row(d, raw, out, &col) : -1;
  {
    double want[] = { 2.25, -3.375, 1.5 - 8, 2.75, exp(1.5), 2, pow(2, -1.5) };
    TAP_OK(r == 0 && row_is(out, want, 7), "arithmetic inside I(), exp, sqrt");
  }
  fly_design_free(d);

  /* no intercept: the first factor of the first term holding one is coded
   * by every level */
  d = bind("y ~ -1 + x:g + f", NULL, &err);
  raw[X] = 2; raw[F] = 1; raw[G] = 0;
  r = d ? fly_design_row(d, raw, out, &col) : -1;
  {
    double want[] = { 1, 0, 0, 2, 0 };      /* fa fb fc x:gu x:gv; code 1 is "a" */
    TAP_OK(r == 0 && fly_design_width(d) == 5 && row_is(out, want, 5)
           && !fly_design_has_intercept(d), "-1 + x:g + f: f full, x:g full");
  }
  fly_design_free(d);
}

static void test_response(void)
{
  fly_err err;
  fly_design *d;
  double raw[N_COLS] = { 0 };
  const char *const *lv;
  size_t n;
  static const char *const refs[] = { "k=a", NULL };

  d = bind("k ~ x", NULL, &err);
  lv = d ? fly_design_response_levels(d, &n) : NULL;
  TAP_OK(lv && n == 5 && strcmp(lv[0], "10") == 0 && strcmp(lv[1], "9") == 0
         && strcmp(lv[2], "B") == 0 && strcmp(lv[3], "a") == 0 && strcmp(lv[4], "b") == 0,
         "a categorical response's levels in byte order");
  raw[K] = 0;                           /* "b" */
  TAP_OK(d && fly_design_y(d, raw) == 4, "y of level b is 4");
  raw[K] = 3;                           /* "10" */
  TAP_OK(d && fly_design_y(d, raw) == 0, "y of level 10 is 0");
  TAP_OK(d && fly_design_response(d) == K, "the response index");
  fly_design_free(d);
  d = bind("k ~ x", refs, &err);
  lv = d ? fly_design_response_levels(d, &n) : NULL;
  raw[K] = 2;
  TAP_OK(lv && strcmp(lv[0], "a") == 0 && strcmp(lv[1], "10") == 0 && fly_design_y(d, raw) == 0,
         "a reference level of the response comes first");
  fly_design_free(d);
  d = bind("x ~ z", NULL, &err);
  raw[X] = 2.5;
  TAP_OK(d && fly_design_y(d, raw) == 2.5 && !fly_design_response_levels(d, &n) && n == 0,
         "a numeric response as it is");
  fly_design_free(d);
}

static void test_bind_errors(void)
{
  static const struct { const char *in, *ref, *want; } cases[] = {
    { "y ~ x3", NULL, "formula: no column 'x3'" },
    { "w ~ x", NULL, "formula: no column 'w' (the response)" },
    { "y ~ log(f)", NULL, "formula: log(f): 'f' is categorical, arithmetic needs a numeric column" },
    { "y ~ I(x + q)", NULL, "formula: I(x + q): no column 'q'" },
    { "y ~ log(2)", NULL, "formula: log(2) reads no column" },
    { "y ~ h", NULL, "formula: the categorical column 'h' has 1 level, a model needs 2 or more" },
    { "y ~ x + y", NULL, "formula: the response 'y' is also on the right-hand side" },
    { "y ~ x:y", NULL, "formula: the response 'y' is also on the right-hand side" },
    { "y ~ 0", NULL, "formula: the model has no columns (no intercept, no term)" },
    { "y ~ x - x - 1", NULL, "formula: the model has no columns (no intercept, no term)" },
    { "y ~ f", "q=a", "formula: --reference q=a: no column 'q'" },
    { "y ~ f", "f=zz", "formula: --reference f=zz: 'f' has no level 'zz'" },
    { "y ~ x", "f=zz", "formula: --reference f=zz: 'f' has no level 'zz'" },
  };
  size_t i;
  for(i = 0; i < sizeof cases / sizeof cases[0]; i++){
    const char *refs[2] = { cases[i].ref, NULL };
    fly_err err;
    fly_design *d = bind(cases[i].in, cases[i].ref ? refs : NULL, &err);
    TAP_OK(!d && err.code == FLY_RANGE && strcmp(err.msg, cases[i].want) == 0,
           "'%s'%s%s: %s", cases[i].in, cases[i].ref ? " ref " : "",
           cases[i].ref ? cases[i].ref : "", err.msg);
    fly_design_free(d);
  }
  /* '.' with duplicate names; too many terms */
  {
    static const fly_fcol dup[] = { { "y", 0, 0, NULL }, { "a", 0, 0, NULL }, { "a", 0, 0, NULL } };
    fly_fcol many[14];
    char nm[14][8];
    fly_formula *f = NULL;
    fly_design *d = NULL;
    fly_err err = { 0 };
    fly_formula_parse("y ~ .", &f, &err);
    TAP_OK(fly_design_new(f, dup, 3, NULL, &d, &err) == FLY_RANGE
           && strcmp(err.msg, "formula: '.' with the duplicate column name 'a'") == 0,
           "'.' with duplicate names: %s", err.msg);
    fly_formula_free(f);
    for(i = 0; i < 14; i++){
      snprintf(nm[i], sizeof nm[i], "c%zu", i);
      many[i].name = nm[i];
      many[i].categorical = 0;
    }
    fly_formula_parse("c0 ~ .^13", &f, &err);
    TAP_OK(fly_design_new(f, many, 14, NULL, &d, &err) == FLY_RANGE
           && strcmp(err.msg, "formula: more than 4096 terms") == 0,
           "13 columns to the 13th power: %s", err.msg);
    fly_formula_free(f);
    fly_formula_parse("c0 ~ .^2", &f, &err);
    TAP_OK(fly_design_new(f, many, 14, NULL, &d, &err) == FLY_OK
           && fly_design_width(d) == 1 + 13 + 78, ".^2 over 13 columns: 92 columns");
    fly_design_free(d);
    fly_formula_free(f);
  }
}

int main(void)
{
  test_parse();
  test_terms();
  test_names();
  test_rows();
  test_response();
  test_bind_errors();
  return tap_done();
}
