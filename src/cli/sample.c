/*
 * sample.c -- `flydb sample`: tune the bounds (or reuse them), run chains in
 * parallel threads, write draws into the database, print the summary.
 *
 * Reproducibility: chain c draws from RNG stream c of --seed, and chains
 * never share mutable state, so the draws do not depend on thread timing.
 * Every option is stored in run_config; `--resume RUN_ID` rebuilds the
 * same configuration from it and continues each chain from its last
 * checkpoint, which was committed in the same transaction as the draws
 * before it, so a resumed run yields exactly the draws of an uninterrupted
 * one (kill -9 included).  ^C stops the chains at a checkpoint.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "flymc/buckets.h"
#include "flymc/index.h"
#include "flymc/sketch.h"
#include "flymc/chain.h"
#include "models/model.h"
#include "modelopt.h"
#include "progress.h"
#include "store/db.h"
#include "store/pages.h"
#include "store/trace.h"
#include "tune/tune.h"
#include "util/mem.h"

void openblas_set_num_threads(int);

static atomic_int g_stop;
static void on_sigint(int s) { (void)s; atomic_store(&g_stop, 1); }

typedef struct sample_cfg {
  const char *db_path, *data;
  int64_t     iters, warmup, chains, thin, ckpt_every, cache_mb, full_every;
  uint64_t    seed;
  fly_zmode   z;
  double      z_param, fixed_xi, eps0, scan_frac;
  fly_model   m;            /* resolved against the data set in run_sample */
  fly_kernel  kernel;
  int64_t     n_leap, theta_steps;
  int         fixed_bounds, isotropic, init_map, quiet, profile;
  int         sketch;       /* -1 auto, 0 off, 1 on; resolved in run_sample */
} sample_cfg;

typedef struct job {
  const sample_cfg    *sc;
  const fly_chain_cfg *cc;
  int64_t              run_id;
  int                  id;
  int64_t              start;      /* iterations already done (resume) */
  void                *ckpt;       /* checkpoint to restore, or NULL */
  size_t               ckpt_len;
  atomic_llong         done;       /* iterations completed */
  atomic_llong         acc, bright;
  double               t_loop, t_full;
  fly_prof             prof;       /* --profile: exclusive times of the loop */
  int64_t              n_viol;
  atomic_int           rc;         /* fly_rc; read by the progress loop */
  fly_err              err;
} job;

/* Iterations between the ends of a chain's read transaction (see
 * fly_chain_release).  With 4, two chains at 10^6 rows kept the WAL at
 * 20-22 MB as before the hold, against 17-133 MB growing when released only
 * at commits (every 2 s), and 2.0 -> 0.5 fcntl calls an iteration. */
#define RELEASE_EVERY 4

