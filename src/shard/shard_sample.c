/*
 * shard_sample.c -- sampling a shard manifest over ranks (see
 * shard_sample.h).
 *
 * One chain of the run is a replicated part (theta, its log density, the
 * kernel's state and the RNG stream (seed, chain): the same bits on every
 * rank) and one flymc chain per owned shard (z of the shard's rows, its
 * bright block and gaps, its RNG stream (seed_k, chain)).  The shard chains
 * never move theta themselves: the sharded target below evaluates each at
 * the kernel's point, and before each z step a shard chain is set to the
 * accepted theta (fly_chain_set_theta: one more pass over its bright rows,
 * skipped when theta did not move).  A shard's term is its chain's log
 * density minus log p(theta) (each chain includes the prior; the run counts
 * it once); the same subtraction on every rank keeps the sum's bits
 * independent of R.
 *
 * The initial state: theta_0 from the replicated stream (the MAP, or a
 * Laplace draw), each shard's z_0 drawn at the MAP (fly_chain_init) and
 * refreshed by one z step at theta_0.
 *
 * Every rank must checkpoint (and stop) at the same iterations: at those
 * the configuration fixes (every checkpoint_every, when the draw buffer
 * fills, the last), and where rank 0 asks for one in the z step's exchange
 * (its clock: every 2 s; its progress hook: stop, as run.c's).  Where the
 * checkpoints fall never changes the draws.  Memory: the shard chains'
 * own, plus S x (2 + P) doubles for the exchange.
 */
#include "shard/shard_sample.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "flymc/ckpt.h"
#include "flymc/index.h"
#include "mpi/comm.h"
#include "run/config.h"
#include "shard/shard_map.h"
#include "store/dataset.h"
#include "store/db.h"
#include "store/run.h"
#include "store/trace.h"
#include "tune/tune.h"
#include "util/blas.h"
#include "util/mem.h"

#ifndef FLYDB_VERSION
#define FLYDB_VERSION "unknown"
#endif

#define OTHER "another rank failed (its message is above)"

/* Values per shard in the z step's exchange: log density term, failed,
 * n_bright, n_lik, n_reads, n_cand, n_viol, scanned, and in shard 0's
 * (rank 0's) what rank 0 asks of every rank after this iteration (ASK_*). */
#define ZX 9
enum { ASK_CKPT = 1, ASK_STOP = 2 };

static const char ckpt_sql[] =
  "CREATE TABLE IF NOT EXISTS shard_ckpt ("
  "  run_id INTEGER NOT NULL, chain INTEGER NOT NULL, iter INTEGER NOT NULL,"
  "  state BLOB NOT NULL,"              /* fly_chain_save of the shard's chain */
  "  PRIMARY KEY (run_id, chain, iter)) WITHOUT ROWID";

typedef struct part {               /* a shard this rank owns */
  int64_t       k;
  const char   *path;
  int64_t       ds, bs;
  fly_bounds   *bd;
  fly_buckets   bk;
  fly_sketch    sk;
  fly_chain_cfg cc;
  fly_chain    *ch;
} part;

typedef struct sjob {
  fly_comm        *c;
  const fly_run_cfg *cfg;
  fly_model        m;
  size_t           P;
  int64_t          S, k0, k1, N;
  part            *pt;              /* k1 - k0 */
  const fly_kernel_type *kt;
  void            *ks;
  fly_target       tgt;
  fly_rng          rng;
  double          *th, *th_z;       /* theta; the one the shard chains hold */
  double           lp;
  double          *pg, *mine, *all; /* prior gradient; exchange buffers */
  int64_t          n_evals;         /* target evaluations this iteration */
  int64_t          n_bright;        /* all shards' bright rows */
  int64_t          n_exch;          /* exchanges so far */
  int              ask, told;       /* ASK_* rank 0 asks; what it asked this iteration */
} sjob;

typedef struct prog {               /* rank 0's clock and the progress hook */
  const fly_run_hooks *h;
  int64_t run_id, base, total, start, acc, n_it;
  double  t0, last_poll, last_ckpt;
  int     stop;                     /* the hook asked to stop */
} prog;

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t n_own(const sjob *j) { return (size_t)(j->k1 - j->k0); }

int fly_shard_path_is_manifest(const char *path)
{
  fly_db *db = NULL;
  fly_err e = {0};
  if( fly_db_open(path, FLY_DB_READONLY, &db, &e) ) return 0;
  int yes = fly_shard_is_manifest(db);
  fly_db_close(db);
  return yes;
}

/* Gather len values per shard from j->mine into j->all; slot 1 of each
 * shard's values is its failure flag, so a rank that failed still takes
 * part and every rank leaves together.  rc: this rank's. */
static fly_rc exchange(sjob *j, fly_rc rc, size_t len, fly_err *err)
{
  if( rc )
    for(size_t i = 0; i < n_own(j); i++) j->mine[i * len + 1] = 1;
  fly_err e2 = {0};
  fly_rc r2 = fly_comm_gather(j->c, j->S, len, j->mine, j->all, rc ? &e2 : err);
  j->n_exch++;
  if( rc ) return rc;
  if( r2 ) return r2;
  for(int64_t k = 0; k < j->S; k++)
    if( j->all[(size_t)k * len + 1] != 0 )
      return fly_fail(err, FLY_IO, "shard %lld failed on another rank (its message is above)",
                      (long long)k);
  return FLY_OK;
}

