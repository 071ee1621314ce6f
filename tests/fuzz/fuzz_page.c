/*
 * fuzz_page.c -- the page decoder on arbitrary bytes.
 *
 * Input: [1 byte codec][1 byte shape][payload...].  The codec byte is passed
 * through unchanged (0 raw, 1 lz4, anything else must be refused).  Shape
 * bit 0 picks the precision (0: f64, 1: f32); bits 1..7 pick the value count
 * n: 0 means "what the payload holds if raw" (payload/prec), 1..63 mean
 * n = k, 64..127 mean n = (k-63)*512 so large pages are reached too.  The
 * output buffer has exactly n doubles, so AddressSanitizer sees any overrun.
 *
 * Properties: fly_codec_decode returns only FLY_OK or FLY_CORRUPT, and on
 * FLY_OK an f64 page re-encodes and decodes to the same bits; the payload's
 * checksum (AVX2 XXH3 where available) equals libxxhash's XXH3_64bits.  Built with
 * -fsanitize=fuzzer it is a libFuzzer target; otherwise a replay main calls
 * LLVMFuzzerTestOneInput on each corpus file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if( size < 2 ) return 0;
  int codec = data[0];
  int prec = (data[1] & 1) ? FLY_PREC_F32 : FLY_PREC_F64;
  unsigned k = data[1] >> 1;
  const uint8_t *src = data + 2;
  size_t nb = size - 2;
  size_t n = k == 0 ? nb / (size_t)prec : k < 64 ? k : (size_t)(k - 63) * 512;

  if( fly_codec_checksum(src, nb) != (uint64_t)XXH3_64bits(src, nb) ) abort();

  double *out = malloc((n ? n : 1) * sizeof *out);
  void *scratch = malloc(n ? n * (size_t)prec : 1);
  fly_err err = {0};
  if( !out || !scratch ) abort();

  fly_rc rc = fly_codec_decode(codec, src, nb, prec, n, out, scratch, &err);
  if( rc != FLY_OK && rc != FLY_CORRUPT ) abort();
  if( rc == FLY_CORRUPT && err.msg[0] == 0 ) abort();   /* must explain */

  if( rc == FLY_OK && prec == FLY_PREC_F64 && n > 0 ){
    size_t raw = n * sizeof(double), cap = fly_codec_bound(raw), eb = 0;
    unsigned char *enc = malloc(cap);
    double *back = malloc(raw);
    int c2 = -1;
    if( !enc || !back ) abort();
    if( fly_codec_encode(out, raw, enc, cap, &c2, &eb, &err) != FLY_OK ) abort();
    if( eb > raw ) abort();
    if( fly_codec_decode(c2, enc, eb, prec, n, back, NULL, &err) != FLY_OK ) abort();
    if( memcmp(out, back, raw) != 0 ) abort();
    free(enc);
    free(back);
  }
  free(out);
  free(scratch);
  return 0;
}
