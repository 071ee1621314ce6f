/*
 * summary.c -- `flydb summary [RUN_ID]`: the posterior table of a run.
 *
 * Per parameter, over post-warm-up draws of all chains: mean, median, sd,
 * mad, q5, q95, rhat, ess_bulk, ess_tail, mcse_mean -- the columns and
 * definitions of posterior::summarise_draws (src/stats) -- then run-level
 * lines: iterations, acceptance, mean bright fraction, likelihood
 * evaluations and rows read per iteration, ESS per second.  The table is
 * also stored in the `summary` table.  Warnings as Stan gives them when
 * R-hat > 1.01 or ESS < 100 per chain.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stats/stats.h"
#include "store/db.h"
#include "util/mem.h"

typedef struct runinfo {
  int64_t n_chains, n_warmup, n_iters, thin, n_params, n_rows;
  double  wall;
  char    z[16], status[16];
} runinfo;

static fly_rc run_info(fly_db *db, int64_t *run_id, runinfo *ri, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, *run_id > 0 ?
      "SELECT r.id, n_chains, n_warmup, n_iters, thin, n_params, coalesce(sample_seconds, wall_seconds, 0), "
      "z_mode, status, d.n_rows FROM run r JOIN dataset d ON d.id=r.dataset_id WHERE r.id=?1" :
      "SELECT r.id, n_chains, n_warmup, n_iters, thin, n_params, coalesce(sample_seconds, wall_seconds, 0), "
      "z_mode, status, d.n_rows FROM run r JOIN dataset d ON d.id=r.dataset_id "
      "ORDER BY r.id DESC LIMIT 1", &st, err);
  if( rc ) return rc;
  if( *run_id > 0 ) sqlite3_bind_int64(st, 1, *run_id);
  if( sqlite3_step(st) == SQLITE_ROW ){
    *run_id = sqlite3_column_int64(st, 0);
    ri->n_chains = sqlite3_column_int64(st, 1);
    ri->n_warmup = sqlite3_column_int64(st, 2);
    ri->n_iters = sqlite3_column_int64(st, 3);
    ri->thin = sqlite3_column_int64(st, 4);
    ri->n_params = sqlite3_column_int64(st, 5);
    ri->wall = sqlite3_column_double(st, 6);
    snprintf(ri->z, sizeof ri->z, "%s", (const char *)sqlite3_column_text(st, 7));
    snprintf(ri->status, sizeof ri->status, "%s", (const char *)sqlite3_column_text(st, 8));
    ri->n_rows = sqlite3_column_int64(st, 9);
  }else if( *run_id > 0 ){
    rc = fly_fail(err, FLY_RANGE, "%s has no run %lld", fly_db_path(db), (long long)*run_id);
  }else{
    rc = fly_fail(err, FLY_RANGE, "%s has no runs: run `flydb sample` first", fly_db_path(db));
  }
  sqlite3_finalize(st);
  return rc;
}

/* JSON string body: escapes quotes, backslashes and control characters. */
static void json_str(const char *t)
{
  putchar('"');
  for(; *t; t++){
    unsigned char ch = (unsigned char)*t;
    if( ch == '"' || ch == '\\' ) printf("\\%c", ch);
    else if( ch < 0x20 ) printf("\\u%04x", ch);
    else putchar(ch);
  }
  putchar('"');
}

static void json_num(double v)
{
  if( isfinite(v) ) printf("%.17g", v);
  else printf("null");
}

/* CSV field: quoted when it holds a comma, quote or line end. */
static void csv_str(const char *t)
{
  if( !strpbrk(t, ",\"\r\n") ){ fputs(t, stdout); return; }
  putchar('"');
  for(; *t; t++){ if( *t == '"' ) putchar('"'); putchar(*t); }
  putchar('"');
}

#define NCOL 10
static const char *const col_name[NCOL] = {
  "mean", "median", "sd", "mad", "q5", "q95", "rhat", "ess_bulk", "ess_tail", "mcse_mean"
};

