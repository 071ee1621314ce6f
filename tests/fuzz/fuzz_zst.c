/*
 * fuzz_zst.c -- libFuzzer target: the zstd source (io/source_zip.c) on
 * arbitrary bytes, through fuzz_source.h's checks.
 *
 * Input: a .zst file (the magic number put in front when missing).  Without
 * libFuzzer, replay_main.c drives it over a corpus.
 */
#include "fuzz_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_zip_one(data, size, "\x28\xb5\x2f\xfd", 4, ".zst", "zstd");
  return 0;
}
