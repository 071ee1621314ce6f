/*
 * ppc.c -- `flydb ppc [RUN_ID] [--bins B] [--draws M] [--seed s] [--level
 * q]`: a run's posterior predictive check on its own data (ppc/ppc.h),
 * stored in tables ppc, ppc_bin and ppc_rep and printed as a table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "ppc/ppc.h"
#include "store/db.h"
#include "util/mem.h"

static void print_calibration(const fly_ppc_result *r, const fly_ppc_bin *b, size_t n)
{
  int64_t last = -1;
  printf("run %lld: calibration of %s predictions, %lld rows, %lld draws, %lld bins, "
         "%.0f%% bands (seed %llu)\n", (long long)r->run_id, r->model, (long long)r->N,
         (long long)r->M, (long long)r->bins, 100 * r->level, (unsigned long long)r->seed);
  for(size_t i = 0; i < n; i++){
    if( b[i].part != FLY_PPC_PART_CAL ) continue;
    if( b[i].cls != last ){
      last = b[i].cls;
      if( r->K > 1 ) printf("\nclass %lld (one vs rest)\n", (long long)b[i].cls);
      else printf("\n");
      printf("%-13s %10s %10s %10s %21s\n", "bin", "n", "predicted", "observed",
             "band of observed");
    }
    char bin[32];
    snprintf(bin, sizeof bin, "[%.2f, %.2f%c", b[i].lo, b[i].hi,
             b[i].bin + 1 == r->bins ? ']' : ')');
    if( b[i].n <= 0 ){
      printf("%-13s %10lld %10s %10s %21s\n", bin, 0LL, "-", "-", "-");
      continue;
    }
    int out = b[i].observed < b[i].band_lo || b[i].observed > b[i].band_hi;
    printf("%-13s %10lld %10.4f %10.4f   [%7.4f, %7.4f]%s\n", bin, (long long)b[i].n,
           b[i].predicted, b[i].observed, b[i].band_lo, b[i].band_hi, out ? " *" : "");
  }
  printf("\nexpected calibration error %.4f%s, largest bin error %.4f, accuracy %.4f\n",
         r->ece, r->K > 1 ? " (mean over classes)" : "", r->mce, r->accuracy);
  printf("%lld of %lld non-empty bins outside their band (*; about %.0f%% expected of a "
         "calibrated model)\n", (long long)r->n_outside, (long long)r->n_nonempty,
         100 * (1 - r->level));
}

static void print_residual(const fly_ppc_result *r, const fly_ppc_bin *b, size_t n)
{
  printf("run %lld: standardised residuals (y - x'b)/sigma at the posterior mean against "
         "Student-t(%g), sigma %g, %lld rows, %lld draws, %.0f%% bands (seed %llu)\n\n",
         (long long)r->run_id, r->nu, r->sigma, (long long)r->N, (long long)r->M,
         100 * r->level, (unsigned long long)r->seed);
  printf("%-13s %12s %12s %10s %10s %21s\n", "PIT bin", "n", "expected n", "observed",
         "expected", "band of observed");
  for(size_t i = 0; i < n; i++)
    if( b[i].part == FLY_PPC_PART_PIT ){
      int out = b[i].observed < b[i].band_lo || b[i].observed > b[i].band_hi;
      printf("[%.2f, %.2f%c %12lld %12.1f %10.4f %10.4f   [%7.4f, %7.4f]%s\n", b[i].lo,
             b[i].hi, b[i].bin + 1 == r->bins ? ']' : ')', (long long)b[i].n,
             b[i].predicted * (double)r->N, b[i].observed, b[i].predicted, b[i].band_lo,
             b[i].band_hi, out ? " *" : "");
    }
  printf("%lld of %lld PIT bins outside their %.0f%% band (*; about %.0f%% expected of a "
         "model that fits)\n", (long long)r->n_outside, (long long)r->bins, 100 * r->level,
         100 * (1 - r->level));
  printf("\n%-13s %12s %12s\n", "quantile", "t", "residual");
  for(size_t i = 0; i < n; i++)
    if( b[i].part == FLY_PPC_PART_QQ && (b[i].bin % 10 == 0 || b[i].bin == FLY_PPC_QQ - 1) )
      printf("%-13.3f %12.4f %12.4f\n", b[i].lo, b[i].predicted, b[i].observed);
  printf("\n%-13s %12s %12s %12s\n", "tail |r| >", "rows", "observed", "expected");
  for(size_t i = 0; i < n; i++)
    if( b[i].part == FLY_PPC_PART_TAIL )
      printf("%-13.4f %12lld %12.5f %12.5f\n", b[i].hi, (long long)b[i].n, b[i].observed,
             b[i].predicted);
}

int fly_cmd_ppc(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "bins", FLY_OPT_VALUE, "equal-width bins of the predicted probability, or of the "
      "residuals' PIT (default 10, at most 1000)", 0, 0 },
    { "draws", FLY_OPT_VALUE, "posterior draws used, at most (default 200; chains pooled, "
      "thinned evenly)", 0, 0 },
    { "seed", FLY_OPT_VALUE, "seed of the replicated targets (robust: residuals) of the "
      "bands (default 1)", 0, 0 },
    { "level", FLY_OPT_VALUE, "central probability of the bands (default 0.9)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  fly_ppc_opts o;
  fly_ppc_result r;
  fly_ppc_bin *b = NULL;
  size_t nb = 0;
  int64_t run_id = 0, v;
  const char *synopsis = "[RUN_ID] [--db PATH] [--bins B] [--draws M] [--seed s] [--level q]";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "ppc", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "ppc", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long x = strtoll(a.pos[0], &end, 10);
    if( *end || x <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "ppc", synopsis, &err);
    }
    run_id = x;
  }
  fly_ppc_opts_default(&o);
  if( fly_args_int(&a, "bins", o.bins, 1, FLY_PPC_MAX_BINS, &o.bins, &err) ||
      fly_args_int(&a, "draws", o.max_draws, 2, 1000000, &o.max_draws, &err) ||
      fly_args_int(&a, "seed", 1, 0, INT64_MAX, &v, &err) ||
      fly_args_real(&a, "level", o.level, 1e-6, 1 - 1e-6, &o.level, &err) )
    return fly_usage_error(&a, "ppc", synopsis, &err);
  o.seed = (uint64_t)v;
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), 0, &db, &err);
  if( rc == FLY_OK ) rc = fly_ppc_run(db, run_id, &o, &r, &err);
  if( rc == FLY_OK ) rc = fly_ppc_load(db, r.run_id, &r, &b, &nb, &err);
  if( rc == FLY_OK ){
    if( r.kind == FLY_PPC_RESIDUAL ) print_residual(&r, b, nb);
    else print_calibration(&r, b, nb);
  }
  fly_free(b);
  fly_db_close(db);
  return fly_report(rc, &err);
}
