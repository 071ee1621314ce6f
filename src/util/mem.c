/*
 * mem.c -- allocation with overflow checks, the only place malloc is called
 * directly so an out-of-memory countdown can be added in one spot.
 */
#include "mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void *fly_alloc_array(size_t n, size_t size)
{
  if( size && n > SIZE_MAX / size ) return NULL;
  if( n == 0 || size == 0 ) return calloc(1, 1);
  return calloc(n, size);
}

void *fly_realloc_array(void *p, size_t n, size_t size)
{
  if( size && n > SIZE_MAX / size ) return NULL;
  size_t b = n * size;
  return realloc(p, b ? b : 1);
}

void fly_free(void *p) { free(p); }

/* The mapping's length sits in a header of UNTOUCHED_HEAD bytes before
 * the block (the only page written here); the block stays 64-aligned. */
#define UNTOUCHED_HEAD 64

void *fly_alloc_untouched(size_t n, size_t size)
{
  if( size && n > (SIZE_MAX - UNTOUCHED_HEAD) / size ) return NULL;
  size_t len = UNTOUCHED_HEAD + n * size;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if( m == MAP_FAILED ) return NULL;
  memcpy(m, &len, sizeof len);
  return (char *)m + UNTOUCHED_HEAD;
}

void fly_free_untouched(void *p)
{
  if( !p ) return;
  size_t len;
  char *m = (char *)p - UNTOUCHED_HEAD;
  memcpy(&len, m, sizeof len);
  (void)munmap(m, len);
}

/* Transparent huge pages are 2 MiB on x86-64 and arm64 (4 KiB base pages);
 * with THP in "madvise" mode (Debian's default) only advised ranges get
 * them.  Only the 2 MiB-aligned interior of the block is advised. */
void fly_mem_random_access(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t b = ((uintptr_t)p + bytes) & ~(huge - 1);
  if( p && b > a ) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

void fly_mem_prefault(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
  long ps = sysconf(_SC_PAGESIZE);
  const uintptr_t pg = ps > 0 ? (uintptr_t)ps : 4096;
  uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1);
  uintptr_t b = ((uintptr_t)p + bytes) & ~(pg - 1);
  if( p && b > a ) (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

char *fly_strdup(const char *s)
{
  if( !s ) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if( d ) memcpy(d, s, n);
  return d;
}
