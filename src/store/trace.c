/*
 * trace.c -- a run's trace: batched writes, reads and the integrity check of
 * draws, diagnostics and checkpoints (see trace.h).
 *
 * Layout (schema/008_draw_chunk.sql, 014_draw_chunk_append.sql, docs/format.md
 * "Traces"): the draws of one parameter of one chain at up to CHUNK
 * consecutive kept iterations iter0, iter0 + step, .. form one row of
 * draw_chunk, values in columns v0 .. v(n-1), keyed (run_id, idx, chain,
 * iter0) by the unique index draw_chunk_key; the rows themselves are in
 * the order written (rowid).  An iteration's diagnostics are one row of
 * draw_block (blk = 0).  The views `draw` and `draws_named` expand the
 * chunks, `iteration` reads draw_block.  Invariant: every stored draw is in
 * exactly one chunk row, and every iteration with draws has its draw_block
 * row.
 *
 * Writing.  The writer keeps the iterations of the chain's last, partial
 * chunk (the tail, < CHUNK iterations) in memory in front of the new ones,
 * and a commit writes, in the checkpoint's transaction, one diagnostics row
 * per new iteration and P rows per chunk of the tail and new iterations
 * together: the tail's rows are rewritten whole under their old key (INSERT
 * OR REPLACE), so a crash keeps or loses a commit whole and no draw is ever
 * in two rows.  Cost per kept iteration: one insert plus P / CHUNK chunk
 * inserts (amortised; plus P per commit for the tail).  Chunk rows are
 * appended at the table's end (new pages, written once); their index
 * entries (about 12 bytes) go to P key ranges, so a commit touches about P
 * index leaf pages.  A commit writes the full chunks first and the P
 * partial last ones together after them, so the next commit's replacement
 * of those frees space on a few pages rather than on one page a
 * parameter.  The writers of a file in one process share a connection
 * and a thread that writes for them (shared_db): a chain fills one buffer
 * while the thread writes the other, and batches handed over at about the
 * same time share a transaction.  A new writer (a resumed chain) starts a
 * new chunk; the older partial one stays as it is.
 *
 * Reading.  A chain's iterations are its draw_block rows of blk = 0, in key
 * order; the draws of parameter p are one range scan of draw_chunk_key (run,
 * p, chain) with a rowid lookup per chunk row, merged into those iterations.  fly_trace_draws reads a parameter
 * range that way, and the streaming scan reads windows of whole iterations
 * (all parameters, O(P x window) memory).  The integrity check reads the
 * views draw and iteration, so it states its findings in the rows users see.
 */
#include "store/trace.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "store/db.h"
#include "util/mem.h"

#define CHUNK 64     /* draws per draw_chunk row (columns v0..v63) */
#define DIAG  12     /* diagnostics columns of draw_block */
#define CV    6      /* first value column of draw_chunk (after run_id .. n) */

/* A benchmark build (-DFLY_TRACE_DRY_WRITES, never a release): the writer
 * thread takes the batches and writes nothing, so that a run measures what
 * writing costs the chains against one that does not write. */
#ifdef FLY_TRACE_DRY_WRITES
#define DRY_WRITES 1
#else
#define DRY_WRITES 0
#endif

/* The writers of one file in a process share one connection, and one
 * thread (the file's writer thread) writes the batches of all of them.  A
 * chain hands over a full buffer (fly_trace_submit) and goes on filling its
 * other one; the thread writes every batch waiting when it wakes in ONE
 * transaction, each batch's draws with its own checkpoint, so that the
 * contract of a batch holds whatever else shares the transaction.  A chain
 * waits only when its previous batch is not written yet.  Why one
 * connection: with a connection each, a commit by one writer makes SQLite
 * discard the page cache of every other (a connection that finds the WAL
 * changed starts over), so every commit would re-read the pages it appends
 * to.  Why a thread: the chain's loop does not wait for SQLite, and the
 * batches of chains that commit at about the same time share the index
 * leaves and WAL frames of one commit.  Writers of other processes still
 * meet SQLite's busy handler.  The list is guarded by writers_lock; a
 * connection and its thread end with the file's last writer. */
typedef struct shared_db {
  char             *path;
  fly_db           *db;
  int               refs;          /* open writers */
  pthread_mutex_t   lock;          /* held while db is used: by the thread
                                      for a transaction, by open and close
                                      to prepare and finalize statements */
  pthread_mutex_t   q_lock;        /* guards the fields below and every
                                      writer's busy, flight, next_q, wrc
                                      and werr */
  pthread_cond_t    wake;          /* to the thread: queue, flush, n_open
                                      or quit changed */
  pthread_cond_t    written;       /* to the chains: batches were written */
  struct fly_trace *queue;         /* writers whose batch waits */
  int               n_queued;      /* their number */
  int               n_open;        /* writers open (that may hand over) */
  int               flush;         /* a writer waits: write what is queued */
  int               quit;
  pthread_t         thread;
  struct shared_db *next;
} shared_db;

static pthread_mutex_t writers_lock = PTHREAD_MUTEX_INITIALIZER;
static shared_db *writers;

/* One buffer of a writer: the iterations of the partial last chunk already
 * committed (the tail, n_tail < CHUNK), then n new ones. */
typedef struct batch {
  size_t         n_tail, n;
  size_t         n_chunks;  /* chunks of the n_tail + n iterations (set at hand-off) */
  int64_t       *iter;      /* [CHUNK - 1 + cap] */
  double        *th;        /* [CHUNK - 1 + cap] x P */
  size_t        *start;     /* [CHUNK + cap]: chunk boundaries */
  fly_trace_row *rows;      /* [cap]: diagnostics of the new iterations */
  int64_t        ck_iter;   /* the checkpoint: state after this iteration */
  unsigned char *ck;        /* [ck_cap]; ck_len bytes of it, if has_ck */
  size_t         ck_len, ck_cap;
  int            has_ck;
} batch;

struct fly_trace {
  shared_db    *sh;        /* the connection and thread, shared with the
                              process's other writers of the file */
  fly_db       *db;        /* sh->db: used under sh->lock */
  int64_t       run_id;
  int           chain;
  size_t        P, cap;
  batch         b[2];
  int           fill;      /* b[fill] takes fly_trace_add's rows */
  /* under sh->q_lock: */
  int           busy;      /* flight is queued or being written */
  batch        *flight;    /* the batch handed to the thread */
  struct fly_trace *next_q;
  int           counted;   /* in sh->n_open */
  fly_rc        wrc;       /* the first failure of a written batch; then */
  fly_err       werr;      /* every later call fails with it */
  sqlite3_stmt *ins_diag, *ins_chunk, *put_ckpt;
};

/* How long the writer thread holds a batch for the other writers' (ns),
 * unless someone waits for it: chains that commit every K iterations hand
 * over within a few ms of each other, and batches written together share
 * the commit's index leaves (one a parameter, each chain's entries next to
 * the others') and WAL frames. */
#define GATHER_NS 50000000L

static fly_rc write_batches(fly_db *db, fly_trace *list, fly_err *err);

/* The writer thread of s: takes the waiting batches (once every open
 * writer has one waiting, a writer waits for its own, or GATHER_NS
 * passed), writes them in one transaction, and tells their chains (a
 * failure goes to each of them). */
