/*
 * sketch.c -- 5-bit whitened-feature sketches for gibbs thinning (see
 * sketch.h).
 *
 * Code of a row (FLY_SKETCH_BYTES = 15 bytes), read as a little-endian
 * string of bits:
 *   bits 0..104    coordinate j at bits 5j..5j+4, two's complement,
 *                  q_j in [-15, 15];
 *   bits 105..111  error code c (the high 7 bits of byte 13): E = 0 if
 *                  c = 0, else E = s rel[c] = s 2^((c - 32)/8) >= the norm
 *                  of (y_j - q_j s for j < k, y_j for j >= k);
 *   byte 14        scale code e: s = step[e] = 2^((e - 128)/8); 255: no
 *                  sketch.
 * The scale is the smallest step with max_j |y_j| <= 15 s and the norm of
 * the coordinates not kept at most 2048 s (at least step[0]), so rounding
 * y_j / s to the nearest integer is within [-15, 15] and errs by at most
 * s/2, and E / s <= sqrt(2048^2 + k/4) < rel[127] = 2^(95/8) always has a
 * code.  A row whose scale would pass step[254] (|y| above ~7e4 Laplace
 * sds) gets no sketch: its rho is +inf and its bucket bound stands.  The
 * rounding errors are about uniform on [-s/2, s/2], so E ~ s sqrt(k/12)
 * and E ||w|| is typically 30% below (s/2) sum |w_j|.
 *
 * Why 5 bits in 15 bytes, not 4 in 13: with |x'd| known exactly the
 * models' bound keeps about as many candidates as turn bright, and every
 * bit less a coordinate widens rho and keeps more, each extra candidate a
 * random page fetch (the comparison: docs/archive/benchmarks.md, "What
 * the thinning still wastes").  Error code and scale share the two bytes
 * the 21 coordinates leave.
 *
 * Any invertible L makes x'd = (L^-1 x)'(L'd) exact; the bound set's
 * Cholesky factor of key_prec (the thinning metric: the Laplace precision
 * for logistic and robust, the scaled average class block for softmax)
 * makes w about isotropic at the posterior, so no coordinate dominates.
 * Rounding: y = L^-1 x and w = L'd are computed in double (dtrsm, dtrmv) as
 * tune.c computes ||x||_P, and rho is a sum of non-negative terms each to a
 * few ulps; the models' keys carry a relative margin of 1e-3 (KAPPA) for
 * exactly these errors (logistic.c, robust.c, softmax.c).
 *
 * Cost: build O(N D^2) in one sequential scan of the data pages (dtrsm per
 * page), which threads may share in ranges of whole pages;
 * prep O(nd D^2) per z step; rho O(nd k) per candidate, no allocation.
 */
#include "flymc/sketch.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "util/mem.h"

#define NONE 255

int fly_sketch_fits(const fly_model *m)
{
  const fly_model_thin *t = m->type->thin;
  return m->D > 0 && t && (m->type->n_params(m) == m->D || t->dirs);
}

/* frexp's exponent of v >= 0 (v in [2^(e-1), 2^e)): read from the bits
 * of a normal v, frexp's call only for 0 and subnormals. */
static inline int exponent(double v)
{
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  int biased = (int)(b >> 52 & 0x7ff);
  if( biased == 0 ){
    int e;
    (void)frexp(v, &e);
    return e;
  }
  return biased - 1022;
}

/* The smallest code c in [lo, 254] with step[c] >= v, or NONE.  frexp
 * puts v in [2^(e-1), 2^e), i.e. between codes 8(e-1)+128 and 8e+128; a
 * walk of at most 8 steps finds c. */
static int code_up(const fly_sketch *s, double v, int lo)
{
  if( !(v <= s->step[254]) ) return NONE;        /* also NaN */
  int e = exponent(v);
  int c = 8 * (e - 1) + 128;
  if( c >= lo && c >= 1 && c + 8 <= 254 && s->step[c - 1] < v ){
    /* the walk up as a count: step increases, so the answer is c plus
     * the number of the next 8 steps below v (step[c + 8] = 2^e > v) */
    int up = 0;
    for(int i = 0; i < 8; i++) up += s->step[c + i] < v;
    return c + up;
  }
  if( c < lo ) c = lo;
  while( c > lo && s->step[c - 1] >= v ) c--;
  while( c <= 254 && s->step[c] < v ) c++;
  return c <= 254 ? c : NONE;
}

