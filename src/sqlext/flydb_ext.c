/*
 * flydb_ext.c -- a SQLite loadable extension: the posterior diagnostics of
 * src/stats as SQL aggregate functions, so that a stock sqlite3 shell gives
 * the numbers `flydb summary` stores:
 *
 *   .load build/src/sqlext/flydb_ext
 *   SELECT name, ess_bulk(chain, iter, value), rhat(chain, iter, value),
 *          quantile(value, 0.05)
 *   FROM draws_named WHERE run_id = 1 AND NOT warmup GROUP BY name;
 *
 * Functions (docs/sql.md has the details):
 *   per chain:  ess_bulk, ess_tail, rhat, mcse_mean  (chain, iter, value)
 *   pooled:     quantile(value, p), median, mad, sd  (value)
 *
 * A per-chain aggregate collects its group's (chain, iter, value) rows in
 * whatever order SQLite delivers them, sorts them by (chain, iter) and so
 * gets the chain-major layout x[c*n_iter + t] of stats.h; chains are any
 * integers, ordered by value (every diagnostic is invariant to the order of
 * chains).  Invariants checked before any statistic is computed: every chain
 * has the same number of draws (else an error naming the counts) and no
 * (chain, iter) pair occurs twice (a missing run_id or GROUP BY name mixes
 * draws of several parameters).  A NULL or non-numeric value, a
 * non-integer chain or iter, and a p outside [0, 1] or varying within the
 * group are errors too; the statement fails with a message naming the
 * function.  A NaN result ("no estimate": constant draws, too few draws) is
 * SQL NULL, as `flydb summary` stores it.  An empty group gives NULL.
 *
 * Cost: 24 bytes a row (8 for the pooled functions) held until the group
 * ends, an O(S log S) sort, then the stats call.  The stats workspace is one
 * per connection, shared by all the functions (a connection runs one
 * aggregate's final step at a time): it grows to the largest group and is
 * freed when the connection closes.
 *
 * Entry point: SQLite derives sqlite3_flydbext_init from the file name
 * flydb_ext.so (the letters of the base name before the first '.', "lib"
 * stripped, lower-cased), so `.load PATH/flydb_ext` needs no second
 * argument.  Only that symbol is exported (the meson target hides the rest,
 * so the stats code cannot clash with a host that links its own copy).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "stats/stats.h"
#include "util/mem.h"

/* What an aggregate computes; the first four take (chain, iter, value). */
typedef enum {
  F_ESS_BULK, F_ESS_TAIL, F_RHAT, F_MCSE_MEAN,   /* per chain */
  F_QUANTILE, F_MEDIAN, F_MAD, F_SD,             /* pooled */
  F_COUNT
} fkind;

typedef struct fdef {
  const char *name;
  int         n_arg;
  fkind       kind;
} fdef;

static const fdef fdefs[F_COUNT] = {
  { "ess_bulk",  3, F_ESS_BULK  },
  { "ess_tail",  3, F_ESS_TAIL  },
  { "rhat",      3, F_RHAT      },
  { "mcse_mean", 3, F_MCSE_MEAN },
  { "quantile",  2, F_QUANTILE  },
  { "median",    1, F_MEDIAN    },
  { "mad",       1, F_MAD       },
  { "sd",        1, F_SD        },
};

#define PER_CHAIN(k) ((k) <= F_MCSE_MEAN)

struct ext;

/* User data of one registered function: its definition and the shared
 * state of the connection. */
typedef struct fud {
  struct ext *e;
  const fdef *def;
} fud;

/* Per connection.  refs counts the registered functions still holding it
 * (SQLite calls each one's destructor once). */
typedef struct ext {
  fly_stats_ws *ws;          /* created on first use, grows, never shrinks */
  int           refs;        /* registrations alive */
  fud           fns[F_COUNT];
} ext;

typedef struct draw {
  int64_t chain, iter;       /* as given; any integers */
  double  value;
} draw;

