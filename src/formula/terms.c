/*
 * terms.c -- the terms of a formula, as R's terms() computes them
 * (src/library/stats/src/model.c: ExtractVars, EncodeVars, TermCode's
 * callers).
 *
 * First every variable is installed in order of first appearance, the
 * response first: a name or a call is one variable, known by its printed
 * form (so `x` and x are one, log(x) and log((x)) two), and '.' installs
 * every column but the response.  Variables named only in dropped terms
 * stay installed: R's model frame reads them, so their missing values drop
 * rows too.  Then the right-hand side is encoded into a list of terms, each
 * a bit set over the variables, by R's rules:
 *
 *   a + b   a's terms then b's             a:b  every l|r, l of a, r of b
 *   a * b   a + b + a:b                    a/b  a + every r|(all of a)
 *   a - b   a's terms without b's          (..)^k  the k-fold a:a:..., trimmed
 *   1, 0    intercept on, off (reversed on the right of a '-')
 *
 * each result trimmed of repeats (the first occurrence stays), which a hash
 * set of the terms finds.  Finally the terms are ordered by degree,
 * stably.  Cost: O(W) per term of a result or product of an interaction,
 * for terms of W words; at most FLY_DESIGN_MAX_TERMS terms, and 64 times
 * that many products.
 */
#include <stdlib.h>
#include <string.h>

#include "formula/formula_int.h"
#include "util/mem.h"

typedef struct tlist {          /* a list of terms, each nw words */
  uint64_t *w;
  size_t    n, cap;
} tlist;

typedef struct expander {
  const fly_formula *f;
  const fly_fcol    *cols;
  size_t             n_cols, response;
  fly_terms         *t;
  size_t             cap_var;
  size_t            *var_of_node;  /* per node: its variable, for NAME and CALL */
  size_t            *var_of_col;   /* per column: its variable when from '.' */
  int                parity;       /* 0 on the right of an odd number of '-' */
  fly_rc             rc;
  fly_err           *err;
} expander;

static fly_rc nomem(expander *x)
{
  if( x->rc == FLY_OK ) x->rc = fly_fail(x->err, FLY_NOMEM, "formula: out of memory");
  return x->rc;
}

/* ---- variables ----------------------------------------------------------- */

/* The variable labelled s (taken over), installed if new; SIZE_MAX on
 * failure (s freed). */
static size_t install(expander *x, char *s)
{
  fly_terms *t = x->t;
  size_t v;
  for(v = 0; v < t->n_var; v++)
    if( strcmp(t->label[v], s) == 0 ){ fly_free(s); return v; }
  if( t->n_var == x->cap_var ){
    size_t cap = x->cap_var ? 2 * x->cap_var : 16;
    char **l = fly_realloc_array(t->label, cap, sizeof *l);
    size_t *nd, *dc;
    if( l ) t->label = l;
    nd = l ? fly_realloc_array(t->node, cap, sizeof *nd) : NULL;
    if( nd ) t->node = nd;
    dc = nd ? fly_realloc_array(t->dotcol, cap, sizeof *dc) : NULL;
    if( !dc ){ fly_free(s); nomem(x); return SIZE_MAX; }
    t->dotcol = dc;
    x->cap_var = cap;
  }
  t->label[t->n_var] = s;
  t->node[t->n_var] = FORMULA_NONE;
  t->dotcol[t->n_var] = SIZE_MAX;
  return t->n_var++;
}

static char *label_of(expander *x, size_t i, const char *name)
{
  fsbuf b = { 0 };
  if( name ) fly_formula_deparse_name(name, &b);
  else       fly_formula_deparse(x->f, i, &b);
  if( b.oom || !b.p ){ fly_free(b.p); nomem(x); return NULL; }
  return b.p;
}