static void *run_chain(void *arg)
{
  job *j = arg;
  const sample_cfg *sc = j->sc;
  fly_chain *ch = NULL;
  fly_trace *tr = NULL;
  fly_err *err = &j->err;
  fly_rc rc;
  int64_t total = sc->warmup + sc->iters;
  size_t cap = (size_t)(sc->ckpt_every / sc->thin + 2);
  void *blob = NULL;
  size_t len = 0;
  double last = fly_now();

  if( (rc = fly_chain_open(j->cc, j->id, sc->seed, &ch, err)) ) goto done;
  if( j->ckpt ) rc = fly_chain_restore(ch, j->ckpt, j->ckpt_len, err);
  else rc = fly_chain_init(ch, err);
  if( rc ) goto done;
  if( (rc = fly_trace_open(sc->db_path, j->run_id, j->id, fly_chain_dim(ch), cap,
                           &tr, err)) ) goto done;
  double t_start = fly_now();
  fly_prof *pf = fly_chain_prof(ch);
  if( sc->profile ) fly_prof_start(pf);
  for(int64_t it = j->start + 1; it <= total; it++){
    fly_iter_stats s;
    if( (rc = fly_chain_step(ch, it <= sc->warmup, &s, err)) ){
      fly_err_prefix(err, "chain %d, iteration %lld", j->id + 1, (long long)it);
      goto done;
    }
    j->n_viol += s.n_viol;
    atomic_fetch_add(&j->acc, s.accepted);
    atomic_store(&j->bright, s.n_bright);
    if( it % sc->thin == 0 ){
      fly_trace_row row = { s.lp, s.n_bright, s.n_lik, s.n_reads,
                            (double)s.accepted / (double)sc->theta_steps, s.eps, NAN };
      if( sc->full_every > 0 && it % sc->full_every == 0 ){
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
    int stop = atomic_load(&g_stop);
    double t = fly_now();
    if( it == total || stop || fly_trace_pending(tr) + 1 >= cap ||
        (it % sc->ckpt_every) == 0 || t - last > 2.0 ){
      fly_prof_push(pf, FLY_PROF_WRITE);
      fly_chain_release(ch);        /* so the commit's checkpoint can pass */
      rc = fly_chain_save(ch, &blob, &len, err);
      if( rc == FLY_OK ) rc = fly_trace_commit(tr, it, blob, len, err);
      fly_prof_pop(pf);
      fly_free(blob);
      blob = NULL;
      if( rc ) goto done;
      last = t;
    }
    atomic_store(&j->done, it);
    j->t_loop = fly_now() - t_start;
    if( stop ) break;
  }
done:
  if( ch ){
    fly_prof_stop(fly_chain_prof(ch));
    j->prof = *fly_chain_prof(ch);
  }
  fly_trace_close(tr);
  fly_chain_close(ch);
  j->rc = rc;
  return NULL;
}

/* ---- configuration ---------------------------------------------------- */

static fly_opt sample_opts_tmpl[] = {
  { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
  { "data", FLY_OPT_VALUE, "data set name (default: the only one)", 0, 0 },
  FLY_MODEL_OPTS,
  { "iters", FLY_OPT_VALUE, "post-warm-up iterations per chain (default 1000)", 0, 0 },
  { "warmup", FLY_OPT_VALUE, "warm-up iterations (default iters/2)", 0, 0 },
  { "chains", FLY_OPT_VALUE, "number of chains, run in parallel (default 2)", 0, 0 },
  { "seed", FLY_OPT_VALUE, "RNG seed (default: from the clock; stored)", 0, 0 },
  { "thin", FLY_OPT_VALUE, "keep every K-th iteration (default 1)", 0, 0 },
  { "z", FLY_OPT_VALUE, "gibbs | implicit[=q_db] | explicit[=fraction] (default gibbs "
                        "with MAP bounds, implicit=0.1 with fixed)", 0, 0 },
  { "regular", FLY_OPT_FLAG, "full-data MCMC (every z = 1): the baseline", 0, 0 },
  { "bounds", FLY_OPT_VALUE, "map (default) | fixed[=xi] (untuned, xi 1.5)", 0, 0 },
  { "sampler", FLY_OPT_VALUE, "theta kernel: mh (default) | mala | slice | hmc", 0, 0 },
  { "theta-steps", FLY_OPT_VALUE, "theta updates per z update (default 32 with --z gibbs "
                                  "and --sampler mh, else 1)", 0, 0 },
  { "leapfrog", FLY_OPT_VALUE, "hmc: leapfrog steps per iteration (default 16)", 0, 0 },
  { "proposal", FLY_OPT_VALUE, "laplace (default) | isotropic (the paper's): the "
                               "kernel's preconditioner", 0, 0 },
  { "step", FLY_OPT_VALUE, "initial step size (default by kernel; slice: interval "
                           "width); adapted during warm-up", 0, 0 },
  { "init", FLY_OPT_VALUE, "laplace (default: a draw around the MAP) | map", 0, 0 },
  { "cache-mb", FLY_OPT_VALUE, "decoded-page cache per chain in MiB (default: a quarter "
                               "of RAM shared by the chains, at least 256); gibbs scans "
                               "also keep every row's bound coefficients in it when they "
                               "fit half of what the data pages leave, and for logistic "
                               "an f32 copy of every row if that fits too, so a scan "
                               "reads only rows a single-precision bound cannot rule "
                               "out", 0, 0 },
  { "scan-frac", FLY_OPT_VALUE, "gibbs: scan when expected candidates exceed this "
                                "fraction of N (default 0.25)", 0, 0 },
  { "sketch", FLY_OPT_VALUE, "gibbs: on | off: keep 15 bytes a row that bound each row's "
                             "linear predictors, so most thinned candidates are rejected "
                             "without a read (default on; it changes which rows are "
                             "read, not the chain's draws)", 0, 0 },
  { "full-logpost-every", FLY_OPT_VALUE, "every K iterations store the exact full-data "
                                         "log posterior (a full scan; off by default)", 0, 0 },
  { "checkpoint-every", FLY_OPT_VALUE, "commit draws and a checkpoint every K "
                                       "iterations (default 1000; also every 2 s)", 0, 0 },
  { "resume", FLY_OPT_VALUE, "continue interrupted run RUN_ID", 0, 0 },
  { "profile", FLY_OPT_FLAG, "report where the sampling loop's wall time goes (theta, "
                            "z, row reads, page decoding, writing, other; stored in "
                            "table profile)", 0, 0 },
  { "quiet", FLY_OPT_FLAG, "no summary at the end", 0, 0 },
  { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
  { NULL, 0, NULL, 0, 0 },
};

#define NOPTS (sizeof sample_opts_tmpl / sizeof sample_opts_tmpl[0])
static const char *synopsis = "[options]";

/* Default decoded-page cache per chain: a quarter of physical memory shared
 * by the chains (a store that fits is then served by memcpy), at least
 * 256 MiB, and within a quarter of an address-space limit if one is set.
 * Cache slots are allocated zeroed and untouched ones cost no RAM, so small
 * stores use only what they need. */
static int64_t default_cache_mb(int64_t chains)
{
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  double mb = pages > 0 && psz > 0 ? (double)pages * (double)psz / 1048576.0 / 4.0 : 1024;
  struct rlimit rl;
  if( getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ){
    double lim = (double)rl.rlim_cur / 1048576.0 / 4.0;
    if( lim < mb ) mb = lim;
  }
  mb /= (double)(chains > 0 ? chains : 1);
  return mb < 256 ? 256 : (int64_t)mb;
}

static fly_rc resolve(fly_args *a, sample_cfg *sc, fly_err *err)
{
  fly_rc rc;
  const char *s;
  memset(sc, 0, sizeof *sc);
  sc->db_path = fly_args_str(a, "db", "flydb.db");
  sc->data = fly_args_str(a, "data", NULL);
  if( (rc = fly_args_int(a, "iters", 1000, 1, INT64_C(1) << 40, &sc->iters, err)) ) return rc;
  if( (rc = fly_args_int(a, "warmup", sc->iters / 2, 0, INT64_C(1) << 40, &sc->warmup, err)) ) return rc;
  if( (rc = fly_args_int(a, "chains", 2, 1, 64, &sc->chains, err)) ) return rc;
  if( (rc = fly_args_int(a, "thin", 1, 1, INT64_C(1) << 30, &sc->thin, err)) ) return rc;
  if( (rc = fly_args_int(a, "cache-mb", default_cache_mb(sc->chains), 1, INT64_C(1) << 20,
                         &sc->cache_mb, err)) ) return rc;
  if( (rc = fly_args_int(a, "checkpoint-every", 1000, 1, INT64_C(1) << 40, &sc->ckpt_every, err)) ) return rc;
  if( (rc = fly_args_int(a, "full-logpost-every", 0, 0, INT64_C(1) << 40, &sc->full_every, err)) ) return rc;
  if( sc->full_every > 0 && sc->full_every % sc->thin != 0 )
    return fly_fail(err, FLY_MISUSE, "--full-logpost-every must be a multiple of --thin "
                    "(only kept iterations are stored)");
  if( (rc = fly_args_real(a, "scan-frac", 0.25, 0.0, 1e9, &sc->scan_frac, err)) ) return rc;
  const char *sk = fly_args_str(a, "sketch", NULL);
  sc->sketch = -1;
  if( sk && strcmp(sk, "on") == 0 ) sc->sketch = 1;
  else if( sk && strcmp(sk, "off") == 0 ) sc->sketch = 0;
  else if( sk )
    return fly_fail(err, FLY_MISUSE, "--sketch: '%s' is not on or off", sk);
  int64_t seed;
  if( (rc = fly_args_int(a, "seed", -1, 0, INT64_MAX, &seed, err)) ) return rc;
  /* a drawn seed is kept below 2^62 so it prints and stores as given */
  sc->seed = seed >= 0 ? (uint64_t)seed
                       : ((((uint64_t)time(NULL) * 2654435761u) ^ (uint64_t)getpid())
                          & ((UINT64_C(1) << 62) - 1));

  s = fly_args_str(a, "bounds", "map");
  if( strcmp(s, "map") == 0 ) sc->fixed_bounds = 0;
  else if( strncmp(s, "fixed", 5) == 0 && (s[5] == 0 || s[5] == '=') ){
    sc->fixed_bounds = 1;
    sc->fixed_xi = 1.5;
    if( s[5] == '=' ){
      char *end;
      sc->fixed_xi = strtod(s + 6, &end);
      if( end == s + 6 || *end || !(sc->fixed_xi > 0) || !isfinite(sc->fixed_xi) )
        return fly_fail(err, FLY_MISUSE, "--bounds fixed=X: '%s' is not a positive number", s + 6);
    }
  }else return fly_fail(err, FLY_MISUSE, "--bounds: '%s' is not map or fixed[=xi]", s);

  if( fly_args_set(a, "regular") ){
    if( fly_args_set(a, "z") )
      return fly_fail(err, FLY_MISUSE, "--regular and --z conflict: regular MCMC has no z");
    sc->z = FLY_Z_REGULAR;
  }else{
    s = fly_args_str(a, "z", sc->fixed_bounds ? "implicit" : "gibbs");
    const char *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    if( n == 5 && strncmp(s, "gibbs", 5) == 0 && !eq ){
      if( sc->fixed_bounds )
        return fly_fail(err, FLY_MISUSE, "--z gibbs needs MAP-tuned bounds (its thinning "
                        "bound holds around the MAP); use --z implicit with --bounds fixed");
      sc->z = FLY_Z_GIBBS;
    }else if( n == 8 && strncmp(s, "implicit", 8) == 0 ){
      sc->z = FLY_Z_IMPLICIT;
      sc->z_param = 0.1;
    }else if( n == 8 && strncmp(s, "explicit", 8) == 0 ){
      sc->z = FLY_Z_EXPLICIT;
      sc->z_param = 0.1;
    }else return fly_fail(err, FLY_MISUSE, "--z: '%s' is not gibbs, implicit[=q] or explicit[=f]", s);
    if( eq ){
      char *end;
      sc->z_param = strtod(eq + 1, &end);
      if( end == eq + 1 || *end || !(sc->z_param > 0 && sc->z_param <= 1) )
        return fly_fail(err, FLY_MISUSE, "--z %.*s=X: X must be in (0, 1]", (int)n, s);
    }
  }
  s = fly_args_str(a, "sampler", "mh");
  int kern = fly_kernel_find(s);
  if( kern < 0 )
    return fly_fail(err, FLY_MISUSE, "--sampler: '%s' is not mh, mala, slice or hmc", s);
  sc->kernel = (fly_kernel)kern;
  if( (rc = fly_args_int(a, "leapfrog", 16, 1, 100000, &sc->n_leap, err)) ) return rc;
  /* A z step costs its row reads, an MH theta update O(P^2 + bright rows):
   * with the thinned z step several MH updates per z update are nearly free
   * and mix theta much better (docs/performance.md §2.3).  A gradient or slice
   * update costs many bright-row passes (HMC: --leapfrog of them), and 32 of
   * them made HMC 11x slower in ESS/s on the Fashion-MNIST pair, so those
   * kernels, like implicit and explicit (whose counts Table 1 assumes), keep
   * the paper's one update. */
  int64_t ts_def = sc->z == FLY_Z_GIBBS && sc->kernel == FLY_K_MH ? 32 : 1;
  if( (rc = fly_args_int(a, "theta-steps", ts_def, 1, 1000000,
                         &sc->theta_steps, err)) ) return rc;
  if( sc->z == FLY_Z_REGULAR && sc->theta_steps != 1 )
    return fly_fail(err, FLY_MISUSE, "--theta-steps with --regular: every theta update "
                    "of regular MCMC is a full pass over the data; use --iters");
  if( fly_args_set(a, "leapfrog") && sc->kernel != FLY_K_HMC )
    return fly_fail(err, FLY_MISUSE, "--leapfrog is for --sampler hmc");
  s = fly_args_str(a, "proposal", "laplace");
  if( strcmp(s, "isotropic") == 0 ) sc->isotropic = 1;
  else if( strcmp(s, "laplace") != 0 )
    return fly_fail(err, FLY_MISUSE, "--proposal: '%s' is not laplace or isotropic", s);
  s = fly_args_str(a, "init", "laplace");
  if( strcmp(s, "map") == 0 ) sc->init_map = 1;
  else if( strcmp(s, "laplace") != 0 )
    return fly_fail(err, FLY_MISUSE, "--init: '%s' is not laplace or map", s);
  if( (rc = fly_args_real(a, "step", 0, 0, 1e6, &sc->eps0, err)) ) return rc;
  if( fly_args_set(a, "step") && !(sc->eps0 > 0) )
    return fly_fail(err, FLY_MISUSE, "--step must be positive");
  sc->quiet = fly_args_set(a, "quiet");
  sc->profile = fly_args_set(a, "profile");
  return FLY_OK;
}

/* The resolved value of option `name` (what the run actually uses). */
static void resolved(const sample_cfg *sc, const char *name, char *buf, size_t n)
{
  buf[0] = 0;
  if( fly_modelopt_value(&sc->m, name, buf, n) ) return;
  if( !strcmp(name, "db") ) snprintf(buf, n, "%s", sc->db_path);
  else if( !strcmp(name, "data") ) snprintf(buf, n, "%s", sc->data ? sc->data : "(the only one)");
  else if( !strcmp(name, "iters") ) snprintf(buf, n, "%lld", (long long)sc->iters);
  else if( !strcmp(name, "warmup") ) snprintf(buf, n, "%lld", (long long)sc->warmup);
  else if( !strcmp(name, "chains") ) snprintf(buf, n, "%lld", (long long)sc->chains);
  else if( !strcmp(name, "seed") ) snprintf(buf, n, "%llu", (unsigned long long)sc->seed);
  else if( !strcmp(name, "thin") ) snprintf(buf, n, "%lld", (long long)sc->thin);
  else if( !strcmp(name, "z") ){
    if( sc->z == FLY_Z_IMPLICIT || sc->z == FLY_Z_EXPLICIT )
      snprintf(buf, n, "%s=%.17g", fly_zmode_name(sc->z), sc->z_param);
    else snprintf(buf, n, "%s", fly_zmode_name(sc->z));
  }
  else if( !strcmp(name, "regular") ) snprintf(buf, n, "%d", sc->z == FLY_Z_REGULAR);
  else if( !strcmp(name, "bounds") ){
    if( sc->fixed_bounds ) snprintf(buf, n, "fixed=%.17g", sc->fixed_xi);
    else snprintf(buf, n, "map");
  }
  else if( !strcmp(name, "sampler") ) snprintf(buf, n, "%s", fly_kernel_name(sc->kernel));
  else if( !strcmp(name, "theta-steps") ) snprintf(buf, n, "%lld", (long long)sc->theta_steps);
  else if( !strcmp(name, "leapfrog") ) snprintf(buf, n, "%lld", (long long)sc->n_leap);
  else if( !strcmp(name, "proposal") ) snprintf(buf, n, "%s", sc->isotropic ? "isotropic" : "laplace");
  else if( !strcmp(name, "step") ) snprintf(buf, n, "%.17g", sc->eps0);
  else if( !strcmp(name, "init") ) snprintf(buf, n, "%s", sc->init_map ? "map" : "laplace");
  else if( !strcmp(name, "cache-mb") ) snprintf(buf, n, "%lld", (long long)sc->cache_mb);
  else if( !strcmp(name, "scan-frac") ) snprintf(buf, n, "%.17g", sc->scan_frac);
  else if( !strcmp(name, "sketch") ) snprintf(buf, n, "%s", sc->sketch > 0 ? "on" : "off");
  else if( !strcmp(name, "checkpoint-every") ) snprintf(buf, n, "%lld", (long long)sc->ckpt_every);
  else if( !strcmp(name, "full-logpost-every") ) snprintf(buf, n, "%lld", (long long)sc->full_every);
  else if( !strcmp(name, "quiet") ) snprintf(buf, n, "%d", sc->quiet);
  else if( !strcmp(name, "profile") ) snprintf(buf, n, "%d", sc->profile);
}

/* Store every option: as given on the command line (is_default 0) or as
 * resolved from the defaults (is_default 1).  --resume replays the given
 * ones plus the resolved seed and warm-up (a drawn seed, a derived warm-up
 * must not be drawn or derived again). */
static fly_rc store_config(fly_db *db, int64_t run_id, fly_args *a,
                           const sample_cfg *sc, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  char buf[4096];
  fly_rc rc = fly_db_prepare(db, "INSERT INTO run_config(run_id, key, value, is_default) "
                             "VALUES (?1,?2,?3,?4)", &st, err);
  if( rc ) return rc;
  for(fly_opt *o = a->opts; o->name && rc == FLY_OK; o++){
    if( !strcmp(o->name, "resume") || !strcmp(o->name, "help") ) continue;
    const char *v = buf;
    if( o->set && o->kind != FLY_OPT_FLAG ) v = o->value;
    else resolved(sc, o->name, buf, sizeof buf);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, o->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, v, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, o->set ? 0 : 1);
    if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "storing the run configuration");
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

/* Rebuild argv from run_config (options given explicitly or pinned). */
static fly_rc load_config(fly_db *db, int64_t run_id, char ***argv_out, int *argc_out,
                          fly_err *err)
{
  sqlite3_stmt *st = NULL;
  char **av = NULL;
  int ac = 0, have_ts = 0;
  fly_rc rc = fly_db_prepare(db, "SELECT key, value FROM run_config WHERE run_id=?1 "
                             "AND (is_default=0 OR key IN ('seed', 'warmup', 'theta-steps')) ORDER BY key",
                             &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  av = fly_alloc_array(2 * NOPTS + 1, sizeof *av);
  if( !av ){ sqlite3_finalize(st); return fly_fail(err, FLY_NOMEM, "resume"); }
  while( sqlite3_step(st) == SQLITE_ROW && ac + 2 < (int)(2 * NOPTS) ){
    const char *k = (const char *)sqlite3_column_text(st, 0);
    const char *v = (const char *)sqlite3_column_text(st, 1);
    fly_opt *o = NULL;
    for(fly_opt *p = sample_opts_tmpl; p->name; p++) if( !strcmp(p->name, k) ) o = p;
    if( !o ) continue;
    if( !strcmp(k, "theta-steps") ) have_ts = 1;
    size_t n = strlen(k) + strlen(v) + 4;
    av[ac] = fly_alloc_array(n, 1);
    if( !av[ac] ){ rc = fly_fail(err, FLY_NOMEM, "resume"); break; }
    if( o->kind == FLY_OPT_FLAG ){
      if( strcmp(v, "1") != 0 ){ fly_free(av[ac]); continue; }
      snprintf(av[ac], n, "--%s", k);
    }else snprintf(av[ac], n, "--%s=%s", k, v);
    ac++;
  }
  sqlite3_finalize(st);
  /* Runs stored before --theta-steps existed made one theta update per
   * iteration whatever their z mode: resume them that way. */
  if( rc == FLY_OK && !have_ts ){
    if( !(av[ac] = fly_alloc_array(32, 1)) ) rc = fly_fail(err, FLY_NOMEM, "resume");
    else snprintf(av[ac++], 32, "--theta-steps=1");
  }
  *argv_out = av;
  *argc_out = ac;
  return rc;
}

static void free_argv(char **av, int ac)
{
  if( !av ) return;
  for(int i = 0; i < ac; i++) fly_free(av[i]);
  fly_free(av);
}

/* ---- the run ---------------------------------------------------------- */

typedef struct dshape { int64_t n_rows, width, page_rows; } dshape;

static fly_rc dataset_shape(fly_db *db, int64_t ds, dshape *sh, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT n_rows, width, page_rows FROM dataset WHERE id=?1",
                             &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, ds);
  if( sqlite3_step(st) == SQLITE_ROW ){
    sh->n_rows = sqlite3_column_int64(st, 0);
    sh->width = sqlite3_column_int64(st, 1);
    sh->page_rows = sqlite3_column_int64(st, 2);
  }else rc = fly_db_fail(db, err, "reading the data set");
  sqlite3_finalize(st);
  return rc;
}

/* All rows in one block for regular MCMC, when they fit comfortably. */
static fly_rc load_all(fly_db *db, int64_t ds, const dshape *sh, double **out,
                       fly_err *err)
{
  fly_pages *p = NULL;
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  double bytes = (double)sh->n_rows * (double)sh->width * 8.0;
  fly_rc rc;
  *out = NULL;
  if( pages > 0 && psz > 0 && bytes > 0.4 * (double)pages * (double)psz ) return FLY_OK;
  double *X = fly_alloc_array((size_t)sh->n_rows, (size_t)sh->width * sizeof(double));
  if( !X ) return FLY_OK;   /* stream instead */
  if( (rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &p, err)) ) goto done;
  const fly_pages_info *in = fly_pages_info_of(p);
  for(int64_t pg = 0; pg < in->n_pages; pg++){
    size_t n;
    if( (rc = fly_pages_read_page(p, pg, X + (size_t)(pg * in->page_rows * sh->width),
                                  &n, err)) ) goto done;
  }
done:
  fly_pages_close(p);
  if( rc ){ fly_free(X); return rc; }
  *out = X;
  return FLY_OK;
}

static fly_rc create_run(fly_db *db, int64_t ds, int64_t bs, const sample_cfg *sc,
                         size_t P, fly_args *a, int64_t *run_id, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_begin(db, err);
  if( rc ) return rc;
  rc = fly_db_prepare(db, "INSERT INTO run(dataset_id, bound_set_id, model, sampler, z_mode, "
      "n_chains, n_warmup, n_iters, thin, seed, n_params, status, version) VALUES "
      "(?1,?2,?12,?11,?3,?4,?5,?6,?7,?8,?9,'running',?10)", &st, err);
  if( rc ) goto done;
  sqlite3_bind_int64(st, 1, ds);
  sqlite3_bind_int64(st, 2, bs);
  sqlite3_bind_text(st, 3, fly_zmode_name(sc->z), -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, sc->chains);
  sqlite3_bind_int64(st, 5, sc->warmup);
  sqlite3_bind_int64(st, 6, sc->iters);
  sqlite3_bind_int64(st, 7, sc->thin);
  sqlite3_bind_int64(st, 8, (int64_t)sc->seed);
  sqlite3_bind_int64(st, 9, (int64_t)P);
  sqlite3_bind_text(st, 10, FLYDB_VERSION, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 11, fly_kernel_name(sc->kernel), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 12, sc->m.type->name, -1, SQLITE_STATIC);
  if( sqlite3_step(st) != SQLITE_DONE ){ rc = fly_db_fail(db, err, "creating the run"); goto done; }
  *run_id = sqlite3_last_insert_rowid(fly_db_sqlite(db));
  sqlite3_finalize(st);
  st = NULL;
  if( (rc = fly_modelopt_params(db, *run_id, ds, &sc->m, err)) ) goto done;
  if( (rc = store_config(db, *run_id, a, sc, err)) ) goto done;
  rc = fly_db_commit(db, err);
done:
  sqlite3_finalize(st);
  if( rc ) fly_db_rollback(db);
  return rc;
}

static fly_rc finish_run(fly_db *db, int64_t run_id, const char *status,
                         const char *msg, double wall, double loop, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "UPDATE run SET status=?2, message=?3, wall_seconds="
      "coalesce(wall_seconds, 0) + ?4, sample_seconds=coalesce(sample_seconds, 0) + ?5, "
      "finished_at=strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id=?1", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC);
  if( msg ) sqlite3_bind_text(st, 3, msg, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, 3);
  sqlite3_bind_double(st, 4, wall);
  sqlite3_bind_double(st, 5, loop);
  if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "finishing the run");
  sqlite3_finalize(st);
  return rc;
}

/* --profile: print each chain's and the total share of the sampling loop
 * per part on stderr and store them in table profile (this invocation's
 * loops; a resumed run replaces the rows). */
static fly_rc report_profile(fly_db *db, int64_t run_id, const job *jobs, int n,
                             fly_err *err)
{
  double tot[FLY_PROF_N] = {0}, all = 0;
  int64_t n_it = 0;
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_begin(db, err);
  if( rc ) return rc;
  rc = fly_db_prepare(db, "INSERT OR REPLACE INTO profile(run_id, chain, part, seconds, "
                      "share, n_iters) VALUES (?1,?2,?3,?4,?5,?6)", &st, err);
  for(int c = 0; c < n && rc == FLY_OK; c++){
    const fly_prof *pf = &jobs[c].prof;
    double sum = fly_prof_total(pf);
    int64_t it = atomic_load(&jobs[c].done) - jobs[c].start;
    n_it += it;
    for(int k = 0; k < FLY_PROF_N && rc == FLY_OK; k++){
      tot[k] += pf->t[k];
      all += pf->t[k];
      sqlite3_bind_int64(st, 1, run_id);
      sqlite3_bind_int(st, 2, c);
      sqlite3_bind_text(st, 3, fly_prof_name((fly_prof_part)k), -1, SQLITE_STATIC);
      sqlite3_bind_double(st, 4, pf->t[k]);
      sqlite3_bind_double(st, 5, sum > 0 ? 100.0 * pf->t[k] / sum : 0.0);
      sqlite3_bind_int64(st, 6, it);
      if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "storing the profile");
      sqlite3_reset(st);
    }
  }
  sqlite3_finalize(st);
  if( rc == FLY_OK ) rc = fly_db_commit(db, err);
  if( rc ){ fly_db_rollback(db); return rc; }

  fprintf(stderr, "profile of the sampling loop (exclusive wall time: a row read inside "
          "the z step counts as read, a page fetch inside a read as decode)\n%-8s", "part");
  for(int c = 0; c < n; c++) fprintf(stderr, "  chain %-2d", c + 1);
  fprintf(stderr, "     total  us/iter\n");
  for(int k = 1; k <= FLY_PROF_N; k++){
    int part = k % FLY_PROF_N;          /* "other" last */
    fprintf(stderr, "%-8s", fly_prof_name((fly_prof_part)part));
    for(int c = 0; c < n; c++){
      double sum = fly_prof_total(&jobs[c].prof);
      fprintf(stderr, " %8.1f%%", sum > 0 ? 100.0 * jobs[c].prof.t[part] / sum : 0.0);
    }
    fprintf(stderr, " %8.1f%% %8.2f\n", all > 0 ? 100.0 * tot[part] / all : 0.0,
            n_it > 0 ? 1e6 * tot[part] / (double)n_it : 0.0);
  }
  fprintf(stderr, "%-8s", "seconds");
  for(int c = 0; c < n; c++) fprintf(stderr, " %9.2f", fly_prof_total(&jobs[c].prof));
  fprintf(stderr, " %9.2f %8.2f\n", all, n_it > 0 ? 1e6 * all / (double)n_it : 0.0);
  return FLY_OK;
}

