/*
 * trace.h -- a run's trace: the draws, per-iteration diagnostics and
 * checkpoints of its chains.  This module is the only one that reads or
 * writes them (tables draw_chunk, draw_block and checkpoint, views draw,
 * iteration and draws_named, and table param for the parameter names).
 *
 * Writing.  Each chain has its own writer; the writers of one file in a
 * process share one connection and one thread that writes for all of them
 * (the database is in WAL mode, so readers see committed batches while the
 * run goes on).  Rows are buffered in memory, handed to that thread by
 * fly_trace_submit (the chain goes on meanwhile) and written in ONE
 * transaction together with the chain's checkpoint, so after a crash the
 * draws in the file always end exactly at the checkpoint the chain resumes
 * from.  The draws go into rows of one parameter and up to 64 kept
 * iterations (draw_chunk), appended in the order written and indexed by
 * parameter, so SQL clients read a parameter at a time by a range scan of
 * the index; a commit rewrites the writer's last partial row in the same
 * transaction, so no draw is ever stored twice.
 *
 * Reading.  A reader borrows a database handle and reads one run: its
 * header (shape and labels), parameter names, per-chain counts, the draws
 * of a range of parameters of one chain as contiguous doubles in iteration
 * order, the diagnostics, and a streaming scan of whole iterations (all
 * parameters and the diagnostics, read in windows of up to 256 iterations:
 * O(P x 256) memory, at most about 8 MB).  Chains are numbered from
 * 0, iterations from 1 across warm-up and sampling (iter <= n_warmup is
 * warm-up); a thinned run keeps iterations thin, 2 thin, ...  A reader is
 * used by one thread at a time.  It sees what is committed when each call
 * runs; a caller that wants one snapshot across calls opens a read
 * transaction on the handle around them.
 *
 * Checking.  fly_trace_check verifies one run's trace against its shape and
 * reports every problem through a callback (`flydb check`).
 */
#ifndef FLY_TRACE_H
#define FLY_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "util/err.h"

typedef struct fly_trace fly_trace;

typedef struct fly_trace_row {   /* per-iteration diagnostics */
  double  log_joint;
  int64_t n_bright, n_lik, n_reads;
  double  accepted;    /* fraction of the iteration's theta proposals accepted */
  double  step_size;
  double  full_logpost;   /* NaN when not computed (stored as NULL) */
  /* The theta kernel's statistics (NUTS; samplers/kernel.h), stored as
   * NULL and read back as has_kstats = 0 for kernels without them. */
  int     has_kstats;
  int     treedepth;
  int64_t n_leapfrog;
  int     divergent;      /* 0/1 */
  double  energy;         /* Hamiltonian at the sampled point */
  double  accept_stat;    /* mean min(1, exp(H0 - H)) over the tree */
} fly_trace_row;

/* Open a writer for (run, chain) with P parameters, buffering up to
 * max_rows iterations between commits (two buffers of them).  Writers may
 * be used from different threads, each writer by one thread at a time.
 * The first writer of a file in the process starts its writer thread, the
 * last one closed ends it; a child forked while writers are open must not
 * use them. */
fly_rc fly_trace_open(const char *db_path, int64_t run_id, int chain, size_t P,
                      size_t max_rows, fly_trace **pt, fly_err *err);
/* Waits for a submitted batch (its failure is lost: fly_trace_sync first). */
void   fly_trace_close(fly_trace *t);                  /* NULL: no-op */

/* Buffer iteration iter (1-based).  FLY_RANGE if the buffer is full
 * (commit first). */
fly_rc fly_trace_add(fly_trace *t, int64_t iter, const double *th,
                     const fly_trace_row *row, fly_err *err);
size_t fly_trace_pending(const fly_trace *t);

/* Hand the buffered rows and the checkpoint (state of the chain after
 * iteration iter; ckpt_len bytes copied, ckpt NULL: none) to the file's
 * writer thread, which writes them in one transaction, and return: the
 * writer takes new rows into its other buffer meanwhile.  Waits only while
 * the previous batch is still being written.  A batch that fails to be
 * written fails this call or the next fly_trace_sync (its error, e.g.
 * FLY_SQL or FLY_IO), and then every later submit or sync: nothing after
 * it is written.  FLY_NOMEM. */
