/*
 * formula_int.h -- the parse tree shared by the parser (parse.c), the terms
 * expansion (terms.c) and the binder (design.c).  Not installed.
 *
 * A parsed formula is an array of nodes; children are indices into it
 * (NONE when absent), so the tree is freed at once.  The same node kinds
 * serve both readings R gives them: at formula level `+ - : * / ^` are term
 * operators, inside a function call they are arithmetic.  The parser keeps
 * parentheses as nodes (R's `(` call) because R's names print them as
 * written: I((x + 1)^2).
 */
#ifndef FLY_FORMULA_INT_H
#define FLY_FORMULA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "formula/formula.h"

#define FORMULA_NONE ((size_t)-1)
#define FORMULA_MAX_DEPTH 64    /* nesting of the parse, and of an arithmetic stack */

typedef enum {
  FN_NAME,      /* a column name: s */
  FN_NUM,       /* a number: num (text as R prints it in s) */
  FN_DOT,       /* . */
  FN_CALL,      /* fn(a): s is log, sqrt, exp or I */
  FN_PAREN,     /* (a) */
  FN_NEG,       /* -a */
  FN_POS,       /* +a */
  FN_ADD, FN_SUB, FN_MUL, FN_DIV, FN_POW, FN_COLON   /* a op b */
} fn_kind;

typedef struct fnode {
  fn_kind kind;
  size_t  col;          /* 1-based byte column of the token, for messages */
  size_t  a, b;         /* children, FORMULA_NONE when absent */
  double  num;          /* FN_NUM */
  char   *s;            /* FN_NAME, FN_CALL, FN_NUM: owned */
} fnode;

struct fly_formula {
  fnode  *node;         /* n_node nodes */
  size_t  n_node, cap;
  size_t  lhs, rhs;     /* the response (an FN_NAME) and the right-hand side */
};

/* A growable string (formula names, keys). */
typedef struct fsbuf {
  char  *p;
  size_t n, cap;
  int    oom;           /* an append failed: p holds a prefix */
} fsbuf;

void fsbuf_add(fsbuf *b, const char *s, size_t n);
void fsbuf_puts(fsbuf *b, const char *s);

/* Append node i of f as R's deparse() prints it (a variable's name). */
void fly_formula_deparse(const fly_formula *f, size_t i, fsbuf *b);
/* Append name as R prints a symbol: `backquoted` unless syntactic. */
void fly_formula_deparse_name(const char *name, fsbuf *b);

/* The terms of a formula bound to column names, as R's terms() gives them:
 * variables (0 is the response) in order of first appearance, each term a
 * bit set over the variables, terms ordered by degree and then by first
 * appearance, duplicates removed. */
typedef struct fly_terms {
  size_t    n_var;
  char    **label;      /* n_var names as R prints them (deparse), owned */
  size_t   *node;       /* defining node (FN_NAME or FN_CALL), or FORMULA_NONE */
  size_t   *dotcol;     /* for a variable from '.': its column */
  size_t    nw;         /* 64-bit words per term */
  size_t    n_term;
  uint64_t *bits;       /* n_term * nw */
  int       intercept;  /* 1 unless -1 / +0 */
} fly_terms;

/* Expand the right-hand side of f over cols (for '.': every column but
 * cols[response]).  FLY_RANGE: a name (outside calls) not a column, '.'
 * with duplicate column names, the response on the right-hand side, more
 * than FLY_DESIGN_MAX_TERMS terms or too large an interaction; FLY_NOMEM.  t is zeroed first; fly_terms_clear frees it (also after a
 * failure). */
fly_rc fly_terms_expand(const fly_formula *f, const fly_fcol *cols, size_t n_cols,
                        size_t response, fly_terms *t, fly_err *err);
void   fly_terms_clear(fly_terms *t);

static inline int fly_terms_has(const fly_terms *t, size_t term, size_t var)
{
  return (int)((t->bits[term * t->nw + var / 64] >> (var % 64)) & 1u);
}

#endif