static void *writer_main(void *arg)
{
  shared_db *s = arg;
#ifdef __linux__
  prctl(PR_SET_NAME, "flydb-writer");     /* its own line in top -H and perf */
#endif
  pthread_mutex_lock(&s->q_lock);
  for(;;){
    while( !s->queue && !s->quit ) pthread_cond_wait(&s->wake, &s->q_lock);
    if( !s->queue ) break;
    struct timespec due;
    clock_gettime(CLOCK_MONOTONIC, &due);
    due.tv_nsec += GATHER_NS;
    if( due.tv_nsec >= 1000000000L ){
      due.tv_sec++;
      due.tv_nsec -= 1000000000L;
    }
    while( !s->flush && s->n_queued < s->n_open &&
           pthread_cond_timedwait(&s->wake, &s->q_lock, &due) == 0 ) ;
    fly_trace *list = s->queue, *next;
    s->queue = NULL;
    s->n_queued = 0;
    s->flush = 0;
    pthread_mutex_unlock(&s->q_lock);
    fly_err err = {0};
    pthread_mutex_lock(&s->lock);
    fly_rc rc = write_batches(s->db, list, &err);
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&s->q_lock);
    for(fly_trace *t = list; t; t = next){
      next = t->next_q;
      t->next_q = NULL;
      if( rc && !t->wrc ){
        t->wrc = rc;
        t->werr = err;
      }
      t->busy = 0;
    }
    pthread_cond_broadcast(&s->written);
  }
  pthread_mutex_unlock(&s->q_lock);
  return NULL;
}

static void shared_free(shared_db *s)
{
  fly_db_close(s->db);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->q_lock);
  pthread_cond_destroy(&s->wake);
  pthread_cond_destroy(&s->written);
  fly_free(s->path);
  fly_free(s);
}

/* The shared connection to path and its thread, started by the first
 * writer. */
static fly_rc shared_acquire(const char *path, shared_db **out, fly_err *err)
{
  shared_db *s;
  fly_rc rc = FLY_OK;
  pthread_mutex_lock(&writers_lock);
  for(s = writers; s && strcmp(s->path, path); s = s->next) ;
  if( !s ){
    if( !(s = fly_alloc_array(1, sizeof *s)) || !(s->path = fly_strdup(path)) ){
      if( s ) fly_free(s);
      s = NULL;
      rc = fly_fail(err, FLY_NOMEM, "trace writer");
    }else{
      pthread_mutex_init(&s->lock, NULL);
      pthread_mutex_init(&s->q_lock, NULL);
      pthread_condattr_t ca;                 /* timed waits on the monotonic clock */
      pthread_condattr_init(&ca);
      pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
      pthread_cond_init(&s->wake, &ca);
      pthread_condattr_destroy(&ca);
      pthread_cond_init(&s->written, NULL);
      if( (rc = fly_db_open(path, 0, &s->db, err)) == FLY_OK &&
          pthread_create(&s->thread, NULL, writer_main, s) != 0 )
        rc = fly_fail(err, FLY_NOMEM, "%s: starting the trace writer thread", path);
      if( rc ){
        shared_free(s);
        s = NULL;
      }else{
        s->next = writers;
        writers = s;
      }
    }
  }
  if( s ) s->refs++;
  pthread_mutex_unlock(&writers_lock);
  *out = s;
  return rc;
}

static void shared_release(shared_db *s)
{
  shared_db **pp;
  if( !s ) return;
  pthread_mutex_lock(&writers_lock);
  if( --s->refs == 0 ){
    for(pp = &writers; *pp != s; pp = &(*pp)->next) ;
    *pp = s->next;
    pthread_mutex_lock(&s->q_lock);
    s->quit = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->q_lock);
    pthread_join(s->thread, NULL);
    shared_free(s);
  }
  pthread_mutex_unlock(&writers_lock);
}

/* "?f, ?f+1, .., ?f+n-1" appended to sql at *len. */
static void params(char *sql, size_t cap, size_t *len, int f, int n)
{
  for(int k = 0; k < n; k++)
    *len += (size_t)snprintf(sql + *len, cap - *len, "%s?%d", k ? "," : "", f + k);
}

/* The writer's statements, with the run and chain bound (bindings survive
 * sqlite3_reset).  Called under t->sh->lock. */
static fly_rc prepare_writes(fly_trace *t, fly_err *err)
{
  char sql[1536];
  size_t n;
  fly_rc rc;
  n = (size_t)snprintf(sql, sizeof sql, "INSERT INTO draw_block(run_id, chain, iter, blk, "
                       "log_joint, n_bright, n_lik_evals, n_reads, accepted, step_size, "
                       "full_logpost, treedepth, n_leapfrog, divergent, energy, accept_stat) "
                       "VALUES (?1,?2,?3,0,");
  params(sql, sizeof sql, &n, 4, DIAG);
  snprintf(sql + n, sizeof sql - n, ")");
  if( (rc = fly_db_prepare(t->db, sql, &t->ins_diag, err)) ) return rc;
  n = (size_t)snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO draw_chunk(run_id, chain, idx, "
                       "iter0, step, n");
  for(int k = 0; k < CHUNK; k++) n += (size_t)snprintf(sql + n, sizeof sql - n, ", v%d", k);
  n += (size_t)snprintf(sql + n, sizeof sql - n, ") VALUES (");
  params(sql, sizeof sql, &n, 1, CV + CHUNK);
  snprintf(sql + n, sizeof sql - n, ")");
  if( (rc = fly_db_prepare(t->db, sql, &t->ins_chunk, err)) ) return rc;
  rc = fly_db_prepare(t->db, "INSERT OR REPLACE INTO checkpoint(run_id, chain, iter, state) "
                      "VALUES (?1,?2,?3,?4)", &t->put_ckpt, err);
  if( rc ) return rc;
  sqlite3_stmt *st[3] = { t->ins_diag, t->ins_chunk, t->put_ckpt };
  for(int i = 0; i < 3; i++){
    sqlite3_bind_int64(st[i], 1, t->run_id);
    sqlite3_bind_int(st[i], 2, t->chain);
  }
  return FLY_OK;
}

fly_rc fly_trace_open(const char *db_path, int64_t run_id, int chain, size_t P,
                      size_t max_rows, fly_trace **pt, fly_err *err)
{
  fly_trace *t = NULL;
  fly_rc rc = FLY_OK;
  size_t m;
  *pt = NULL;
  t = fly_alloc_array(1, sizeof *t);
  if( !t ) return fly_fail(err, FLY_NOMEM, "trace writer");
  t->run_id = run_id;
  t->chain = chain;
  t->P = P;
  t->cap = max_rows ? max_rows : 1;
  m = CHUNK - 1 + t->cap;
  for(int k = 0; k < 2; k++){
    batch *b = &t->b[k];
    b->iter = fly_alloc_array(m, sizeof *b->iter);
    b->th = fly_alloc_array(m, P * sizeof *b->th);
    b->start = fly_alloc_array(m + 1, sizeof *b->start);
    b->rows = fly_alloc_array(t->cap, sizeof *b->rows);
    if( !b->iter || !b->th || !b->start || !b->rows ){
      rc = fly_fail(err, FLY_NOMEM, "trace buffer");
      goto done;
    }
  }
  if( (rc = shared_acquire(db_path, &t->sh, err)) ) goto done;
  t->db = t->sh->db;
  pthread_mutex_lock(&t->sh->lock);
  rc = prepare_writes(t, err);
  pthread_mutex_unlock(&t->sh->lock);
  pthread_mutex_lock(&t->sh->q_lock);
  t->sh->n_open++;
  t->counted = 1;
  pthread_mutex_unlock(&t->sh->q_lock);
done:
  if( rc ){
    fly_trace_close(t);
    return rc;
  }
  *pt = t;
  return FLY_OK;
}