/* The smallest error code c in [1, 127] with st rel[c] >= v (v > 0), the
 * product fly_sketch_rho forms, or 128.  rel[c] = 2^((c - 32)/8): frexp
 * puts v / st in [2^(e-1), 2^e), near code 8(e-1) + 32; the walks settle
 * the rounding of the product in a few steps. */
static int rel_up(const fly_sketch *s, double st, double v)
{
  int e = exponent(v / st);
  int c = 8 * (e - 1) + 32;
  if( c < 1 ) c = 1;
  if( c > 127 ) c = 127;
  while( c > 1 && st * s->rel[c - 1] >= v ) c--;
  while( c <= 127 && !(st * s->rel[c] >= v) ) c++;
  return c;
}

static void no_sketch(uint8_t *out)
{
  memset(out, 0, FLY_SKETCH_BYTES);
  out[14] = NONE;
}

/* A row's code.  It runs for every row when the index is built, a large
 * part of start-up out of core, so it is written for speed: independent
 * partial maxima and sums instead of one dependent chain.  The partial sums round differently from one running sum; E is
 * rounded up to a code and the models' KAPPA margin absorbs the rest (see
 * the file comment). */
static void encode(const fly_sketch *s, const double *y, uint8_t *out)
{
  const size_t k = s->k, D = s->D;
  double m0 = 0, m1 = 0, r0 = 0, r1 = 0, res, r2, mx;
  int q[FLY_SKETCH_DIMS];
  size_t j;
  for(j = 0; j + 1 < k; j += 2){
    double a = fabs(y[j]), b = fabs(y[j + 1]);
    if( a > m0 ) m0 = a;
    if( b > m1 ) m1 = b;
  }
  if( j < k && fabs(y[j]) > m0 ) m0 = fabs(y[j]);
  mx = m0 > m1 ? m0 : m1;
  for(j = k; j < D; j++) r0 += y[j] * y[j];
  res = r0;
  int e = code_up(s, mx / 15.0, 0);
  if( e != NONE && res > 0 ) e = code_up(s, sqrt(res) / 2048.0, e);
  if( e == NONE || !isfinite(mx) || !isfinite(res) ){
    no_sketch(out);
    return;
  }
  /* q_j = floor(y_j / s + 1/2): v = y_j/s + 16.5 is in [1, 32), where
   * truncation is floor.  y_j / s is y_j times 1/s to rounding, which the
   * models' KAPPA margin absorbs like every other rounding in rho. */
  const double inv = s->inv[e], st = s->step[e];
  for(j = 0; j < k; j++){
    double v = y[j] * inv + 16.5;
    q[j] = (int)(v < 1.0 ? 1.0 : v >= 32.0 ? 31.0 : v) - 16;  /* clamp: rounding only */
  }
  for(j = 0; j + 1 < k; j += 2){
    double d0 = y[j] - (double)q[j] * st, d1 = y[j + 1] - (double)q[j + 1] * st;
    r0 += d0 * d0;
    r1 += d1 * d1;
  }
  if( j < k ){
    double d0 = y[j] - (double)q[j] * st;
    r0 += d0 * d0;
  }
  r2 = r0 + r1;
  /* the smallest c >= 1 with st rel[c] >= the error norm: the product
   * fly_sketch_rho forms */
  int c = r2 > 0 ? rel_up(s, st, sqrt(r2)) : 0;
  if( c == 128 ){       /* not reached: E / s < rel[127] (file comment) */
    no_sketch(out);
    return;
  }
  /* the 105 bits of coordinates as two words, bit b of the code at bit
   * b of lo (b < 64) or b - 64 of hi, then stored byte by byte:
   * coordinates 0..11 in lo, 12 across both (bits 60..64), 13.. in hi */
  uint64_t lo = 0, hi = 0;
  const size_t k_lo = k < 12 ? k : 12;
  for(j = 0; j < k_lo; j++) lo |= (uint64_t)((unsigned)q[j] & 31u) << (5 * j);
  if( k > 12 ){
    uint64_t v = (uint64_t)((unsigned)q[12] & 31u);
    lo |= v << 60;
    hi = v >> 4;
    for(j = 13; j < k; j++) hi |= (uint64_t)((unsigned)q[j] & 31u) << (5 * j - 64);
  }
  for(int i = 0; i < 8; i++) out[i] = (uint8_t)(lo >> (8 * i));
  for(int i = 0; i < 5; i++) out[8 + i] = (uint8_t)(hi >> (8 * i));
  out[13] = (uint8_t)((hi >> 40 & 1u) | (unsigned)c << 1);
  out[14] = (uint8_t)e;
}

