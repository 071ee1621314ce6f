/*
 * design.c -- a formula bound to columns: the model matrix of one row, as
 * R's model.matrix() codes it (src/library/stats/src/model.c, modelmatrix
 * and TermCode).
 *
 * Each variable of the terms (terms.c) is a numeric column, a categorical
 * column, or a transform: a small postfix program over numeric columns
 * and numbers.  A categorical column's levels are put in R's order --
 * sorted by strcmp, the --reference level moved first -- and rank[code]
 * maps a stored code to that order.  Each (variable, term) pair gets R's
 * code: 1 (treatment contrasts: a column for every level but the first)
 * when the term without the variable is empty or contained in an earlier
 * term, else 2 (a column for every level); without an intercept the first
 * categorical variable of the first term holding one is coded 2.  A term's
 * columns are the product of its variables' columns, the first variable
 * varying fastest, and each is named by joining the variables' names
 * (a categorical one followed by the level) with ':'.
 *
 * Invariants: a term's columns are out[off .. off+n_col); a row has at
 * most one nonzero among them (at most one level of each categorical is
 * on), so a row costs a zero fill of the width plus one product per term.
 * fly_design_row reads only the design: no allocation, no mutable state.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formula/formula_int.h"
#include "util/mem.h"

#define MAX_STACK 64            /* values on a transform's evaluation stack */

typedef enum {                  /* transform operations (postfix) */
  OP_COL, OP_NUM, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_NEG,
  OP_LOG, OP_SQRT, OP_EXP
} op_kind;

typedef struct dop {
  op_kind kind;
  size_t  col;                  /* OP_COL */
  double  num;                  /* OP_NUM */
} dop;

typedef struct dvar {
  size_t  col;                  /* a column's index; a transform's first column read */
  int     cat;                  /* 1: categorical */
  size_t  n_lev;                /* categorical: number of levels */
  size_t *rank;                 /* categorical: code -> position in R's order */
  char  **lev;                  /* categorical: labels in R's order, owned */
  size_t  prog, n_prog;         /* transform: d->op[prog .. prog+n_prog); 0: a column */
  int     in_term;              /* appears in some term */
} dvar;

typedef struct dfac {           /* a variable within a term */
  size_t var;
  int    full;                  /* categorical: 1 all levels (code 2), 0 contrasts */
  size_t stride;                /* columns between its successive levels */
} dfac;

typedef struct dterm {
  size_t off, n_col;            /* its model-matrix columns */
  size_t fac, n_fac;            /* d->fac[fac .. fac+n_fac), in variable order */
} dterm;

struct fly_design {
  size_t   width;
  int      intercept;
  size_t   response;            /* column index; also variable 0 */
  size_t   n_var;
  dvar    *var;
  size_t   n_op;
  dop     *op;
  size_t   n_fac;
  dfac    *fac;
  size_t   n_term;
  dterm   *term;
  char   **name;                /* width names */
  size_t   n_uses;
  size_t  *uses;
  char    *key;
};

/* ---- binding ------------------------------------------------------------- */

static size_t find_col(const fly_fcol *cols, size_t n_cols, const char *name)
{
  size_t j;
  for(j = 0; j < n_cols; j++) if( strcmp(cols[j].name, name) == 0 ) return j;
  return SIZE_MAX;
}

typedef struct lev_code { const char *s; size_t code; } lev_code;

static int cmp_level(const void *a, const void *b)
{
  return strcmp(((const lev_code *)a)->s, ((const lev_code *)b)->s);
}

