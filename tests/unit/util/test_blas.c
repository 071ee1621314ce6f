/*
 * test_blas.c -- util/blas.h: after fly_blas_serial the process has no
 * OpenBLAS pool threads left (only this one), BLAS still computes, a large
 * product does not start the pool again, and a second call changes
 * nothing.
 */
#include "util/blas.h"

#include <cblas.h>
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>

#include "tap.h"

/* threads of this process, from /proc/self/task; -1 if unreadable */
static int threads(void)
{
  DIR *d = opendir("/proc/self/task");
  if( !d ) return -1;
  int n = 0;
  for(struct dirent *e; (e = readdir(d)); ) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void *again(void *u)
{
  (void)u;
  fly_blas_serial();
  return NULL;
}

int main(void)
{
  int before = threads();
  if( before < 0 ) TAP_SKIP("no /proc/self/task");
  else TAP_DIAG("threads at start: %d (OpenBLAS's pool, if any, included)", before);

  fly_blas_serial();
  TAP_OK(threads() == 1, "after fly_blas_serial: one thread (%d)", threads());
  TAP_OK(openblas_get_num_threads() == 1, "OpenBLAS counts one thread");

  /* a product large enough that a threaded OpenBLAS splits it */
  enum { n = 400 };
  double *a = malloc(sizeof *a * n * n), *b = malloc(sizeof *b * n * n),
         *c = malloc(sizeof *c * n * n);
  for(int i = 0; i < n * n; i++){ a[i] = 1.0; b[i] = (i % n) == (i / n); }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 2.0, a, n,
              b, n, 0.0, c, n);
  int right = 1;
  for(int i = 0; i < n * n; i++) right &= c[i] == 2.0;
  TAP_OK(right, "a %dx%d product is right", n, n);
  TAP_OK(threads() == 1, "and started no thread (%d)", threads());

  pthread_t th;
  pthread_create(&th, NULL, again, NULL);
  pthread_join(th, NULL);
  TAP_OK(threads() == 1, "a second call, from another thread, starts none (%d)",
         threads());
  free(a); free(b); free(c);
  return tap_done();
}