/* Wait until t's handed-over batch is written (asking the thread not to
 * hold it longer); the writer's first failure. */
static fly_rc wait_written(fly_trace *t, fly_err *err)
{
  shared_db *s = t->sh;
  pthread_mutex_lock(&s->q_lock);
  if( t->busy ){
    s->flush = 1;
    pthread_cond_signal(&s->wake);
  }
  while( t->busy ) pthread_cond_wait(&s->written, &s->q_lock);
  fly_rc rc = t->wrc;
  if( rc && err ) *err = t->werr;
  pthread_mutex_unlock(&s->q_lock);
  return rc;
}

void fly_trace_close(fly_trace *t)
{
  if( !t ) return;
  if( t->sh ){
    wait_written(t, NULL);
    pthread_mutex_lock(&t->sh->q_lock);
    if( t->counted ){                   /* the others' batches no longer wait for it */
      t->sh->n_open--;
      pthread_cond_signal(&t->sh->wake);
    }
    pthread_mutex_unlock(&t->sh->q_lock);
    pthread_mutex_lock(&t->sh->lock);
    sqlite3_finalize(t->ins_diag);
    sqlite3_finalize(t->ins_chunk);
    sqlite3_finalize(t->put_ckpt);
    pthread_mutex_unlock(&t->sh->lock);
    shared_release(t->sh);
  }
  for(int k = 0; k < 2; k++){
    fly_free(t->b[k].iter);
    fly_free(t->b[k].th);
    fly_free(t->b[k].start);
    fly_free(t->b[k].rows);
    fly_free(t->b[k].ck);
  }
  fly_free(t);
}

fly_rc fly_trace_add(fly_trace *t, int64_t iter, const double *th,
                     const fly_trace_row *row, fly_err *err)
{
  batch *b = &t->b[t->fill];
  size_t i = b->n_tail + b->n;
  if( b->n >= t->cap )
    return fly_fail(err, FLY_RANGE, "trace buffer full (%zu rows)", t->cap);
  b->iter[i] = iter;
  memcpy(b->th + i * t->P, th, t->P * sizeof *th);
  b->rows[b->n] = *row;
  b->n++;
  return FLY_OK;
}

size_t fly_trace_pending(const fly_trace *t) { return t->b[t->fill].n; }

static fly_rc step_done(fly_trace *t, sqlite3_stmt *st, const char *what, fly_err *err)
{
  int s = sqlite3_step(st);
  sqlite3_reset(st);
  if( s != SQLITE_DONE ) return fly_db_fail(t->db, err, what);
  return FLY_OK;
}

static fly_rc put_diag(fly_trace *t, int64_t iter, const fly_trace_row *w, fly_err *err)
{
  sqlite3_stmt *st = t->ins_diag;
  sqlite3_bind_int64(st, 3, iter);
  sqlite3_bind_double(st, 4, w->log_joint);
  sqlite3_bind_int64(st, 5, w->n_bright);
  sqlite3_bind_int64(st, 6, w->n_lik);
  sqlite3_bind_int64(st, 7, w->n_reads);
  sqlite3_bind_double(st, 8, w->accepted);
  sqlite3_bind_double(st, 9, w->step_size);
  if( w->full_logpost == w->full_logpost ) sqlite3_bind_double(st, 10, w->full_logpost);
  else sqlite3_bind_null(st, 10);
  if( w->has_kstats ){
    sqlite3_bind_int64(st, 11, w->treedepth);
    sqlite3_bind_int64(st, 12, w->n_leapfrog);
    sqlite3_bind_int64(st, 13, w->divergent);
    sqlite3_bind_double(st, 14, w->energy);
    sqlite3_bind_double(st, 15, w->accept_stat);
  }else{
    for(int k = 11; k < 4 + DIAG; k++) sqlite3_bind_null(st, k);
  }
  return step_done(t, st, "writing diagnostics", err);
}

/* Split iterations 0..m-1 into chunks: at most CHUNK each, equally spaced
 * (a chunk of one has step 1).  start[0..n_chunks] are the boundaries. */
static size_t chunks(const int64_t *iter, size_t m, size_t *start)
{
  size_t n_chunks = 0, i = 0;
  while( i < m ){
    size_t j = i + 1;
    int64_t step = j < m ? iter[j] - iter[i] : 1;
    while( j < m && j - i < CHUNK && step >= 1 && iter[j] - iter[j - 1] == step ) j++;
    start[n_chunks++] = i;
    i = j;
  }
  start[n_chunks] = m;
  return n_chunks;
}

/* Chunk c of batch b (iterations start[c] .. start[c+1]-1) of parameter p. */
static fly_rc put_chunk(fly_trace *t, const batch *b, size_t p, size_t c, fly_err *err)
{
  sqlite3_stmt *st = t->ins_chunk;
  size_t a = b->start[c], len = b->start[c + 1] - a, k;
  sqlite3_bind_int64(st, 3, (int64_t)p);
  sqlite3_bind_int64(st, 4, b->iter[a]);
  sqlite3_bind_int64(st, 5, len > 1 ? b->iter[a + 1] - b->iter[a] : 1);
  sqlite3_bind_int64(st, 6, (int64_t)len);
  for(k = 0; k < len; k++) sqlite3_bind_double(st, CV + 1 + (int)k, b->th[(a + k) * t->P + p]);
  for(; k < CHUNK; k++) sqlite3_bind_null(st, CV + 1 + (int)k);
  return step_done(t, st, "writing draws", err);
}

/* Whether batch b's last chunk is partial (the next batch's tail). */
static int last_partial(const batch *b)
{
  return b->n_chunks && b->start[b->n_chunks] - b->start[b->n_chunks - 1] < CHUNK;
}

/* The handed-over batches of the writers in list, in one transaction:
 * diagnostics rows, then every full chunk (parameter-major, so that each
 * parameter's index entries are consecutive), then every partial last
 * chunk together (see the file comment), then the checkpoints.  Called by
 * the writer thread under the connection's lock. */
static fly_rc write_batches(fly_db *db, fly_trace *list, fly_err *err)
{
  if( DRY_WRITES ) return FLY_OK;
  fly_rc rc = fly_db_begin(db, err);
  fly_trace *t;
  for(t = list; t && rc == FLY_OK; t = t->next_q){
    const batch *b = t->flight;
    for(size_t r = 0; r < b->n && rc == FLY_OK; r++)
      rc = put_diag(t, b->iter[b->n_tail + r], &b->rows[r], err);
  }
  for(t = list; t && rc == FLY_OK; t = t->next_q){
    const batch *b = t->flight;
    size_t n_full = b->n_chunks - (size_t)last_partial(b);
    for(size_t p = 0; p < t->P && rc == FLY_OK; p++)
      for(size_t c = 0; c < n_full && rc == FLY_OK; c++) rc = put_chunk(t, b, p, c, err);
  }
  for(t = list; t && rc == FLY_OK; t = t->next_q){
    const batch *b = t->flight;
    for(size_t p = 0; p < t->P && rc == FLY_OK && last_partial(b); p++)
      rc = put_chunk(t, b, p, b->n_chunks - 1, err);
  }
  for(t = list; t && rc == FLY_OK; t = t->next_q){
    const batch *b = t->flight;
    if( !b->has_ck ) continue;
    sqlite3_bind_int64(t->put_ckpt, 3, b->ck_iter);
    if( b->ck_len ) sqlite3_bind_blob(t->put_ckpt, 4, b->ck, (int)b->ck_len, SQLITE_STATIC);
    else sqlite3_bind_zeroblob(t->put_ckpt, 4, 0);
    rc = step_done(t, t->put_ckpt, "writing the checkpoint", err);
  }
  if( rc == FLY_OK ) rc = fly_db_commit(db, err);
  if( rc ) fly_db_rollback(db);
  return rc;
}

