/*
 * config.c -- a run's configuration: defaults, the checks that make it
 * hold together, the resolution of its "auto" fields, and its two stored
 * forms (the typed record of store/run.h and the run_config lines).
 *
 * The resolution is a pure function of the configuration, the data set's
 * shape and the machine's memory (only the cache size depends on the
 * latter, and the draws never do), so resolving a stored record again
 * gives the same chain configuration.
 */
#include "run/config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

void fly_run_cfg_default(fly_run_cfg *c)
{
  memset(c, 0, sizeof *c);
  c->iters = 1000;
  c->warmup = -1;
  c->chains = 2;
  c->thin = 1;
  c->z = FLY_Z_GIBBS;
  c->fixed_xi = 1.5;
  c->kernel = FLY_K_MH;
  c->leapfrog = 16;
  c->scan_frac = 0.25;
  c->sketch = -1;
  c->checkpoint_every = 1000;
}

int64_t fly_run_default_cache_mb(int64_t chains)
{
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  double mb = pages > 0 && psz > 0 ? (double)pages * (double)psz / 1048576.0 / 4.0 : 1024;
  struct rlimit rl;
  if( getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ){
    double lim = (double)rl.rlim_cur / 1048576.0 / 4.0;
    if( lim < mb ) mb = lim;
  }
  mb /= (double)(chains > 0 ? chains : 1);
  return mb < 256 ? 256 : (int64_t)mb;
}

fly_rc fly_run_cfg_resolve(fly_run_cfg *c, fly_err *err)
{
#define NEED(cond, ...) do{ if( !(cond) ) return fly_fail(err, FLY_MISUSE, __VA_ARGS__); }while(0)
  NEED(c->iters >= 1, "--iters must be at least 1");
  NEED(c->chains >= 1 && c->chains <= FLY_RUN_MAX_CHAINS, "--chains must be 1 to %d",
       FLY_RUN_MAX_CHAINS);
  NEED(c->thin >= 1, "--thin must be at least 1");
  NEED(c->checkpoint_every >= 1, "--checkpoint-every must be at least 1");
  NEED(c->full_logpost_every >= 0, "--full-logpost-every must not be negative");
  NEED(c->leapfrog >= 1, "--leapfrog must be at least 1");
  NEED(c->theta_steps >= 0, "--theta-steps must be at least 1");
  NEED(c->cache_mb >= 0, "--cache-mb must be positive");
  NEED(c->scan_frac >= 0 && isfinite(c->scan_frac), "--scan-frac must not be negative");
  NEED(c->step >= 0 && isfinite(c->step), "--step must be positive");
  NEED(c->sketch >= -1 && c->sketch <= 1, "--sketch is on, off or auto");
  NEED(c->seed < (UINT64_C(1) << 63), "--seed must be below 2^63");
  if( c->warmup < 0 ) c->warmup = c->iters / 2;
  if( c->full_logpost_every > 0 && c->full_logpost_every % c->thin != 0 )
    return fly_fail(err, FLY_MISUSE, "--full-logpost-every must be a multiple of --thin "
                    "(only kept iterations are stored)");
  if( !c->seed_set ){
    /* a drawn seed is kept below 2^62 so it prints and stores as given */
    c->seed = (((uint64_t)time(NULL) * 2654435761u) ^ (uint64_t)getpid())
              & ((UINT64_C(1) << 62) - 1);
    c->seed_set = 1;
  }
  NEED(!c->bounds_fixed || (c->fixed_xi > 0 && isfinite(c->fixed_xi)),
       "--bounds fixed=X: X must be a positive number");
  if( !c->z_set ){
    c->z = c->bounds_fixed ? FLY_Z_IMPLICIT : FLY_Z_GIBBS;
    c->z_set = 1;
  }
  if( c->z == FLY_Z_GIBBS && c->bounds_fixed )
    return fly_fail(err, FLY_MISUSE, "--z gibbs needs MAP-tuned bounds (its thinning "
                    "bound holds around the MAP); use --z implicit with --bounds fixed");
  if( c->z == FLY_Z_IMPLICIT || c->z == FLY_Z_EXPLICIT ){
    if( c->z_param == 0 ) c->z_param = 0.1;
    NEED(c->z_param > 0 && c->z_param <= 1, "--z %s=X: X must be in (0, 1]",
         fly_zmode_name(c->z));
  }else c->z_param = 0;
  NEED(fly_kernel_name(c->kernel)[0] != '?', "--sampler: unknown kernel %d", (int)c->kernel);
  /* A z step costs its row reads, an MH theta update O(P^2 + bright rows):
   * with the thinned z step several MH updates per z update are nearly free
   * and mix theta much better (docs/performance.md §2.3).  A gradient or slice
   * update costs many bright-row passes (HMC: leapfrog of them), so those
   * kernels, like implicit and explicit (whose counts Table 1 assumes), keep
   * the paper's one update. */
  if( c->theta_steps == 0 )
    c->theta_steps = c->z == FLY_Z_GIBBS && c->kernel == FLY_K_MH ? 32 : 1;
  if( c->z == FLY_Z_REGULAR && c->theta_steps != 1 )
    return fly_fail(err, FLY_MISUSE, "--theta-steps with --regular: every theta update "
                    "of regular MCMC is a full pass over the data; use --iters");
  if( (c->given & FLY_GIVEN_LEAPFROG) && c->kernel != FLY_K_HMC )
    return fly_fail(err, FLY_MISUSE, "--leapfrog is for --sampler hmc");
  if( c->cache_mb == 0 ) c->cache_mb = fly_run_default_cache_mb(c->chains);
  return FLY_OK;
#undef NEED
}

