/*
 * run.c -- the run driver (see run.h): one thread per chain, each with its
 * own database connection, trace writer and checkpoints; the calling
 * thread watches them and reports progress.
 *
 * A chain commits its buffered draws together with its checkpoint every
 * checkpoint_every iterations, every 2 s, when its buffer is full, at the
 * end, and when asked to stop; so a stop (or a crash) always leaves draws
 * that end exactly at a checkpoint, and the run resumable.  The commit is
 * handed to the file's writer thread (fly_trace_submit) and the chain goes
 * on; it waits for the writes only at its end (fly_trace_sync), so a write
 * error fails the chain at its next commit or at its end.
 *
 * Errors: the first chain failure is the run's; the run row then says
 * 'failed' with the message.  A thinning-bound violation (a candidate whose
 * exact probability exceeded its bound) is counted by the chains and fails
 * the run at the end: its draws are not exact.
 */
#include "run/run.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flymc/buckets.h"
#include "flymc/index.h"
#include "flymc/sketch.h"
#include "run/choose.h"
#include "run/config.h"
#include "run/data.h"
#include "store/dataset.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/run.h"
#include "store/summary.h"
#include "store/trace.h"
#include "shard/shard_sample.h"
#include "tune/tune.h"
#include "util/mem.h"
#include "util/blas.h"
#include "util/par.h"

#ifndef FLYDB_VERSION
#define FLYDB_VERSION "unknown"
#endif

/* Iterations between the ends of a chain's read transaction (see
 * fly_chain_release): often enough that the WAL can be checkpointed while
 * the chains run, rarely enough that the fcntl calls do not show. */
#define RELEASE_EVERY 4

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The watching thread's wake-up: each chain that ends counts itself in
 * `ended` and signals, so the watcher need not sleep out its poll. */
typedef struct waker {
  pthread_mutex_t mu;
  pthread_cond_t  cv;
  int             ended;
} waker;

typedef struct job {
  waker               *wk;
  const fly_run_cfg   *cfg;
  const fly_chain_cfg *cc;
  const char          *db_path;
  atomic_int          *stop;
  int64_t              run_id;
  int                  id;
  int64_t              start;      /* iterations already done (resume) */
  void                *ckpt;       /* checkpoint to restore, or NULL */
  size_t               ckpt_len;
  atomic_llong         done;       /* iterations completed */
  atomic_llong         acc, bright;
  double               t_loop, t_full;
  fly_prof             prof;       /* exclusive times of the loop */
  int64_t              n_viol;
  atomic_int           rc;         /* fly_rc; read by the watching thread */
  fly_err              err;
} job;

