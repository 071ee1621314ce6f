/*
 * fuzz_gz.c -- libFuzzer target: the gzip source (io/source_zip.c) on
 * arbitrary bytes, through fuzz_source.h's checks.
 *
 * Input: a .gz file (the magic number put in front when missing).  Without
 * libFuzzer, replay_main.c drives it over a corpus.
 */
#include "fuzz_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_zip_one(data, size, "\x1f\x8b", 2, ".gz", "gzip");
  return 0;
}
