/*
 * ckpt.c -- checkpoint layout and validation (see ckpt.h).
 *
 * The parser trusts nothing in the blob: every size is checked against the
 * length before it is used, multiplication cannot overflow (B is bounded by
 * N and the length first), and repeated rows are caught with a bitmap.
 */
#include "flymc/ckpt.h"

#include <math.h>
#include <string.h>

#include "util/mem.h"

#define ROW_BYTES (sizeof(int64_t) + sizeof(double))

size_t fly_ckpt_size(size_t P, size_t klen, int64_t B)
{
  return sizeof(fly_ckpt_head) + P * sizeof(double) + klen + (size_t)B * ROW_BYTES;
}

unsigned char *fly_ckpt_write(void *buf, const fly_ckpt_head *h,
                              const double *theta, unsigned char **rows)
{
  unsigned char *q = buf;
  memcpy(q, h, sizeof *h);
  q += sizeof *h;
  memcpy(q, theta, h->P * sizeof(double));
  q += h->P * sizeof(double);
  *rows = q + h->klen;
  return q;
}

void fly_ckpt_put_row(unsigned char *rows, int64_t i, int64_t row, double gap)
{
  unsigned char *q = rows + (size_t)i * ROW_BYTES;
  memcpy(q, &row, sizeof row);
  memcpy(q + sizeof row, &gap, sizeof gap);
}

void fly_ckpt_row(const fly_ckpt_view *v, int64_t i, int64_t *row, double *gap)
{
  const unsigned char *q = v->rows + (size_t)i * ROW_BYTES;
  memcpy(row, q, sizeof *row);
  memcpy(gap, q + sizeof *row, sizeof *gap);
}

fly_rc fly_ckpt_parse(const void *blob, size_t len, size_t P, int64_t N,
                      fly_ckpt_view *v, fly_err *err)
{
  const unsigned char *q = blob;
  fly_ckpt_head h;
  memset(v, 0, sizeof *v);
  if( !blob || len < sizeof h )
    return fly_fail(err, FLY_CORRUPT, "checkpoint of %zu bytes is shorter than its "
                    "header (%zu)", len, sizeof h);
  memcpy(&h, q, sizeof h);
  if( h.magic != FLY_CKPT_MAGIC || h.version != FLY_CKPT_VERSION )
    return fly_fail(err, FLY_CORRUPT, "checkpoint has magic %08x version %u, "
                    "expected %08x version %u", h.magic, h.version,
                    FLY_CKPT_MAGIC, FLY_CKPT_VERSION);
  if( h.P != P )
    return fly_fail(err, FLY_CORRUPT, "checkpoint has %u parameters, the run %zu",
                    h.P, P);
  size_t rest = len - sizeof h;
  if( rest < P * sizeof(double) || h.klen > rest - P * sizeof(double) )
    return fly_fail(err, FLY_CORRUPT, "checkpoint of %zu bytes cannot hold %zu "
                    "parameters and %llu bytes of kernel state", len, P,
                    (unsigned long long)h.klen);
  rest -= P * sizeof(double) + (size_t)h.klen;
  if( h.B < 0 || h.B > N || rest != (size_t)h.B * ROW_BYTES )
    return fly_fail(err, FLY_CORRUPT, "checkpoint: %zu bytes left for %lld bright rows "
                    "of %lld", rest, (long long)h.B, (long long)N);
  if( !(h.rng[0] | h.rng[1] | h.rng[2] | h.rng[3]) )
    return fly_fail(err, FLY_CORRUPT, "checkpoint: RNG state is all zero");
  v->head = h;
  v->theta = q + sizeof h;
  v->kstate = v->theta + P * sizeof(double);
  v->rows = v->kstate + h.klen;
  for(size_t i = 0; i < P; i++){
    double t;
    memcpy(&t, v->theta + i * sizeof t, sizeof t);
    if( !isfinite(t) )
      return fly_fail(err, FLY_CORRUPT, "checkpoint: parameter %zu is %g", i + 1, t);
  }
  if( h.B > 0 ){
    size_t words = (size_t)(N / 64 + 1);
    uint64_t *seen = fly_alloc_array(words, sizeof *seen);
    if( !seen ) return fly_fail(err, FLY_NOMEM, "checkpoint: bitmap of %lld rows",
                                (long long)N);
    fly_rc rc = FLY_OK;
    for(int64_t i = 0; i < h.B && rc == FLY_OK; i++){
      int64_t row;
      double gap;
      fly_ckpt_row(v, i, &row, &gap);
      if( row < 0 || row >= N )
        rc = fly_fail(err, FLY_CORRUPT, "checkpoint: bright row %lld is out of range "
                      "[0, %lld)", (long long)row, (long long)N);
      else if( seen[row / 64] >> (row % 64) & 1 )
        rc = fly_fail(err, FLY_CORRUPT, "checkpoint: bright row %lld appears twice",
                      (long long)row);
      else if( isnan(gap) )
        rc = fly_fail(err, FLY_CORRUPT, "checkpoint: the gap of bright row %lld is NaN",
                      (long long)row);
      else seen[row / 64] |= UINT64_C(1) << (row % 64);
    }
    fly_free(seen);
    return rc;
  }
  return FLY_OK;
}