/* Checkpoints of a run being resumed: per chain (iteration, blob). */
static fly_rc load_checkpoints(fly_db *db, int64_t run_id, job *jobs, int n,
                               fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT chain, iter, state FROM checkpoint WHERE run_id=?1",
                             &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, run_id);
  while( sqlite3_step(st) == SQLITE_ROW ){
    int c = sqlite3_column_int(st, 0);
    if( c < 0 || c >= n ) continue;
    size_t len = (size_t)sqlite3_column_bytes(st, 2);
    jobs[c].ckpt = fly_alloc_array(len ? len : 1, 1);
    if( !jobs[c].ckpt ){ rc = fly_fail(err, FLY_NOMEM, "checkpoint"); break; }
    memcpy(jobs[c].ckpt, sqlite3_column_blob(st, 2), len);
    jobs[c].ckpt_len = len;
    jobs[c].start = sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  /* draws after a checkpoint cannot exist (same transaction), but a chain
   * with no checkpoint starts from scratch: remove anything it wrote */
  for(int c = 0; c < n && rc == FLY_OK; c++){
    char sql[256];
    /* draw_block holds the diagnostics too (the view `iteration`) */
    snprintf(sql, sizeof sql, "DELETE FROM draw_block WHERE run_id=%lld AND chain=%d AND iter>%lld",
             (long long)run_id, c, (long long)jobs[c].start);
    rc = fly_db_exec(db, sql, err);
  }
  return rc;
}

