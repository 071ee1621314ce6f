/*
 * ingest.h -- a CSV stream into a new data set of LZ4 pages.
 *
 * Streaming: one CSV record and one page of rows are in memory at a time,
 * whatever the input size; with parse threads (fly_ingest_opts.threads),
 * also at most 2 * threads + 2 chunks of about 1 MiB of input each
 * (io/chunks.h), each with its cells, typed rows and encoded pages.  The
 * rows, pages, statistics, levels and errors do not depend on the number
 * of threads.  Stored row layout: [1 (intercept)] features... target (see
 * store/dataset.h); column statistics are computed on the values as
 * stored (after f32 rounding), since those are what the models see.
 *
 * All or nothing: into an existing database the whole ingest is one
 * transaction, so a failure (a bad cell on line 9,000,000, a full disk, an
 * interrupt) leaves the file as it was; a new database is built in a
 * temporary file beside the target (<db>.ingest-PID.tmp), with journalling
 * off, and linked into place only when complete, the temporary removed on
 * failure.  Temporaries left by killed ingests (their process gone) are
 * removed first.
 *
 * Typed columns.  A column is categorical when declared so or when one of
 * its cells is neither a number nor a missing value (an empty cell, "NA",
 * or one of o->na_strings); it is stored as level codes in first-seen
 * order, its labels and counts in table `level`.  Missing cells are NaN
 * in the pages.  Detection is one pass: a column turns categorical at its
 * first label, and the numbers above it become levels too (their texts
 * are kept while a column has at most FLY_INGEST_TRACK_LEVELS distinct
 * ones; past that a late label is an error asking for --categorical), the
 * pages already written re-coded before the commit.  A data set of numeric
 * columns without missing cells is stored exactly as before typed columns.
 *
 * Errors name the data: "file:line:column: ..." for a bad cell, "file:1"
 * for the header.  Not thread-safe with another ingest into the same new
 * path.
 */
#ifndef FLY_INGEST_H
#define FLY_INGEST_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "io/csv.h"
#include "store/db.h"
#include "util/err.h"

/* Distinct numbers a column keeps as texts while it is numeric, so that
 * it can still turn categorical. */
#define FLY_INGEST_TRACK_LEVELS 4096

/* Progress, passed to fly_ingest_opts.progress every 4096 rows. */
typedef void fly_ingest_progress_fn(void *ctx, const char *name,
                                    int64_t n_rows, uint64_t bytes_read);

typedef struct fly_ingest_opts {
  const char *target;     /* target column name; NULL: the last column */
  const char *name;       /* data set name; NULL: the source's file name
                             without directory and extension ("stdin") */
  int         intercept;  /* 1: add an intercept column first */
  int64_t     page_rows;  /* rows per page; 0: what fills one SQLite page */
  int         prec;       /* FLY_PREC_F64 or FLY_PREC_F32 (store/codec.h) */
  /* Checked at every row: nonzero stops the ingest with FLY_IO
   * ("interrupted at line L of F: nothing was stored").  A signal handler
   * sets it; installed without SA_RESTART, a blocked read returns at once.
   * With parse threads, a value that is the number of a signal with a
   * handler is sent to the reading thread to end its read. */
  const volatile sig_atomic_t *interrupt;
  fly_ingest_progress_fn *progress;   /* NULL: none */
  void       *progress_ctx;
  /* Column types: comma-separated column names (NULL: none).  Declared
   * categorical columns take every cell as a label; declared numeric ones
   * refuse a cell that is not a number.  Other columns are detected. */
  const char *categorical;
  const char *numeric;
  /* Comma-separated cell texts that mean a missing value, besides the
   * empty cell and "NA" (NULL: none). */
  const char *na_strings;
  /* Parse threads: 1 reads, parses and stores on the calling thread;
   * more parse chunks of records concurrently (io/chunks.h) and encode
   * their pages, while the calling thread types them in file order and a
   * reader thread reads, with the same pages, statistics, levels and
   * first error as one thread.  0: fly_ingest_default_threads(). */
  int         threads;
} fly_ingest_opts;

#define FLY_INGEST_MAX_THREADS 8

/* The processors online, at most FLY_INGEST_MAX_THREADS (at least 1). */
int fly_ingest_default_threads(void);

/* The default rows per page for rows of width values of precision prec in
 * db: as many as fit, uncompressed, in one SQLite page (at least 16). */
fly_rc fly_ingest_page_rows(fly_db *db, size_t width, int prec,
                           int64_t *rows, fly_err *err);

/* intercept 1, prec f64, everything else 0 / NULL. */
void fly_ingest_opts_default(fly_ingest_opts *o);

typedef struct fly_ingest_result {
  int64_t  dataset_id;    /* in the database */
  int64_t  n_rows;        /* rows stored */
  uint64_t bytes_read;    /* CSV bytes consumed */
  char     name[256];     /* the data set's name */
} fly_ingest_result;

/* Ingest a CSV into a new data set of the database at db_path, created if
 * it does not exist.  in: the stream to read (borrowed, not closed), named
 * src_name in messages and in dataset.source; in NULL: open the file
 * src_name ("-": standard input).  An existing database is opened (and its
 * identity checked) before any CSV byte is read.  Returns
 *   FLY_PARSE   a malformed CSV, no data rows, fewer than 2 columns, a
 *               cell that is not a number in a column declared numeric,
 *               a late label in a column with too many distinct numbers;
 *   FLY_RANGE   --target or a declared column not a column, a value beyond
 *               f32 with prec f32;
 *   FLY_MISUSE  a data set of that name exists, or bad options;
 *   FLY_IO      the input, the file system, or o->interrupt;
 *   FLY_SQL / FLY_CORRUPT / FLY_NOMEM otherwise.
 * On failure nothing is written (a new database is not created) and res
 * is untouched; res may be NULL. */
fly_rc fly_ingest(const char *db_path, FILE *in, const char *src_name,
                  const fly_ingest_opts *o, fly_ingest_result *res,
                  fly_err *err);

/* The ingest proper into an open database, inside the caller's write
 * transaction (roll it back on failure): a data set from csv's remaining
 * records.  o->name NULL: named after fly_csv_path(csv). */
fly_rc fly_ingest_csv(fly_db *db, fly_csv *csv, const fly_ingest_opts *o,
                      fly_ingest_result *res, fly_err *err);

#endif
