/*
 * statutil.c -- see statutil.h.
 */
#include "statutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stats/stats.h"

extern char **environ;

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

static void log_tail(const char *log)
{
  FILE *f = fopen(log, "r");
  char line[512];
  long n = 0, skip;
  if( !f ) return;
  while( fgets(line, sizeof line, f) ) n++;
  rewind(f);
  skip = n > 20 ? n - 20 : 0;
  for(long i = 0; fgets(line, sizeof line, f); i++)
    if( i >= skip ){
      line[strcspn(line, "\r\n")] = 0;
      printf("#   | %s\n", line);
    }
  fclose(f);
}

int st_run(char *const argv[], const char *log)
{
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int status = 0, rc;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  fflush(stdout);
  rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if( rc != 0 ){
    printf("# cannot run %s: %s\n", argv[0], strerror(rc));
    return -1;
  }
  if( waitpid(pid, &status, 0) < 0 ) return -1;
  if( !WIFEXITED(status) || WEXITSTATUS(status) != 0 ){
    printf("# %s exited with status %d (signal %d); log %s:\n", argv[0],
           WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           WIFSIGNALED(status) ? WTERMSIG(status) : 0, log);
    log_tail(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return 0;
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
