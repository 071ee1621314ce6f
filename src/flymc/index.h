/*
 * index.h -- the thinning index of `flydb sample --z gibbs`: the bucket
 * index (buckets.h) with every row's sketch (sketch.h) in its record, built
 * by several threads sharing chunks of rows.
 *
 * Two phases, each a pass over the chunks that the threads take in turn:
 * the first counts each chunk's rows into the buckets (bound pages); the
 * second encodes each chunk's sketches (data pages) and places its rows
 * (bound pages again), each record written whole at its position.  So the
 * records are written once each, the memory is the index's alone (no map
 * from rows to positions, a chunk's codes a thread), and a candidate's row
 * id, xi and sketch are one random load in the z step.  Each thread reads on a connection of its own.
 */
#ifndef FLY_INDEX_H
#define FLY_INDEX_H

#include <stdint.h>

#include "flymc/buckets.h"
#include "flymc/sketch.h"
#include "models/model.h"
#include "util/err.h"

/* Build the index of bound set bs of data set ds in the database at
 * db_path for model m, on `threads` threads (at least 1; fewer if they
 * cannot be started).  With L (fly_bounds.chol_key: D x D lower) each
 * record's tail holds the row's sketch, and *s is the sketch with its
 * codes placed there (fly_sketch_init_placed), encoded from the data
 * pages; with L NULL there is no sketch and *s is zeroed.  bmap, dmap: open
 * handles (on any connection to the file) on bound set bs's and data set
 * ds's pages, whose maps the index's handles copy (fly_pages_open_like),
 * or NULL to read them.  On failure b and s are freed. */
fly_rc fly_index_build(const char *db_path, int64_t ds, int64_t bs, const fly_pages *bmap,
                       const fly_pages *dmap, const fly_model *m, const double *L,
                       int threads, fly_buckets *b, fly_sketch *s, fly_err *err);

#endif
