/*
 * test_trace_views.c -- the SQL views over a trace return exactly the draws
 * written, for runs of P = 1, 64, 65 and 200 parameters (one chunk column,
 * a full row, one past it, several rows a chunk of iterations).
 *
 * Each run has C = 2 chains of WARM + ITERS iterations (thin 1 for odd P,
 * 2 for even P), written through fly_trace_add/submit/sync in commits of 7
 * kept iterations (so the writer rewrites its partial chunk) and compared,
 * row by row, with what was written: the view `draw` (chain, iter, idx,
 * value), `draws_named` (name and warm-up flag too), `iteration` (one row
 * per kept iteration), and the per-parameter aggregate `GROUP BY name`;
 * fly_trace_check then finds nothing.  At four moments:
 *   during   two open writers, each chain part-way (a second connection reads);
 *   after    both chains complete;
 *   resume   rows added but never committed are lost, the chain resumes
 *            from its checkpoint; and a chain cut back inside a chunk
 *            (fly_trace_truncate) and written on from there;
 *   kill -9  a child process writing both chains is killed with SIGKILL at
 *            random moments (FLYDB_TEST_SEED fixes them), the views must hold
 *            exactly the draws up to each chain's checkpoint, and resuming
 *            completes the run.
 * value(c, it, p) is exactly representable, so values compare with ==.
 */
#include "store/db.h"
#include "store/trace.h"

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "trace_fixture.h"
#include "util/mem.h"

#define C     2
#define WARM  40
#define ITERS 160
#define TOTAL (WARM + ITERS)
#define EVERY 7          /* kept iterations a commit */
#define MAXP  200

static char path[256];

static double value(int c, int64_t it, size_t p)
{
  return (c ? -1.0 : 1.0) * ((double)it + (double)p / 256.0) + 0.5 * c;
}

static fly_trace_row diag(int c, int64_t it)
{
  fly_trace_row row = { -(double)it, 10 * c + it, 20 + it, 30 + it, (double)(it % 2), 0.25,
                        NAN, 0, 0, 0, 0, 0, 0 };
  return row;
}

/* A new database with the run's rows: P parameters p000, p001, .. */
static int make_run(size_t P, int64_t thin)
{
  fly_err err = {0};
  fly_db *db = NULL;
  char q[512];
  int ok = 0;
  fx_unlink_db(path);
  if( fly_db_open(path, FLY_DB_CREATE, &db, &err) ){ TAP_DIAG("%s", err.msg); return 0; }
  snprintf(q, sizeof q, "INSERT INTO dataset(id, name, source, n_rows, width, n_features, "
           "has_intercept, target_name, page_rows, n_pages, prec, raw_bytes, stored_bytes) "
           "VALUES (1, 'v', 'v.csv', 10, %zu, %zu, 0, 'y', 10, 1, 8, 0, 0)", P + 1, P);
  if( fly_db_exec(db, q, &err) ) goto done;
  snprintf(q, sizeof q, "INSERT INTO run(id, dataset_id, model, sampler, z_mode, n_chains, "
           "n_warmup, n_iters, thin, seed, n_params, status, version) VALUES (1, 1, "
           "'logistic', 'mh', 'gibbs', %d, %d, %d, %lld, 1, %zu, 'running', 'test')", C, WARM,
           ITERS, (long long)thin, P);
  if( fly_db_exec(db, q, &err) ) goto done;
  snprintf(q, sizeof q, "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k "
           "WHERE i < %zu) INSERT INTO param SELECT 1, i, printf('p%%03d', i) FROM k", P - 1);
  if( fly_db_exec(db, q, &err) ) goto done;
  ok = 1;
done:
  if( !ok ) TAP_DIAG("%s", err.msg);
  fly_db_close(db);
  return ok;
}

/* Kept iterations from..to of chain c through writer t (NULL: open one and
 * close it at the end), a commit with the checkpoint every EVERY of them;
 * then `lost` more added and never committed.  usleep(pause) after each
 * commit.  0 on failure. */
