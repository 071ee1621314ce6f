/*
 * test_codec.c -- the page codec: exact f64 and rounded f32 round trips,
 * LZ4 chosen for compressible pages and raw for incompressible ones (and
 * for pages whose first 2 KiB does not compress), the
 * empty page, the XXH3-64 checksum, and FLY_CORRUPT (never a crash, never a
 * write past the output) for every kind of bad payload.
 *
 * Output buffers are malloc'd at their exact size so AddressSanitizer
 * catches any write beyond them.
 */
#include "store/codec.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tap.h"

static uint64_t sm64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Encode n values at precision prec, decode, and return the codec used
 * (-1 on failure); *stored gets the payload size. */
static int round_trip(const double *x, size_t n, int prec, double *y,
                      size_t *stored)
{
  size_t raw = n * (size_t)prec;
  unsigned char *packed = malloc(raw + 1);
  size_t cap = fly_codec_bound(raw);
  unsigned char *enc = malloc(cap + 1);
  unsigned char *scratch = malloc(raw + 1);
  int codec = -1;
  fly_err err = {0};
  if( !packed || !enc || !scratch ) goto done;
  fly_codec_pack(x, n, prec, packed);
  if( fly_codec_encode(packed, raw, enc, cap, &codec, stored, &err) ){
    codec = -1;
    goto done;
  }
  if( fly_codec_decode(codec, enc, *stored, prec, n, y, scratch, &err) )
    codec = -1;
done:
  free(packed);
  free(enc);
  free(scratch);
  return codec;
}