/* The sharded target: log p(theta) + sum over shards in shard order. */
static fly_rc shard_logp(void *ctx, const double *th, double *lp, double *grad,
                         fly_err *err)
{
  sjob *j = ctx;
  const size_t P = j->P, len = 2 + (grad ? P : 0);
  if( grad ) memset(j->pg, 0, P * sizeof *j->pg);
  double prior = fly_model_log_prior(&j->m, th, grad ? j->pg : NULL);
  fly_rc rc = FLY_OK;
  for(size_t i = 0; i < n_own(j); i++){
    double *v = j->mine + i * len, s = 0;
    fly_target *t = fly_chain_target(j->pt[i].ch);
    memset(v, 0, len * sizeof *v);
    if( rc == FLY_OK ) rc = t->logp(t->ctx, th, &s, grad ? v + 2 : NULL, err);
    if( rc ) break;
    v[0] = s - prior;
    if( grad ) for(size_t q = 0; q < P; q++) v[2 + q] -= j->pg[q];
  }
  if( (rc = exchange(j, rc, len, err)) ) return rc;
  j->n_evals++;
  double sum = prior;
  if( grad ) memcpy(grad, j->pg, P * sizeof *grad);
  for(int64_t k = 0; k < j->S; k++){
    const double *v = j->all + (size_t)k * len;
    sum += v[0];
    if( grad ) for(size_t q = 0; q < P; q++) grad[q] += v[2 + q];
  }
  *lp = sum;
  return FLY_OK;
}

static void shard_accept(void *ctx)
{
  sjob *j = ctx;
  for(size_t i = 0; i < n_own(j); i++){
    fly_target *t = fly_chain_target(j->pt[i].ch);
    t->accept(t->ctx);
  }
}

/* Whether owned shard i is shard 0 (this is rank 0). */
static int p_k0(const sjob *j, size_t i) { return j->k0 + (int64_t)i == 0; }

/* Each shard chain to the current theta (if it moved) and its z step;
 * the new log density and the iteration's counts, summed in shard order. */
static fly_rc zstep(sjob *j, fly_iter_stats *s, fly_err *err)
{
  fly_rc rc = FLY_OK;
  int moved = memcmp(j->th, j->th_z, j->P * sizeof *j->th) != 0;
  double prior = fly_model_log_prior(&j->m, j->th, NULL);
  memset(s, 0, sizeof *s);
  for(size_t i = 0; i < n_own(j) && rc == FLY_OK; i++){
    fly_iter_stats z;
    double *v = j->mine + i * ZX;
    if( moved ) rc = fly_chain_set_theta(j->pt[i].ch, j->th, err);
    if( rc == FLY_OK ) rc = fly_chain_zstep(j->pt[i].ch, &z, err);
    if( rc ){
      fly_err_prefix(err, "shard %lld", (long long)j->pt[i].k);
      break;
    }
    v[0] = z.lp - prior;
    v[1] = 0;
    v[2] = (double)z.n_bright;
    v[3] = (double)z.n_lik;
    v[4] = (double)z.n_reads;
    v[5] = (double)z.n_cand;
    v[6] = (double)z.n_viol;
    v[7] = z.scanned;
    v[8] = p_k0(j, i) ? j->ask : 0;
  }
  if( (rc = exchange(j, rc, ZX, err)) ) return rc;
  memcpy(j->th_z, j->th, j->P * sizeof *j->th);
  j->told = (int)j->all[8];
  double lp = prior;
  for(int64_t k = 0; k < j->S; k++){
    const double *v = j->all + (size_t)k * ZX;
    lp += v[0];
    s->n_bright += (int64_t)v[2];
    s->n_lik += (int64_t)v[3];
    s->n_reads += (int64_t)v[4];
    s->n_cand += (int64_t)v[5];
    s->n_viol += (int64_t)v[6];
    s->scanned |= v[7] != 0;
  }
  /* the theta updates' evaluations of the bright rows, and the passes that
   * set the shard chains to the new theta */
  s->n_lik += (j->n_evals + moved) * j->n_bright;
  j->n_bright = s->n_bright;
  j->lp = lp;
  s->lp = lp;
  if( j->kt->invalidate ) j->kt->invalidate(j->ks);
  return FLY_OK;
}

/* ---- checkpoints ---------------------------------------------------------- */

/* sql on table shard_ckpt, prepared with ?1, ?2, ?3 bound to the run, chain
 * and iteration. */
