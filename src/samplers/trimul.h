/*
 * trimul.h -- products with the lower-triangular preconditioner L of the
 * gradient kernels (hmc.c, nuts.c): P x P, row-major, NULL = identity.
 * Inline because they sit in the leapfrog loop; O(P^2/2) flops, no
 * allocation.
 */
#ifndef FLY_TRIMUL_H
#define FLY_TRIMUL_H

#include <stddef.h>

/* r += c L^T v */
static inline void fly_trimul_add_lt(const double *L, size_t P, double c, const double *v,
                                     double *r)
{
  if( !L ){
    for(size_t i = 0; i < P; i++) r[i] += c * v[i];
    return;
  }
  for(size_t i = 0; i < P; i++){
    const double *row = L + i * P;
    double ci = c * v[i];
    for(size_t j = 0; j <= i; j++) r[j] += row[j] * ci;
  }
}

/* x += c L v */
static inline void fly_trimul_add_l(const double *L, size_t P, double c, const double *v,
                                    double *x)
{
  for(size_t i = 0; i < P; i++){
    double s = 0;
    if( L ){
      const double *row = L + i * P;
      for(size_t j = 0; j <= i; j++) s += row[j] * v[j];
    }else{
      s = v[i];
    }
    x[i] += c * s;
  }
}

#endif