static int run_sample(fly_args *a, int64_t resume_id)
{
  sample_cfg sc;
  fly_err err = {0};
  fly_db *db = NULL;
  fly_bounds *bd = NULL;
  fly_buckets bk = {0};
  fly_sketch sk = {0};
  double *Xall = NULL;
  job *jobs = NULL;
  pthread_t *th = NULL;
  int64_t ds = 0, bs = 0, run_id = resume_id;
  dshape sh = {0, 0, 0};
  fly_model m;
  fly_chain_cfg cc;
  fly_rc rc;
  int nstarted = 0;
  double t0 = fly_now();

  if( (rc = resolve(a, &sc, &err)) ){
    fprintf(stderr, "flydb sample: %s\n", err.msg);
    return 2;
  }
  openblas_set_num_threads(1);
  if( (rc = fly_db_open(sc.db_path, 0, &db, &err)) ) goto done;
  if( (rc = fly_db_dataset_id(db, sc.data, &ds, &err)) ) goto done;
  if( (rc = dataset_shape(db, ds, &sh, &err)) ) goto done;

  if( (rc = fly_modelopt_resolve(a, db, ds, &sc.m, &err)) ){
    if( rc == FLY_MISUSE ){     /* a bad model option is a usage error */
      fprintf(stderr, "flydb sample: %s\n", err.msg);
      fly_db_close(db);
      return 2;
    }
    goto done;
  }
  m = sc.m;
  /* --sketch on where it cannot apply is a usage error; by default a
   * sketch is kept wherever it applies */
  if( sc.sketch == 1 && !(sc.z == FLY_Z_GIBBS && fly_sketch_fits(&m)) ){
    fprintf(stderr, "flydb sample: --sketch on is for --z gibbs; this run is %s\n",
            fly_zmode_name(sc.z));
    fly_db_close(db);
    return 2;
  }
  sc.sketch = sc.sketch != 0 && sc.z == FLY_Z_GIBBS && fly_sketch_fits(&m);
  /* WAL only now: a usage error above leaves the file untouched */
  if( (rc = fly_db_wal(db, &err)) ) goto done;

  fly_tune_opts to;
  fly_tune_opts_default(&to);
  to.tuning = sc.fixed_bounds ? "fixed" : "map";
  to.fixed_xi = sc.fixed_xi;
  to.verbose = !sc.quiet;
  if( (rc = fly_tune_get(db, ds, &m, &to, &bs, &err)) ) goto done;
  if( (rc = fly_bounds_load(db, bs, &m, &bd, &err)) ) goto done;
  size_t P = m.type->n_params(&m);
  if( sc.eps0 <= 0 ){
    /* Starting points for the warm-up adaptation, in the units each kernel
     * uses (with Laplace preconditioning: posterior sds). */
    double d = (double)P;
    switch( sc.kernel ){
    case FLY_K_MALA:  sc.eps0 = 1.65 * pow(d, -1.0 / 6); break;   /* Roberts & Rosenthal */
    case FLY_K_SLICE: sc.eps0 = 2.0; break;                        /* ~2 sds */
    case FLY_K_HMC:   sc.eps0 = 1.0 / sqrt((double)sc.n_leap); break;
    default:          sc.eps0 = 2.38 / sqrt(d); break;              /* Gelman et al. */
    }
    if( sc.isotropic ) sc.eps0 *= 0.01;
  }

  if( sc.z == FLY_Z_GIBBS ){
    /* The bucket index with the sketches in its records, on as many
     * threads as there are processors (up to 4): two passes over the bound
     * pages and one over the data pages.  At 10^8 rows about 20 s. */
    double ti = fly_now();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > 4 ? 4 : (int)ncpu;
    if( (rc = fly_index_build(sc.db_path, ds, bs, &m, sc.sketch ? bd->chol_key : NULL, nt,
                              &bk, &sk, &err)) ) goto done;
    if( !sc.quiet )     /* tens of seconds at 10^8 rows: say what they were */
      fprintf(stderr, "gibbs: thinning index%s of %lld rows built in %.1f s\n",
              sc.sketch ? " and row sketches" : "", (long long)sh.n_rows, fly_now() - ti);
  }
  if( sc.z == FLY_Z_REGULAR && (rc = load_all(db, ds, &sh, &Xall, &err)) ) goto done;

  memset(&cc, 0, sizeof cc);
  cc.db_path = sc.db_path;
  cc.dataset_id = ds;
  cc.m = &m;
  cc.bounds = bd;
  cc.buckets = sc.z == FLY_Z_GIBBS ? &bk : NULL;
  cc.sketch = sc.sketch ? &sk : NULL;
  cc.Xall = Xall;
  cc.N = sh.n_rows;
  cc.W = (size_t)sh.width;
  cc.z = sc.z;
  cc.z_param = sc.z_param;
  cc.scan_frac = sc.scan_frac;
  cc.isotropic = sc.isotropic;
  cc.kernel = sc.kernel;
  cc.eps0 = sc.eps0;
  cc.n_warmup = sc.warmup;
  cc.n_leap = (int)sc.n_leap;
  cc.theta_steps = sc.theta_steps;
  cc.init_map = sc.init_map;
  cc.cache_bytes = (size_t)sc.cache_mb << 20;

  jobs = fly_alloc_array((size_t)sc.chains, sizeof *jobs);
  th = fly_alloc_array((size_t)sc.chains, sizeof *th);
  if( !jobs || !th ){ rc = fly_fail(&err, FLY_NOMEM, "chains"); goto done; }
  if( resume_id > 0 ){
    if( (rc = load_checkpoints(db, run_id, jobs, (int)sc.chains, &err)) ) goto done;
  }else if( (rc = create_run(db, ds, bs, &sc, P, a, &run_id, &err)) ) goto done;

  signal(SIGINT, on_sigint);
  signal(SIGTERM, on_sigint);
  for(int c = 0; c < sc.chains; c++){
    jobs[c].sc = &sc;
    jobs[c].cc = &cc;
    jobs[c].run_id = run_id;
    jobs[c].id = c;
    atomic_store(&jobs[c].done, jobs[c].start);
    if( pthread_create(&th[c], NULL, run_chain, &jobs[c]) != 0 ){
      rc = fly_fail(&err, FLY_NOMEM, "starting chain %d", c + 1);
      atomic_store(&g_stop, 1);
      break;
    }
    nstarted++;
  }
  if( !sc.quiet ) fprintf(stderr, "run %lld: %lld chains x (%lld warm-up + %lld), z %s, "
                          "seed %llu\n", (long long)run_id, (long long)sc.chains,
                          (long long)sc.warmup, (long long)sc.iters, fly_zmode_name(sc.z),
                          (unsigned long long)sc.seed);
  {
    fly_progress pg;
    int64_t total = (sc.warmup + sc.iters) * sc.chains, start = 0;
    fly_progress_start(&pg);
    for(int c = 0; c < nstarted; c++) start += jobs[c].start;
    for(;;){
      int64_t d = 0, acc = 0, br = 0;
      for(int c = 0; c < nstarted; c++){
        d += atomic_load(&jobs[c].done);
        acc += atomic_load(&jobs[c].acc);
        br += atomic_load(&jobs[c].bright);
      }
      if( d >= total || atomic_load(&g_stop) ) break;
      int alive = 0;
      for(int c = 0; c < nstarted; c++)
        if( atomic_load(&jobs[c].done) < sc.warmup + sc.iters && jobs[c].rc == FLY_OK ) alive = 1;
      if( fly_progress_due(&pg) ){
        double t = fly_now() - pg.t0, rate = t > 0 ? (double)(d - start) / t : 0;
        fly_progress_draw(&pg, "sample: %lld/%lld iterations, %.0f it/s, bright %.2f%%, "
                          "accept %.2f, ETA %.0fs", (long long)d, (long long)total, rate,
                          100.0 * (double)br / (double)nstarted / (double)sh.n_rows,
                          d > start ? (double)acc / (double)(d - start) /
                                      (double)sc.theta_steps : 0.0,
                          rate > 0 ? (double)(total - d) / rate : 0.0);
      }
      if( !alive ) break;
      struct timespec ts = { 0, 50 * 1000 * 1000 };
      nanosleep(&ts, NULL);
    }
    fly_progress_end(&pg);
  }
  for(int c = 0; c < nstarted; c++) pthread_join(th[c], NULL);
  for(int c = 0; c < nstarted && rc == FLY_OK; c++)
    if( jobs[c].rc ){ rc = jobs[c].rc; err = jobs[c].err; }
  {
    int64_t viol = 0;
    for(int c = 0; c < nstarted; c++) viol += jobs[c].n_viol;
    if( viol && rc == FLY_OK )
      rc = fly_fail(&err, FLY_NUMERIC, "the thinning bound was violated %lld times: "
                    "the draws are not exact (a bug; please report)", (long long)viol);
  }
  double wall = fly_now() - t0, loop = 0;
  for(int c = 0; c < nstarted; c++) if( jobs[c].t_loop > loop ) loop = jobs[c].t_loop;
  if( rc == FLY_OK && sc.profile ) rc = report_profile(db, run_id, jobs, nstarted, &err);
  if( rc == FLY_OK && atomic_load(&g_stop) ){
    finish_run(db, run_id, "running", "interrupted; continue with --resume", wall, loop, &err);
    fprintf(stderr, "flydb: interrupted; every chain stopped at a checkpoint. Continue "
            "with: flydb sample --db %s --resume %lld\n", sc.db_path, (long long)run_id);
    rc = FLY_MISUSE;
    goto out;
  }
  if( rc == FLY_OK ){
    rc = finish_run(db, run_id, "done", NULL, wall, loop, &err);
    if( rc == FLY_OK && !sc.quiet ){
      double tf = 0;
      int64_t n_it = 0;
      for(int c = 0; c < nstarted; c++){
        tf += jobs[c].t_full;
        n_it += atomic_load(&jobs[c].done) - jobs[c].start;
      }
      fprintf(stderr, "run %lld done in %.2f s; iterations %.2f s (%.3g ms per iteration "
              "per chain%s)\n", (long long)run_id, wall, loop,
              n_it > 0 ? 1e3 * loop * (double)nstarted / (double)n_it : 0.0,
              sc.profile ? "" : "; --profile shows where the time goes");
      if( sc.full_every > 0 )
        fprintf(stderr, "full-data log posterior every %lld iterations: %.2f s of chain time "
                "(%.1f%% of the iteration loops)\n", (long long)sc.full_every, tf,
                loop > 0 ? 100.0 * tf / (loop * (double)nstarted) : 0.0);
      rc = fly_summary_print(db, run_id, FLY_FMT_TABLE, &err);
    }
  }else if( run_id > 0 ){
    fly_err e2 = {0};
    finish_run(db, run_id, "failed", err.msg, wall, loop, &e2);
  }
done:
  if( rc ) fprintf(stderr, "flydb: %s\n", err.msg[0] ? err.msg : fly_rc_str(rc));
  if( rc == FLY_NOMEM )   /* the two knobs that decide most of the memory */
    fprintf(stderr, "flydb sample: every chain has its own decoded-page cache of "
            "--cache-mb %lld MiB beside the shared thinning index; a smaller "
            "--cache-mb or fewer --chains needs less\n", (long long)sc.cache_mb);
out:
  if( jobs ) for(int c = 0; c < sc.chains; c++) fly_free(jobs[c].ckpt);
  fly_free(jobs);
  fly_free(th);
  fly_free(Xall);
  fly_buckets_free(&bk);
  fly_sketch_free(&sk);
  fly_bounds_free(bd);
  fly_db_close(db);
  return rc ? 1 : 0;
}

