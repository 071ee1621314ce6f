/*
 * export.c -- `flydb export [RUN_ID] --format cmdstan|csv --out DIR`: a
 * run's draws as files that R, Python and spreadsheets read unchanged.
 *
 * --format cmdstan: one file per chain, DIR/<run>_chain<k>.csv (k from 1),
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
 * iteration), stepsize__ the proposal scale.
 * Readers split warm-up from sampling rows by num_warmup / thin (cmdstanr
 * rounds up, ArviZ down) while flydb keeps iterations thin, 2 thin, .. of
 * 1..warmup+iters, so when thin does not divide warmup or iters the header
 * states num_warmup and num_samples as the kept counts times thin (a
 * comment line gives the run's values).  Readers need chains of one
 * length: an unfinished run is exported up to the iterations every chain
 * has finished, with a warning.  flydb keeps one loop time per run (the
 * slowest chain); the trailer splits it between warm-up and sampling in
 * proportion to the iterations.
 *
 * --format csv: DIR/<run>_draws.csv, long (run_id,chain,iter,name,value,
 * warmup) as the draws_named view, and DIR/<run>_wide.csv (chain,iter,
 * warmup, then one column per parameter named as in the data set), every
 * stored draw of every chain.
 *
 * Both formats: chains are numbered from 1 as in CmdStan and posterior (the
 * draw table numbers them from 0); iterations keep their numbers
 * (1..warmup+iters, warm-up first); warm-up draws only with --warmup.
 * Values are written in the shortest form that reads back as the same
 * double (%.15g, %.16g or %.17g), so an export round-trips exactly.
 * Files are written as "<name>.tmp" and renamed when all are complete.
 *
 * Cost: one ordered range scan of draw and of iteration per chain; memory
 * O(P).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "outdir.h"
#include "store/db.h"
#include "util/mem.h"

#define PATH_CAP 4096

typedef struct runinfo {
  int64_t  id, n_chains, n_warmup, n_iters, thin, n_params;
  uint64_t seed;
  double   secs;            /* sample_seconds: iteration loops, slowest chain */
  char     model[32], sampler[32], z[16], status[16], version[32];
  char     dataset[256], source[1024];
} runinfo;

typedef struct itrow {      /* one row of table iteration */
  int64_t iter, n_bright, n_lik, n_reads;
  double  lp, step;         /* NaN when NULL */
  double  accepted;
} itrow;

/* ---- small helpers ------------------------------------------------------ */

static void copy_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
  const char *s = (const char *)sqlite3_column_text(st, col);
  snprintf(dst, cap, "%s", s ? s : "");
}

static double col_real(sqlite3_stmt *st, int col)
{
  return sqlite3_column_type(st, col) == SQLITE_NULL ? NAN : sqlite3_column_double(st, col);
}

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
    return fly_fail(err, FLY_RANGE, "--out: path too long");
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

/* ---- the run ------------------------------------------------------------ */

static fly_rc load_run(fly_db *db, int64_t run_id, runinfo *ri, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  static const char *cols = "SELECT r.id, n_chains, n_warmup, n_iters, thin, n_params, seed, "
      "coalesce(sample_seconds, 0), model, sampler, z_mode, status, version, d.name, d.source "
      "FROM run r JOIN dataset d ON d.id = r.dataset_id ";
  char sql[512];
  snprintf(sql, sizeof sql, "%s%s", cols, run_id > 0 ? "WHERE r.id = ?1" : "ORDER BY r.id DESC LIMIT 1");
  fly_rc rc = fly_db_prepare(db, sql, &st, err);
  if( rc ) return rc;
  if( run_id > 0 ) sqlite3_bind_int64(st, 1, run_id);
  if( sqlite3_step(st) == SQLITE_ROW ){
    ri->id = sqlite3_column_int64(st, 0);
    ri->n_chains = sqlite3_column_int64(st, 1);
    ri->n_warmup = sqlite3_column_int64(st, 2);
    ri->n_iters = sqlite3_column_int64(st, 3);
    ri->thin = sqlite3_column_int64(st, 4);
    ri->n_params = sqlite3_column_int64(st, 5);
    ri->seed = (uint64_t)sqlite3_column_int64(st, 6);
    ri->secs = sqlite3_column_double(st, 7);
    copy_text(ri->model, sizeof ri->model, st, 8);
    copy_text(ri->sampler, sizeof ri->sampler, st, 9);
    copy_text(ri->z, sizeof ri->z, st, 10);
    copy_text(ri->status, sizeof ri->status, st, 11);
    copy_text(ri->version, sizeof ri->version, st, 12);
    copy_text(ri->dataset, sizeof ri->dataset, st, 13);
    copy_text(ri->source, sizeof ri->source, st, 14);
    if( ri->n_chains < 1 || ri->n_params < 1 || ri->thin < 1 || ri->n_warmup < 0 )
      rc = fly_fail(err, FLY_CORRUPT, "run %lld: bad shape (%lld chains, %lld parameters, "
                    "thin %lld)", (long long)ri->id, (long long)ri->n_chains,
                    (long long)ri->n_params, (long long)ri->thin);
  }else if( run_id > 0 ){
    rc = fly_fail(err, FLY_RANGE, "%s has no run %lld", fly_db_path(db), (long long)run_id);
  }else{
    rc = fly_fail(err, FLY_RANGE, "%s has no runs: run `flydb sample` first", fly_db_path(db));
  }
  sqlite3_finalize(st);
  return rc;
}

