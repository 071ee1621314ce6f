/*
 * args.c -- option parsing for the subcommands (see args.h).
 *
 * Strict by design: anything not declared is an error, numbers must parse
 * completely and lie in their range.  A statistician mistyping --iters
 * gets told so instead of a silent default.
 */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fly_opt *fly_args_get(fly_args *a, const char *name)
{
  for(fly_opt *o = a->opts; o->name; o++)
    if( strcmp(o->name, name) == 0 ) return o;
  return NULL;
}

int fly_args_set(fly_args *a, const char *name)
{
  fly_opt *o = fly_args_get(a, name);
  return o && o->set;
}

fly_rc fly_args_parse(fly_args *a, int argc, char **argv, int max_pos,
                      fly_err *err)
{
  int only_pos = 0;
  a->n_pos = 0;
  for(int i = 0; i < argc; i++){
    const char *s = argv[i];
    if( !only_pos && strcmp(s, "--") == 0 ){ only_pos = 1; continue; }
    if( only_pos || s[0] != '-' || strcmp(s, "-") == 0 ){
      if( a->n_pos >= max_pos || a->n_pos >= FLY_ARGS_MAXPOS )
        return fly_fail(err, FLY_MISUSE, "unexpected argument '%s'", s);
      a->pos[a->n_pos++] = s;
      continue;
    }
    if( s[1] != '-' )
      return fly_fail(err, FLY_MISUSE, "unknown option '%s' (options are "
                      "spelled --name)", s);
    const char *name = s + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    fly_opt *o = NULL;
    for(fly_opt *p = a->opts; p->name; p++)
      if( strlen(p->name) == len && strncmp(p->name, name, len) == 0 ){ o = p; break; }
    if( !o )
      return fly_fail(err, FLY_MISUSE, "unknown option '--%.*s'", (int)len, name);
    if( o->set )
      return fly_fail(err, FLY_MISUSE, "option --%s given twice", o->name);
    o->set = 1;
    o->value = NULL;
    switch( o->kind ){
    case FLY_OPT_FLAG:
      if( eq ) return fly_fail(err, FLY_MISUSE, "option --%s takes no value", o->name);
      break;
    case FLY_OPT_OPTVALUE:
      if( eq ) o->value = eq + 1;
      break;
    case FLY_OPT_VALUE:
      if( eq ) o->value = eq + 1;
      else if( i + 1 < argc ) o->value = argv[++i];
      else return fly_fail(err, FLY_MISUSE, "option --%s needs a value", o->name);
      if( !o->value[0] )
        return fly_fail(err, FLY_MISUSE, "option --%s needs a non-empty value", o->name);
      break;
    }
  }
  return FLY_OK;
}

const char *fly_args_str(fly_args *a, const char *name, const char *def)
{
  fly_opt *o = fly_args_get(a, name);
  return o && o->set && o->value ? o->value : def;
}

fly_rc fly_args_int(fly_args *a, const char *name, int64_t def, int64_t lo,
                    int64_t hi, int64_t *out, fly_err *err)
{
  fly_opt *o = fly_args_get(a, name);
  if( !o || !o->set || !o->value ){ *out = def; return FLY_OK; }
  char *end;
  errno = 0;
  long long v = strtoll(o->value, &end, 10);
  if( end == o->value || *end || errno == ERANGE )
    return fly_fail(err, FLY_MISUSE, "--%s: '%s' is not an integer", name, o->value);
  if( v < lo || v > hi )
    return fly_fail(err, FLY_MISUSE, "--%s: %lld is out of range [%lld, %lld]",
                    name, v, (long long)lo, (long long)hi);
  *out = v;
  return FLY_OK;
}

fly_rc fly_args_real(fly_args *a, const char *name, double def, double lo,
                     double hi, double *out, fly_err *err)
{
  fly_opt *o = fly_args_get(a, name);
  if( !o || !o->set || !o->value ){ *out = def; return FLY_OK; }
  char *end;
  errno = 0;
  double v = strtod(o->value, &end);
  if( end == o->value || *end || errno == ERANGE || !isfinite(v) )
    return fly_fail(err, FLY_MISUSE, "--%s: '%s' is not a finite number", name, o->value);
  if( v < lo || v > hi )
    return fly_fail(err, FLY_MISUSE, "--%s: %g is out of range [%g, %g]", name, v, lo, hi);
  *out = v;
  return FLY_OK;
}

void fly_args_usage(const fly_args *a, const char *cmd, const char *synopsis)
{
  fprintf(stderr, "usage: flydb %s %s\n", cmd, synopsis);
  for(const fly_opt *o = a->opts; o->name; o++){
    char lhs[64];
    snprintf(lhs, sizeof lhs, "--%s%s", o->name,
             o->kind == FLY_OPT_VALUE ? " X" : o->kind == FLY_OPT_OPTVALUE ? "[=X]" : "");
    fprintf(stderr, "  %-22s %s\n", lhs, o->help);
  }
}

int fly_report(fly_rc rc, const fly_err *err)
{
  if( rc == FLY_OK ) return 0;
  fprintf(stderr, "flydb: %s\n", err && err->msg[0] ? err->msg : fly_rc_str(rc));
  return 1;
}

int fly_usage_error(const fly_args *a, const char *cmd, const char *synopsis,
                    const fly_err *err)
{
  fprintf(stderr, "flydb %s: %s\n", cmd, err->msg);
  fly_args_usage(a, cmd, synopsis);
  return 2;
}
