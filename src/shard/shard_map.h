/*
 * shard_map.h -- the MAP and the Laplace precision of a sharded data set,
 * computed by R ranks (mpi/comm.h) that each read only their own shards
 * (issue 28, tuning's first two passes).
 *
 * Every L-BFGS evaluation: each rank sums the log likelihood and its
 * gradient over the rows of each shard it owns (page by page, as
 * tune/tune.c does over a whole data set), the per-shard values are
 * gathered on every rank, and every rank adds them to the prior's in shard
 * order.  All ranks then hold the same bits and take the same L-BFGS step,
 * so no θ is ever sent; the result is the same for any R (1 to S) and for
 * one process without MPI.  The Hessian at the MAP is gathered and summed
 * the same way.  Then each rank writes into each of its shards an ordinary
 * bound set at that MAP and H (tune/tune.h, fly_tune_opts.given: per-row xi,
 * thinning keys, the shard's own moment tables), and the per-shard moments
 * are gathered and summed in shard order.  Rank 0 stores the result in the
 * manifest (table shard_map, one row per model and model options).
 *
 * Sampling a manifest is shard/shard_sample.h.  The model is
 * resolved against shard 0, so only models whose options do not depend on
 * the data are accepted (logistic).
 */
#ifndef FLY_SHARD_MAP_H
#define FLY_SHARD_MAP_H

#include <stddef.h>

#include "mpi/comm.h"
#include "run/run.h"
#include "store/db.h"
#include "util/err.h"

typedef struct fly_shard_map {
  size_t  P;            /* n_params */
  double *theta;        /* P: the MAP */
  double *H;            /* P x P row-major: -hess log posterior at the MAP */
  double *mom;          /* n_mom: the moment tables, summed over shards */
  size_t  n_mom;
  double  logpost;      /* log prior + sum log L at the MAP (no constants) */
  double  g_norm;       /* |grad| at the MAP */
  int     iters, evals; /* L-BFGS iterations and evaluations */
  int64_t n_shards, n_rows;
} fly_shard_map;

/* Compute the MAP and H of the manifest at manifest_path for model spec s
 * on the ranks of c (every rank calls it, with the same arguments), after
 * a quick fly_shard_verify.  Rank 0 writes the result into the manifest.
 * Errors are those of fly_shard_verify and of reading the shards (on the
 * rank that read them; the others return FLY_IO "another rank failed"),
 * FLY_MISUSE for more ranks than shards or a model other than logistic,
 * FLY_NUMERIC when the MAP search fails.  *pr NULL on failure. */
fly_rc fly_shard_map_run(const char *manifest_path, const fly_model_spec *s,
                         fly_comm *c, int verbose, fly_shard_map **pr,
                         fly_err *err);
void   fly_shard_map_free(fly_shard_map *r);          /* NULL: no-op */

/* The result a fly_shard_map_run stored in the manifest for model m
 * (table shard_map: MAP, H, moment totals and the MAP search's figures;
 * n_shards, n_rows and evals are 0), or *pr NULL if there is none.
 * FLY_CORRUPT for a row of the wrong size. */
fly_rc fly_shard_map_load(const char *manifest_path, const fly_model *m,
                          fly_shard_map **pr, fly_err *err);

/* The resolved paths of the manifest's shards, in shard order, after a
 * quick fly_shard_verify (its errors); *out (caller frees with
 * fly_free) holds *n; *n_rows (may be NULL): the total rows. */
fly_rc fly_shard_paths(const char *manifest_path, char (**out)[4096], size_t *n,
                       int64_t *n_rows, fly_err *err);

/* The id of data set ds's bound set at the sharded MAP r in shard db (built
 * there if missing: fly_shard_map_run has built it already). */
fly_rc fly_shard_bounds_at(fly_db *db, int64_t ds, const fly_model *m,
                           const fly_shard_map *r, int64_t *bs, fly_err *err);

/* Whether db is a shard manifest (has table shard_set). */
int    fly_shard_is_manifest(fly_db *db);

/* `flydb tune` on a manifest (run/tune_job.c): join the ranks (MPI_Init
 * under mpirun, MPI_Finalize before returning), fly_shard_map_run with MAP
 * tuning, and the result as a fly_bounds: shard 0's bound set (the MAP, H,
 * covariance and L-BFGS figures of the whole) with the moment totals in
 * place of shard 0's own and this call's wall time as tune_seconds.  Every
 * rank returns it (and `flydb tune` prints it on each).  FLY_MISUSE for fixed tuning (not sharded yet).
 * *pb NULL on failure. */
struct fly_tune_opts;
struct fly_bounds;
fly_rc fly_shard_tune_bounds(fly_db *manifest, const fly_model_spec *s,
                             const struct fly_tune_opts *o,
                             struct fly_bounds **pb, fly_err *err);

#endif