/* names[0..P) of the run's parameters (allocated; free with free_names). */
static fly_rc load_names(fly_db *db, const runinfo *ri, char ***out, fly_err *err)
{
  size_t P = (size_t)ri->n_params;
  sqlite3_stmt *st = NULL;
  char **names = fly_alloc_array(P, sizeof *names);
  fly_rc rc;
  *out = NULL;
  if( !names ) return fly_fail(err, FLY_NOMEM, "parameter names");
  *out = names;
  if( (rc = fly_db_prepare(db, "SELECT idx, name FROM param WHERE run_id = ?1", &st, err)) )
    return rc;
  sqlite3_bind_int64(st, 1, ri->id);
  while( rc == FLY_OK && sqlite3_step(st) == SQLITE_ROW ){
    int64_t i = sqlite3_column_int64(st, 0);
    const char *s = (const char *)sqlite3_column_text(st, 1);
    if( i < 0 || (size_t)i >= P || names[i] ) continue;
    if( !(names[i] = fly_strdup(s ? s : "")) ) rc = fly_fail(err, FLY_NOMEM, "parameter names");
  }
  sqlite3_finalize(st);
  for(size_t p = 0; rc == FLY_OK && p < P; p++){
    char buf[32];
    if( names[p] ) continue;
    snprintf(buf, sizeof buf, "theta[%zu]", p + 1);
    if( !(names[p] = fly_strdup(buf)) ) rc = fly_fail(err, FLY_NOMEM, "parameter names");
  }
  return rc;
}

static void free_names(char **names, size_t P)
{
  if( !names ) return;
  for(size_t p = 0; p < P; p++) fly_free(names[p]);
  fly_free(names);
}

/* Kept warm-up and post-warm-up rows of each chain: kw[c], ks[c]. */
static fly_rc chain_counts(fly_db *db, const runinfo *ri, int64_t *kw, int64_t *ks,
                           fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(db, "SELECT chain, sum(iter <= ?2), sum(iter > ?2) FROM iteration "
                             "WHERE run_id = ?1 GROUP BY chain", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, ri->id);
  sqlite3_bind_int64(st, 2, ri->n_warmup);
  while( sqlite3_step(st) == SQLITE_ROW ){
    int64_t c = sqlite3_column_int64(st, 0);
    if( c < 0 || c >= ri->n_chains ) continue;
    kw[c] = sqlite3_column_int64(st, 1);
    ks[c] = sqlite3_column_int64(st, 2);
  }
  sqlite3_finalize(st);
  return FLY_OK;
}

/* 1 if the run's option `key` took its default value (or is not stored). */
static int cfg_default(fly_db *db, int64_t run_id, const char *key)
{
  sqlite3_stmt *st = NULL;
  int d = 1;
  if( fly_db_prepare(db, "SELECT is_default FROM run_config WHERE run_id = ?1 AND key = ?2",
                     &st, NULL) ) return 1;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  if( sqlite3_step(st) == SQLITE_ROW ) d = sqlite3_column_int(st, 0) != 0;
  sqlite3_finalize(st);
  return d;
}

/* ---- reading one chain: iteration rows joined with their P draws -------- */

