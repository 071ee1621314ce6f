/*
 * test_trace.c -- the trace writer against its reader and its checker.
 *
 * A run of C = 2 chains and P = 70 parameters (commits of 3 iterations, so
 * the writer rewrites its partial chunk) is written through fly_trace_add/commit with warm-up 4,
 * 10 iterations and thin 2; value(c, it, p) is exactly representable, so
 * every read is compared with ==.  Then: the header and names (a missing
 * param row reads as theta[k]), chain lengths, draws of a parameter range
 * that spans both blocks (after warm-up, and cut at cap), diagnostics (NULL
 * full_logpost as NaN) and their means, the streaming scan (and FLY_CORRUPT
 * for an iteration that lost a block), checkpoints and truncation, the
 * summary and profile writers, and fly_trace_check on the clean run and on
 * damaged copies, counting the problems it reports; last, a batch the
 * writer thread fails to write.
 */
#include "store/db.h"
#include "store/summary.h"
#include "store/trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "trace_fixture.h"
#include "util/mem.h"

#define C 2
#define P 70
#define WARM 4
#define ITERS 10
#define THIN 2

static char path[256];

static double value(int c, int64_t it, size_t p)
{
  return (double)c * 1000 + (double)it + (double)p / 128.0;
}

static int sql(fly_db *db, const char *s)
{
  fly_err err = {0};
  if( fly_db_exec(db, s, &err) ){ TAP_DIAG("SQL failed: %s", err.msg); return 0; }
  return 1;
}

/* The run: rows of dataset, run, param (idx 3 left out: its name is
 * theta[4]), run_config; then every kept iteration of both chains. */
static int write_run(void)
{
  fly_err err = {0};
  fly_db *db = NULL;
  char q[256];
  int ok = 0;
  if( fly_db_open(path, FLY_DB_CREATE, &db, &err) ){ TAP_DIAG("%s", err.msg); return 0; }
  if( !sql(db, "INSERT INTO dataset(id, name, source, n_rows, width, n_features, "
           "has_intercept, target_name, page_rows, n_pages, prec, raw_bytes, stored_bytes) "
           "VALUES (1, 'toy', 'toy.csv', 500, 71, 70, 0, 'y', 10, 50, 8, 0, 0)") ) goto done;
  if( !sql(db, "INSERT INTO run(id, dataset_id, model, sampler, z_mode, n_chains, n_warmup, "
           "n_iters, thin, seed, n_params, status, version, sample_seconds) VALUES (1, 1, "
           "'logistic', 'mh', 'gibbs', 2, 4, 10, 2, 7, 70, 'done', 'test', 1.5)") ) goto done;
  if( !sql(db, "INSERT INTO run_config VALUES (1, 'thin', '2', 0), (1, 'seed', '7', 1)") )
    goto done;
  for(size_t p = 0; p < P; p++){
    if( p == 3 ) continue;
    snprintf(q, sizeof q, "INSERT INTO param VALUES (1, %zu, 'b%zu')", p, p);
    if( !sql(db, q) ) goto done;
  }
  ok = 1;
done:
  fly_db_close(db);
  if( !ok ) return 0;
  for(int c = 0; c < C; c++){
    fly_trace *t = NULL;
    double th[P];
    if( fly_trace_open(path, 1, c, P, 3, &t, &err) ){ TAP_DIAG("%s", err.msg); return 0; }
    for(int64_t it = THIN; it <= WARM + ITERS; it += THIN){
      fly_trace_row row = { -(double)it, 10 + it, 20 + it, 30 + it, it % 4 ? 0.5 : 1.0,
                            0.25, it == 6 ? 3.5 : NAN, 0, 0, 0, 0, 0, 0 };
      if( c == 1 ){      /* chain 1 as a NUTS chain, chain 0 as MH */
        row.has_kstats = 1;
        row.treedepth = (int)(it % 5);
        row.n_leapfrog = it;
        row.divergent = it == 8;
        row.energy = 0.5 * (double)it;
        row.accept_stat = 0.125;
      }
      for(size_t p = 0; p < P; p++) th[p] = value(c, it, p);
      if( fly_trace_pending(t) == 3 && fly_trace_commit(t, it - THIN, "ck", 2, &err) ) break;
      if( fly_trace_add(t, it, th, &row, &err) ) break;
    }
    if( !err.code ) fly_trace_commit(t, WARM + ITERS, "ckpt", 4, &err);
    fly_trace_close(t);
    if( err.code ){ TAP_DIAG("%s", err.msg); return 0; }
  }
  return 1;
}

