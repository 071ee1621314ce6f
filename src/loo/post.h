/*
 * post.h -- what every check of a fitted run starts from: the run's
 * posterior (its model resolved from the stored settings, S post-warm-up
 * draws pooled over the chains and thinned evenly, their mean) and a
 * cursor that streams the rows of the data set it modelled in blocks.
 * Shared by loo (loo.h) and the posterior predictive checks (ppc/ppc.h),
 * so both see the same draws and the same rows.
 *
 * Thinning: of the T post-warm-up draws in chain order, pooled draw t is
 * kept when t = floor(j T / S) for some j < S, so the S kept are spread
 * evenly over all chains and stay in chain order (chain_len[c] of them
 * from chain c).  Memory: S x P doubles; the cursor holds one page.
 */
#ifndef FLY_POST_H
#define FLY_POST_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "store/db.h"
#include "store/pages.h"
#include "util/err.h"

typedef struct fly_post {
  int64_t   run_id, ds;    /* the run and the data set it modelled */
  fly_model m;             /* resolved from the run's settings */
  size_t    P, S, C;       /* parameters, kept draws, chains */
  double   *th;            /* S x P, draw-major, chain order */
  double   *mean;          /* P: the mean of the S draws */
  size_t   *chain_len;     /* C: kept draws of each chain (sum S) */
} fly_post;

/* Load run run_id's (0: the latest run) model and at most max_draws
 * (<= 0: all) post-warm-up draws.  what names the caller in messages
 * ("loo").  FLY_RANGE for no such run; FLY_MISUSE for fewer than 2
 * post-warm-up draws or a model that cannot be resolved; FLY_CORRUPT for
 * stored draws that disagree with the model; FLY_NOMEM, FLY_SQL.  p is
 * zeroed on failure.  Free with fly_post_free. */
fly_rc fly_post_load(fly_db *db, int64_t run_id, int64_t max_draws,
                     const char *what, fly_post *p, fly_err *err);
void   fly_post_free(fly_post *p);                 /* zeroed p: no-op */

/* The rows of a data set, streamed page by page. */
typedef struct fly_rows {
  fly_pages *pg;
  int64_t    N, page_no, n_pages;
  size_t     W, nr, i;     /* width; rows in the current page; next of them */
  double    *page;
} fly_rows;

/* Open data set ds's rows; c->N and c->W are its rows and stored width. */
fly_rc fly_rows_open(fly_db *db, int64_t ds, fly_rows *c, fly_err *err);
void   fly_rows_close(fly_rows *c);                /* zeroed c: no-op */

/* Copy the next up to `want` rows into X (W doubles a row); *got 0 at
 * the end.  The pages' errors (FLY_CORRUPT, FLY_IO, FLY_SQL). */
fly_rc fly_rows_block(fly_rows *c, double *X, size_t want, size_t *got,
                      fly_err *err);

#endif
