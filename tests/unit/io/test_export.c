/*
 * test_export.c -- the export writers on a small fixed trace
 * (trace_fixture.h): 2 chains x 3 parameters, warm-up 6, 40 iterations,
 * thin 2 (3 warm-up and 20 post-warm-up rows a chain).  Long and wide CSV
 * into memory streams: row counts with and without warm-up and every
 * value read back equal to the draw; the CmdStan plan and one chain's
 * file: header line, comment lines, rows and values; the directory
 * writer: files renamed into place, nothing left behind on failure.
 */
#include "io/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "trace_fixture.h"

#define C 2
#define P 3
#define WARM 6
#define ITERS 40
#define THIN 2

static char path[256], dir[256];

static int starts(const char *s, const char *prefix)
{
  return s && !strncmp(s, prefix, strlen(prefix));
}

/* Lines of buf, and whether every wide row (chain,iter,warmup,values)
 * holds the fixture's draws exactly. */
static size_t lines(const char *buf)
{
  size_t n = 0;
  for( ; *buf; buf++) n += *buf == '\n';
  return n;
}

static int wide_values_ok(const char *buf)
{
  const char *s = strchr(buf, '\n');                /* skip the header */
  while( s && s[1] ){
    char *e;
    long c = strtol(s + 1, &e, 10);
    long long it = strtoll(e + 1, &e, 10);
    long w = strtol(e + 1, &e, 10);
    if( w != (it <= WARM) ) return 0;
    for(size_t p = 0; p < P; p++)
      if( *e != ',' || strtod(e + 1, &e) != fx_draw((int)c - 1, it, p) ) return 0;
    if( *e != '\n' ) return 0;
    s = e;
  }
  return 1;
}

static void test_csv(fly_trace_reader *tr, int warm)
{
  char *lb = NULL, *wb = NULL;
  size_t ln = 0, wn = 0, n_rows = 0;
  fly_err err = {0};
  FILE *lf = open_memstream(&lb, &ln), *wf = open_memstream(&wb, &wn);
  fly_rc rc = fly_export_csv(tr, warm, lf, wf, &n_rows, &err);
  fclose(lf);
  fclose(wf);
  size_t want = (size_t)C * (warm ? (WARM + ITERS) / THIN : ITERS / THIN);
  TAP_OK(rc == FLY_OK && n_rows == want && lines(wb) == 1 + want &&
         lines(lb) == 1 + want * P && starts(wb, "chain,iter,warmup,b0,b1,b2\n") &&
         starts(lb, "run_id,chain,iter,name,value,warmup\n"),
         "csv%s: %zu iterations, long and wide headers (%s)", warm ? " with warm-up" : "",
         n_rows, err.msg);
  TAP_OK(wide_values_ok(wb), "csv%s: every wide value reads back as the draw",
         warm ? " with warm-up" : "");
  free(lb);
  free(wb);
}

static void test_cmdstan(fly_trace_reader *tr)
{
  fly_export_plan plan;
  fly_err err = {0};
  char *b = NULL;
  size_t n = 0;
  fly_rc rc = fly_export_cmdstan_plan(tr, 1, &plan, &err);
  TAP_OK(rc == FLY_OK && plan.warm && plan.n_warm == WARM / THIN && plan.n_post == ITERS / THIN &&
         plan.exact && !plan.partial && plan.num_warmup == WARM && plan.num_samples == ITERS,
         "cmdstan plan: %lld + %lld rows a chain (%s)", (long long)plan.n_warm,
         (long long)plan.n_post, err.msg);
  if( rc ) return;
  FILE *f = open_memstream(&b, &n);
  rc = fly_export_cmdstan_chain(tr, &plan, 1, "1_chain2.csv", f, &err);
  fclose(f);
  size_t rows = 0, bad = 0;
  int header = 0;
  int comments = b && strstr(b, "# id = 2\n") && strstr(b, "#     save_warmup = 1\n") &&
                 strstr(b, "# Adaptation terminated\n") &&
                 strstr(b, "# flydb parameter names: \"b0\",\"b1\",\"b2\"\n");
  for(char *s = b; s && *s; ){
    char *e = strchr(s, '\n');
    if( !e ) break;
    *e = 0;
    if( !strcmp(s, "lp__,accept_stat__,stepsize__,n_bright__,n_lik_evals__,n_reads__,"
                "theta.1,theta.2,theta.3") ) header = 1;
    else if( s[0] != '#' ){
      double v[6 + P];
      char *q = s;
      for(int k = 0; k < 6 + P; k++){ v[k] = strtod(q, &q); if( *q == ',' ) q++; }
      int64_t it = (int64_t)(-100 - v[0]);
      fly_trace_row d = fx_diag(1, it);
      bad += v[1] != d.accepted || v[3] != (double)d.n_bright || v[5] != (double)d.n_reads;
      for(size_t p = 0; p < P; p++) bad += v[6 + p] != fx_draw(1, it, p);
      rows++;
    }
    s = e + 1;
  }
  TAP_OK(rc == FLY_OK && header && comments && rows == (size_t)(plan.n_warm + plan.n_post) &&
         !bad,
         "cmdstan chain 2: header, %zu rows, %zu wrong values (%s)", rows, bad, err.msg);
  free(b);
}

