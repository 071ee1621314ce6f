/*
 * version.c -- run-time library versions (see version.h).
 */
#include "util/version.h"

#include <stdio.h>

#include <cblas.h>
#include <lz4.h>
#include <sqlite3.h>
#include <xxhash.h>

void fly_versions_get(fly_versions *v)
{
  unsigned x = XXH_versionNumber();   /* major*10000 + minor*100 + release */
  v->sqlite = sqlite3_libversion();
  v->lz4 = LZ4_versionString();
  snprintf(v->xxhash, sizeof v->xxhash, "%u.%u.%u", x / 10000, x / 100 % 100, x % 100);
  v->blas_config = openblas_get_config();
  v->blas_core = openblas_get_corename();
}
