/*
 * parse.c -- the formula parser (recursive descent) and R's printing of a
 * variable (deparse).
 *
 * Grammar, with R's operator precedence (?Syntax), lowest first:
 *
 *   formula := sum '~' sum                      (left: a bare column name)
 *   sum     := prod { ('+' | '-') prod }
 *   prod    := colon { ('*' | '/') colon }
 *   colon   := unary { ':' unary }              (not inside a call)
 *   unary   := ('-' | '+') unary | power
 *   power   := primary [ '^' unary ]            (right associative)
 *   primary := NAME | `NAME` | NUMBER | '.' | '(' sum ')' | FN '(' sum ')'
 *   FN      := log | sqrt | exp | I
 *
 * The tree is the one R's parser builds (parentheses kept), so that a
 * variable prints as R prints it.  After the parse a walk checks what R
 * checks when it reads the terms: a number at formula level is 0 or 1, a
 * power is an integer of 2 or more.  Every error is FLY_PARSE
 * "formula:COL: expected ..., found ..." with the 1-based byte column.
 *
 * Invariants: the tree height is at most MAX_HEIGHT, so every recursive
 * walk (here, terms.c, design.c) is bounded; node children come before
 * their parent in the array.  Cost: linear in the text.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula/formula_int.h"
#include "util/mem.h"

#define MAX_HEIGHT 1000         /* tree height: recursion depth of every walk */
#define MAX_NEST   256          /* parentheses, calls and signs within each other */

typedef struct parser {
  const char  *t;               /* the text */
  size_t       n, i;            /* its length, the position */
  fly_formula *f;
  size_t      *height;          /* per node (parallel to f->node) */
  int          in_call;         /* inside a function call: arithmetic only */
  int          nest;            /* parse_unary calls in progress */
  fly_rc       rc;              /* first failure, FLY_OK while none */
  fly_err     *err;
} parser;

/* ---- growable strings ---------------------------------------------------- */

