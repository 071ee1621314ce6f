/*
 * fuzz_stat.c -- libFuzzer target: the ReadStat source (io/source_stat.c)
 * on arbitrary bytes, through fuzz_source.h's checks.
 *
 * Input: [1 byte format][file...]: the format byte modulo 3 picks Stata
 * (.dta), SPSS (.sav) or SAS (.sas7bdat), the file gets that extension and
 * is parsed by ReadStat twice (the dictionary pass and the thread's rows),
 * both times per read of fuzz_source.h.  Found crashes inside ReadStat
 * itself are reported by the sanitizers like any other.  Without
 * libFuzzer, replay_main.c drives it over a corpus.
 */
#include "fuzz_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const ext[] = { ".dta", ".sav", ".sas7bdat" };
  static const char *const fmt[] = { "dta", "sav", "sas7bdat" };
  int k;

  if( size == 0 ) return 0;
  k = data[0] % 3;
  fuzz_source_one(data + 1, size - 1, ext[k], fmt[k]);
  return 0;
}
