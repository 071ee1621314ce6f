/*
 * index.c -- the bucket index and the row sketches built together (see
 * index.h).
 *
 * The calling thread is one of the workers.  A phase's workers take chunk
 * numbers from one atomic counter; the first failure stops the others at
 * their next chunk, and its error is the one returned.
 */
#include "flymc/index.h"

#include <string.h>

#include "store/db.h"
#include "store/pages.h"
#include "util/mem.h"
#include "util/par.h"

#define MAX_THREADS 16

typedef struct shared {
  const char      *path;
  int64_t          ds, bs;
  fly_buckets     *b;
  fly_sketch      *s;            /* NULL: no sketches */
  const fly_pages *bp, *dp;      /* the caller's handles: the workers' maps */
  int64_t          next[2];      /* each phase's next chunk */
  int              failed;
} shared;

typedef struct worker {
  shared          *sh;
  int              phase;        /* 0: count, 1: place and sketch */
  fly_buckets_ws  *ws;
  uint8_t         *codes;        /* chunk_rows sketches, when there are sketches */
  fly_rc           rc;
  fly_err          err;
} worker;

static void *work(void *arg)
{
  worker *w = arg;
  shared *sh = w->sh;
  fly_buckets *b = sh->b;
  fly_db *db = NULL;
  fly_pages *bp = NULL, *dp = NULL;
  int began = 0;
  fly_rc rc = fly_db_open(sh->path, FLY_DB_READONLY, &db, &w->err);
  if( rc == FLY_OK ) rc = fly_pages_open_like(db, FLY_TABLE_BOUND, sh->bs, sh->bp, 0, &bp, &w->err);
  if( rc == FLY_OK && w->phase == 1 && sh->s )
    rc = fly_pages_open_like(db, FLY_TABLE_DATA, sh->ds, sh->dp, 0, &dp, &w->err);
  if( rc == FLY_OK ) began = fly_db_read_begin(db);   /* one snapshot for the pass */
  while( rc == FLY_OK && !__atomic_load_n(&sh->failed, __ATOMIC_RELAXED) ){
    int64_t c = __atomic_fetch_add(&sh->next[w->phase], 1, __ATOMIC_RELAXED);
    if( c >= b->n_chunks ) break;
    if( w->phase == 0 ){
      rc = fly_buckets_count(bp, b, w->ws, c, &w->err);
      continue;
    }
    /* the chunk's codes by row first, so each record is then written
     * whole: one random write a row */
    int64_t r0 = c * b->chunk_rows;
    int64_t n = b->N - r0 < b->chunk_rows ? b->N - r0 : b->chunk_rows;
    if( dp ) rc = fly_sketch_fill_rows(dp, sh->s, r0, n, w->codes, &w->err);
    if( rc == FLY_OK ) rc = fly_buckets_place(bp, b, w->ws, c, w->codes, &w->err);
  }
  if( rc ) __atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
  if( db ) fly_db_read_end(db, began);
  fly_pages_close(dp);
  fly_pages_close(bp);
  fly_db_close(db);
  w->rc = rc;
  return NULL;
}

/* One phase on nt workers; the first failure's code and message. */
static fly_rc phase(worker *w, int nt, int ph, fly_err *err)
{
  fly_par par[MAX_THREADS];
  for(int t = 0; t < nt; t++){ w[t].phase = ph; w[t].rc = FLY_OK; }
  for(int t = 1; t < nt; t++) fly_par_start(&par[t], work, &w[t]);
  work(&w[0]);
  for(int t = 1; t < nt; t++) fly_par_join(&par[t]);
  for(int t = 0; t < nt; t++)
    if( w[t].rc ){
      *err = w[t].err;
      return w[t].rc;
    }
  return FLY_OK;
}

fly_rc fly_index_build(const char *db_path, int64_t ds, int64_t bs, const fly_pages *bmap,
                       const fly_pages *dmap, const fly_model *m, const double *L,
                       int threads, fly_buckets *b, fly_sketch *s,
                       fly_err *err)
{
  shared sh;
  worker w[MAX_THREADS];
  fly_buckets_ws *ws[MAX_THREADS];
  fly_db *db = NULL;
  fly_pages *bp = NULL, *dp = NULL;
  int nt = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
  fly_rc rc;

  memset(b, 0, sizeof *b);
  memset(s, 0, sizeof *s);
  memset(&sh, 0, sizeof sh);
  memset(w, 0, sizeof w);
  memset(ws, 0, sizeof ws);
  /* the shapes: chunks of whole data pages when there are sketches */
  rc = fly_db_open(db_path, FLY_DB_READONLY, &db, err);
  if( rc == FLY_OK ) rc = fly_pages_open_like(db, FLY_TABLE_BOUND, bs, bmap, 0, &bp, err);
  if( rc == FLY_OK && L ) rc = fly_pages_open_like(db, FLY_TABLE_DATA, ds, dmap, 0, &dp, err);
  if( rc == FLY_OK ){
    const fly_pages_info *bi = fly_pages_info_of(bp), *di = dp ? fly_pages_info_of(dp) : NULL;
    int64_t unit = di ? di->page_rows : bi->page_rows;
    if( di && di->n_rows != bi->n_rows )
      rc = fly_fail(err, FLY_CORRUPT, "data set %lld has %lld rows, its bound set %lld "
                    "%lld", (long long)ds, (long long)di->n_rows, (long long)bs,
                    (long long)bi->n_rows);
    if( rc == FLY_OK ) rc = fly_buckets_init(bi, m, L ? FLY_SKETCH_BYTES : 0, unit > 0 ? unit : 1, b, err);
    if( rc == FLY_OK && L )
      rc = fly_sketch_init_placed(di, m, L, fly_buckets_tail(b, 0), b->stride, s, err);
  }
  for(int t = 0; t < nt && rc == FLY_OK; t++){
    rc = fly_buckets_ws_new(b, &ws[t], err);
    if( rc == FLY_OK && L &&
        !(w[t].codes = fly_alloc_array((size_t)b->chunk_rows, FLY_SKETCH_BYTES)) )
      rc = fly_fail(err, FLY_NOMEM, "sketches of a chunk of %lld rows",
                    (long long)b->chunk_rows);
  }
  if( rc == FLY_OK ){
    sh.path = db_path;
    sh.ds = ds;
    sh.bs = bs;
    sh.b = b;
    sh.s = L ? s : NULL;
    sh.bp = bp;
    sh.dp = dp;
    for(int t = 0; t < nt; t++){ w[t].sh = &sh; w[t].ws = ws[t]; }
    rc = phase(w, nt, 0, err);
  }
  if( rc == FLY_OK ) rc = fly_buckets_layout(b, err);
  if( rc == FLY_OK ) rc = phase(w, nt, 1, err);
  if( rc == FLY_OK ) rc = fly_buckets_finish(b, m, ws, (size_t)nt, err);
  for(int t = 0; t < nt; t++){
    fly_buckets_ws_free(ws[t]);
    fly_free(w[t].codes);
  }
  fly_pages_close(dp);
  fly_pages_close(bp);
  fly_db_close(db);
  if( rc ){
    fly_sketch_free(s);
    fly_buckets_free(b);
  }
  return rc;
}