static fly_rc ckpt_stmt(fly_db *db, const char *sql, int64_t run_id, int chain, int64_t it,
                        sqlite3_stmt **st, fly_err *err)
{
  fly_rc rc = fly_db_prepare(db, sql, st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(*st, 1, run_id);
  sqlite3_bind_int(*st, 2, chain);
  sqlite3_bind_int64(*st, 3, it);
  return FLY_OK;
}

/* Each owned shard's chain state at iteration it into the shard, and the
 * checkpoints older than prev (the last one the manifest holds) removed. */
static fly_rc save_shards(sjob *j, int64_t run_id, int chain, int64_t it, int64_t prev,
                          fly_err *err)
{
  fly_rc rc = FLY_OK;
  for(size_t i = 0; i < n_own(j) && rc == FLY_OK; i++){
    fly_db *db = NULL;
    sqlite3_stmt *st = NULL;
    void *blob = NULL;
    size_t len = 0;
    fly_chain_release(j->pt[i].ch);
    rc = fly_chain_save(j->pt[i].ch, &blob, &len, err);
    if( rc == FLY_OK ) rc = fly_db_open(j->pt[i].path, 0, &db, err);
    if( rc == FLY_OK ) rc = fly_db_begin(db, err);
    if( rc == FLY_OK ) rc = fly_db_exec(db, ckpt_sql, err);
    if( rc == FLY_OK )
      rc = ckpt_stmt(db, "INSERT OR REPLACE INTO shard_ckpt VALUES (?1,?2,?3,?4)", run_id,
                     chain, it, &st, err);
    if( rc == FLY_OK ){
      sqlite3_bind_blob64(st, 4, blob, len, SQLITE_STATIC);
      if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "shard checkpoint");
    }
    sqlite3_finalize(st);
    st = NULL;
    if( rc == FLY_OK )
      rc = ckpt_stmt(db, "DELETE FROM shard_ckpt WHERE run_id = ?1 AND chain = ?2"
                     " AND iter < ?3", run_id, chain, prev, &st, err);
    if( rc == FLY_OK && sqlite3_step(st) != SQLITE_DONE )
      rc = fly_db_fail(db, err, "shard checkpoint");
    sqlite3_finalize(st);
    if( rc == FLY_OK ) rc = fly_db_commit(db, err);
    else if( db ) fly_db_rollback(db);
    fly_db_close(db);
    fly_free(blob);
    if( rc ) fly_err_prefix(err, "shard %lld (%s)", (long long)j->pt[i].k, j->pt[i].path);
  }
  return rc;
}

/* Restore each owned shard's chain from its checkpoint at iteration it. */
static fly_rc load_shards(sjob *j, int64_t run_id, int chain, int64_t it, fly_err *err)
{
  fly_rc rc = FLY_OK;
  for(size_t i = 0; i < n_own(j) && rc == FLY_OK; i++){
    fly_db *db = NULL;
    sqlite3_stmt *st = NULL;
    rc = fly_db_open(j->pt[i].path, FLY_DB_READONLY, &db, err);
    if( rc == FLY_OK )
      rc = ckpt_stmt(db, "SELECT state FROM shard_ckpt WHERE run_id = ?1 AND chain = ?2"
                     " AND iter = ?3", run_id, chain, it, &st, err);
    if( rc == FLY_OK ){
      if( sqlite3_step(st) == SQLITE_ROW )
        rc = fly_chain_restore(j->pt[i].ch, sqlite3_column_blob(st, 0),
                               (size_t)sqlite3_column_bytes(st, 0), err);
      else
        rc = fly_fail(err, FLY_CORRUPT, "no checkpoint of run %lld, chain %d at "
                      "iteration %lld", (long long)run_id, chain + 1, (long long)it);
    }
    sqlite3_finalize(st);
    fly_db_close(db);
    if( rc ) fly_err_prefix(err, "shard %lld (%s)", (long long)j->pt[i].k, j->pt[i].path);
  }
  return rc;
}

/* The replicated state as a chain checkpoint without bright rows
 * (flymc/ckpt.h), so the manifest's run reads like any other. */
static fly_rc save_main(const sjob *j, void **blob, size_t *len, fly_err *err)
{
  fly_ckpt_head h;
  unsigned char *rows;
  memset(&h, 0, sizeof h);
  h.magic = FLY_CKPT_MAGIC;
  h.version = FLY_CKPT_VERSION;
  h.P = (uint32_t)j->P;
  h.kernel = (uint32_t)j->cfg->kernel;
  h.klen = j->kt->ckpt_size(j->ks);
  h.lp = j->lp;
  h.base = (double)j->n_bright;
  memcpy(h.rng, j->rng.s, sizeof h.rng);
  size_t n = fly_ckpt_size(j->P, (size_t)h.klen, 0);
  unsigned char *p = fly_alloc_array(n, 1);
  if( !p ) return fly_fail(err, FLY_NOMEM, "checkpoint");
  j->kt->ckpt_save(j->ks, fly_ckpt_write(p, &h, j->th, &rows));
  *blob = p;
  *len = n;
  return FLY_OK;
}

static fly_rc load_main(sjob *j, const void *blob, size_t len, fly_err *err)
{
  fly_ckpt_view v;
  fly_rc rc = fly_ckpt_parse(blob, len, j->P, j->N, &v, err);
  if( rc ) return rc;
  if( v.head.kernel != (uint32_t)j->cfg->kernel || v.head.klen != j->kt->ckpt_size(j->ks) )
    return fly_fail(err, FLY_CORRUPT, "checkpoint written by another theta kernel");
  memcpy(j->th, v.theta, j->P * sizeof *j->th);
  memcpy(j->th_z, j->th, j->P * sizeof *j->th);
  j->lp = v.head.lp;
  j->n_bright = (int64_t)v.head.base;
  memcpy(j->rng.s, v.head.rng, sizeof v.head.rng);
  return j->kt->ckpt_load(j->ks, v.kstate, (size_t)v.head.klen, err);
}

/* ---- set-up ------------------------------------------------------------------ */

