/*
 * run.c -- the run tables (see run.h): a run's record and typed setting,
 * run_config, parameter names, status, checkpoints and profile; their
 * listing and their integrity check.
 *
 * Invariant kept here: a run row exists together with its run_setting
 * row, its run_config lines and its param names (one transaction).
 *
 * The check reads each run's row, run_setting row and run_config lines
 * once (memory O(1) per run); the trace's rows are store/trace.c's to
 * check, one pass over them per run.
 */
#include "store/run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/trace.h"
#include "util/mem.h"

/* ---- small binding helpers ------------------------------------------- */

static void bind_real_or_null(sqlite3_stmt *st, int i, double v, int null_if_zero)
{
  if( null_if_zero && v == 0 ) sqlite3_bind_null(st, i);
  else sqlite3_bind_double(st, i, v);
}

static int copy_name(char dst[FLY_RUN_NAME], const unsigned char *src)
{
  if( !src || strlen((const char *)src) >= FLY_RUN_NAME ) return -1;
  strcpy(dst, (const char *)src);
  return 0;
}

/* ---- creating a run --------------------------------------------------- */

static fly_rc insert_run(fly_db *db, const fly_run_rec *r, const char *version,
                         int64_t *run_id, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "INSERT INTO run(dataset_id, bound_set_id, model, sampler, "
      "z_mode, n_chains, n_warmup, n_iters, thin, seed, n_params, status, version) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,'running',?12)", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, r->dataset_id);
  sqlite3_bind_int64(st, 2, r->bound_set_id);
  sqlite3_bind_text(st, 3, r->model, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, r->sampler, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 5, r->z_mode, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, r->chains);
  sqlite3_bind_int64(st, 7, r->warmup);
  sqlite3_bind_int64(st, 8, r->iters);
  sqlite3_bind_int64(st, 9, r->thin);
  sqlite3_bind_int64(st, 10, (int64_t)r->seed);
  sqlite3_bind_int64(st, 11, r->n_params);
  sqlite3_bind_text(st, 12, version, -1, SQLITE_STATIC);
  if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "creating the run");
  else *run_id = sqlite3_last_insert_rowid(fly_db_sqlite(db));
  sqlite3_finalize(st);
  return rc;
}

static fly_rc insert_setting(fly_db *db, int64_t run_id, const fly_run_rec *r,
                             fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "INSERT INTO run_setting(run_id, prior, prior_scale, nu, "
      "scale, z_param, bounds, fixed_xi, theta_steps, leapfrog, proposal, step, init, "
      "cache_mb, scan_frac, sketch, checkpoint_every, full_logpost_every) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)", &st, err);
  if( rc ) return rc;
  int robust = strcmp(r->model, "robust") == 0;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_text(st, 2, r->prior, -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 3, r->prior_scale);
  if( robust ){
    sqlite3_bind_double(st, 4, r->nu);
    sqlite3_bind_double(st, 5, r->scale);
  }
  if( !strcmp(r->z_mode, "implicit") || !strcmp(r->z_mode, "explicit") )
    sqlite3_bind_double(st, 6, r->z_param);
  sqlite3_bind_text(st, 7, r->bounds_fixed ? "fixed" : "map", -1, SQLITE_STATIC);
  if( r->bounds_fixed ) sqlite3_bind_double(st, 8, r->fixed_xi);
  sqlite3_bind_int64(st, 9, r->theta_steps);
  sqlite3_bind_int64(st, 10, r->leapfrog);
  sqlite3_bind_text(st, 11, r->isotropic ? "isotropic" : "laplace", -1, SQLITE_STATIC);
  bind_real_or_null(st, 12, r->step, 1);
  sqlite3_bind_text(st, 13, r->init_map ? "map" : "laplace", -1, SQLITE_STATIC);
  if( r->cache_mb > 0 ) sqlite3_bind_int64(st, 14, r->cache_mb);
  sqlite3_bind_double(st, 15, r->scan_frac);
  sqlite3_bind_int(st, 16, r->sketch != 0);
  sqlite3_bind_int64(st, 17, r->checkpoint_every);
  sqlite3_bind_int64(st, 18, r->full_logpost_every);
  if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "storing the run's setting");
  sqlite3_finalize(st);
  return rc;
}