fly_rc fly_trace_submit(fly_trace *t, int64_t iter, const void *ckpt,
                        size_t ckpt_len, fly_err *err)
{
  shared_db *s = t->sh;
  batch *b = &t->b[t->fill], *o = &t->b[1 - t->fill];
  size_t m = b->n_tail + b->n, P = t->P;
  fly_rc rc = wait_written(t, err);     /* o is free once this returns */
  if( rc ) return rc;
  if( ckpt && ckpt_len > b->ck_cap ){
    unsigned char *ck = fly_realloc_array(b->ck, ckpt_len, 1);
    if( !ck ) return fly_fail(err, FLY_NOMEM, "checkpoint of %zu bytes", ckpt_len);
    b->ck = ck;
    b->ck_cap = ckpt_len;
  }
  b->has_ck = ckpt != NULL;
  b->ck_len = ckpt ? ckpt_len : 0;
  if( ckpt && ckpt_len ) memcpy(b->ck, ckpt, ckpt_len);
  b->ck_iter = iter;
  b->n_chunks = chunks(b->iter, m, b->start);
  /* the last chunk, if partial, is the next batch's tail */
  o->n_tail = 0;
  o->n = 0;
  if( last_partial(b) ){
    size_t a = b->start[b->n_chunks - 1];
    o->n_tail = m - a;
    memcpy(o->iter, b->iter + a, o->n_tail * sizeof *o->iter);
    memcpy(o->th, b->th + a * P, o->n_tail * P * sizeof *o->th);
  }
  pthread_mutex_lock(&s->q_lock);
  t->flight = b;
  t->busy = 1;
  t->next_q = s->queue;
  s->queue = t;
  s->n_queued++;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->q_lock);
  t->fill = 1 - t->fill;
  return FLY_OK;
}

fly_rc fly_trace_sync(fly_trace *t, fly_err *err) { return wait_written(t, err); }

fly_rc fly_trace_commit(fly_trace *t, int64_t iter, const void *ckpt,
                        size_t ckpt_len, fly_err *err)
{
  fly_rc rc = fly_trace_submit(t, iter, ckpt, ckpt_len, err);
  return rc ? rc : fly_trace_sync(t, err);
}

/* ---- reading ------------------------------------------------------------ */

#define MAX_CHAINS ((int64_t)1 << 20)    /* beyond this n_chains is corrupt */

struct fly_trace_reader {
  fly_db        *db;          /* borrowed */
  fly_trace_run  run;
  char         **names;       /* [n_params] */
  size_t        *n_warm, *n_post;  /* [n_chains]; NULL until first asked */
  sqlite3_stmt  *st_iter;     /* a chain's iterations and diagnostics (window) */
  sqlite3_stmt  *st_chunk;    /* one parameter's chunks over an iteration range */
  /* the streaming scan: a window of whole iterations, NULL until started */
  int64_t       *win_iter;    /* [win_cap] */
  double        *win_x;       /* [n_params x win_cap] */
  size_t        *win_found;   /* [win_cap]: draws found per iteration */
  fly_trace_row *win_rows;    /* [win_cap] */
  int           *win_diag;    /* [win_cap]: the iteration has diagnostics */
  size_t         win_cap, win_n, win_pos;
  int64_t        scan_after;  /* the window after this one starts past it */
  int64_t        scan_stray;  /* iteration of draws without a row (0: none) */
  int            scanning, ended;
  size_t         scan_chain;
};

static double col_real(sqlite3_stmt *st, int col)
{
  return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

static void col_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
  const char *s = (const char *)sqlite3_column_text(st, col);
  snprintf(dst, cap, "%s", s ? s : "");
}

static fly_rc load_header(fly_trace_reader *r, int64_t run_id, fly_err *err)
{
  fly_trace_run *ri = &r->run;
  sqlite3_stmt *st = NULL;
  char sql[640];
  snprintf(sql, sizeof sql, "SELECT r.id, n_chains, n_warmup, n_iters, thin, n_params, seed, "
           "sample_seconds, wall_seconds, model, sampler, z_mode, status, version, d.name, "
           "d.source, d.n_rows FROM run r JOIN dataset d ON d.id = r.dataset_id %s",
           run_id > 0 ? "WHERE r.id = ?1" : "ORDER BY r.id DESC LIMIT 1");
  fly_rc rc = fly_db_prepare(r->db, sql, &st, err);
  if( rc ) return rc;
  if( run_id > 0 ) sqlite3_bind_int64(st, 1, run_id);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    int64_t C = sqlite3_column_int64(st, 1), P = sqlite3_column_int64(st, 5);
    ri->id = sqlite3_column_int64(st, 0);
    ri->n_warmup = sqlite3_column_int64(st, 2);
    ri->n_iters = sqlite3_column_int64(st, 3);
    ri->thin = sqlite3_column_int64(st, 4);
    ri->seed = (uint64_t)sqlite3_column_int64(st, 6);
    ri->sample_seconds = col_real(st, 7);
    ri->wall_seconds = col_real(st, 8);
    col_text(ri->model, sizeof ri->model, st, 9);
    col_text(ri->sampler, sizeof ri->sampler, st, 10);
    col_text(ri->z_mode, sizeof ri->z_mode, st, 11);
    col_text(ri->status, sizeof ri->status, st, 12);
    col_text(ri->version, sizeof ri->version, st, 13);
    col_text(ri->dataset, sizeof ri->dataset, st, 14);
    col_text(ri->source, sizeof ri->source, st, 15);
    ri->n_rows = sqlite3_column_int64(st, 16);
    if( C < 1 || C > MAX_CHAINS || P < 1 || P > (int64_t)UINT32_MAX || ri->thin < 1
        || ri->n_warmup < 0 || ri->n_iters < 0 )
      rc = fly_fail(err, FLY_CORRUPT, "run %lld: bad shape (%lld chains, %lld parameters, "
                    "thin %lld)", (long long)ri->id, (long long)C, (long long)P,
                    (long long)ri->thin);
    ri->n_chains = (size_t)C;
    ri->n_params = (size_t)P;
  }else if( s != SQLITE_DONE ){
    rc = fly_db_fail(r->db, err, "reading the run");
  }else if( run_id > 0 ){
    rc = fly_fail(err, FLY_RANGE, "%s has no run %lld", fly_db_path(r->db), (long long)run_id);
  }else{
    rc = fly_fail(err, FLY_RANGE, "%s has no runs: run `flydb sample` first", fly_db_path(r->db));
  }
  sqlite3_finalize(st);
  return rc;
}

static fly_rc load_names(fly_trace_reader *r, fly_err *err)
{
  size_t P = r->run.n_params;
  sqlite3_stmt *st = NULL;
  fly_rc rc;
  if( !(r->names = fly_alloc_array(P, sizeof *r->names)) )
    return fly_fail(err, FLY_NOMEM, "parameter names");
  if( (rc = fly_db_prepare(r->db, "SELECT idx, name FROM param WHERE run_id = ?1", &st, err)) )
    return rc;
  sqlite3_bind_int64(st, 1, r->run.id);
  while( rc == FLY_OK && sqlite3_step(st) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    const char *s = (const char *)sqlite3_column_text(st, 1);
    if( i < 0 || (size_t)i >= P || r->names[i] ) continue;
    if( !(r->names[i] = fly_strdup(s ? s : "")) ) rc = fly_fail(err, FLY_NOMEM, "parameter names");
  }
  sqlite3_finalize(st);
  for(size_t p = 0; rc == FLY_OK && p < P; p++){
    char b[32];
    if( r->names[p] ) continue;
    snprintf(b, sizeof b, "theta[%zu]", p + 1);
    if( !(r->names[p] = fly_strdup(b)) ) rc = fly_fail(err, FLY_NOMEM, "parameter names");
  }
  return rc;
}

