/*
 * trace.h -- writing one chain's draws, per-iteration diagnostics and
 * checkpoints into the run tables.
 *
 * Each chain has its own writer with its own connection (the database is in
 * WAL mode, so readers see committed batches while the run goes on).  Rows
 * are buffered in memory and written by fly_trace_commit in ONE transaction
 * together with the chain's checkpoint, so after a crash the draws in the
 * file always end exactly at the checkpoint the chain resumes from.
 */
#ifndef FLY_TRACE_H
#define FLY_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct fly_trace fly_trace;

typedef struct fly_trace_row {   /* per-iteration diagnostics */
  double  log_joint;
  int64_t n_bright, n_lik, n_reads;
  double  accepted;    /* fraction of the iteration's theta proposals accepted */
  double  step_size;
  double  full_logpost;   /* NaN when not computed (stored as NULL) */
} fly_trace_row;

/* Open a writer for (run, chain) with P parameters, buffering up to
 * max_rows iterations between commits. */
fly_rc fly_trace_open(const char *db_path, int64_t run_id, int chain, size_t P,
                      size_t max_rows, fly_trace **pt, fly_err *err);
void   fly_trace_close(fly_trace *t);                  /* NULL: no-op */

/* Buffer iteration iter (1-based).  FLY_RANGE if the buffer is full
 * (commit first). */
fly_rc fly_trace_add(fly_trace *t, int64_t iter, const double *th,
                     const fly_trace_row *row, fly_err *err);
size_t fly_trace_pending(const fly_trace *t);

/* Write the buffered rows and the checkpoint (state of the chain after
 * iteration iter) in one transaction. */
fly_rc fly_trace_commit(fly_trace *t, int64_t iter, const void *ckpt,
                        size_t ckpt_len, fly_err *err);

#endif
