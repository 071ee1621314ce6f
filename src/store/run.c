/*
 * run.c -- the run tables (see run.h): a run's record and typed setting,
 * run_config, parameter names, status, checkpoints and profile.
 *
 * Invariant kept here: a run row exists together with its run_setting
 * row, its run_config lines and its param names (one transaction).
 */
#include "store/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * "k:name_j". */
static fly_rc insert_params(fly_db *db, int64_t run_id, const char *const *names,
                            size_t K, size_t D, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  char buf[512];
  fly_rc rc = fly_db_prepare(db, "INSERT INTO param(run_id, idx, name) VALUES (?1,?2,?3)",
                             &st, err);
  for(size_t k = 0; k < K && rc == FLY_OK; k++)
    for(size_t j = 0; j < D && rc == FLY_OK; j++){
      const char *nm = names[j] ? names[j] : "?";
      if( K > 1 ){
        snprintf(buf, sizeof buf, "%zu:%s", k, nm);
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
                      const char *const *feature_names, const fly_run_kv *kv, size_t n_kv, const char *version,
                      int64_t *run_id, fly_err *err)
{
  int64_t id = 0;
  size_t K = n_classes > 1 ? n_classes : 1;
  fly_rc rc = fly_db_begin(db, err);
  if( rc ) return rc;
  if( (rc = insert_run(db, r, version, &id, err)) ) goto done;
  if( (rc = insert_setting(db, id, r, err)) ) goto done;
  if( (rc = insert_config(db, id, kv, n_kv, err)) ) goto done;
  if( (rc = insert_params(db, id, feature_names, K, (size_t)r->n_params / K, err)) ) goto done;
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

fly_rc fly_run_latest(fly_db *db, int64_t *run_id, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT coalesce(max(id), 0) FROM run", &st, err);
  if( rc ) return rc;
  if( sqlite3_step(st) == SQLITE_ROW ) *run_id = sqlite3_column_int64(st, 0);
  else rc = fly_db_fail(db, err, "finding the latest run");
  sqlite3_finalize(st);
  return rc;
}

