/*
 * sketch.h -- a fixed 15 bytes a row that bound how far each row's linear
 * predictor has moved from the MAP: the second stage of gibbs thinning.
 *
 * The bucket bound (buckets.h) must hold for every row of a bucket and every
 * direction of theta - theta_map, so it uses Cauchy-Schwarz,
 * |x'd| <= ||x||_P ||d||_{P^-1}, which overstates a typical |x'd| by about
 * sqrt(D): at D = 21 the thinning reads ~29 rows for each row that turns
 * bright.  A sketch keeps, per row, the whitened features y = L^-1 x
 * (L L' = key_prec = P^-1) quantised to 5 bits: k = min(D, 21) coordinates
 * q_j with one scale s = 2^(e/8) (|y_j - q_j s| <= s/2), and an upper bound
 * E on the norm of the error vector (y_j - q_j s for j < k, then the D - k
 * coordinates not kept), as a multiple of s.  With w = L'd (so x'd = y'w and ||w|| = the
 * thinning radius r), the error e'w is at most (s/2) sum_{j<k} |w_j| +
 * E ||w_{k..D}|| (coordinate by coordinate) and at most E ||w||
 * (Cauchy-Schwarz), so
 *   |x'd| <= rho = |sum_j q_j s w_j| + min of those two,
 * in memory and in O(k) per candidate.  A bucket's candidate is then kept
 * with probability p_hat / pbar (p_hat from rho, fly_model_gap_upper_rho),
 * and only kept candidates are read: exact, because p_n <= p_hat.
 *
 * Softmax's bound sees th through K centred class rows d_k (model.h,
 * thin->dirs) and needs sum_k (x'd_k)^2 <= rho^2: the same code gives one
 * rho_k per d_k, and rho = sqrt(sum_k rho_k^2); the coordinates are those
 * of key_prec (D x D) for every model.
 *
 * Memory: FLY_SKETCH_BYTES a row whatever D and K (docs/design.md §13:
 * tens of bytes a row, independent of D), plus D^2 doubles.  Built by one
 * sequential scan of the data pages (which threads may share); shared
 * read-only by the chains.
 */
#ifndef FLY_SKETCH_H
#define FLY_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "store/pages.h"
#include "util/err.h"

#define FLY_SKETCH_DIMS  21   /* coordinates kept, 5 bits each */
#define FLY_SKETCH_BYTES 15   /* 105 bits of coordinates, 7 of error norm, scale */

typedef struct fly_sketch {
  int64_t  N;
  size_t   D, k;            /* features; coordinates kept, min(D, 21) */
  size_t   nd;              /* directions: 1, or K with thin->dirs */
  double  *L;               /* D x D row-major lower (the caller's, copied) */
  uint8_t *code;            /* slot i's code at code + i * stride (slot = row as filled) */
  size_t   stride;          /* FLY_SKETCH_BYTES for its own codes */
  int      own;             /* code allocated here (else the caller's records) */
  double   step[256];       /* scale code c -> 2^((c - 128)/8); 255 unused */
  double   inv[256];        /* 1 / step[c] */
  double   rel[128];        /* error code c -> E / s = 2^((c - 32)/8); 0 unused */
  int64_t  n_none;          /* rows whose sketch says nothing (rho = inf) */
  int64_t  page_rows, n_pages;  /* the data pages' shape */
} fly_sketch;

/* Whether the model can use a sketch (its parameters are one D-vector, or
 * it has thin->dirs). */
int    fly_sketch_fits(const fly_model *m);

/* Sketch every row of the data pages (features: the first m->D values of
 * each row) in the coordinates of L: D x D, row-major, lower triangular
 * with a non-zero diagonal (fly_bounds.chol_key, the Cholesky factor of the
 * thinning metric key_prec).  L is copied. */
fly_rc fly_sketch_build(fly_pages *data, const fly_model *m,
                        const double *L, fly_sketch *s, fly_err *err);

/* The same in parts: fly_sketch_init allocates the sketches of the data
 * pages shaped `in` (slot n for row n); fly_sketch_fill fills them all. */
fly_rc fly_sketch_init(const fly_pages_info *in, const fly_model *m,
                       const double *L, fly_sketch *s, fly_err *err);
fly_rc fly_sketch_fill(fly_pages *data, fly_sketch *s, fly_err *err);

/* Encode rows row0 .. row0 + n (whole pages: row0 a multiple of page_rows,
 * and the end too unless it is N) into out + i * FLY_SKETCH_BYTES for row
 * row0 + i, or into their slots (row0 .. row0 + n) with out NULL.  Threads
 * may fill disjoint rows at once, each with a handle of its own on the
 * pages (its own connection); n_none is added to atomically. */
fly_rc fly_sketch_fill_rows(fly_pages *data, fly_sketch *s, int64_t row0, int64_t n,
                            uint8_t *out, fly_err *err);

/* fly_sketch_init for codes in the caller's memory: slot i's code is at
 * base + i * stride (FLY_SKETCH_BYTES of it: the tails of the bucket
 * index's records, buckets.h: flymc/index.c encodes a chunk of rows with
 * fly_sketch_fill_rows and fly_buckets_place copies each code to its
 * row's position).  fly_sketch_free leaves base alone. */
fly_rc fly_sketch_init_placed(const fly_pages_info *in, const fly_model *m,
                              const double *L, uint8_t *base, size_t stride,
                              fly_sketch *s, fly_err *err);

/* th - th_map in the sketches' coordinates, once per z step: for each of
 * the nd directions d_k (th - th_map, or thin->dirs) w_k = L'd_k. */
typedef struct fly_sketch_at {
  size_t  nd;
  double *d;        /* nd x D: the directions */
  double *w;        /* nd x D: w_k */
  double *w1;       /* nd: sum_{j<k} |w_kj| */
  double *wperp;    /* nd: ||(w_kj)_{j >= k}|| */
  double *wnorm;    /* nd: ||w_k|| */
} fly_sketch_at;

/* Allocate at for s (one block); fly_sketch_at_free releases it. */
fly_rc fly_sketch_at_init(const fly_sketch *s, fly_sketch_at *at, fly_err *err);
void   fly_sketch_at_free(fly_sketch_at *at);

/* Fill at for th (m: the model s was built for). */
void   fly_sketch_prep(const fly_sketch *s, const fly_model *m, const double *th,
                       const double *th_map, fly_sketch_at *at);

/* rho >= sqrt(sum_k (x'd_k)^2) (one direction: |x'(th - th_map)|) for the
 * row x whose code is in slot `slot` (its row, or its position in the
 * bucket index when placed) and the th given to fly_sketch_prep (+inf if
 * the row's sketch says nothing). */
double fly_sketch_rho(const fly_sketch *s, int64_t slot, const fly_sketch_at *at);

/* What slot's code says, for tests and tools (the hot path is
 * fly_sketch_rho): q[0..k) the coordinates, *sc the scale and *E the error
 * norm; 0 (and q, sc, E untouched) if the row has no sketch, else 1. */
int    fly_sketch_decode(const fly_sketch *s, int64_t slot, int q[FLY_SKETCH_DIMS],
                         double *sc, double *E);

void   fly_sketch_free(fly_sketch *s);

#endif
