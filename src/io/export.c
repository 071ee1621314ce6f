/*
 * export.c -- a run's draws as CmdStan CSV or long/wide CSV (export.h).
 *
 * CmdStan: one file per chain, DIR/<run>_chain<k>.csv (k from 1),
 * laid out as CmdStan's `sample` output, for cmdstanr's read_cmdstan_csv()
 * (and posterior's draws from it) and ArviZ's from_cmdstan():
 *   - '#' comment lines with CmdStan's "key = value" configuration (model
 *     flydb_<model>, method = sample, num_samples, num_warmup, save_warmup,
 *     thin, id = chain, data file, seed, output file) and flydb's own keys;
 *   - the header: lp__, accept_stat__ and friends (stepsize__, n_bright__,
 *     n_lik_evals__, n_reads__ -- names ending in "__" are sampler
 *     diagnostics to every reader), then the parameters;
 *   - warm-up rows when --warmup (save_warmup = 1), "# Adaptation
 *     terminated", "# Step size = ..", the post-warm-up rows, and the
 *     "Elapsed Time" trailer.
 * Parameters are named theta.1 .. theta.P, as CmdStan names the elements of
 * `vector[P] theta` (cmdstanr shows theta[1], ArviZ one variable theta of
 * length P), because data-set column names such as "(Intercept)" or "x.1"
 * are not Stan identifiers and a '.' would be read as an index.  The
 * original names, in order, are in the comment line
 *   # flydb parameter names: "(Intercept)","x"
 * (CSV-quoted).  lp__ is the log joint log p(theta, z | x) up to a
 * constant (table iteration), accept_stat__ the fraction of the
 * iteration's theta proposals accepted (0 or 1 with one theta update per
 * iteration), stepsize__ the proposal scale.  A run whose kernel reports
 * step statistics (NUTS: kernel.h stats) has Stan's columns in Stan's order,
 * lp__, accept_stat__, stepsize__, treedepth__, n_leapfrog__, divergent__,
 * energy__, before flydb's own, and its accept_stat__ is Stan's: the mean of
 * min(1, exp(H0 - H)) over the tree; an iteration stored without them (by
 * an older flydb) has nan there.  Other runs' files are as before.
 * Readers split warm-up from sampling rows by num_warmup / thin (cmdstanr
 * rounds up, ArviZ down) while flydb keeps iterations thin, 2 thin, .. of
 * 1..warmup+iters, so when thin does not divide warmup or iters the header
 * states num_warmup and num_samples as the kept counts times thin (a
 * comment line gives the run's values).  Readers need chains of one
 * length: an unfinished run is exported up to the iterations every chain
 * has finished (fly_export_plan.partial: the caller warns).  flydb keeps one loop time per run (the
 * slowest chain); the trailer splits it between warm-up and sampling in
 * proportion to the iterations.
 *
 * CSV: DIR/<run>_draws.csv, long (run_id,chain,iter,name,value,
 * warmup) as the draws_named view, and DIR/<run>_wide.csv (chain,iter,
 * warmup, then one column per parameter named as in the data set), every
 * stored draw of every chain.
 *
 * Both formats: chains are numbered from 1 as in CmdStan and posterior (the
 * draw table numbers them from 0); iterations keep their numbers
 * (1..warmup+iters, warm-up first); warm-up draws only when asked for.
 * Values are written in the shortest form that reads back as the same
 * double (%.15g, %.16g or %.17g), so an export round-trips exactly.
 * Files are written as "<name>.tmp" and renamed when all are complete.
 *
 * Cost: one ordered range scan of each chain's trace (fly_trace_scan);
 * memory O(P).
 */
#include "io/export.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "samplers/kernel.h"
#include "util/mem.h"

#define PATH_CAP 4096

/* ---- small helpers ------------------------------------------------------ */

/* v in the shortest of %.15g/%.16g/%.17g that reads back as v; non-finite
 * values as nan/inf spelled by the format's convention. */