static int write_chain(fly_trace **pt, size_t P, int64_t thin, int c, int64_t from,
                       int64_t to, int lost, unsigned pause)
{
  fly_err err = {0};
  fly_trace *t = pt ? *pt : NULL;
  double th[MAXP];
  int ok = 0;
  if( !t ){
    if( fly_trace_open(path, 1, c, P, EVERY + 8, &t, &err) ) goto done;
    if( pt ) *pt = t;
  }
  for(int64_t it = from; it <= to + lost * thin; it += thin){
    fly_trace_row row = diag(c, it);
    for(size_t p = 0; p < P; p++) th[p] = value(c, it, p);
    if( fly_trace_add(t, it, th, &row, &err) ) goto done;
    if( it <= to && (fly_trace_pending(t) == EVERY || it == to) ){
      if( fly_trace_submit(t, it, &it, sizeof it, &err) ) goto done;
      if( pause ) usleep(pause);
    }
  }
  if( fly_trace_sync(t, &err) ) goto done;
  ok = 1;
done:
  if( !ok ) TAP_DIAG("chain %d: %s", c, err.msg);
  if( !pt || !ok ){
    fly_trace_close(t);
    if( pt ) *pt = NULL;
  }
  return ok;
}

static void on_problem(void *u, const char *msg)
{
  int *n = u;
  if( (*n)++ < 3 ) TAP_DIAG("problem: %s", msg);
}

