/*
 * fuzz_zst.c -- libFuzzer target: the zstd source (io/source_zip.c) on
 * arbitrary bytes, through fuzz_source.h's checks.
 *
 * Input: a .zst file; when it does not start with the zstd magic number,
 * the magic is put in front, so every input reaches the decoder (and not
 * the plain-CSV path).  Without libFuzzer, replay_main.c drives it over a
 * corpus.
 */
#include "fuzz_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char magic[] = "\x28\xb5\x2f\xfd";
  const size_t m = 4;
  uint8_t *buf;

  if( size >= m && memcmp(data, magic, m) == 0 ){
    fuzz_source_one(data, size, ".zst", "zstd");
    return 0;
  }
  buf = malloc(size + m);
  CHECK(buf);
  memcpy(buf, magic, m);
  if( size ) memcpy(buf + m, data, size);
  fuzz_source_one(buf, size + m, ".zst", "zstd");
  free(buf);
  return 0;
}