fly_rc fly_run_cfg_fit(fly_run_cfg *c, const fly_model *m, fly_err *err)
{
  int fits = c->z == FLY_Z_GIBBS && fly_sketch_fits(m);
  if( c->sketch == 1 && !fits )
    return fly_fail(err, FLY_MISUSE, "--sketch on is for --z gibbs; this run is %s",
                    fly_zmode_name(c->z));
  c->sketch = c->sketch != 0 && fits;
  if( c->step <= 0 )   /* the kernel's start for the warm-up adaptation */
    c->step = fly_kernel_default_step(c->kernel, m->type->n_params(m), (size_t)c->leapfrog,
                                      c->isotropic);
  return FLY_OK;
}

/* ---- stored forms ----------------------------------------------------- */

static int name_to_zmode(const char *s, fly_zmode *z)
{
  for(int i = FLY_Z_REGULAR; i <= FLY_Z_GIBBS; i++)
    if( !strcmp(fly_zmode_name((fly_zmode)i), s) ){ *z = (fly_zmode)i; return 0; }
  return -1;
}

static void set_name(char dst[FLY_RUN_NAME], const char *s)
{
  snprintf(dst, FLY_RUN_NAME, "%s", s);
}

void fly_run_cfg_to_rec(const fly_run_cfg *c, const fly_model *m, int64_t ds,
                        int64_t bs, fly_run_rec *r)
{
  memset(r, 0, sizeof *r);
  r->dataset_id = ds;
  r->bound_set_id = bs;
  set_name(r->model, m->type->name);
  set_name(r->prior, m->prior == FLY_PRIOR_LAPLACE ? "laplace" : "normal");
  r->prior_scale = m->prior_scale;
  r->nu = m->nu;
  r->scale = m->scale;
  r->iters = c->iters;
  r->warmup = c->warmup;
  r->chains = c->chains;
  r->thin = c->thin;
  r->seed = c->seed;
  r->n_params = (int64_t)m->type->n_params(m);
  set_name(r->z_mode, fly_zmode_name(c->z));
  r->z_param = c->z_param;
  r->bounds_fixed = c->bounds_fixed;
  r->fixed_xi = c->bounds_fixed ? c->fixed_xi : 0;
  set_name(r->sampler, fly_kernel_name(c->kernel));
  r->theta_steps = c->theta_steps;
  r->leapfrog = c->leapfrog;
  r->isotropic = c->isotropic;
  r->init_map = c->init_map;
  r->step = c->step;
  r->cache_mb = (c->given & FLY_GIVEN_CACHE_MB) ? c->cache_mb : 0;
  r->scan_frac = c->scan_frac;
  r->sketch = c->sketch > 0;
  r->checkpoint_every = c->checkpoint_every;
  r->full_logpost_every = c->full_logpost_every;
}

