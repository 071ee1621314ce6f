/*
 * fuzz_xz.c -- libFuzzer target: the xz source (io/source_zip.c) on
 * arbitrary bytes, through fuzz_source.h's checks.
 *
 * Input: a .xz file; when it does not start with the xz magic number,
 * the magic is put in front, so every input reaches the decoder (and not
 * the plain-CSV path).  Without libFuzzer, replay_main.c drives it over a
 * corpus.
 */
#include "fuzz_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char magic[] = "\xfd" "7zXZ\x00";
  const size_t m = 6;
  uint8_t *buf;

  if( size >= m && memcmp(data, magic, m) == 0 ){
    fuzz_source_one(data, size, ".xz", "xz");
    return 0;
  }
  buf = malloc(size + m);
  CHECK(buf);
  memcpy(buf, magic, m);
  if( size ) memcpy(buf + m, data, size);
  fuzz_source_one(buf, size + m, ".xz", "xz");
  free(buf);
  return 0;
}