static fly_rc insert_config(fly_db *db, int64_t run_id, const fly_run_kv *kv, size_t n,
                            fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "INSERT INTO run_config(run_id, key, value, is_default) "
                             "VALUES (?1,?2,?3,?4)", &st, err);
  for(size_t i = 0; i < n && rc == FLY_OK; i++){
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, kv[i].key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, kv[i].value, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, kv[i].is_default != 0);
    if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "storing the run configuration");
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

/* The names of the parameters: for K > 1 classes parameter k*D + j is
 * "k:name_j", or "label_k:name_j" with class labels. */
static fly_rc insert_params(fly_db *db, int64_t run_id, const char *const *classes,
                            const char *const *names, size_t K, size_t D, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  char buf[512];
  fly_rc rc = fly_db_prepare(db, "INSERT INTO param(run_id, idx, name) VALUES (?1,?2,?3)",
                             &st, err);
  for(size_t k = 0; k < K && rc == FLY_OK; k++)
    for(size_t j = 0; j < D && rc == FLY_OK; j++){
      const char *nm = names[j] ? names[j] : "?";
      if( K > 1 ){
        if( classes && classes[k] ) snprintf(buf, sizeof buf, "%s:%s", classes[k], nm);
        else snprintf(buf, sizeof buf, "%zu:%s", k, nm);
        nm = buf;
      }
      sqlite3_bind_int64(st, 1, run_id);
      sqlite3_bind_int64(st, 2, (int64_t)(k * D + j));
      sqlite3_bind_text(st, 3, nm, -1, SQLITE_TRANSIENT);
      if( sqlite3_step(st) != SQLITE_DONE ) rc = fly_db_fail(db, err, "naming parameters");
      sqlite3_reset(st);
    }
  sqlite3_finalize(st);
  return rc;
}

fly_rc fly_run_create(fly_db *db, const fly_run_rec *r, size_t n_classes,
                      const char *const *class_names, const char *const *feature_names,
                      const fly_run_kv *kv, size_t n_kv, const char *version,
                      int64_t *run_id, fly_err *err)
{
  int64_t id = 0;
  size_t K = n_classes > 1 ? n_classes : 1;
  fly_rc rc = fly_db_begin(db, err);
  if( rc ) return rc;
  if( (rc = insert_run(db, r, version, &id, err)) ) goto done;
  if( (rc = insert_setting(db, id, r, err)) ) goto done;
  if( (rc = insert_config(db, id, kv, n_kv, err)) ) goto done;
  if( (rc = insert_params(db, id, class_names, feature_names, K, (size_t)r->n_params / K,
                          err)) ) goto done;
  rc = fly_db_commit(db, err);
done:
  if( rc ) fly_db_rollback(db);
  else *run_id = id;
  return rc;
}

/* ---- loading a run ---------------------------------------------------- */