fly_rc fly_summary_print(fly_db *db, int64_t run_id, fly_format fmt, fly_err *err)
{
  runinfo ri;
  sqlite3_stmt *st = NULL, *ins = NULL;
  fly_stats_ws *ws = NULL;
  double *x = NULL, (*res)[NCOL] = NULL;
  char (*names)[64] = NULL;
  fly_rc rc;
  size_t n_keep, C, P, n_used = 0, warn_rhat = 0, warn_ess = 0;
  double min_ess = INFINITY, acc = NAN, nbright = NAN, nlik = NAN, nreads = NAN, waste = NAN;

  if( (rc = run_info(db, &run_id, &ri, err)) ) return rc;
  C = (size_t)ri.n_chains;
  P = (size_t)ri.n_params;
  if( C > 64 ) return fly_fail(err, FLY_RANGE, "run %lld has %zu chains; at most 64 "
                               "are summarised", (long long)run_id, C);
  /* kept post-warm-up iterations: multiples of thin in (warmup, warmup+iters] */
  n_keep = (size_t)((ri.n_warmup + ri.n_iters) / ri.thin - ri.n_warmup / ri.thin);
  x = fly_alloc_array(C * (n_keep ? n_keep : 1), sizeof *x);
  names = fly_alloc_array(P, sizeof *names);
  res = fly_alloc_array(P, sizeof *res);
  if( !x || !names || !res ){ rc = fly_fail(err, FLY_NOMEM, "summary"); goto done; }
  if( (rc = fly_stats_ws_new(C, n_keep, &ws, err)) ) goto done;
  if( (rc = fly_db_prepare(db, "SELECT idx, name FROM param WHERE run_id=?1", &st, err)) ) goto done;
  sqlite3_bind_int64(st, 1, run_id);
  while( sqlite3_step(st) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    if( i >= 0 && (size_t)i < P )
      snprintf(names[i], sizeof names[i], "%s", (const char *)sqlite3_column_text(st, 1));
  }
  sqlite3_finalize(st);
  st = NULL;

  /* Compute everything first: nothing is printed for a run without draws. */
  if( (rc = fly_db_prepare(db, "SELECT chain, iter, value FROM draw WHERE run_id=?1 AND "
                           "idx=?2 AND iter>?3 ORDER BY chain, iter", &st, err)) ) goto done;
  for(size_t p = 0; p < P; p++){
    size_t per[64] = {0};
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, (int64_t)p);
    sqlite3_bind_int64(st, 3, ri.n_warmup);
    while( sqlite3_step(st) == SQLITE_ROW ){
      int c = sqlite3_column_int(st, 0);
      if( c < 0 || (size_t)c >= C || per[c] >= n_keep ) continue;
      x[(size_t)c * n_keep + per[c]++] = sqlite3_column_double(st, 2);
    }
    sqlite3_reset(st);
    size_t n_it = n_keep;
    for(size_t c = 0; c < C; c++) if( per[c] < n_it ) n_it = per[c];
    if( n_it == 0 ){
      rc = fly_fail(err, FLY_RANGE, "run %lld has no post-warm-up draws yet", (long long)run_id);
      goto done;
    }
    if( n_it < n_keep )   /* an unfinished run: use the common length */
      for(size_t c = 1; c < C; c++) memmove(x + c * n_it, x + c * n_keep, n_it * sizeof *x);
    n_used = n_it;
    fly_stats_summary s;
    if( (rc = fly_stats_summarise(ws, x, C, n_it, &s, err)) ) goto done;
    double v[NCOL] = { s.mean, s.median, s.sd, s.mad, s.q5, s.q95, s.rhat, s.ess_bulk,
                       s.ess_tail, s.mcse_mean };
    memcpy(res[p], v, sizeof v);
    if( s.rhat > 1.01 ) warn_rhat++;
    if( s.ess_bulk < 100.0 * (double)C || s.ess_tail < 100.0 * (double)C ) warn_ess++;
    if( s.ess_bulk < min_ess ) min_ess = s.ess_bulk;
  }
  sqlite3_finalize(st);
  st = NULL;
  if( (rc = fly_db_prepare(db, "SELECT avg(n_bright), avg(n_lik_evals), avg(n_reads), "
                           "avg(accepted) FROM iteration WHERE run_id=?1 AND iter>?2",
                           &st, err)) ) goto done;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int64(st, 2, ri.n_warmup);
  if( sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ){
    nbright = sqlite3_column_double(st, 0);
    nlik = sqlite3_column_double(st, 1);
    nreads = sqlite3_column_double(st, 2);
    acc = sqlite3_column_double(st, 3);
  }
  sqlite3_finalize(st);
  st = NULL;
  /* --z gibbs reads only thinning candidates (or all N rows when it falls
   * back to a scan): rows read per bright row is the bound's waste. */
  if( strcmp(ri.z, "gibbs") == 0 && nbright > 0 ) waste = nreads / nbright;

  /* Store the table (best effort: a read-only file still gets the print). */
  if( fly_db_exec(db, "SAVEPOINT summary", NULL) == FLY_OK ){
    char sql[96];
    snprintf(sql, sizeof sql, "DELETE FROM summary WHERE run_id=%lld", (long long)run_id);
    fly_db_exec(db, sql, NULL);
    if( fly_db_prepare(db, "INSERT INTO summary(run_id, idx, name, mean, sd, median, mad, "
                       "q5, q95, rhat, ess_bulk, ess_tail, mcse_mean) VALUES (?1,?2,?3,?4,"
                       "?5,?6,?7,?8,?9,?10,?11,?12,?13)", &ins, NULL) == FLY_OK ){
      static const int order[NCOL] = { 0, 2, 1, 3, 4, 5, 6, 7, 8, 9 }; /* mean sd median ... */
      for(size_t p = 0; p < P; p++){
        sqlite3_bind_int64(ins, 1, run_id);
        sqlite3_bind_int64(ins, 2, (int64_t)p);
        sqlite3_bind_text(ins, 3, names[p], -1, SQLITE_STATIC);
        for(int k = 0; k < NCOL; k++){
          double v = res[p][order[k]];
          if( isfinite(v) ) sqlite3_bind_double(ins, 4 + k, v);
          else sqlite3_bind_null(ins, 4 + k);
        }
        sqlite3_step(ins);
        sqlite3_reset(ins);
      }
    }
    fly_db_exec(db, "RELEASE summary", NULL);
  }

  double ess_s = ri.wall > 0 && isfinite(min_ess) ? min_ess / ri.wall : NAN;
  if( fmt == FLY_FMT_CSV ){
    printf("variable");
    for(int k = 0; k < NCOL; k++) printf(",%s", col_name[k]);
    printf("\n");
    for(size_t p = 0; p < P; p++){
      csv_str(names[p]);
      for(int k = 0; k < NCOL; k++){
        if( isfinite(res[p][k]) ) printf(",%.17g", res[p][k]);
        else printf(",NA");
      }
      printf("\n");
    }
  }else if( fmt == FLY_FMT_JSON ){
    printf("{\"run_id\": %lld, \"chains\": %zu, \"draws_per_chain\": %zu, \"warmup\": %lld, "
           "\"z_mode\": ", (long long)run_id, C, n_used, (long long)ri.n_warmup);
    json_str(ri.z);
    printf(", \"status\": ");
    json_str(ri.status);
    printf(", \"acceptance\": "); json_num(acc);
    printf(", \"mean_bright\": "); json_num(nbright);
    printf(", \"lik_evals_per_iter\": "); json_num(nlik);
    printf(", \"rows_read_per_iter\": "); json_num(nreads);
    printf(", \"thinning_waste\": "); json_num(waste);
    printf(", \"sample_seconds\": "); json_num(ri.wall);
    printf(", \"min_ess_bulk_per_second\": "); json_num(ess_s);
    printf(",\n \"variables\": [\n");
    for(size_t p = 0; p < P; p++){
      printf("  {\"variable\": ");
      json_str(names[p]);
      for(int k = 0; k < NCOL; k++){ printf(", \"%s\": ", col_name[k]); json_num(res[p][k]); }
      printf("}%s\n", p + 1 < P ? "," : "");
    }
    printf(" ]}\n");
  }else{
    printf("run %lld: %zu chains x %zu draws (after %lld warm-up), z %s, %s\n",
           (long long)run_id, C, n_used, (long long)ri.n_warmup, ri.z, ri.status);
    printf("%-20s %10s %10s %10s %10s %10s %10s %7s %9s %9s %10s\n", "variable", "mean",
           "median", "sd", "mad", "q5", "q95", "rhat", "ess_bulk", "ess_tail", "mcse_mean");
    for(size_t p = 0; p < P; p++){
      const double *v = res[p];
      printf("%-20.20s %10.4g %10.4g %10.4g %10.4g %10.4g %10.4g %7.3f %9.0f %9.0f %10.3g\n",
             names[p], v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
    }
    if( isfinite(nbright) )
      printf("\nacceptance %.3f; bright rows %.1f (%.3f%% of N = %lld); per iteration %.1f "
             "likelihood evaluations, %.1f rows read\n", acc, nbright,
             100.0 * nbright / (double)ri.n_rows, (long long)ri.n_rows, nlik, nreads);
    if( isfinite(waste) )
      printf("thinning waste %.1f: rows read per iteration / mean bright rows (1 would "
             "read only rows that turn bright)\n", waste);
    if( isfinite(ess_s) )
      printf("min ess_bulk %.0f in %.2f s of sampling (iteration loops): %.1f effective "
             "draws per second\n", min_ess, ri.wall, ess_s);
    if( warn_rhat )
      printf("warning: %zu parameters have R-hat > 1.01: the chains have not mixed; run "
             "longer\n", warn_rhat);
    if( warn_ess )
      printf("warning: %zu parameters have bulk or tail ESS < %zu (100 per chain): "
             "estimates are unreliable; run longer\n", warn_ess, (size_t)(100 * C));
  }
done:
  sqlite3_finalize(st);
  sqlite3_finalize(ins);
  fly_stats_ws_free(ws);
  fly_free(x);
  fly_free(names);
  fly_free(res);
  return rc;
}

int fly_cmd_summary(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "format", FLY_OPT_VALUE, "table (default) | csv | json", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  int64_t run_id = 0;
  fly_format fmt = FLY_FMT_TABLE;
  const char *synopsis = "[RUN_ID] [--db PATH] [--format table|csv|json]";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "summary", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "summary", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "summary", synopsis, &err);
    }
    run_id = v;
  }
  const char *f = fly_args_str(&a, "format", "table");
  if( !strcmp(f, "csv") ) fmt = FLY_FMT_CSV;
  else if( !strcmp(f, "json") ) fmt = FLY_FMT_JSON;
  else if( strcmp(f, "table") ){
    fly_fail(&err, FLY_MISUSE, "--format: '%s' is not table, csv or json", f);
    return fly_usage_error(&a, "summary", synopsis, &err);
  }
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK ) rc = fly_summary_print(db, run_id, fmt, &err);
  fly_db_close(db);
  return fly_report(rc, &err);
}