/* Levels of categorical column j in R's order into v. */
static fly_rc bind_levels(dvar *v, const fly_fcol *cols, size_t j,
                          const fly_design_opts *o, fly_err *err)
{
  const fly_fcol *c = &cols[j];
  lev_code *order = NULL;
  size_t k, r, ref = SIZE_MAX;
  fly_rc rc = FLY_OK;
  v->cat = 1;
  v->n_lev = c->n_levels;
  if( c->n_levels < 2 )
    return fly_fail(err, FLY_RANGE,
                    "formula: the categorical column '%s' has %zu level%s, a model needs 2 or more",
                    c->name, c->n_levels, c->n_levels == 1 ? "" : "s");
  order = fly_alloc_array(c->n_levels, sizeof *order);
  v->rank = fly_alloc_array(c->n_levels, sizeof *v->rank);
  v->lev = fly_alloc_array(c->n_levels, sizeof *v->lev);
  if( !order || !v->rank || !v->lev ){
    rc = fly_fail(err, FLY_NOMEM, "formula: out of memory");
    goto done;
  }
  for(k = 0; k < c->n_levels; k++){
    order[k].s = c->levels[k];
    order[k].code = k;
  }
  qsort(order, c->n_levels, sizeof *order, cmp_level);
  if( o ){
    for(k = 0; k < o->n_ref; k++)
      if( strcmp(o->ref_col[k], c->name) == 0 ) break;
    if( k < o->n_ref ){
      for(r = 0; r < c->n_levels; r++)
        if( strcmp(order[r].s, o->ref_level[k]) == 0 ) ref = r;
      /* unseen levels were refused by check_refs */
      if( ref != SIZE_MAX && ref > 0 ){
        lev_code first = order[ref];
        memmove(order + 1, order, ref * sizeof *order);
        order[0] = first;
      }
    }
  }
  for(r = 0; r < c->n_levels; r++){
    v->rank[order[r].code] = r;
    if( !(v->lev[r] = fly_strdup(order[r].s)) ){
      rc = fly_fail(err, FLY_NOMEM, "formula: out of memory");
      goto done;
    }
  }
done:
  fly_free(order);
  return rc;
}

/* Every --reference names a categorical column and one of its levels. */
static fly_rc check_refs(const fly_fcol *cols, size_t n_cols, const fly_design_opts *o,
                         fly_err *err)
{
  size_t k, j, l;
  if( !o ) return FLY_OK;
  for(k = 0; k < o->n_ref; k++){
    j = find_col(cols, n_cols, o->ref_col[k]);
    if( j == SIZE_MAX )
      return fly_fail(err, FLY_RANGE, "formula: --reference %s=%s: no column '%s'",
                      o->ref_col[k], o->ref_level[k], o->ref_col[k]);
    if( !cols[j].categorical )
      return fly_fail(err, FLY_RANGE,
                      "formula: --reference %s=%s: '%s' is not categorical",
                      o->ref_col[k], o->ref_level[k], o->ref_col[k]);
    for(l = 0; l < cols[j].n_levels; l++)
      if( strcmp(cols[j].levels[l], o->ref_level[k]) == 0 ) break;
    if( l == cols[j].n_levels )
      return fly_fail(err, FLY_RANGE, "formula: --reference %s=%s: '%s' has no level '%s'",
                      o->ref_col[k], o->ref_level[k], o->ref_col[k], o->ref_level[k]);
  }
  return FLY_OK;
}

typedef struct compiler {
  fly_design        *d;
  const fly_formula *f;
  const fly_fcol    *cols;
  size_t             n_cols, cap_op, depth, max_depth;
  const char        *label;     /* the transform, for messages */
  size_t             first_col; /* the first column it reads */
  fly_rc             rc;
  fly_err           *err;
} compiler;

static void emit(compiler *c, op_kind k, size_t col, double num)
{
  fly_design *d = c->d;
  if( c->rc != FLY_OK ) return;
  if( d->n_op == c->cap_op ){
    size_t cap = c->cap_op ? 2 * c->cap_op : 16;
    dop *p = fly_realloc_array(d->op, cap, sizeof *p);
    if( !p ){ c->rc = fly_fail(c->err, FLY_NOMEM, "formula: out of memory"); return; }
    d->op = p;
    c->cap_op = cap;
  }
  d->op[d->n_op].kind = k;
  d->op[d->n_op].col = col;
  d->op[d->n_op].num = num;
  d->n_op++;
  /* stack depth after this operation */
  if( k == OP_COL || k == OP_NUM ){
    if( ++c->depth > c->max_depth ) c->max_depth = c->depth;
  }else if( k != OP_NEG && k != OP_LOG && k != OP_SQRT && k != OP_EXP ){
    c->depth--;
  }
}

