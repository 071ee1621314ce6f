/*
 * rank.c -- split chains and rank normalisation (Vehtari, Gelman, Simpson,
 * Carpenter & Buerkner 2021, "Rank-normalization, folding, and
 * localization: an improved R-hat", Bayesian Analysis 16(2), section 4.1),
 * as posterior's .split_chains() and z_scale() define them.
 *
 * Splitting: each chain of n draws becomes its first floor(n/2) and its
 * last floor(n/2) draws; for odd n the middle draw is dropped (posterior
 * takes x[1:floor(n/2)] and x[ceiling(n/2 + 1):n]).  A chain of one draw
 * is not split.  The split map (draw -> position, see stats_int.h) is
 * cached per shape.
 *
 * Rank normalisation: the S kept draws of all half-chains are ranked
 * together, ties getting their average rank r (R's ties.method "average",
 * so r is an integer or a half-integer), and each draw becomes the normal
 * score z = qnorm((r - 3/8) / (S + 1/4)) (Blom's offset c = 3/8 in
 * posterior's backtransform_ranks: (r - c)/(S - 2c + 1)).  Ranks come from
 * one walk over the sorted draws, skipping dropped ones.  The scores of the
 * integer ranks 1..S depend only on S and are cached, so a summary of many
 * parameters evaluates qnorm S times once; tie groups with a half-integer
 * average rank evaluate it once per group.
 */
#include "stats/stats_int.h"

size_t flys_split_map(fly_stats_ws *ws, size_t n_chains, size_t n_iter,
                      size_t *m2)
{
  size_t h = n_iter >= 2 ? n_iter / 2 : 1;
  *m2 = n_iter >= 2 ? 2 * n_chains : n_chains;
  if( ws->map_m == n_chains && ws->map_n == n_iter ) return h;
  for( size_t c = 0; c < n_chains; c++ ){
    uint32_t *mp = ws->map + c * n_iter;
    if( n_iter < 2 ){
      mp[0] = (uint32_t)c;
      continue;
    }
    for( size_t t = 0; t < n_iter; t++ ){
      if( t < h )                mp[t] = (uint32_t)(2*c*h + t);
      else if( t >= n_iter - h ) mp[t] = (uint32_t)((2*c + 1)*h + t
                                                    - (n_iter - h));
      else                       mp[t] = FLYS_DROP;
    }
  }
  ws->map_m = n_chains;
  ws->map_n = n_iter;
  return h;
}

void flys_split_copy(fly_stats_ws *ws, const double *x, size_t n_draws)
{
  for( size_t i = 0; i < n_draws; i++ ){
    uint32_t p = ws->map[i];
    if( p != FLYS_DROP ) ws->y[p] = x[i];
  }
}

static double score(double r, size_t S)
{
  return fly_stats_qnorm((r - 0.375) / ((double)S + 0.25));
}

void flys_zscale(fly_stats_ws *ws, const double *s, const uint32_t *pos,
                 size_t n, size_t S)
{
  size_t r0 = 0;
  if( ws->ztab_S != S ){
    for( size_t r = 1; r <= S; r++ ) ws->ztab[r-1] = score((double)r, S);
    ws->ztab_S = S;
  }
  for( size_t i = 0; i < n; ){
    size_t j = i, g = 0;
    double z;
    while( j < n && s[j] == s[i] ){      /* tie group [i, j) */
      g += pos[j] != FLYS_DROP;
      j++;
    }
    if( g ){
      /* average of ranks r0+1 .. r0+g */
      if( g % 2 ) z = ws->ztab[r0 + (g + 1)/2 - 1];
      else        z = score((double)r0 + (double)(g + 1) / 2, S);
      for( size_t k = i; k < j; k++ )
        if( pos[k] != FLYS_DROP ) ws->y[pos[k]] = z;
      r0 += g;
    }
    i = j;
  }
}