fly_rc fly_run_load(fly_db *db, int64_t run_id, fly_run_rec *r,
                    char status[FLY_RUN_NAME], fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT r.dataset_id, r.bound_set_id, r.model, r.sampler, "
      "r.z_mode, r.n_chains, r.n_warmup, r.n_iters, r.thin, r.seed, r.n_params, r.status, "
      "s.run_id, s.prior, s.prior_scale, s.nu, s.scale, s.z_param, s.bounds, s.fixed_xi, "
      "s.theta_steps, s.leapfrog, s.proposal, s.step, s.init, s.cache_mb, s.scan_frac, "
      "s.sketch, s.checkpoint_every, s.full_logpost_every "
      "FROM run r LEFT JOIN run_setting s ON s.run_id = r.id WHERE r.id = ?1", &st, err);
  if( rc ) return rc;
  memset(r, 0, sizeof *r);
  sqlite3_bind_int64(st, 1, run_id);
  int s = sqlite3_step(st);
  if( s != SQLITE_ROW ){
    rc = s == SQLITE_DONE ? fly_fail(err, FLY_RANGE, "%s has no run %lld", fly_db_path(db),
                                     (long long)run_id)
                          : fly_db_fail(db, err, "reading the run");
    goto done;
  }
  r->dataset_id = sqlite3_column_int64(st, 0);
  r->bound_set_id = sqlite3_column_int64(st, 1);
  r->chains = sqlite3_column_int64(st, 5);
  r->warmup = sqlite3_column_int64(st, 6);
  r->iters = sqlite3_column_int64(st, 7);
  r->thin = sqlite3_column_int64(st, 8);
  r->seed = (uint64_t)sqlite3_column_int64(st, 9);
  r->n_params = sqlite3_column_int64(st, 10);
  if( copy_name(r->model, sqlite3_column_text(st, 2)) ||
      copy_name(r->sampler, sqlite3_column_text(st, 3)) ||
      copy_name(r->z_mode, sqlite3_column_text(st, 4)) ||
      (status && copy_name(status, sqlite3_column_text(st, 11))) ){
    rc = fly_fail(err, FLY_CORRUPT, "run %lld: a name in its row is too long", (long long)run_id);
    goto done;
  }
  if( sqlite3_column_type(st, 12) == SQLITE_NULL ){
    rc = fly_fail(err, FLY_CORRUPT, "run %lld has no stored setting (table run_setting)",
                  (long long)run_id);
    goto done;
  }
  copy_name(r->prior, sqlite3_column_text(st, 13));
  r->prior_scale = sqlite3_column_double(st, 14);
  r->nu = sqlite3_column_double(st, 15);
  r->scale = sqlite3_column_double(st, 16);
  r->z_param = sqlite3_column_double(st, 17);
  const unsigned char *b = sqlite3_column_text(st, 18);
  r->bounds_fixed = b && !strcmp((const char *)b, "fixed");
  r->fixed_xi = sqlite3_column_double(st, 19);
  r->theta_steps = sqlite3_column_int64(st, 20);
  r->leapfrog = sqlite3_column_int64(st, 21);
  const unsigned char *p = sqlite3_column_text(st, 22);
  r->isotropic = p && !strcmp((const char *)p, "isotropic");
  r->step = sqlite3_column_double(st, 23);
  const unsigned char *in = sqlite3_column_text(st, 24);
  r->init_map = in && !strcmp((const char *)in, "map");
  r->cache_mb = sqlite3_column_int64(st, 25);
  r->scan_frac = sqlite3_column_double(st, 26);
  r->sketch = sqlite3_column_int(st, 27) != 0;
  r->checkpoint_every = sqlite3_column_int64(st, 28);
  r->full_logpost_every = sqlite3_column_int64(st, 29);
  /* the schema's CHECKs hold for rows SQLite wrote; a file edited by
   * other means is caught here rather than in the chains */
  if( r->chains < 1 || r->iters < 1 || r->warmup < 0 || r->thin < 1 ||
      r->theta_steps < 1 || r->leapfrog < 1 || r->checkpoint_every < 1 ||
      r->full_logpost_every < 0 || r->n_params < 1 || !(r->prior_scale > 0) ||
      !isfinite(r->scan_frac) || r->scan_frac < 0 )
    rc = fly_fail(err, FLY_CORRUPT, "run %lld: its stored setting is out of range",
                  (long long)run_id);
done:
  sqlite3_finalize(st);
  return rc;
}

/* ---- finishing -------------------------------------------------------- */

fly_rc fly_run_finish(fly_db *db, int64_t run_id, const char *status,
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

/* ---- listing ---------------------------------------------------------- */

fly_rc fly_runs_list(fly_db *db, fly_run_brief_fn *fn, void *ctx,
                     fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT run_id, dataset, model, sampler, z_mode, n_chains, "
      "n_warmup, n_iters, status, wall_seconds FROM runs ORDER BY run_id", &st, err);
  if( rc ) return rc;
  while( sqlite3_step(st) == SQLITE_ROW ){
    fly_run_brief r;
    r.id = sqlite3_column_int64(st, 0);
    r.dataset = (const char *)sqlite3_column_text(st, 1);
    r.model = (const char *)sqlite3_column_text(st, 2);
    r.sampler = (const char *)sqlite3_column_text(st, 3);
    r.z_mode = (const char *)sqlite3_column_text(st, 4);
    r.n_chains = sqlite3_column_int(st, 5);
    r.n_warmup = sqlite3_column_int(st, 6);
    r.n_iters = sqlite3_column_int(st, 7);
    r.status = (const char *)sqlite3_column_text(st, 8);
    r.has_wall = sqlite3_column_type(st, 9) != SQLITE_NULL;
    r.wall_seconds = sqlite3_column_double(st, 9);
    fn(ctx, &r);
  }
  sqlite3_finalize(st);
  return FLY_OK;
}

/* ---- checking --------------------------------------------------------- */

#define MAX_CHAINS   (1 << 20)     /* beyond this n_chains is corrupt */

/* Columns of the run query (check_run's row). */
enum { R_ID, R_DATASET, R_BOUND_SET, R_ZMODE, R_CHAINS, R_WARMUP, R_ITERS, R_THIN,
       R_PARAMS, R_STATUS, R_B_PARAMS, R_MODEL, R_SAMPLER, R_SEED, R_B_ID,
       R_B_DATASET, R_B_MODEL };

