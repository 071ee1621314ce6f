/*
 * tap.h -- a minimal TAP producer for unit tests (Redis testhelp.h style).
 *
 *   TAP_OK(cond, "name %d", i);   prints "ok N - name" or "not ok N - name"
 *   TAP_SKIP("why %d", i);          prints "ok N # SKIP why" (a check that cannot run here)
 *   return tap_done();             prints the plan, exit status 0 iff all ok
 */
#ifndef FLY_TAP_H
#define FLY_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static inline int tap_ok_(int cond, const char *file, int line, const char *fmt, ...)
{
  va_list ap;
  tap_n++;
  printf("%s %d - ", cond ? "ok" : "not ok", tap_n);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  if( !cond ){
    tap_failed++;
    printf("#   failed at %s:%d\n", file, line);
  }
  fflush(stdout);
  return cond;
}
#define TAP_OK(cond, ...) tap_ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define TAP_DIAG(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

/* A check that cannot be made here: "ok N # SKIP why" (TAP counts it, not
 * as a failure). */
static inline void tap_skip_(const char *fmt, ...)
{
  va_list ap;
  tap_n++;
  printf("ok %d # SKIP ", tap_n);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}
#define TAP_SKIP(...) tap_skip_(__VA_ARGS__)

/* 1 when long double carries more precision than double.  Under valgrind
 * x87 arithmetic runs in double precision, so a long double reference is
 * then no better than the code it checks. */
static inline int tap_long_double_exact(void)
{
  volatile long double one = 1.0L, tiny = 0x1.0p-60L;
  return one + tiny != one;
}

static inline int tap_done(void)
{
  printf("1..%d\n", tap_n);
  if( tap_failed ) printf("# %d of %d failed\n", tap_failed, tap_n);
  return tap_failed ? 1 : 0;
}

#endif