/* The views hold exactly chain c's kept iterations up to upto[c]. */
static void verify(size_t P, int64_t thin, const int64_t *upto, const char *when)
{
  fly_err err = {0};
  fly_db *db = NULL;
  sqlite3_stmt *st = NULL;
  int64_t n_want = 0, n_rows = 0, bad = 0;
  char name[16];
  if( fly_db_open(path, 0, &db, &err) ){ TAP_OK(0, "%s: open (%s)", when, err.msg); return; }
  for(int c = 0; c < C; c++) n_want += upto[c] / thin;

  /* draw, draws_named and draws_by_iter, row by row in (chain, iter, idx)
   * order */
  static const char *const view_name[3] = { "draw", "draws_named", "draws_by_iter" };
  for(int v = 0; v < 3; v++){
    int64_t c = 0, it = thin, n = 0;
    size_t p = 0;
    int s;
    bad = 0;
    char q[160];
    snprintf(q, sizeof q, v ? "SELECT chain, iter, name, value, warmup FROM %s WHERE "
                              "run_id = 1 ORDER BY chain, iter, name"
                            : "SELECT chain, iter, idx, value, 0 FROM %s WHERE run_id = 1 "
                              "ORDER BY chain, iter, idx", view_name[v]);
    fly_db_prepare(db, q, &st, &err);
    while( st && (s = sqlite3_step(st)) == SQLITE_ROW ){
      while( c < C && it > upto[c] ){ c++; it = thin; }
      snprintf(name, sizeof name, "p%03zu", p);
      if( c >= C || sqlite3_column_int64(st, 0) != c || sqlite3_column_int64(st, 1) != it ||
          (v ? strcmp((const char *)sqlite3_column_text(st, 2), name)
             : sqlite3_column_int64(st, 2) != (int64_t)p) ||
          sqlite3_column_type(st, 3) != SQLITE_FLOAT ||
          sqlite3_column_double(st, 3) != value((int)c, it, p) ||
          (v && sqlite3_column_int(st, 4) != (it <= WARM)) ){
        if( bad++ == 0 )
          TAP_DIAG("%s: %s row %lld is (%lld, %lld, %s, %.17g), want (%lld, %lld, %zu)", when,
                   view_name[v], (long long)n, sqlite3_column_int64(st, 0),
                   sqlite3_column_int64(st, 1), (const char *)sqlite3_column_text(st, 2),
                   sqlite3_column_double(st, 3), (long long)c, (long long)it, p);
        break;
      }
      n++;
      if( ++p == P ){ p = 0; it += thin; }
    }
    sqlite3_finalize(st);
    st = NULL;
    TAP_OK(!bad && n == n_want * (int64_t)P, "P %zu, %s: view %s holds the %lld draws written "
           "(%lld rows)", P, when, view_name[v], (long long)(n_want * (int64_t)P),
           (long long)n);
  }

  /* a join of two parameters on (chain, iter) through draws_by_iter pairs
   * every draw of the first with the last parameter's draw there */
  bad = 0;
  snprintf(name, sizeof name, "p%03zu", P - 1);
  if( fly_db_prepare(db, "SELECT count(*), sum(a.chain = b.chain AND a.iter = b.iter) FROM "
                     "draws_named a JOIN draws_by_iter b ON b.run_id = a.run_id AND "
                     "b.chain = a.chain AND b.iter = a.iter AND b.name = ?1 "
                     "WHERE a.run_id = 1 AND a.name = 'p000'", &st, &err) == FLY_OK ){
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if( sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) != n_want ||
        (n_want && sqlite3_column_int64(st, 1) != n_want) ) bad++;
  }
  sqlite3_finalize(st);
  st = NULL;
  TAP_OK(!bad, "P %zu, %s: draws_named joined to draws_by_iter on (chain, iter) pairs the "
         "%lld iterations", P, when, (long long)n_want);

  /* iteration: one row per kept iteration, its diagnostics */
  bad = 0;
  n_rows = 0;
  if( fly_db_prepare(db, "SELECT chain, iter, n_bright FROM iteration WHERE run_id = 1 "
                     "ORDER BY chain, iter", &st, &err) == FLY_OK ){
    int64_t c = 0, it = thin;
    while( sqlite3_step(st) == SQLITE_ROW ){
      while( c < C && it > upto[c] ){ c++; it = thin; }
      if( c >= C || sqlite3_column_int64(st, 0) != c || sqlite3_column_int64(st, 1) != it ||
          sqlite3_column_int64(st, 2) != diag((int)c, it).n_bright ){ bad++; break; }
      n_rows++;
      it += thin;
    }
  }
  sqlite3_finalize(st);
  st = NULL;
  TAP_OK(!bad && n_rows == n_want, "P %zu, %s: view iteration has the %lld kept iterations",
         P, when, (long long)n_want);

  /* the everyday aggregate: per name, the post-warm-up count, min and max */
  bad = 0;
  n_rows = 0;
  if( fly_db_prepare(db, "SELECT name, count(*), min(value), max(value) FROM draws_named "
                     "WHERE run_id = 1 AND NOT warmup GROUP BY name", &st, &err) == FLY_OK ){
    while( sqlite3_step(st) == SQLITE_ROW ){
      size_t p = (size_t)atoi((const char *)sqlite3_column_text(st, 0) + 1);
      int64_t cnt = 0;
      double lo = INFINITY, hi = -INFINITY;
      for(int c = 0; c < C; c++)
        for(int64_t it = thin; it <= upto[c]; it += thin){
          if( it <= WARM ) continue;
          double x = value(c, it, p);
          cnt++;
          lo = x < lo ? x : lo;
          hi = x > hi ? x : hi;
        }
      if( sqlite3_column_int64(st, 1) != cnt || (cnt && (sqlite3_column_double(st, 2) != lo ||
          sqlite3_column_double(st, 3) != hi)) ) bad++;
      n_rows++;
    }
  }
  sqlite3_finalize(st);
  {
    int any_post = upto[0] > WARM || upto[1] > WARM;
    TAP_OK(!bad && n_rows == (any_post ? (int64_t)P : 0), "P %zu, %s: GROUP BY name gives "
           "each parameter's count, min and max (%lld groups)", P, when, (long long)n_rows);
  }

  /* and the checker agrees, with the checkpoints where the draws end */
  {
    int n_prob = 0;
    fly_trace_shape sh = { 1, C, WARM, ITERS, thin, (int64_t)P, 0 };
    fly_db_exec(db, "BEGIN", NULL);
    fly_trace_check(db, &sh, on_problem, NULL, &n_prob, NULL);
    fly_db_exec(db, "COMMIT", NULL);
    TAP_OK(n_prob == 0, "P %zu, %s: fly_trace_check finds nothing (%d problems)", P, when,
           n_prob);
  }
  fly_db_close(db);
}

/* Chain c's checkpoint iteration, after which a resume truncates. */
static int64_t resume_point(int c)
{
  fly_err err = {0};
  fly_db *db = NULL;
  int64_t it = -1;
  void *state = NULL;
  size_t len = 0;
  if( fly_db_open(path, 0, &db, &err) == FLY_OK &&
      fly_trace_checkpoint(db, 1, c, &it, &state, &len, &err) == FLY_OK &&
      fly_trace_truncate(db, 1, c, it, &err) == FLY_OK ){
    if( state && (len != sizeof it || memcmp(state, &it, len)) ) it = -2;
  }else{
    TAP_DIAG("resume of chain %d: %s", c, err.msg);
    it = -1;
  }
  fly_free(state);
  fly_db_close(db);
  return it;
}

