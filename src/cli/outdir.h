/*
 * outdir.h -- the output directory of commands that write files (export,
 * plot): created like `mkdir -p`.
 */
#ifndef FLY_OUTDIR_H
#define FLY_OUTDIR_H

#include "util/err.h"

/* Create dir and its missing parents.  FLY_IO naming the directory that
 * could not be made, or when dir exists but is not a directory; FLY_RANGE
 * for a path longer than 4095 bytes. */
fly_rc fly_make_dir(const char *dir, fly_err *err);

#endif
