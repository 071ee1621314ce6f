/*
 * shard_sample.h -- `flydb sample` on a shard manifest: one FlyMC run over
 * S shard databases, driven by R ranks (mpi/comm.h) that each read only
 * their own shards (issue 28, stage 3).
 *
 * The same seed gives bit-identical draws and per-iteration diagnostics
 * for any R from 1 to S, and for one process without MPI, because every
 * value that crosses shards is combined in the same order on every rank:
 *  - theta, its proposals and the kernel's adaptation come from an RNG
 *    stream (seed, chain) replicated on every rank: no theta is ever sent;
 *  - shard k's z lives in a chain of its own (flymc/chain.h) over the
 *    shard's rows, with the shard's bound set and moment tables, refreshed
 *    from an RNG stream keyed by (seed, chain, k);
 *  - each log density the kernel asks for is log p(theta) plus the
 *    per-shard terms (collapsed bounds and bright rows' log Ltilde, and
 *    their D-vector gradient for the gradient kernels) gathered from every
 *    rank (fly_comm_gather) and summed in shard order on every rank.
 * Cost per iteration: one exchange per theta update (2 doubles per shard,
 * 2 + P with a gradient) and one after the z step (9 doubles per shard).
 *
 * Draws and the replicated state go into the manifest (rank 0, as an
 * ordinary run, so `summary`, `export` and `--resume` read them); each
 * rank writes its shards' chain states (theta, z, gaps) into the shards
 * themselves (table shard_ckpt), and rank 0 commits a checkpoint's
 * iteration only after every rank has written it.  A resume continues
 * exactly: the shards keep the last two checkpoints.  Rank 0 calls the
 * progress hook; when it asks to stop, every rank stops at the next
 * checkpoint (FLY_DONE, the run resumable).
 *
 * All z modes and theta kernels run; bounds must be MAP-tuned (sharded
 * tuning, shard/shard_map.h), the model logistic, on the columns as stored
 * (numeric, no missing values); --bounds fixed, --formula, --reference,
 * --full-logpost-every and --profile are refused.  Chains run one after
 * another.
 */
#ifndef FLY_SHARD_SAMPLE_H
#define FLY_SHARD_SAMPLE_H

#include <stdint.h>

#include "run/run.h"
#include "util/err.h"

/* Whether the database at path is a shard manifest (0 if it cannot be
 * opened: the caller's own open reports that). */
int    fly_shard_path_is_manifest(const char *path);

/* Run (resume_id 0) or resume (resume_id: the run's id in the manifest,
 * c read back from it) a sampling job on the manifest at manifest_path;
 * every rank calls it with the same arguments.  Joins the ranks
 * (fly_comm_open) and leaves them before returning.  Errors: as
 * fly_run_sample's; FLY_MISUSE for what a manifest cannot run (above). */
fly_rc fly_shard_sample(const char *manifest_path, fly_run_cfg *c, int64_t resume_id,
                        const fly_run_hooks *hooks, fly_run_result *res, fly_err *err);

#endif