typedef struct reader {
  sqlite3_stmt *it, *dr;
  int           have;       /* dr holds a row not yet consumed */
  size_t        P;
  int64_t       run, chain;
} reader;

static fly_rc reader_open(fly_db *db, reader *r, const runinfo *ri, fly_err *err)
{
  fly_rc rc;
  memset(r, 0, sizeof *r);
  r->P = (size_t)ri->n_params;
  r->run = ri->id;
  if( (rc = fly_db_prepare(db, "SELECT iter, log_joint, accepted, step_size, n_bright, "
                           "n_lik_evals, n_reads FROM iteration WHERE run_id = ?1 AND "
                           "chain = ?2 AND iter > ?3 ORDER BY iter", &r->it, err)) ) return rc;
  return fly_db_prepare(db, "SELECT iter, idx, value FROM draw WHERE run_id = ?1 AND "
                        "chain = ?2 AND iter > ?3 ORDER BY iter, idx", &r->dr, err);
}

/* Start chain c at the first iteration after `after`. */
static void reader_start(reader *r, int64_t c, int64_t after)
{
  sqlite3_stmt *s[2] = { r->it, r->dr };
  for(int i = 0; i < 2; i++){
    sqlite3_reset(s[i]);
    sqlite3_bind_int64(s[i], 1, r->run);
    sqlite3_bind_int64(s[i], 2, c);
    sqlite3_bind_int64(s[i], 3, after);
  }
  r->chain = c;
  r->have = 0;
}

/* The next iteration row and its draws th[0..P): FLY_ROW, FLY_DONE, or
 * FLY_CORRUPT when the draws and the iteration rows do not match. */
static fly_rc reader_next(reader *r, itrow *row, double *th, fly_err *err)
{
  size_t got = 0;
  if( sqlite3_step(r->it) != SQLITE_ROW ) return FLY_DONE;
  row->iter = sqlite3_column_int64(r->it, 0);
  row->lp = col_real(r->it, 1);
  row->accepted = sqlite3_column_double(r->it, 2);
  row->step = col_real(r->it, 3);
  row->n_bright = sqlite3_column_int64(r->it, 4);
  row->n_lik = sqlite3_column_int64(r->it, 5);
  row->n_reads = sqlite3_column_int64(r->it, 6);
  for(;;){
    if( !r->have ){
      if( sqlite3_step(r->dr) != SQLITE_ROW ) break;
      r->have = 1;
    }
    int64_t di = sqlite3_column_int64(r->dr, 0), idx = sqlite3_column_int64(r->dr, 1);
    if( di > row->iter ) break;
    if( di < row->iter )
      return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld: draws of iteration %lld have "
                      "no row in table iteration", (long long)r->run, (long long)r->chain + 1,
                      (long long)di);
    if( idx < 0 || (size_t)idx >= r->P )
      return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld, iteration %lld: parameter "
                      "index %lld outside 0..%zu", (long long)r->run, (long long)r->chain + 1,
                      (long long)di, (long long)idx, r->P - 1);
    th[idx] = sqlite3_column_double(r->dr, 2);
    got++;
    r->have = 0;
  }
  if( got != r->P )
    return fly_fail(err, FLY_CORRUPT, "run %lld, chain %lld, iteration %lld: %zu draws, want "
                    "%zu", (long long)r->run, (long long)r->chain + 1, (long long)row->iter,
                    got, r->P);
  return FLY_ROW;
}

static void reader_close(reader *r)
{
  sqlite3_finalize(r->it);
  sqlite3_finalize(r->dr);
  r->it = r->dr = NULL;
}

/* ---- --format cmdstan --------------------------------------------------- */