static void test_read(fly_db *db)
{
  fly_err err = {0};
  fly_trace_reader *r = NULL;
  fly_rc rc = fly_trace_reader_open(db, 0, &r, &err);
  if( !TAP_OK(rc == FLY_OK, "reader opens the latest run (%s)", err.msg) ) return;
  const fly_trace_run *ri = fly_trace_reader_run(r);
  TAP_OK(ri->id == 1 && ri->n_chains == C && ri->n_params == P && ri->n_warmup == WARM &&
         ri->n_iters == ITERS && ri->thin == THIN && ri->seed == 7 && ri->n_rows == 500,
         "header: shape, seed and N");
  TAP_OK(!strcmp(ri->model, "logistic") && !strcmp(ri->z_mode, "gibbs") &&
         !strcmp(ri->dataset, "toy") && !strcmp(ri->source, "toy.csv") &&
         ri->sample_seconds == 1.5 && isnan(ri->wall_seconds), "header: labels, NULL as NaN");
  TAP_OK(!strcmp(fly_trace_param_name(r, 0), "b0") && !strcmp(fly_trace_param_name(r, 69), "b69")
         && !strcmp(fly_trace_param_name(r, 3), "theta[4]"), "names, theta[4] for a missing row");
  TAP_OK(fly_trace_option_default(r, "seed") == 1 && fly_trace_option_default(r, "thin") == 0 &&
         fly_trace_option_default(r, "iters") == 1, "options: stored defaults, unknown key");

  size_t nw = 0, ns = 0;
  rc = fly_trace_chain_len(r, 1, &nw, &ns, &err);
  TAP_OK(rc == FLY_OK && nw == WARM / THIN && ns == ITERS / THIN, "chain length %zu + %zu", nw, ns);
  TAP_OK(fly_trace_chain_len(r, C, &nw, &ns, NULL) == FLY_RANGE, "chain out of range");

  /* parameters 60..65 span both blocks; post-warm-up: iterations 6..14 */
  double x[6 * 8];
  int64_t its[8];
  size_t n = 0;
  int good = 1;
  rc = fly_trace_draws(r, 1, 60, 6, WARM, 8, x, its, &n, &err);
  for(size_t t = 0; t < n; t++)
    for(size_t k = 0; k < 6; k++)
      good &= its[t] == WARM + THIN * (int64_t)(t + 1) && x[k * 8 + t] == value(1, its[t], 60 + k);
  TAP_OK(rc == FLY_OK && n == ITERS / THIN && good, "draws of 60..65 across blocks, %zu", n);
  rc = fly_trace_draws(r, 0, 69, 1, 0, 3, x, NULL, &n, &err);
  TAP_OK(rc == FLY_OK && n == 3 && x[0] == value(0, 2, 69) && x[2] == value(0, 6, 69),
         "draws cut at cap, from the first iteration");
  TAP_OK(fly_trace_draws(r, 0, 65, 6, 0, 3, x, NULL, &n, NULL) == FLY_RANGE,
         "a parameter range past P");

  fly_trace_row rows[8];
  rc = fly_trace_diagnostics(r, 0, 0, 8, rows, its, &n, &err);
  TAP_OK(rc == FLY_OK && n == 7 && its[2] == 6 && rows[2].log_joint == -6 &&
         rows[2].n_bright == 16 && rows[2].n_lik == 26 && rows[2].n_reads == 36 &&
         rows[2].accepted == 0.5 && rows[2].step_size == 0.25 && rows[2].full_logpost == 3.5 &&
         isnan(rows[3].full_logpost), "diagnostics, NULL full_logpost as NaN");
  TAP_OK(n == 7 && !rows[0].has_kstats && !rows[6].has_kstats, "no kernel statistics: NULL");
  rc = fly_trace_diagnostics(r, 1, 0, 8, rows, its, &n, &err);
  TAP_OK(rc == FLY_OK && n == 7 && rows[3].has_kstats && its[3] == 8 && rows[3].treedepth == 3 &&
         rows[3].n_leapfrog == 8 && rows[3].divergent == 1 && rows[3].energy == 4 &&
         rows[3].accept_stat == 0.125 && rows[2].divergent == 0, "kernel statistics read back");
  fly_trace_means m;
  rc = fly_trace_diagnostics_mean(r, WARM, &m, &err);
  /* iterations 6, 8, .., 14 in both chains: n_bright 10 + mean 10 */
  TAP_OK(rc == FLY_OK && m.n_bright == 20 && m.n_lik == 30 && m.n_reads == 40 &&
         fabs(m.accepted - 0.7) < 1e-15, "means over post-warm-up iterations");
  rc = fly_trace_diagnostics_mean(r, 100, &m, &err);
  TAP_OK(rc == FLY_OK && isnan(m.n_bright) && isnan(m.accepted), "means of nothing are NaN");

  double th[P];
  int64_t it;
  fly_trace_row row;
  size_t k = 0;
  good = 1;
  rc = fly_trace_scan_start(r, 1, WARM, &err);
  while( rc == FLY_OK && (rc = fly_trace_scan_next(r, &it, &row, th, &err)) == FLY_ROW ){
    good &= it == WARM + THIN * (int64_t)(k + 1) && row.n_bright == 10 + it;
    good &= row.has_kstats && row.n_leapfrog == it && row.energy == 0.5 * (double)it;
    for(size_t p = 0; p < P; p++) good &= th[p] == value(1, it, p);
    k++;
    rc = FLY_OK;
  }
  TAP_OK(rc == FLY_DONE && k == ITERS / THIN && good, "scan: %zu whole iterations", k);
  TAP_OK(fly_trace_scan_next(r, &it, &row, th, &err) == FLY_DONE, "scan stays done");
  fly_trace_reader_close(r);

  rc = fly_trace_reader_open(db, 9, &r, &err);
  TAP_OK(rc == FLY_RANGE && !r && strstr(err.msg, "no run 9"), "a missing run: %s", err.msg);
}