/* Everything but the codes' memory. */
static fly_rc init_common(const fly_pages_info *in, const fly_model *m,
                          const double *L, fly_sketch *s, fly_err *err)
{
  const size_t D = m->D;
  memset(s, 0, sizeof *s);
  if( !fly_sketch_fits(m) || in->width < D )
    return fly_fail(err, FLY_MISUSE, "sketch: model %s with %zu features of "
                    "%zu-value rows", m->type->name, D, in->width);
  s->N = in->n_rows;
  s->D = D;
  s->nd = m->type->thin->dirs ? m->K : 1;
  s->k = D < FLY_SKETCH_DIMS ? D : FLY_SKETCH_DIMS;
  s->page_rows = in->page_rows;
  s->n_pages = in->n_pages;
  for(int c = 0; c < 256; c++){
    s->step[c] = exp2((double)(c - 128) / 8.0);
    s->inv[c] = 1.0 / s->step[c];
  }
  for(int c = 0; c < 128; c++) s->rel[c] = c ? exp2((double)(c - 32) / 8.0) : 0.0;
  s->L = fly_alloc_array(D * D, sizeof *s->L);
  if( !s->L ) return fly_fail(err, FLY_NOMEM, "sketch metric (%zu x %zu)", D, D);
  memcpy(s->L, L, D * D * sizeof *s->L);
  return FLY_OK;
}

fly_rc fly_sketch_init(const fly_pages_info *in, const fly_model *m,
                       const double *L, fly_sketch *s, fly_err *err)
{
  fly_rc rc = init_common(in, m, L, s, err);
  if( rc ) return rc;
  s->own = 1;
  s->stride = FLY_SKETCH_BYTES;
  s->code = fly_alloc_array(s->N ? (size_t)s->N : 1, FLY_SKETCH_BYTES);
  if( !s->code ){
    fly_sketch_free(s);
    return fly_fail(err, FLY_NOMEM, "sketches of %lld rows", (long long)in->n_rows);
  }
  fly_mem_random_access(s->code, (size_t)s->N * FLY_SKETCH_BYTES);  /* read at random */
  return FLY_OK;
}

fly_rc fly_sketch_init_placed(const fly_pages_info *in, const fly_model *m,
                              const double *L, uint8_t *base, size_t stride,
                              fly_sketch *s, fly_err *err)
{
  if( !base || stride < FLY_SKETCH_BYTES )
    return fly_fail(err, FLY_MISUSE, "sketch: placed codes need memory and a "
                    "stride of at least %d bytes", FLY_SKETCH_BYTES);
  fly_rc rc = init_common(in, m, L, s, err);
  if( rc ) return rc;
  s->code = base;
  s->stride = stride;
  return FLY_OK;
}

/* Rows row0 .. row0 + n_rows of data's pages (whole pages), page by
 * page: each page's features whitened with one dtrsm, then encoded. */
