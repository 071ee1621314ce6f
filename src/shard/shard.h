/*
 * shard.h -- a data set split into S shard databases of contiguous row
 * ranges, and the manifest that lists them (issue 28).
 *
 * A shard is an ordinary flydb database holding one data set: rows
 * first_row .. first_row+n_rows-1 of the whole, with the whole's columns
 * (names, roles, CSV columns, precision, intercept) and its own column
 * statistics, so `flydb info`, `check` and `dump` work on it as on any
 * data set.  The manifest is a flydb database too (runs of the sharded
 * data set will live in it) with three tables of its own (see shard.c):
 * shard_set (the data set: name, width, precision, row count), shard_column
 * (the columns with statistics over all rows, in shard order, so they are
 * the bits an unsharded ingest stores) and shard (per shard: its file, row
 * range, row count and two digests).
 *
 * A shard's digest is XXH3-64 over its rows as the sampler sees them (the
 * decoded doubles, row-major, in row order): it does not depend on the page
 * size or compression, and it changes with any value.  Its stats digest
 * is XXH3-64 of the column statistics it stores: checked without reading
 * a row, it tells one shard from another of the same row count.  A shard's file is
 * stored as its base name when it sits beside the manifest (the usual
 * layout: the directory moves as a whole) and as an absolute path
 * otherwise.
 *
 * Cost: splitting reads the source once and each shard once (the manifest
 * is assembled from the shards as written, so both ways of making a
 * manifest run the same code); memory is one page of each.
 */
#ifndef FLY_SHARD_H
#define FLY_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* File name of shard k in a split's output directory. */
#define FLY_SHARD_NAME_FMT "shard-%03lld.db"
/* File name of the manifest in a split's output directory. */
#define FLY_SHARD_MANIFEST "manifest.db"

/* Split data set data_name (NULL: the only one) of db_path into n_shards
 * shard databases of contiguous row ranges (shard k holds rows
 * floor(k N / S) .. floor((k+1) N / S) - 1) in directory out_dir (created
 * if missing), named FLY_SHARD_NAME_FMT, and assemble out_dir/manifest.db
 * from them.  FLY_MISUSE if n_shards < 1 or exceeds the row count, or if
 * out_dir already holds a manifest or a shard file (nothing is replaced);
 * the errors of reading the source otherwise.  A shard is written under a
 * temporary name and renamed into place when complete; on failure the
 * files written so far are removed. */
fly_rc fly_shard_split(const char *db_path, const char *data_name,
                       int64_t n_shards, const char *out_dir, fly_err *err);

/* Write a new manifest at manifest_path listing shards[0..n) in that order
 * (shard k's rows follow shard k-1's).  Each must hold exactly one data
 * set, and all the same columns (names, roles, order), intercept,
 * precision and target.  Every shard is read in full (its digest, the
 * whole's statistics), so a damaged page is found here.  Errors name the
 * shard: FLY_MISUSE for a mismatch, an existing manifest_path or a shard
 * given twice; FLY_IO for a missing file; FLY_CORRUPT for damage. */
fly_rc fly_shard_assemble(const char *manifest_path, const char *const *shards,
                          size_t n, fly_err *err);

/* One shard as the manifest lists it. */
typedef struct fly_shard_info {
  int64_t  k;                 /* 0-based, in row order */
  char     path[4096];        /* resolved: usable from the current directory */
  int64_t  first_row, n_rows;
  uint64_t digest;            /* XXH3-64 of the rows, see above */
} fly_shard_info;

/* Called by fly_shard_verify after each shard is verified. */
typedef void fly_shard_verify_fn(void *u, const fly_shard_info *s);

/* Verify the manifest at manifest_path against its shards: each listed
 * file exists and opens as flydb, holds one data set with the manifest's
 * columns, precision, row count and stats digest; the row ranges tile
 * 0..N-1; no file
 * named like a shard (FLY_SHARD_NAME_FMT) beside the manifest is left
 * unlisted.  full: also read every shard and compare its digest (O(N)).
 * The first problem is returned, naming the shard: FLY_IO for a missing
 * one, FLY_MISUSE for an extra one or a mismatch, FLY_CORRUPT for damage.
 * fn (may be NULL) sees each shard that passed; *n_rows (may be NULL) is
 * the total. */
fly_rc fly_shard_verify(const char *manifest_path, int full,
                        fly_shard_verify_fn *fn, void *u, int64_t *n_rows,
                        fly_err *err);

#endif