/* Columns of the run_setting query. */
enum { S_PRIOR, S_PRIOR_SCALE, S_NU, S_SCALE, S_Z_PARAM, S_BOUNDS, S_FIXED_XI,
       S_THETA_STEPS, S_LEAPFROG, S_PROPOSAL, S_STEP, S_INIT, S_CACHE_MB,
       S_SCAN_FRAC, S_SKETCH, S_CKPT_EVERY, S_FULL_EVERY };
static const char *const setting_col[] = {
  "prior", "prior_scale", "nu", "scale", "z_param", "bounds", "fixed_xi",
  "theta_steps", "leapfrog", "proposal", "step", "init", "cache_mb",
  "scan_frac", "sketch", "checkpoint_every", "full_logpost_every" };

typedef struct run_ck {
  fly_db                    *db;
  fly_checker               *ck;
  const fly_run_check_hooks *h;
  fly_run_checked            r;
  /* columns already reported out of their domain (bit R_x of the run
   * query, bit S_x of the setting query): not compared with run_config */
  unsigned                   bad_run, bad_set;
} run_ck;

static void trace_problem(void *u, const char *msg)
{
  fly_check_problem(((run_ck *)u)->ck, "%s", msg);
}

static void trace_ckpt(void *u, int64_t chain, const void *p, size_t len)
{
  run_ck *x = u;
  x->h->ckpt(x->h->u, x->ck, &x->r, chain, p, len);
}

/* A column as text for a message: "NULL" when NULL. */
static const char *shown(sqlite3_stmt *st, int i)
{
  const unsigned char *t = sqlite3_column_type(st, i) == SQLITE_NULL ? NULL
                         : sqlite3_column_text(st, i);
  return t ? (const char *)t : "NULL";
}

static int col_is(sqlite3_stmt *st, int i, const char *v)
{
  const unsigned char *t = sqlite3_column_text(st, i);
  return t && sqlite3_column_type(st, i) == SQLITE_TEXT && !strcmp((const char *)t, v);
}

/* Setting column i must be text a or b. */
static void setting_text(run_ck *x, sqlite3_stmt *st, int i, const char *a,
                         const char *b)
{
  if( !col_is(st, i, a) && !col_is(st, i, b) ){
    x->bad_set |= 1u << i;
    fly_check_problem(x->ck, "run_setting: %s is '%s', want '%s' or '%s'", setting_col[i],
                      shown(st, i), a, b);
  }
}

/* Setting column i must be a number (an integer if is_int) in [lo, hi],
 * lo excluded if lo_open; NULL allowed if null_ok.  want says so. */
static void setting_num(run_ck *x, sqlite3_stmt *st, int i, int is_int, int null_ok,
                        double lo, int lo_open, double hi, const char *want)
{
  int t = sqlite3_column_type(st, i);
  double v = sqlite3_column_double(st, i);
  if( t == SQLITE_NULL ){
    if( !null_ok ) fly_check_problem(x->ck, "run_setting: %s is NULL, want %s", setting_col[i],
                                     want);
    return;
  }
  if( (t != SQLITE_INTEGER && (is_int || t != SQLITE_FLOAT)) || !isfinite(v) || v < lo
      || (lo_open && v == lo) || v > hi ){
    x->bad_set |= 1u << i;
    fly_check_problem(x->ck, t == SQLITE_TEXT ? "run_setting: %s is '%s', want %s"
                                              : "run_setting: %s is %s, want %s",
                      setting_col[i], shown(st, i), want);
  }
}

/* Setting column i must be NULL (why: the reason). */
static void setting_null(run_ck *x, sqlite3_stmt *st, int i, const char *why)
{
  if( sqlite3_column_type(st, i) != SQLITE_NULL ){
    x->bad_set |= 1u << i;
    fly_check_problem(x->ck, "run_setting: %s is %s, want NULL: %s", setting_col[i],
                      shown(st, i), why);
  }
}

/* The domains of the run_setting row (the schema's CHECKs, and what
 * fly_run_load and the chains need), given the run's model and z mode. */