fly_rc fly_trace_reader_open(fly_db *db, int64_t run_id, fly_trace_reader **pr,
                             fly_err *err)
{
  fly_trace_reader *r = fly_alloc_array(1, sizeof *r);
  fly_rc rc;
  *pr = NULL;
  if( !r ) return fly_fail(err, FLY_NOMEM, "trace reader");
  r->db = db;
  if( (rc = load_header(r, run_id, err)) == FLY_OK ) rc = load_names(r, err);
  if( rc ){
    fly_trace_reader_close(r);
    return rc;
  }
  *pr = r;
  return FLY_OK;
}

void fly_trace_reader_close(fly_trace_reader *r)
{
  if( !r ) return;
  sqlite3_finalize(r->st_iter);
  sqlite3_finalize(r->st_chunk);
  fly_free(r->win_iter);
  fly_free(r->win_x);
  fly_free(r->win_found);
  fly_free(r->win_rows);
  fly_free(r->win_diag);
  if( r->names ) for(size_t p = 0; p < r->run.n_params; p++) fly_free(r->names[p]);
  fly_free(r->names);
  fly_free(r->n_warm);
  fly_free(r->n_post);
  fly_free(r);
}

const fly_trace_run *fly_trace_reader_run(const fly_trace_reader *r) { return &r->run; }

const char *fly_trace_param_name(const fly_trace_reader *r, size_t p)
{
  return p < r->run.n_params ? r->names[p] : "";
}

int fly_trace_option_default(fly_trace_reader *r, const char *key)
{
  sqlite3_stmt *st = NULL;
  int d = 1;
  if( fly_db_prepare(r->db, "SELECT is_default FROM run_config WHERE run_id = ?1 AND key = ?2",
                     &st, NULL) ) return 1;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  if( sqlite3_step(st) == SQLITE_ROW ) d = sqlite3_column_int(st, 0) != 0;
  sqlite3_finalize(st);
  return d;
}

static fly_rc bad_chain(const fly_trace_reader *r, size_t c, fly_err *err)
{
  return fly_fail(err, FLY_RANGE, "run %lld has chains 0..%zu, not %zu", (long long)r->run.id,
                  r->run.n_chains - 1, c);
}

fly_rc fly_trace_chain_len(fly_trace_reader *r, size_t c, size_t *n_warm, size_t *n_post,
                           fly_err *err)
{
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  if( !r->n_warm ){
    size_t C = r->run.n_chains;
    sqlite3_stmt *st = NULL;
    int s;
    r->n_warm = fly_alloc_array(C, sizeof *r->n_warm);
    r->n_post = fly_alloc_array(C, sizeof *r->n_post);
    if( !r->n_warm || !r->n_post ){
      fly_free(r->n_warm);
      fly_free(r->n_post);
      r->n_warm = r->n_post = NULL;
      return fly_fail(err, FLY_NOMEM, "chain lengths");
    }
    fly_rc rc = fly_db_prepare(r->db, "SELECT chain, sum(iter <= ?2), sum(iter > ?2) FROM "
                               "iteration WHERE run_id = ?1 GROUP BY chain", &st, err);
    if( rc == FLY_OK ){
      sqlite3_bind_int64(st, 1, r->run.id);
      sqlite3_bind_int64(st, 2, r->run.n_warmup);
      while( (s = sqlite3_step(st)) == SQLITE_ROW ){
        int64_t k = sqlite3_column_int64(st, 0);
        if( k < 0 || (size_t)k >= C ) continue;
        r->n_warm[k] = (size_t)sqlite3_column_int64(st, 1);
        r->n_post[k] = (size_t)sqlite3_column_int64(st, 2);
      }
      if( s != SQLITE_DONE ) rc = fly_db_fail(r->db, err, "counting iterations");
      sqlite3_finalize(st);
    }
    if( rc ){
      fly_free(r->n_warm);
      fly_free(r->n_post);
      r->n_warm = r->n_post = NULL;
      return rc;
    }
  }
  if( n_warm ) *n_warm = r->n_warm[c];
  if( n_post ) *n_post = r->n_post[c];
  return FLY_OK;
}

/* The diagnostics columns, read by diag_read: n_bright (NULL: the row has
 * no diagnostics), log_joint .. full_logpost, then the kernel statistics;
 * st_iter selects iter and these. */
#define DIAG_COLS "n_bright, log_joint, n_lik_evals, n_reads, accepted, step_size, " \
                  "full_logpost, treedepth, n_leapfrog, divergent, energy, accept_stat"
#define ITER_COLS "iter, " DIAG_COLS

static fly_rc prepare_reads(fly_trace_reader *r, fly_err *err)
{
  char sql[1024];
  size_t n;
  fly_rc rc;
  if( r->st_iter ) return FLY_OK;
  if( (rc = fly_db_prepare(r->db, "SELECT " ITER_COLS " FROM draw_block WHERE run_id = ?1 AND "
                           "chain = ?2 AND blk = 0 AND iter > ?3 ORDER BY iter LIMIT ?4",
                           &r->st_iter, err)) ) return rc;
  /* the chunks holding iterations ?4 .. ?5: from the last one starting at
   * or before ?4 on, one range scan */
  n = (size_t)snprintf(sql, sizeof sql, "SELECT iter0, step, n");
  for(int k = 0; k < CHUNK; k++) n += (size_t)snprintf(sql + n, sizeof sql - n, ", v%d", k);
  snprintf(sql + n, sizeof sql - n, " FROM draw_chunk WHERE run_id = ?1 AND idx = ?2 AND "
           "chain = ?3 AND iter0 >= coalesce((SELECT max(iter0) FROM draw_chunk WHERE "
           "run_id = ?1 AND idx = ?2 AND chain = ?3 AND iter0 <= ?4), ?4) AND iter0 <= ?5 "
           "ORDER BY iter0");
  if( (rc = fly_db_prepare(r->db, sql, &r->st_chunk, err)) ){
    sqlite3_finalize(r->st_iter);
    r->st_iter = NULL;
  }
  return rc;
}

/* The kernel statistics in columns i .. i+4 (treedepth first; NULL there:
 * none). */
static void kstats_read(sqlite3_stmt *st, int i, fly_trace_row *w);

/* A diagnostics row from columns 1.. of st, in DIAG_COLS order. */
static void diag_read(sqlite3_stmt *st, fly_trace_row *w)
{
  w->n_bright = sqlite3_column_int64(st, 1);
  w->log_joint = col_real(st, 2);
  w->n_lik = sqlite3_column_int64(st, 3);
  w->n_reads = sqlite3_column_int64(st, 4);
  w->accepted = sqlite3_column_double(st, 5);
  w->step_size = col_real(st, 6);
  w->full_logpost = col_real(st, 7);
  kstats_read(st, 8, w);
}

static void kstats_read(sqlite3_stmt *st, int i, fly_trace_row *w)
{
  w->has_kstats = sqlite3_column_type(st, i) != SQLITE_NULL;
  w->treedepth = (int)sqlite3_column_int64(st, i);
  w->n_leapfrog = sqlite3_column_int64(st, i + 1);
  w->divergent = (int)sqlite3_column_int64(st, i + 2);
  w->energy = col_real(st, i + 3);
  w->accept_stat = col_real(st, i + 4);
}