/* One group's state, in SQLite's zero-filled aggregate context. */
typedef struct agg {
  draw   *d;                 /* per-chain functions: rows as delivered */
  double *v;                 /* pooled functions: values as delivered */
  size_t  n, cap;            /* rows held, rows allocated */
  double  p;                 /* quantile: the group's probability */
  int     bad;               /* xStep reported an error: xFinal only frees */
} agg;

static void ext_unref(void *p)
{
  ext *e = ((fud *)p)->e;
  if( --e->refs > 0 ) return;
  fly_stats_ws_free(e->ws);
  sqlite3_free(e);
}

/* The n-th argument as an int64: an integer, or a real with an integral
 * value.  0 on success, else an error is set on ctx. */
static int arg_int(sqlite3_context *ctx, const char *fn, const char *what,
                   sqlite3_value *a, int64_t *out)
{
  int t = sqlite3_value_numeric_type(a);
  if( t == SQLITE_INTEGER ){
    *out = sqlite3_value_int64(a);
    return 0;
  }
  if( t == SQLITE_FLOAT ){
    double x = sqlite3_value_double(a);
    if( x == floor(x) && fabs(x) < 9.2e18 ){
      *out = (int64_t)x;
      return 0;
    }
  }
  {
    char *m = t == SQLITE_NULL ?
      sqlite3_mprintf("%s: %s is NULL, want an integer", fn, what) :
      sqlite3_mprintf("%s: %s is '%s', want an integer", fn, what,
                      (const char *)sqlite3_value_text(a));
    if( m ) sqlite3_result_error(ctx, m, -1);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(m);
  }
  return 1;
}

/* The value argument as a double; NULL and text are errors. */
static int arg_value(sqlite3_context *ctx, const char *fn, sqlite3_value *a,
                     double *out)
{
  int t = sqlite3_value_numeric_type(a);
  if( t == SQLITE_INTEGER || t == SQLITE_FLOAT ){
    *out = sqlite3_value_double(a);
    return 0;
  }
  {
    char *m = t == SQLITE_NULL ?
      sqlite3_mprintf("%s: value is NULL, want a number (draws are never "
                      "NULL)", fn) :
      sqlite3_mprintf("%s: value '%s' is not a number", fn,
                      (const char *)sqlite3_value_text(a));
    if( m ) sqlite3_result_error(ctx, m, -1);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(m);
  }
  return 1;
}

/* Room for one more row; 0 on success, else the error is set on ctx. */
static int grow(sqlite3_context *ctx, agg *a, int per_chain)
{
  size_t cap;
  void *p;
  if( a->n < a->cap ) return 0;
  cap = a->cap ? 2 * a->cap : 1024;
  if( cap > FLY_STATS_MAX_DRAWS ) cap = FLY_STATS_MAX_DRAWS;
  if( a->n >= cap ){
    sqlite3_result_error(ctx, "too many draws in one group (the limit is "
                         "2^32 - 1)", -1);
    return 1;
  }
  p = per_chain ? fly_realloc_array(a->d, cap, sizeof *a->d)
                : fly_realloc_array(a->v, cap, sizeof *a->v);
  if( !p ){
    sqlite3_result_error_nomem(ctx);
    return 1;
  }
  if( per_chain ) a->d = p;
  else a->v = p;
  a->cap = cap;
  return 0;
}