static void check_setting_domains(run_ck *x, sqlite3_stmt *st, const char *model,
                                  const char *zm)
{
  setting_text(x, st, S_PRIOR, "normal", "laplace");
  setting_num(x, st, S_PRIOR_SCALE, 0, 0, 0, 1, INFINITY, "a number > 0");
  if( model && !strcmp(model, "robust") ){
    setting_num(x, st, S_NU, 0, 0, 0, 1, INFINITY, "a number > 0 for a robust model");
    setting_num(x, st, S_SCALE, 0, 0, 0, 1, INFINITY, "a number > 0 for a robust model");
  }else{
    setting_null(x, st, S_NU, "the model is not robust");
    setting_null(x, st, S_SCALE, "the model is not robust");
  }
  if( !strcmp(zm, "implicit") || !strcmp(zm, "explicit") )
    setting_num(x, st, S_Z_PARAM, 0, 0, 0, 1, 1, "a number in (0, 1] for this z mode");
  else if( !strcmp(zm, "regular") || !strcmp(zm, "gibbs") )
    setting_null(x, st, S_Z_PARAM, "the z mode has no parameter");
  setting_text(x, st, S_BOUNDS, "map", "fixed");
  if( col_is(st, S_BOUNDS, "fixed") )
    setting_num(x, st, S_FIXED_XI, 0, 0, 0, 1, INFINITY, "a number > 0 for fixed bounds");
  else if( col_is(st, S_BOUNDS, "map") )
    setting_null(x, st, S_FIXED_XI, "the bounds are not fixed");
  setting_num(x, st, S_THETA_STEPS, 1, 0, 1, 0, INFINITY, "an integer >= 1");
  setting_num(x, st, S_LEAPFROG, 1, 0, 1, 0, INFINITY, "an integer >= 1");
  setting_text(x, st, S_PROPOSAL, "laplace", "isotropic");
  setting_num(x, st, S_STEP, 0, 1, 0, 1, INFINITY, "NULL or a number > 0");
  setting_text(x, st, S_INIT, "laplace", "map");
  setting_num(x, st, S_CACHE_MB, 1, 1, 1, 0, INFINITY, "NULL or an integer >= 1");
  setting_num(x, st, S_SCAN_FRAC, 0, 0, 0, 0, INFINITY, "a number >= 0");
  setting_num(x, st, S_SKETCH, 1, 0, 0, 0, 1, "0 or 1");
  setting_num(x, st, S_CKPT_EVERY, 1, 0, 1, 0, INFINITY, "an integer >= 1");
  setting_num(x, st, S_FULL_EVERY, 1, 0, 0, 0, INFINITY, "an integer >= 0");
}

/* How a run_config line is compared with the column that states the same. */
enum { K_TEXT, K_INT, K_REAL, K_ONOFF };

/* The run_config lines that repeat a column of run (in_run) or of
 * run_setting. */
static const struct cfg_col {
  const char *key;
  int         in_run, col, kind;
  const char *name;            /* the column as messages name it */
} cfg_cols[] = {
  { "model", 1, R_MODEL, K_TEXT, "run.model" },
  { "sampler", 1, R_SAMPLER, K_TEXT, "run.sampler" },
  { "chains", 1, R_CHAINS, K_INT, "run.n_chains" },
  { "warmup", 1, R_WARMUP, K_INT, "run.n_warmup" },
  { "iters", 1, R_ITERS, K_INT, "run.n_iters" },
  { "thin", 1, R_THIN, K_INT, "run.thin" },
  { "seed", 1, R_SEED, K_INT, "run.seed" },
  { "prior", 0, S_PRIOR, K_TEXT, "run_setting.prior" },
  { "prior-scale", 0, S_PRIOR_SCALE, K_REAL, "run_setting.prior_scale" },
  { "nu", 0, S_NU, K_REAL, "run_setting.nu" },
  { "scale", 0, S_SCALE, K_REAL, "run_setting.scale" },
  { "theta-steps", 0, S_THETA_STEPS, K_INT, "run_setting.theta_steps" },
  { "leapfrog", 0, S_LEAPFROG, K_INT, "run_setting.leapfrog" },
  { "proposal", 0, S_PROPOSAL, K_TEXT, "run_setting.proposal" },
  { "step", 0, S_STEP, K_REAL, "run_setting.step" },
  { "init", 0, S_INIT, K_TEXT, "run_setting.init" },
  { "cache-mb", 0, S_CACHE_MB, K_INT, "run_setting.cache_mb" },
  { "scan-frac", 0, S_SCAN_FRAC, K_REAL, "run_setting.scan_frac" },
  { "sketch", 0, S_SKETCH, K_ONOFF, "run_setting.sketch" },
  { "checkpoint-every", 0, S_CKPT_EVERY, K_INT, "run_setting.checkpoint_every" },
  { "full-logpost-every", 0, S_FULL_EVERY, K_INT, "run_setting.full_logpost_every" },
};

