/*
 * args.h -- command-line options of the flydb subcommands.
 *
 * Each subcommand declares a table of options; fly_args_parse() accepts
 * `--name value`, `--name=value` and bare flags, collects positional
 * arguments, and reports unknown options, missing values and bad numbers
 * as usage errors (exit status 2) naming the option.  Values are kept as
 * strings; the typed getters validate ranges.
 */
#ifndef FLY_ARGS_H
#define FLY_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum { FLY_OPT_FLAG, FLY_OPT_VALUE, FLY_OPT_OPTVALUE } fly_opt_kind;

typedef struct fly_opt {
  const char  *name;     /* without the leading "--" */
  fly_opt_kind kind;     /* OPTVALUE: only --name=value gives a value */
  const char  *help;
  /* filled by fly_args_parse: */
  int          set;      /* given on the command line */
  const char  *value;    /* borrowed from argv; NULL for flags */
} fly_opt;

#define FLY_ARGS_MAXPOS 8

typedef struct fly_args {
  fly_opt    *opts;      /* terminated by name == NULL */
  const char *pos[FLY_ARGS_MAXPOS];
  int         n_pos;
} fly_args;

/* Parse argv[0..argc) (after the subcommand).  FLY_MISUSE on a usage error
 * (unknown option, missing value, a value given to a flag, too many
 * positional arguments). */
fly_rc fly_args_parse(fly_args *a, int argc, char **argv, int max_pos,
                      fly_err *err);

fly_opt *fly_args_get(fly_args *a, const char *name);
int      fly_args_set(fly_args *a, const char *name);
/* The value, or def when not given. */
const char *fly_args_str(fly_args *a, const char *name, const char *def);
/* Integer in [lo, hi]; FLY_MISUSE naming the option otherwise. */
fly_rc fly_args_int(fly_args *a, const char *name, int64_t def, int64_t lo,
                    int64_t hi, int64_t *out, fly_err *err);
/* Finite real in [lo, hi]. */
fly_rc fly_args_real(fly_args *a, const char *name, double def, double lo,
                     double hi, double *out, fly_err *err);
/* Print "  --name VALUE   help" lines. */
void   fly_args_usage(const fly_args *a, const char *cmd, const char *synopsis);

/* Print "flydb: <message>" and return the exit code for rc (0 for FLY_OK,
 * 2 for FLY_MISUSE raised by argument checks is the caller's business). */
int fly_report(fly_rc rc, const fly_err *err);
/* Print the usage error and the usage text; return 2. */
int fly_usage_error(const fly_args *a, const char *cmd, const char *synopsis,
                    const fly_err *err);

#endif
