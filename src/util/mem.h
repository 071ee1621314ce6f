/*
 * mem.h -- checked allocation.
 *
 * fly_alloc_array() multiplies with an overflow check and zero-fills.
 * Whoever creates an object frees it; fly_free(NULL) is a no-op.
 */
#ifndef FLY_MEM_H
#define FLY_MEM_H

#include <stddef.h>

/* n*size zero-filled bytes, or NULL if the product overflows or malloc fails. */
void *fly_alloc_array(size_t n, size_t size);
/* Resize p to n*size bytes (new bytes are NOT zeroed); NULL on overflow/failure,
 * in which case p is untouched. */
void *fly_realloc_array(void *p, size_t n, size_t size);
void  fly_free(void *p);
/* n*size zero bytes that this call does not touch: they come straight
 * from the kernel (an anonymous mapping), so pages never written cost
 * neither time nor memory.  For a large cache a run may never fill:
 * calloc may serve such a block from memory freed earlier and then clears
 * it whole.  NULL on overflow or failure; release with
 * fly_free_untouched (NULL is a no-op), never with fly_free. */
void *fly_alloc_untouched(size_t n, size_t size);
void  fly_free_untouched(void *p);
/* A large block that will be read at random (an index of N rows): ask the
 * kernel for huge pages, so a random access costs one TLB entry in 2 MiB
 * rather than one in 4 KiB.  Advice only: nothing changes if refused.
 * Call before the block is first written. */
void  fly_mem_random_access(void *p, size_t bytes);

/* A fresh block about to be written whole: map its pages now, in one
 * call instead of a fault a page (the kernel's MADV_POPULATE_WRITE, where
 * it has one; else nothing).  Only whole pages inside the block are
 * touched; failure is harmless (the writes fault them in as usual). */
void  fly_mem_prefault(void *p, size_t bytes);
/* strdup that returns NULL on failure; NULL in gives NULL out. */
char *fly_strdup(const char *s);

#endif
