/*
 * chunks.c -- a CSV's records parsed on several threads (see chunks.h).
 *
 * Concept.  A ring of nslots slots; chunk k lives in slot k % nslots and
 * goes FREE -> READ (reader: bytes cut at a record boundary, start line
 * known) -> PARSING -> PARSED (a worker: cells and lines, or an error) ->
 * taken by the caller -> FREE when handed back; with an after-stage, ->
 * BACK -> WORKING -> WORKED (a worker ran `work`) -> FREE once committed
 * (a worker ran `commit`, in file order).  One mutex and one condition
 * variable guard the states and the counters; a chunk is a megabyte, so
 * the lock is taken a few times per megabyte.
 *
 * Invariants.  n_commit <= n_work <= n_taken <= n_parse <= n_read <=
 * n_commit + nslots: the reader fills slot n_read % nslots only when it
 * is FREE, and chunk k is freed (handed back, or committed) before the
 * reader may refill its slot with chunk k + nslots.  Without a stage
 * n_commit == n_work == n_taken.  At most one worker commits at a time
 * (committing), and it commits chunk n_commit only once it is WORKED, so
 * commits run in file order whatever order the work finished in.  A
 * chunk's bytes live in its slot's buffer, which the reader refills only
 * once the slot is FREE: nothing reads a chunk's cells after that.  The
 * reader's pending bytes (tail) are those after the last boundary cut,
 * all of them scanned for quotes (inq: the state after them), none of
 * them a boundary.  Start lines: the header reader's next
 * line plus the line ends (fly_csv_count_lines) of every chunk before.
 *
 * Cost.  The reader copies only the tail of a block past its last boundary
 * (part of one record) out of the slot's buffer and into the next, and
 * scans each byte once (a memchr for a quote, then a backwards search for
 * the last line feed, in a file without quotes; one pass otherwise) and
 * once more to count lines.  The slots' buffers are kept from chunk to
 * chunk, so the input passes through the same nslots megabytes of memory
 * and no page of them is zeroed or faulted in again.  Parsing, the bulk
 * of the work, runs on the workers.
 */
#include "io/chunks.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "util/mem.h"

enum { S_FREE, S_READ, S_PARSING, S_PARSED, S_BACK, S_WORKING, S_WORKED };

typedef struct slot {
  int           state;
  char         *buf;        /* the chunk's bytes, bcap + 1 + FLY_CSV_PAD
                               allocated, kept across chunks */
  size_t        bcap;
  fly_csv      *c;          /* READ..PARSED: the chunk's reader (borrowing
                               buf), or NULL for an error chunk */
  fly_csv_cell *cells;      /* cap rows, kept across chunks */
  int64_t      *lines;
  size_t        cap;
  fly_chunk     out;
} slot;

struct fly_chunks {
  fly_csv      *csv;
  const volatile sig_atomic_t *interrupt;
  size_t        ncols, nslots;
  slot         *slots;
  pthread_mutex_t mu;
  pthread_cond_t  cv;
  int64_t       n_read, n_parse, n_taken, n_work, n_commit;
  fly_chunks_stage stage;   /* work NULL: none */
  int           committing; /* a worker is committing chunk n_commit */
  int64_t       fail_k;     /* failed: the chunk of the first failure */
  int           failed;
  fly_rc        fail_rc;
  fly_err       fail_err;
  int           read_done;  /* n_read is final */
  int           reader_done; /* the reader thread is about to return */
  int           stop;
  int           held;       /* the caller holds chunk n_taken */
  char         *tail;      /* the reader's pending bytes, tlen of tcap */
  size_t        tlen, tcap;
  pthread_t     reader, *workers;
  int           has_reader, n_workers;
  sigset_t      old;        /* the caller's signal mask */
};

static slot *slot_of(fly_chunks *q, int64_t k)
{
  return &q->slots[(size_t)k % q->nslots];
}