static void cmdstan_header(FILE *f, fly_db *db, const runinfo *ri, char **names, int64_t c,
                           const char *file, int warm, int64_t num_warmup,
                           int64_t num_samples, int exact)
{
  const char *dflt = " (Default)";
  size_t P = (size_t)ri->n_params;
  fprintf(f, "# model = flydb_");
  put_comment_text(f, ri->model);
  fprintf(f, "\n# method = sample (Default)\n#   sample\n");
  fprintf(f, "#     num_samples = %lld%s\n", (long long)num_samples,
          exact && cfg_default(db, ri->id, "iters") ? dflt : "");
  fprintf(f, "#     num_warmup = %lld%s\n", (long long)num_warmup,
          exact && cfg_default(db, ri->id, "warmup") ? dflt : "");
  fprintf(f, "#     save_warmup = %d%s\n", warm, warm ? "" : dflt);
  fprintf(f, "#     thin = %lld%s\n", (long long)ri->thin,
          cfg_default(db, ri->id, "thin") ? dflt : "");
  fprintf(f, "#     adapt\n#       engaged = %d\n", ri->n_warmup > 0);
  fprintf(f, "#     algorithm = ");
  put_comment_text(f, ri->sampler);
  fprintf(f, "\n#       ");
  put_comment_text(f, ri->sampler);
  fprintf(f, "\n#         z_mode = ");
  put_comment_text(f, ri->z);
  fprintf(f, "\n# id = %lld\n# data\n#   file = ", (long long)c + 1);
  put_comment_text(f, ri->source);
  fprintf(f, "\n# random\n#   seed = %llu%s\n", (unsigned long long)ri->seed,
          cfg_default(db, ri->id, "seed") ? dflt : "");
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
    char *s = names[p];
    fputc('"', f);
    for( ; *s; s++){
      if( *s == '"' ) fputc('"', f);
      fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
    }
    fputc('"', f);
  }
  fprintf(f, "\nlp__,accept_stat__,stepsize__,n_bright__,n_lik_evals__,n_reads__");
  for(size_t p = 0; p < P; p++) fprintf(f, ",theta.%zu", p + 1);
  fputc('\n', f);
}

static void cmdstan_row(FILE *f, const itrow *row, const double *th, size_t P)
{
  char b[40];
  fmt_real(b, sizeof b, row->lp, 1);
  fputs(b, f);
  fprintf(f, ",%.17g,", row->accepted);
  fmt_real(b, sizeof b, row->step, 1);
  fputs(b, f);
  fprintf(f, ",%lld,%lld,%lld", (long long)row->n_bright, (long long)row->n_lik,
          (long long)row->n_reads);
  for(size_t p = 0; p < P; p++){
    fmt_real(b, sizeof b, th[p], 1);
    fputc(',', f);
    fputs(b, f);
  }
  fputc('\n', f);
}