static void *run_chain(void *arg)
{
  job *j = arg;
  const fly_run_cfg *rc_ = j->cfg;
  fly_chain *ch = NULL;
  fly_trace *tr = NULL;
  fly_err *err = &j->err;
  fly_rc rc;
  int64_t total = rc_->warmup + rc_->iters;
  size_t cap = (size_t)(rc_->checkpoint_every / rc_->thin + 2);
  void *blob = NULL;
  size_t len = 0;
  double last = now();

  if( (rc = fly_chain_open(j->cc, j->id, rc_->seed, &ch, err)) ) goto done;
  if( j->ckpt ) rc = fly_chain_restore(ch, j->ckpt, j->ckpt_len, err);
  else rc = fly_chain_init(ch, err);
  if( rc ) goto done;
  if( (rc = fly_trace_open(j->db_path, j->run_id, j->id, fly_chain_dim(ch), cap,
                           &tr, err)) ) goto done;
  double t_start = now();
  fly_prof *pf = fly_chain_prof(ch);
  if( rc_->profile ) fly_prof_start(pf);
  for(int64_t it = j->start + 1; it <= total; it++){
    fly_iter_stats s;
    if( (rc = fly_chain_step(ch, it <= rc_->warmup, &s, err)) ){
      fly_err_prefix(err, "chain %d, iteration %lld", j->id + 1, (long long)it);
      goto done;
    }
    j->n_viol += s.n_viol;
    atomic_fetch_add(&j->acc, s.accepted);
    atomic_store(&j->bright, s.n_bright);
    if( it % rc_->thin == 0 ){
      fly_trace_row row = { s.lp, s.n_bright, s.n_lik, s.n_reads,
                            (double)s.accepted / (double)rc_->theta_steps, s.eps, NAN,
                            s.has_kstats, s.kstats.treedepth, s.kstats.n_leapfrog,
                            s.kstats.divergent, s.kstats.energy, s.kstats.accept_stat };
      if( rc_->full_logpost_every > 0 && it % rc_->full_logpost_every == 0 ){
        double secs = 0;
        if( (rc = fly_chain_full_logpost(ch, &row.full_logpost, &secs, err)) ) goto done;
        j->t_full += secs;
      }
      fly_prof_push(pf, FLY_PROF_WRITE);
      rc = fly_trace_add(tr, it, fly_chain_theta(ch), &row, err);
      fly_prof_pop(pf);
      if( rc ) goto done;
    }
    /* the chain's read transaction must end now and then, or it pins the
     * WAL: a checkpoint cannot pass a snapshot some chain holds */
    if( it % RELEASE_EVERY == 0 ) fly_chain_release(ch);
    int stop = atomic_load(j->stop);
    double t = now();
    if( it == total || stop || fly_trace_pending(tr) + 1 >= cap ||
        (it % rc_->checkpoint_every) == 0 || t - last > 2.0 ){
      fly_prof_push(pf, FLY_PROF_WRITE);
      fly_chain_release(ch);        /* so the commit's checkpoint can pass */
      rc = fly_chain_save(ch, &blob, &len, err);
      if( rc == FLY_OK ) rc = fly_trace_submit(tr, it, blob, len, err);
      fly_prof_pop(pf);
      fly_free(blob);
      blob = NULL;
      if( rc ) goto done;
      last = t;
    }
    atomic_store(&j->done, it);
    j->t_loop = now() - t_start;
    if( stop ) break;
  }
  /* the last batch is written before the chain reports its end */
  fly_prof_push(pf, FLY_PROF_WRITE);
  rc = fly_trace_sync(tr, err);
  fly_prof_pop(pf);
done:
  if( ch ){
    fly_prof_stop(fly_chain_prof(ch));
    j->prof = *fly_chain_prof(ch);
  }
  fly_trace_close(tr);
  fly_chain_close(ch);
  atomic_store(&j->rc, (int)rc);
  pthread_mutex_lock(&j->wk->mu);
  j->wk->ended++;
  pthread_cond_signal(&j->wk->cv);
  pthread_mutex_unlock(&j->wk->mu);
  return NULL;
}

/* Whether regular MCMC holds all rows in memory: when they fit
 * comfortably, in 40% of physical memory. */
static int fits_memory(const fly_dataset *sh)
{
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  double bytes = (double)sh->n_rows * (double)sh->width * 8.0;
  return !(pages > 0 && psz > 0 && bytes > 0.4 * (double)pages * (double)psz);
}

/* Pages of data set ds decoded into their place in X, on a connection of
 * its own (a thread's part of load_all).  The part first prefaults rows
 * lo..hi-1's memory, then takes LOAD_BLOCK pages at a time from the
 * shared counter until none are left, so a thread held up elsewhere does
 * not leave the other waiting on its fixed half. */
#define LOAD_BLOCK 32
typedef struct load_part {
  const char *path;
  const fly_pages *map;      /* the caller's handle: the map to copy */
  int64_t     ds, lo, hi, width;
  int64_t    *next;          /* shared: the next block of pages to decode */
  int        *failed;        /* shared: a part failed; the others stop */
  double     *X;
  fly_rc      rc;
  fly_err     err;
} load_part;

