/*
 * exchange_bench.c -- the cost of one exchange of a sharded run (issue 28):
 * how long fly_comm_gather takes for S shards of len doubles each, on the
 * ranks mpirun started, and the round trip of a one-double ping-pong
 * between ranks 0 and 1 (the network's latency as MPI sees it).  Prints
 * one line on rank 0: microseconds per exchange (median of rounds) and
 * per ping-pong round trip.
 *
 *   mpirun -np 2 exchange_bench [S [len [rounds]]]    (defaults 4, 53, 2000)
 *
 * A measurement, not a test: it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <mpi.h>

#include "mpi/comm.h"
#include "util/mem.h"

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
  fly_comm *c = NULL;
  fly_err err = {0};
  int64_t S = argc > 1 ? atoll(argv[1]) : 4;
  size_t len = argc > 2 ? (size_t)atoll(argv[2]) : 53;
  int rounds = argc > 3 ? atoi(argv[3]) : 2000;
  if( fly_comm_open(&c, &err) ){
    fprintf(stderr, "exchange_bench: %s\n", err.msg);
    return 1;
  }
  int R = fly_comm_size(c), r = fly_comm_rank(c);
  int64_t k0 = fly_comm_shard_first(S, R, r), k1 = fly_comm_shard_first(S, R, r + 1);
  double *mine = fly_alloc_array((size_t)(k1 - k0) * len + 1, sizeof *mine);
  double *all = fly_alloc_array((size_t)S * len, sizeof *all);
  double *t = fly_alloc_array((size_t)rounds, sizeof *t);
  if( !mine || !all || !t ) return 1;
  for(size_t i = 0; i < (size_t)(k1 - k0) * len; i++) mine[i] = (double)i;
  for(int i = 0; i < rounds; i++){
    double t0 = now();
    if( fly_comm_gather(c, S, len, mine, all, &err) ){
      fprintf(stderr, "exchange_bench: %s\n", err.msg);
      return 1;
    }
    t[i] = now() - t0;
  }
  qsort(t, (size_t)rounds, sizeof *t, cmp);
  double gather = t[rounds / 2];
  double pp = 0;
  if( R > 1 && fly_comm_is_mpi(c) ){
    double x = 1;
    for(int i = 0; i < rounds; i++){
      double t0 = now();
      if( r == 0 ){
        MPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }else if( r == 1 ){
        MPI_Recv(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
      }
      t[i] = now() - t0;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp);
    pp = t[rounds / 2];
  }
  if( r == 0 )
    printf("ranks %d, shards %lld, %zu doubles per shard (%zu bytes gathered): "
           "%.1f us per exchange; ping-pong round trip %.1f us (medians of %d)\n", R,
           (long long)S, len, (size_t)S * len * sizeof(double), 1e6 * gather, 1e6 * pp, rounds);
  fly_free(mine);
  fly_free(all);
  fly_free(t);
  fly_comm_close(c);
  return 0;
}
