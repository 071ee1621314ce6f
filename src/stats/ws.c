/*
 * ws.c -- the statistics workspace: scratch arrays sized for the largest
 * shape seen so far, plus caches that depend only on the shape.
 *
 * Per draw (N = n_chains * n_iter) it holds two 8-byte sort keys and two
 * 4-byte tags, the sorted draws and folded draws with their tags, the
 * split-layout values, the split map and the rank scores: 68 bytes a draw,
 * so 4 chains of 10^5 draws take 27 MB.  Per lag (n_iter) the
 * autocovariance and Geyer's rho; per chain the chain means.  The FFT
 * buffers and plans (fft.c) and the AR arrays (coda.c) are grown where they
 * are used.  Nothing shrinks; the caches (split map, rank scores) are
 * keyed by the shape, rebuilt when it changes, and invalidated when their
 * arrays move.
 */
#include "stats/stats_int.h"

#include "util/mem.h"

fly_rc fly_stats_ws_new(size_t n_chains, size_t n_iter, fly_stats_ws **pws,
                        fly_err *err)
{
  fly_rc rc;
  fly_stats_ws *ws = NULL;
  *pws = NULL;
  ws = fly_alloc_array(1, sizeof *ws);
  if( !ws ) return fly_fail(err, FLY_NOMEM, "stats: cannot allocate workspace");
  if( n_chains && n_iter ){
    rc = flys_reserve(ws, n_chains, n_iter, err);
    if( rc != FLY_OK ){
      fly_stats_ws_free(ws);
      return rc;
    }
  }
  *pws = ws;
  return FLY_OK;
}

void fly_stats_ws_free(fly_stats_ws *ws)
{
  if( !ws ) return;
  fly_free(ws->key);  fly_free(ws->key2);
  fly_free(ws->idx);  fly_free(ws->idx2);
  fly_free(ws->xs);   fly_free(ws->xi);
  fly_free(ws->fs);   fly_free(ws->fi);
  fly_free(ws->y);    fly_free(ws->map);
  fly_free(ws->ztab);
  fly_free(ws->acov); fly_free(ws->rho);
  fly_free(ws->cm);
  flys_fft_free(ws);
  fly_free(ws->ar_r); fly_free(ws->ar_phi); fly_free(ws->ar_tmp);
  fly_free(ws);
}

/* Replace *p by a zeroed array of n elements; 0 on failure (*p kept). */
static int regrow(void *pp, size_t n, size_t size)
{
  void **p = pp;
  void *q = fly_alloc_array(n ? n : 1, size);
  if( !q ) return 0;
  fly_free(*p);
  *p = q;
  return 1;
}

fly_rc flys_reserve(fly_stats_ws *ws, size_t n_chains, size_t n_iter,
                    fly_err *err)
{
  size_t N;
  if( n_iter && n_chains > FLY_STATS_MAX_DRAWS / n_iter )
    return fly_fail(err, FLY_RANGE, "stats: %zu chains x %zu draws, want at "
                    "most %zu draws", n_chains, n_iter,
                    FLY_STATS_MAX_DRAWS - 1);
  N = n_chains * n_iter;
  if( N >= FLY_STATS_MAX_DRAWS )
    return fly_fail(err, FLY_RANGE, "stats: %zu draws, want at most %zu",
                    N, FLY_STATS_MAX_DRAWS - 1);
  if( N > ws->cap ){
    ws->map_m = ws->map_n = 0;
    ws->ztab_S = 0;
    ws->cap = 0;
    if( !regrow(&ws->key, N, sizeof *ws->key)
     || !regrow(&ws->key2, N, sizeof *ws->key2)
     || !regrow(&ws->idx, N, sizeof *ws->idx)
     || !regrow(&ws->idx2, N, sizeof *ws->idx2)
     || !regrow(&ws->xs, N, sizeof *ws->xs)
     || !regrow(&ws->xi, N, sizeof *ws->xi)
     || !regrow(&ws->fs, N, sizeof *ws->fs)
     || !regrow(&ws->fi, N, sizeof *ws->fi)
     || !regrow(&ws->y, N, sizeof *ws->y)
     || !regrow(&ws->map, N, sizeof *ws->map)
     || !regrow(&ws->ztab, N, sizeof *ws->ztab) )
      return fly_fail(err, FLY_NOMEM, "stats: cannot allocate workspace for "
                      "%zu draws", N);
    ws->cap = N;
  }
  if( n_iter > ws->cap_lag ){
    ws->cap_lag = 0;
    if( !regrow(&ws->acov, n_iter, sizeof *ws->acov)
     || !regrow(&ws->rho, n_iter, sizeof *ws->rho) )
      return fly_fail(err, FLY_NOMEM, "stats: cannot allocate %zu lags",
                      n_iter);
    ws->cap_lag = n_iter;
  }
  if( 2*n_chains > ws->cap_ch ){
    ws->cap_ch = 0;
    if( !regrow(&ws->cm, 2*n_chains, sizeof *ws->cm) )
      return fly_fail(err, FLY_NOMEM, "stats: cannot allocate %zu chains",
                      n_chains);
    ws->cap_ch = 2*n_chains;
  }
  return FLY_OK;
}

fly_rc flys_check(const char *fn, const void *x, const void *out,
                  size_t n_chains, size_t n_iter, fly_err *err)
{
  if( !x || !out )
    return fly_fail(err, FLY_MISUSE, "%s: NULL %s", fn, x ? "output" : "draws");
  if( n_chains == 0 || n_iter == 0 )
    return fly_fail(err, FLY_MISUSE, "%s: %zu chains x %zu draws, want at "
                    "least one of each", fn, n_chains, n_iter);
  if( n_chains > (FLY_STATS_MAX_DRAWS - 1) / n_iter )
    return fly_fail(err, FLY_RANGE, "%s: %zu chains x %zu draws, want at "
                    "most %zu draws", fn, n_chains, n_iter,
                    FLY_STATS_MAX_DRAWS - 1);
  return FLY_OK;
}

fly_rc flys_begin(const char *fn, fly_stats_ws **pws, fly_stats_ws **tmp,
                  const void *x, const void *out, size_t n_chains,
                  size_t n_iter, fly_err *err)
{
  fly_rc rc = flys_check(fn, x, out, n_chains, n_iter, err);
  *tmp = NULL;
  if( rc != FLY_OK ) return rc;
  if( !*pws ){
    rc = fly_stats_ws_new(n_chains, n_iter, tmp, err);
    if( rc != FLY_OK ) return rc;
    *pws = *tmp;
  }
  return flys_reserve(*pws, n_chains, n_iter, err);
}
