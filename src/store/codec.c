/*
 * codec.c -- the page payload codec: f64/f32 packing, LZ4 block compression
 * with a raw fallback, and the XXH3-64 checksum of the payload as stored.
 *
 * A page of n values is packed to its stored precision (8 or 4 bytes a
 * value, little-endian host order), then LZ4-compressed.  When LZ4 does not
 * make the payload at least 1/8 smaller it is stored raw, so a stored
 * payload is never larger than its raw form and random-looking data (most
 * real-valued features) decodes at memcpy speed.  Whether to try is decided
 * by a probe: a page longer than PROBE_BYTES is stored raw, without
 * compressing the rest, unless LZ4 makes its first PROBE_BYTES 3/4 of raw
 * or smaller.  The decision depends on the page's bytes alone, so the same
 * page is always stored the same way.  The checksum covers the payload as
 * stored, so it can be verified before anything is decoded.
 *
 * Invariants: decode trusts nothing it is given -- an unknown codec, an LZ4
 * stream that fails LZ4_decompress_safe or that decodes to any size other
 * than n*prec, or a raw payload of the wrong size is FLY_CORRUPT, never a
 * crash and never a write past out[n-1].  f64 round trips are bit-exact;
 * f32 round trips give exactly (double)(float)x.
 *
 * Cost: encode of an incompressible page is one LZ4 pass over its first
 * PROBE_BYTES and a memcpy; of a compressible one, the probe and one
 * LZ4_compress_fast pass (its output capped at 7/8 of raw_bytes); decode is one LZ4_decompress_safe (or memcpy) straight into
 * the caller's buffer for f64, plus one widening pass for f32.  No
 * allocation anywhere.
 */
#include "store/codec.h"

#include <limits.h>
#include <lz4.h>
#include <string.h>
#include <xxhash.h>

/* The shared libxxhash is built for baseline x86-64 (SSE2).  On x86-64
 * with GCC or clang a second, inlined copy of XXH3 is compiled for AVX2,
 * which hashes several times faster, and chosen at run time when the CPU
 * and OS support it; XXH3 gives the same value whatever the vector width,
 * and test_codec checks the two against each other.  Every cold page read
 * checksums its whole payload, so this is worth its few lines. */
