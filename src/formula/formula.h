/*
 * formula.h -- R model formulas: parsing, terms, and the model matrix of a
 * row.
 *
 * A formula `y ~ x1 + log(x2) + cut + color:clarity` is parsed once
 * (fly_formula_parse: syntax only, no columns), then bound to the columns of
 * a data set (fly_design_new), which expands the terms as R's terms() does
 * and codes them as R's model.matrix() does with the columns read by
 * read.csv(stringsAsFactors = TRUE): treatment contrasts, levels of a
 * categorical column sorted in byte (strcmp) order -- R's order under
 * LC_COLLATE=C -- the first one the reference unless chosen otherwise, full
 * indicator coding where R's "factors" matrix says 2 (a factor whose margin
 * is absent from the formula), column order and names exactly
 * model.matrix's.  fly_design_row then expands one raw row into one row of
 * the model matrix, without allocating.
 *
 * Supported: names and `backquoted names`, `.` (every column but the
 * response), `+`, `-` (drop terms), `:`, `*`, `/` (nesting), `^` on a
 * parenthesised sum, `0`/`1` (`-1`, `+0`: no intercept), the functions
 * log(), sqrt(), exp() and I() whose argument is arithmetic (+ - * / ^,
 * numbers, numeric columns, nested calls).  Deviations from R: the
 * response must be a bare column name; a response that also appears on the
 * right-hand side is an error (R drops it with a warning); a transform
 * undefined on a row (log of a negative value) is reported by
 * fly_design_row, where R's model frame would drop the row with a warning.
 *
 * Knows nothing of SQLite or pages; includes only err.h.
 */
#ifndef FLY_FORMULA_H
#define FLY_FORMULA_H

#include <stddef.h>

#include "util/err.h"

/* One raw column of a data set, as the design sees it.  Borrowed by
 * fly_design_new for the duration of the call only (the design copies what
 * it keeps). */
typedef struct fly_fcol {
  const char        *name;        /* as in the CSV header */
  int                categorical; /* 1: values are level codes 0..n_levels-1 */
  size_t             n_levels;    /* categorical only */
  const char *const *levels;      /* categorical only: labels, index = stored code
                                     (codes are in first-seen order, NOT sorted) */
} fly_fcol;

typedef struct fly_formula fly_formula;   /* a parsed formula (syntax only) */

/* Parse text.  FLY_PARSE "formula:COL: expected ..." (COL: the 1-based byte
 * column of the offending token), e.g. "formula:7: expected a term, found
 * ')'"; FLY_NOMEM.  *pf NULL on failure. */
fly_rc fly_formula_parse(const char *text, fly_formula **pf, fly_err *err);
void   fly_formula_free(fly_formula *f);                 /* NULL: no-op */
/* The column left of ~ (a bare name, backquotes removed); valid until
 * fly_formula_free. */
const char *fly_formula_response(const fly_formula *f);

typedef struct fly_design_opts {
  size_t              n_ref;      /* --reference col=level choices */
  const char *const  *ref_col, *const *ref_level;
} fly_design_opts;

typedef struct fly_design fly_design;     /* a formula bound to columns */

/* Bind f to cols[0..n_cols) with options o (NULL: none).  f and cols are
 * only read during the call.  FLY_RANGE: a name not a column ("formula: no
 * column 'x3'"), a reference column that is not categorical or a reference
 * level not among its levels, a transform or arithmetic of a categorical
 * column, a categorical column with fewer than two levels, the response on
 * the right-hand side, no model-matrix column at all, more than
 * FLY_DESIGN_MAX_WIDTH columns or FLY_DESIGN_MAX_TERMS terms (or an
 * interaction of more than 64 times that many products); FLY_NOMEM.
 * *pd NULL on failure. */
#define FLY_DESIGN_MAX_WIDTH ((size_t)1 << 20)
#define FLY_DESIGN_MAX_TERMS ((size_t)4096)
fly_rc fly_design_new(const fly_formula *f, const fly_fcol *cols, size_t n_cols,
                      const fly_design_opts *o, fly_design **pd, fly_err *err);
void   fly_design_free(fly_design *d);                   /* NULL: no-op */

/* Model-matrix columns, the intercept included. */
size_t      fly_design_width(const fly_design *d);
/* R's model.matrix column name of column j < width: "(Intercept)", "x1",
 * "log(x2)", "I(x^2)", "cutGood", "x1:colorE", "cutGood:colorE",
 * "`odd name`"; valid until fly_design_free. */
const char *fly_design_name(const fly_design *d, size_t j);
/* 1 when the design has an intercept; then column 0 is the intercept. */
int         fly_design_has_intercept(const fly_design *d);
/* Index into cols of the response. */
size_t      fly_design_response(const fly_design *d);
/* The raw columns the design reads (response included, and also columns
 * named only in dropped terms, as R's model frame holds them), ascending,
 * *n of them: a row with a missing value (NaN) in any of them is left out.
 * Valid until fly_design_free. */
const size_t *fly_design_uses(const fly_design *d, size_t *n);

/* Expand one raw row: raw[j] is column j's value (a double; a level code
 * for a categorical column; NaN for missing).  out: fly_design_width
 * values.  Returns 0 and fills out; 1 if a used column is missing, or holds
 * a code that is not one of its levels (its index in *col, out untouched);
 * 2 if a transform is undefined for this row (a NaN or infinite result:
 * log/sqrt of a negative value, log(0), x/0; the first raw column it reads
 * in *col; out unspecified), which the caller reports as an error naming
 * the row.  Never allocates; thread-safe on a shared const design. */
int fly_design_row(const fly_design *d, const double *raw, double *out, size_t *col);

/* The response's value for a model: a numeric column as it is; a
 * categorical response gives its level's index in R's factor order (sorted;
 * the --reference level first when one is chosen for the response). */
double fly_design_y(const fly_design *d, const double *raw);
/* Level labels of a categorical response in that order, *n of them (NULL
 * and *n = 0 for a numeric response); valid until fly_design_free. */
const char *const *fly_design_response_levels(const fly_design *d, size_t *n);

/* A canonical text of the bound design, equal for equal designs (the same
 * response, intercept, terms in order, columns read and references), e.g.
 * "y ~ 1 + x1 + cut + x1:cut | uses y,x1,cut | ref cut=Good": the key under
 * which a materialised design is cached.  Valid until fly_design_free. */
const char *fly_design_key(const fly_design *d);

#endif