/* Whether text v states the value of column i of st (kind k).  A column
 * that is NULL states nothing to compare (its domain check speaks). */
static int cfg_agrees(sqlite3_stmt *st, int i, int k, const char *v)
{
  int t = sqlite3_column_type(st, i);
  char *end;
  if( t == SQLITE_NULL ) return 1;
  errno = 0;
  switch( k ){
  case K_TEXT:  return col_is(st, i, v);
  case K_ONOFF: return (!strcmp(v, "on") || !strcmp(v, "off")) && t == SQLITE_INTEGER
                       && sqlite3_column_int64(st, i) == !strcmp(v, "on");
  case K_INT: {
    long long x = strtoll(v, &end, 10);
    return *v && !*end && !errno && t == SQLITE_INTEGER && sqlite3_column_int64(st, i) == x;
  }
  default: {
    double x = strtod(v, &end);
    return *v && !*end && (t == SQLITE_INTEGER || t == SQLITE_FLOAT)
           && fly_check_close(x, sqlite3_column_double(st, i), 0);
  }
  }
}

/* The run_config lines z, regular and bounds, which combine columns. */
static void check_cfg_special(run_ck *x, sqlite3_stmt *run, sqlite3_stmt *set,
                              const char *key, const char *v)
{
  fly_checker *ck = x->ck;
  const char *zm = shown(run, R_ZMODE);
  const char *eq = strchr(v, '=');
  int zm_ok = !(x->bad_run & 1u << R_ZMODE);
  if( !strcmp(key, "z") && zm_ok ){
    size_t n = eq ? (size_t)(eq - v) : strlen(v);
    if( strlen(zm) != n || strncmp(v, zm, n) )
      fly_check_problem(ck, "run_config z is '%s', but run.z_mode is '%s'", v, zm);
    else if( eq && set && !(x->bad_set & 1u << S_Z_PARAM)
             && !cfg_agrees(set, S_Z_PARAM, K_REAL, eq + 1) )
      fly_check_problem(ck, "run_config z is '%s', but run_setting.z_param is %s", v,
                        shown(set, S_Z_PARAM));
  }else if( !strcmp(key, "regular") && zm_ok ){
    if( (strcmp(v, "0") && strcmp(v, "1")) || (!strcmp(v, "1") != !strcmp(zm, "regular")) )
      fly_check_problem(ck, "run_config regular is '%s', but run.z_mode is '%s'", v, zm);
  }else if( !strcmp(key, "bounds") && set && !(x->bad_set & 1u << S_BOUNDS) ){
    const char *kind = !strcmp(v, "map") ? "map"
                     : (!strcmp(v, "fixed") || !strncmp(v, "fixed=", 6)) ? "fixed" : NULL;
    if( !kind || !col_is(set, S_BOUNDS, kind) )
      fly_check_problem(ck, "run_config bounds is '%s', but run_setting.bounds is '%s'", v,
                        shown(set, S_BOUNDS));
    else if( eq && !(x->bad_set & 1u << S_FIXED_XI)
             && !cfg_agrees(set, S_FIXED_XI, K_REAL, eq + 1) )
      fly_check_problem(ck, "run_config bounds is '%s', but run_setting.fixed_xi is %s", v,
                        shown(set, S_FIXED_XI));
  }
}

/* Each run_config line against the run row and the setting row (set, NULL
 * when the run has none). */
static void check_config(run_ck *x, sqlite3_stmt *run, sqlite3_stmt *set)
{
  fly_checker *ck = x->ck;
  sqlite3_stmt *st = fly_check_prepare(x->db, ck, "SELECT key, value FROM run_config"
                                       " WHERE run_id = ?1 ORDER BY key");
  int s;
  if( !st ) return;
  sqlite3_bind_int64(st, 1, x->r.id);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    const char *key = (const char *)sqlite3_column_text(st, 0);
    const char *v = (const char *)sqlite3_column_text(st, 1);
    if( !key || !v ) continue;
    /* a step the user left to the kernel is stored as it was resolved */
    if( !strcmp(key, "step") && !(strtod(v, NULL) > 0) ) continue;
    for(size_t i = 0; i < sizeof cfg_cols / sizeof cfg_cols[0]; i++){
      const struct cfg_col *c = &cfg_cols[i];
      sqlite3_stmt *src = c->in_run ? run : set;
      unsigned bad = c->in_run ? x->bad_run : x->bad_set;
      if( strcmp(key, c->key) || !src || (bad & 1u << c->col) ) continue;
      if( !cfg_agrees(src, c->col, c->kind, v) )
        fly_check_problem(ck, c->kind == K_TEXT ? "run_config %s is '%s', but %s is '%s'"
                                                : "run_config %s is '%s', but %s is %s",
                          key, v, c->name, shown(src, c->col));
    }
    check_cfg_special(x, run, set, key, v);
  }
  if( s != SQLITE_DONE ) fly_check_step_failed(x->db, ck, "reading table run_config");
  sqlite3_finalize(st);
}