static fly_rc export_cmdstan(fly_db *db, const runinfo *ri, char **names, const char *dir,
                             int warm, fly_err *err)
{
  size_t C = (size_t)ri->n_chains, P = (size_t)ri->n_params;
  int64_t *kw = fly_alloc_array(C, sizeof *kw), *ks = fly_alloc_array(C, sizeof *ks);
  outfile *out = fly_alloc_array(C, sizeof *out);
  double *th = fly_alloc_array(P, sizeof *th);
  reader r = { 0 };
  fly_rc rc = FLY_OK;
  int64_t Kw = INT64_MAX, Ks = INT64_MAX;
  int64_t full_w = ri->n_warmup / ri->thin;
  int64_t full_s = (ri->n_warmup + ri->n_iters) / ri->thin - full_w;

  if( !kw || !ks || !out || !th ){ rc = fly_fail(err, FLY_NOMEM, "export"); goto done; }
  if( (rc = chain_counts(db, ri, kw, ks, err)) ) goto done;
  for(size_t c = 0; c < C; c++){
    if( kw[c] < Kw ) Kw = kw[c];
    if( ks[c] < Ks ) Ks = ks[c];
  }
  if( Ks == 0 ){
    rc = fly_fail(err, FLY_RANGE, "run %lld has no post-warm-up draws in every chain yet",
                  (long long)ri->id);
    goto done;
  }
  if( Kw < full_w || Ks < full_s )
    fprintf(stderr, "flydb export: warning: run %lld (%s): not every chain has all its "
            "draws; exporting the first %lld post-warm-up draws of each chain\n",
            (long long)ri->id, ri->status, (long long)Ks);
  /* header counts: ceil and floor of num / thin must both give the rows */
  int exact = Kw == full_w && Ks == full_s && ri->n_warmup % ri->thin == 0 &&
              ri->n_iters % ri->thin == 0;
  int64_t num_warmup = exact ? ri->n_warmup : Kw * ri->thin;
  int64_t num_samples = exact ? ri->n_iters : Ks * ri->thin;
  double frac_w = (ri->n_warmup + ri->n_iters) > 0 ?
      (double)ri->n_warmup / (double)(ri->n_warmup + ri->n_iters) : 0;

  if( (rc = reader_open(db, &r, ri, err)) ) goto done;
  for(size_t c = 0; c < C; c++){
    char name[64];
    FILE *f;
    int64_t n_w = 0, n_s = 0;
    double step = NAN;
    snprintf(name, sizeof name, "%lld_chain%zu.csv", (long long)ri->id, c + 1);
    if( (rc = out_open(&out[c], dir, name, err)) ) goto done;
    f = out[c].f;
    cmdstan_header(f, db, ri, names, (int64_t)c, name, warm, num_warmup, num_samples, exact);
    reader_start(&r, (int64_t)c, warm ? 0 : ri->n_warmup);
    for(;;){
      itrow row;
      rc = reader_next(&r, &row, th, err);
      if( rc == FLY_DONE ){ rc = FLY_OK; break; }
      if( rc != FLY_ROW ) goto done;
      rc = FLY_OK;
      if( row.iter <= ri->n_warmup ){
        if( n_w++ >= Kw ) continue;
      }else{
        if( n_s == 0 ){
          step = row.step;
          if( ri->n_warmup > 0 ) fputs("# Adaptation terminated\n", f);
          char b[40];
          fmt_real(b, sizeof b, step, 1);
          fprintf(f, "# Step size = %s\n", b);
        }
        if( n_s++ >= Ks ) break;
      }
      cmdstan_row(f, &row, th, P);
    }
    fprintf(f, "# \n#  Elapsed Time: %.3f seconds (Warm-up)\n"
               "#                %.3f seconds (Sampling)\n"
               "#                %.3f seconds (Total)\n# \n",
            ri->secs * frac_w, ri->secs * (1 - frac_w), ri->secs);
    if( (rc = out_close(&out[c], err)) ) goto done;
  }
done:
  reader_close(&r);
  if( out ){
    fly_rc rc2 = out_finish(out, C, rc == FLY_OK, err);
    if( rc == FLY_OK ) rc = rc2;
    if( rc == FLY_OK ){
      printf("run %lld: %zu chain%s x %lld draws%s, %zu parameter%s, CmdStan CSV:\n",
             (long long)ri->id, C, C == 1 ? "" : "s", (long long)Ks, warm ? " (+ warm-up)" : "",
             P, P == 1 ? "" : "s");
      for(size_t c = 0; c < C; c++) printf("  %s\n", out[c].path);
    }
  }
  fly_free(kw);
  fly_free(ks);
  fly_free(out);
  fly_free(th);
  return rc;
}

/* ---- --format csv ------------------------------------------------------- */

static fly_rc export_csv(fly_db *db, const runinfo *ri, char **names, const char *dir,
                         int warm, fly_err *err)
{
  size_t C = (size_t)ri->n_chains, P = (size_t)ri->n_params, n_rows = 0;
  outfile out[2];
  double *th = fly_alloc_array(P, sizeof *th);
  reader r = { 0 };
  fly_rc rc = FLY_OK;
  char name[64];

  memset(out, 0, sizeof out);
  if( !th ){ rc = fly_fail(err, FLY_NOMEM, "export"); goto done; }
  snprintf(name, sizeof name, "%lld_draws.csv", (long long)ri->id);
  if( (rc = out_open(&out[0], dir, name, err)) ) goto done;
  snprintf(name, sizeof name, "%lld_wide.csv", (long long)ri->id);
  if( (rc = out_open(&out[1], dir, name, err)) ) goto done;
  FILE *lf = out[0].f, *wf = out[1].f;
  fputs("run_id,chain,iter,name,value,warmup\n", lf);
  fputs("chain,iter,warmup", wf);
  for(size_t p = 0; p < P; p++){
    fputc(',', wf);
    put_field(wf, names[p], 0);
  }
  fputc('\n', wf);

  if( (rc = reader_open(db, &r, ri, err)) ) goto done;
  for(size_t c = 0; c < C; c++){
    reader_start(&r, (int64_t)c, warm ? 0 : ri->n_warmup);
    for(;;){
      itrow row;
      char b[40];
      rc = reader_next(&r, &row, th, err);
      if( rc == FLY_DONE ){ rc = FLY_OK; break; }
      if( rc != FLY_ROW ) goto done;
      rc = FLY_OK;
      int w = row.iter <= ri->n_warmup;
      fprintf(wf, "%zu,%lld,%d", c + 1, (long long)row.iter, w);
      for(size_t p = 0; p < P; p++){
        fmt_real(b, sizeof b, th[p], 0);
        fprintf(lf, "%lld,%zu,%lld,", (long long)ri->id, c + 1, (long long)row.iter);
        put_field(lf, names[p], 0);
        fprintf(lf, ",%s,%d\n", b, w);
        fprintf(wf, ",%s", b);
      }
      fputc('\n', wf);
      n_rows++;
    }
  }
  if( n_rows == 0 ){
    rc = fly_fail(err, FLY_RANGE, "run %lld has no %sdraws yet", (long long)ri->id,
                  warm ? "" : "post-warm-up ");
    goto done;
  }
  if( (rc = out_close(&out[0], err)) ) goto done;
  rc = out_close(&out[1], err);
done:
  reader_close(&r);
  {
    fly_rc rc2 = out_finish(out, 2, rc == FLY_OK, err);
    if( rc == FLY_OK ) rc = rc2;
  }
  if( rc == FLY_OK )
    printf("run %lld: %zu iterations x %zu parameter%s (%zu chain%s), long and wide CSV:\n"
           "  %s\n  %s\n", (long long)ri->id, n_rows, P, P == 1 ? "" : "s", C, C == 1 ? "" : "s",
           out[0].path, out[1].path);
  fly_free(th);
  return rc;
}