typedef struct found { int n; char last[256]; } found;
static void on_problem(void *u, const char *msg)
{
  found *f = u;
  f->n++;
  snprintf(f->last, sizeof f->last, "%s", msg);
  TAP_DIAG("problem: %s", msg);
}
static int n_ckpt;
static void on_ckpt(void *u, int64_t c, const void *p, size_t len)
{
  (void)u; (void)c;
  n_ckpt += len == 4 && !memcmp(p, "ckpt", 4);
}

static int check(fly_db *db, found *f)
{
  fly_trace_shape s = { 1, C, WARM, ITERS, THIN, P, 1 };
  memset(f, 0, sizeof *f);
  n_ckpt = 0;
  return fly_trace_check(db, &s, on_problem, on_ckpt, f, NULL) == FLY_OK;
}

static void test_check(fly_db *db)
{
  found f;
  int ok = check(db, &f);
  /* the draws of idx 3 are there, its name is not */
  TAP_OK(ok && f.n == 1 && n_ckpt == C, "check: the missing param row (%d problems), %d "
         "checkpoint blobs", f.n, n_ckpt);
  sql(db, "INSERT INTO param VALUES (1, 3, 'b3')");
  ok = check(db, &f);
  TAP_OK(ok && f.n == 0, "check: a clean run");
  /* chain 1 is one chunk a parameter, iterations 2, 4, .. 14: v3 is iteration 8 */
  sql(db, "UPDATE draw_chunk SET v3 = NULL WHERE run_id = 1 AND chain = 1 AND idx >= 64");
  ok = check(db, &f);
  TAP_OK(ok && f.n == 1 && strstr(f.last, "chain 1, iteration 8: 64 draw rows"),
         "check: lost draws (%s)", f.last);

  /* the scan stops at the first iteration a cut chunk lacks (and a NULL
   * draw is a stored NaN to it) */
  sql(db, "UPDATE draw_chunk SET n = 3 WHERE run_id = 1 AND chain = 1 AND idx = 69");
  fly_trace_reader *r = NULL;
  fly_err err = {0};
  double th[P];
  int64_t it;
  fly_trace_row row;
  fly_rc rc = fly_trace_reader_open(db, 1, &r, &err);
  if( rc == FLY_OK ) rc = fly_trace_scan_start(r, 1, 0, &err);
  while( rc == FLY_OK || rc == FLY_ROW ) rc = fly_trace_scan_next(r, &it, &row, th, &err);
  TAP_OK(rc == FLY_CORRUPT && strstr(err.msg, "chain 2, iteration 8: 69 draws, want 70"),
         "scan: %s", err.msg);
  fly_trace_reader_close(r);
  sql(db, "UPDATE draw_chunk SET n = 7 WHERE run_id = 1 AND chain = 1 AND idx = 69");

  /* a chain cut back to iteration 6 without moving its checkpoint */
  rc = fly_trace_truncate(db, 1, 0, 6, &err);
  ok = rc == FLY_OK && check(db, &f);
  TAP_OK(ok && f.n == 3, "truncate, then check reports %d "
         "problems (draws, iteration rows of chain 0, the lost draws)", f.n);
  int64_t ck = 0;
  void *state = NULL;
  size_t len = 0;
  rc = fly_trace_checkpoint(db, 1, 1, &ck, &state, &len, &err);
  TAP_OK(rc == FLY_OK && ck == WARM + ITERS && len == 4 && !memcmp(state, "ckpt", 4),
         "checkpoint read back");
  fly_free(state);
  rc = fly_trace_checkpoint(db, 1, 5, &ck, &state, &len, &err);
  TAP_OK(rc == FLY_OK && ck == 0 && !state && len == 0, "no checkpoint: iteration 0");
  sql(db, "UPDATE run SET status = 'running'");
  sql(db, "UPDATE checkpoint SET iter = 99 WHERE chain = 0");
  {
    fly_trace_shape s = { 1, C, WARM, ITERS, THIN, P, 0 };
    memset(&f, 0, sizeof f);
    fly_trace_check(db, &s, on_problem, NULL, &f, NULL);
    TAP_OK(f.n == 2 && strstr(f.last, "iteration 8"), "checkpoint outside 1..14 (%d problems)",
           f.n);
  }
}

