/*
 * blas.c -- OpenBLAS on the calling thread only (see blas.h).
 */
#include "util/blas.h"

#include <pthread.h>

/* OpenBLAS's own entry points; cblas.h declares the first only in some
 * versions.  blas_thread_shutdown_ is exported by the pthread and OpenMP
 * builds (their fork handler calls it) and absent from the serial build,
 * which has no pool: weak, and called only when present. */
void openblas_set_num_threads(int);
extern int blas_thread_shutdown_(void) __attribute__((weak));

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void serial(void)
{
  /* first the count, so no BLAS call asks for the pool again; then the
   * pool's threads, which exit at once instead of polling until their
   * timeout */
  openblas_set_num_threads(1);
  if( blas_thread_shutdown_ ) blas_thread_shutdown_();
}

void fly_blas_serial(void)
{
  pthread_once(&once, serial);
}