/* ---- the command -------------------------------------------------------- */

int fly_cmd_export(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database file (default ./flydb.db)", 0, 0 },
    { "format", FLY_OPT_VALUE, "cmdstan (default: one CmdStan CSV per chain) or csv "
      "(long and wide)", 0, 0 },
    { "out", FLY_OPT_VALUE, "output directory (created if missing)", 0, 0 },
    { "warmup", FLY_OPT_FLAG, "include the warm-up draws (CmdStan: save_warmup = 1)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_db *db = NULL;
  runinfo ri = { 0 };
  char **names = NULL;
  int64_t run_id = 0;
  int cmdstan = 1;
  const char *synopsis = "[RUN_ID] [--db PATH] [--format cmdstan|csv] --out DIR [--warmup]";
  if( fly_args_parse(&a, argc, argv, 1, &err) ) return fly_usage_error(&a, "export", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "export", synopsis); return 0; }
  if( a.n_pos == 1 ){
    char *end;
    long long v = strtoll(a.pos[0], &end, 10);
    if( *end || v <= 0 ){
      fly_fail(&err, FLY_MISUSE, "RUN_ID must be a positive integer, not '%s'", a.pos[0]);
      return fly_usage_error(&a, "export", synopsis, &err);
    }
    run_id = v;
  }
  const char *fmt = fly_args_str(&a, "format", "cmdstan");
  if( strcmp(fmt, "cmdstan") == 0 ) cmdstan = 1;
  else if( strcmp(fmt, "csv") == 0 ) cmdstan = 0;
  else{
    fly_fail(&err, FLY_MISUSE, "--format: '%s' is not cmdstan or csv", fmt);
    return fly_usage_error(&a, "export", synopsis, &err);
  }
  const char *dir = fly_args_str(&a, "out", NULL);
  if( !dir ){
    fly_fail(&err, FLY_MISUSE, "--out DIR is required");
    return fly_usage_error(&a, "export", synopsis, &err);
  }
  fly_rc rc = fly_db_open(fly_args_str(&a, "db", "flydb.db"), FLY_DB_READONLY, &db, &err);
  if( rc == FLY_OK ) rc = load_run(db, run_id, &ri, &err);
  if( rc == FLY_OK ) rc = load_names(db, &ri, &names, &err);
  if( rc == FLY_OK ) rc = fly_make_dir(dir, &err);
  if( rc == FLY_OK )
    rc = cmdstan ? export_cmdstan(db, &ri, names, dir, fly_args_set(&a, "warmup"), &err)
                 : export_csv(db, &ri, names, dir, fly_args_set(&a, "warmup"), &err);
  if( names ) free_names(names, (size_t)ri.n_params);
  fly_db_close(db);
  return fly_report(rc, &err);
}