static void say(const fly_run_hooks *h, const sjob *j, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static void say(const fly_run_hooks *h, const sjob *j, const char *fmt, ...)
{
  if( !h || !h->message || fly_comm_rank(j->c) != 0 ) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  h->message(h->ctx, line);
}

/* What a manifest run cannot do (yet). */
static fly_rc refuse(const fly_run_cfg *c, fly_err *err)
{
  if( c->bounds_fixed )
    return fly_fail(err, FLY_MISUSE, "--bounds fixed: a shard manifest samples with MAP-tuned "
                    "bounds only so far");
  if( c->full_logpost_every > 0 )
    return fly_fail(err, FLY_MISUSE, "--full-logpost-every: not available for a shard manifest");
  if( c->profile )
    return fly_fail(err, FLY_MISUSE, "--profile: not available for a shard manifest");
  if( c->model.formula || c->model.reference )
    return fly_fail(err, FLY_MISUSE, "--%s: a shard manifest is sampled on its columns as "
                    "stored only so far", c->model.formula ? "formula" : "reference");
  if( c->chains > FLY_RUN_MAX_CHAINS )
    return fly_fail(err, FLY_MISUSE, "--chains: at most %d", FLY_RUN_MAX_CHAINS);
  return FLY_OK;
}

/* The manifest's records of the whole data set and its sharded bounds (a
 * data set row without pages, a bound set without pages), which its runs
 * refer to; *ds, *bs their ids. */
static fly_rc manifest_records(fly_db *db, const fly_dataset *d0, int64_t N,
                               const fly_model *m, const fly_bounds *b, int64_t *ds,
                               int64_t *bs, fly_err *err)
{
  char mopts[256];
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_tune_model_opts(m, mopts, sizeof mopts, err);
  const size_t P = b->P;
  if( rc == FLY_OK ) rc = fly_db_begin(db, err);
  if( rc == FLY_OK )
    rc = fly_db_prepare(db, "INSERT OR IGNORE INTO dataset(name, source, n_rows, width, "
                        "n_features, has_intercept, target_name, page_rows, n_pages, prec, "
                        "raw_bytes, stored_bytes) VALUES (?1, '" FLY_DATASET_SHARDS "', ?2, ?3, ?4, ?5, ?6, "
                        "?7, 0, ?8, 0, 0)", &st, err);
  if( rc == FLY_OK ){
    sqlite3_bind_text(st, 1, d0->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, N);
    sqlite3_bind_int64(st, 3, d0->width);
    sqlite3_bind_int64(st, 4, d0->n_features);
    sqlite3_bind_int(st, 5, d0->has_intercept);
    sqlite3_bind_text(st, 6, d0->target_name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, d0->page_rows);
    sqlite3_bind_int(st, 8, d0->prec);
    if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "manifest data set");
  }
  sqlite3_finalize(st);
  st = NULL;
  if( rc == FLY_OK ) rc = fly_db_prepare(db, "SELECT id FROM dataset WHERE name = ?1", &st, err);
  if( rc == FLY_OK ){
    sqlite3_bind_text(st, 1, d0->name, -1, SQLITE_STATIC);
    if( sqlite3_step(st) == SQLITE_ROW ) *ds = sqlite3_column_int64(st, 0);
    else rc = fly_db_fail(db, err, "manifest data set");
  }
  sqlite3_finalize(st);
  st = NULL;
  if( rc == FLY_OK )
    rc = fly_db_prepare(db, "INSERT OR IGNORE INTO bound_set(dataset_id, model, model_opts, "
                        "tuning, status, n_params, width, page_rows, n_pages, theta_map, "
                        "laplace_cov, laplace_prec, map_logpost, map_iters, map_grad_norm, "
                        "tune_seconds) VALUES (?1, ?2, ?3, 'map', 'ready', ?4, ?5, ?6, 0, ?7, "
                        "?8, ?9, ?10, ?11, ?12, 0)", &st, err);
  if( rc == FLY_OK ){
    sqlite3_bind_int64(st, 1, *ds);
    sqlite3_bind_text(st, 2, m->type->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, mopts, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (int64_t)P);
    sqlite3_bind_int64(st, 5, (int64_t)b->n_xi + 1);
    sqlite3_bind_int64(st, 6, b->page_rows);
    sqlite3_bind_blob64(st, 7, b->theta_map, P * sizeof(double), SQLITE_STATIC);
    sqlite3_bind_blob64(st, 8, b->cov, P * P * sizeof(double), SQLITE_STATIC);
    sqlite3_bind_blob64(st, 9, b->prec, P * P * sizeof(double), SQLITE_STATIC);
    sqlite3_bind_double(st, 10, b->map_logpost);
    sqlite3_bind_int(st, 11, b->map_iters);
    sqlite3_bind_double(st, 12, b->map_grad_norm);
    if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "manifest bound set");
  }
  sqlite3_finalize(st);
  st = NULL;
  if( rc == FLY_OK )
    rc = fly_db_prepare(db, "SELECT id FROM bound_set WHERE dataset_id = ?1 AND model = ?2 "
                        "AND model_opts = ?3 AND tuning = 'map'", &st, err);
  if( rc == FLY_OK ){
    sqlite3_bind_int64(st, 1, *ds);
    sqlite3_bind_text(st, 2, m->type->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, mopts, -1, SQLITE_STATIC);
    if( sqlite3_step(st) == SQLITE_ROW ) *bs = sqlite3_column_int64(st, 0);
    else rc = fly_db_fail(db, err, "manifest bound set");
  }
  sqlite3_finalize(st);
  if( rc == FLY_OK ) rc = fly_db_commit(db, err);
  else fly_db_rollback(db);
  return rc;
}