int fly_cmd_sample(int argc, char **argv)
{
  fly_opt opts[NOPTS];
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  memcpy(opts, sample_opts_tmpl, sizeof opts);
  if( fly_args_parse(&a, argc, argv, 0, &err) ) return fly_usage_error(&a, "sample", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "sample", synopsis); return 0; }
  if( !fly_args_set(&a, "resume") ) return run_sample(&a, 0);

  /* --resume RUN_ID: only --db (and --quiet, --profile) may accompany it. */
  int64_t run_id;
  if( fly_args_int(&a, "resume", 0, 1, INT64_MAX, &run_id, &err) )
    return fly_usage_error(&a, "sample", synopsis, &err);
  for(fly_opt *o = opts; o->name; o++)
    if( o->set && strcmp(o->name, "resume") && strcmp(o->name, "db") && strcmp(o->name, "quiet") &&
        strcmp(o->name, "profile") ){
      fly_fail(&err, FLY_MISUSE, "--resume continues a run with its stored options; "
               "--%s cannot be changed", o->name);
      return fly_usage_error(&a, "sample", synopsis, &err);
    }
  const char *dbp = fly_args_str(&a, "db", "flydb.db");
  fly_db *db = NULL;
  char **av = NULL;
  int ac = 0;
  fly_rc rc = fly_db_open(dbp, 0, &db, &err);
  if( rc == FLY_OK ){
    sqlite3_stmt *st = NULL;
    rc = fly_db_prepare(db, "SELECT status FROM run WHERE id=?1", &st, &err);
    if( rc == FLY_OK ){
      sqlite3_bind_int64(st, 1, run_id);
      if( sqlite3_step(st) != SQLITE_ROW )
        rc = fly_fail(&err, FLY_RANGE, "%s has no run %lld", dbp, (long long)run_id);
      else if( strcmp((const char *)sqlite3_column_text(st, 0), "done") == 0 )
        rc = fly_fail(&err, FLY_MISUSE, "run %lld is already complete", (long long)run_id);
      sqlite3_finalize(st);
    }
  }
  if( rc == FLY_OK ) rc = load_config(db, run_id, &av, &ac, &err);
  fly_db_close(db);
  if( rc ){ free_argv(av, ac); return fly_report(rc, &err); }
  fly_opt opts2[NOPTS];
  fly_args a2 = { opts2, {0}, 0 };
  memcpy(opts2, sample_opts_tmpl, sizeof opts2);
  if( fly_args_parse(&a2, ac, av, 0, &err) == FLY_OK ){
    fly_opt *o = fly_args_get(&a2, "db");
    o->set = 1;
    o->value = dbp;
    if( fly_args_set(&a, "quiet") ) fly_args_get(&a2, "quiet")->set = 1;
    if( fly_args_set(&a, "profile") ) fly_args_get(&a2, "profile")->set = 1;
    int r = run_sample(&a2, run_id);
    free_argv(av, ac);
    return r;
  }
  free_argv(av, ac);
  return fly_report(FLY_CORRUPT, &err);
}