/* Install the variables of formula-level node i, left to right. */
static void extract(expander *x, size_t i)
{
  const fnode *n = &x->f->node[i];
  size_t v, j;
  char *s;
  if( x->rc != FLY_OK ) return;
  switch( n->kind ){
  case FN_NAME: case FN_CALL:
    if( n->kind == FN_NAME ){           /* refused before any expansion */
      for(j = 0; j < x->n_cols && strcmp(x->cols[j].name, n->s) != 0; j++) {}
      if( j == x->n_cols ){
        x->rc = fly_fail(x->err, FLY_RANGE, "formula: no column '%s'", n->s);
        return;
      }
    }
    if( !(s = label_of(x, i, NULL)) ) return;
    if( (v = install(x, s)) == SIZE_MAX ) return;
    if( x->t->node[v] == FORMULA_NONE && x->t->dotcol[v] == SIZE_MAX ) x->t->node[v] = i;
    x->var_of_node[i] = v;
    return;
  case FN_DOT:
    for(j = 0; j < x->n_cols; j++){
      size_t k;
      if( j == x->response ) continue;
      for(k = 0; k < j; k++)
        if( strcmp(x->cols[k].name, x->cols[j].name) == 0 ){
          x->rc = fly_fail(x->err, FLY_RANGE,
                           "formula: '.' with the duplicate column name '%s'",
                           x->cols[j].name);
          return;
        }
      if( !(s = label_of(x, 0, x->cols[j].name)) ) return;
      if( (v = install(x, s)) == SIZE_MAX ) return;
      if( x->t->node[v] == FORMULA_NONE && x->t->dotcol[v] == SIZE_MAX ) x->t->dotcol[v] = j;
      x->var_of_col[j] = v;
    }
    return;
  case FN_NUM:
    return;
  case FN_POW:
    extract(x, n->a);
    return;
  default:
    extract(x, n->a);
    if( n->b != FORMULA_NONE ) extract(x, n->b);
    return;
  }
}

/* ---- term lists ---------------------------------------------------------- */

static uint64_t *tl_push(expander *x, tlist *l)
{
  size_t nw = x->t->nw;
  if( l->n == l->cap ){
    size_t cap = l->cap ? 2 * l->cap : 8;
    uint64_t *w = fly_realloc_array(l->w, cap * nw, sizeof *w);
    if( !w ){ nomem(x); return NULL; }
    l->w = w;
    l->cap = cap;
  }
  memset(l->w + l->n * nw, 0, nw * sizeof *l->w);
  return l->w + l->n++ * nw;
}

static void tl_free(tlist *l)
{
  fly_free(l->w);
  l->w = NULL;
  l->n = l->cap = 0;
}

static int too_many(expander *x, size_t n)
{
  if( n <= FLY_DESIGN_MAX_TERMS ) return 0;
  if( x->rc == FLY_OK )
    x->rc = fly_fail(x->err, FLY_RANGE, "formula: more than %zu terms",
                     FLY_DESIGN_MAX_TERMS);
  return 1;
}

/* Append b's terms to a. */
static void tl_cat(expander *x, tlist *a, const tlist *b)
{
  size_t nw = x->t->nw, k;
  for(k = 0; k < b->n; k++){
    uint64_t *w = tl_push(x, a);
    if( !w ) return;
    memcpy(w, b->w + k * nw, nw * sizeof *w);
  }
}

/* A set of the terms of a list, for finding repeats: open addressing over
 * indices into the list, at most half full. */
typedef struct tset {
  size_t *tab, mask;
} tset;

static size_t term_hash(const uint64_t *w, size_t nw)
{
  uint64_t h = 0x9e3779b97f4a7c15u;
  size_t k;
  for(k = 0; k < nw; k++) h = (h ^ w[k]) * 0xff51afd7ed558ccdu;
  return (size_t)(h ^ (h >> 29));
}

/* Room for n terms. */
static int tset_init(expander *x, tset *s, size_t n)
{
  size_t cap = 16, i;
  while( cap / 2 <= n ) cap *= 2;
  s->mask = cap - 1;
  s->tab = fly_alloc_array(cap, sizeof *s->tab);
  if( !s->tab ){ nomem(x); return 0; }
  for(i = 0; i < cap; i++) s->tab[i] = SIZE_MAX;
  return 1;
}

/* Add term i of l unless an equal term is in s already: 1 if added. */
static int tset_add(const expander *x, tset *s, const tlist *l, size_t i)
{
  size_t nw = x->t->nw, h;
  const uint64_t *w = l->w + i * nw;
  for(h = term_hash(w, nw) & s->mask; s->tab[h] != SIZE_MAX; h = (h + 1) & s->mask)
    if( memcmp(l->w + s->tab[h] * nw, w, nw * sizeof *w) == 0 ) return 0;
  s->tab[h] = i;
  return 1;
}

/* Remove repeats among l[from ..], keeping each term's first occurrence
 * (R's TrimRepeats); l[0 .. from) are distinct already. */