fly_rc fly_run_cfg_from_rec(const fly_run_rec *r, fly_run_cfg *c, fly_err *err)
{
  fly_run_cfg_default(c);
  c->model.model = r->model;
  c->model.prior = r->prior;
  c->model.prior_scale = r->prior_scale;
  c->model.nu = r->nu;
  c->model.scale = r->scale;
  c->iters = r->iters;
  c->warmup = r->warmup;
  c->chains = r->chains;
  c->thin = r->thin;
  c->seed = r->seed;
  c->seed_set = 1;
  if( name_to_zmode(r->z_mode, &c->z) )
    return fly_fail(err, FLY_CORRUPT, "stored z mode '%s' is unknown", r->z_mode);
  c->z_set = 1;
  c->z_param = r->z_param;
  c->bounds_fixed = r->bounds_fixed;
  if( r->bounds_fixed ) c->fixed_xi = r->fixed_xi;
  int k = fly_kernel_find(r->sampler);
  if( k < 0 ) return fly_fail(err, FLY_CORRUPT, "stored sampler '%s' is unknown", r->sampler);
  c->kernel = (fly_kernel)k;
  c->theta_steps = r->theta_steps;
  c->leapfrog = r->leapfrog;
  c->isotropic = r->isotropic;
  c->init_map = r->init_map;
  c->step = r->step;
  c->cache_mb = r->cache_mb;
  if( r->cache_mb > 0 ) c->given |= FLY_GIVEN_CACHE_MB;
  c->scan_frac = r->scan_frac;
  c->sketch = r->sketch;
  c->checkpoint_every = r->checkpoint_every;
  c->full_logpost_every = r->full_logpost_every;
  /* the stored leapfrog count of a non-HMC run is its (unused) default */
  return FLY_OK;
}

/* The run_config lines: every option as resolved, in the CLI's order. */
static const struct { const char *key; unsigned bit; } config_keys[] = {
  { "db", 0 }, { "data", FLY_GIVEN_DATA }, { "model", FLY_GIVEN_MODEL },
  { "prior", FLY_GIVEN_PRIOR }, { "prior-scale", FLY_GIVEN_PRIOR_SCALE },
  { "nu", FLY_GIVEN_NU }, { "scale", FLY_GIVEN_SCALE }, { "iters", FLY_GIVEN_ITERS },
  { "warmup", FLY_GIVEN_WARMUP }, { "chains", FLY_GIVEN_CHAINS }, { "seed", FLY_GIVEN_SEED },
  { "thin", FLY_GIVEN_THIN }, { "z", FLY_GIVEN_Z }, { "regular", FLY_GIVEN_Z },
  { "bounds", FLY_GIVEN_BOUNDS }, { "sampler", FLY_GIVEN_SAMPLER },
  { "theta-steps", FLY_GIVEN_THETA_STEPS }, { "leapfrog", FLY_GIVEN_LEAPFROG },
  { "proposal", FLY_GIVEN_PROPOSAL }, { "step", FLY_GIVEN_STEP }, { "init", FLY_GIVEN_INIT },
  { "cache-mb", FLY_GIVEN_CACHE_MB }, { "scan-frac", FLY_GIVEN_SCAN_FRAC },
  { "sketch", FLY_GIVEN_SKETCH }, { "full-logpost-every", FLY_GIVEN_FULL_EVERY },
  { "checkpoint-every", FLY_GIVEN_CKPT_EVERY }, { "profile", FLY_GIVEN_PROFILE },
  { "formula", FLY_GIVEN_FORMULA }, { "reference", FLY_GIVEN_REFERENCE }, { "na", FLY_GIVEN_NA },
};

unsigned fly_run_given_bit(const char *key)
{
  for(size_t i = 0; i < sizeof config_keys / sizeof config_keys[0]; i++)
    if( !strcmp(config_keys[i].key, key) ) return config_keys[i].bit;
  return 0;
}