/* Postfix code of the arithmetic below node i. */
static void compile(compiler *c, size_t i)
{
  const fnode *n = &c->f->node[i];
  static const op_kind bin[] = {
    [FN_ADD] = OP_ADD, [FN_SUB] = OP_SUB, [FN_MUL] = OP_MUL, [FN_DIV] = OP_DIV,
    [FN_POW] = OP_POW,
  };
  size_t j;
  if( c->rc != FLY_OK ) return;
  switch( n->kind ){
  case FN_NAME:
    j = find_col(c->cols, c->n_cols, n->s);
    if( j == SIZE_MAX ){
      c->rc = fly_fail(c->err, FLY_RANGE, "formula: %s: no column '%s'", c->label, n->s);
      return;
    }
    if( c->cols[j].categorical ){
      c->rc = fly_fail(c->err, FLY_RANGE,
                       "formula: %s: '%s' is categorical, arithmetic needs a numeric column",
                       c->label, n->s);
      return;
    }
    if( c->first_col == SIZE_MAX ) c->first_col = j;
    emit(c, OP_COL, j, 0);
    return;
  case FN_NUM:
    emit(c, OP_NUM, 0, n->num);
    return;
  case FN_CALL:
    compile(c, n->a);
    if( n->s[0] == 'l' )      emit(c, OP_LOG, 0, 0);
    else if( n->s[0] == 's' ) emit(c, OP_SQRT, 0, 0);
    else if( n->s[0] == 'e' ) emit(c, OP_EXP, 0, 0);
    return;                             /* I(): the value itself */
  case FN_PAREN: case FN_POS:
    compile(c, n->a);
    return;
  case FN_NEG:
    compile(c, n->a);
    emit(c, OP_NEG, 0, 0);
    return;
  case FN_ADD: case FN_SUB: case FN_MUL: case FN_DIV: case FN_POW:
    compile(c, n->a);
    compile(c, n->b);
    emit(c, bin[n->kind], 0, 0);
    return;
  default:                              /* ':' and '.' are refused by the parser */
    c->rc = fly_fail(c->err, FLY_MISUSE, "formula: %s: not arithmetic", c->label);
    return;
  }
}

/* R's x^y (R_pow): 1 when x is 1 or y is 0, x*x for y = 2. */
static double r_pow(double x, double y)
{
  if( x == 1.0 || y == 0.0 ) return 1.0;
  if( y == 2.0 ) return x * x;
  return pow(x, y);
}

/* The value of transform v on row raw. */
static double eval(const fly_design *d, const dvar *v, const double *raw)
{
  double st[MAX_STACK];
  size_t sp = 0, k;
  for(k = v->prog; k < v->prog + v->n_prog; k++){
    const dop *o = &d->op[k];
    switch( o->kind ){
    case OP_COL:  st[sp++] = raw[o->col]; break;
    case OP_NUM:  st[sp++] = o->num; break;
    case OP_ADD:  sp--; st[sp-1] += st[sp]; break;
    case OP_SUB:  sp--; st[sp-1] -= st[sp]; break;
    case OP_MUL:  sp--; st[sp-1] *= st[sp]; break;
    case OP_DIV:  sp--; st[sp-1] /= st[sp]; break;
    case OP_POW:  sp--; st[sp-1] = r_pow(st[sp-1], st[sp]); break;
    case OP_NEG:  st[sp-1] = -st[sp-1]; break;
    case OP_LOG:  st[sp-1] = log(st[sp-1]); break;
    case OP_SQRT: st[sp-1] = sqrt(st[sp-1]); break;
    case OP_EXP:  st[sp-1] = exp(st[sp-1]); break;
    }
  }
  return st[0];
}