static void test_f64_f32(void)
{
  enum { N = 4096 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  uint64_t s = 42;
  size_t stored = 0;
  for(size_t i = 0; i < N; i++){
    uint64_t u = sm64(&s);
    x[i] = ((double)(u >> 11) / 9007199254740992.0 - 0.5) * 1e3;
  }
  x[0] = 0.0; x[1] = -0.0; x[2] = INFINITY; x[3] = -INFINITY;
  x[4] = NAN; x[5] = 5e-324; x[6] = 1.7976931348623157e308; x[7] = 0.1;

  int c = round_trip(x, N, FLY_PREC_F64, y, &stored);
  TAP_OK(c >= 0 && memcmp(x, y, N * sizeof *x) == 0,
         "f64 round trip is bit-exact (specials included), codec %d", c);

  c = round_trip(x, N, FLY_PREC_F32, y, &stored);
  int ok = c >= 0;
  for(size_t i = 0; ok && i < N; i++){
    double want = (double)(float)x[i];
    ok = isnan(want) ? isnan(y[i]) : y[i] == want && signbit(y[i]) == signbit(want);
  }
  TAP_OK(ok, "f32 round trip equals (double)(float)x for every value");
  TAP_OK(y[7] != 0.1 && y[7] == (double)0.1f, "f32 really rounds (0.1 -> %.17g)",
         y[7]);
  free(x);
  free(y);
}

static void test_choice(void)
{
  enum { N = 8192 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  uint64_t s = 7;
  size_t stored = 0;
  int c;

  memset(x, 0, N * sizeof *x);
  c = round_trip(x, N, FLY_PREC_F64, y, &stored);
  TAP_OK(c == FLY_CODEC_LZ4 && stored < N * 8 / 50 && memcmp(x, y, N * 8) == 0,
         "zeros: lz4 chosen, %zu of %d bytes, exact", stored, N * 8);

  for(size_t i = 0; i < N; i++) x[i] = 3.25;
  c = round_trip(x, N, FLY_PREC_F32, y, &stored);
  int ok = 1;
  for(size_t i = 0; i < N; i++) ok &= y[i] == 3.25;
  TAP_OK(c == FLY_CODEC_LZ4 && stored < N * 4 / 50 && ok,
         "constant f32: lz4 chosen, %zu of %d bytes, exact", stored, N * 4);

  for(size_t i = 0; i < N; i++){
    uint64_t u = sm64(&s);
    memcpy(&x[i], &u, 8);                      /* random bits, NaNs included */
  }
  c = round_trip(x, N, FLY_PREC_F64, y, &stored);
  TAP_OK(c == FLY_CODEC_RAW && stored == N * 8 && memcmp(x, y, N * 8) == 0,
         "random bits: raw fallback chosen (%zu bytes), bit-exact", stored);

  /* rows of intercept, 19 random features, +-1 target: LZ4 saves ~6%,
   * below the 1/8 it must save to be kept */
  for(size_t i = 0; i < N; i++){
    uint64_t u = sm64(&s);
    x[i] = i % 21 == 0 ? 1.0 : i % 21 == 20 ? (u & 1 ? 1.0 : -1.0)
         : (double)(u >> 11) / 9007199254740992.0;
  }
  c = round_trip(x, N, FLY_PREC_F64, y, &stored);
  TAP_OK(c == FLY_CODEC_RAW && memcmp(x, y, N * 8) == 0,
         "marginally compressible rows: stored raw");
  /* half the values constant: LZ4 saves well over 1/8 */
  for(size_t i = 0; i < N; i += 2) x[i] = 2.0;
  c = round_trip(x, N, FLY_PREC_F64, y, &stored);
  TAP_OK(c == FLY_CODEC_LZ4 && stored < N * 8 * 7 / 8 && memcmp(x, y, N * 8) == 0,
         "half-constant rows: lz4 (%zu of %d bytes)", stored, N * 8);

  /* the probe: a random first 2 KiB keeps the page raw however well the
   * rest would compress; a compressible first 2 KiB lets LZ4 try it all */
  for(size_t i = 0; i < N; i++){
    uint64_t u = sm64(&s);
    x[i] = i < 256 ? (double)(u >> 11) / 9007199254740992.0 : 2.0;
  }
  c = round_trip(x, N, FLY_PREC_F64, y, &stored);
  TAP_OK(c == FLY_CODEC_RAW && memcmp(x, y, N * 8) == 0,
         "random first 2 KiB, constant rest: stored raw");
  for(size_t i = 0; i < 256; i++) x[i] = 2.0;
  c = round_trip(x, N, FLY_PREC_F64, y, &stored);
  TAP_OK(c == FLY_CODEC_LZ4 && memcmp(x, y, N * 8) == 0,
         "constant first 2 KiB: lz4 (%zu bytes)", stored);

  /* one value: LZ4 cannot shrink 8 bytes */
  x[0] = 1.0;
  c = round_trip(x, 1, FLY_PREC_F64, y, &stored);
  TAP_OK(c == FLY_CODEC_RAW && stored == 8 && y[0] == 1.0, "single value stored raw");
  free(x);
  free(y);
}

static void test_empty(void)
{
  unsigned char enc[16] = {0};
  double y[1] = { 99 };
  int codec = -1;
  size_t nb = 1;
  fly_err err = {0};
  fly_rc rc = fly_codec_encode(enc, 0, enc, sizeof enc, &codec, &nb, &err);
  TAP_OK(rc == FLY_OK && codec == FLY_CODEC_RAW && nb == 0,
         "empty page encodes to 0 raw bytes");
  rc = fly_codec_decode(FLY_CODEC_RAW, enc, 0, FLY_PREC_F64, 0, y, NULL, &err);
  TAP_OK(rc == FLY_OK && y[0] == 99, "empty raw page decodes to nothing");
  rc = fly_codec_decode(FLY_CODEC_RAW, enc, 0, FLY_PREC_F64, 1, y, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT, "empty payload for 1 value: FLY_CORRUPT (%s)", err.msg);
  TAP_OK(fly_codec_bound(0) >= 1 && fly_codec_bound(1000) >= 1000,
         "bound covers raw size");
  rc = fly_codec_encode(enc, sizeof enc, enc, sizeof enc - 1, &codec, &nb, &err);
  TAP_OK(rc == FLY_MISUSE, "encode into too small a buffer: FLY_MISUSE");
}

static void test_checksum(void)
{
  /* XXH3-64 of the empty input and of "a" (reference values from xxhsum -H3) */
  TAP_OK(fly_codec_checksum("", 0) == 0x2D06800538D394C2ULL,
         "XXH3-64(\"\") = 2d06800538d394c2");
  /* the run-time dispatched XXH3 (AVX2 where available) equals libxxhash's */
  enum { BIG = 1 << 20 };
  unsigned char *r = malloc(BIG + 8);
  uint64_t s = 11;
  int same = 1;
  for(size_t i = 0; i < BIG + 8; i++) r[i] = (unsigned char)sm64(&s);
  for(size_t n = 0; n <= 5000; n++)
    same &= fly_codec_checksum(r + n % 8, n) == XXH3_64bits(r + n % 8, n);
  for(size_t n = BIG - 3; n <= BIG; n++)
    same &= fly_codec_checksum(r + 1, n) == XXH3_64bits(r + 1, n);
  TAP_OK(same, "checksum equals libxxhash XXH3_64bits for 0..5000 bytes and 1 MiB");
  free(r);

  unsigned char b[100];
  memset(b, 0x5a, sizeof b);
  uint64_t c0 = fly_codec_checksum(b, sizeof b);
  b[57] ^= 1;
  TAP_OK(fly_codec_checksum(b, sizeof b) != c0, "one flipped bit changes the checksum");
}

static void test_corrupt(void)
{
  enum { N = 1024 };
  double *x = malloc(N * sizeof *x);
  unsigned char *enc = malloc(fly_codec_bound(N * 8));
  unsigned char scratch[N * 8];
  fly_err err = {0};
  int codec;
  size_t nb;
  fly_rc rc;

  for(size_t i = 0; i < N; i++) x[i] = (double)(i % 17);
  fly_codec_encode(x, N * 8, enc, fly_codec_bound(N * 8), &codec, &nb, &err);
  TAP_OK(codec == FLY_CODEC_LZ4, "fixture compresses (%zu bytes)", nb);

  /* exact-size outputs: ASan catches any overrun */
  double *y = malloc(N * sizeof *y);
  rc = fly_codec_decode(codec, enc, nb, FLY_PREC_F64, N, y, NULL, &err);
  TAP_OK(rc == FLY_OK && memcmp(x, y, N * 8) == 0, "intact lz4 decodes");

  rc = fly_codec_decode(codec, enc, nb - 3, FLY_PREC_F64, N, y, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT, "truncated lz4: FLY_CORRUPT (%s)", err.msg);

  double *small = malloc((N - 1) * sizeof *small);
  rc = fly_codec_decode(codec, enc, nb, FLY_PREC_F64, N - 1, small, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT, "lz4 decoding to more than n values: FLY_CORRUPT (%s)",
         err.msg);
  free(small);

  double *big = malloc((N + 1) * sizeof *big);
  rc = fly_codec_decode(codec, enc, nb, FLY_PREC_F64, N + 1, big, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "decodes to"),
         "lz4 decoding to fewer than n values: FLY_CORRUPT (%s)", err.msg);
  free(big);

  double *y2 = malloc(2 * N * sizeof *y2);
  rc = fly_codec_decode(FLY_CODEC_LZ4, enc, nb, FLY_PREC_F32, N * 2, y2, scratch,
                        &err);
  TAP_OK(rc == FLY_OK, "same bytes as 2N f32 values decode (sizes agree)");
  rc = fly_codec_decode(FLY_CODEC_LZ4, enc, nb, FLY_PREC_F32, N * 2, y2, NULL, &err);
  free(y2);
  TAP_OK(rc == FLY_MISUSE, "f32 lz4 without scratch: FLY_MISUSE");

  rc = fly_codec_decode(7, enc, nb, FLY_PREC_F64, N, y, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "codec 7"),
         "unknown codec: FLY_CORRUPT (%s)", err.msg);
  rc = fly_codec_decode(FLY_CODEC_RAW, enc, nb, FLY_PREC_F64, N, y, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT, "raw payload of the wrong size: FLY_CORRUPT (%s)",
         err.msg);
  rc = fly_codec_decode(FLY_CODEC_LZ4, enc, 0, FLY_PREC_F64, N, y, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT, "empty lz4 payload: FLY_CORRUPT");
  rc = fly_codec_decode(FLY_CODEC_RAW, enc, nb, 3, N, y, NULL, &err);
  TAP_OK(rc == FLY_CORRUPT, "precision 3: FLY_CORRUPT (%s)", err.msg);

  /* random garbage as lz4: never a crash, never FLY_OK with a wrong size */
  uint64_t s = 99;
  int bad = 0;
  for(int t = 0; t < 2000; t++){
    size_t len = 1 + sm64(&s) % 200;
    for(size_t i = 0; i < len; i++) enc[i] = (unsigned char)sm64(&s);
    size_t n = sm64(&s) % 64;
    double *o = malloc((n ? n : 1) * sizeof *o);
    rc = fly_codec_decode(FLY_CODEC_LZ4, enc, len, FLY_PREC_F64, n, o, NULL, &err);
    bad += rc != FLY_OK && rc != FLY_CORRUPT;
    free(o);
  }
  TAP_OK(bad == 0, "2000 random lz4 payloads: only FLY_OK or FLY_CORRUPT");
  free(y);
  free(x);
  free(enc);
}