static void *load_pages(void *arg)
{
  load_part *lp = arg;
  fly_db *db = NULL;
  fly_pages *p = NULL;
  int began = 0;
  fly_rc rc = fly_db_open(lp->path, FLY_DB_READONLY, &db, &lp->err);
  if( rc == FLY_OK ) rc = fly_pages_open_like(db, FLY_TABLE_DATA, lp->ds, lp->map, 0, &p, &lp->err);
  if( rc == FLY_OK ){
    const fly_pages_info *in = fly_pages_info_of(p);
    int64_t r0 = lp->lo * in->page_rows < in->n_rows ? lp->lo * in->page_rows : in->n_rows;
    int64_t r1 = lp->hi * in->page_rows < in->n_rows ? lp->hi * in->page_rows : in->n_rows;
    fly_mem_prefault(lp->X + (size_t)(r0 * lp->width), (size_t)((r1 - r0) * lp->width) *
                     sizeof(double));
    began = fly_db_read_begin(db);
  }
  while( rc == FLY_OK && !__atomic_load_n(lp->failed, __ATOMIC_RELAXED) ){
    const fly_pages_info *in = fly_pages_info_of(p);
    int64_t pg = __atomic_fetch_add(lp->next, LOAD_BLOCK, __ATOMIC_RELAXED);
    int64_t end = pg + LOAD_BLOCK < in->n_pages ? pg + LOAD_BLOCK : in->n_pages;
    for(; rc == FLY_OK && pg < end; pg++){
      size_t n;
      rc = fly_pages_read_page(p, pg, lp->X + (size_t)(pg * in->page_rows * lp->width), &n,
                               &lp->err);
    }
    if( end == in->n_pages ) break;
  }
  if( rc ) __atomic_store_n(lp->failed, 1, __ATOMIC_RELAXED);
  if( db ) fly_db_read_end(db, began);
  fly_pages_close(p);
  fly_db_close(db);
  lp->rc = rc;
  return NULL;
}

/* All rows in one block, when they fit (fits_memory); *out NULL (stream
 * the pages instead) when they do not.  Two threads decode the pages
 * (the values do not depend on who decodes them), each on a connection
 * of its own with the map of dmap (the data set's pages). */
static fly_rc load_all(const char *db_path, const fly_pages *dmap, int64_t ds,
                       const fly_dataset *sh, double **out, fly_err *err)
{
  fly_rc rc = FLY_OK;
  load_part part[2];
  fly_par par;
  int64_t next = 0;
  int failed = 0;
  *out = NULL;
  if( !fits_memory(sh) ) return FLY_OK;
  double *X = fly_alloc_array((size_t)sh->n_rows, (size_t)sh->width * sizeof(double));
  if( !X ) return FLY_OK;
  int64_t n_pages = fly_pages_info_of(dmap)->n_pages;
  for(int i = 0; i < 2; i++){
    part[i] = (load_part){ db_path, dmap, ds, i ? n_pages / 2 : 0, i ? n_pages : n_pages / 2,
                           sh->width, &next, &failed, X, FLY_OK, {0} };
  }
  fly_par_start(&par, load_pages, &part[1]);
  load_pages(&part[0]);
  fly_par_join(&par);
  for(int i = 0; i < 2; i++)
    if( part[i].rc ){
      rc = part[i].rc;
      *err = part[i].err;
      goto done;
    }
done:
  if( rc ){ fly_free(X); return rc; }
  *out = X;
  return FLY_OK;
}

/* A chain's latest committed checkpoint (iter 0, blob NULL: none). */
typedef struct ckpt {
  int64_t iter;
  void   *blob;
  size_t  len;
} ckpt;

/* The checkpoints of a run being resumed, and the removal of what each
 * chain wrote after its own (nothing, since draws and checkpoint commit
 * together, except for a chain that has none and starts from scratch). */
static fly_rc load_checkpoints(fly_db *db, int64_t run_id, int n, ckpt *ck, fly_err *err)
{
  fly_rc rc = FLY_OK;
  for(int c = 0; c < n && rc == FLY_OK; c++){
    rc = fly_trace_checkpoint(db, run_id, c, &ck[c].iter, &ck[c].blob, &ck[c].len, err);
    if( rc == FLY_OK ) rc = fly_trace_truncate(db, run_id, c, ck[c].iter, err);
  }
  return rc;
}