static void agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
  const fdef *def = ((fud *)sqlite3_user_data(ctx))->def;
  agg *a = sqlite3_aggregate_context(ctx, (int)sizeof *a);
  if( !a ){
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if( a->bad ) return;
  if( PER_CHAIN(def->kind) ){
    draw r;
    if( arg_int(ctx, def->name, "chain", argv[0], &r.chain) ||
        arg_int(ctx, def->name, "iter", argv[1], &r.iter) ||
        arg_value(ctx, def->name, argv[2], &r.value) || grow(ctx, a, 1) ){
      a->bad = 1;
      return;
    }
    a->d[a->n++] = r;
    return;
  }
  {
    double x;
    if( arg_value(ctx, def->name, argv[0], &x) ){
      a->bad = 1;
      return;
    }
    if( def->kind == F_QUANTILE ){
      int t = sqlite3_value_numeric_type(argv[1]);
      double p = sqlite3_value_double(argv[1]);
      char *m = NULL;
      int bad = 1;
      if( t != SQLITE_INTEGER && t != SQLITE_FLOAT )
        m = sqlite3_mprintf("quantile: p is %s, want a number in [0, 1]",
                            t == SQLITE_NULL ? "NULL" : "text");
      else if( !(p >= 0 && p <= 1) )
        m = sqlite3_mprintf("quantile: p = %.17g, want a value in [0, 1]", p);
      else if( a->n > 0 && p != a->p )
        m = sqlite3_mprintf("quantile: p changes within a group (%.17g, then "
                            "%.17g); want one p per group", a->p, p);
      else
        bad = 0;
      if( bad ){
        if( m ) sqlite3_result_error(ctx, m, -1);
        else sqlite3_result_error_nomem(ctx);
        sqlite3_free(m);
        a->bad = 1;
        return;
      }
      a->p = p;
    }
    if( grow(ctx, a, 0) ){
      a->bad = 1;
      return;
    }
    a->v[a->n++] = x;
  }
}

static int cmp_draw(const void *pa, const void *pb)
{
  const draw *a = pa, *b = pb;
  if( a->chain != b->chain ) return a->chain < b->chain ? -1 : 1;
  if( a->iter != b->iter ) return a->iter < b->iter ? -1 : 1;
  return 0;
}

/* Sort d[0..n) by (chain, iter) and check the shape: every chain as long
 * as the first, no repeated (chain, iter).  On success *n_chains, *n_iter;
 * else an error message (sqlite3_free it) in *msg, NULL on OOM with 1
 * returned. */
static int shape(const char *fn, draw *d, size_t n, size_t *n_chains,
                 size_t *n_iter, char **msg)
{
  size_t C = 0, len = 0, run = 0;
  int unequal = 0;
  *msg = NULL;
  qsort(d, n, sizeof *d, cmp_draw);
  for( size_t i = 0; i < n; i++ ){
    if( i > 0 && d[i].chain == d[i-1].chain && d[i].iter == d[i-1].iter ){
      *msg = sqlite3_mprintf("%s: chain %lld has iter %lld twice: one "
                             "parameter of one run per group (WHERE run_id "
                             "= ... GROUP BY name)", fn,
                             (long long)d[i].chain, (long long)d[i].iter);
      return 1;
    }
    run++;
    if( i + 1 == n || d[i+1].chain != d[i].chain ){
      if( C == 0 ) len = run;
      else if( run != len ) unequal = 1;
      C++;
      run = 0;
    }
  }
  if( unequal ){
    /* name every chain's count, up to a readable number of chains */
    sqlite3_str *s = sqlite3_str_new(NULL);
    size_t shown = 0;
    sqlite3_str_appendf(s, "%s: chains have unequal numbers of draws (", fn);
    for( size_t i = 0; i < n; i++ ){
      run++;
      if( i + 1 == n || d[i+1].chain != d[i].chain ){
        if( shown < 8 )
          sqlite3_str_appendf(s, "%schain %lld: %llu", shown ? ", " : "",
                              (long long)d[i].chain, (unsigned long long)run);
        else if( shown == 8 )
          sqlite3_str_appendf(s, ", ...");
        shown++;
        run = 0;
      }
    }
    sqlite3_str_appendf(s, "); want the same number in every chain "
                        "(AND NOT warmup, or a common iter range)");
    *msg = sqlite3_str_finish(s);
    return 1;
  }
  *n_chains = C;
  *n_iter = len;
  return 0;
}