/* Open the owned shards: data set, bound set at the MAP, and for gibbs
 * the thinning index; the chain configuration of each. */
static fly_rc open_parts(sjob *j, char (*paths)[4096], const fly_shard_map *r,
                         fly_err *err)
{
  const fly_run_cfg *c = j->cfg;
  fly_rc rc = FLY_OK;
  for(size_t i = 0; i < n_own(j) && rc == FLY_OK; i++){
    part *p = &j->pt[i];
    fly_db *db = NULL;
    fly_dataset *d = NULL;
    p->k = j->k0 + (int64_t)i;
    p->path = paths[p->k];
    rc = fly_db_open(p->path, 0, &db, err);
    if( rc == FLY_OK ) rc = fly_dataset_find(db, NULL, &p->ds, err);
    if( rc == FLY_OK ) rc = fly_shard_bounds_at(db, p->ds, &j->m, r, &p->bs, err);
    if( rc == FLY_OK ) rc = fly_bounds_load(db, p->bs, &j->m, &p->bd, err);
    if( rc == FLY_OK ) rc = fly_dataset_load(db, p->ds, &d, err);
    fly_db_close(db);
    if( rc == FLY_OK && c->z == FLY_Z_GIBBS )
      rc = fly_index_build(p->path, p->ds, p->bs, NULL, NULL, &j->m,
                           c->sketch ? p->bd->chol_key : NULL, 1, &p->bk, &p->sk, err);
    if( rc == FLY_OK ){
      fly_chain_cfg *cc = &p->cc;
      memset(cc, 0, sizeof *cc);
      cc->db_path = p->path;
      cc->dataset_id = p->ds;
      cc->m = &j->m;
      cc->bounds = p->bd;
      cc->buckets = c->z == FLY_Z_GIBBS ? &p->bk : NULL;
      cc->sketch = c->z == FLY_Z_GIBBS && c->sketch ? &p->sk : NULL;
      cc->N = d->n_rows;
      cc->W = (size_t)d->width;
      cc->z = c->z;
      cc->z_param = c->z_param;
      cc->scan_frac = c->scan_frac;
      cc->kernel = FLY_K_MH;       /* never stepped: the run's kernel is the sharded one */
      cc->eps0 = 1;
      cc->init_map = 1;
      cc->cache_bytes = ((size_t)c->cache_mb << 20) / (n_own(j) ? n_own(j) : 1);
    }
    fly_dataset_free(d);
    if( rc ) fly_err_prefix(err, "shard %lld (%s)", (long long)p->k, p->path);
  }
  return rc;
}

static void close_parts(sjob *j)
{
  for(size_t i = 0; j->pt && i < n_own(j); i++){
    fly_chain_close(j->pt[i].ch);
    fly_buckets_free(&j->pt[i].bk);
    fly_sketch_free(&j->pt[i].sk);
    fly_bounds_free(j->pt[i].bd);
  }
  fly_free(j->pt);
  j->pt = NULL;
}

/* The stream of shard k's z under the run's seed. */
static uint64_t shard_seed(uint64_t seed, int64_t k)
{
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) >> 2;
}

/* ---- one chain ------------------------------------------------------------- */

/* Chain `chain` from its checkpoint at iteration start (0: from scratch) to
 * the end; rank 0 writes its draws into the manifest. */
