/*
 * test_report.c -- fly_report_summary against the stats functions on a
 * small fixed trace (trace_fixture.h): 3 chains x 3 parameters, warm-up 6,
 * 40 iterations, thin 2, so 20 kept post-warm-up draws a chain.  Each
 * parameter's row must equal fly_stats_summarise of the same draws bit for
 * bit; the run-level figures must equal the means of the fixture's
 * diagnostics; the rows must be in the summary table; a read-only file
 * still gets the result, and a missing run fails with *out NULL.
 */
#include "run/report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stats/stats.h"
#include "tap.h"
#include "trace_fixture.h"

#define C 3
#define P 3
#define WARM 6
#define ITERS 40
#define THIN 2
#define KEEP ((WARM + ITERS) / THIN - WARM / THIN)

static char path[256];

/* a == b, or both NaN */
static int same(double a, double b)
{
  return a == b || (isnan(a) && isnan(b));
}

static int near(double a, double b)
{
  return fabs(a - b) <= 1e-12 * fmax(1, fabs(b));
}

static void test_rows(const fly_summary *s)
{
  double x[C * KEEP];
  double min_ess = INFINITY;
  size_t warn_rhat = 0, warn_ess = 0;
  for(size_t p = 0; p < P; p++){
    fly_stats_summary m;
    fly_err err = {0};
    for(int c = 0; c < C; c++)
      for(int t = 0; t < KEEP; t++) x[c * KEEP + t] = fx_draw(c, WARM + THIN * (t + 1), p);
    fly_rc rc = fly_stats_summarise(NULL, x, C, KEEP, &m, &err);
    const fly_summary_row *r = &s->rows[p];
    char name[8];
    snprintf(name, sizeof name, "b%zu", p);
    TAP_OK(rc == FLY_OK && !strcmp(r->name, name) && same(r->mean, m.mean) &&
           same(r->median, m.median) && same(r->sd, m.sd) && same(r->mad, m.mad) &&
           same(r->q5, m.q5) && same(r->q95, m.q95) && same(r->rhat, m.rhat) &&
           same(r->ess_bulk, m.ess_bulk) && same(r->ess_tail, m.ess_tail) &&
           same(r->mcse_mean, m.mcse_mean),
           "parameter %s: the row is fly_stats_summarise of its draws (mean %g, rhat %g)",
           name, r->mean, r->rhat);
    if( m.rhat > 1.01 ) warn_rhat++;
    if( m.ess_bulk < 100.0 * C || m.ess_tail < 100.0 * C ) warn_ess++;
    if( m.ess_bulk < min_ess ) min_ess = m.ess_bulk;
  }
  TAP_OK(s->n_warn_rhat == warn_rhat && s->n_warn_ess == warn_ess && s->min_ess_bulk == min_ess &&
         near(s->ess_per_second, min_ess / 2),
         "warnings (%zu R-hat, %zu ESS) and min ess_bulk per second %g", s->n_warn_rhat,
         s->n_warn_ess, s->ess_per_second);
}

static void test_run_level(const fly_summary *s)
{
  double acc = 0, bright = 0, lik = 0, reads = 0, n = 0;
  for(int c = 0; c < C; c++)
    for(int64_t it = WARM + THIN; it <= WARM + ITERS; it += THIN){
      fly_trace_row d = fx_diag(c, it);
      acc += d.accepted;
      bright += (double)d.n_bright;
      lik += (double)d.n_lik;
      reads += (double)d.n_reads;
      n++;
    }
  TAP_OK(s->run_id == 1 && s->n_chains == C && s->n_params == P && s->n_draws == KEEP &&
         s->n_warmup == WARM && s->n_rows == FX_N && !strcmp(s->z_mode, "gibbs") &&
         !strcmp(s->status, "done") && s->seconds == 2,
         "header: run %lld, %zu chains x %zu draws", (long long)s->run_id, s->n_chains,
         s->n_draws);
  TAP_OK(near(s->acceptance, acc / n) && near(s->mean_bright, bright / n) &&
         near(s->lik_evals, lik / n) && near(s->rows_read, reads / n) &&
         near(s->waste, reads / bright),
         "means of the post-warm-up diagnostics (acceptance %g, bright %g, waste %g)",
         s->acceptance, s->mean_bright, s->waste);
}

static void test_stored(fly_db *db, const fly_summary *s)
{
  fly_err err = {0};
  sqlite3_stmt *st = NULL;
  double sum = 0;
  for(size_t p = 0; p < P; p++) sum += s->rows[p].mean;
  int ok = fly_db_prepare(db, "SELECT count(*), sum(mean), max(name) FROM summary WHERE "
                          "run_id = 1", &st, &err) == FLY_OK &&
           sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == P &&
           near(sqlite3_column_double(st, 1), sum) &&
           !strcmp((const char *)sqlite3_column_text(st, 2), "b2");
  sqlite3_finalize(st);
  TAP_OK(ok, "the rows are stored in the summary table (%s)", err.msg);
}

int main(void)
{
  fly_err err = {0};
  fly_db *db = NULL;
  fly_summary *s = NULL;
  snprintf(path, sizeof path, "/tmp/flydb_test_report_%ld.db", (long)getpid());
  unlink(path);
  if( TAP_OK(fx_write_run(path, C, P, WARM, ITERS, THIN), "a run of 3 chains written") &&
      TAP_OK(fly_db_open(path, 0, &db, &err) == FLY_OK, "reopen (%s)", err.msg) ){
    if( TAP_OK(fly_report_summary(db, 0, &s, &err) == FLY_OK && s, "summary of the latest "
               "run (%s)", err.msg) ){
      test_rows(s);
      test_run_level(s);
      test_stored(db, s);
    }
    fly_report_free(s);
    fly_summary stale;
    s = &stale;                          /* must be reset on failure */
    fly_rc rc = fly_report_summary(db, 2, &s, &err);
    TAP_OK(rc == FLY_RANGE && !s && strstr(err.msg, "no run 2"), "run 2: %s", err.msg);
    fly_db_close(db);
    db = NULL;
    memset(&err, 0, sizeof err);
    s = NULL;
    rc = fly_db_open(path, FLY_DB_READONLY, &db, &err);
    if( rc == FLY_OK ) rc = fly_report_summary(db, 1, &s, &err);
    TAP_OK(rc == FLY_OK && s && s->n_params == P, "a read-only file gets the summary (%s)",
           err.msg);
    fly_report_free(s);
  }
  fly_report_free(NULL);
  fly_db_close(db);
  fx_unlink_db(path);
  return tap_done();
}
