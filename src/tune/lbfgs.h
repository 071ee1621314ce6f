/*
 * lbfgs.h -- a generic limited-memory BFGS minimiser with a More-Thuente
 * line search.
 *
 * The objective is a callback returning f(x) and its gradient; the
 * minimiser knows nothing else about it (the tuner's callback is a full
 * streaming scan of a data set, so every evaluation is expensive and the
 * minimiser never evaluates f without g).  All workspace is sized by
 * fly_lbfgs_new(); fly_lbfgs_run() allocates nothing.
 *
 *   fly_lbfgs *l;  fly_lbfgs_opts o;  fly_lbfgs_result r;
 *   fly_lbfgs_opts_default(&o);
 *   fly_lbfgs_new(n, o.m, &l, err);
 *   rc = fly_lbfgs_run(l, fg, user, x, &o, &r, err);  // x: start in, best out
 *   fly_lbfgs_free(l);
 */
#ifndef FLY_LBFGS_H
#define FLY_LBFGS_H

#include <stddef.h>

#include "util/err.h"

typedef struct fly_lbfgs fly_lbfgs;

/* Objective: set *f = f(x) and g[0..n) = grad f(x).  A return other than
 * FLY_OK (with err filled) aborts the minimisation with that code.  A
 * non-finite f or g is not an error of the callback: the minimiser treats it
 * as a step too far and backs off, or fails with FLY_NUMERIC. */
typedef fly_rc (*fly_lbfgs_fn)(void *user, const double *x, double *f,
                               double *g, fly_err *err);

/* Why the minimiser stopped. */
typedef enum {
  FLY_LBFGS_GRAD = 0,    /* ||g|| <= g_tol * max(1, ||g_0||): converged */
  FLY_LBFGS_FCHANGE,     /* relative decrease of f over `past` iterations
                            <= f_tol: converged */
  FLY_LBFGS_MAXITER,     /* max_iter iterations done (not converged) */
  FLY_LBFGS_MAXEVAL,     /* max_evals evaluations done (not converged) */
  FLY_LBFGS_LINESEARCH,  /* no decrease along steepest descent: FLY_NUMERIC */
  FLY_LBFGS_NONFINITE,   /* f or g NaN/inf where it cannot be avoided:
                            FLY_NUMERIC */
  FLY_LBFGS_DECREMENT    /* -g'd <= dec_tol * max(1, |f|), d the quasi-
                            Newton direction: the decrease still to be had
                            is at f's rounding level: converged */
} fly_lbfgs_stop;

typedef struct fly_lbfgs_result {
  int            iters;   /* iterations (accepted steps) */
  int            evals;   /* objective evaluations, the start included */
  int            restarts;/* memory resets after a failed line search */
  double         f;       /* f at the returned x */
  double         g_norm;  /* ||g||_2 at the returned x */
  double         g_norm0; /* ||g||_2 at the start */
  fly_lbfgs_stop stop;
} fly_lbfgs_result;

/* Called after every iteration with the running result (for progress
 * lines); may be NULL. */
typedef void (*fly_lbfgs_progress)(void *user, const fly_lbfgs_result *r);

typedef struct fly_lbfgs_opts {
  size_t m;          /* correction pairs kept (default 8); <= the m of _new */
  double g_tol;      /* gradient test, relative to max(1, ||g_0||) (1e-8) */
  double f_tol;      /* (f_{k-past} - f_k) <= f_tol * max(1, |f_k|) stops
                        (1e-13); 0 switches the test off */
  int    past;       /* iterations spanned by the f test (default 3) */
  double dec_tol;    /* Newton-decrement test (see FLY_LBFGS_DECREMENT),
                        relative to max(1, |f|); 0 (default) = off.  A sum
                        of N terms is rounded at about 1e-16 |f| sqrt(N),
                        so no line search can see a smaller decrease */
  int    max_iter;   /* iterations (default 1000) */
  int    max_evals;  /* evaluations, line searches included (default 5000) */
  int    max_ls;     /* evaluations per line search (default 20) */
  double c1, c2;     /* strong Wolfe constants (1e-4, 0.9) */
  fly_lbfgs_progress progress;  /* may be NULL */
  void  *progress_user;
} fly_lbfgs_opts;

/* The defaults listed above. */
void fly_lbfgs_opts_default(fly_lbfgs_opts *o);

/* A minimiser for n variables keeping up to m correction pairs.  n >= 1,
 * m >= 1; otherwise FLY_MISUSE.  *pl NULL on failure. */
fly_rc fly_lbfgs_new(size_t n, size_t m, fly_lbfgs **pl, fly_err *err);
void   fly_lbfgs_free(fly_lbfgs *l);                  /* NULL: no-op */

/* Minimise from x (n values, overwritten with the best point found).
 * Returns FLY_OK when stopped by a tolerance or a limit (see r->stop:
 * MAXITER/MAXEVAL mean "not converged" and are for the caller to judge);
 * FLY_NUMERIC when f or g is not finite at the start or cannot be made
 * finite by backing off (stop NONFINITE), or when no decrease can be found
 * even along steepest descent (stop LINESEARCH; x is then the best point,
 * often a precision limit or a diverging objective -- the caller explains);
 * the callback's code when it fails.  r is filled in every case; o NULL
 * means defaults.  No allocation. */
fly_rc fly_lbfgs_run(fly_lbfgs *l, fly_lbfgs_fn fg, void *user, double *x,
                     const fly_lbfgs_opts *o, fly_lbfgs_result *r,
                     fly_err *err);

/* "gradient tolerance", "no progress in f", ... for messages. */
const char *fly_lbfgs_stop_str(fly_lbfgs_stop s);

#endif