static void fmt_real(char *b, size_t cap, double v, int cmdstan)
{
  if( isnan(v) ){ snprintf(b, cap, "%s", cmdstan ? "nan" : "NaN"); return; }
  if( isinf(v) ){ snprintf(b, cap, "%s%s", v < 0 ? "-" : "", cmdstan ? "inf" : "Inf"); return; }
  for(int p = 15; p <= 17; p++){
    snprintf(b, cap, "%.*g", p, v);
    if( strtod(b, NULL) == v ) return;
  }
}

/* s as one CSV field (RFC 4180: quoted when it holds , " CR LF or
 * surrounding blanks, quotes doubled). */
static void put_field(FILE *f, const char *s, int always_quote)
{
  size_t n = strlen(s);
  int q = always_quote || strpbrk(s, ",\"\r\n") || (n && (s[0] == ' ' || s[n - 1] == ' '));
  if( !q ){ fputs(s, f); return; }
  fputc('"', f);
  for( ; *s; s++){
    if( *s == '"' ) fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* Text for a '#' comment line: control characters become '?'. */
static void put_comment_text(FILE *f, const char *s)
{
  for( ; *s; s++) fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
}


/* ---- output files: written as <path>.tmp, renamed together at the end -- */

typedef struct outfile {
  FILE *f;
  char  path[PATH_CAP], tmp[PATH_CAP + 8];
  int   written;            /* tmp closed without error */
} outfile;

static fly_rc out_open(outfile *o, const char *dir, const char *name, fly_err *err)
{
  if( snprintf(o->path, sizeof o->path, "%s/%s", dir, name) >= (int)sizeof o->path )
    return fly_fail(err, FLY_RANGE, "%s: path too long for %s", dir, name);
  snprintf(o->tmp, sizeof o->tmp, "%s.tmp", o->path);
  o->f = fopen(o->tmp, "w");
  if( !o->f ) return fly_fail(err, FLY_IO, "cannot create %s: %s", o->tmp, strerror(errno));
  setvbuf(o->f, NULL, _IOFBF, 1 << 16);
  return FLY_OK;
}

static fly_rc out_close(outfile *o, fly_err *err)
{
  int bad = ferror(o->f);
  bad |= fclose(o->f) != 0;
  o->f = NULL;
  if( bad ) return fly_fail(err, FLY_IO, "writing %s: %s", o->tmp, strerror(errno));
  o->written = 1;
  return FLY_OK;
}

/* Rename every file into place if ok, else remove them all. */
static fly_rc out_finish(outfile *o, size_t n, int ok, fly_err *err)
{
  fly_rc rc = FLY_OK;
  for(size_t i = 0; i < n; i++){
    if( o[i].f ){ fclose(o[i].f); o[i].f = NULL; }
    if( !o[i].tmp[0] ) continue;
    if( ok && o[i].written && rc == FLY_OK ){
      if( rename(o[i].tmp, o[i].path) != 0 )
        rc = fly_fail(err, FLY_IO, "renaming %s: %s", o[i].tmp, strerror(errno));
    }else{
      remove(o[i].tmp);
    }
  }
  return rc;
}

/* ---- --format cmdstan --------------------------------------------------- */

static void cmdstan_header(FILE *f, fly_trace_reader *tr, int64_t c, const char *file,
                           int warm, int64_t num_warmup, int64_t num_samples, int exact,
                           int kstats)
{
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  const char *dflt = " (Default)";
  size_t P = ri->n_params;
  fprintf(f, "# model = flydb_");
  put_comment_text(f, ri->model);
  fprintf(f, "\n# method = sample (Default)\n#   sample\n");
  fprintf(f, "#     num_samples = %lld%s\n", (long long)num_samples,
          exact && fly_trace_option_default(tr, "iters") ? dflt : "");
  fprintf(f, "#     num_warmup = %lld%s\n", (long long)num_warmup,
          exact && fly_trace_option_default(tr, "warmup") ? dflt : "");
  fprintf(f, "#     save_warmup = %d%s\n", warm, warm ? "" : dflt);
  fprintf(f, "#     thin = %lld%s\n", (long long)ri->thin,
          fly_trace_option_default(tr, "thin") ? dflt : "");
  fprintf(f, "#     adapt\n#       engaged = %d\n", ri->n_warmup > 0);
  fprintf(f, "#     algorithm = ");
  put_comment_text(f, ri->sampler);
  fprintf(f, "\n#       ");
  put_comment_text(f, ri->sampler);
  fprintf(f, "\n#         z_mode = ");
  put_comment_text(f, ri->z_mode);
  fprintf(f, "\n# id = %lld\n# data\n#   file = ", (long long)c + 1);
  put_comment_text(f, ri->source);
  fprintf(f, "\n# random\n#   seed = %llu%s\n", (unsigned long long)ri->seed,
          fly_trace_option_default(tr, "seed") ? dflt : "");
  fprintf(f, "# output\n#   file = %s\n", file);
  fprintf(f, "# flydb_version = ");
  put_comment_text(f, ri->version);
  fprintf(f, "\n# flydb_run = %lld\n# flydb_dataset = ", (long long)ri->id);
  put_comment_text(f, ri->dataset);
  fprintf(f, "\n# flydb_status = ");
  put_comment_text(f, ri->status);
  fprintf(f, "\n");
  if( !exact )
    fprintf(f, "# flydb: the run has warmup %lld, iters %lld, thin %lld; num_warmup and "
            "num_samples above are the kept draws times thin\n", (long long)ri->n_warmup,
            (long long)ri->n_iters, (long long)ri->thin);
  fprintf(f, "# flydb parameter names: ");
  for(size_t p = 0; p < P; p++){
    if( p ) fputc(',', f);
    /* CSV-quoted; a line break inside a name would end the comment */
    const char *s = fly_trace_param_name(tr, p);
    fputc('"', f);
    for( ; *s; s++){
      if( *s == '"' ) fputc('"', f);
      fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
    }
    fputc('"', f);
  }
  fprintf(f, "\nlp__,accept_stat__,stepsize__%s,n_bright__,n_lik_evals__,n_reads__",
          kstats ? ",treedepth__,n_leapfrog__,divergent__,energy__" : "");
  for(size_t p = 0; p < P; p++) fprintf(f, ",theta.%zu", p + 1);
  fputc('\n', f);
}

/* kstats: the run's kernel reports step statistics (the header has their
 * columns). */
static void cmdstan_row(FILE *f, const fly_trace_row *row, const double *th, size_t P,
                        int kstats)
{
  char b[40];
  fmt_real(b, sizeof b, row->log_joint, 1);
  fputs(b, f);
  if( !kstats ){
    fprintf(f, ",%.17g,", row->accepted);
  }else{
    fmt_real(b, sizeof b, row->has_kstats ? row->accept_stat : NAN, 1);
    fprintf(f, ",%s,", b);
  }
  fmt_real(b, sizeof b, row->step_size, 1);
  fputs(b, f);
  if( kstats && row->has_kstats ){
    fmt_real(b, sizeof b, row->energy, 1);
    fprintf(f, ",%d,%lld,%d,%s", row->treedepth, (long long)row->n_leapfrog,
            row->divergent, b);
  }else if( kstats ){
    fputs(",nan,nan,nan,nan", f);
  }
  fprintf(f, ",%lld,%lld,%lld", (long long)row->n_bright, (long long)row->n_lik,
          (long long)row->n_reads);
  for(size_t p = 0; p < P; p++){
    fmt_real(b, sizeof b, th[p], 1);
    fputc(',', f);
    fputs(b, f);
  }
  fputc('\n', f);
}

fly_rc fly_export_cmdstan_plan(fly_trace_reader *tr, int warm, fly_export_plan *plan,
                               fly_err *err)
{
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  int64_t Kw = INT64_MAX, Ks = INT64_MAX;
  int64_t full_w = ri->n_warmup / ri->thin;
  int64_t full_s = (ri->n_warmup + ri->n_iters) / ri->thin - full_w;
  fly_rc rc;

  memset(plan, 0, sizeof *plan);
  for(size_t c = 0; c < ri->n_chains; c++){
    size_t nw, ns;
    if( (rc = fly_trace_chain_len(tr, c, &nw, &ns, err)) ) return rc;
    if( (int64_t)nw < Kw ) Kw = (int64_t)nw;
    if( (int64_t)ns < Ks ) Ks = (int64_t)ns;
  }
  if( Ks == 0 )
    return fly_fail(err, FLY_RANGE, "run %lld has no post-warm-up draws in every chain yet",
                    (long long)ri->id);
  plan->warm = warm;
  plan->n_warm = Kw;
  plan->n_post = Ks;
  plan->partial = Kw < full_w || Ks < full_s;
  /* header counts: ceil and floor of num / thin must both give the rows */
  plan->exact = Kw == full_w && Ks == full_s && ri->n_warmup % ri->thin == 0 &&
                ri->n_iters % ri->thin == 0;
  plan->num_warmup = plan->exact ? ri->n_warmup : Kw * ri->thin;
  plan->num_samples = plan->exact ? ri->n_iters : Ks * ri->thin;
  return FLY_OK;
}

fly_rc fly_export_cmdstan_chain(fly_trace_reader *tr, const fly_export_plan *plan, size_t c,
                                const char *file_name, FILE *f, fly_err *err)
{
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  size_t P = ri->n_params;
  double *th = fly_alloc_array(P, sizeof *th);
  double secs = isnan(ri->sample_seconds) ? 0 : ri->sample_seconds;
  double frac_w = (ri->n_warmup + ri->n_iters) > 0 ?
      (double)ri->n_warmup / (double)(ri->n_warmup + ri->n_iters) : 0;
  int64_t n_w = 0, n_s = 0;
  const fly_kernel_type *kt = fly_kernel_type_find(ri->sampler);
  int kstats = kt && kt->stats;
  fly_rc rc;

  if( !th ) return fly_fail(err, FLY_NOMEM, "export");
  cmdstan_header(f, tr, (int64_t)c, file_name, plan->warm, plan->num_warmup,
                 plan->num_samples, plan->exact, kstats);
  if( (rc = fly_trace_scan_start(tr, c, plan->warm ? 0 : ri->n_warmup, err)) ) goto done;
  for(;;){
    fly_trace_row row;
    int64_t iter;
    rc = fly_trace_scan_next(tr, &iter, &row, th, err);
    if( rc == FLY_DONE ){ rc = FLY_OK; break; }
    if( rc != FLY_ROW ) goto done;
    rc = FLY_OK;
    if( iter <= ri->n_warmup ){
      if( n_w++ >= plan->n_warm ) continue;
    }else{
      if( n_s == 0 ){
        char b[40];
        if( ri->n_warmup > 0 ) fputs("# Adaptation terminated\n", f);
        fmt_real(b, sizeof b, row.step_size, 1);
        fprintf(f, "# Step size = %s\n", b);
      }
      if( n_s++ >= plan->n_post ) break;
    }
    cmdstan_row(f, &row, th, P, kstats);
  }
  fprintf(f, "# \n#  Elapsed Time: %.3f seconds (Warm-up)\n"
             "#                %.3f seconds (Sampling)\n"
             "#                %.3f seconds (Total)\n# \n",
          secs * frac_w, secs * (1 - frac_w), secs);
done:
  fly_free(th);
  return rc;
}

/* ---- --format csv ------------------------------------------------------- */

fly_rc fly_export_csv(fly_trace_reader *tr, int warm, FILE *lf, FILE *wf, size_t *n_rows,
                      fly_err *err)
{
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  size_t C = ri->n_chains, P = ri->n_params;
  double *th = fly_alloc_array(P, sizeof *th);
  fly_rc rc = FLY_OK;

  *n_rows = 0;
  if( !th ) return fly_fail(err, FLY_NOMEM, "export");
  fputs("run_id,chain,iter,name,value,warmup\n", lf);
  fputs("chain,iter,warmup", wf);
  for(size_t p = 0; p < P; p++){
    fputc(',', wf);
    put_field(wf, fly_trace_param_name(tr, p), 0);
  }
  fputc('\n', wf);

  for(size_t c = 0; c < C; c++){
    if( (rc = fly_trace_scan_start(tr, c, warm ? 0 : ri->n_warmup, err)) ) goto done;
    for(;;){
      fly_trace_row row;
      int64_t iter;
      char b[40];
      rc = fly_trace_scan_next(tr, &iter, &row, th, err);
      if( rc == FLY_DONE ){ rc = FLY_OK; break; }
      if( rc != FLY_ROW ) goto done;
      rc = FLY_OK;
      int w = iter <= ri->n_warmup;
      fprintf(wf, "%zu,%lld,%d", c + 1, (long long)iter, w);
      for(size_t p = 0; p < P; p++){
        fmt_real(b, sizeof b, th[p], 0);
        fprintf(lf, "%lld,%zu,%lld,", (long long)ri->id, c + 1, (long long)iter);
        put_field(lf, fly_trace_param_name(tr, p), 0);
        fprintf(lf, ",%s,%d\n", b, w);
        fprintf(wf, ",%s", b);
      }
      fputc('\n', wf);
      (*n_rows)++;
    }
  }
  if( *n_rows == 0 )
    rc = fly_fail(err, FLY_RANGE, "run %lld has no %sdraws yet", (long long)ri->id,
                  warm ? "" : "post-warm-up ");
done:
  fly_free(th);
  return rc;
}

/* ---- into a directory --------------------------------------------------- */

void fly_export_files_clear(fly_export_files *out)
{
  if( !out ) return;
  if( out->path )
    for(size_t i = 0; i < out->n; i++) fly_free(out->path[i]);
  fly_free(out->path);
  memset(out, 0, sizeof *out);
}

fly_rc fly_export_dir(fly_trace_reader *tr, fly_export_format fmt, int warm, const char *dir,
                      fly_export_files *res, fly_err *err)
{
  const fly_trace_run *ri = fly_trace_reader_run(tr);
  size_t n = fmt == FLY_EXPORT_CMDSTAN ? ri->n_chains : 2;
  outfile *out = NULL;
  fly_export_plan plan;
  fly_rc rc = FLY_OK;
  char name[64];

  memset(res, 0, sizeof *res);
  if( fmt == FLY_EXPORT_CMDSTAN ){
    if( (rc = fly_export_cmdstan_plan(tr, warm, &plan, err)) ) return rc;
    res->partial = plan.partial;
    res->n_draws = plan.n_post;
  }
  out = fly_alloc_array(n, sizeof *out);
  res->path = fly_alloc_array(n, sizeof *res->path);
  if( res->path ) memset(res->path, 0, n * sizeof *res->path);
  if( !out || !res->path ){ rc = fly_fail(err, FLY_NOMEM, "export"); goto done; }
  memset(out, 0, n * sizeof *out);
  if( fmt == FLY_EXPORT_CMDSTAN ){
    for(size_t c = 0; c < n; c++){
      snprintf(name, sizeof name, "%lld_chain%zu.csv", (long long)ri->id, c + 1);
      if( (rc = out_open(&out[c], dir, name, err)) ) goto done;
      if( (rc = fly_export_cmdstan_chain(tr, &plan, c, name, out[c].f, err)) ) goto done;
      if( (rc = out_close(&out[c], err)) ) goto done;
    }
  }else{
    size_t n_rows;
    snprintf(name, sizeof name, "%lld_draws.csv", (long long)ri->id);
    if( (rc = out_open(&out[0], dir, name, err)) ) goto done;
    snprintf(name, sizeof name, "%lld_wide.csv", (long long)ri->id);
    if( (rc = out_open(&out[1], dir, name, err)) ) goto done;
    if( (rc = fly_export_csv(tr, warm, out[0].f, out[1].f, &n_rows, err)) ) goto done;
    res->n_draws = (int64_t)n_rows;
    if( (rc = out_close(&out[0], err)) ) goto done;
    rc = out_close(&out[1], err);
  }
done:
  res->n = n;
  for(size_t i = 0; rc == FLY_OK && i < n; i++)     /* before the renames: nothing to undo */
    if( !(res->path[i] = fly_strdup(out[i].path)) ) rc = fly_fail(err, FLY_NOMEM, "export");
  if( out ){
    fly_rc rc2 = out_finish(out, n, rc == FLY_OK, err);
    if( rc == FLY_OK ) rc = rc2;
  }
  if( rc ){                                          /* no file: no path */
    int partial = res->partial;
    int64_t n_draws = res->n_draws;
    fly_export_files_clear(res);
    res->partial = partial;
    res->n_draws = n_draws;
  }
  fly_free(out);
  return rc;
}
