/*
 * ckpt.h -- the checkpoint of one chain: its byte layout, writing, and a
 * validating parser shared by the chain (resume), `flydb check` and the
 * checkpoint fuzz harness.
 *
 * Layout (native byte order, as written by the same build family):
 *   fly_ckpt_head | theta: P doubles | kernel state: klen bytes |
 *   B x { int64 row, double gap }   (the bright rows, in zset order)
 * The kernel state is opaque here: the theta kernel named by `kernel`
 * writes and reads it.  Includes only err.h.
 */
#ifndef FLY_CKPT_H
#define FLY_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define FLY_CKPT_MAGIC   0x43594c46u  /* "FLYC" */
#define FLY_CKPT_VERSION 2u

typedef struct fly_ckpt_head {
  uint32_t magic, version;
  uint32_t P;          /* parameters */
  uint32_t kernel;     /* theta kernel (fly_kernel) that wrote the state */
  int64_t  B;          /* bright rows (0 for regular chains) */
  uint64_t klen;       /* bytes of kernel state */
  double   lp;         /* log density of the current state */
  double   base;       /* log prior + collapsed bounds at theta (FlyMC) */
  uint64_t rng[4];     /* RNG state */
} fly_ckpt_head;

/* A parsed checkpoint: pointers into the blob (unaligned: copy with
 * memcpy, or use fly_ckpt_row). */
typedef struct fly_ckpt_view {
  fly_ckpt_head        head;
  const unsigned char *theta;   /* P doubles */
  const unsigned char *kstate;  /* klen bytes */
  const unsigned char *rows;    /* B records of 16 bytes */
} fly_ckpt_view;

/* Bytes of a checkpoint with these sizes. */
size_t fly_ckpt_size(size_t P, size_t klen, int64_t B);

/* Write the head and theta; returns a pointer to the kernel-state area
 * (klen bytes) and sets *rows to the bright-row area.  buf holds
 * fly_ckpt_size(...) bytes. */
unsigned char *fly_ckpt_write(void *buf, const fly_ckpt_head *h,
                              const double *theta, unsigned char **rows);
void fly_ckpt_put_row(unsigned char *rows, int64_t i, int64_t row, double gap);

/* Validate blob (len bytes) for a chain of P parameters over N rows: magic,
 * version, P, sizes adding up to len, 0 <= B <= N, every row in [0, N) and
 * none repeated (uses a bitmap of N bits: FLY_NOMEM possible), finite theta,
 * RNG state not all zero.  FLY_CORRUPT with the reason otherwise. */
fly_rc fly_ckpt_parse(const void *blob, size_t len, size_t P, int64_t N,
                      fly_ckpt_view *v, fly_err *err);
void   fly_ckpt_row(const fly_ckpt_view *v, int64_t i, int64_t *row, double *gap);

#endif