/* fly_codec_encode_in: the same codec, size and bytes as fly_codec_encode,
 * in dst when LZ4 shrinks the page, and raw itself (no copy) when not. */
static void test_encode_in(void)
{
  enum { N = 1024 };
  double *x = malloc(N * sizeof *x);
  size_t cap = fly_codec_bound(N * 8);
  unsigned char *a = malloc(cap), *b = malloc(cap);
  fly_err err = {0};
  uint64_t s = 99;
  for(int k = 0; k < 2; k++){
    for(size_t i = 0; i < N; i++){
      s = s * 6364136223846793005u + 1442695040888963407u;
      x[i] = k ? (double)(i % 17) : (double)(s >> 11) * 0x1p-53;
    }
    int ca, cb;
    size_t na, nb;
    const void *p = NULL;
    fly_rc ra = fly_codec_encode(x, N * 8, a, cap, &ca, &na, &err);
    fly_rc rb = fly_codec_encode_in(x, N * 8, b, cap, &cb, &nb, &p, &err);
    int where = k ? p == b : p == (const void *)x;
    TAP_OK(ra == FLY_OK && rb == FLY_OK && ca == cb && na == nb && where
           && memcmp(a, p, na) == 0,
           "encode_in, %s page: %s, %zu bytes, %s", k ? "compressible" : "random",
           cb == FLY_CODEC_LZ4 ? "lz4" : "raw", nb,
           k ? "in dst" : "left in place, not copied");
  }
  free(x);
  free(a);
  free(b);
}

int main(void)
{
  test_f64_f32();
  test_choice();
  test_empty();
  test_checksum();
  test_corrupt();
  test_encode_in();
  return tap_done();
}