static void tl_trim_from(expander *x, tlist *l, size_t from)
{
  size_t nw = x->t->nw, i, m;
  tset s;
  if( x->rc != FLY_OK || !tset_init(x, &s, l->n) ) return;
  for(i = 0; i < from; i++) tset_add(x, &s, l, i);
  for(m = i = from; i < l->n; i++){
    if( m != i ) memcpy(l->w + m * nw, l->w + i * nw, nw * sizeof *l->w);
    if( tset_add(x, &s, l, m) ) m++;
  }
  l->n = m;
  fly_free(s.tab);
}

/* out (empty) = every l|r, l of a (outer), r of b (inner), without
 * repeats.  More than 64 FLY_DESIGN_MAX_TERMS products are refused: a
 * formula that large has more terms than allowed in all but contrived
 * cases, and the products would cost seconds. */
static void tl_interact(expander *x, const tlist *a, const tlist *b, tlist *out)
{
  size_t nw = x->t->nw, i, j, k;
  tset s;
  if( x->rc != FLY_OK ) return;
  if( a->n && b->n > 64 * FLY_DESIGN_MAX_TERMS / a->n ){
    x->rc = fly_fail(x->err, FLY_RANGE,
                     "formula: an interaction of %zu by %zu terms, more than %zu products",
                     a->n, b->n, 64 * FLY_DESIGN_MAX_TERMS);
    return;
  }
  if( !tset_init(x, &s, FLY_DESIGN_MAX_TERMS + 1) ) return;
  for(i = 0; i < a->n; i++)
    for(j = 0; j < b->n; j++){
      uint64_t *w = tl_push(x, out);
      if( !w ) goto done;
      for(k = 0; k < nw; k++) w[k] = a->w[i * nw + k] | b->w[j * nw + k];
      if( !tset_add(x, &s, out, out->n - 1) ){ out->n--; continue; }
      if( too_many(x, out->n) ) goto done;
    }
done:
  fly_free(s.tab);
}

/* ---- encoding ------------------------------------------------------------ */

static void encode(expander *x, size_t i, tlist *out);

static void encode2(expander *x, const fnode *n, tlist *a, tlist *b)
{
  encode(x, n->a, a);
  encode(x, n->b, b);
}

/* out = a without b's terms, b encoded with the parity reversed. */
static void encode_minus(expander *x, size_t ia, size_t ib, tlist *out)
{
  tlist r = { 0 };
  size_t nw = x->t->nw, i, j, m;
  if( ia != FORMULA_NONE ) encode(x, ia, out);
  x->parity = !x->parity;
  encode(x, ib, &r);
  x->parity = !x->parity;
  for(j = 0; j < r.n; j++){
    for(i = m = 0; i < out->n; i++){
      const uint64_t *w = out->w + i * nw;
      if( memcmp(w, r.w + j * nw, nw * sizeof *w) == 0 ) continue;
      if( m != i ) memmove(out->w + m * nw, w, nw * sizeof *w);
      m++;
    }
    out->n = m;
  }
  tl_free(&r);
}

static void encode(expander *x, size_t i, tlist *out)
{
  const fnode *n = &x->f->node[i];
  size_t nw = x->t->nw, j, k;
  tlist a = { 0 }, b = { 0 }, c = { 0 };
  uint64_t *w;
  if( x->rc != FLY_OK ) return;
  switch( n->kind ){
  case FN_NAME: case FN_CALL:
    if( !(w = tl_push(x, out)) ) return;
    j = x->var_of_node[i];
    w[j / 64] |= (uint64_t)1 << (j % 64);
    return;
  case FN_DOT:
    for(j = 0; j < x->n_cols; j++){
      if( j == x->response ) continue;
      if( !(w = tl_push(x, out)) ) return;
      k = x->var_of_col[j];
      w[k / 64] |= (uint64_t)1 << (k % 64);
    }
    tl_trim_from(x, out, 0);
    too_many(x, out->n);
    return;
  case FN_NUM:                          /* 0 or 1, checked by the parser */
    x->t->intercept = (n->num == 1) == (x->parity != 0);
    return;
  case FN_PAREN: case FN_POS:
    encode(x, n->a, out);
    return;
  case FN_NEG:
    encode_minus(x, FORMULA_NONE, n->a, out);
    return;
  case FN_SUB:
    encode_minus(x, n->a, n->b, out);
    return;
  case FN_ADD:
    encode2(x, n, out, &b);
    j = out->n;
    tl_cat(x, out, &b);
    tl_trim_from(x, out, j);
    break;
  case FN_COLON:
    encode2(x, n, &a, &b);
    tl_interact(x, &a, &b, out);
    break;
  case FN_MUL:
    encode2(x, n, out, &b);
    tl_interact(x, out, &b, &c);
    j = out->n;
    tl_cat(x, out, &b);
    tl_cat(x, out, &c);
    tl_trim_from(x, out, j);
    break;
  case FN_DIV: {
    uint64_t *all;
    encode2(x, n, out, &b);
    if( x->rc != FLY_OK || !(all = tl_push(x, &c)) ) break;
    for(j = 0; j < out->n; j++)
      for(k = 0; k < nw; k++) all[k] |= out->w[j * nw + k];
    for(j = 0; j < b.n; j++)
      for(k = 0; k < nw; k++) b.w[j * nw + k] |= all[k];
    j = out->n;
    tl_cat(x, out, &b);
    tl_trim_from(x, out, j);
    break;
  }
  case FN_POW: {
    /* R's PowerTerms: right = a; k-1 times right = trim(a x right).  Once
     * a step changes nothing, no later one will. */
    size_t p = (size_t)x->f->node[n->b].num, s;
    encode(x, n->a, &a);
    tl_cat(x, out, &a);
    for(s = 1; s < p && x->rc == FLY_OK; s++){
      c.n = 0;
      tl_interact(x, &a, out, &c);
      if( c.n == out->n && (c.n == 0 || memcmp(c.w, out->w, c.n * nw * sizeof *c.w) == 0) )
        break;
      tl_free(out);
      *out = c;
      c.w = NULL;
      c.n = c.cap = 0;
      if( too_many(x, out->n) ) break;
    }
    break;
  }
  }
  too_many(x, out->n);
  tl_free(&a);
  tl_free(&b);
  tl_free(&c);
}

