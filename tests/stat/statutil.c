/*
 * statutil.c -- see statutil.h.
 */
#include "statutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stats/stats.h"


int st_accurate(void)
{
  const char *s = getenv("FLYDB_TEST_LEVEL");
  return s && strcmp(s, "accurate") == 0;
}

int st_tmpdir(const char *name, char *dir, size_t n)
{
  const char *t = getenv("TMPDIR");
  if( !t || !*t ) t = "/tmp";
  if( snprintf(dir, n, "%s/flydb_stat_%s_XXXXXX", t, name) >= (int)n ) return 0;
  return mkdtemp(dir) != NULL;
}

void st_rmtree(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  char p[4096];
  if( !d ) return;
  while( (e = readdir(d)) ){
    if( !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

double st_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int st_ingest(const char *csv, const char *dbp)
{
  fly_ingest_opts o;
  fly_err err = {0};
  fly_ingest_opts_default(&o);
  if( fly_ingest(dbp, NULL, csv, &o, NULL, &err) == FLY_OK ) return 1;
  printf("# ingest %s: %s\n", csv, err.msg);
  return 0;
}

int64_t st_sample(const char *dbp, const st_mode *m, int64_t iters, int64_t warmup,
                  int chains, uint64_t seed, int64_t ckpt_every)
{
  fly_run_cfg c;
  fly_run_result res;
  fly_err err = {0};
  fly_run_cfg_default(&c);
  c.iters = m->iters > 0 ? m->iters : iters;
  c.warmup = m->iters > 0 ? m->iters / 4 : warmup;
  c.chains = chains;
  c.seed = seed;
  c.seed_set = 1;
  c.z = m->z;
  c.z_set = 1;
  c.z_param = m->z_param;
  c.bounds_fixed = m->fixed;
  c.kernel = m->kernel;
  c.theta_steps = m->theta_steps;
  if( ckpt_every > 0 ) c.checkpoint_every = ckpt_every;
  if( fly_run_sample(dbp, &c, NULL, &res, &err) == FLY_OK ) return res.run_id;
  printf("# %s: %s (%s)\n", m->name, err.msg, fly_rc_str(err.code));
  return -1;
}

sqlite3 *st_open(const char *path)
{
  sqlite3 *db = NULL;
  if( sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ){
    printf("# cannot open %s: %s\n", path, db ? sqlite3_errmsg(db) : "?");
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db, 10000);
  return db;
}

int64_t st_int64(sqlite3 *db, const char *sql, int64_t def)
{
  sqlite3_stmt *st = NULL;
  int64_t v = def;
  if( sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK
      && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL )
    v = sqlite3_column_int64(st, 0);
  else if( !st ) printf("# SQL error: %s (%s)\n", sqlite3_errmsg(db), sql);
  sqlite3_finalize(st);
  return v;
}

int st_draws(sqlite3 *db, int64_t run_id, int idx, double **x,
             size_t *n_chains, size_t *n_iter)
{
  sqlite3_stmt *st = NULL;
  int64_t nc = -1, nw = -1, ni = -1;
  size_t cap = 0, n = 0, *per = NULL;
  double *v = NULL;
  int ok = 0;
  *x = NULL;
  if( sqlite3_prepare_v2(db, "SELECT n_chains, n_warmup, n_iters FROM run WHERE id=?1",
                         -1, &st, NULL) != SQLITE_OK ) goto done;
  sqlite3_bind_int64(st, 1, run_id);
  if( sqlite3_step(st) == SQLITE_ROW ){
    nc = sqlite3_column_int64(st, 0);
    nw = sqlite3_column_int64(st, 1);
    ni = sqlite3_column_int64(st, 2);
  }
  sqlite3_finalize(st);
  st = NULL;
  if( nc <= 0 || ni <= 0 ) goto done;
  cap = (size_t)(nc * ni);
  v = calloc(cap, sizeof *v);
  per = calloc((size_t)nc, sizeof *per);
  if( !v || !per ) goto done;
  if( sqlite3_prepare_v2(db, "SELECT chain, value FROM draw WHERE run_id=?1 AND idx=?2"
                         " AND iter>?3 ORDER BY chain, iter", -1, &st, NULL) != SQLITE_OK )
    goto done;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, idx);
  sqlite3_bind_int64(st, 3, nw);
  while( sqlite3_step(st) == SQLITE_ROW ){
    int64_t c = sqlite3_column_int64(st, 0);
    if( c < 0 || c >= nc || per[c] >= (size_t)ni ) goto done;
    v[(size_t)c * (size_t)ni + per[c]++] = sqlite3_column_double(st, 1);
    n++;
  }
  ok = n == cap;
  for(int64_t c = 0; c < nc; c++) if( per[c] != (size_t)ni ) ok = 0;
done:
  if( !ok ) printf("# reading draws of run %lld, idx %d: %zu of %lld x %lld (%s)\n",
                   (long long)run_id, idx, n, (long long)nc, (long long)ni,
                   sqlite3_errmsg(db));
  sqlite3_finalize(st);
  free(per);
  if( ok ){
    *x = v;
    *n_chains = (size_t)nc;
    *n_iter = (size_t)ni;
  }else free(v);
  return ok;
}

int st_estimate(const double *x, size_t n_chains, size_t n_iter, st_est *e)
{
  size_t n = n_chains * n_iter;
  fly_stats_summary s;
  fly_err err = {0};
  double *c2 = NULL, m, m2 = 0, m4 = 0, ess2;
  int ok = 0;
  if( fly_stats_summarise(NULL, x, n_chains, n_iter, &s, &err) ) goto done;
  e->mean = s.mean;
  e->sd = s.sd;
  e->mcse_mean = s.mcse_mean;
  e->ess_bulk = s.ess_bulk;
  e->rhat = s.rhat;
  c2 = malloc(n * sizeof *c2);
  if( !c2 ) goto done;
  m = fly_stats_mean(x, n);
  for(size_t i = 0; i < n; i++){
    double d = x[i] - m;
    c2[i] = d * d;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m2 /= (double)n;
  m4 /= (double)n;
  if( fly_stats_ess_basic(NULL, c2, n_chains, n_iter, 1, &ess2, &err) ) goto done;
  e->mcse_sd = sqrt((m4 - m2 * m2) / ess2 / (4 * m2));
  ok = isfinite(e->mcse_mean) && isfinite(e->mcse_sd) && e->mcse_mean > 0 && e->mcse_sd > 0;
done:
  if( !ok ) printf("# estimating: %s\n", err.msg[0] ? err.msg : "non-finite MCSE");
  free(c2);
  return ok;
}