/* Publish chunk n_read (state READ), or the end of input. */
static void publish(fly_chunks *q, int last)
{
  pthread_mutex_lock(&q->mu);
  if( !last || slot_of(q, q->n_read)->state == S_READ ) q->n_read++;
  if( last ) q->read_done = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

/* Room for cap bytes (and the sentinel and padding) in *pb, of *pcap
 * bytes, keeping its bytes.  0: out of memory (*pb unchanged). */
static int room(char **pb, size_t *pcap, size_t cap)
{
  char *b;
  if( cap <= *pcap ) return 1;
  b = cap < SIZE_MAX / 4 ? fly_realloc_array(*pb, cap + 1 + FLY_CSV_PAD, 1)
                         : NULL;
  if( !b ) return 0;
  *pb = b;
  *pcap = cap;
  return 1;
}

static void *reader_main(void *arg)
{
  fly_chunks *q = arg;
  int inq = 0, eof = 0;
  int64_t line = fly_csv_next_line(q->csv);

  pthread_sigmask(SIG_SETMASK, &q->old, NULL);
  while( !eof ){
    slot *s = slot_of(q, q->n_read);
    size_t cut = 0, got, len = q->tlen, cap;
    fly_rc rc = FLY_OK;

    pthread_mutex_lock(&q->mu);
    while( !q->stop && s->state != S_FREE ) pthread_cond_wait(&q->cv, &q->mu);
    int stop = q->stop;
    pthread_mutex_unlock(&q->mu);
    if( stop ) break;
    memset(&s->out, 0, sizeof s->out);
    /* the slot's buffer: the pending bytes, then reads until a boundary */
    cap = len < FLY_CHUNK_BYTES / 2 ? FLY_CHUNK_BYTES : 2 * len;
    if( !room(&s->buf, &s->bcap, cap) ){
      rc = fly_fail(&s->out.err, FLY_NOMEM, "%s:%lld: out of memory for a "
                    "chunk", fly_csv_path(q->csv), (long long)line);
    }else if( len ){
      memcpy(s->buf, q->tail, len);
    }
    cap = s->bcap;
    while( rc == FLY_OK ){
      if( len == cap ){                   /* no boundary yet: grow */
        if( !room(&s->buf, &s->bcap, 2 * cap) ){
          rc = fly_fail(&s->out.err, FLY_NOMEM, "%s:%lld: out of memory for "
                        "a record of over %zu bytes", fly_csv_path(q->csv),
                        (long long)line, cap);
          break;
        }
        cap = s->bcap;
      }
      rc = fly_csv_read_raw(q->csv, s->buf + len, cap - len, &got, &s->out.err);
      if( rc ) break;
      size_t b = fly_csv_boundary(s->buf + len, got, &inq);
      eof = got < cap - len;
      len += got;
      if( b ) cut = len - got + b;
      if( q->interrupt && *q->interrupt ){
        rc = fly_fail(&s->out.err, FLY_IO, "%s: interrupted",
                      fly_csv_path(q->csv));
        break;
      }
      if( eof ){ cut = len; break; }
      if( cut ) break;
    }
    if( rc ){
      s->out.rc = rc;
      s->c = NULL;
      s->state = S_READ;
      publish(q, 1);
      break;
    }
    if( cut == 0 ){                       /* end of input, nothing left */
      publish(q, 1);
      break;
    }
    /* the bytes after the cut wait in tail for the next chunk */
    size_t tail = len - cut;
    int64_t l0 = line;
    if( !room(&q->tail, &q->tcap, tail) ){
      s->out.rc = fly_fail(&s->out.err, FLY_NOMEM, "%s:%lld: out of memory "
                           "for a chunk", fly_csv_path(q->csv), (long long)line);
      s->state = S_READ;
      publish(q, 1);
      break;
    }
    if( tail ) memcpy(q->tail, s->buf + cut, tail);
    q->tlen = tail;
    line += fly_csv_count_lines(s->buf, cut);
    s->out.end_bytes = fly_csv_bytes(q->csv) - tail;
    rc = fly_csv_open_chunk(q->csv, s->buf, cut, l0, &s->c, &s->out.err);
    s->out.rc = rc;
    s->state = S_READ;
    publish(q, eof || rc != FLY_OK);
    if( rc ) break;
  }
  pthread_mutex_lock(&q->mu);
  q->reader_done = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

/* Parse slot s's chunk into its cells. */
static void parse(fly_chunks *q, slot *s)
{
  size_t rows = 0;
  fly_rc rc = FLY_OK;

  if( !s->c ) return;                     /* an error chunk */
  for(;;){
    if( rows == s->cap ){
      size_t nc = s->cap ? 2 * s->cap : 1024;
      fly_csv_cell *c = fly_realloc_array(s->cells, nc * q->ncols, sizeof *c);
      if( c ) s->cells = c;
      int64_t *l = c ? fly_realloc_array(s->lines, nc, sizeof *l) : NULL;
      if( l ) s->lines = l;
      if( !c || !l ){
        rc = fly_fail(&s->out.err, FLY_NOMEM, "%s:%lld: out of memory for the "
                      "cells of a chunk", fly_csv_path(q->csv),
                      (long long)fly_csv_next_line(s->c));
        break;
      }
      s->cap = nc;
    }
    fly_csv_cell *cells = s->cells + rows * q->ncols;
    rc = fly_csv_next_cells(s->c, cells, &s->out.err);
    if( rc != FLY_ROW ) break;
    if( q->stage.record
        && (rc = q->stage.record(q->stage.ctx, (size_t)(s - q->slots), rows,
                                 cells, &s->out.err)) )
      break;
    s->lines[rows++] = fly_csv_line(s->c);
  }
  s->out.rc = rc == FLY_DONE ? FLY_OK : rc;
  s->out.cells = s->cells;
  s->out.lines = s->lines;
  s->out.rows = rows;
}

/* The stage's failure rc (err) on chunk k, if it is the first in file
 * order.  Under the lock. */
static void stage_fail(fly_chunks *q, int64_t k, fly_rc rc, const fly_err *e)
{
  if( !q->failed || k < q->fail_k ){
    q->failed = 1;
    q->fail_k = k;
    q->fail_rc = rc;
    q->fail_err = *e;
  }
  pthread_cond_broadcast(&q->cv);
}

/* Run the stage's work on chunk n_work, then commit whatever is next in
 * file order and worked, unless another worker is committing.  Under the
 * lock (released while the stage runs). */
static void stage_run(fly_chunks *q)
{
  int64_t k = q->n_work++;
  slot *s = slot_of(q, k);
  fly_err e = {0};
  fly_rc rc;

  s->state = S_WORKING;
  pthread_mutex_unlock(&q->mu);
  rc = q->stage.work(q->stage.ctx, (size_t)k % q->nslots, &e);
  pthread_mutex_lock(&q->mu);
  if( rc ) stage_fail(q, k, rc, &e);
  s->state = S_WORKED;
  while( !q->committing && !q->failed && q->n_commit < q->n_work
         && (s = slot_of(q, q->n_commit))->state == S_WORKED ){
    k = q->n_commit;
    q->committing = 1;
    pthread_mutex_unlock(&q->mu);
    rc = q->stage.commit(q->stage.ctx, (size_t)k % q->nslots, &e);
    pthread_mutex_lock(&q->mu);
    q->committing = 0;
    if( rc ){
      stage_fail(q, k, rc, &e);
      break;
    }
    s->state = S_FREE;
    q->n_commit++;
  }
  pthread_cond_broadcast(&q->cv);
}

/* A worker: the stage's chunks first (they hold slots the reader waits
 * for), then parsing, until stopped. */
static void *worker_main(void *arg)
{
  fly_chunks *q = arg;
  pthread_mutex_lock(&q->mu);
  for(;;){
    if( q->stop ) break;
    if( q->stage.work && !q->failed && q->n_work < q->n_taken ){
      stage_run(q);
      continue;
    }
    if( q->n_parse < q->n_read ){
      slot *s = slot_of(q, q->n_parse++);
      s->state = S_PARSING;
      pthread_mutex_unlock(&q->mu);
      parse(q, s);
      pthread_mutex_lock(&q->mu);
      s->state = S_PARSED;
      pthread_cond_broadcast(&q->cv);
      continue;
    }
    pthread_cond_wait(&q->cv, &q->mu);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

size_t fly_chunks_slots(int threads)
{
  return 2 * (size_t)(threads < 1 ? 1 : threads) + 2;
}

fly_rc fly_chunks_start(fly_csv *csv, int threads,
                        const volatile sig_atomic_t *interrupt,
                        const fly_chunks_stage *stage,
                        fly_chunks **pq, fly_err *err)
{
  fly_chunks *q = NULL;
  sigset_t block;

  *pq = NULL;
  if( threads < 1 )
    return fly_fail(err, FLY_MISUSE, "fly_chunks_start: %d threads", threads);
  q = fly_alloc_array(1, sizeof *q);
  if( !q ) return fly_fail(err, FLY_NOMEM, "ingest: out of memory");
  q->csv = csv;
  q->interrupt = interrupt;
  q->ncols = fly_csv_ncols(csv);
  q->nslots = fly_chunks_slots(threads);
  if( stage ) q->stage = *stage;
  q->slots = fly_alloc_array(q->nslots, sizeof *q->slots);
  q->workers = fly_alloc_array((size_t)threads, sizeof *q->workers);
  if( !q->slots || !q->workers ){
    fly_free(q->slots);
    fly_free(q->workers);
    fly_free(q);
    return fly_fail(err, FLY_NOMEM, "ingest: out of memory");
  }
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, &q->old);
  for( ; q->n_workers < threads; q->n_workers++ )
    if( pthread_create(&q->workers[q->n_workers], NULL, worker_main, q) ) break;
  if( q->n_workers == threads && pthread_create(&q->reader, NULL, reader_main, q) == 0 )
    q->has_reader = 1;
  if( !q->has_reader ){
    fly_chunks_stop(q);
    return fly_fail(err, FLY_NOMEM, "ingest: cannot start %d threads", threads + 1);
  }
  *pq = q;
  return FLY_OK;
}

/* Hand back the chunk the caller holds, if any.  Under the lock. */
static void hand_back(fly_chunks *q)
{
  if( !q->held ) return;
  slot *s = slot_of(q, q->n_taken);
  fly_csv_close(s->c);
  s->c = NULL;
  if( q->stage.work ){
    s->state = S_BACK;
  }else{
    s->state = S_FREE;
    q->n_work++;
    q->n_commit++;
  }
  q->n_taken++;
  q->held = 0;
  pthread_cond_broadcast(&q->cv);
}

/* Wait on q->cv until signalled or for WAIT_MS: every caller rechecks its
 * condition in a loop, so a missed wakeup costs at most WAIT_MS.  Under
 * the lock. */
#define WAIT_MS 50          /* bound on a missed wakeup's delay */

static void wait_a_while(fly_chunks *q)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += (long)WAIT_MS * 1000 * 1000;
  if( ts.tv_nsec >= 1000 * 1000 * 1000 ){ ts.tv_sec++; ts.tv_nsec -= 1000 * 1000 * 1000; }
  pthread_cond_timedwait(&q->cv, &q->mu, &ts);
}

/* The stage's first failure as rc and *err, unlocking.  Under the lock. */
static fly_rc failure(fly_chunks *q, fly_err *err)
{
  fly_rc rc = q->fail_rc;
  if( err ) *err = q->fail_err;
  pthread_mutex_unlock(&q->mu);
  return rc;
}

fly_rc fly_chunks_next(fly_chunks *q, const fly_chunk **ch, fly_err *err)
{
  slot *s;
  pthread_mutex_lock(&q->mu);
  hand_back(q);
  s = slot_of(q, q->n_taken);
  while( !(q->n_taken < q->n_read && s->state == S_PARSED) ){
    if( q->failed ) return failure(q, err);
    if( q->read_done && q->n_taken == q->n_read ){
      pthread_mutex_unlock(&q->mu);
      return FLY_DONE;
    }
    if( q->interrupt && *q->interrupt ){   /* the reader may wait for input */
      pthread_mutex_unlock(&q->mu);
      return fly_fail(err, FLY_IO, "%s: interrupted", fly_csv_path(q->csv));
    }
    wait_a_while(q);
  }
  if( q->failed ) return failure(q, err);
  q->held = 1;
  pthread_mutex_unlock(&q->mu);
  s->out.slot = (size_t)(q->n_taken % (int64_t)q->nslots);
  *ch = &s->out;
  return FLY_ROW;
}

fly_rc fly_chunks_finish(fly_chunks *q, fly_err *err)
{
  pthread_mutex_lock(&q->mu);
  while( !q->failed && q->n_commit < q->n_taken ) wait_a_while(q);
  if( q->failed ) return failure(q, err);
  pthread_mutex_unlock(&q->mu);
  return FLY_OK;
}

void fly_chunks_stop(fly_chunks *q)
{
  if( !q ) return;
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  if( q->has_reader ){
    /* A reader waiting for input after an interrupt: the signal again,
     * to it (between its check of the flag and its read, it may have
     * missed the first one). */
    pthread_mutex_lock(&q->mu);
    while( !q->reader_done ){
      sig_atomic_t sig = q->interrupt ? *q->interrupt : 0;
      struct sigaction sa;
      if( sig > 0 && sig < NSIG && sigaction((int)sig, NULL, &sa) == 0
          && !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler != SIG_DFL
          && sa.sa_handler != SIG_IGN ){   /* a handler, never a default */
        pthread_mutex_unlock(&q->mu);
        pthread_kill(q->reader, (int)sig);
        pthread_mutex_lock(&q->mu);
      }
      wait_a_while(q);
    }
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->reader, NULL);
  }
  for(int i = 0; i < q->n_workers; i++) pthread_join(q->workers[i], NULL);
  pthread_sigmask(SIG_SETMASK, &q->old, NULL);
  for(size_t i = 0; i < q->nslots; i++){
    fly_csv_close(q->slots[i].c);
    fly_free(q->slots[i].buf);
    fly_free(q->slots[i].cells);
    fly_free(q->slots[i].lines);
  }
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
  fly_free(q->tail);
  fly_free(q->slots);
  fly_free(q->workers);
  fly_free(q);
}