/* The run row's status, names and references, the run_setting row and
 * the run_config lines. */
static void check_record(run_ck *x, sqlite3_stmt *row)
{
  fly_checker *ck = x->ck;
  const char *status = shown(row, R_STATUS), *model = shown(row, R_MODEL);
  const char *sampler = shown(row, R_SAMPLER);
  sqlite3_stmt *st = NULL;
  int s;

  if( strcmp(status, "running") && strcmp(status, "done") && strcmp(status, "failed") ){
    x->bad_run |= 1u << R_STATUS;
    fly_check_problem(ck, "unknown status '%s'", status);
  }
  if( x->h && x->h->model_known && !x->h->model_known(x->h->u, model) ){
    x->bad_run |= 1u << R_MODEL;
    fly_check_problem(ck, "unknown model '%s'", model);
  }
  if( x->h && x->h->sampler_known && !x->h->sampler_known(x->h->u, sampler) ){
    x->bad_run |= 1u << R_SAMPLER;
    fly_check_problem(ck, "unknown sampler '%s'", sampler);
  }
  if( (st = fly_check_prepare(x->db, ck, "SELECT 1 FROM dataset WHERE id = ?1")) ){
    sqlite3_bind_int64(st, 1, sqlite3_column_int64(row, R_DATASET));
    if( (s = sqlite3_step(st)) == SQLITE_DONE ){
      x->bad_run |= 1u << R_DATASET;
      fly_check_problem(ck, "its data set %s does not exist", shown(row, R_DATASET));
    }else if( s != SQLITE_ROW ) fly_check_step_failed(x->db, ck, "reading table dataset");
    sqlite3_finalize(st);
  }
  if( sqlite3_column_type(row, R_BOUND_SET) != SQLITE_NULL ){
    if( sqlite3_column_type(row, R_B_ID) == SQLITE_NULL )
      fly_check_problem(ck, "its bound set %s does not exist", shown(row, R_BOUND_SET));
    else if( !(x->bad_run & 1u << R_DATASET)
             && sqlite3_column_int64(row, R_B_DATASET) != sqlite3_column_int64(row, R_DATASET) )
      fly_check_problem(ck, "its bound set %s is of data set %s, the run's is %s",
                        shown(row, R_BOUND_SET), shown(row, R_B_DATASET), shown(row, R_DATASET));
    else if( !(x->bad_run & 1u << R_MODEL) && strcmp(shown(row, R_B_MODEL), model) )
      fly_check_problem(ck, "its bound set %s is for model '%s', the run's is '%s'",
                        shown(row, R_BOUND_SET), shown(row, R_B_MODEL), model);
  }

  st = fly_check_prepare(x->db, ck, "SELECT prior, prior_scale, nu, scale, z_param, bounds,"
      " fixed_xi, theta_steps, leapfrog, proposal, step, init, cache_mb, scan_frac,"
      " sketch, checkpoint_every, full_logpost_every FROM run_setting WHERE run_id = ?1");
  if( !st ) return;
  sqlite3_bind_int64(st, 1, x->r.id);
  s = sqlite3_step(st);
  if( s == SQLITE_ROW ) check_setting_domains(x, st, model, x->r.z_mode);
  else if( s == SQLITE_DONE )
    fly_check_problem(ck, "no run_setting row: the run cannot be resumed");
  else fly_check_step_failed(x->db, ck, "reading table run_setting");
  check_config(x, row, s == SQLITE_ROW ? st : NULL);
  sqlite3_finalize(st);
}

