/*
 * codec.h -- page payloads: LZ4 block compression (raw when it does not
 * shrink) and an XXH3-64 checksum of the payload as stored.
 *
 * Rows are row-major arrays of f64 or f32 values (little-endian host
 * order).  Pages decode to f64 whatever the stored precision.
 */
#ifndef FLY_CODEC_H
#define FLY_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

enum { FLY_CODEC_RAW = 0, FLY_CODEC_LZ4 = 1 };
enum { FLY_PREC_F64 = 8, FLY_PREC_F32 = 4 };  /* bytes per stored value */

/* Largest payload fly_codec_encode can produce for raw_bytes of input. */
size_t   fly_codec_bound(size_t raw_bytes);

/* Checksum of a stored payload (XXH3-64). */
uint64_t fly_codec_checksum(const void *p, size_t n);

/* Convert n doubles to the stored precision into dst (n*prec bytes).
 * f32 rounds to nearest; the caller must use the *stored* values afterwards
 * (decode again) wherever exactness matters. */
void     fly_codec_pack(const double *src, size_t n, int prec, void *dst);

/* Compress raw (raw_bytes) into dst (capacity >= fly_codec_bound(raw_bytes)).
 * Chooses FLY_CODEC_RAW when LZ4 does not make it at least 1/8 smaller (a
 * raw page decodes at memcpy speed), or, for more than 2 KiB, does not make
 * its first 2 KiB 1/8 smaller; the choice depends on raw's bytes alone.
 * Sets *codec and *out_bytes. */
fly_rc   fly_codec_encode(const void *raw, size_t raw_bytes, void *dst,
                          size_t dst_cap, int *codec, size_t *out_bytes,
                          fly_err *err);

/* fly_codec_encode without the copy of a payload stored raw: *payload is
 * dst (LZ4) or raw itself (FLY_CODEC_RAW; dst's bytes are then
 * unspecified). */
fly_rc   fly_codec_encode_in(const void *raw, size_t raw_bytes, void *dst,
                             size_t dst_cap, int *codec, size_t *out_bytes,
                             const void **payload, fly_err *err);

/* Decode a stored payload of n values of precision prec into out (n
 * doubles).  scratch must hold n*prec bytes (may be NULL when prec is
 * f64 and codec is LZ4: decoded straight into out).  FLY_CORRUPT if the
 * codec is unknown, LZ4 fails, or the size differs from n*prec. */
fly_rc   fly_codec_decode(int codec, const void *src, size_t src_bytes,
                          int prec, size_t n, double *out, void *scratch,
                          fly_err *err);

#endif