static size_t degree(const uint64_t *w, size_t nw)
{
  size_t d = 0, k;
  for(k = 0; k < nw; k++) d += (size_t)__builtin_popcountll(w[k]);
  return d;
}

fly_rc fly_terms_expand(const fly_formula *f, const fly_fcol *cols, size_t n_cols,
                        size_t response, fly_terms *t, fly_err *err)
{
  expander x;
  tlist l = { 0 };
  size_t i, k, d, max_d, nw;
  char *s;
  memset(t, 0, sizeof *t);
  memset(&x, 0, sizeof x);
  x.f = f;
  x.cols = cols;
  x.n_cols = n_cols;
  x.response = response;
  x.t = t;
  x.err = err;
  x.parity = 1;
  t->intercept = 1;
  x.var_of_node = fly_alloc_array(f->n_node, sizeof *x.var_of_node);
  x.var_of_col = fly_alloc_array(n_cols ? n_cols : 1, sizeof *x.var_of_col);
  if( !x.var_of_node || !x.var_of_col ){ nomem(&x); goto done; }

  if( !(s = label_of(&x, 0, cols[response].name)) ) goto done;
  if( install(&x, s) == SIZE_MAX ) goto done;
  t->dotcol[0] = response;
  extract(&x, f->rhs);
  if( x.rc != FLY_OK ) goto done;

  t->nw = nw = (t->n_var + 63) / 64;
  encode(&x, f->rhs, &l);
  if( x.rc != FLY_OK ) goto done;
  for(i = 0; i < l.n; i++)
    if( l.w[i * nw] & 1u ){
      x.rc = fly_fail(err, FLY_RANGE,
                      "formula: the response '%s' is also on the right-hand side",
                      cols[response].name);
      goto done;
    }

  /* Order by degree, stably. */
  t->bits = fly_alloc_array(l.n ? l.n * nw : 1, sizeof *t->bits);
  if( !t->bits ){ nomem(&x); goto done; }
  max_d = 0;
  for(i = 0; i < l.n; i++)
    if( (d = degree(l.w + i * nw, nw)) > max_d ) max_d = d;
  for(d = 1, k = 0; d <= max_d; d++)
    for(i = 0; i < l.n; i++)
      if( degree(l.w + i * nw, nw) == d )
        memcpy(t->bits + k++ * nw, l.w + i * nw, nw * sizeof *t->bits);
  t->n_term = k;

done:
  tl_free(&l);
  fly_free(x.var_of_node);
  fly_free(x.var_of_col);
  return x.rc;
}

void fly_terms_clear(fly_terms *t)
{
  size_t v;
  if( !t ) return;
  for(v = 0; v < t->n_var; v++) fly_free(t->label[v]);
  fly_free(t->label);
  fly_free(t->node);
  fly_free(t->dotcol);
  fly_free(t->bits);
  memset(t, 0, sizeof *t);
}
