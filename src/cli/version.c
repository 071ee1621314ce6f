/*
 * version.c -- `flydb --version` (or `flydb version`): what a bug report
 * needs to reproduce a build.
 *
 * Printed: the release version (meson's project version), the commit it was
 * built from ("unknown" when built outside a git checkout, e.g. from a
 * release tarball), the build type and compiler, the database schema
 * version this binary writes (PRAGMA user_version; older files are migrated
 * up to it, newer ones refused), and the versions of the libraries that the
 * process actually loaded -- SQLite, LZ4, xxHash, OpenBLAS with the CPU
 * kernels it picked -- which may differ from the headers it was compiled
 * with, and which decide bit-identical draws across machines.
 */
#include <stdio.h>

#include "cli.h"
#include "store/schema.h"
#include "util/version.h"
#include "build_commit.h"

#ifndef FLYDB_VERSION
#define FLYDB_VERSION "unknown"
#endif
#ifndef FLY_BUILDTYPE
#define FLY_BUILDTYPE "unknown"
#endif

#if defined(__clang__)
#define FLY_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define FLY_COMPILER "gcc " __VERSION__
#else
#define FLY_COMPILER "unknown compiler"
#endif

void fly_cli_version(FILE *f)
{
  fly_versions v;
  fly_versions_get(&v);
  fprintf(f, "flydb %s\n", FLYDB_VERSION);
  fprintf(f, "commit    %s\n", FLY_BUILD_COMMIT);
  fprintf(f, "build     %s, %s\n", FLY_BUILDTYPE, FLY_COMPILER);
  fprintf(f, "schema    %d (the database user_version it writes)\n", fly_schema_version);
  fprintf(f, "SQLite    %s\n", v.sqlite);
  fprintf(f, "LZ4       %s\n", v.lz4);
  fprintf(f, "xxHash    %s\n", v.xxhash);
  fprintf(f, "BLAS      %s (kernels: %s)\n", v.blas_config, v.blas_core);
}

int fly_cmd_version(int argc, char **argv)
{
  fly_opt opts[] = {
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  const char *synopsis = "[--help]";
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  if( fly_args_parse(&a, argc, argv, 0, &err) )
    return fly_usage_error(&a, "version", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "version", synopsis); return 0; }
  fly_cli_version(stdout);
  return 0;
}
