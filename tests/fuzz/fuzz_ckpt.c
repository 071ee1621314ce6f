/*
 * fuzz_ckpt.c -- libFuzzer target for the checkpoint parser (flymc/ckpt.c),
 * the code that reads chain state back from the database on --resume and in
 * `flydb check`.
 *
 * Input: [1 byte P][1 byte log2 N] then the blob.  Every input must give
 * FLY_OK or FLY_CORRUPT (FLY_NOMEM only for a huge N, which the 1-byte
 * exponent bounds), never a crash; an accepted blob's rows are all read back
 * and must be in range and distinct (the parser's promise).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flymc/ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fly_ckpt_view v;
  fly_err err = {0};
  if( size < 2 ) return 0;
  size_t P = data[0];
  int64_t N = (int64_t)1 << (data[1] % 24);
  fly_rc rc = fly_ckpt_parse(data + 2, size - 2, P, N, &v, &err);
  if( rc != FLY_OK && rc != FLY_CORRUPT ) abort();
  if( rc == FLY_OK ){
    if( v.head.P != P || v.head.B < 0 || v.head.B > N ) abort();
    for(int64_t i = 0; i < v.head.B; i++){
      int64_t row;
      double gap;
      fly_ckpt_row(&v, i, &row, &gap);
      if( row < 0 || row >= N ) abort();
    }
  }
  return 0;
}