/* Store the profiles of this call's loops (a resumed run replaces them). */
static fly_rc store_profile(fly_db *db, int64_t run_id, const fly_run_result *res,
                            fly_err *err)
{
  fly_profile_row rows[FLY_RUN_MAX_CHAINS * FLY_PROF_N];
  size_t n = 0;
  for(int c = 0; c < res->chains && c < FLY_RUN_MAX_CHAINS; c++){
    double sum = fly_prof_total(&res->prof[c]);
    for(int k = 0; k < FLY_PROF_N; k++)
      rows[n++] = (fly_profile_row){ c, fly_prof_name((fly_prof_part)k), res->prof[c].t[k],
                                     sum > 0 ? 100.0 * res->prof[c].t[k] / sum : 0.0,
                                     res->prof_iters[c] };
  }
  return fly_summary_put_profile(db, run_id, rows, n, err);
}

static void say(const fly_run_hooks *h, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;
static void say(const fly_run_hooks *h, const char *fmt, ...)
{
  if( !h || !h->message ) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  h->message(h->ctx, line);
}

/* Start the chains, watch them, join them.  Returns the first failure, or
 * FLY_DONE if the hooks asked to stop. */
static fly_rc drive(const char *db_path, const fly_run_cfg *c, const fly_chain_cfg *cc,
                    int64_t run_id, ckpt *ck, int64_t N,
                    const fly_run_hooks *hooks, fly_run_result *res, fly_err *err)
{
  int n = (int)c->chains, nstarted = 0;
  atomic_int stop;
  waker wk;
  int seen = 0;
  fly_rc rc = FLY_OK;
  job *jobs = fly_alloc_array((size_t)n, sizeof *jobs);
  pthread_t *th = fly_alloc_array((size_t)n, sizeof *th);
  if( !jobs || !th ){ rc = fly_fail(err, FLY_NOMEM, "chains"); goto done; }
  atomic_init(&stop, 0);
  pthread_mutex_init(&wk.mu, NULL);
  pthread_cond_init(&wk.cv, NULL);
  wk.ended = 0;
  for(int i = 0; i < n; i++){
    job *j = &jobs[i];
    j->wk = &wk;
    j->cfg = c;
    j->cc = cc;
    j->db_path = db_path;
    j->stop = &stop;
    j->run_id = run_id;
    j->id = i;
    j->start = ck[i].iter;
    j->ckpt = ck[i].blob;
    j->ckpt_len = ck[i].len;
    atomic_init(&j->done, j->start);
    atomic_init(&j->acc, 0);
    atomic_init(&j->bright, 0);
    atomic_init(&j->rc, FLY_OK);
    if( pthread_create(&th[i], NULL, run_chain, j) != 0 ){
      rc = fly_fail(err, FLY_NOMEM, "starting chain %d", i + 1);
      atomic_store(&stop, 1);
      break;
    }
    nstarted++;
  }
  say(hooks, "run %lld: %lld chains x (%lld warm-up + %lld), z %s, seed %llu",
      (long long)run_id, (long long)c->chains, (long long)c->warmup, (long long)c->iters,
      fly_zmode_name(c->z), (unsigned long long)c->seed);
  int64_t total = (c->warmup + c->iters) * c->chains, start = 0;
  for(int i = 0; i < nstarted; i++) start += jobs[i].start;
  double t0 = now();
  int asked = 0;
  for(;;){
    int64_t d = 0, acc = 0, br = 0;
    int alive = 0;
    for(int i = 0; i < nstarted; i++){
      d += atomic_load(&jobs[i].done);
      acc += atomic_load(&jobs[i].acc);
      br += atomic_load(&jobs[i].bright);
      if( atomic_load(&jobs[i].done) < c->warmup + c->iters &&
          atomic_load(&jobs[i].rc) == FLY_OK ) alive = 1;
    }
    if( d >= total || atomic_load(&stop) || !alive ) break;
    if( hooks && hooks->progress ){
      fly_run_progress p = { run_id, d, total, start,
                             d > start ? (double)acc / (double)(d - start) /
                                         (double)c->theta_steps : 0.0,
                             nstarted > 0 && N > 0 ? (double)br / (double)nstarted / (double)N
                                                   : 0.0,
                             now() - t0 };
      if( hooks->progress(hooks->ctx, &p) ){
        asked = 1;
        atomic_store(&stop, 1);
        break;
      }
    }
    /* until the next poll, or until a chain ends (unless one ended since
     * the last look) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += FLY_RUN_POLL_MS * 1000L * 1000L;
    if( ts.tv_nsec >= 1000000000L ){ ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_mutex_lock(&wk.mu);
    if( wk.ended == seen ) pthread_cond_timedwait(&wk.cv, &wk.mu, &ts);
    seen = wk.ended;
    pthread_mutex_unlock(&wk.mu);
  }
  for(int i = 0; i < nstarted; i++) pthread_join(th[i], NULL);
  for(int i = 0; i < nstarted && rc == FLY_OK; i++)
    if( atomic_load(&jobs[i].rc) ){ rc = (fly_rc)atomic_load(&jobs[i].rc); *err = jobs[i].err; }
  int64_t viol = 0;
  for(int i = 0; i < nstarted; i++) viol += jobs[i].n_viol;
  if( viol && rc == FLY_OK )
    rc = fly_fail(err, FLY_NUMERIC, "the thinning bound was violated %lld times: "
                  "the draws are not exact (a bug; please report)", (long long)viol);
  res->chains = nstarted;
  for(int i = 0; i < nstarted; i++){
    int64_t it = atomic_load(&jobs[i].done) - jobs[i].start;
    res->iters_done += it;
    res->full_seconds += jobs[i].t_full;
    if( jobs[i].t_loop > res->loop ) res->loop = jobs[i].t_loop;
    if( i < FLY_RUN_MAX_CHAINS ){
      res->prof[i] = jobs[i].prof;
      res->prof_iters[i] = it;
    }
  }
  res->profiled = c->profile && nstarted > 0;
  if( rc == FLY_OK && asked ) rc = FLY_DONE;
  pthread_cond_destroy(&wk.cv);
  pthread_mutex_destroy(&wk.mu);
done:
  fly_free(jobs);
  fly_free(th);
  return rc;
}

/* The run itself, new (resume_id 0) or resumed; ds: the data set's id, or
 * 0 to look up c->data. */
static fly_rc run_job(const char *db_path, fly_run_cfg *c, int64_t ds, int64_t resume_id,
                      const fly_run_hooks *hooks, fly_run_result *res, fly_err *err)
{
  fly_db *db = NULL;
  fly_bounds *bd = NULL;
  fly_buckets bk = {0};
  fly_sketch sk = {0};
  double *Xall = NULL;
  fly_pages *dmap = NULL, *bmap = NULL;   /* maps the threads' handles copy */
  ckpt ck[FLY_RUN_MAX_CHAINS];
  fly_dataset *dset = NULL;
  const char **names = NULL;
  fly_model m;
  fly_chain_cfg cc;
  fly_run_data_out dout;
  int64_t bs = 0, run_id = resume_id;
  double t0 = now();
  fly_rc rc;

  /* a shard manifest: its ranks sample it (shard/shard_sample.h) */
  if( fly_shard_path_is_manifest(db_path) )
    return fly_shard_sample(db_path, c, resume_id, hooks, res, err);
  memset(ck, 0, sizeof ck);
  memset(&dout, 0, sizeof dout);
  /* The default that chooses (run/choose.h): nothing that steers the
   * sampler was set, so the z mode and kernel are the run's to pick. */
  const unsigned steer = FLY_GIVEN_Z | FLY_GIVEN_BOUNDS | FLY_GIVEN_SAMPLER |
                         FLY_GIVEN_THETA_STEPS | FLY_GIVEN_LEAPFROG | FLY_GIVEN_STEP |
                         FLY_GIVEN_PROPOSAL | FLY_GIVEN_SCAN_FRAC | FLY_GIVEN_SKETCH;
  int choose = !c->z_set && !c->bounds_fixed && c->kernel == FLY_K_MH && !c->isotropic &&
               c->theta_steps == 0 && c->step == 0 && !(c->given & steer);
  fly_choice choice;
  memset(&choice, 0, sizeof choice);
  if( (rc = fly_run_cfg_resolve(c, err)) ){
    res->usage = 1;
    return rc;
  }
  res->seed = c->seed;
  res->cache_mb = c->cache_mb;
  fly_blas_serial();
  if( (rc = fly_db_open(db_path, 0, &db, err)) ) goto done;
  if( !ds ){   /* a new run: the data set its model reads (a resume has it) */
    int u = 0;
    if( (rc = fly_dataset_find(db, c->data, &ds, err)) ) goto done;
    if( (rc = fly_run_data(db, ds, &c->model, &dout, &u, err)) ){
      res->usage = u;
      goto done;
    }
    ds = dout.dataset_id;
    if( dout.derived ){
      say(hooks, "%s", dout.why);
      if( dout.target_note[0] ) say(hooks, "%s", dout.target_note);
      c->model.formula = dout.formula;
    }
  }
  if( (rc = fly_dataset_load(db, ds, &dset, err)) ) goto done;
  if( (rc = fly_model_spec_resolve(&c->model, db, ds, &m, err)) ||
      (rc = fly_run_cfg_fit(c, &m, err)) ){
    res->usage = rc == FLY_MISUSE;
    goto done;
  }
  /* WAL only now: a configuration error above leaves the file untouched */
  if( (rc = fly_db_wal(db, err)) ) goto done;

  /* The rows in memory when they fit (fits_memory) and a chain's page
   * cache would hold them all anyway (else the cache is the budget the
   * user set): tuning scans them, full-data NUTS sums over them, and the
   * FlyMC chains (and the chooser's pilots) read rows from them instead of
   * each decoding the pages into a cache of its own. */
  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &dmap, err)) ) goto done;
  if( c->z == FLY_Z_REGULAR || (double)dset->n_rows * (double)dset->width * 8.0 <=
                               (double)((size_t)c->cache_mb << 20) )
    if( (rc = load_all(db_path, dmap, ds, dset, &Xall, err)) ) goto done;
  fly_tune_opts to;
  fly_tune_opts_default(&to);
  to.X = Xall;
  to.data_map = dmap;
  to.tuning = c->bounds_fixed ? "fixed" : "map";
  to.fixed_xi = c->fixed_xi;
  to.verbose = c->verbose;
  if( (rc = fly_tune_get(db, ds, &m, &to, &bs, err)) ) goto done;
  if( (rc = fly_bounds_load(db, bs, &m, &bd, err)) ) goto done;
  if( c->z != FLY_Z_REGULAR && (rc = fly_pages_open(db, FLY_TABLE_BOUND, bs, 0, &bmap, err)) )
    goto done;

  /* The sketches spare a candidate's row its read, and with every row in
   * memory a read costs less than the check (zstep_gibbs.c checks only
   * rows that would cost a fetch): they would be built and never looked
   * at.  Whether they are cannot change a draw (sketch.h). */
  int sketched = c->z == FLY_Z_GIBBS && c->sketch && !Xall;
  if( c->z == FLY_Z_GIBBS ){
    /* The bucket index with the sketches in its records, on as many
     * threads as there are processors (up to 4): two passes over the bound
     * pages and one over the data pages. */
    double ti = now();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > 4 ? 4 : (int)ncpu;
    if( (rc = fly_index_build(db_path, ds, bs, bmap, dmap, &m,
                              sketched ? bd->chol_key : NULL, nt, &bk, &sk, err)) )
      goto done;
    say(hooks, "gibbs: thinning index%s of %lld rows built in %.1f s",
        sketched ? " and row sketches" : "", (long long)dset->n_rows, now() - ti);
  }
  /* The bright floor (docs/design.md §20): tuning above ran without it. */
  if( c->bright_floor < 0 )
    c->bright_floor = fly_run_bright_floor((int64_t)m.type->n_params(&m), dset->n_rows);
  m.slack = c->bright_floor > 0 ? -log1p(-c->bright_floor) : 0.0;
  memset(&cc, 0, sizeof cc);
  cc.db_path = db_path;
  cc.dataset_id = ds;
  cc.m = &m;
  cc.bounds = bd;
  cc.buckets = c->z == FLY_Z_GIBBS ? &bk : NULL;
  cc.sketch = sketched ? &sk : NULL;
  cc.N = dset->n_rows;
  cc.W = (size_t)dset->width;
  cc.z = c->z;
  cc.z_param = c->z_param;
  cc.scan_frac = c->scan_frac;
  cc.isotropic = c->isotropic;
  cc.kernel = c->kernel;
  cc.eps0 = c->step;
  cc.n_warmup = c->warmup;
  cc.n_leap = (int)c->leapfrog;
  cc.theta_steps = c->theta_steps;
  cc.init_map = c->init_map;
  cc.cache_bytes = (size_t)c->cache_mb << 20;
  cc.Xall = Xall;
  cc.data_map = dmap;
  cc.bound_map = bmap;

  if( choose ){
    if( (rc = fly_run_choose(&cc, c->seed, c->warmup + c->iters, dset->n_rows,
                             m.type->n_params(&m), fits_memory(dset), &choice, err)) )
      goto done;
    say(hooks, "%s", choice.why);
    if( choice.choice != FLY_CHOOSE_FLYMC_MH ){
      c->kernel = FLY_K_NUTS;
      c->theta_steps = 1;
      c->step = 0;
      if( choice.choice == FLY_CHOOSE_REGULAR_NUTS ){
        c->z = FLY_Z_REGULAR;
        c->sketch = -1;
        fly_buckets_free(&bk);
        fly_sketch_free(&sk);
        memset(&bk, 0, sizeof bk);
        memset(&sk, 0, sizeof sk);
        cc.buckets = NULL;
        cc.sketch = NULL;
      }
      if( (rc = fly_run_cfg_fit(c, &m, err)) ) goto done;
      cc.z = c->z;
      cc.kernel = c->kernel;
      cc.theta_steps = c->theta_steps;
      cc.eps0 = c->step;
    }
  }

  if( c->z == FLY_Z_REGULAR && !Xall ){
    if( (rc = load_all(db_path, dmap, ds, dset, &Xall, err)) ) goto done;
    cc.Xall = Xall;
  }

  if( resume_id > 0 ){
    if( (rc = load_checkpoints(db, run_id, (int)c->chains, ck, err)) ) goto done;
  }else{
    fly_run_rec rec;
    fly_run_line lines[FLY_RUN_LINES];
    fly_run_kv kv[FLY_RUN_LINES];
    size_t nl = fly_run_cfg_lines(c, &m, db_path, lines);
    if( choose ){
      lines[nl].key = "choice";
      snprintf(lines[nl].value, sizeof lines[nl].value, "%s", choice.why);
      lines[nl++].is_default = 1;
    }
    for(size_t i = 0; i < nl; i++)
      kv[i] = (fly_run_kv){ lines[i].key, lines[i].value, lines[i].is_default };
    fly_run_cfg_to_rec(c, &m, ds, bs, &rec);
    /* the parameters are named after the feature columns, in stored order */
    if( !(names = fly_alloc_array(m.D ? m.D : 1, sizeof *names)) ){
      rc = fly_fail(err, FLY_NOMEM, "parameter names");
      goto done;
    }
    for(size_t i = 0; i < dset->n_cols; i++){
      const fly_dataset_column *col = &dset->cols[i];
      if( col->idx >= 0 && (size_t)col->idx < m.D ) names[col->idx] = col->name;
    }
    /* a categorical target's classes are named by their labels (in the
     * order the model numbers them: R's factor order for a derived set) */
    const fly_dataset_column *tc = fly_dataset_target(dset);
    const char *const *classes = tc && tc->categorical && tc->n_levels == m.K ? tc->levels
                                                                              : NULL;
    if( (rc = fly_run_create(db, &rec, m.K, classes, names, kv, nl, FLYDB_VERSION, &run_id,
                             err)) ) goto done;
  }
  res->run_id = run_id;
  rc = drive(db_path, c, &cc, run_id, ck, dset->n_rows, hooks, res, err);
  if( (rc == FLY_OK || rc == FLY_DONE) && res->profiled ){
    fly_rc r2 = store_profile(db, run_id, res, err);
    if( r2 ) rc = r2;
  }
done:
  res->wall = now() - t0;
  if( run_id > 0 && db ){
    /* the run row says how this call ended: resumable, done or failed */
    fly_err e2 = {0};
    if( rc == FLY_DONE )
      fly_run_finish(db, run_id, "running", "interrupted; continue with --resume", res->wall,
                     res->loop, &e2);
    else if( rc == FLY_OK )
      rc = fly_run_finish(db, run_id, "done", NULL, res->wall, res->loop, err);
    else
      fly_run_finish(db, run_id, "failed", err->msg[0] ? err->msg : fly_rc_str(rc), res->wall,
                     res->loop, &e2);
    res->run_id = run_id;
  }
  for(int i = 0; i < FLY_RUN_MAX_CHAINS; i++) fly_free(ck[i].blob);
  fly_free(names);
  fly_dataset_free(dset);
  fly_free(Xall);
  fly_pages_close(dmap);
  fly_pages_close(bmap);
  fly_buckets_free(&bk);
  fly_sketch_free(&sk);
  fly_bounds_free(bd);
  fly_db_close(db);
  return rc;
}