static fly_rc run_chain(sjob *j, const char *manifest_path, int64_t run_id, int chain,
                        int64_t start, const void *blob, size_t blen, prog *pg,
                        double *t_loop, int64_t *done, fly_err *err)
{
  const fly_run_cfg *c = j->cfg;
  const fly_bounds *b0 = j->pt[0].bd;
  const int rank0 = fly_comm_rank(j->c) == 0;
  int64_t total = c->warmup + c->iters, prev = start;
  size_t cap = (size_t)(c->checkpoint_every / c->thin + 2);
  fly_trace *tr = NULL;
  fly_rc rc = FLY_OK;
  *done = start;

  fly_rng_seed(&j->rng, c->seed, (uint64_t)chain);
  for(size_t i = 0; i < n_own(j) && rc == FLY_OK; i++){
    part *p = &j->pt[i];
    rc = fly_chain_open(&p->cc, chain, shard_seed(c->seed, p->k), &p->ch, err);
    if( rc == FLY_OK && !start ) rc = fly_chain_init(p->ch, err);
    if( rc ) fly_err_prefix(err, "shard %lld (%s)", (long long)p->k, p->path);
  }
  if( rc == FLY_OK ){
    j->kt->free(j->ks);           /* the previous chain's (safe on zero-filled state) */
    memset(j->ks, 0, j->kt->state_size);
    fly_kernel_cfg kc = {
      .P = j->P, .L = c->isotropic ? NULL : b0->chol_cov, .eps0 = c->step,
      .n_leap = c->leapfrog > 0 ? (size_t)c->leapfrog : 0,
      .n_adapt = (size_t)c->warmup * (size_t)c->theta_steps,
    };
    rc = j->kt->init(j->ks, &kc, err);
  }
  if( rc == FLY_OK && start ){
    rc = load_main(j, blob, blen, err);
    if( rc == FLY_OK ) rc = load_shards(j, run_id, chain, start, err);
  }else if( rc == FLY_OK ){
    /* theta_0: the MAP, or MAP + chol(cov) e from the replicated stream */
    memcpy(j->th, b0->theta_map, j->P * sizeof *j->th);
    memcpy(j->th_z, j->th, j->P * sizeof *j->th);
    if( !c->init_map ){
      double *e = j->pg;
      fly_rng_normals(&j->rng, e, j->P);
      for(size_t q = 0; q < j->P; q++){
        double s = 0;
        for(size_t r = 0; r <= q; r++) s += b0->chol_cov[q * j->P + r] * e[r];
        j->th[q] += s;
      }
    }
    fly_iter_stats s0;
    j->ask = 0;
    j->n_evals = 0;
    j->n_bright = 0;
    rc = zstep(j, &s0, err);
  }
  rc = fly_comm_sync(j->c, rc, OTHER, err);
  if( rc == FLY_OK && rank0 )
    rc = fly_trace_open(manifest_path, run_id, chain, j->P, cap, &tr, err);
  double t0 = now();
  for(int64_t it = start + 1; rc == FLY_OK && it <= total; it++){
    fly_iter_stats s;
    fly_kernel_stats ks = {0, 0, 0, 0, 0};
    int64_t acc = 0;
    int adapt = it <= c->warmup;
    double eps = j->kt->eps(j->ks, adapt);
    j->n_evals = 0;
    for(int64_t k = 0; k < c->theta_steps && rc == FLY_OK; k++){
      int a = 0;
      rc = j->kt->step(j->ks, &j->tgt, &j->rng, j->th, &j->lp, adapt, &a, err);
      acc += a;
      if( rc == FLY_OK && j->kt->stats ){
        fly_kernel_stats one;
        j->kt->stats(j->ks, &one);
        if( k == 0 ) ks = one;
        else{
          if( one.treedepth > ks.treedepth ) ks.treedepth = one.treedepth;
          ks.n_leapfrog += one.n_leapfrog;
          ks.divergent |= one.divergent;
          ks.energy = one.energy;
          ks.accept_stat += (one.accept_stat - ks.accept_stat) / (double)(k + 1);
        }
      }
    }
    /* rank 0 asks for a checkpoint every 2 s, and to stop when the
     * progress hook says so; every rank hears it in the z step's exchange */
    j->ask = 0;
    if( rank0 ){
      double t = now();
      pg->acc += acc;
      pg->n_it++;
      if( pg->h && pg->h->progress && t - pg->last_poll >= FLY_RUN_POLL_MS * 1e-3 ){
        fly_run_progress p = { run_id, pg->base + it, pg->total, pg->start,
                               (double)pg->acc / (double)pg->n_it / (double)c->theta_steps,
                               (double)j->n_bright / (double)j->N, t - pg->t0 };
        pg->last_poll = t;
        if( pg->h->progress(pg->h->ctx, &p) ) pg->stop = 1;
      }
      if( t - pg->last_ckpt > 2.0 ) j->ask |= ASK_CKPT;
      if( pg->stop ) j->ask |= ASK_CKPT | ASK_STOP;
    }
    if( rc == FLY_OK ) rc = zstep(j, &s, err);
    if( rc ){
      fly_err_prefix(err, "chain %d, iteration %lld", chain + 1, (long long)it);
      break;
    }
    if( s.n_viol )
      rc = fly_fail(err, FLY_NUMERIC, "the thinning bound was violated %lld times: "
                    "the draws are not exact (a bug; please report)", (long long)s.n_viol);
    if( rc == FLY_OK && rank0 && it % c->thin == 0 ){
      fly_trace_row row = { s.lp, s.n_bright, s.n_lik, s.n_reads,
                            (double)acc / (double)c->theta_steps, eps, NAN,
                            j->kt->stats != NULL, ks.treedepth, ks.n_leapfrog,
                            ks.divergent, ks.energy, ks.accept_stat };
      rc = fly_trace_add(tr, it, j->th, &row, err);
    }
    if( rc ) break;
    if( it % 4 == 0 )
      for(size_t i = 0; i < n_own(j); i++) fly_chain_release(j->pt[i].ch);
    /* the same iterations on every rank (rank 0's clock reaches the others
     * through the exchange) */
    if( it == total || (it % c->checkpoint_every) == 0 || (j->told & ASK_CKPT) ||
        (it / c->thin - prev / c->thin) + 1 >= (int64_t)cap ){
      rc = save_shards(j, run_id, chain, it, prev, err);
      /* a checkpoint counts once every rank has written its shards' part */
      rc = fly_comm_sync(j->c, rc, "another rank failed to write its checkpoint", err);
      if( rc == FLY_OK && rank0 ){
        void *mb = NULL;
        size_t ml = 0;
        rc = save_main(j, &mb, &ml, err);
        if( rc == FLY_OK ) rc = fly_trace_commit(tr, it, mb, ml, err);
        fly_free(mb);
      }
      rc = fly_comm_sync(j->c, rc, "rank 0 failed to commit the checkpoint", err);
      if( rc ) break;
      prev = it;
      pg->last_ckpt = now();
      if( j->told & ASK_STOP ){
        *done = it;
        rc = FLY_DONE;
        break;
      }
    }
    *done = it;
  }
  *t_loop = now() - t0;
  fly_trace_close(tr);
  for(size_t i = 0; i < n_own(j); i++){
    fly_chain_close(j->pt[i].ch);
    j->pt[i].ch = NULL;
  }
  return rc;
}