void fsbuf_add(fsbuf *b, const char *s, size_t n)
{
  if( b->oom ) return;
  if( b->n + n + 1 > b->cap ){
    size_t cap = b->cap ? b->cap : 32;
    char *p;
    while( cap < b->n + n + 1 ) cap *= 2;
    p = fly_realloc_array(b->p, cap, 1);
    if( !p ){ b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void fsbuf_puts(fsbuf *b, const char *s)
{
  fsbuf_add(b, s, strlen(s));
}

/* ---- characters ---------------------------------------------------------- */

static int is_digit(int c){ return c >= '0' && c <= '9'; }
/* Letters, and every byte of a UTF-8 sequence (R's names in a UTF-8 locale). */
static int is_alpha(int c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
static int is_namech(int c){ return is_alpha(c) || is_digit(c) || c == '.' || c == '_'; }
static int is_space(int c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* R's reserved words, which print backquoted as names. */
static const char *const reserved[] = {
  "if", "else", "repeat", "while", "function", "for", "next", "break", "in",
  "TRUE", "FALSE", "NULL", "Inf", "NaN", "NA", "NA_integer_", "NA_real_",
  "NA_character_", "NA_complex_",
};

/* R's isValidName: a letter, or a dot not followed by a digit, then letters,
 * digits, dots and underscores; not a reserved word. */
static int syntactic(const char *s)
{
  const unsigned char *u = (const unsigned char *)s;
  size_t k;
  if( u[0] == '.' ){
    if( is_digit(u[1]) ) return 0;
  }else if( !is_alpha(u[0]) ){
    return 0;
  }
  for(k = 1; u[k]; k++) if( !is_namech(u[k]) ) return 0;
  for(k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
    if( strcmp(s, reserved[k]) == 0 ) return 0;
  return 1;
}

void fly_formula_deparse_name(const char *name, fsbuf *b)
{
  if( syntactic(name) ){
    fsbuf_puts(b, name);
  }else{
    fsbuf_add(b, "`", 1);
    fsbuf_puts(b, name);
    fsbuf_add(b, "`", 1);
  }
}

/* A number as R's deparse prints it: the fewest significant digits (at most
 * 15) that give the value rounded to 15, fixed notation unless scientific
 * is narrower (formatReal with digits 15, scipen 0).  v >= 0, finite. */
static void format_num(double v, char out[48])
{
  char s[48];
  double target;
  int d, e10, rgt, wfix, wsci;
  if( v == 0 ){ strcpy(out, "0"); return; }
  snprintf(s, sizeof s, "%.14e", v);
  target = strtod(s, NULL);
  for(d = 1; d < 15; d++){
    snprintf(s, sizeof s, "%.*e", d - 1, v);
    if( strtod(s, NULL) == target ) break;
  }
  snprintf(s, sizeof s, "%.*e", d - 1, v);
  e10 = atoi(strchr(s, 'e') + 1);
  wsci = (d > 1 ? d + 1 : 1) + (abs(e10) >= 100 ? 5 : 4);
  rgt = d - e10 - 1;
  if( rgt < 0 ) rgt = 0;
  wfix = (e10 >= 0 ? e10 + 1 : 1) + (rgt > 0 ? rgt + 1 : 0);
  if( wfix <= wsci ) snprintf(out, 48, "%.*f", rgt, v);
  else               memcpy(out, s, strlen(s) + 1);
}

/* R's deparse of a call: binary + - * spaced, / ^ : not; parentheses as
 * written (they are nodes). */
void fly_formula_deparse(const fly_formula *f, size_t i, fsbuf *b)
{
  const fnode *x = &f->node[i];
  static const char *const op[] = {
    [FN_ADD] = " + ", [FN_SUB] = " - ", [FN_MUL] = " * ", [FN_DIV] = "/",
    [FN_POW] = "^", [FN_COLON] = ":",
  };
  switch( x->kind ){
  case FN_NAME:  fly_formula_deparse_name(x->s, b); break;
  case FN_NUM:   fsbuf_puts(b, x->s); break;
  case FN_DOT:   fsbuf_add(b, ".", 1); break;
  case FN_CALL:
    fsbuf_puts(b, x->s);
    fsbuf_add(b, "(", 1);
    fly_formula_deparse(f, x->a, b);
    fsbuf_add(b, ")", 1);
    break;
  case FN_PAREN:
    fsbuf_add(b, "(", 1);
    fly_formula_deparse(f, x->a, b);
    fsbuf_add(b, ")", 1);
    break;
  case FN_NEG: fsbuf_add(b, "-", 1); fly_formula_deparse(f, x->a, b); break;
  case FN_POS: fsbuf_add(b, "+", 1); fly_formula_deparse(f, x->a, b); break;
  default:
    fly_formula_deparse(f, x->a, b);
    fsbuf_puts(b, op[x->kind]);
    fly_formula_deparse(f, x->b, b);
    break;
  }
}

/* ---- errors -------------------------------------------------------------- */

static void skip_space(parser *p)
{
  while( p->i < p->n && is_space((unsigned char)p->t[p->i]) ) p->i++;
}

/* Length of the token at position at (for "found '...'"). */
static size_t token_len(const parser *p, size_t at)
{
  const unsigned char *u = (const unsigned char *)p->t;
  size_t k = at;
  if( u[k] == '`' ){
    for(k++; k < p->n && u[k] != '`'; k++) {}
    return (k < p->n ? k + 1 : k) - at;
  }
  if( is_digit(u[k]) || (u[k] == '.' && k + 1 < p->n && is_digit(u[k+1])) ){
    while( k < p->n && (is_digit(u[k]) || u[k] == '.') ) k++;
    if( k < p->n && (u[k] == 'e' || u[k] == 'E') ){
      k++;
      if( k < p->n && (u[k] == '+' || u[k] == '-') ) k++;
      while( k < p->n && is_digit(u[k]) ) k++;
    }
    return k - at;
  }
  if( is_namech(u[k]) && u[k] != '_' ){
    while( k < p->n && is_namech(u[k]) ) k++;
    return k - at;
  }
  return 1;
}

/* Fail with "formula:COL: expected WHAT, found TOKEN" at position at. */
static size_t fail_at(parser *p, size_t at, const char *what)
{
  if( p->rc != FLY_OK ) return FORMULA_NONE;
  if( at >= p->n ){
    p->rc = fly_fail(p->err, FLY_PARSE, "formula:%zu: expected %s, found the end",
                     at + 1, what);
  }else{
    size_t len = token_len(p, at);
    p->rc = fly_fail(p->err, FLY_PARSE, "formula:%zu: expected %s, found '%.*s'",
                     at + 1, what, len > 40 ? 40 : (int)len, p->t + at);
  }
  return FORMULA_NONE;
}

static size_t fail_nomem(parser *p)
{
  if( p->rc == FLY_OK ) p->rc = fly_fail(p->err, FLY_NOMEM, "formula: out of memory");
  return FORMULA_NONE;
}

/* ---- nodes --------------------------------------------------------------- */

/* A new node (children a, b already built); FORMULA_NONE on failure. s is
 * copied (len bytes) when not NULL. */
static size_t add_node(parser *p, fn_kind kind, size_t at, size_t a, size_t b,
                       const char *s, size_t len)
{
  fly_formula *f = p->f;
  fnode *x;
  size_t h = 0;
  if( p->rc != FLY_OK ) return FORMULA_NONE;
  if( f->n_node == f->cap ){
    size_t cap = f->cap ? 2 * f->cap : 16;
    fnode *nn = fly_realloc_array(f->node, cap, sizeof *nn);
    size_t *nh;
    if( !nn ) return fail_nomem(p);
    f->node = nn;
    nh = fly_realloc_array(p->height, cap, sizeof *nh);
    if( !nh ) return fail_nomem(p);
    p->height = nh;
    f->cap = cap;
  }
  if( a != FORMULA_NONE && p->height[a] > h ) h = p->height[a];
  if( b != FORMULA_NONE && p->height[b] > h ) h = p->height[b];
  if( h + 1 > MAX_HEIGHT )
    return fail_at(p, at, "a shorter formula (at most 1000 nested operations)");
  x = &f->node[f->n_node];
  memset(x, 0, sizeof *x);
  x->kind = kind;
  x->col = at + 1;
  x->a = a;
  x->b = b;
  if( s ){
    x->s = fly_alloc_array(len + 1, 1);
    if( !x->s ) return fail_nomem(p);
    memcpy(x->s, s, len);
  }
  p->height[f->n_node] = h + 1;
  return f->n_node++;
}

/* ---- the grammar --------------------------------------------------------- */

static size_t parse_sum(parser *p);
static size_t parse_unary(parser *p);

static int at_char(parser *p, char c)
{
  skip_space(p);
  return p->i < p->n && p->t[p->i] == c;
}

static size_t expect_close(parser *p, size_t inner)
{
  if( inner == FORMULA_NONE ) return FORMULA_NONE;
  if( !at_char(p, ')') ) return fail_at(p, p->i, "')'");
  p->i++;
  return inner;
}

static size_t parse_number(parser *p)
{
  const char *t = p->t;
  size_t at = p->i, k = p->i;
  char buf[64], txt[48];
  double v;
  while( k < p->n && is_digit((unsigned char)t[k]) ) k++;
  if( k < p->n && t[k] == '.' ){
    k++;
    while( k < p->n && is_digit((unsigned char)t[k]) ) k++;
  }
  if( k < p->n && (t[k] == 'e' || t[k] == 'E') ){
    size_t e = k + 1;
    if( e < p->n && (t[e] == '+' || t[e] == '-') ) e++;
    if( e < p->n && is_digit((unsigned char)t[e]) ){
      while( e < p->n && is_digit((unsigned char)t[e]) ) e++;
      k = e;
    }
  }
  if( k - at >= sizeof buf ) return fail_at(p, at, "a number of at most 63 characters");
  memcpy(buf, t + at, k - at);
  buf[k - at] = 0;
  v = strtod(buf, NULL);
  if( !isfinite(v) ) return fail_at(p, at, "a finite number");
  p->i = k;
  format_num(v, txt);
  k = add_node(p, FN_NUM, at, FORMULA_NONE, FORMULA_NONE, txt, strlen(txt));
  if( k != FORMULA_NONE ) p->f->node[k].num = v;
  return k;
}

static const char *const functions[] = { "log", "sqrt", "exp", "I" };

static size_t parse_primary(parser *p)
{
  const unsigned char *u = (const unsigned char *)p->t;
  const char *name;
  size_t at, len, k;
  skip_space(p);
  at = p->i;
  if( at >= p->n )
    return fail_at(p, at, p->in_call ? "a number or a column" : "a term");
  if( u[at] == '(' ){
    p->i++;
    k = expect_close(p, parse_sum(p));
    return k == FORMULA_NONE ? k : add_node(p, FN_PAREN, at, k, FORMULA_NONE, NULL, 0);
  }
  if( is_digit(u[at]) || (u[at] == '.' && at + 1 < p->n && is_digit(u[at+1])) )
    return parse_number(p);
  if( u[at] == '`' ){
    size_t e = at + 1;
    while( e < p->n && u[e] != '`' ) e++;
    if( e >= p->n ) return fail_at(p, p->n, "a closing '`'");
    if( e == at + 1 ) return fail_at(p, at, "a name between the backquotes");
    name = p->t + at + 1;
    len = e - at - 1;
    p->i = e + 1;
  }else if( is_alpha(u[at]) || u[at] == '.' ){
    size_t e = at;
    while( e < p->n && is_namech(u[e]) ) e++;
    name = p->t + at;
    len = e - at;
    p->i = e;
    if( len == 1 && name[0] == '.' ){
      if( p->in_call ) return fail_at(p, at, "a number or a column");
      return add_node(p, FN_DOT, at, FORMULA_NONE, FORMULA_NONE, NULL, 0);
    }
  }else{
    return fail_at(p, at, p->in_call ? "a number or a column" : "a term");
  }
  if( at_char(p, '(') ){
    size_t fi, arg;
    for(fi = 0; fi < sizeof functions / sizeof functions[0]; fi++)
      if( strlen(functions[fi]) == len && memcmp(functions[fi], name, len) == 0 ) break;
    if( fi == sizeof functions / sizeof functions[0] )
      return fail_at(p, at, "a column or one of the functions log, sqrt, exp, I");
    p->i++;
    p->in_call++;
    arg = expect_close(p, parse_sum(p));
    p->in_call--;
    if( arg == FORMULA_NONE ) return arg;
    return add_node(p, FN_CALL, at, arg, FORMULA_NONE, functions[fi], strlen(functions[fi]));
  }
  return add_node(p, FN_NAME, at, FORMULA_NONE, FORMULA_NONE, name, len);
}

static size_t parse_power(parser *p)
{
  size_t a = parse_primary(p), b, at;
  if( a == FORMULA_NONE || !at_char(p, '^') ) return a;
  at = p->i++;
  b = parse_unary(p);
  return b == FORMULA_NONE ? b : add_node(p, FN_POW, at, a, b, NULL, 0);
}

/* Every nesting (parentheses, a call's argument, a sign, a power) passes
 * here, so nest bounds the parser's recursion. */
static size_t parse_unary(parser *p)
{
  size_t at, a;
  fn_kind k;
  skip_space(p);
  if( p->nest >= MAX_NEST )
    return fail_at(p, p->i, "at most 256 parentheses, calls or signs within each other");
  p->nest++;
  if( p->i >= p->n || (p->t[p->i] != '-' && p->t[p->i] != '+') ){
    a = parse_power(p);
  }else{
    at = p->i++;
    k = p->t[at] == '-' ? FN_NEG : FN_POS;
    a = parse_unary(p);
    if( a != FORMULA_NONE ) a = add_node(p, k, at, a, FORMULA_NONE, NULL, 0);
  }
  p->nest--;
  return a;
}

/* The binary operators by precedence, loosest first; each level is a
 * left-associative chain of the next, the last of unary expressions. */
static const struct { const char *ops; fn_kind kind[2]; } binary[] = {
  { "+-", { FN_ADD, FN_SUB } },
  { "*/", { FN_MUL, FN_DIV } },
  { ":",  { FN_COLON, FN_COLON } },     /* not inside a call */
};
#define N_BINARY (sizeof binary / sizeof binary[0])

static size_t parse_binary(parser *p, size_t lv)
{
  size_t a = lv + 1 < N_BINARY ? parse_binary(p, lv + 1) : parse_unary(p);
  for(;;){
    const char *op;
    size_t at, b;
    skip_space(p);
    if( a == FORMULA_NONE || p->i >= p->n ) break;
    if( !(op = strchr(binary[lv].ops, p->t[p->i])) ) break;
    if( binary[lv].kind[0] == FN_COLON && p->in_call ) break;
    at = p->i++;
    b = lv + 1 < N_BINARY ? parse_binary(p, lv + 1) : parse_unary(p);
    a = b == FORMULA_NONE ? b
      : add_node(p, binary[lv].kind[op - binary[lv].ops], at, a, b, NULL, 0);
  }
  return a;
}

static size_t parse_sum(parser *p)
{
  return parse_binary(p, 0);
}

/* What R checks when it reads the terms: at formula level a number is 0 or
 * 1 and a power an integer of 2 or more.  Calls are not entered. */
static void check_terms(parser *p, size_t i)
{
  const fnode *x = &p->f->node[i];
  switch( x->kind ){
  case FN_NUM:
    if( x->num != 0 && x->num != 1 ) fail_at(p, x->col - 1, "0 or 1 as a term");
    return;
  case FN_NAME: case FN_DOT: case FN_CALL:
    return;
  case FN_POW: {
    const fnode *e = &p->f->node[x->b];
    if( e->kind != FN_NUM || e->num < 2 || e->num != floor(e->num) || e->num > 1e9 ){
      fail_at(p, e->col - 1, "an integer power of 2 or more");
      return;
    }
    check_terms(p, x->a);
    return;
  }
  default:
    check_terms(p, x->a);
    if( x->b != FORMULA_NONE ) check_terms(p, x->b);
    return;
  }
}

fly_rc fly_formula_parse(const char *text, fly_formula **pf, fly_err *err)
{
  parser p;
  fly_formula *f = NULL;
  size_t lhs;
  memset(&p, 0, sizeof p);
  *pf = NULL;
  if( !text ) return fly_fail(err, FLY_MISUSE, "formula: no text");
  f = fly_alloc_array(1, sizeof *f);
  if( !f ) return fly_fail(err, FLY_NOMEM, "formula: out of memory");
  p.t = text;
  p.n = strlen(text);
  p.f = f;
  p.err = err;
  f->lhs = f->rhs = FORMULA_NONE;

  skip_space(&p);
  if( p.i < p.n && p.t[p.i] == '~' ){
    fail_at(&p, p.i, "a response column before '~'");
    goto done;
  }
  lhs = parse_sum(&p);
  if( lhs == FORMULA_NONE ) goto done;
  if( f->node[lhs].kind != FN_NAME ){
    fail_at(&p, 0, "a column name as the response (left of '~')");
    goto done;
  }
  f->lhs = lhs;
  if( !at_char(&p, '~') ){
    fail_at(&p, p.i, "'~'");
    goto done;
  }
  p.i++;
  f->rhs = parse_sum(&p);
  if( f->rhs == FORMULA_NONE ) goto done;
  skip_space(&p);
  if( p.i < p.n ){
    fail_at(&p, p.i, "an operator or the end of the formula");
    goto done;
  }
  check_terms(&p, f->rhs);

done:
  fly_free(p.height);
  if( p.rc != FLY_OK ){
    fly_formula_free(f);
    return p.rc;
  }
  *pf = f;
  return FLY_OK;
}

void fly_formula_free(fly_formula *f)
{
  size_t i;
  if( !f ) return;
  for(i = 0; i < f->n_node; i++) fly_free(f->node[i].s);
  fly_free(f->node);
  fly_free(f);
}

const char *fly_formula_response(const fly_formula *f)
{
  return f->node[f->lhs].s;
}