/* The first (at most) cap stored iterations of chain c after `after`, into
 * iters[0..*n), with their diagnostics in rows (has_diag[t] = 0 for a row
 * without them) when rows is not NULL; and the draws of parameters p0 ..
 * p0+n_p-1 there: x[k*cap + t] (NaN when missing or NULL), found[t] the
 * draws found (found may be NULL).  *stray: the first iteration in
 * (after, iters[*n-1]] holding draws but no row, 0 if none.  FLY_SQL. */
static fly_rc read_window(fly_trace_reader *r, size_t c, size_t p0, size_t n_p, int64_t after,
                          size_t cap, double *x, int64_t *iters, size_t *found,
                          fly_trace_row *rows, int *has_diag, int64_t *stray, size_t *n,
                          fly_err *err)
{
  sqlite3_stmt *st;
  size_t t = 0;
  int s;
  fly_rc rc = prepare_reads(r, err);
  *n = 0;
  *stray = 0;
  if( rc ) return rc;
  st = r->st_iter;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_int64(st, 2, (int64_t)c);
  sqlite3_bind_int64(st, 3, after);
  sqlite3_bind_int64(st, 4, (int64_t)cap);
  while( t < cap && (s = sqlite3_step(st)) == SQLITE_ROW ){
    iters[t] = sqlite3_column_int64(st, 0);
    if( rows ){
      fly_trace_row *w = &rows[t];
      has_diag[t] = sqlite3_column_type(st, 1) != SQLITE_NULL;
      diag_read(st, w);
    }
    t++;
  }
  if( t < cap && s != SQLITE_DONE ) rc = fly_db_fail(r->db, err, "reading iterations");
  sqlite3_reset(st);
  if( rc || t == 0 ) return rc;
  for(size_t k = 0; k < n_p; k++)
    for(size_t i = 0; i < t; i++) x[k * cap + i] = NAN;
  if( found ) memset(found, 0, t * sizeof *found);
  st = r->st_chunk;
  for(size_t k = 0; k < n_p && rc == FLY_OK; k++){
    size_t j = 0;
    sqlite3_bind_int64(st, 1, r->run.id);
    sqlite3_bind_int64(st, 2, (int64_t)(p0 + k));
    sqlite3_bind_int64(st, 3, (int64_t)c);
    sqlite3_bind_int64(st, 4, iters[0]);
    sqlite3_bind_int64(st, 5, iters[t - 1]);
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      int64_t it0 = sqlite3_column_int64(st, 0), step = sqlite3_column_int64(st, 1);
      int64_t len = sqlite3_column_int64(st, 2);
      if( len > CHUNK ) len = CHUNK;
      for(int64_t q = 0; q < len; q++){
        int64_t it = it0 + q * step;
        if( it > iters[t - 1] ) break;
        if( it < iters[0] ){
          if( it > after && !*stray ) *stray = it;
          continue;
        }
        while( j < t && iters[j] < it ) j++;
        if( j < t && iters[j] == it ){
          x[k * cap + j] = col_real(st, 3 + (int)q);
          if( found ) found[j]++;
        }else if( !*stray ){
          *stray = it;
        }
      }
    }
    if( s != SQLITE_DONE ) rc = fly_db_fail(r->db, err, "reading draws");
    sqlite3_reset(st);
  }
  *n = t;
  return rc;
}

fly_rc fly_trace_draws(fly_trace_reader *r, size_t c, size_t p0, size_t n_p, int64_t after,
                       size_t cap, double *x, int64_t *iters, size_t *n, fly_err *err)
{
  int64_t *it = iters, stray;
  fly_rc rc;
  *n = 0;
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  if( n_p == 0 || p0 >= r->run.n_params || n_p > r->run.n_params - p0 )
    return fly_fail(err, FLY_RANGE, "run %lld has parameters 0..%zu, not %zu..%zu",
                    (long long)r->run.id, r->run.n_params - 1, p0, p0 + n_p - 1);
  if( cap == 0 ) return FLY_OK;
  if( !it && !(it = fly_alloc_array(cap, sizeof *it)) )
    return fly_fail(err, FLY_NOMEM, "iterations of chain %zu", c);
  rc = read_window(r, c, p0, n_p, after, cap, x, it, NULL, NULL, NULL, &stray, n, err);
  if( it != iters ) fly_free(it);
  return rc;
}

fly_rc fly_trace_diagnostics(fly_trace_reader *r, size_t c, int64_t after, size_t cap,
                             fly_trace_row *rows, int64_t *iters, size_t *n, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  size_t t = 0;
  int s;
  *n = 0;
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  fly_rc rc = fly_db_prepare(r->db, "SELECT iter, " DIAG_COLS " FROM iteration WHERE "
                             "run_id = ?1 AND chain = ?2 AND iter > ?3 ORDER BY iter", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_int64(st, 2, (int64_t)c);
  sqlite3_bind_int64(st, 3, after);
  while( t < cap && (s = sqlite3_step(st)) == SQLITE_ROW ){
    fly_trace_row *w = &rows[t];
    if( iters ) iters[t] = sqlite3_column_int64(st, 0);
    diag_read(st, w);
    t++;
  }
  if( t < cap && s != SQLITE_DONE ) rc = fly_db_fail(r->db, err, "reading diagnostics");
  sqlite3_finalize(st);
  *n = t;
  return rc;
}

fly_rc fly_trace_diagnostics_mean(fly_trace_reader *r, int64_t after, fly_trace_means *m,
                                  fly_err *err)
{
  sqlite3_stmt *st = NULL;
  m->n_bright = m->n_lik = m->n_reads = m->accepted = NAN;
  fly_rc rc = fly_db_prepare(r->db, "SELECT avg(n_bright), avg(n_lik_evals), avg(n_reads), "
                             "avg(accepted) FROM iteration WHERE run_id=?1 AND iter>?2", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, r->run.id);
  sqlite3_bind_int64(st, 2, after);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ){
    m->n_bright = sqlite3_column_double(st, 0);
    m->n_lik = sqlite3_column_double(st, 1);
    m->n_reads = sqlite3_column_double(st, 2);
    m->accepted = sqlite3_column_double(st, 3);
  }else if( s != SQLITE_ROW ){
    rc = fly_db_fail(r->db, err, "averaging diagnostics");
  }
  sqlite3_finalize(st);
  return rc;
}

/* Iterations per window of the streaming scan: up to 256, fewer for runs of
 * over 4096 parameters (about 8 MB of draws). */
static size_t scan_window(size_t P)
{
  size_t w = ((size_t)1 << 20) / P;
  return w < 1 ? 1 : w > 256 ? 256 : w;
}

