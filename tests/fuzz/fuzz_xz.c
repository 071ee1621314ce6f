/*
 * fuzz_xz.c -- libFuzzer target: the xz source (io/source_zip.c) on
 * arbitrary bytes, through fuzz_source.h's checks.
 *
 * Input: a .xz file (the magic number put in front when missing).  Without
 * libFuzzer, replay_main.c drives it over a corpus.
 */
#include "fuzz_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_zip_one(data, size, "\xfd" "7zXZ\x00", 6, ".xz", "xz");
  return 0;
}
