/*
 * comm.h -- the ranks of a sharded job (issue 28) and the one collective
 * it needs: every rank's per-shard values, gathered on every rank in shard
 * order.
 *
 * Shard ownership is fixed by (S, R): rank r owns shards
 * floor(r S / R) .. floor((r+1) S / R) - 1, contiguous, so R <= S ranks
 * each own at least one.  A sum over shards is always taken by
 * fly_comm_gather followed by a loop over k = 0..S-1 on every rank, never by
 * MPI_Allreduce (whose order is unspecified): the bits of the result are
 * then the same for every R, and for the single process (R = 1, no MPI).
 *
 * Without MPI (not built with it, or the program not started by mpirun:
 * no OMPI_COMM_WORLD_SIZE in the environment) there is one rank and the
 * gather is a copy.  Under MPI, errors abort the job (MPI_ERRORS_ARE_FATAL
 * on MPI_COMM_WORLD: a rank killed by a signal ends every rank, no hang).
 */
#ifndef FLY_COMM_H
#define FLY_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct fly_comm fly_comm;

/* Join the job: MPI_Init when started by mpirun and built with MPI, else
 * one rank.  FLY_MISUSE when started as one of several ranks by a flydb
 * built without MPI.  *pc NULL on failure; close with fly_comm_close. */
fly_rc fly_comm_open(fly_comm **pc, fly_err *err);
void   fly_comm_close(fly_comm *c);                   /* NULL: no-op; MPI_Finalize */

/* This process's rank as mpirun started it (OMPI_COMM_WORLD_RANK), 0 when
 * it was not: before or after the job, so a command prints the result all
 * ranks share on rank 0 only. */
int    fly_comm_launch_rank(void);

int    fly_comm_rank(const fly_comm *c);
int    fly_comm_size(const fly_comm *c);
int    fly_comm_is_mpi(const fly_comm *c);

/* The first shard of rank r of R among S (r = R: S). */
int64_t fly_comm_shard_first(int64_t S, int R, int r);

/* Every rank passes mine: the len values of each shard it owns, in shard
 * order; all receives S x len values, shard k's at all + k len, on every
 * rank.  FLY_MISUSE if R > S.  Memory: a count table of R entries. */
fly_rc fly_comm_gather(fly_comm *c, int64_t S, size_t len, const double *mine,
                       double *all, fly_err *err);

/* The bitwise OR of flag over the ranks (1 if any rank failed), so all
 * ranks leave a collective step together. */
int    fly_comm_any(fly_comm *c, int flag);

/* Every rank passes its rc of a step; returns it if it failed, else
 * FLY_IO with `what` ("another rank failed ...") if any other rank's
 * failed, else FLY_OK: the same outcome on every rank. */
fly_rc fly_comm_sync(fly_comm *c, fly_rc rc, const char *what, fly_err *err);

#endif
