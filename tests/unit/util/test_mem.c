/*
 * test_mem.c -- util/mem.h: fly_alloc_untouched gives zero, writable
 * memory whose pages are not resident until written (checked with
 * mincore, after calloc has been given back a written block of the same
 * size that it would hand out again), and refuses a size that overflows.
 */
#include "util/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"

/* resident pages of the whole pages in [p, p + bytes); -1 if mincore fails */
static long resident_pages(const void *p, size_t bytes)
{
  const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1), b = ((uintptr_t)p + bytes) & ~(pg - 1);
  size_t n = (b - a) / pg;
  unsigned char *v = malloc(n ? n : 1);
  long r = 0;
  if( !v || mincore((void *)a, b - a, v) != 0 ) r = -1;
  for(size_t i = 0; r >= 0 && i < n; i++) r += v[i] & 1;
  free(v);
  return r;
}

int main(void)
{
  const size_t bytes = (size_t)16 << 20, n = bytes / sizeof(double);

  /* glibc maps the first block and raises its threshold when it is
   * freed; the second then comes from the heap, is written and freed, and
   * a calloc of that size would get those resident pages back */
  double *a = fly_alloc_array(n, sizeof *a);
  fly_free(a);
  double *b = fly_alloc_array(n, sizeof *b);
  TAP_OK(a && b, "two calloc of 16 MiB");
  if( b ) memset(b, 1, bytes);
  fly_free(b);

  double *p = fly_alloc_untouched(n, sizeof *p);
  TAP_OK(p != NULL, "16 MiB untouched");
  long r = p ? resident_pages(p, bytes) : -1;
  if( r < 0 ) TAP_SKIP("mincore refused");
  else TAP_OK(r <= 1, "%ld of its %zu pages resident (at most the header's)", r,
              bytes / (size_t)sysconf(_SC_PAGESIZE));
  int zero = 1;
  for(size_t i = 0; p && i < n; i += 512) zero &= p[i] == 0.0;
  TAP_OK(p && zero, "reads as zeros");
  if( p ){
    p[0] = 1.5;
    p[n - 1] = -2.5;
  }
  TAP_OK(p && p[0] == 1.5 && p[n - 1] == -2.5, "first and last values writable");
  fly_free_untouched(p);
  fly_free_untouched(NULL);

  TAP_OK(fly_alloc_untouched(SIZE_MAX / 8, 16) == NULL, "a size that overflows: NULL");
  TAP_OK(fly_alloc_untouched(SIZE_MAX - 8, 1) == NULL, "a size that overflows with "
         "the header: NULL");
  return tap_done();
}
