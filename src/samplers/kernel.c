/*
 * kernel.c -- the list of theta kernels (kernel.h).  A kernel's position
 * is its number (fly_kernel in flymc/chain.h), which checkpoints record:
 * append, never reorder.
 */
#include "samplers/kernel.h"

#include <string.h>

const fly_kernel_type *const fly_kernel_types[] = {
  &fly_kernel_mh,
  &fly_kernel_mala,
  &fly_kernel_slice,
  &fly_kernel_hmc,
  &fly_kernel_nuts,
  NULL
};

const fly_kernel_type *fly_kernel_type_find(const char *name)
{
  for(size_t i = 0; fly_kernel_types[i]; i++)
    if( strcmp(fly_kernel_types[i]->name, name) == 0 ) return fly_kernel_types[i];
  return NULL;
}