/* Bind variable k of t to the columns. */
static fly_rc bind_var(fly_design *d, const fly_terms *t, size_t k, const fly_formula *f,
                       const fly_fcol *cols, size_t n_cols, const fly_design_opts *o,
                       size_t *cap_op, fly_err *err)
{
  dvar *v = &d->var[k];
  size_t i = t->node[k], j;
  if( i == FORMULA_NONE || f->node[i].kind == FN_NAME ){
    j = i == FORMULA_NONE ? t->dotcol[k] : find_col(cols, n_cols, f->node[i].s);
    if( j == SIZE_MAX )
      return fly_fail(err, FLY_RANGE, "formula: no column '%s'", f->node[i].s);
    v->col = j;
    return cols[j].categorical ? bind_levels(v, cols, j, o, err) : FLY_OK;
  }else{
    compiler c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.f = f;
    c.cols = cols;
    c.n_cols = n_cols;
    c.cap_op = *cap_op;
    c.label = t->label[k];
    c.first_col = SIZE_MAX;
    c.err = err;
    v->prog = d->n_op;
    compile(&c, i);
    *cap_op = c.cap_op;
    if( c.rc != FLY_OK ) return c.rc;
    v->n_prog = d->n_op - v->prog;
    if( c.first_col == SIZE_MAX )
      return fly_fail(err, FLY_RANGE, "formula: %s reads no column", t->label[k]);
    if( c.max_depth > MAX_STACK )
      return fly_fail(err, FLY_RANGE, "formula: %s: more than %d values pending", t->label[k],
                      MAX_STACK);
    v->col = c.first_col;
    return FLY_OK;
  }
}

/* ---- terms to columns ---------------------------------------------------- */

/* R's TermCode: 1 if term ti without variable v is empty or contained in an
 * earlier term, else 2. */
static int term_code(const fly_terms *t, size_t ti, size_t v)
{
  size_t nw = t->nw, k, e;
  const uint64_t *w = t->bits + ti * nw;
  int empty = 1;
  for(k = 0; k < nw; k++){
    uint64_t x = w[k];
    if( k == v / 64 ) x &= ~((uint64_t)1 << (v % 64));
    if( x ) empty = 0;
  }
  if( empty ) return 1;
  for(e = 0; e < ti; e++){
    const uint64_t *p = t->bits + e * nw;
    int within = 1;
    for(k = 0; k < nw; k++){
      uint64_t x = w[k];
      if( k == v / 64 ) x &= ~((uint64_t)1 << (v % 64));
      if( x & ~p[k] ){ within = 0; break; }
    }
    if( within ) return 1;
  }
  return 2;
}

static size_t fac_levels(const fly_design *d, const dfac *a)
{
  const dvar *v = &d->var[a->var];
  return !v->cat ? 1 : a->full ? v->n_lev : v->n_lev - 1;
}

/* Names of term ti's columns into d->name[off ..]. */
static fly_rc name_term(fly_design *d, const dterm *tm, const fly_terms *t, fly_err *err)
{
  size_t c, k;
  for(c = 0; c < tm->n_col; c++){
    fsbuf b = { 0 };
    for(k = 0; k < tm->n_fac; k++){
      const dfac *a = &d->fac[tm->fac + k];
      const dvar *v = &d->var[a->var];
      if( k ) fsbuf_add(&b, ":", 1);
      fsbuf_puts(&b, t->label[a->var]);
      if( v->cat ){
        size_t l = (c / a->stride) % fac_levels(d, a);
        fsbuf_puts(&b, v->lev[a->full ? l : l + 1]);
      }
    }
    if( b.oom || !b.p ){
      fly_free(b.p);
      return fly_fail(err, FLY_NOMEM, "formula: out of memory");
    }
    d->name[tm->off + c] = b.p;
  }
  return FLY_OK;
}

