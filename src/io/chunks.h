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
} fly_chunk;

/* Start reading csv's remaining records (csv: header read, nothing else;
 * borrowed until fly_chunks_stop) on `threads` (>= 1) parse threads and a
 * reader thread.  interrupt (may be NULL): when it becomes nonzero the
 * reader stops at its next block. */
fly_rc fly_chunks_start(fly_csv *csv, int threads,
                        const volatile sig_atomic_t *interrupt,
                        fly_chunks **pq, fly_err *err);

/* The next chunk in file order: FLY_ROW with *ch (valid until the next
 * call or fly_chunks_stop), or FLY_DONE after the last.  A read error
 * comes as a chunk of no rows with its rc; the interrupt flag set while
 * waiting for a chunk, as FLY_IO. */
fly_rc fly_chunks_next(fly_chunks *q, const fly_chunk **ch, fly_err *err);

/* Stop the threads (at once, whatever is left unread), join them and free
 * everything.  NULL: no-op. */
void fly_chunks_stop(fly_chunks *q);

#endif
