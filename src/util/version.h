/*
 * version.h -- the versions of the libraries this process actually loaded
 * (not the headers it was compiled with): SQLite, LZ4, xxHash and OpenBLAS
 * with the CPU kernels it picked.  They decide whether two machines give
 * bit-identical draws, so `flydb --version` and bug reports print them.
 * Thread-safe; the strings are static and never freed.
 */
#ifndef FLY_VERSION_H
#define FLY_VERSION_H

typedef struct fly_versions {
  const char *sqlite;        /* "3.40.1" */
  const char *lz4;           /* "1.9.4" */
  char        xxhash[16];    /* "0.8.1" */
  const char *blas_config;   /* OpenBLAS's build configuration */
  const char *blas_core;     /* the CPU kernels it chose, e.g. "Zen" */
} fly_versions;

void fly_versions_get(fly_versions *v);

#endif
