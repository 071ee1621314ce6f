/*
 * sketch.h -- a fixed 13 bytes a row that bound how far each row's linear
 * predictor has moved from the MAP: the second stage of gibbs thinning.
 *
 * The bucket bound (buckets.h) must hold for every row of a bucket and every
 * direction of theta - theta_map, so it uses Cauchy-Schwarz,
 * |x'd| <= ||x||_P ||d||_{P^-1}, which overstates a typical |x'd| by about
 * sqrt(D): at D = 21 the thinning reads ~29 rows for each row that turns
 * bright.  A sketch keeps, per row, the whitened features y = L^-1 x
 * (L L' = key_prec = P^-1) quantised to 4 bits: k = min(D, 22) coordinates
 * q_j with one scale s = 2^(e/8) (|y_j - q_j s| <= s/2), and an upper bound
 * E on the norm of the error vector (y_j - q_j s for j < k, then the D - k
 * coordinates not kept).  With w = L'd (so x'd = y'w and ||w|| = the
 * thinning radius r), the error e'w is at most (s/2) sum_{j<k} |w_j| +
 * E ||w_{k..D}|| (coordinate by coordinate) and at most E ||w||
 * (Cauchy-Schwarz), so
 *   |x'd| <= rho = |sum_j q_j s w_j| + min of those two,
 * in memory and in O(k) per candidate.  A bucket's candidate is then kept
 * with probability p_hat / pbar (p_hat from rho, fly_model_gap_upper_rho),
 * and only kept candidates are read: exact, because p_n <= p_hat.
 *
 * Memory: FLY_SKETCH_BYTES a row whatever D (DESIGN.md section 4: tens of
 * bytes a row, independent of D), plus D^2 doubles.  Only for models whose
 * parameters are one D-vector (logistic, robust): softmax's K class rows
 * would need K w's and K-fold rho.  Built by one sequential scan of the data
 * pages; shared read-only by the chains.
 */
#ifndef FLY_SKETCH_H
#define FLY_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "store/pages.h"
#include "util/err.h"

#define FLY_SKETCH_DIMS  22   /* coordinates kept, 4 bits each */
#define FLY_SKETCH_BYTES 13   /* 11 bytes of coordinates, scale, error norm */

typedef struct fly_sketch {
  int64_t  N;
  size_t   D, k;            /* features; coordinates kept, min(D, 22) */
  double  *L;               /* D x D row-major lower (the caller's, copied) */
  uint8_t *code;            /* N * FLY_SKETCH_BYTES */
  double   step[256];       /* code c -> 2^((c - 128)/8); 255 unused */
  double   inv[256];        /* 1 / step[c] */
  int64_t  n_none;          /* rows whose sketch says nothing (rho = inf) */
} fly_sketch;

/* Whether the model can use a sketch (its parameters are one D-vector). */
int    fly_sketch_fits(const fly_model *m);

/* Sketch every row of the data pages (features: the first m->D values of
 * each row) in the coordinates of L: D x D, row-major, lower triangular
 * with a non-zero diagonal (fly_bounds.chol_prec, the Cholesky factor of the
 * Laplace precision, which is key_prec for these models).  L is copied. */
fly_rc fly_sketch_build(fly_pages *data, const fly_model *m,
                        const double *L, fly_sketch *s, fly_err *err);

/* theta - theta_map in the sketches' coordinates, once per z step. */
typedef struct fly_sketch_at {
  double *w;        /* the caller's D + 1 doubles: L'(th - th_map), then 0 */
  double  w1;       /* sum_{j<k} |w_j| */
  double  wperp;    /* ||w_{k..D}|| */
  double  wnorm;    /* ||w|| (the thinning radius r) */
} fly_sketch_at;

/* Fill at (at->w set by the caller) for th. */
void   fly_sketch_prep(const fly_sketch *s, const double *th,
                       const double *th_map, fly_sketch_at *at);

/* rho >= |x_row'(th - th_map)| for the th given to fly_sketch_prep
 * (+inf if the row's sketch says nothing). */
double fly_sketch_rho(const fly_sketch *s, int64_t row, const fly_sketch_at *at);

/* Start loading row's code into the CPU cache (a batch of candidates
 * overlaps their memory latencies; the codes of a big store are random
 * accesses into N * 13 bytes). */
static inline void fly_sketch_prefetch(const fly_sketch *s, int64_t row)
{
  __builtin_prefetch(s->code + (size_t)row * FLY_SKETCH_BYTES);
}

void   fly_sketch_free(fly_sketch *s);

#endif
