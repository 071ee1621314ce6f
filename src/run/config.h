/*
 * config.h -- inside the run driver: checking and resolving a fly_run_cfg,
 * and converting it to and from its stored forms (store/run.h).
 */
#ifndef FLY_RUN_CONFIG_H
#define FLY_RUN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "flymc/sketch.h"
#include "models/model.h"
#include "run/run.h"
#include "store/run.h"

/* Check the fields that do not depend on the data set and resolve their
 * "auto" values (warm-up, seed, z mode, z parameter, theta steps, cache).
 * FLY_MISUSE naming the option. */
fly_rc fly_run_cfg_resolve(fly_run_cfg *c, fly_err *err);

/* Resolve what depends on the model: the sketch (FLY_MISUSE for "on" where
 * it cannot apply) and the kernel's default step. */
fly_rc fly_run_cfg_fit(fly_run_cfg *c, const fly_model *m, fly_err *err);

/* A quarter of physical memory (and of an address-space limit) shared by
 * the chains, at least 256 MiB: a store that fits is served by memcpy.
 * Cache slots are allocated zeroed, so small stores use only what they need. */
int64_t fly_run_default_cache_mb(int64_t chains);

/* The typed record of a resolved configuration and back. */
void   fly_run_cfg_to_rec(const fly_run_cfg *c, const fly_model *m, int64_t ds,
                          int64_t bs, fly_run_rec *r);
/* FLY_CORRUPT for a stored z mode or sampler this flydb does not know.  The
 * strings of c->model point into r. */
fly_rc fly_run_cfg_from_rec(const fly_run_rec *r, fly_run_cfg *c, fly_err *err);

/* The run_config lines of a resolved configuration. */
#define FLY_RUN_LINES 40
typedef struct fly_run_line {
  const char *key;
  char        value[4096];
  int         is_default;
} fly_run_line;
size_t fly_run_cfg_lines(const fly_run_cfg *c, const fly_model *m, const char *db_path,
                         fly_run_line *out);

#endif
