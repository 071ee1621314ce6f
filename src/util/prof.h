/*
 * prof.h -- where a chain's time goes: exclusive wall-clock times of the
 * parts of an iteration (`flydb sample --profile`).
 *
 * A profile is a stack of parts.  fly_prof_push(p, part) charges the time
 * since the last mark to the part on top and makes `part` the top;
 * fly_prof_pop charges the top and returns to the part below.  So every
 * instant between fly_prof_start and fly_prof_stop is charged to exactly
 * one part, the innermost one open: times are EXCLUSIVE and add up to the
 * profiled wall time (a row read inside the z step counts as a read, not
 * as z; a page decoded inside a read counts as decode).  Time outside any
 * pushed part is FLY_PROF_OTHER.
 *
 * Cost: off (the default), a push or pop is one load and a predictable
 * branch; on, one clock_gettime(CLOCK_MONOTONIC) (vDSO, ~20-50 ns).  A
 * profile belongs to one thread.  Pushes deeper than FLY_PROF_DEPTH are
 * charged to the part on top (never overflow).
 */
#ifndef FLY_PROF_H
#define FLY_PROF_H

#include <time.h>

typedef enum {
  FLY_PROF_OTHER = 0,   /* the loop outside every part below */
  FLY_PROF_THETA,       /* theta kernel incl. bright-row likelihoods */
  FLY_PROF_Z,           /* z step (without its row reads) */
  FLY_PROF_READ,        /* fetching rows from pages, cache hits included */
  FLY_PROF_DECODE,      /* page fetch: BLOB read, checksum, LZ4 decode */
  FLY_PROF_WRITE,       /* draws, diagnostics, checkpoints into the trace */
  FLY_PROF_N
} fly_prof_part;

#define FLY_PROF_DEPTH 8

typedef struct fly_prof {
  int    on;
  int    depth;                     /* index of the top of stack */
  int    stack[FLY_PROF_DEPTH];
  double mark;                      /* seconds at the last push/pop */
  double t[FLY_PROF_N];             /* exclusive seconds per part */
} fly_prof;

static inline double fly_prof_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Charge the time since the last mark to the part on top of the stack. */
static inline void fly_prof_charge(fly_prof *p)
{
  double t = fly_prof_now();
  p->t[p->stack[p->depth]] += t - p->mark;
  p->mark = t;
}

static inline void fly_prof_push(fly_prof *p, fly_prof_part part)
{
  if( !p->on ) return;
  fly_prof_charge(p);
  if( p->depth + 1 < FLY_PROF_DEPTH ) p->stack[++p->depth] = (int)part;
}

static inline void fly_prof_pop(fly_prof *p)
{
  if( !p->on ) return;
  fly_prof_charge(p);
  if( p->depth > 0 ) p->depth--;
}

/* Zero the times and start charging FLY_PROF_OTHER. */
void fly_prof_start(fly_prof *p);
/* Charge the time up to now and stop. */
void fly_prof_stop(fly_prof *p);
/* The part's name: "theta", "z", "read", "decode", "write", "other". */
const char *fly_prof_name(fly_prof_part part);
/* Sum of the parts' times. */
double fly_prof_total(const fly_prof *p);

#endif
