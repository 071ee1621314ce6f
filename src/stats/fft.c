/*
 * fft.c -- radix-4 complex FFTs without a digit-reversal pass, enough for
 * autocovariances.
 *
 * Autocovariances by FFT transform the zero-padded chain, take |Z_k|^2 and
 * transform back.  The spectrum is only multiplied pointwise, so its order
 * does not matter: the forward transform is decimation in frequency
 * (natural order in, digit-reversed order out) and the inverse is
 * decimation in time with the same stages mirrored (digit-reversed in,
 * natural out), so the permutation, the one cache-hostile pass of a
 * textbook FFT, is never done.  Stages are radix 4 (Gentleman & Sande
 * 1966; 3 complex multiplications per 4 points and half the passes over
 * memory of radix 2), with one radix-2 stage first (last in the inverse)
 * when L is an odd power of two.  About 4.25 L log2 L flops.
 *
 * A DIF radix-4 stage on a block of len = 4q points maps x[j + q m],
 * m = 0..3, to z_p[j] = W^{jp} sum_m x[j + q m] (-i)^{mp}, W = e^{-2 pi i /
 * len}, into sub-block p, whose length-q DFT is then X[4k + p]; the
 * inverse stage undoes exactly that (times 4) with conjugate twiddles.
 * Twiddles cos and sin of 2 pi k / L for k < L are computed once per L
 * directly (a recurrence would lose accuracy) and cached in the workspace
 * with the two transform buffers; a stage of length len uses every
 * (L/len)-th one, and the same table serves any smaller power of two.
 */
#include <math.h>

#include "stats/stats_int.h"
#include "util/mem.h"

#define TWO_PI 6.283185307179586476925286766559

fly_rc flys_fft_plan(fly_stats_ws *ws, size_t L, fly_err *err)
{
  if( L > ws->cap_fft ){
    double *fa = fly_alloc_array(2*L, sizeof *fa);
    double *fp = fly_alloc_array(2*L, sizeof *fp);
    double *tw = fly_alloc_array(2*L, sizeof *tw);
    if( !fa || !fp || !tw ){
      fly_free(fa);
      fly_free(fp);
      fly_free(tw);
      return fly_fail(err, FLY_NOMEM, "stats: cannot allocate an FFT of "
                      "%zu points", L);
    }
    fly_free(ws->fa);
    fly_free(ws->fp);
    fly_free(ws->tw);
    ws->fa = fa;
    ws->fp = fp;
    ws->tw = tw;
    ws->cap_fft = L;
    ws->tw_L = 0;
  }
  if( ws->tw_L < L ){
    for( size_t k = 0; k < L; k++ ){
      double a = TWO_PI * (double)k / (double)L;
      ws->tw[2*k] = cos(a);
      ws->tw[2*k+1] = sin(a);
    }
    ws->tw_L = L;
  }
  return FLY_OK;
}

static int odd_log2(size_t L)
{
  int lg = 0;
  while( ((size_t)1 << lg) < L ) lg++;
  return lg & 1;
}