static void test_summary(fly_db *db)
{
  fly_err err = {0};
  fly_summary_row rows[2] = { { "a", 1, 2, 3, 4, 5, 6, NAN, 8, 9, 10 },
                              { "b", 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 } };
  fly_rc rc = fly_summary_put(db, 1, rows, 2, &err);
  rc = rc ? rc : fly_summary_put(db, 1, rows, 2, &err);      /* replaces */
  sqlite3_stmt *st = NULL;
  int ok = rc == FLY_OK && fly_db_prepare(db, "SELECT count(*), sum(mean), count(rhat), "
                                          "max(mcse_mean) FROM summary", &st, &err) == FLY_OK
           && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 2 &&
           sqlite3_column_double(st, 1) == 12 && sqlite3_column_int(st, 2) == 1 &&
           sqlite3_column_double(st, 3) == 20;
  sqlite3_finalize(st);
  TAP_OK(ok, "summary rows replaced, NaN stored as NULL (%s)", err.msg);
  fly_profile_row pr[2] = { { 0, "theta", 1.5, 75, 10 }, { 0, "z", 0.5, 25, 10 } };
  rc = fly_summary_put_profile(db, 1, pr, 2, &err);
  st = NULL;
  ok = rc == FLY_OK && fly_db_prepare(db, "SELECT sum(seconds), sum(share) FROM profile",
                                      &st, &err) == FLY_OK && sqlite3_step(st) == SQLITE_ROW &&
       sqlite3_column_double(st, 0) == 2 && sqlite3_column_double(st, 1) == 100;
  sqlite3_finalize(st);
  TAP_OK(ok, "profile rows (%s)", err.msg);
}

/* A batch the writer thread cannot write (a checkpoint of run 99, which
 * has no run row: a foreign key failure) is handed over without error,
 * fails the sync with the SQL error, and every later hand-over; its draws
 * were in the checkpoint's transaction, so none of them is stored. */
static void test_failure(fly_db *db)
{
  fly_err err = {0}, err2 = {0};
  fly_trace *t = NULL;
  double th[3] = { 1, 2, 3 };
  fly_trace_row row = { 0, 1, 1, 0, 1.0, 0.1, NAN, 0, 0, 0, 0, 0, 0 };
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  fly_rc r1 = FLY_MISUSE, r2 = FLY_MISUSE, r3 = FLY_MISUSE;
  if( !TAP_OK(fly_trace_open(path, 99, 0, 3, 4, &t, &err) == FLY_OK, "writer of run 99 (%s)",
              err.msg) ) return;
  if( fly_trace_add(t, 1, th, &row, &err) == FLY_OK &&
      fly_trace_add(t, 2, th, &row, &err) == FLY_OK ){
    r1 = fly_trace_submit(t, 2, "ck", 2, &err);
    r2 = fly_trace_sync(t, &err);
    fly_trace_add(t, 3, th, &row, &err2);
    r3 = fly_trace_submit(t, 3, "ck", 2, &err2);
  }
  fly_trace_close(t);
  TAP_OK(r1 == FLY_OK, "the batch is handed over (%s)", fly_rc_str(r1));
  TAP_OK(r2 == FLY_SQL && strstr(err.msg, "FOREIGN KEY"), "the sync fails with the writer's "
         "error: %s", err.msg);
  TAP_OK(r3 == FLY_SQL && !strcmp(err2.msg, err.msg), "a later hand-over fails with it too");
  if( fly_db_prepare(db, "SELECT (SELECT count(*) FROM draw_block WHERE run_id = 99) + "
                     "(SELECT count(*) FROM draw_chunk WHERE run_id = 99)", &st, &err) == FLY_OK &&
      sqlite3_step(st) == SQLITE_ROW ) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  TAP_OK(n == 0, "none of the failed batch's draws is stored (%lld rows)", (long long)n);
}

int main(void)
{
  fly_err err = {0};
  fly_db *db = NULL;
  snprintf(path, sizeof path, "/tmp/flydb_test_trace_%ld.db", (long)getpid());
  unlink(path);
  if( TAP_OK(write_run(), "a run of 2 chains x 70 parameters written") &&
      TAP_OK(fly_db_open(path, 0, &db, &err) == FLY_OK, "reopen (%s)", err.msg) ){
    test_read(db);
    test_summary(db);
    test_check(db);
    test_failure(db);
  }
  fly_db_close(db);
  fx_unlink_db(path);
  return tap_done();
}
