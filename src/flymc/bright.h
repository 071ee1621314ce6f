/*
 * bright.h -- the bright rows in memory: one dense block mirroring the
 * zset's bright prefix.
 *
 * Slot i holds the data row (width doubles), bound parameters (n_xi floats),
 * the model's bound coefficients from them (n_coef doubles, none when the
 * model has no coef(): see model.h) and cached gap (log L - log B at the chain's current theta) of the row at
 * position i of the zset's arr.  brighten appends at slot B; darken moves
 * slot B-1 into the vacated slot, exactly as the zset moves indices, so the
 * block is always the design matrix of the bright rows and the theta step
 * is one BLAS pass over it.  Capacity only grows (doubling), and the
 * zset's room for bright rows grows with it (fly_zset_reserve), so in
 * steady state nothing is allocated.  The zset itself costs 1 bit a row
 * plus about 20-36 bytes a bright row; this block costs
 * 8 W + 4 n_xi + 8 n_coef + 16 bytes a slot.
 */
#ifndef FLY_BRIGHT_H
#define FLY_BRIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "flymc/zset.h"
#include "util/err.h"

typedef struct fly_bright {
  fly_zset *z;        /* owned */
  size_t    W, n_xi;  /* values per data row, bound parameters per row */
  size_t    n_coef;   /* bound coefficients per row (0: none) */
  size_t    cap;      /* slots allocated */
  double   *X;        /* cap x W */
  float    *xi;       /* cap x n_xi */
  double   *coef;     /* cap x n_coef */
  double   *gap;      /* cap: gap at the current theta */
  double   *gap_new;  /* cap: gap at the last evaluated theta */
} fly_bright;

fly_rc fly_bright_init(fly_bright *b, int64_t N, size_t W, size_t n_xi,
                       size_t n_coef, fly_err *err);
void   fly_bright_free(fly_bright *b);

/* Make room for at least n slots (keeps contents). */
fly_rc fly_bright_reserve(fly_bright *b, size_t n, fly_err *err);

/* Row n becomes bright with data x, bound parameters xi, their
 * coefficients coef (n_coef values; NULL when n_coef is 0) and gap. */
fly_rc fly_bright_add(fly_bright *b, int64_t n, const double *x,
                      const float *xi, const double *coef, double gap,
                      fly_err *err);
/* Row n (bright) becomes dark. */
void   fly_bright_remove(fly_bright *b, int64_t n);

static inline int64_t fly_bright_count(const fly_bright *b)
{
  return fly_zset_n_bright(b->z);
}

/* The gaps at the last evaluated theta become current (swap buffers). */
void   fly_bright_accept(fly_bright *b);

#endif
