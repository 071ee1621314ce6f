/*
 * fft.c -- autocovariances by FFT, with FFTW3.
 *
 * For the m2 centred chains y_c of h values, zero-padded to L >= h + k1 - 1
 * points (a power of two, so the circular sums equal the linear ones up to
 * lag L - h), each chain goes through one real-to-complex transform Y_c
 * (the L/2 + 1 non-redundant coefficients), the power spectra |Y_c[k]|^2
 * are summed over chains, and one complex-to-real transform of that sum
 * gives L times sum_c sum_t y_c[t] y_c[t+k] at every lag at once: m2 + 1
 * half-length transforms (posterior does 2 m2 full ones), O(m2 L log L).
 *
 * Plans: FFTW_ESTIMATE (no trial runs: a summary meets a handful of
 * lengths, so measuring plans would cost more than it saves), one pair per
 * length cached in the workspace by log2 L and executed with FFTW's
 * new-array functions on the workspace buffers.  The buffers come from
 * fftw_malloc, so a grown buffer keeps the alignment the plans were made
 * for.  A summary of many parameters therefore plans each length once.
 *
 * Threads: fftw_execute_* is thread-safe, FFTW's planner and
 * fftw_destroy_plan are not, and a workspace per thread is the contract of
 * stats.h (the CLI summary is single-threaded, but the SQL extension runs
 * in whatever threads its host gives its connections).  So planning and
 * destroying are serialised by one process-wide mutex here.  A program that
 * also plans with FFTW elsewhere, in other threads, must serialise those
 * calls too (or call fftw_make_planner_thread_safe() from libfftw3_threads).
 */
#include <fftw3.h>
#include <pthread.h>

#include "stats/stats_int.h"

static pthread_mutex_t planner = PTHREAD_MUTEX_INITIALIZER;

static int log2_of(size_t L)
{
  int lg = 0;
  while( ((size_t)1 << lg) < L ) lg++;
  return lg;
}

/* Make the buffers hold a transform of L points; the old ones are freed
 * only on success. */
static fly_rc grow(fly_stats_ws *ws, size_t L, fly_err *err)
{
  size_t nc = L/2 + 1;
  double *fr, *pw;
  fftw_complex *fc;
  if( L <= ws->cap_fft ) return FLY_OK;
  fr = fftw_malloc(L * sizeof *fr);
  pw = fftw_malloc(nc * sizeof *pw);
  fc = fftw_malloc(nc * sizeof *fc);
  if( !fr || !pw || !fc ){
    fftw_free(fr);
    fftw_free(pw);
    fftw_free(fc);
    return fly_fail(err, FLY_NOMEM, "stats: cannot allocate an FFT of %zu "
                    "points", L);
  }
  fftw_free(ws->fr);
  fftw_free(ws->pw);
  fftw_free(ws->fc);
  ws->fr = fr;
  ws->pw = pw;
  ws->fc = (double *)fc;
  ws->cap_fft = L;
  return FLY_OK;
}

/* The forward and inverse plans of length L = 2^lg (guru64: any size_t
 * length), made on the workspace buffers. */
static fly_rc plan(fly_stats_ws *ws, size_t L, int lg, fly_err *err)
{
  fftw_iodim64 dim = { (ptrdiff_t)L, 1, 1 };
  fftw_complex *fc = (fftw_complex *)ws->fc;
  if( ws->fwd[lg] && ws->inv[lg] ) return FLY_OK;
  pthread_mutex_lock(&planner);
  if( !ws->fwd[lg] )
    ws->fwd[lg] = fftw_plan_guru64_dft_r2c(1, &dim, 0, NULL, ws->fr, fc,
                                           FFTW_ESTIMATE);
  if( !ws->inv[lg] )
    ws->inv[lg] = fftw_plan_guru64_dft_c2r(1, &dim, 0, NULL, fc, ws->fr,
                                           FFTW_ESTIMATE);
  pthread_mutex_unlock(&planner);
  if( !ws->fwd[lg] || !ws->inv[lg] )
    return fly_fail(err, FLY_NOMEM, "stats: FFTW cannot plan a transform of "
                    "%zu points", L);
  return FLY_OK;
}

fly_rc flys_acov_fft(fly_stats_ws *ws, const double *y, size_t m2, size_t h,
                     size_t k0, size_t k1, double *acov, fly_err *err)
{
  size_t L = 2, nc;
  int lg;
  double *fr, *pw;
  fftw_complex *fc;
  fly_rc rc;
  while( L < h + k1 - 1 ) L <<= 1;
  lg = log2_of(L);
  nc = L/2 + 1;
  if( (rc = grow(ws, L, err)) != FLY_OK ) return rc;
  if( (rc = plan(ws, L, lg, err)) != FLY_OK ) return rc;
  fr = ws->fr;
  pw = ws->pw;
  fc = (fftw_complex *)ws->fc;
  for( size_t k = 0; k < nc; k++ ) pw[k] = 0;
  for( size_t c = 0; c < m2; c++ ){
    const double *yc = y + c*h;
    for( size_t t = 0; t < h; t++ ) fr[t] = yc[t];
    for( size_t t = h; t < L; t++ ) fr[t] = 0;
    fftw_execute_dft_r2c(ws->fwd[lg], fr, fc);
    for( size_t k = 0; k < nc; k++ )
      pw[k] += fc[k][0]*fc[k][0] + fc[k][1]*fc[k][1];
  }
  for( size_t k = 0; k < nc; k++ ){
    fc[k][0] = pw[k];
    fc[k][1] = 0;
  }
  fftw_execute_dft_c2r(ws->inv[lg], fc, fr);   /* overwrites fc */
  for( size_t k = k0; k < k1; k++ )
    acov[k] = fr[k] / (double)L / (double)h / (double)m2;
  return FLY_OK;
}

void flys_fft_free(fly_stats_ws *ws)
{
  pthread_mutex_lock(&planner);
  for( int lg = 0; lg < FLYS_FFT_PLANS; lg++ ){
    if( ws->fwd[lg] ) fftw_destroy_plan(ws->fwd[lg]);
    if( ws->inv[lg] ) fftw_destroy_plan(ws->inv[lg]);
    ws->fwd[lg] = ws->inv[lg] = NULL;
  }
  pthread_mutex_unlock(&planner);
  fftw_free(ws->fr);
  fftw_free(ws->pw);
  fftw_free(ws->fc);
  ws->fr = ws->pw = ws->fc = NULL;
  ws->cap_fft = 0;
}