static int cmp_size(const void *a, const void *b)
{
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

/* The columns every variable reads, ascending, without repeats. */
static fly_rc collect_uses(fly_design *d, fly_err *err)
{
  size_t n = 0, k, m;
  for(k = 0; k < d->n_var; k++) n += d->var[k].n_prog ? d->var[k].n_prog : 1;
  d->uses = fly_alloc_array(n, sizeof *d->uses);
  if( !d->uses ) return fly_fail(err, FLY_NOMEM, "formula: out of memory");
  n = 0;
  for(k = 0; k < d->n_var; k++){
    const dvar *v = &d->var[k];
    size_t p;
    if( !v->n_prog ){ d->uses[n++] = v->col; continue; }
    for(p = v->prog; p < v->prog + v->n_prog; p++)
      if( d->op[p].kind == OP_COL ) d->uses[n++] = d->op[p].col;
  }
  qsort(d->uses, n, sizeof *d->uses, cmp_size);
  for(k = m = 0; k < n; k++)
    if( m == 0 || d->uses[k] != d->uses[m-1] ) d->uses[m++] = d->uses[k];
  d->n_uses = m;
  return FLY_OK;
}

/* "y ~ 1 + x1 + cut + x1:cut | uses y,x1,cut | ref cut=Good" */
static fly_rc make_key(fly_design *d, const fly_terms *t, const fly_fcol *cols,
                       const fly_design_opts *o, fly_err *err)
{
  fsbuf b = { 0 };
  size_t k, i, j;
  fsbuf_puts(&b, t->label[0]);
  fsbuf_puts(&b, d->intercept ? " ~ 1" : " ~ 0");
  for(i = 0; i < d->n_term; i++){
    const dterm *tm = &d->term[i];
    fsbuf_add(&b, " + ", 3);
    for(k = 0; k < tm->n_fac; k++){
      if( k ) fsbuf_add(&b, ":", 1);
      fsbuf_puts(&b, t->label[d->fac[tm->fac + k].var]);
    }
  }
  fsbuf_puts(&b, " | uses ");
  for(k = 0; k < d->n_uses; k++){
    if( k ) fsbuf_add(&b, ",", 1);
    fly_formula_deparse_name(cols[d->uses[k]].name, &b);
  }
  /* the references that change a level order of the design (the first
   * one given for a column, as bind_levels takes it) */
  for(k = 0, j = 0; o && k < d->n_uses; k++){
    const fly_fcol *c = &cols[d->uses[k]];
    for(i = 0; i < o->n_ref; i++)
      if( c->categorical && strcmp(o->ref_col[i], c->name) == 0 ) break;
    if( i == o->n_ref ) continue;
    fsbuf_puts(&b, j++ ? "," : " | ref ");
    fly_formula_deparse_name(c->name, &b);
    fsbuf_add(&b, "=", 1);
    fsbuf_puts(&b, o->ref_level[i]);
  }
  if( b.oom || !b.p ){
    fly_free(b.p);
    return fly_fail(err, FLY_NOMEM, "formula: out of memory");
  }
  d->key = b.p;
  return FLY_OK;
}

fly_rc fly_design_new(const fly_formula *f, const fly_fcol *cols, size_t n_cols,
                      const fly_design_opts *o, fly_design **pd, fly_err *err)
{
  fly_design *d = NULL;
  fly_terms t;
  fly_rc rc;
  size_t resp, k, i, cap_op = 0, width, n_fac;
  int *code = NULL;             /* per term x variable: 0, 1 or 2 */
  memset(&t, 0, sizeof t);
  *pd = NULL;

  resp = find_col(cols, n_cols, fly_formula_response(f));
  if( resp == SIZE_MAX ){
    rc = fly_fail(err, FLY_RANGE, "formula: no column '%s' (the response)",
                  fly_formula_response(f));
    goto done;
  }
  if( (rc = check_refs(cols, n_cols, o, err)) != FLY_OK ) goto done;
  if( (rc = fly_terms_expand(f, cols, n_cols, resp, &t, err)) != FLY_OK ) goto done;

  d = fly_alloc_array(1, sizeof *d);
  if( !d ){ rc = fly_fail(err, FLY_NOMEM, "formula: out of memory"); goto done; }
  d->response = resp;
  d->intercept = t.intercept;
  d->n_var = t.n_var;
  d->var = fly_alloc_array(t.n_var, sizeof *d->var);
  if( !d->var ){ rc = fly_fail(err, FLY_NOMEM, "formula: out of memory"); goto done; }
  for(k = 0; k < t.n_var; k++)
    if( (rc = bind_var(d, &t, k, f, cols, n_cols, o, &cap_op, err)) != FLY_OK ) goto done;
  if( (rc = collect_uses(d, err)) != FLY_OK ) goto done;

  /* R's factors matrix, then the no-intercept rule. */
  code = fly_alloc_array(t.n_term ? t.n_term * t.n_var : 1, sizeof *code);
  if( !code ){ rc = fly_fail(err, FLY_NOMEM, "formula: out of memory"); goto done; }
  n_fac = 0;
  for(i = 0; i < t.n_term; i++)
    for(k = 1; k < t.n_var; k++)
      if( fly_terms_has(&t, i, k) ){
        code[i * t.n_var + k] = term_code(&t, i, k);
        d->var[k].in_term = 1;
        n_fac++;
      }
  if( !d->intercept ){
    for(i = 0; i < t.n_term; i++){
      for(k = 1; k < t.n_var; k++)
        if( d->var[k].cat && code[i * t.n_var + k] ) break;
      if( k < t.n_var ){ code[i * t.n_var + k] = 2; break; }
    }
  }

  d->n_term = t.n_term;
  d->term = fly_alloc_array(t.n_term ? t.n_term : 1, sizeof *d->term);
  d->fac = fly_alloc_array(n_fac ? n_fac : 1, sizeof *d->fac);
  if( !d->term || !d->fac ){ rc = fly_fail(err, FLY_NOMEM, "formula: out of memory"); goto done; }
  width = d->intercept ? 1 : 0;
  for(i = 0; i < t.n_term; i++){
    dterm *tm = &d->term[i];
    size_t ncol = 1;
    tm->off = width;
    tm->fac = d->n_fac;
    for(k = 1; k < t.n_var; k++){
      dfac *a;
      size_t nl;
      if( !code[i * t.n_var + k] ) continue;
      a = &d->fac[d->n_fac++];
      a->var = k;
      a->full = code[i * t.n_var + k] == 2;
      a->stride = ncol;
      nl = fac_levels(d, a);
      if( ncol > FLY_DESIGN_MAX_WIDTH / nl ){ ncol = SIZE_MAX; break; }
      ncol *= nl;
    }
    tm->n_fac = d->n_fac - tm->fac;
    if( ncol == SIZE_MAX || ncol > FLY_DESIGN_MAX_WIDTH - width ){
      rc = fly_fail(err, FLY_RANGE, "formula: more than %zu model-matrix columns",
                    FLY_DESIGN_MAX_WIDTH);
      goto done;
    }
    tm->n_col = ncol;
    width += ncol;
  }
  if( width == 0 ){
    rc = fly_fail(err, FLY_RANGE, "formula: the model has no columns (no intercept, no term)");
    goto done;
  }
  d->width = width;
  d->name = fly_alloc_array(width, sizeof *d->name);
  if( !d->name ){ rc = fly_fail(err, FLY_NOMEM, "formula: out of memory"); goto done; }
  if( d->intercept && !(d->name[0] = fly_strdup("(Intercept)")) ){
    rc = fly_fail(err, FLY_NOMEM, "formula: out of memory");
    goto done;
  }
  for(i = 0; i < d->n_term; i++)
    if( (rc = name_term(d, &d->term[i], &t, err)) != FLY_OK ) goto done;
  rc = make_key(d, &t, cols, o, err);

done:
  fly_free(code);
  fly_terms_clear(&t);
  if( rc != FLY_OK ){
    fly_design_free(d);
    return rc;
  }
  *pd = d;
  return FLY_OK;
}

void fly_design_free(fly_design *d)
{
  size_t k;
  if( !d ) return;
  for(k = 0; d->var && k < d->n_var; k++){
    size_t l;
    for(l = 0; d->var[k].lev && l < d->var[k].n_lev; l++) fly_free(d->var[k].lev[l]);
    fly_free(d->var[k].lev);
    fly_free(d->var[k].rank);
  }
  fly_free(d->var);
  for(k = 0; d->name && k < d->width; k++) fly_free(d->name[k]);
  fly_free(d->name);
  fly_free(d->op);
  fly_free(d->fac);
  fly_free(d->term);
  fly_free(d->uses);
  fly_free(d->key);
  fly_free(d);
}

/* ---- accessors and rows -------------------------------------------------- */

size_t fly_design_width(const fly_design *d){ return d->width; }
const char *fly_design_name(const fly_design *d, size_t j){ return d->name[j]; }
int fly_design_has_intercept(const fly_design *d){ return d->intercept; }
size_t fly_design_response(const fly_design *d){ return d->response; }
const char *fly_design_key(const fly_design *d){ return d->key; }

const size_t *fly_design_uses(const fly_design *d, size_t *n)
{
  *n = d->n_uses;
  return d->uses;
}

/* The code of categorical v on raw, or SIZE_MAX if not one of its levels. */
static size_t level_code(const dvar *v, double x)
{
  if( !(x >= 0) || x >= (double)v->n_lev || x != floor(x) ) return SIZE_MAX;
  return (size_t)x;
}

int fly_design_row(const fly_design *d, const double *raw, double *out, size_t *col)
{
  size_t k, i;
  for(k = 0; k < d->n_uses; k++)
    if( isnan(raw[d->uses[k]]) ){ *col = d->uses[k]; return 1; }
  for(k = 0; k < d->n_var; k++){
    const dvar *v = &d->var[k];
    if( v->cat && level_code(v, raw[v->col]) == SIZE_MAX ){ *col = v->col; return 1; }
    /* a transform in no term is still evaluated, as R's model frame does */
    if( v->n_prog && !v->in_term && !isfinite(eval(d, v, raw)) ){ *col = v->col; return 2; }
  }
  if( d->intercept ) out[0] = 1.0;
  for(i = 0; i < d->n_term; i++){
    const dterm *tm = &d->term[i];
    size_t pos = 0;
    double val = 1.0;
    int zero = 0;
    memset(out + tm->off, 0, tm->n_col * sizeof *out);
    for(k = 0; k < tm->n_fac; k++){
      const dfac *a = &d->fac[tm->fac + k];
      const dvar *v = &d->var[a->var];
      if( v->cat ){
        size_t r = v->rank[level_code(v, raw[v->col])];
        if( a->full ) pos += r * a->stride;
        else if( r == 0 ) zero = 1;
        else pos += (r - 1) * a->stride;
      }else if( v->n_prog ){
        double x = eval(d, v, raw);
        if( !isfinite(x) ){ *col = v->col; return 2; }
        val *= x;
      }else{
        val *= raw[v->col];
      }
    }
    if( !zero ) out[tm->off + pos] = val;
  }
  return 0;
}

double fly_design_y(const fly_design *d, const double *raw)
{
  const dvar *v = &d->var[0];
  size_t c;
  if( !v->cat ) return raw[v->col];
  c = level_code(v, raw[v->col]);
  return c == SIZE_MAX ? NAN : (double)v->rank[c];
}

const char *const *fly_design_response_levels(const fly_design *d, size_t *n)
{
  const dvar *v = &d->var[0];
  *n = v->cat ? v->n_lev : 0;
  return v->cat ? (const char *const *)v->lev : NULL;
}
