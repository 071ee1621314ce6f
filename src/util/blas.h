/*
 * blas.h -- OpenBLAS on the calling thread only.
 *
 * flydb runs its own threads (chains, halves of the pages, parse workers)
 * and calls BLAS on small blocks from each; OpenBLAS's threads would only
 * compete with them, and some of its results (dpotri's bits, so the
 * Laplace covariance a bound set stores) depend on its thread count.  The
 * pthread build of OpenBLAS also starts its pool when the library loads,
 * and each pool thread polls with sched_yield for about 2^28 cycles before
 * it sleeps: about a tenth of a CPU-second at the start of every process,
 * taken from the ingest's and the run's own threads on a small machine.
 *
 * fly_blas_serial: one BLAS thread from now on, and the pool's threads
 * ended.  Once a process: later calls return at once, from any thread.
 * Call it before any BLAS call that should run serially; nothing else in
 * flydb may call openblas_set_num_threads (after the pool is ended, that
 * call starts it again).
 */
#ifndef FLY_BLAS_H
#define FLY_BLAS_H

void fly_blas_serial(void);

#endif