fly_rc fly_sketch_fill_rows(fly_pages *data, fly_sketch *s, int64_t row0, int64_t n_rows,
                            uint8_t *out, fly_err *err)
{
  const fly_pages_info *in = fly_pages_info_of(data);
  const size_t D = s->D, W = in->width;
  const int64_t pr = s->page_rows > 0 ? s->page_rows : 1;
  double *page = NULL, *Y = NULL;
  int64_t n_none = 0;
  fly_rc rc = FLY_OK;

  if( in->n_rows != s->N || in->page_rows != s->page_rows || in->n_pages != s->n_pages )
    return fly_fail(err, FLY_MISUSE, "sketch: pages of %lld rows (%lld a page, %zu "
                    "values a row) for sketches of %lld rows (%lld a page, %zu features)",
                    (long long)in->n_rows, (long long)in->page_rows, in->width,
                    (long long)s->N, (long long)s->page_rows, s->D);
  if( W < D )
    return fly_fail(err, FLY_MISUSE, "sketch: rows of %zu values for sketches of %zu "
                    "features", W, D);
  if( row0 < 0 || n_rows < 0 || row0 % pr || row0 + n_rows > s->N ||
      ((row0 + n_rows) % pr && row0 + n_rows != s->N) )
    return fly_fail(err, FLY_MISUSE, "sketch: rows %lld..%lld are not whole pages of "
                    "%lld rows", (long long)row0, (long long)(row0 + n_rows),
                    (long long)pr);
  page = fly_alloc_array((size_t)pr, W * sizeof *page);
  Y = fly_alloc_array((size_t)pr, D * sizeof *Y);
  if( !page || !Y ){
    rc = fly_fail(err, FLY_NOMEM, "sketch buffers");
    goto done;
  }
  for(int64_t pg = row0 / pr; pg * pr < row0 + n_rows; pg++){
    size_t n = 0;     /* page_rows, or the rest in the last page: fly_pages_open checks */
    int64_t row = pg * pr;
    if( (rc = fly_pages_read_page(data, pg, page, &n, err)) ) goto done;
    for(size_t i = 0; i < n; i++)
      memcpy(Y + i * D, page + i * W, D * sizeof *Y);
    /* Y = X_D L^-T: row i is L^-1 x_i */
    if( n )
      cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                  CblasNonUnit, (int)n, (int)D, 1.0, s->L, (int)D, Y, (int)D);
    for(size_t i = 0; i < n; i++){
      int64_t r = row + (int64_t)i;
      uint8_t *o = out ? out + (size_t)(r - row0) * FLY_SKETCH_BYTES
                       : s->code + (size_t)r * s->stride;
      encode(s, Y + i * D, o);
      if( o[14] == NONE ) n_none++;
    }
  }
done:
  __atomic_fetch_add(&s->n_none, n_none, __ATOMIC_RELAXED);
  fly_free(page);
  fly_free(Y);
  return rc;
}

fly_rc fly_sketch_fill(fly_pages *data, fly_sketch *s, fly_err *err)
{
  return fly_sketch_fill_rows(data, s, 0, s->N, NULL, err);
}

fly_rc fly_sketch_build(fly_pages *data, const fly_model *m,
                        const double *L, fly_sketch *s, fly_err *err)
{
  fly_rc rc = fly_sketch_init(fly_pages_info_of(data), m, L, s, err);
  if( rc == FLY_OK && (rc = fly_sketch_fill(data, s, err)) ) fly_sketch_free(s);
  return rc;
}

fly_rc fly_sketch_at_init(const fly_sketch *s, fly_sketch_at *at, fly_err *err)
{
  size_t nd = s->nd, D = s->D;
  memset(at, 0, sizeof *at);
  at->d = fly_alloc_array(nd * (2 * D + 3), sizeof *at->d);
  if( !at->d ) return fly_fail(err, FLY_NOMEM, "sketch directions (%zu x %zu)", nd, D);
  at->nd = nd;
  at->w = at->d + nd * D;
  at->w1 = at->w + nd * D;
  at->wperp = at->w1 + nd;
  at->wnorm = at->wperp + nd;
  return FLY_OK;
}

void fly_sketch_at_free(fly_sketch_at *at)
{
  if( !at ) return;
  fly_free(at->d);
  memset(at, 0, sizeof *at);
}

void fly_sketch_prep(const fly_sketch *s, const fly_model *m, const double *th,
                     const double *th_map, fly_sketch_at *at)
{
  const size_t D = s->D;
  if( m->type->thin->dirs ) m->type->thin->dirs(m, th, th_map, at->d);
  else for(size_t j = 0; j < D; j++) at->d[j] = th[j] - th_map[j];
  for(size_t q = 0; q < at->nd; q++){
    double *w = at->w + q * D, a = 0, a2 = 0, p = 0;
    memcpy(w, at->d + q * D, D * sizeof *w);
    cblas_dtrmv(CblasRowMajor, CblasLower, CblasTrans, CblasNonUnit, (int)D,
                s->L, (int)D, w, 1);           /* w = L' d */
    for(size_t j = 0; j < s->k; j++){
      a += fabs(w[j]);
      a2 += w[j] * w[j];
    }
    for(size_t j = s->k; j < D; j++) p += w[j] * w[j];
    at->w1[q] = a;
    at->wperp[q] = sqrt(p);
    at->wnorm[q] = sqrt(a2 + p);
  }
}