size_t fly_run_cfg_lines(const fly_run_cfg *c, const fly_model *m, const char *db_path,
                         fly_run_line *out)
{
  size_t n = sizeof config_keys / sizeof config_keys[0];
  for(size_t i = 0; i < n; i++){
    const char *k = config_keys[i].key;
    char *b = out[i].value;
    size_t bn = sizeof out[i].value;
    out[i].key = k;
    out[i].is_default = !(c->given & config_keys[i].bit);
    if( !strcmp(k, "db") ){ snprintf(b, bn, "%s", db_path); out[i].is_default = 0; }
    else if( !strcmp(k, "data") ) snprintf(b, bn, "%s", c->data ? c->data : "(the only one)");
    else if( !strcmp(k, "model") ) snprintf(b, bn, "%s", m->type->name);
    else if( !strcmp(k, "prior") )
      snprintf(b, bn, "%s", m->prior == FLY_PRIOR_LAPLACE ? "laplace" : "normal");
    else if( !strcmp(k, "prior-scale") ) snprintf(b, bn, "%.17g", m->prior_scale);
    else if( !strcmp(k, "nu") ) snprintf(b, bn, "%.17g", m->nu);
    else if( !strcmp(k, "scale") ) snprintf(b, bn, "%.17g", m->scale);
    else if( !strcmp(k, "iters") ) snprintf(b, bn, "%lld", (long long)c->iters);
    else if( !strcmp(k, "warmup") ) snprintf(b, bn, "%lld", (long long)c->warmup);
    else if( !strcmp(k, "chains") ) snprintf(b, bn, "%lld", (long long)c->chains);
    else if( !strcmp(k, "seed") ) snprintf(b, bn, "%llu", (unsigned long long)c->seed);
    else if( !strcmp(k, "thin") ) snprintf(b, bn, "%lld", (long long)c->thin);
    else if( !strcmp(k, "z") ){
      if( c->z == FLY_Z_IMPLICIT || c->z == FLY_Z_EXPLICIT )
        snprintf(b, bn, "%s=%.17g", fly_zmode_name(c->z), c->z_param);
      else snprintf(b, bn, "%s", fly_zmode_name(c->z));
      out[i].is_default = !(c->given & FLY_GIVEN_Z) || c->z == FLY_Z_REGULAR;
    }
    else if( !strcmp(k, "regular") ){
      snprintf(b, bn, "%d", c->z == FLY_Z_REGULAR);
      out[i].is_default = c->z != FLY_Z_REGULAR;
    }
    else if( !strcmp(k, "bounds") ){
      if( c->bounds_fixed ) snprintf(b, bn, "fixed=%.17g", c->fixed_xi);
      else snprintf(b, bn, "map");
    }
    else if( !strcmp(k, "sampler") ) snprintf(b, bn, "%s", fly_kernel_name(c->kernel));
    else if( !strcmp(k, "theta-steps") ) snprintf(b, bn, "%lld", (long long)c->theta_steps);
    else if( !strcmp(k, "leapfrog") ) snprintf(b, bn, "%lld", (long long)c->leapfrog);
    else if( !strcmp(k, "proposal") ) snprintf(b, bn, "%s", c->isotropic ? "isotropic" : "laplace");
    else if( !strcmp(k, "step") ) snprintf(b, bn, "%.17g", c->step);
    else if( !strcmp(k, "init") ) snprintf(b, bn, "%s", c->init_map ? "map" : "laplace");
    else if( !strcmp(k, "cache-mb") ) snprintf(b, bn, "%lld", (long long)c->cache_mb);
    else if( !strcmp(k, "scan-frac") ) snprintf(b, bn, "%.17g", c->scan_frac);
    else if( !strcmp(k, "sketch") ) snprintf(b, bn, "%s", c->sketch > 0 ? "on" : "off");
    else if( !strcmp(k, "checkpoint-every") )
      snprintf(b, bn, "%lld", (long long)c->checkpoint_every);
    else if( !strcmp(k, "full-logpost-every") )
      snprintf(b, bn, "%lld", (long long)c->full_logpost_every);
    else if( !strcmp(k, "profile") ) snprintf(b, bn, "%d", c->profile);
    else if( !strcmp(k, "formula") )
      snprintf(b, bn, "%s", c->model.formula ? c->model.formula : "(the columns as stored)");
    else if( !strcmp(k, "reference") )
      snprintf(b, bn, "%s", c->model.reference ? c->model.reference : "(first levels)");
    else if( !strcmp(k, "na") ) snprintf(b, bn, "%s", c->model.na_error ? "error" : "omit");
  }
  return n;
}