fly_rc fly_trace_submit(fly_trace *t, int64_t iter, const void *ckpt,
                        size_t ckpt_len, fly_err *err);

/* Wait until every submitted batch is committed; the first failure of
 * one, as fly_trace_submit.  After it, readers see every submitted draw. */
fly_rc fly_trace_sync(fly_trace *t, fly_err *err);

/* fly_trace_submit, then fly_trace_sync. */
fly_rc fly_trace_commit(fly_trace *t, int64_t iter, const void *ckpt,
                        size_t ckpt_len, fly_err *err);

/* ---- reading ------------------------------------------------------------ */

typedef struct fly_trace_reader fly_trace_reader;

/* The run as a reader of its trace needs it (tables run and dataset). */
typedef struct fly_trace_run {
  int64_t  id;
  size_t   n_chains, n_params;      /* >= 1 */
  int64_t  n_warmup, n_iters;       /* iterations, >= 0 */
  int64_t  thin;                    /* >= 1 */
  uint64_t seed;
  int64_t  n_rows;                  /* rows of the run's data set (N) */
  double   sample_seconds;          /* iteration loops, slowest chain; NaN if NULL */
  double   wall_seconds;            /* whole command(s); NaN if NULL */
  char     model[32], sampler[32], z_mode[16], status[16], version[32];
  char     dataset[256];            /* data set name */
  char     source[1024];            /* its CSV path or '<stdin>' */
} fly_trace_run;

/* Open run_id of db for reading (run_id 0: the latest run).  db is
 * borrowed and must outlive the reader.  FLY_RANGE "<db> has no run N" /
 * "<db> has no runs", FLY_CORRUPT for a run of impossible shape (no chain,
 * no parameter, thin < 1, negative counts), FLY_SQL, FLY_NOMEM.  *pr NULL
 * on failure. */
fly_rc fly_trace_reader_open(fly_db *db, int64_t run_id, fly_trace_reader **pr,
                             fly_err *err);
void   fly_trace_reader_close(fly_trace_reader *r);      /* NULL: no-op */

/* The run's header; borrowed, valid until the reader is closed. */
const fly_trace_run *fly_trace_reader_run(const fly_trace_reader *r);

/* Name of parameter p < n_params (table param; "theta[p+1]" when its row
 * is missing).  Borrowed, valid until the reader is closed. */
const char *fly_trace_param_name(const fly_trace_reader *r, size_t p);

/* Whether the run's option `key` took its default value (table
 * run_config; 1 when the key is not stored or cannot be read). */
int fly_trace_option_default(fly_trace_reader *r, const char *key);

/* Stored iterations of chain c < n_chains: *n_warm with iter <= n_warmup,
 * *n_post after (counting rows of the view iteration).  Either pointer may
 * be NULL.  FLY_SQL. */
fly_rc fly_trace_chain_len(fly_trace_reader *r, size_t c, size_t *n_warm,
                           size_t *n_post, fly_err *err);

/* Draws of parameters p0 .. p0+n_p-1 of chain c at iterations > after, in
 * iteration order, at most cap of them: parameter p0+k's t-th draw goes to
 * x[k*cap + t] and its iteration to iters[t] (iters may be NULL).  *n is
 * the number of iterations read (<= cap); the stored iterations are those
 * of the chain's diagnostics rows, and a draw missing from one is NaN.  x
 * and iters are caller-owned, of sizes n_p*cap and cap.  One range scan of
 * the iterations and one per parameter.  FLY_RANGE for c or a parameter
 * out of range, FLY_NOMEM, FLY_SQL. */
fly_rc fly_trace_draws(fly_trace_reader *r, size_t c, size_t p0, size_t n_p,
                       int64_t after, size_t cap, double *x, int64_t *iters,
                       size_t *n, fly_err *err);

/* Diagnostics of chain c at iterations > after, in iteration order, at most
 * cap: rows[t] and iters[t] (iters may be NULL), caller-owned arrays of
 * cap.  log_joint and step_size are NaN when NULL, full_logpost NaN when
 * not computed.  *n is the number read.  FLY_RANGE, FLY_SQL. */