static int64_t round_up(int64_t it, int64_t thin) { return (it + thin - 1) / thin * thin; }

static void test_run(size_t P, unsigned *seed)
{
  int64_t thin = P % 2 ? 1 : 2, upto[C];
  int64_t end = TOTAL / thin * thin;
  fly_trace *w[C] = { NULL, NULL };

  /* during, then after */
  if( !make_run(P, thin) ) return;
  upto[0] = round_up(90, thin);
  upto[1] = round_up(33, thin);
  if( !write_chain(&w[0], P, thin, 0, thin, upto[0], 0, 0) ||
      !write_chain(&w[1], P, thin, 1, thin, upto[1], 0, 0) ){
    TAP_OK(0, "P %zu: writing", P);
    fly_trace_close(w[0]);
    fly_trace_close(w[1]);
    return;
  }
  verify(P, thin, upto, "during the run");
  for(int c = 0; c < C; c++){
    write_chain(&w[c], P, thin, c, upto[c] + thin, end, 0, 0);
    fly_trace_close(w[c]);
    upto[c] = end;
  }
  verify(P, thin, upto, "after the run");

  /* resume: chain 0 loses rows it never committed, chain 1 is cut back
   * inside a chunk; both go on from there */
  if( !make_run(P, thin) ) return;
  write_chain(NULL, P, thin, 0, thin, round_up(100, thin), 5, 0);
  write_chain(NULL, P, thin, 1, thin, round_up(150, thin), 0, 0);
  upto[0] = resume_point(0);
  {
    fly_err err = {0};
    fly_db *db = NULL;
    char q[96];
    upto[1] = round_up(77, thin);
    snprintf(q, sizeof q, "UPDATE checkpoint SET iter = %lld WHERE chain = 1",
             (long long)upto[1]);
    if( fly_db_open(path, 0, &db, &err) || fly_trace_truncate(db, 1, 1, upto[1], &err) ||
        fly_db_exec(db, q, &err) )
      TAP_DIAG("truncate: %s", err.msg);
    fly_db_close(db);
  }
  TAP_OK(upto[0] == round_up(100, thin), "P %zu: chain 0 resumes at its checkpoint %lld", P,
         (long long)upto[0]);
  verify(P, thin, upto, "after the truncation");
  for(int c = 0; c < C; c++){
    write_chain(NULL, P, thin, c, upto[c] + thin, end, 0, 0);
    upto[c] = end;
  }
  verify(P, thin, upto, "after the resume");

  /* kill -9 at random moments, then resume */
  if( !make_run(P, thin) ) return;
  for(int k = 0, done = 0; k < 4 && !done; k++){
    int64_t from[C];
    for(int c = 0; c < C; c++){
      from[c] = resume_point(c);
      if( from[c] < 0 ) from[c] = 0;
    }
    pid_t pid = fork();
    if( pid == 0 ){
      int ok = 1;
      for(int c = 0; c < C && ok; c++)
        ok = from[c] >= end || write_chain(NULL, P, thin, c, from[c] + thin, end, 0, 3000);
      _exit(ok ? 0 : 1);
    }
    usleep(5000 + rand_r(seed) % 200000);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    done = WIFEXITED(status);
    for(int c = 0; c < C; c++) upto[c] = resume_point(c);
    char when[64];
    snprintf(when, sizeof when, "after kill -9 number %d (%s)", k + 1,
             done ? "the child had finished" : "killed");
    verify(P, thin, upto, when);
  }
  for(int c = 0; c < C; c++){
    if( upto[c] < end ) write_chain(NULL, P, thin, c, upto[c] + thin, end, 0, 0);
    upto[c] = end;
  }
  verify(P, thin, upto, "after the kills, resumed to the end");
}

int main(void)
{
  const char *env = getenv("FLYDB_TEST_SEED");
  unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
  size_t Ps[] = { 1, 64, 65, 200 };
  printf("# kill moments from FLYDB_TEST_SEED=%u\n", seed);
  snprintf(path, sizeof path, "/tmp/flydb_test_trace_views_%ld.db", (long)getpid());
  for(size_t i = 0; i < sizeof Ps / sizeof *Ps; i++) test_run(Ps[i], &seed);
  fx_unlink_db(path);
  return tap_done();
}