void flys_fft_dif(double *a, size_t L, const double *tw, size_t tw_L)
{
  size_t len = L;
  if( odd_log2(L) ){                     /* one radix-2 stage */
    size_t half = L >> 1, step = tw_L / L;
    for( size_t j = 0; j < half; j++ ){
      double *u = a + 2*j, *v = a + 2*(j + half);
      double wr = tw[2*j*step], wi = -tw[2*j*step+1];
      double dr = u[0] - v[0], di = u[1] - v[1];
      u[0] += v[0];
      u[1] += v[1];
      v[0] = dr*wr - di*wi;
      v[1] = dr*wi + di*wr;
    }
    len = half;
  }
  for( ; len >= 4; len >>= 2 ){
    size_t q = len >> 2, step = tw_L / len;
    for( size_t i = 0; i < L; i += len ){
      double *x0 = a + 2*i, *x1 = x0 + 2*q, *x2 = x1 + 2*q, *x3 = x2 + 2*q;
      for( size_t j = 0; j < q; j++ ){
        const double *w1 = tw + 2*j*step, *w2 = tw + 4*j*step,
                     *w3 = tw + 6*j*step;
        double ar = x0[2*j] + x2[2*j],   ai = x0[2*j+1] + x2[2*j+1];
        double cr = x0[2*j] - x2[2*j],   ci = x0[2*j+1] - x2[2*j+1];
        double br = x1[2*j] + x3[2*j],   bi = x1[2*j+1] + x3[2*j+1];
        double dr = x1[2*j] - x3[2*j],   di = x1[2*j+1] - x3[2*j+1];
        double z1r = cr + di, z1i = ci - dr;     /* c - i d */
        double z2r = ar - br, z2i = ai - bi;
        double z3r = cr - di, z3i = ci + dr;     /* c + i d */
        x0[2*j] = ar + br;
        x0[2*j+1] = ai + bi;
        x1[2*j] = z1r*w1[0] + z1i*w1[1];         /* times conj(e^{+i..}) */
        x1[2*j+1] = z1i*w1[0] - z1r*w1[1];
        x2[2*j] = z2r*w2[0] + z2i*w2[1];
        x2[2*j+1] = z2i*w2[0] - z2r*w2[1];
        x3[2*j] = z3r*w3[0] + z3i*w3[1];
        x3[2*j+1] = z3i*w3[0] - z3r*w3[1];
      }
    }
  }
}

void flys_fft_dit_inv(double *a, size_t L, const double *tw, size_t tw_L)
{
  size_t top = odd_log2(L) ? L >> 1 : L;
  for( size_t len = 4; len <= top; len <<= 2 ){
    size_t q = len >> 2, step = tw_L / len;
    for( size_t i = 0; i < L; i += len ){
      double *x0 = a + 2*i, *x1 = x0 + 2*q, *x2 = x1 + 2*q, *x3 = x2 + 2*q;
      for( size_t j = 0; j < q; j++ ){
        const double *w1 = tw + 2*j*step, *w2 = tw + 4*j*step,
                     *w3 = tw + 6*j*step;
        double t1r = x1[2*j]*w1[0] - x1[2*j+1]*w1[1];
        double t1i = x1[2*j]*w1[1] + x1[2*j+1]*w1[0];
        double t2r = x2[2*j]*w2[0] - x2[2*j+1]*w2[1];
        double t2i = x2[2*j]*w2[1] + x2[2*j+1]*w2[0];
        double t3r = x3[2*j]*w3[0] - x3[2*j+1]*w3[1];
        double t3i = x3[2*j]*w3[1] + x3[2*j+1]*w3[0];
        double ar = x0[2*j] + t2r, ai = x0[2*j+1] + t2i;
        double cr = x0[2*j] - t2r, ci = x0[2*j+1] - t2i;
        double br = t1r + t3r, bi = t1i + t3i;
        double dr = t1r - t3r, di = t1i - t3i;
        x0[2*j] = ar + br;
        x0[2*j+1] = ai + bi;
        x1[2*j] = cr - di;                       /* c + i d */
        x1[2*j+1] = ci + dr;
        x2[2*j] = ar - br;
        x2[2*j+1] = ai - bi;
        x3[2*j] = cr + di;                       /* c - i d */
        x3[2*j+1] = ci - dr;
      }
    }
  }
  if( top != L ){                        /* the radix-2 stage, mirrored */
    size_t half = L >> 1, step = tw_L / L;
    for( size_t j = 0; j < half; j++ ){
      double *u = a + 2*j, *v = a + 2*(j + half);
      double wr = tw[2*j*step], wi = tw[2*j*step+1];
      double tr = v[0]*wr - v[1]*wi, ti = v[0]*wi + v[1]*wr;
      v[0] = u[0] - tr;
      v[1] = u[1] - ti;
      u[0] += tr;
      u[1] += ti;
    }
  }
}
