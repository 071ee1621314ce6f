/*
 * posterior.h -- what every command that uses a fitted run starts from:
 * the run's posterior (its model resolved from the stored settings, S of
 * its post-warm-up draws pooled over the chains and thinned evenly, their
 * mean) and a cursor that streams the rows of the data set it modelled in
 * blocks.  Shared by predict (predict/predict.h), loo (loo/loo.h) and the
 * posterior predictive checks (ppc/ppc.h), so all see the same draws for
 * the same S and the same rows.
 *
 * Thinning: of the T post-warm-up draws in chain order (chain 0's first),
 * pooled draw t is kept when t = floor(j T / S) for some j < S, so the S
 * kept are spread evenly over all chains and stay in chain order
 * (chain_len[c] of them from chain c).  Memory: S x P doubles, and one
 * chain's draws while loading; the row cursor holds one page.
 */
#ifndef FLY_RUN_POSTERIOR_H
#define FLY_RUN_POSTERIOR_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/err.h"

typedef struct fly_posterior {
  int64_t   run_id;      /* resolved (0 asked for the latest) */
  int64_t   ds;          /* the data set the run modelled */
  fly_model m;           /* its model, as the run resolved it */
  size_t    P, S, C;     /* parameters; draws kept; chains */
  double   *th;          /* S x P, draw-major, chain order */
  double   *mean;        /* P: the mean of the kept draws */
  size_t   *chain_len;   /* C: kept draws of each chain (sum S) */
} fly_posterior;

/* Load run run_id's (0: the latest) model and at most max_draws (<= 0:
 * all) post-warm-up draws into *p (free with fly_posterior_free).
 * FLY_RANGE for no such run; FLY_MISUSE for fewer than min_draws (at
 * least 1) post-warm-up draws (the message names `what`, the command
 * needing them) or a model that cannot be resolved; FLY_CORRUPT when the
 * stored parameters do not fit the model or draws are missing; FLY_NOMEM;
 * the store's errors.  *p is zeroed on failure. */
fly_rc fly_posterior_load(fly_db *db, int64_t run_id, int64_t max_draws,
                          size_t min_draws, const char *what,
                          fly_posterior *p, fly_err *err);
void   fly_posterior_free(fly_posterior *p);   /* zeroed p: no-op */

/* The rows of a data set, streamed page by page. */
typedef struct fly_posterior_rows {
  fly_pages *pg;
  int64_t    N, page_no, n_pages;
  size_t     W, nr, i;   /* stored width; rows in the current page; next */
  double    *page;       /* one page's rows, W doubles a row */
} fly_posterior_rows;

/* Open data set ds's rows; c->N and c->W are its rows and stored width.
 * The pages' errors; FLY_NOMEM.  *c is zeroed on failure. */
fly_rc fly_posterior_rows_open(fly_db *db, int64_t ds, fly_posterior_rows *c,
                               fly_err *err);
void   fly_posterior_rows_close(fly_posterior_rows *c);  /* zeroed c: no-op */

/* Copy the next up to `want` rows into X (W doubles a row); *got 0 at the
 * end.  The pages' errors (FLY_CORRUPT, FLY_IO, FLY_SQL). */
fly_rc fly_posterior_rows_block(fly_posterior_rows *c, double *X, size_t want,
                                size_t *got, fly_err *err);

#endif