fly_rc fly_trace_scan_start(fly_trace_reader *r, size_t c, int64_t after, fly_err *err)
{
  if( c >= r->run.n_chains ) return bad_chain(r, c, err);
  if( !r->win_iter ){
    size_t W = scan_window(r->run.n_params);
    r->win_iter = fly_alloc_array(W, sizeof *r->win_iter);
    r->win_x = fly_alloc_array(W, r->run.n_params * sizeof *r->win_x);
    r->win_found = fly_alloc_array(W, sizeof *r->win_found);
    r->win_rows = fly_alloc_array(W, sizeof *r->win_rows);
    r->win_diag = fly_alloc_array(W, sizeof *r->win_diag);
    if( !r->win_iter || !r->win_x || !r->win_found || !r->win_rows || !r->win_diag ){
      fly_free(r->win_iter);
      fly_free(r->win_x);
      fly_free(r->win_found);
      fly_free(r->win_rows);
      fly_free(r->win_diag);
      r->win_iter = NULL;
      r->win_x = NULL;
      r->win_found = NULL;
      r->win_rows = NULL;
      r->win_diag = NULL;
      return fly_fail(err, FLY_NOMEM, "trace scan of %zu parameters", r->run.n_params);
    }
    r->win_cap = W;
  }
  r->scan_chain = c;
  r->scan_after = after;
  r->win_n = r->win_pos = 0;
  r->scanning = 1;
  r->ended = 0;
  return FLY_OK;
}

fly_rc fly_trace_scan_next(fly_trace_reader *r, int64_t *iter, fly_trace_row *row, double *th,
                           fly_err *err)
{
  size_t P = r->run.n_params, W = r->win_cap, i;
  long long run = (long long)r->run.id, chain = (long long)r->scan_chain + 1;
  if( !r->scanning ) return fly_fail(err, FLY_MISUSE, "trace scan not started");
  if( r->ended ) return FLY_DONE;
  if( r->win_pos == r->win_n ){
    fly_rc rc = read_window(r, r->scan_chain, 0, P, r->scan_after, W, r->win_x, r->win_iter,
                            r->win_found, r->win_rows, r->win_diag, &r->scan_stray,
                            &r->win_n, err);
    r->win_pos = 0;
    if( rc ){ r->ended = 1; return rc; }
    if( r->win_n == 0 ){ r->ended = 1; return FLY_DONE; }
  }
  i = r->win_pos++;
  *iter = r->win_iter[i];
  r->scan_after = *iter;
  if( r->scan_stray && r->scan_stray < *iter ){
    r->ended = 1;
    return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld: draws of iteration %lld have no "
                    "row in table iteration", run, chain, (long long)r->scan_stray);
  }
  if( !r->win_diag[i] ){
    r->ended = 1;
    return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld: draws of iteration %lld have no "
                    "row in table iteration", run, chain, (long long)*iter);
  }
  if( r->win_found[i] != P ){
    r->ended = 1;
    return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld, iteration %lld: %zu draws, want "
                    "%zu", run, chain, (long long)*iter, r->win_found[i], P);
  }
  *row = r->win_rows[i];
  for(size_t p = 0; p < P; p++) th[p] = r->win_x[p * W + i];
  return FLY_ROW;
}

fly_rc fly_trace_checkpoint(fly_db *db, int64_t run_id, int chain, int64_t *iter,
                            void **state, size_t *len, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  *iter = 0;
  *state = NULL;
  *len = 0;
  fly_rc rc = fly_db_prepare(db, "SELECT iter, state FROM checkpoint WHERE run_id = ?1 AND "
                             "chain = ?2", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, chain);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    size_t n = (size_t)sqlite3_column_bytes(st, 1);
    void *p = fly_alloc_array(n ? n : 1, 1);
    if( !p ) rc = fly_fail(err, FLY_NOMEM, "checkpoint of chain %d", chain);
    else{
      if( n ) memcpy(p, sqlite3_column_blob(st, 1), n);
      *iter = sqlite3_column_int64(st, 0);
      *state = p;
      *len = n;
    }
  }else if( s != SQLITE_DONE ){
    rc = fly_db_fail(db, err, "reading the checkpoint");
  }
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_trace_truncate(fly_db *db, int64_t run_id, int chain, int64_t after, fly_err *err)
{
  /* diagnostics rows; chunks that start later; and chunks that straddle
   * `after` keep their draws up to it (a chain's commits end chunks, so
   * this happens only to a chain cut short elsewhere) */
  char cut[6144];      /* 63 column updates of about 52 characters */
  size_t n = (size_t)snprintf(cut, sizeof cut, "UPDATE draw_chunk SET n = (?3 - iter0) / step + 1");
  for(int k = 1; k < CHUNK; k++)
    n += (size_t)snprintf(cut + n, sizeof cut - n, ", v%d = CASE WHEN %d * step <= ?3 - iter0 "
                          "THEN v%d END", k, k, k);
  snprintf(cut + n, sizeof cut - n, " WHERE run_id = ?1 AND chain = ?2 AND iter0 <= ?3 AND "
           "iter0 + (n - 1) * step > ?3");
  const char *sql[3] = {
    "DELETE FROM draw_block WHERE run_id = ?1 AND chain = ?2 AND iter > ?3",
    "DELETE FROM draw_chunk WHERE run_id = ?1 AND chain = ?2 AND iter0 > ?3", cut };
  fly_rc rc = fly_db_exec(db, "SAVEPOINT trace_truncate", err);
  for(int i = 0; i < 3 && rc == FLY_OK; i++){
    sqlite3_stmt *st = NULL;
    if( (rc = fly_db_prepare(db, sql[i], &st, err)) ) break;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, chain);
    sqlite3_bind_int64(st, 3, after);
    if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "deleting draws");
    sqlite3_finalize(st);
  }
  if( rc == FLY_OK ) return fly_db_exec(db, "RELEASE trace_truncate", err);
  fly_db_exec(db, "ROLLBACK TO trace_truncate; RELEASE trace_truncate", NULL);
  return rc;
}

/* ---- checking ----------------------------------------------------------- */

typedef struct checker {
  fly_db               *db;
  const fly_trace_shape *s;
  fly_trace_problem_fn  problem;
  void                 *u;
} checker;

static void problem(checker *ck, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
static void problem(checker *ck, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck->problem(ck->u, msg);
}

/* A statement that cannot be prepared or stepped is a problem too (a
 * damaged file, a missing table). */
static sqlite3_stmt *prep(checker *ck, const char *sql)
{
  sqlite3_stmt *st = NULL;
  fly_err e = {0};
  if( fly_db_prepare(ck->db, sql, &st, &e) ) problem(ck, "%s", e.msg);
  return st;
}

static void step_failed(checker *ck, const char *what)
{
  problem(ck, "%s: %s", what, sqlite3_errmsg(fly_db_sqlite(ck->db)));
}

/* "a" or "a..b" into buf. */
static const char *span(char *buf, size_t n, int64_t a, int64_t b)
{
  if( a == b ) snprintf(buf, n, "%lld", (long long)a);
  else snprintf(buf, n, "%lld..%lld", (long long)a, (long long)b);
  return buf;
}

static void check_params(checker *ck)
{
  const fly_trace_shape *r = ck->s;
  sqlite3_stmt *st = prep(ck, "SELECT idx FROM param WHERE run_id = ?1"
                          " ORDER BY idx");
  int64_t next = 0;
  char buf[48];
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->run_id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    if( i < 0 || i >= r->n_params ){
      problem(ck, "param idx %lld: the run has parameters 0..%lld",
              (long long)i, (long long)r->n_params - 1);
      continue;
    }
    if( i > next )
      problem(ck, "param rows of idx %s missing", span(buf, sizeof buf, next, i - 1));
    next = i + 1;
  }
  if( s != SQLITE_DONE ) step_failed(ck, "reading table param");
  else if( next < r->n_params )
    problem(ck, "param rows of idx %s missing",
            span(buf, sizeof buf, next, r->n_params - 1));
  sqlite3_finalize(st);
}

/* Rows of view draw (is_draw) or iteration of chain c: exactly the
 * iterations thin, 2 thin, .. up to last, each draw iteration with all P
 * parameters.  beyond says what last is, for rows past it. */
