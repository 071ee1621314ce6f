/*
 * err.c -- the one place failures are recorded.
 *
 * fly_fail_at() formats the message into the caller's fly_err and returns the
 * code, so a failing path reads `return fly_fail(err, FLY_PARSE, ...)`.  Set a
 * breakpoint here to stop at the first failure of any kind.
 */
#include "err.h"

#include <stdio.h>
#include <string.h>

static const char *const rc_str[FLY_RC_COUNT] = {
#define FLY_RC_STR(name, str) str,
  FLY_RC_LIST(FLY_RC_STR)
#undef FLY_RC_STR
};

const char *fly_rc_str(fly_rc rc)
{
  if( (int)rc < 0 || rc >= FLY_RC_COUNT ) return "unknown error";
  return rc_str[rc];
}

fly_rc fly_fail_at(fly_err *err, fly_rc code, const char *file, int line,
                   const char *fmt, ...)
{
  if( err ){
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    err->file = file;
    err->line = line;
  }
  return code;
}

fly_rc fly_err_prefix(fly_err *err, const char *fmt, ...)
{
  char pre[FLY_ERR_MSG], old[FLY_ERR_MSG];
  va_list ap;
  if( !err || err->code == FLY_OK ) return FLY_MISUSE;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  /* pre + ": " + old, truncated to fit */
  size_t np = strnlen(pre, sizeof pre - 1), no = strnlen(old, sizeof old - 1);
  if( np > sizeof err->msg - 3 ) np = sizeof err->msg - 3;
  memcpy(err->msg, pre, np);
  memcpy(err->msg + np, ": ", 2);
  if( no > sizeof err->msg - np - 3 ) no = sizeof err->msg - np - 3;
  memcpy(err->msg + np + 2, old, no);
  err->msg[np + 2 + no] = 0;
  return err->code;
}

void fly_err_clear(fly_err *err)
{
  if( !err ) return;
  err->code = FLY_OK;
  err->msg[0] = 0;
  err->file = NULL;
  err->line = 0;
}
