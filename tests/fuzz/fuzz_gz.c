/*
 * fuzz_gz.c -- libFuzzer target: the gzip source (io/source_zip.c) on
 * arbitrary bytes, through fuzz_source.h's checks.
 *
 * Input: a .gz file; when it does not start with the gzip magic number,
 * the magic is put in front, so every input reaches the decoder (and not
 * the plain-CSV path).  Without libFuzzer, replay_main.c drives it over a
 * corpus.
 */
#include "fuzz_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char magic[] = "\x1f\x8b";
  const size_t m = 2;
  uint8_t *buf;

  if( size >= m && memcmp(data, magic, m) == 0 ){
    fuzz_source_one(data, size, ".gz", "gzip");
    return 0;
  }
  buf = malloc(size + m);
  CHECK(buf);
  memcpy(buf, magic, m);
  if( size ) memcpy(buf + m, data, size);
  fuzz_source_one(buf, size + m, ".gz", "gzip");
  free(buf);
  return 0;
}