fly_rc fly_trace_diagnostics(fly_trace_reader *r, size_t c, int64_t after,
                             size_t cap, fly_trace_row *rows, int64_t *iters,
                             size_t *n, fly_err *err);

/* Means over all chains of the iterations > after (SQL avg()); every field
 * NaN when there is no such iteration.  FLY_SQL. */
typedef struct fly_trace_means {
  double n_bright, n_lik, n_reads;   /* per iteration */
  double accepted;                   /* acceptance rate */
} fly_trace_means;
fly_rc fly_trace_diagnostics_mean(fly_trace_reader *r, int64_t after,
                                  fly_trace_means *mean, fly_err *err);

/* A streaming scan of chain c at iterations > after: each
 * fly_trace_scan_next gives one stored iteration, its diagnostics and all
 * its n_params draws th[0..n_params), in iteration order; FLY_ROW, then
 * FLY_DONE at the end.  FLY_CORRUPT naming the run, chain (from 1) and
 * iteration when draws have no diagnostics row or an iteration lacks some
 * draws (or has too many).  One scan at a time per reader: a new start ends
 * the previous one.  Memory O(n_params) windows of up to 256 iterations,
 * allocated at the first start (FLY_NOMEM), freed with the reader. */
fly_rc fly_trace_scan_start(fly_trace_reader *r, size_t c, int64_t after,
                            fly_err *err);
fly_rc fly_trace_scan_next(fly_trace_reader *r, int64_t *iter,
                           fly_trace_row *row, double *th, fly_err *err);

/* Chain c's checkpoint: *iter the iterations it completed (0 and *state
 * NULL when it has none), *state a copy of the blob (*len bytes) that the
 * caller frees with fly_free.  FLY_NOMEM, FLY_SQL. */
fly_rc fly_trace_checkpoint(fly_db *db, int64_t run_id, int chain,
                            int64_t *iter, void **state, size_t *len,
                            fly_err *err);

/* Delete chain c's draws and diagnostics after iteration `after` (a chain
 * resumed from its checkpoint, or restarted without one), in one
 * savepoint: whole draw_chunk rows past it, the draws past it in a row
 * that straddles it.  FLY_SQL. */
fly_rc fly_trace_truncate(fly_db *db, int64_t run_id, int chain,
                          int64_t after, fly_err *err);

/* ---- checking ----------------------------------------------------------- */

/* The shape a run's trace must have (table run). */
typedef struct fly_trace_shape {
  int64_t run_id;
  int64_t n_chains, n_warmup, n_iters, thin, n_params;  /* validated by the caller:
                                                           chains, thin, params >= 1 */
  int     done;          /* status 'done': every chain reached n_warmup + n_iters */
} fly_trace_shape;

/* One problem, a full sentence without the run's name ("chain 1: draw
 * rows missing for iterations 5..9"); msg is valid during the call. */
typedef void (*fly_trace_problem_fn)(void *u, const char *msg);
/* A checkpoint blob to verify (its format belongs to the chain, not to
 * the store); p valid during the call. */
typedef void (*fly_trace_ckpt_fn)(void *u, int64_t chain, const void *p,
                                  size_t len);

/* Verify the trace of run s->run_id: param rows for idx 0..n_params-1; per
 * chain at most one checkpoint at an iteration in 1..n_warmup+n_iters
 * (each blob passed to ckpt, which may be NULL), and draw and diagnostics
 * rows at exactly the iterations thin, 2 thin, .. up to the chain's
 * checkpoint (up to n_warmup + n_iters when done, which also requires
 * every checkpoint there), each with all n_params draws; no rows of chains
 * outside 0..n_chains-1.  Every problem goes to problem(); a statement
 * that fails is a problem too (a damaged file).  Reads only; the caller
 * holds one read transaction around it for a consistent snapshot.
 * FLY_NOMEM (also reported as a problem), else FLY_OK whatever was found. */
fly_rc fly_trace_check(fly_db *db, const fly_trace_shape *s,
                       fly_trace_problem_fn problem, fly_trace_ckpt_fn ckpt,
                       void *u, fly_err *err);

#endif
