/*
 * chunks.h -- a CSV's records parsed on several threads, handed out in
 * file order.
 *
 * One reader thread reads the input in large blocks and cuts them at
 * record boundaries (fly_csv_boundary: line feeds outside quotes) into
 * chunks; worker threads parse whole chunks into cells (fly_csv_open_chunk,
 * fly_csv_next_cells), each from its own start line, so a chunk's records,
 * cells and first error are those a single reader gives there; the caller
 * takes the chunks in file order.  A bounded ring of chunks keeps memory
 * flat in the input size: at most 2 * threads + 2 chunks of about
 * FLY_CHUNK_BYTES each (more only for a record longer than that), with
 * their cells, whatever the number of rows.
 *
 * An optional record hook (fly_chunks_stage.record) runs on the parsing
 * worker after each record of a chunk, while its cells are in that
 * worker's cache: e.g. converting what needs no state of the caller's
 * into the slot's data, so the caller's file-order loop does less.
 *
 * An optional after-stage (fly_chunks_stage): a chunk the caller hands
 * back (at its next fly_chunks_next) goes to the
 * workers again, first to `work` (any order, concurrently: e.g. encoding
 * what the caller made of it) and then to `commit` (one chunk at a time,
 * in file order, on whichever worker finished the chunk before it: e.g.
 * inserting it), and only then is its slot reused.  Workers take such
 * chunks before parsing new ones, so the stages drain first.
 *
 * Signals: while the threads run, SIGINT, SIGTERM and SIGHUP are blocked
 * in the caller's thread and the workers.  The caller notices the
 * interrupt flag within 50 ms while it waits for a chunk.  A reader
 * blocked on input that does not come (a pipe held open) is woken only by
 * a signal: after an interrupt, fly_chunks_stop sends the flag's value to
 * the reader when it is the number of a signal with a handler installed
 * (the CLI's flag holds the signal that set it, whose handler is installed
 * without SA_RESTART); stopping
 * for another reason waits for the reader's current read to return.
 */
#ifndef FLY_CHUNKS_H
#define FLY_CHUNKS_H

#include <signal.h>
#include <stdint.h>

#include "io/csv.h"
#include "util/err.h"

#define FLY_CHUNK_BYTES ((size_t)1 << 20)

typedef struct fly_chunks fly_chunks;

/* One parsed chunk: rows records of ncols cells each, with the line each
 * starts on, then rc: FLY_OK when the chunk was parsed to its end, else
 * the error (err) at the record after the last one given, which is the
 * first error of the input in file order if no earlier chunk had one. */
typedef struct fly_chunk {
  const fly_csv_cell *cells;    /* rows * ncols, row-major */
  const int64_t      *lines;    /* rows */
  size_t              rows;
  fly_rc              rc;
  fly_err             err;
  uint64_t            end_bytes; /* input bytes up to the chunk's end */
  size_t              slot;     /* < fly_chunks_slots(threads): the caller's
                                   per-slot data for this chunk */
} fly_chunk;

/* The after-stage: work(ctx, slot, err) then commit(ctx, slot, err) on a
 * chunk handed back, both on worker threads (see above).  After a failure
 * neither runs on a later chunk; the first failure in file order is
 * returned by fly_chunks_next and fly_chunks_finish.
 *
 * record (may be NULL): record(ctx, slot, i, cells, err) on the worker
 * parsing the chunk in `slot`, right after its record i (0-based in the
 * chunk; cells: its ncols cells) is parsed; the worker owns the slot's
 * data then, and the caller sees what it wrote once it takes the chunk.
 * A failure ends the chunk before record i, with its rc and err as the
 * chunk's own (as a parse error there would). */
typedef struct fly_chunks_stage {
  fly_rc (*work)(void *ctx, size_t slot, fly_err *err);
  fly_rc (*commit)(void *ctx, size_t slot, fly_err *err);
  fly_rc (*record)(void *ctx, size_t slot, size_t i,
                   const fly_csv_cell *cells, fly_err *err);
  void   *ctx;
} fly_chunks_stage;

/* The number of slots, hence of chunks in flight, with `threads` parse
 * threads. */
size_t fly_chunks_slots(int threads);

/* Start reading csv's remaining records (csv: header read, nothing else;
 * borrowed until fly_chunks_stop) on `threads` (>= 1) parse threads and a
 * reader thread.  interrupt (may be NULL): when it becomes nonzero the
 * reader stops at its next block.  stage: NULL, or the after-stage
 * (copied; ctx borrowed until fly_chunks_stop). */
fly_rc fly_chunks_start(fly_csv *csv, int threads,
                        const volatile sig_atomic_t *interrupt,
                        const fly_chunks_stage *stage,
                        fly_chunks **pq, fly_err *err);

/* The next chunk in file order: FLY_ROW with *ch (valid until the next
 * call or fly_chunks_stop), or FLY_DONE after the last.  A read error
 * comes as a chunk of no rows with its rc; the interrupt flag set while
 * waiting for a chunk, as FLY_IO; a failure of the after-stage, as its
 * rc and err.  The chunk of the previous call is handed back. */
fly_rc fly_chunks_next(fly_chunks *q, const fly_chunk **ch, fly_err *err);

/* Wait until every chunk handed back so far has been through the
 * after-stage (none: at once); the chunk held, if any, is not handed back
 * (after FLY_DONE none is held).  FLY_OK, or the stage's first failure. */
fly_rc fly_chunks_finish(fly_chunks *q, fly_err *err);

/* Stop the threads (at once, whatever is left unread), join them and free
 * everything.  NULL: no-op. */
void fly_chunks_stop(fly_chunks *q);

#endif
