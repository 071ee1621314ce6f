/*
 * err.h -- return codes and the error record every fallible function fills.
 *
 * Functions return a fly_rc: FLY_OK, an error code, or a status (FLY_ROW,
 * FLY_DONE).  The last parameter of a fallible function is `fly_err *err`,
 * caller-owned and possibly NULL.  Every failure passes through fly_fail_at()
 * (use the fly_fail() macro), one place to set a breakpoint.
 */
#ifndef FLY_ERR_H
#define FLY_ERR_H

#include <stdarg.h>

/* X-macro list: name, human string.  Codes first, then statuses. */
#define FLY_RC_LIST(X)                                   \
  X(OK,      "ok")                                       \
  X(NOMEM,   "out of memory")                            \
  X(IO,      "I/O error")                                \
  X(CORRUPT, "corrupt data")                             \
  X(PARSE,   "parse error")                              \
  X(RANGE,   "value out of range")                       \
  X(SQL,     "database error")                           \
  X(NUMERIC, "numerical failure")                        \
  X(MISUSE,  "misuse")                                   \
  X(ROW,     "row available")                            \
  X(DONE,    "done")

typedef enum {
#define FLY_RC_ENUM(name, str) FLY_##name,
  FLY_RC_LIST(FLY_RC_ENUM)
#undef FLY_RC_ENUM
  FLY_RC_COUNT
} fly_rc;

#define FLY_ERR_MSG 512

typedef struct fly_err {
  fly_rc      code;              /* last failure code, FLY_OK if none */
  char        msg[FLY_ERR_MSG];  /* human message naming the data */
  const char *file;              /* source file of the fly_fail() call */
  int         line;              /* source line of the fly_fail() call */
} fly_err;

/* The string for a code ("parse error"); never NULL. */
const char *fly_rc_str(fly_rc rc);

/* Record a failure in err (if non-NULL) and return code.  printf format. */
fly_rc fly_fail_at(fly_err *err, fly_rc code, const char *file, int line,
                   const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 5, 6)))
#endif
  ;
#define fly_fail(err, code, ...) \
  fly_fail_at((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Prefix an existing message with context ("page 3: ..."); keeps the code.
 * Returns err->code (FLY_MISUSE if err is NULL or holds no failure). */
fly_rc fly_err_prefix(fly_err *err, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 2, 3)))
#endif
  ;

/* Reset to "no failure". */
void fly_err_clear(fly_err *err);

/* Checks that stay on in release builds (SQLite's ALWAYS/NEVER idea):
 * they evaluate to the condition so they can guard a recovery path. */
#define FLY_ALWAYS(x) (__builtin_expect(!!(x), 1))
#define FLY_NEVER(x)  (__builtin_expect(!!(x), 0))

#endif