static void test_dir(fly_trace_reader *tr)
{
  fly_export_files out;
  fly_err err = {0};
  struct stat sb;
  char p[512];
  fly_rc rc = fly_export_dir(tr, FLY_EXPORT_CMDSTAN, 0, dir, &out, &err);
  int ok = rc == FLY_OK && out.n == C && out.n_draws == ITERS / THIN && !out.partial;
  for(size_t i = 0; ok && i < out.n; i++){
    snprintf(p, sizeof p, "%s/1_chain%zu.csv", dir, i + 1);
    ok = !strcmp(out.path[i], p) && stat(p, &sb) == 0;
    snprintf(p, sizeof p, "%s/1_chain%zu.csv.tmp", dir, i + 1);
    ok = ok && stat(p, &sb) != 0;
    unlink(out.path[i]);
  }
  TAP_OK(ok, "cmdstan into a directory: %zu files in place, no .tmp (%s)", out.n, err.msg);
  fly_export_files_clear(&out);
  rc = fly_export_dir(tr, FLY_EXPORT_CSV, 1, dir, &out, &err);
  ok = rc == FLY_OK && out.n == 2 && out.n_draws == C * (WARM + ITERS) / THIN;
  for(size_t i = 0; i < out.n; i++) ok = ok && unlink(out.path[i]) == 0;
  TAP_OK(ok, "csv into a directory: %s (%s)", ok ? out.path[0] : "-", err.msg);
  fly_export_files_clear(&out);
  snprintf(p, sizeof p, "%s/missing", dir);
  rc = fly_export_dir(tr, FLY_EXPORT_CSV, 0, p, &out, &err);
  TAP_OK(rc == FLY_IO && out.n == 0 && strstr(err.msg, "missing/1_draws.csv.tmp"),
         "a missing directory: %s", err.msg);
  fly_export_files_clear(&out);
}

int main(void)
{
  fly_err err = {0};
  fly_db *db = NULL;
  fly_trace_reader *tr = NULL;
  snprintf(path, sizeof path, "/tmp/flydb_test_export_%ld.db", (long)getpid());
  snprintf(dir, sizeof dir, "/tmp/flydb_test_export_%ld", (long)getpid());
  unlink(path);
  mkdir(dir, 0777);
  if( TAP_OK(fx_write_run(path, C, P, WARM, ITERS, THIN), "a run of 2 chains written") &&
      TAP_OK(fly_db_open(path, FLY_DB_READONLY, &db, &err) == FLY_OK &&
             fly_trace_reader_open(db, 1, &tr, &err) == FLY_OK, "reader (%s)", err.msg) ){
    test_csv(tr, 0);
    test_csv(tr, 1);
    test_cmdstan(tr);
    test_dir(tr);
  }
  fly_trace_reader_close(tr);
  fly_db_close(db);
  rmdir(dir);
  fx_unlink_db(path);
  return tap_done();
}