static void agg_final(sqlite3_context *ctx)
{
  fud *u = sqlite3_user_data(ctx);
  const fdef *def = u->def;
  agg *a = sqlite3_aggregate_context(ctx, 0);
  fly_err err = {0};
  fly_rc rc = FLY_OK;
  double *x = NULL, r = NAN;
  size_t C = 0, T = 0;

  if( !a || a->bad || a->n == 0 ){
    if( a && !a->bad ) sqlite3_result_null(ctx);
    goto done;
  }
  if( !u->e->ws && (rc = fly_stats_ws_new(0, 0, &u->e->ws, &err)) ) goto done;
  if( PER_CHAIN(def->kind) ){
    char *msg;
    if( shape(def->name, a->d, a->n, &C, &T, &msg) ){
      if( msg ) sqlite3_result_error(ctx, msg, -1);
      else sqlite3_result_error_nomem(ctx);
      sqlite3_free(msg);
      goto done;
    }
    x = fly_alloc_array(a->n, sizeof *x);
    if( !x ){
      rc = fly_fail(&err, FLY_NOMEM, "%s: %zu draws", def->name, a->n);
      goto done;
    }
    /* sorted by (chain, iter): the values are chain-major already */
    for( size_t i = 0; i < a->n; i++ ) x[i] = a->d[i].value;
  }
  switch( def->kind ){
  case F_ESS_BULK:  rc = fly_stats_ess_bulk(u->e->ws, x, C, T, &r, &err); break;
  case F_ESS_TAIL:  rc = fly_stats_ess_tail(u->e->ws, x, C, T, &r, &err); break;
  case F_RHAT:      rc = fly_stats_rhat(u->e->ws, x, C, T, &r, &err); break;
  case F_MCSE_MEAN: rc = fly_stats_mcse_mean(u->e->ws, x, C, T, &r, &err); break;
  case F_QUANTILE:
    rc = fly_stats_quantile(u->e->ws, a->v, a->n, &a->p, 1, &r, &err);
    break;
  case F_MEDIAN:    rc = fly_stats_median(u->e->ws, a->v, a->n, &r, &err); break;
  case F_MAD:       rc = fly_stats_mad(u->e->ws, a->v, a->n, &r, &err); break;
  case F_SD:        r = fly_stats_sd(a->v, a->n); break;
  case F_COUNT:     break;
  }
  if( rc == FLY_OK ){
    if( isnan(r) ) sqlite3_result_null(ctx);
    else sqlite3_result_double(ctx, r);
  }
done:
  if( rc == FLY_NOMEM ){
    sqlite3_result_error_nomem(ctx);
  }else if( rc != FLY_OK ){
    char *m = sqlite3_mprintf("%s: %s", def->name, err.msg);
    if( m ) sqlite3_result_error(ctx, m, -1);
    else sqlite3_result_error_nomem(ctx);
    sqlite3_free(m);
  }
  fly_free(x);
  if( a ){
    fly_free(a->d);
    fly_free(a->v);
    a->d = NULL;
    a->v = NULL;
  }
}

#if defined(__GNUC__)
#define FLY_EXPORT __attribute__((visibility("default")))
#else
#define FLY_EXPORT
#endif

FLY_EXPORT int sqlite3_flydbext_init(sqlite3 *db, char **pzErrMsg,
                                     const sqlite3_api_routines *pApi);

/* Register every function on db.  Each registration holds a reference to
 * the connection's ext; SQLite drops it (ext_unref) when the function is
 * replaced, the connection closes, or the registration fails. */
FLY_EXPORT int sqlite3_flydbext_init(sqlite3 *db, char **pzErrMsg,
                                     const sqlite3_api_routines *pApi)
{
  ext *e;
  int rc = SQLITE_OK;
  SQLITE_EXTENSION_INIT2(pApi);
  e = sqlite3_malloc64(sizeof *e);
  if( !e ) return SQLITE_NOMEM;
  memset(e, 0, sizeof *e);
  e->refs = 1;                                  /* ours, dropped below */
  for( int k = 0; k < F_COUNT && rc == SQLITE_OK; k++ ){
    e->fns[k].e = e;
    e->fns[k].def = &fdefs[k];
    e->refs++;
    rc = sqlite3_create_function_v2(db, fdefs[k].name, fdefs[k].n_arg,
        SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, &e->fns[k],
        NULL, agg_step, agg_final, ext_unref);
    if( rc != SQLITE_OK && pzErrMsg )
      *pzErrMsg = sqlite3_mprintf("flydb_ext: cannot register %s(): %s",
                                  fdefs[k].name, sqlite3_errmsg(db));
  }
  ext_unref(&e->fns[0]);
  return rc;
}
