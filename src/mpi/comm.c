/*
 * comm.c -- ranks and the ordered gather (see comm.h).
 *
 * The gather is MPI_Allgatherv of each rank's block of shards: blocks are
 * contiguous in shard order, so the receive buffer is the table of all
 * shards in order.  Cost per call: one collective of S x len doubles.
 * Compiled without FLY_HAVE_MPI, the same calls serve one rank.
 */
#include "mpi/comm.h"

#include <stdlib.h>
#include <string.h>

#ifdef FLY_HAVE_MPI
#include <mpi.h>
#endif

#include "util/mem.h"

struct fly_comm {
  int rank, size;
  int mpi;              /* MPI_Init was called */
};

fly_rc fly_comm_open(fly_comm **pc, fly_err *err)
{
  fly_comm *c = fly_alloc_array(1, sizeof *c);
  *pc = NULL;
  if( !c ) return fly_fail(err, FLY_NOMEM, "communicator");
  c->size = 1;
#ifdef FLY_HAVE_MPI
  if( getenv("OMPI_COMM_WORLD_SIZE") ){
    if( MPI_Init(NULL, NULL) != MPI_SUCCESS ){
      fly_free(c);
      return fly_fail(err, FLY_IO, "MPI_Init failed");
    }
    c->mpi = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
  }
#else
  /* Started by mpirun with several ranks, each would think itself alone
   * and do the whole job, writing the same files. */
  const char *n = getenv("OMPI_COMM_WORLD_SIZE");
  if( n && atoi(n) > 1 ){
    fly_free(c);
    return fly_fail(err, FLY_MISUSE, "started as one of %s MPI ranks, but this flydb "
                    "was built without MPI (meson option -Dmpi)", n);
  }
#endif
  *pc = c;
  return FLY_OK;
}

void fly_comm_close(fly_comm *c)
{
  if( !c ) return;
#ifdef FLY_HAVE_MPI
  if( c->mpi ) MPI_Finalize();
#endif
  fly_free(c);
}

int fly_comm_launch_rank(void)
{
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  return r ? atoi(r) : 0;
}

int fly_comm_rank(const fly_comm *c) { return c->rank; }
int fly_comm_size(const fly_comm *c) { return c->size; }
int fly_comm_is_mpi(const fly_comm *c) { return c->mpi; }

int64_t fly_comm_shard_first(int64_t S, int R, int r)
{
  return (int64_t)r * (S / R) + ((int64_t)r * (S % R)) / R;
}

fly_rc fly_comm_gather(fly_comm *c, int64_t S, size_t len, const double *mine,
                       double *all, fly_err *err)
{
  if( S < c->size )
    return fly_fail(err, FLY_MISUSE, "%d ranks for %lld shards: at most one "
                    "rank per shard", c->size, (long long)S);
  int64_t k0 = fly_comm_shard_first(S, c->size, c->rank);
  int64_t k1 = fly_comm_shard_first(S, c->size, c->rank + 1);
  if( !c->mpi ){
    memcpy(all, mine, (size_t)S * len * sizeof *all);
    return FLY_OK;
  }
#ifdef FLY_HAVE_MPI
  int *cnt = fly_alloc_array((size_t)c->size, sizeof *cnt);
  int *off = fly_alloc_array((size_t)c->size, sizeof *off);
  if( !cnt || !off ){
    fly_free(cnt);
    fly_free(off);
    return fly_fail(err, FLY_NOMEM, "gather counts");
  }
  for(int r = 0; r < c->size; r++){
    int64_t a = fly_comm_shard_first(S, c->size, r), b = fly_comm_shard_first(S, c->size, r + 1);
    cnt[r] = (int)((b - a) * (int64_t)len);
    off[r] = (int)(a * (int64_t)len);
  }
  MPI_Allgatherv(mine, (int)((k1 - k0) * (int64_t)len), MPI_DOUBLE, all, cnt, off,
                 MPI_DOUBLE, MPI_COMM_WORLD);
  fly_free(cnt);
  fly_free(off);
#else
  (void)k0; (void)k1;
#endif
  return FLY_OK;
}

int fly_comm_any(fly_comm *c, int flag)
{
#ifdef FLY_HAVE_MPI
  if( c->mpi ){
    int out = 0;
    MPI_Allreduce(&flag, &out, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    return out;
  }
#endif
  (void)c;
  return flag;
}

fly_rc fly_comm_sync(fly_comm *c, fly_rc rc, const char *what, fly_err *err)
{
  if( fly_comm_any(c, rc != FLY_OK) && rc == FLY_OK )
    rc = fly_fail(err, FLY_IO, "%s", what);
  return rc;
}