/* The 8 bytes at p as a little-endian integer (one load where that is
 * the machine's order). */
static inline uint64_t le64(const uint8_t *p)
{
  uint64_t v = 0;
  for(int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Coordinate codes 0..31 -> q in [-16, 15] (two's complement). */
static const double sval[32] = {
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
  -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1
};

/* Slot's code as two words (lo: bytes 0..7, hi: bytes 7..14; coordinate
 * j < 12 at bit 5j of lo, j >= 12 at bit 5j - 56 of hi) with its scale
 * and error norm; 0 if the row has no sketch. */
static int read_code(const fly_sketch *s, int64_t slot, uint64_t *lo, uint64_t *hi,
                     double *sc, double *E)
{
  const uint8_t *o = s->code + (size_t)slot * s->stride;
  if( o[14] == NONE ) return 0;
  *lo = le64(o);
  *hi = le64(o + 7);
  *sc = s->step[o[14]];
  *E = *sc * s->rel[o[13] >> 1];
  return 1;
}

/* rho_q >= |x'd_q| from the row's code (bits lo: bytes 0..7, hi: bytes
 * 7..14; scale sc, error norm E). */
static double rho_dir(const fly_sketch *s, uint64_t lo, uint64_t hi, double sc,
                      double E, const fly_sketch_at *at, size_t q)
{
  const double *w = at->w + q * s->D;
  const size_t k = s->k, k0 = k < 12 ? k : 12;    /* coordinates 0..11 lie in lo */
  double t0 = 0, t1 = 0;
  size_t j = 0;
  for(; j + 1 < k0; j += 2){
    t0 += sval[(lo >> (5 * j)) & 31] * w[j];
    t1 += sval[(lo >> (5 * j + 5)) & 31] * w[j + 1];
  }
  for(; j < k0; j++) t0 += sval[(lo >> (5 * j)) & 31] * w[j];
  for(; j + 1 < k; j += 2){                        /* bit 5j of the code is bit 5j - 56 of hi */
    t0 += sval[(hi >> (5 * j - 56)) & 31] * w[j];
    t1 += sval[(hi >> (5 * j - 51)) & 31] * w[j + 1];
  }
  for(; j < k; j++) t0 += sval[(hi >> (5 * j - 56)) & 31] * w[j];
  double t = t0 + t1;
  double by_coord = 0.5 * sc * at->w1[q] + E * at->wperp[q];
  double by_norm = E * at->wnorm[q];
  return fabs(t) * sc + (by_norm < by_coord ? by_norm : by_coord);
}

double fly_sketch_rho(const fly_sketch *s, int64_t slot, const fly_sketch_at *at)
{
  uint64_t lo, hi;
  double sc, E;
  if( !read_code(s, slot, &lo, &hi, &sc, &E) ) return INFINITY;
  if( at->nd == 1 ) return rho_dir(s, lo, hi, sc, E, at, 0);
  /* the root of a sum of squares to a few ulps: the models' KAPPA margin
   * covers it (softmax.c) */
  double r2 = 0;
  for(size_t q = 0; q < at->nd; q++){
    double r = rho_dir(s, lo, hi, sc, E, at, q);
    r2 += r * r;
  }
  return sqrt(r2);
}

int fly_sketch_decode(const fly_sketch *s, int64_t slot, int q[FLY_SKETCH_DIMS],
                      double *sc, double *E)
{
  uint64_t lo, hi;
  if( !read_code(s, slot, &lo, &hi, sc, E) ) return 0;
  for(size_t j = 0; j < s->k; j++)
    q[j] = (int)sval[(j < 12 ? lo >> (5 * j) : hi >> (5 * j - 56)) & 31];
  return 1;
}

void fly_sketch_free(fly_sketch *s)
{
  if( !s ) return;
  fly_free(s->L);
  if( s->own ) fly_free(s->code);
  memset(s, 0, sizeof *s);
}