static void check_run(run_ck *x, sqlite3_stmt *row, fly_dataset_checked *dss, size_t n_ds)
{
  fly_checker *ck = x->ck;
  fly_trace_shape sh;
  const char *status = (const char *)sqlite3_column_text(row, R_STATUS);
  const fly_dataset_checked *ds;

  memset(&sh, 0, sizeof sh);
  memset(&x->r, 0, sizeof x->r);
  x->bad_run = x->bad_set = 0;
  sh.run_id = x->r.id = sqlite3_column_int64(row, R_ID);
  sh.n_chains = sqlite3_column_int64(row, R_CHAINS);
  sh.n_warmup = sqlite3_column_int64(row, R_WARMUP);
  sh.n_iters = sqlite3_column_int64(row, R_ITERS);
  sh.thin = sqlite3_column_int64(row, R_THIN);
  sh.n_params = x->r.n_params = sqlite3_column_int64(row, R_PARAMS);
  sh.done = status && strcmp(status, "done") == 0;
  ds = fly_dataset_checked_find(dss, n_ds, sqlite3_column_int64(row, R_DATASET));
  x->r.n_rows = ds ? ds->n_rows : -1;
  x->r.z_mode = shown(row, R_ZMODE);
  fly_check_scope(ck, "run %lld", (long long)x->r.id);

  if( sh.n_chains < 1 || sh.n_chains > MAX_CHAINS || sh.thin < 1
      || sh.thin > INT64_MAX / 4
      || sh.n_warmup < 0 || sh.n_iters < 0 || sh.n_params < 1 || sh.n_params > UINT32_MAX
      || sh.n_warmup > INT64_MAX / 2 || sh.n_iters > INT64_MAX / 2 ){
    fly_check_problem(ck, "bad shape (n_chains %lld, n_warmup %lld, n_iters %lld, thin "
            "%lld, n_params %lld): draws not checked", (long long)sh.n_chains,
            (long long)sh.n_warmup, (long long)sh.n_iters, (long long)sh.thin,
            (long long)sh.n_params);
    x->bad_run |= 1u << R_CHAINS | 1u << R_WARMUP | 1u << R_ITERS | 1u << R_THIN
                | 1u << R_PARAMS;
  }else{
    const char *zm = x->r.z_mode;
    if( strcmp(zm, "regular") && strcmp(zm, "explicit") && strcmp(zm, "implicit")
        && strcmp(zm, "gibbs") ){
      x->bad_run |= 1u << R_ZMODE;
      fly_check_problem(ck, "unknown z_mode '%s'", zm);
    }
    if( sqlite3_column_type(row, R_B_PARAMS) != SQLITE_NULL
        && sqlite3_column_int64(row, R_B_PARAMS) != sh.n_params )
      fly_check_problem(ck, "n_params is %lld, its bound set %lld has %lld",
              (long long)sh.n_params, (long long)sqlite3_column_int64(row, R_BOUND_SET),
              (long long)sqlite3_column_int64(row, R_B_PARAMS));
    /* a failed allocation is reported as a problem too */
    fly_trace_check(x->db, &sh, trace_problem, x->h && x->h->ckpt ? trace_ckpt : NULL, x,
                    NULL);
  }
  check_record(x, row);
  fly_check_scope(ck, "%s", "");
}

fly_rc fly_run_check(fly_db *db, fly_dataset_checked *ds, size_t n_ds,
                     const fly_run_check_hooks *h, fly_checker *ck,
                     int64_t *n_runs, fly_err *err)
{
  run_ck x;
  sqlite3_stmt *st;
  int s;
  *n_runs = 0;
  if( !ck ) return fly_fail(err, FLY_MISUSE, "fly_run_check: no checker");
  memset(&x, 0, sizeof x);
  x.db = db;
  x.ck = ck;
  x.h = h;
  fly_check_scope(ck, "table run");
  st = fly_check_prepare(db, ck,
      "SELECT r.id, r.dataset_id, r.bound_set_id, r.z_mode,"
      " r.n_chains, r.n_warmup, r.n_iters, r.thin, r.n_params, r.status,"
      " b.n_params, r.model, r.sampler, r.seed, b.id, b.dataset_id, b.model"
      " FROM run r LEFT JOIN bound_set b ON b.id = r.bound_set_id ORDER BY r.id");
  if( !st ){ fly_check_scope(ck, "%s", ""); return FLY_OK; }
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    check_run(&x, st, ds, n_ds);
    ++*n_runs;
  }
  if( s != SQLITE_DONE ){
    fly_check_scope(ck, "table run");
    fly_check_step_failed(db, ck, "reading table run");
  }
  fly_check_scope(ck, "%s", "");
  sqlite3_finalize(st);
  return FLY_OK;
}