static void check_chain_rows(checker *ck, int64_t c, int is_draw, int64_t last,
                             const char *beyond)
{
  const fly_trace_shape *r = ck->s;
  const char *tab = is_draw ? "draw" : "iteration";
  sqlite3_stmt *st = prep(ck, is_draw
    ? "SELECT iter, count(value), min(idx), max(idx) FROM draw"
      " WHERE run_id = ?1 AND chain = ?2 GROUP BY iter ORDER BY iter"
    : "SELECT iter, 1, 0, 0 FROM iteration WHERE run_id = ?1 AND chain = ?2"
      " ORDER BY iter");
  int64_t next = r->thin, end = last - last % r->thin;
  int64_t n_beyond = 0, lo_beyond = 0, hi_beyond = 0;
  char buf[48], thin[48] = "";
  int s;

  if( !st ) return;
  if( r->thin > 1 ) snprintf(thin, sizeof thin, " (multiples of thin %lld)",
                             (long long)r->thin);
  sqlite3_bind_int64(st, 1, r->run_id);
  sqlite3_bind_int64(st, 2, c);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t it = sqlite3_column_int64(st, 0);
    int64_t cnt = sqlite3_column_int64(st, 1);
    int64_t lo = sqlite3_column_int64(st, 2), hi = sqlite3_column_int64(st, 3);
    if( it < 1 || it % r->thin != 0 ){
      problem(ck, "chain %lld: %s rows at iteration %lld, which is not a "
              "positive multiple of thin %lld", (long long)c, tab,
              (long long)it, (long long)r->thin);
      continue;
    }
    if( it > last ){
      if( n_beyond++ == 0 ) lo_beyond = it;
      hi_beyond = it;
      continue;
    }
    if( it > next )
      problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
              (long long)c, tab, it - r->thin > next ? "s" : "",
              span(buf, sizeof buf, next, it - r->thin), thin);
    next = it + r->thin;
    if( is_draw && (cnt != r->n_params || lo != 0 || hi != r->n_params - 1) )
      problem(ck, "chain %lld, iteration %lld: %lld draw row%s (idx %s), want "
              "one for each idx 0..%lld", (long long)c, (long long)it,
              (long long)cnt, cnt == 1 ? "" : "s", span(buf, sizeof buf, lo, hi),
              (long long)r->n_params - 1);
  }
  if( s != SQLITE_DONE ) step_failed(ck, is_draw ? "reading table draw"
                                                 : "reading table iteration");
  else if( next <= end )
    problem(ck, "chain %lld: %s rows missing for iteration%s %s%s",
            (long long)c, tab, end > next ? "s" : "",
            span(buf, sizeof buf, next, end), thin);
  if( n_beyond )
    problem(ck, "chain %lld: %s rows at %lld iteration%s (%s) %s",
            (long long)c, tab, (long long)n_beyond, n_beyond > 1 ? "s" : "",
            span(buf, sizeof buf, lo_beyond, hi_beyond), beyond);
  sqlite3_finalize(st);
}

/* Rows of `tab` in chains the run does not have. */
static void check_stray_chains(checker *ck, const char *sql, const char *tab)
{
  const fly_trace_shape *r = ck->s;
  sqlite3_stmt *st = prep(ck, sql);
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, r->run_id);
  sqlite3_bind_int64(st, 2, r->n_chains);
  while( (s = sqlite3_step(st)) == SQLITE_ROW )
    problem(ck, "%lld %s row%s of chain %lld, but the run has chains 0..%lld",
            (long long)sqlite3_column_int64(st, 1), tab,
            sqlite3_column_int64(st, 1) == 1 ? "" : "s",
            (long long)sqlite3_column_int64(st, 0), (long long)r->n_chains - 1);
  if( s != SQLITE_DONE ) step_failed(ck, tab);
  sqlite3_finalize(st);
}

fly_rc fly_trace_check(fly_db *db, const fly_trace_shape *r, fly_trace_problem_fn fn,
                       fly_trace_ckpt_fn ckpt, void *u, fly_err *err)
{
  checker ck = { db, r, fn, u };
  int64_t *ck_iter = NULL, total = r->n_warmup + r->n_iters;
  sqlite3_stmt *st = NULL;
  int s;

  check_params(&ck);
  ck_iter = fly_alloc_array((size_t)r->n_chains, sizeof *ck_iter);
  if( !ck_iter ){
    problem(&ck, "out of memory for %lld chains", (long long)r->n_chains);
    return fly_fail(err, FLY_NOMEM, "checking run %lld", (long long)r->run_id);
  }
  for(int64_t c = 0; c < r->n_chains; c++) ck_iter[c] = -1;
  if( (st = prep(&ck, "SELECT chain, iter, state FROM checkpoint"
                 " WHERE run_id = ?1 ORDER BY chain")) ){
    sqlite3_bind_int64(st, 1, r->run_id);
    while( (s = sqlite3_step(st)) == SQLITE_ROW ){
      int64_t c = sqlite3_column_int64(st, 0), it = sqlite3_column_int64(st, 1);
      const void *p = sqlite3_column_blob(st, 2);
      size_t len = (size_t)sqlite3_column_bytes(st, 2);
      if( c < 0 || c >= r->n_chains ){
        problem(&ck, "checkpoint of chain %lld, but the run has chains "
                "0..%lld", (long long)c, (long long)r->n_chains - 1);
        continue;
      }
      if( it < 1 || it > total ){
        problem(&ck, "chain %lld: checkpoint at iteration %lld, outside "
                "1..%lld", (long long)c, (long long)it, (long long)total);
        it = -2;
      }
      ck_iter[c] = it;
      if( ckpt ) ckpt(u, c, p, len);
    }
    if( s != SQLITE_DONE ) step_failed(&ck, "reading table checkpoint");
    sqlite3_finalize(st);
  }

  /* ck_iter: -1 none, -2 out of range (reported), else the iteration.  A
   * running chain's rows go up to its checkpoint, a done one's to the end. */
  for(int64_t c = 0; c < r->n_chains; c++){
    int64_t it = ck_iter[c], last = it < 0 ? 0 : it;
    char beyond[96];
    if( r->done ){
      if( it == -1 )
        problem(&ck, "chain %lld: status 'done', but the chain has no "
                "checkpoint", (long long)c);
      else if( it >= 0 && it != total )
        problem(&ck, "chain %lld: status 'done', but its checkpoint is at "
                "iteration %lld of %lld", (long long)c, (long long)it,
                (long long)total);
      last = total;
      snprintf(beyond, sizeof beyond, "beyond the run's last iteration %lld",
               (long long)total);
    }else if( it == -2 ){
      continue;                 /* no telling where its rows should end */
    }else if( it == -1 ){
      snprintf(beyond, sizeof beyond, "but the chain has no checkpoint");
    }else{
      snprintf(beyond, sizeof beyond, "beyond its checkpoint at iteration %lld",
               (long long)it);
    }
    check_chain_rows(&ck, c, 1, last, beyond);
    check_chain_rows(&ck, c, 0, last, beyond);
  }
  check_stray_chains(&ck, "SELECT chain, count(*) FROM draw WHERE run_id = ?1"
                     " AND (chain < 0 OR chain >= ?2) GROUP BY chain", "draw");
  check_stray_chains(&ck, "SELECT chain, count(*) FROM iteration WHERE"
                     " run_id = ?1 AND (chain < 0 OR chain >= ?2) GROUP BY chain",
                     "iteration");
  fly_free(ck_iter);
  return FLY_OK;
}