static uint64_t xxh3_lib(const void *p, size_t n)
{
  return (uint64_t)XXH3_64bits(p, n);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(FLY_NO_XXH3_AVX2)
#define FLY_XXH3_AVX2 1
#include <immintrin.h>
#if defined(__clang__)
#pragma clang attribute push (__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define XXH_INLINE_ALL                 /* renames everything XXH_INLINE_* */
#undef XXH_VECTOR
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>
static uint64_t xxh3_avx2(const void *p, size_t n)
{
  return (uint64_t)XXH3_64bits(p, n);
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

/* Stored pages are little-endian; this build packs by plain memcpy. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "flydb page codec assumes a little-endian host"
#endif
/* LZ4 is kept only when it saves at least raw/2^MIN_SAVING_SHIFT bytes.  A
 * raw page is verified and decoded at memcpy speed; a page that LZ4 shrinks
 * by a few percent (random mantissas: typical real-valued features) would
 * cost an LZ4 pass on every read, a large share of a cold random read, for
 * almost no space. */
#define MIN_SAVING_SHIFT 3
/* The prefix of a page that LZ4 must shrink by raw/2^MIN_SAVING_SHIFT
 * before the whole page is compressed: 1/8 of a default data page (16 KiB
 * SQLite pages), a dozen rows of a 20-column page, so a column pattern
 * that repeats row after row shows in it. */
#define PROBE_BYTES 2048
/* The probe runs at LZ4 acceleration PROBE_ACCELERATION (how fast LZ4
 * skips ahead where it finds no match) and gives up once its output
 * passes 3/4 of the prefix.  A page whose prefix shrinks that much may
 * shrink to half or less (a prefix compresses worse than its page, having
 * less history); its size then decides how many pages share a SQLite
 * leaf, so it is compressed at acceleration 1, where every byte counts.
 * A page whose prefix shrinks by less (typically a few columns of small
 * codes among random mantissas) does not halve: a page sized to a leaf
 * takes a leaf of its own whether LZ4 makes it 5/6 of raw or not, so it
 * is stored raw, which costs nothing to encode and decodes at memcpy
 * speed. */
#define PROBE_ACCELERATION 4

_Static_assert(sizeof(double) == 8 && sizeof(float) == 4,
               "flydb page codec needs IEEE-754 binary64/binary32");

size_t fly_codec_bound(size_t raw_bytes)
{
  /* Raw fallback never exceeds raw_bytes; LZ4 output is only kept when it
   * is smaller, but it needs room to be attempted. */
  if( raw_bytes > (size_t)LZ4_MAX_INPUT_SIZE ) return raw_bytes;
  size_t b = (size_t)LZ4_compressBound((int)raw_bytes);
  return b > raw_bytes ? b : raw_bytes;
}

uint64_t fly_codec_checksum(const void *p, size_t n)
{
#ifdef FLY_XXH3_AVX2
  /* Short inputs take the same scalar path in both; skip the CPU check. */
  if( n >= 1024 && __builtin_cpu_supports("avx2") ) return xxh3_avx2(p, n);
#endif
  return xxh3_lib(p, n);
}

void fly_codec_pack(const double *src, size_t n, int prec, void *dst)
{
  if( n == 0 ) return;
  if( prec == FLY_PREC_F64 ){
    memcpy(dst, src, n * sizeof(double));
    return;
  }
  unsigned char *d = dst;
  for(size_t i = 0; i < n; i++){
    float f = (float)src[i];           /* round to nearest (IEEE default) */
    memcpy(d + i * sizeof f, &f, sizeof f);
  }
}

/* Widen n stored f32 values at src (any alignment) into out. */
static void unpack_f32(const void *src, size_t n, double *out)
{
  const unsigned char *s = src;
  for(size_t i = 0; i < n; i++){
    float f;
    memcpy(&f, s + i * sizeof f, sizeof f);
    out[i] = (double)f;
  }
}

fly_rc fly_codec_encode(const void *raw, size_t raw_bytes, void *dst,
                        size_t dst_cap, int *codec, size_t *out_bytes,
                        fly_err *err)
{
  const void *payload;
  fly_rc rc = fly_codec_encode_in(raw, raw_bytes, dst, dst_cap, codec,
                                  out_bytes, &payload, err);
  if( rc == FLY_OK && payload == raw && raw_bytes > 0 )
    memcpy(dst, raw, raw_bytes);
  return rc;
}

fly_rc fly_codec_encode_in(const void *raw, size_t raw_bytes, void *dst,
                           size_t dst_cap, int *codec, size_t *out_bytes,
                           const void **payload, fly_err *err)
{
  *codec = FLY_CODEC_RAW;
  *out_bytes = 0;
  *payload = dst;
  if( dst_cap < raw_bytes )
    return fly_fail(err, FLY_MISUSE, "page encode: output capacity %zu bytes "
                    "< %zu raw bytes", dst_cap, raw_bytes);
  if( raw_bytes == 0 ) return FLY_OK;

  /* Try LZ4 with room for at most raw_bytes - saving output bytes: it gives
   * up (returns 0) as soon as the result would not be that much smaller.
   * A long page is tried only if its prefix shrinks to 3/4 (dst is free
   * room to probe into: the prefix's capped output fits in raw_bytes). */
  int probe = 0;
  if( raw_bytes > PROBE_BYTES && raw_bytes <= (size_t)LZ4_MAX_INPUT_SIZE )
    probe = LZ4_compress_fast(raw, dst, PROBE_BYTES, PROBE_BYTES / 4 * 3,
                              PROBE_ACCELERATION);
  if( raw_bytes > 1 && raw_bytes <= (size_t)LZ4_MAX_INPUT_SIZE
      && (raw_bytes <= PROBE_BYTES || probe > 0) ){
    size_t saving = raw_bytes >> MIN_SAVING_SHIFT;
    size_t cap = raw_bytes - (saving ? saving : 1);
    if( cap > dst_cap ) cap = dst_cap;
    int c = LZ4_compress_fast(raw, dst, (int)raw_bytes, (int)cap, 1);
    if( c > 0 && (size_t)c < raw_bytes ){
      *codec = FLY_CODEC_LZ4;
      *out_bytes = (size_t)c;
      return FLY_OK;
    }
  }
  *payload = raw;
  *out_bytes = raw_bytes;
  return FLY_OK;
}

fly_rc fly_codec_decode(int codec, const void *src, size_t src_bytes,
                        int prec, size_t n, double *out, void *scratch,
                        fly_err *err)
{
  if( prec != FLY_PREC_F64 && prec != FLY_PREC_F32 )
    return fly_fail(err, FLY_CORRUPT, "page precision %d bytes a value, "
                    "want 4 or 8", prec);
  if( n > SIZE_MAX / sizeof(double) )
    return fly_fail(err, FLY_CORRUPT, "page of %zu values is too large", n);
  size_t want = n * (size_t)prec;

  if( codec == FLY_CODEC_RAW ){
    if( src_bytes != want )
      return fly_fail(err, FLY_CORRUPT, "raw payload of %zu bytes, want %zu "
                      "(%zu values x %d bytes)", src_bytes, want, n, prec);
    if( want == 0 ) return FLY_OK;
    if( prec == FLY_PREC_F64 ) memcpy(out, src, want);
    else unpack_f32(src, n, out);
    return FLY_OK;
  }
  if( codec != FLY_CODEC_LZ4 )
    return fly_fail(err, FLY_CORRUPT, "unknown page codec %d (want 0 raw or "
                    "1 lz4)", codec);

  if( src_bytes == 0 || src_bytes > (size_t)INT_MAX || want > (size_t)INT_MAX )
    return fly_fail(err, FLY_CORRUPT, "lz4 payload of %zu bytes cannot hold "
                    "%zu values x %d bytes", src_bytes, n, prec);
  char one[1];
  char *dst;
  if( want == 0 ) dst = one;                 /* LZ4 wants a real pointer */
  else if( prec == FLY_PREC_F64 ) dst = (char *)out;
  else if( scratch ) dst = scratch;
  else return fly_fail(err, FLY_MISUSE, "page decode: f32 lz4 needs scratch");

  int got = LZ4_decompress_safe(src, dst, (int)src_bytes, (int)want);
  if( got < 0 )
    return fly_fail(err, FLY_CORRUPT, "lz4 payload of %zu bytes is malformed "
                    "(lz4 code %d decoding into %zu bytes)",
                    src_bytes, got, want);
  if( (size_t)got != want )
    return fly_fail(err, FLY_CORRUPT, "lz4 payload decodes to %d bytes, want "
                    "%zu (%zu values x %d bytes)", got, want, n, prec);
  if( prec == FLY_PREC_F32 && want > 0 ) unpack_f32(dst, n, out);
  return FLY_OK;
}