fly_rc fly_run_sample(const char *db_path, const fly_run_cfg *cfg,
                      const fly_run_hooks *hooks, fly_run_result *res, fly_err *err)
{
  fly_run_cfg c = *cfg;
  fly_err local = {0};
  memset(res, 0, sizeof *res);
  return run_job(db_path, &c, 0, 0, hooks, res, err ? err : &local);
}

fly_rc fly_run_resume(const char *db_path, int64_t run_id, int64_t cache_mb,
                      int profile, int verbose, const fly_run_hooks *hooks,
                      fly_run_result *res, fly_err *err)
{
  fly_db *db = NULL;
  fly_run_rec rec;
  fly_run_cfg c;
  char status[FLY_RUN_NAME];
  fly_err local = {0};
  if( !err ) err = &local;
  memset(res, 0, sizeof *res);
  char floor[64];
  int has_floor = 0;
  fly_rc rc = fly_db_open(db_path, 0, &db, err);
  if( rc == FLY_OK ) rc = fly_run_load(db, run_id, &rec, status, err);
  if( rc == FLY_OK )
    rc = fly_run_config_value(db, run_id, "bright-floor", floor, sizeof floor, &has_floor, err);
  fly_db_close(db);
  if( rc ) return rc;
  if( strcmp(status, "done") == 0 )
    return fly_fail(err, FLY_MISUSE, "run %lld is already complete", (long long)run_id);
  if( rec.chains > FLY_RUN_MAX_CHAINS )
    return fly_fail(err, FLY_CORRUPT, "run %lld has %lld chains", (long long)run_id,
                    (long long)rec.chains);
  if( (rc = fly_run_cfg_from_rec(&rec, &c, err)) ) return rc;
  /* a run stored before the floor existed ran without one */
  c.bright_floor = has_floor ? strtod(floor, NULL) : 0.0;
  if( !(c.bright_floor >= 0 && c.bright_floor < 0.5) )
    return fly_fail(err, FLY_CORRUPT, "run %lld: stored bright-floor '%s' is out of range",
                    (long long)run_id, floor);
  if( cache_mb > 0 ){
    c.cache_mb = cache_mb;
    c.given |= FLY_GIVEN_CACHE_MB;
  }
  c.profile = profile;
  c.verbose = verbose;
  return run_job(db_path, &c, rec.dataset_id, run_id, hooks, res, err);
}