/* ---- the job ----------------------------------------------------------------- */

fly_rc fly_shard_sample(const char *manifest_path, fly_run_cfg *c, int64_t resume_id,
                        const fly_run_hooks *hooks, fly_run_result *res, fly_err *err)
{
  sjob j;
  char (*paths)[4096] = NULL;
  size_t S = 0;
  fly_shard_map *r = NULL;
  fly_db *mdb = NULL;
  fly_dataset *d0 = NULL;
  const char **names = NULL;
  int64_t run_id = resume_id, mds = 0, mbs = 0;
  double t0 = now();
  fly_rc rc;

  memset(&j, 0, sizeof j);
  j.cfg = c;
  if( (rc = fly_run_cfg_resolve(c, err)) ){
    res->usage = 1;
    return rc;
  }
  if( (rc = refuse(c, err)) ){
    res->usage = 1;
    return rc;
  }
  res->seed = c->seed;
  res->cache_mb = c->cache_mb;
  /* OpenBLAS's results depend on its thread count: one everywhere */
  fly_blas_serial();
  if( (rc = fly_comm_open(&j.c, err)) ) return rc;
  /* rank 0 was perhaps killed in a commit: its read-write open recovers
   * the manifest before any rank reads it read-only */
  if( fly_comm_rank(j.c) == 0 ){
    rc = fly_db_open(manifest_path, 0, &mdb, err);
    fly_db_close(mdb);
    mdb = NULL;
  }
  if( (rc = fly_comm_sync(j.c, rc, OTHER, err)) ) goto done;

  rc = fly_shard_paths(manifest_path, &paths, &S, &j.N, err);
  if( rc == FLY_OK ){
    j.S = (int64_t)S;
    if( fly_comm_size(j.c) > j.S )
      rc = fly_fail(err, FLY_MISUSE, "%d ranks for %lld shards: at most one rank per shard",
                    fly_comm_size(j.c), (long long)j.S);
  }
  if( rc == FLY_OK ){
    fly_db *db0 = NULL;
    int64_t id = 0;
    j.k0 = fly_comm_shard_first(j.S, fly_comm_size(j.c), fly_comm_rank(j.c));
    j.k1 = fly_comm_shard_first(j.S, fly_comm_size(j.c), fly_comm_rank(j.c) + 1);
    rc = fly_db_open(paths[j.k0], FLY_DB_READONLY, &db0, err);
    if( rc == FLY_OK ) rc = fly_dataset_find(db0, NULL, &id, err);
    if( rc == FLY_OK ) rc = fly_dataset_load(db0, id, &d0, err);
    if( rc == FLY_OK ) rc = fly_dataset_require_numeric(d0, err);
    if( rc == FLY_OK && (rc = fly_model_spec_resolve(&c->model, db0, id, &j.m, err)) == FLY_OK )
      rc = fly_run_cfg_fit(c, &j.m, err);
    fly_db_close(db0);
    if( rc == FLY_MISUSE ) res->usage = 1;
  }
  /* every rank passes here, so a rank that failed stops the others */
  if( (rc = fly_comm_sync(j.c, rc, OTHER, err)) ) goto done;
  /* the bounds: the sharded MAP the manifest holds (sharded tuning), else
   * found now; each shard's bound set there */
  double tt = now();
  rc = fly_shard_map_load(manifest_path, &j.m, &r, err);
  if( (rc = fly_comm_sync(j.c, rc, OTHER, err)) ) goto done;
  if( !r ){
    if( (rc = fly_shard_map_run(manifest_path, &c->model, j.c, c->verbose, &r, err)) ) goto done;
    say(hooks, &j, "%lld shards on %d ranks: the sharded MAP and bounds in %.1f s",
        (long long)j.S, fly_comm_size(j.c), now() - tt);
  }
  j.P = j.m.type->n_params(&j.m);
  /* the bright floor of the whole data set (docs/design.md §20); each
   * shard's chain adds its own rows' -N_k slack to the collapsed product */
  if( c->bright_floor < 0 ) c->bright_floor = fly_run_bright_floor((int64_t)j.P, j.N);
  j.m.slack = c->bright_floor > 0 ? -log1p(-c->bright_floor) : 0.0;
  j.kt = fly_kernel_type_of(c->kernel);
  j.pt = fly_alloc_array(n_own(&j), sizeof *j.pt);
  j.ks = j.kt ? fly_alloc_array(1, j.kt->state_size) : NULL;
  j.th = fly_alloc_array(j.P, sizeof *j.th);
  j.th_z = fly_alloc_array(j.P, sizeof *j.th_z);
  j.pg = fly_alloc_array(j.P, sizeof *j.pg);
  size_t len = 2 + j.P > ZX ? 2 + j.P : ZX;
  j.mine = fly_alloc_array(n_own(&j), len * sizeof *j.mine);
  j.all = fly_alloc_array(S, len * sizeof *j.all);
  if( !j.kt ){ rc = fly_fail(err, FLY_MISUSE, "unknown theta kernel"); goto sync; }
  if( !j.pt || !j.ks || !j.th || !j.th_z || !j.pg || !j.mine || !j.all ){
    rc = fly_fail(err, FLY_NOMEM, "sharded run");
    goto sync;
  }
  j.tgt.ctx = &j;
  j.tgt.P = j.P;
  j.tgt.logp = shard_logp;
  j.tgt.accept = shard_accept;
  double ti = now();
  if( (rc = open_parts(&j, paths, r, err)) ) goto sync;
  if( c->z == FLY_Z_GIBBS )
    say(hooks, &j, "gibbs: thinning index of the shards built in %.1f s", now() - ti);

  /* rank 0: the run in the manifest; its id to every rank (in shard 0's
   * slot of one exchange) */
  if( fly_comm_rank(j.c) == 0 ){
    if( (rc = fly_db_open(manifest_path, 0, &mdb, err)) ) goto sync;
    if( (rc = fly_db_wal(mdb, err)) ) goto sync;
    if( !resume_id ){
      fly_run_rec rec;
      fly_run_line lines[FLY_RUN_LINES];
      fly_run_kv kv[FLY_RUN_LINES];
      if( (rc = manifest_records(mdb, d0, j.N, &j.m, j.pt[0].bd, &mds, &mbs, err)) ) goto sync;
      size_t nl = fly_run_cfg_lines(c, &j.m, manifest_path, lines);
      for(size_t i = 0; i < nl; i++)
        kv[i] = (fly_run_kv){ lines[i].key, lines[i].value, lines[i].is_default };
      fly_run_cfg_to_rec(c, &j.m, mds, mbs, &rec);
      if( !(names = fly_alloc_array(j.m.D ? j.m.D : 1, sizeof *names)) ){
        rc = fly_fail(err, FLY_NOMEM, "parameter names");
        goto sync;
      }
      for(size_t i = 0; i < d0->n_cols; i++){
        const fly_dataset_column *col = &d0->cols[i];
        if( col->idx >= 0 && (size_t)col->idx < j.m.D ) names[col->idx] = col->name;
      }
      if( (rc = fly_run_create(mdb, &rec, j.m.K, NULL, names, kv, nl, FLYDB_VERSION, &run_id,
                               err)) ) goto sync;
    }
  }
sync:
  if( (rc = fly_comm_sync(j.c, rc, OTHER, err)) ) goto done;
  for(size_t i = 0; i < n_own(&j); i++){
    j.mine[i * 2] = (double)run_id;
    j.mine[i * 2 + 1] = 0;
  }
  if( (rc = exchange(&j, FLY_OK, 2, err)) ) goto done;
  run_id = (int64_t)j.all[0];
  res->run_id = run_id;
  say(hooks, &j, "run %lld: %lld chains x (%lld warm-up + %lld), z %s, %s, seed %llu, "
      "%lld shards on %d ranks", (long long)run_id, (long long)c->chains,
      (long long)c->warmup, (long long)c->iters, fly_zmode_name(c->z),
      fly_kernel_name(c->kernel), (unsigned long long)c->seed, (long long)j.S,
      fly_comm_size(j.c));

  prog pg;
  memset(&pg, 0, sizeof pg);
  pg.h = hooks;
  pg.run_id = run_id;
  pg.total = (c->warmup + c->iters) * c->chains;
  pg.t0 = pg.last_ckpt = now();
  for(int ch = 0; ch < (int)c->chains && rc == FLY_OK; ch++){
    int64_t start = 0, done_it = 0;
    void *blob = NULL;
    size_t blen = 0;
    double tl = 0;
    if( resume_id ){
      /* every rank reads the iteration the manifest recorded; rank 0
       * removes what came after it */
      fly_db *rdb = NULL;
      rc = fly_db_open(manifest_path, FLY_DB_READONLY, &rdb, err);
      if( rc == FLY_OK ) rc = fly_trace_checkpoint(rdb, run_id, ch, &start, &blob, &blen, err);
      fly_db_close(rdb);
      if( rc == FLY_OK && mdb ) rc = fly_trace_truncate(mdb, run_id, ch, start, err);
      rc = fly_comm_sync(j.c, rc, OTHER, err);
    }
    pg.base = (int64_t)ch * (c->warmup + c->iters);
    pg.start += start;
    if( rc == FLY_OK )
      rc = run_chain(&j, manifest_path, run_id, ch, start, blob, blen, &pg, &tl, &done_it, err);
    fly_free(blob);
    res->chains = ch + 1;
    res->iters_done += done_it - start;
    res->loop += tl;
  }
  say(hooks, &j, "%lld exchanges of per-shard values", (long long)j.n_exch);

done:
  res->wall = now() - t0;
  if( mdb && run_id > 0 ){
    fly_err e2 = {0};
    if( rc == FLY_OK )
      rc = fly_run_finish(mdb, run_id, "done", NULL, res->wall, res->loop, err);
    else if( rc == FLY_DONE )
      fly_run_finish(mdb, run_id, "running", "interrupted; continue with --resume", res->wall,
                     res->loop, &e2);
    else
      fly_run_finish(mdb, run_id, "failed", err->msg[0] ? err->msg : fly_rc_str(rc),
                     res->wall, res->loop, &e2);
  }
  fly_db_close(mdb);
  close_parts(&j);
  if( j.ks ) j.kt->free(j.ks);
  fly_free(j.ks);
  fly_free(j.th);
  fly_free(j.th_z);
  fly_free(j.pg);
  fly_free(j.mine);
  fly_free(j.all);
  fly_free(names);
  fly_free(paths);
  fly_dataset_free(d0);
  fly_shard_map_free(r);
  fly_comm_close(j.c);
  return rc;
}
