/*
 * rng.h -- xoshiro256++ pseudo-random numbers, reproducible per chain.
 *
 * The whole state is four 64-bit words (fly_rng is transparent so it can be
 * copied into a checkpoint).  Chain c of a run seeded with S uses
 * fly_rng_seed(&r, S, c): splitmix64 expands S, then c jumps of 2^128 steps
 * give non-overlapping streams.  No function allocates.
 */
#ifndef FLY_RNG_H
#define FLY_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct fly_rng { uint64_t s[4]; } fly_rng;

/* Seed stream `stream` (0,1,2,...) of seed `seed`. */
void     fly_rng_seed(fly_rng *r, uint64_t seed, uint64_t stream);
/* Advance 2^128 steps (xoshiro256 jump polynomial). */
void     fly_rng_jump(fly_rng *r);
uint64_t fly_rng_u64(fly_rng *r);
/* Uniform on the open interval (0,1): never 0, never 1 (safe for log). */
double   fly_rng_uniform(fly_rng *r);
/* out[0..n) = n successive fly_rng_uniform draws (the same stream), with
 * the state kept out of memory in between: a z step's thousands. */
void     fly_rng_uniforms(fly_rng *r, double *out, size_t n);
/* Standard normal (polar method, no cached second variate: state is s[] only). */
double   fly_rng_normal(fly_rng *r);
/* out[0..n) iid standard normal: the polar method's two variates of a draw
 * both used (half the log and sqrt calls of n fly_rng_normal; the second of
 * the last pair is dropped when n is odd, so the state stays s[] only). */
void     fly_rng_normals(fly_rng *r, double *out, size_t n);
/* 1 with probability p (p<=0 -> 0, p>=1 -> 1). */
int      fly_rng_bernoulli(fly_rng *r, double p);
/* Uniform integer in [0, n), unbiased (Lemire); n > 0. */
uint64_t fly_rng_below(fly_rng *r, uint64_t n);
/* Number of failures before the first success of Bernoulli(p) trials,
 * p in (0,1]; saturates at UINT64_MAX for tiny p.  Used for geometric
 * skipping: the next candidate index is current + 1 + geometric(p). */
uint64_t fly_rng_geometric(fly_rng *r, double p);

#endif
