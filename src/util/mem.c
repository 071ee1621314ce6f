/*
 * mem.c -- allocation with overflow checks, the only place malloc is called
 * directly so an out-of-memory countdown can be added in one spot.
 */
#include "mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

char *fly_strdup(const char *s)
{
  if( !s ) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if( d ) memcpy(d, s, n);
  return d;
}
