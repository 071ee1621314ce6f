/*
 * sample.c -- `flydb sample`: the options of a sampling job parsed into a
 * fly_run_cfg, the job run by the library's run driver (run/run.h) with a
 * progress line, and what it did printed: the profile, the timing and the
 * posterior summary.
 *
 * ^C or SIGTERM asks the driver to stop the chains at a checkpoint; the
 * run can then be continued with --resume, which the driver does from the
 * run's stored typed configuration.
 */
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "modelopt.h"
#include "mpi/comm.h"
#include "progress.h"
#include "run/run.h"
#include "store/db.h"

static atomic_int g_stop;
static void on_sigint(int s) { (void)s; atomic_store(&g_stop, 1); }

static fly_opt sample_opts_tmpl[] = {
  { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
  { "data", FLY_OPT_VALUE, "data set name (default: the only one)", 0, 0 },
  FLY_MODEL_OPTS,
  { "iters", FLY_OPT_VALUE, "post-warm-up iterations per chain (default 1000)", 0, 0 },
  { "warmup", FLY_OPT_VALUE, "warm-up iterations (default iters/2)", 0, 0 },
  { "chains", FLY_OPT_VALUE, "number of chains, run in parallel (default 2)", 0, 0 },
  { "seed", FLY_OPT_VALUE, "RNG seed (default: from the clock; stored)", 0, 0 },
  { "thin", FLY_OPT_VALUE, "keep every K-th iteration (default 1)", 0, 0 },
  { "z", FLY_OPT_VALUE, "gibbs | implicit[=q_db] | explicit[=fraction] (default: with none "
                        "of --z, --regular, --sampler and the other sampler options, flydb "
                        "chooses gibbs with mh, gibbs with nuts or --regular with nuts by "
                        "estimated cost per effective draw, and says why; else gibbs with "
                        "MAP bounds, implicit=0.1 with fixed)", 0, 0 },
  { "regular", FLY_OPT_FLAG, "full-data MCMC (every z = 1)", 0, 0 },
  { "bounds", FLY_OPT_VALUE, "map (default) | fixed[=xi] (untuned, xi 1.5)", 0, 0 },
  { "sampler", FLY_OPT_VALUE, "theta kernel: mh | mala | slice | hmc | nuts (default: "
                              "chosen, see --z; mh when --z or --regular is given)", 0, 0 },
  { "theta-steps", FLY_OPT_VALUE, "theta updates per z update (default 32 with --z gibbs "
                                  "and --sampler mh, else 1)", 0, 0 },
  { "leapfrog", FLY_OPT_VALUE, "hmc: at most L leapfrog steps an update, uniform on 1..L "
                               "(default 16)", 0, 0 },
  { "proposal", FLY_OPT_VALUE, "laplace (default) | isotropic (the paper's): the "
                               "kernel's preconditioner", 0, 0 },
  { "step", FLY_OPT_VALUE, "initial step size (default by kernel; slice: interval "
                           "width); adapted during warm-up", 0, 0 },
  { "init", FLY_OPT_VALUE, "laplace (default: a draw around the MAP) | map", 0, 0 },
  { "cache-mb", FLY_OPT_VALUE, "decoded-page cache per chain in MiB (default: a quarter "
                               "of RAM shared by the chains, at least 256); where it "
                               "holds every row, the rows are decoded once into memory "
                               "that every chain reads instead; gibbs scans "
                               "also keep every row's bound coefficients in it when they "
                               "fit half of what the data pages leave, and for logistic "
                               "an f32 copy of every row if that fits too, so a scan "
                               "reads only rows a single-precision bound cannot rule "
                               "out", 0, 0 },
  { "scan-frac", FLY_OPT_VALUE, "gibbs: scan when expected candidates exceed this "
                                "fraction of N (default 0.25)", 0, 0 },
  { "sketch", FLY_OPT_VALUE, "gibbs: on | off: keep 15 bytes a row that bound each row's "
                             "linear predictors, so most thinned candidates are rejected "
                             "without a read (default on; it changes which rows are "
                             "read, not the chain's draws)", 0, 0 },
  { "bright-floor", FLY_OPT_VALUE, "FlyMC: every row is bright with probability at least F, "
                                   "the bounds times 1 - F (still lower bounds: the chain stays "
                                   "exact); a few rows bright at random loosen the coupling "
                                   "of z and theta (default: 4 P / N, at most 0.01; 0: off)",
                                   0, 0 },
  { "full-logpost-every", FLY_OPT_VALUE, "every K iterations store the exact full-data "
                                         "log posterior (a full scan; off by default)", 0, 0 },
  { "checkpoint-every", FLY_OPT_VALUE, "commit draws and a checkpoint every K "
                                       "iterations (default 1000; also every 2 s)", 0, 0 },
  { "resume", FLY_OPT_VALUE, "continue interrupted run RUN_ID", 0, 0 },
  { "profile", FLY_OPT_FLAG, "report where the sampling loop's wall time goes (theta, "
                            "z, row reads, page decoding, writing, other; stored in "
                            "table profile)", 0, 0 },
  { "quiet", FLY_OPT_FLAG, "no summary at the end", 0, 0 },
  { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
  { NULL, 0, NULL, 0, 0 },
};

#define NOPTS (sizeof sample_opts_tmpl / sizeof sample_opts_tmpl[0])
static const char *synopsis = "[options]";

/* The options into c (fly_run_cfg_default first).  FLY_MISUSE naming the
 * option for a value that cannot be parsed or is out of range; the library
 * checks how they fit together. */
static fly_rc parse(fly_args *a, fly_run_cfg *c, fly_err *err)
{
  fly_rc rc;
  const char *s;
  int64_t v;
  fly_run_cfg_default(c);
  for(const fly_opt *o = a->opts; o->name; o++)
    if( o->set ) c->given |= fly_run_given_bit(o->name);
  c->data = fly_args_str(a, "data", NULL);
  if( (rc = fly_modelopt_spec(a, &c->model, err)) ) return rc;
  if( (rc = fly_args_int(a, "iters", 1000, 1, INT64_C(1) << 40, &c->iters, err)) ) return rc;
  if( (rc = fly_args_int(a, "warmup", c->iters / 2, 0, INT64_C(1) << 40, &c->warmup, err)) ) return rc;
  if( (rc = fly_args_int(a, "chains", 2, 1, FLY_RUN_MAX_CHAINS, &c->chains, err)) ) return rc;
  if( (rc = fly_args_int(a, "thin", 1, 1, INT64_C(1) << 30, &c->thin, err)) ) return rc;
  if( fly_args_set(a, "cache-mb") &&
      (rc = fly_args_int(a, "cache-mb", 0, 1, INT64_C(1) << 20, &c->cache_mb, err)) ) return rc;
  if( (rc = fly_args_int(a, "checkpoint-every", 1000, 1, INT64_C(1) << 40,
                         &c->checkpoint_every, err)) ) return rc;
  if( (rc = fly_args_int(a, "full-logpost-every", 0, 0, INT64_C(1) << 40,
                         &c->full_logpost_every, err)) ) return rc;
  if( (rc = fly_args_real(a, "scan-frac", 0.25, 0.0, 1e9, &c->scan_frac, err)) ) return rc;
  if( fly_args_set(a, "bright-floor") &&
      (rc = fly_args_real(a, "bright-floor", 0.0, 0.0, 0.5, &c->bright_floor, err)) ) return rc;
  const char *sk = fly_args_str(a, "sketch", NULL);
  if( sk && strcmp(sk, "on") == 0 ) c->sketch = 1;
  else if( sk && strcmp(sk, "off") == 0 ) c->sketch = 0;
  else if( sk )
    return fly_fail(err, FLY_MISUSE, "--sketch: '%s' is not on or off", sk);
  if( (rc = fly_args_int(a, "seed", -1, 0, INT64_MAX, &v, err)) ) return rc;
  if( v >= 0 ){ c->seed = (uint64_t)v; c->seed_set = 1; }

  s = fly_args_str(a, "bounds", "map");
  if( strcmp(s, "map") == 0 ) c->bounds_fixed = 0;
  else if( strncmp(s, "fixed", 5) == 0 && (s[5] == 0 || s[5] == '=') ){
    c->bounds_fixed = 1;
    if( s[5] == '=' ){
      char *end;
      c->fixed_xi = strtod(s + 6, &end);
      if( end == s + 6 || *end || !(c->fixed_xi > 0) || !isfinite(c->fixed_xi) )
        return fly_fail(err, FLY_MISUSE, "--bounds fixed=X: '%s' is not a positive number", s + 6);
    }
  }else return fly_fail(err, FLY_MISUSE, "--bounds: '%s' is not map or fixed[=xi]", s);

  if( fly_args_set(a, "regular") ){
    if( fly_args_set(a, "z") )
      return fly_fail(err, FLY_MISUSE, "--regular and --z conflict: regular MCMC has no z");
    c->z = FLY_Z_REGULAR;
    c->z_set = 1;
  }else if( (s = fly_args_str(a, "z", NULL)) ){
    const char *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    if( n == 5 && strncmp(s, "gibbs", 5) == 0 && !eq ) c->z = FLY_Z_GIBBS;
    else if( n == 8 && strncmp(s, "implicit", 8) == 0 ) c->z = FLY_Z_IMPLICIT;
    else if( n == 8 && strncmp(s, "explicit", 8) == 0 ) c->z = FLY_Z_EXPLICIT;
    else return fly_fail(err, FLY_MISUSE, "--z: '%s' is not gibbs, implicit[=q] or explicit[=f]", s);
    c->z_set = 1;
    if( eq ){
      char *end;
      c->z_param = strtod(eq + 1, &end);
      if( end == eq + 1 || *end || !(c->z_param > 0 && c->z_param <= 1) )
        return fly_fail(err, FLY_MISUSE, "--z %.*s=X: X must be in (0, 1]", (int)n, s);
    }
  }
  s = fly_args_str(a, "sampler", "mh");
  int kern = fly_kernel_find(s);
  if( kern < 0 )
    return fly_fail(err, FLY_MISUSE, "--sampler: '%s' is not mh, mala, slice, hmc or nuts", s);
  c->kernel = (fly_kernel)kern;
  if( (rc = fly_args_int(a, "leapfrog", 16, 1, 100000, &c->leapfrog, err)) ) return rc;
  if( fly_args_set(a, "theta-steps") &&
      (rc = fly_args_int(a, "theta-steps", 1, 1, 1000000, &c->theta_steps, err)) ) return rc;
  s = fly_args_str(a, "proposal", "laplace");
  if( strcmp(s, "isotropic") == 0 ) c->isotropic = 1;
  else if( strcmp(s, "laplace") != 0 )
    return fly_fail(err, FLY_MISUSE, "--proposal: '%s' is not laplace or isotropic", s);
  s = fly_args_str(a, "init", "laplace");
  if( strcmp(s, "map") == 0 ) c->init_map = 1;
  else if( strcmp(s, "laplace") != 0 )
    return fly_fail(err, FLY_MISUSE, "--init: '%s' is not laplace or map", s);
  if( (rc = fly_args_real(a, "step", 0, 0, 1e6, &c->step, err)) ) return rc;
  if( fly_args_set(a, "step") && !(c->step > 0) )
    return fly_fail(err, FLY_MISUSE, "--step must be positive");
  c->profile = fly_args_set(a, "profile");
  return FLY_OK;
}

/* ---- what the driver reports ----------------------------------------- */

typedef struct ui {
  fly_progress pg;
  int          quiet;
  int64_t      theta_steps;
} ui;

static int on_progress(void *ctx, const fly_run_progress *p)
{
  ui *u = ctx;
  if( fly_progress_due(&u->pg) ){
    double t = fly_now() - u->pg.t0, rate = t > 0 ? (double)(p->done - p->start) / t : 0;
    fly_progress_draw(&u->pg, "sample: %lld/%lld iterations, %.0f it/s, bright %.2f%%, "
                      "accept %.2f, ETA %.0fs", (long long)p->done, (long long)p->total, rate,
                      100.0 * p->bright_frac, p->accept,
                      rate > 0 ? (double)(p->total - p->done) / rate : 0.0);
  }
  return atomic_load(&g_stop);
}

static void on_message(void *ctx, const char *line)
{
  ui *u = ctx;
  if( !u->quiet ) fprintf(stderr, "%s\n", line);
}

/* --profile: each chain's and the total share of the sampling loop per
 * part (stored by the driver in table profile). */
static void print_profile(const fly_run_result *r)
{
  double tot[FLY_PROF_N] = {0}, all = 0;
  int64_t n_it = 0;
  int n = r->chains < FLY_RUN_MAX_CHAINS ? r->chains : FLY_RUN_MAX_CHAINS;
  for(int c = 0; c < n; c++){
    n_it += r->prof_iters[c];
    for(int k = 0; k < FLY_PROF_N; k++){ tot[k] += r->prof[c].t[k]; all += r->prof[c].t[k]; }
  }
  fprintf(stderr, "profile of the sampling loop (exclusive wall time: a row read inside "
          "the z step counts as read, a page fetch inside a read as decode)\n%-8s", "part");
  for(int c = 0; c < n; c++) fprintf(stderr, "  chain %-2d", c + 1);
  fprintf(stderr, "     total  us/iter\n");
  for(int k = 1; k <= FLY_PROF_N; k++){
    int part = k % FLY_PROF_N;          /* "other" last */
    fprintf(stderr, "%-8s", fly_prof_name((fly_prof_part)part));
    for(int c = 0; c < n; c++){
      double sum = fly_prof_total(&r->prof[c]);
      fprintf(stderr, " %8.1f%%", sum > 0 ? 100.0 * r->prof[c].t[part] / sum : 0.0);
    }
    fprintf(stderr, " %8.1f%% %8.2f\n", all > 0 ? 100.0 * tot[part] / all : 0.0,
            n_it > 0 ? 1e6 * tot[part] / (double)n_it : 0.0);
  }
  fprintf(stderr, "%-8s", "seconds");
  for(int c = 0; c < n; c++) fprintf(stderr, " %9.2f", fly_prof_total(&r->prof[c]));
  fprintf(stderr, " %9.2f %8.2f\n", all, n_it > 0 ? 1e6 * all / (double)n_it : 0.0);
}

/* Run (resume_id 0) or resume, and report.  Exit status. */
static int run(const char *db_path, const fly_run_cfg *cfg, int64_t resume_id, int quiet,
               int profile)
{
  ui u = { .quiet = quiet };
  fly_run_hooks hooks = { on_progress, on_message, &u };
  fly_run_result res;
  fly_err err = {0};
  fly_rc rc;

  signal(SIGINT, on_sigint);
  signal(SIGTERM, on_sigint);
  fly_progress_start(&u.pg);
  if( resume_id > 0 )
    rc = fly_run_resume(db_path, resume_id, 0, profile, !quiet, &hooks, &res, &err);
  else
    rc = fly_run_sample(db_path, cfg, &hooks, &res, &err);
  fly_progress_end(&u.pg);
  if( res.usage ){
    fprintf(stderr, "flydb sample: %s\n", err.msg);
    return 2;
  }
  /* The ranks of a sharded run hold the same result: rank 0 reports it. */
  if( (rc == FLY_OK || rc == FLY_DONE) && fly_comm_launch_rank() != 0 )
    return rc == FLY_OK ? 0 : 1;
  if( (rc == FLY_OK || rc == FLY_DONE) && res.profiled ) print_profile(&res);
  if( rc == FLY_DONE ){
    fprintf(stderr, "flydb: interrupted; every chain stopped at a checkpoint. Continue "
            "with: flydb sample --db %s --resume %lld\n", db_path, (long long)res.run_id);
    return 1;
  }
  if( rc == FLY_OK && !quiet ){
    fly_db *db = NULL;
    fprintf(stderr, "run %lld done in %.2f s; iterations %.2f s (%.3g ms per iteration "
            "per chain%s)\n", (long long)res.run_id, res.wall, res.loop,
            res.iters_done > 0 ? 1e3 * res.loop * (double)res.chains / (double)res.iters_done
                               : 0.0,
            profile ? "" : "; --profile shows where the time goes");
    if( cfg && cfg->full_logpost_every > 0 )
      fprintf(stderr, "full-data log posterior every %lld iterations: %.2f s of chain time "
              "(%.1f%% of the iteration loops)\n", (long long)cfg->full_logpost_every,
              res.full_seconds, res.loop > 0 ? 100.0 * res.full_seconds /
                                               (res.loop * (double)res.chains) : 0.0);
    rc = fly_db_open(db_path, 0, &db, &err);
    if( rc == FLY_OK ) rc = fly_summary_print(db, res.run_id, FLY_FMT_TABLE, &err);
    fly_db_close(db);
  }
  if( rc ){
    fprintf(stderr, "flydb: %s\n", err.msg[0] ? err.msg : fly_rc_str(rc));
    if( rc == FLY_NOMEM )   /* the two knobs that decide most of the memory */
      fprintf(stderr, "flydb sample: every chain has its own decoded-page cache of "
              "--cache-mb %lld MiB beside the shared thinning index; a smaller "
              "--cache-mb or fewer --chains needs less\n", (long long)res.cache_mb);
    return 1;
  }
  return 0;
}

int fly_cmd_sample(int argc, char **argv)
{
  fly_opt opts[NOPTS];
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  memcpy(opts, sample_opts_tmpl, sizeof opts);
  if( fly_args_parse(&a, argc, argv, 0, &err) ) return fly_usage_error(&a, "sample", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "sample", synopsis); return 0; }
  const char *dbp = fly_args_str(&a, "db", "flydb.db");
  int quiet = fly_args_set(&a, "quiet"), profile = fly_args_set(&a, "profile");
  if( !fly_args_set(&a, "resume") ){
    fly_run_cfg cfg;
    if( parse(&a, &cfg, &err) ){
      fprintf(stderr, "flydb sample: %s\n", err.msg);
      return 2;
    }
    cfg.verbose = !quiet;
    return run(dbp, &cfg, 0, quiet, profile);
  }

  /* --resume RUN_ID: only --db (and --quiet, --profile) may accompany it. */
  int64_t run_id;
  if( fly_args_int(&a, "resume", 0, 1, INT64_MAX, &run_id, &err) )
    return fly_usage_error(&a, "sample", synopsis, &err);
  for(fly_opt *o = opts; o->name; o++)
    if( o->set && strcmp(o->name, "resume") && strcmp(o->name, "db") && strcmp(o->name, "quiet") &&
        strcmp(o->name, "profile") ){
      fly_fail(&err, FLY_MISUSE, "--resume continues a run with its stored options; "
               "--%s cannot be changed", o->name);
      return fly_usage_error(&a, "sample", synopsis, &err);
    }
  return run(dbp, NULL, run_id, quiet, profile);
}
