/*
 * gen.c -- flydb-gen, a streaming generator of synthetic tall data sets.
 *
 *   flydb-gen --model logistic|softmax|robust --rows N --features D
 *             [--classes K] [--nu V] [--noise-scale S] [--corr | --rho R]
 *             [--signal-sd S] [--seed S] [--theta-seed S] [--precision P]
 *             [--no-header] [--truth] [--truth-file F]
 *
 * writes CSV to stdout: a header `x1,...,xD,y` (unless --no-header), then N
 * rows.  There is no intercept column: flydb adds the intercept itself.
 *
 * Data model
 *   Features.  x_1 = e_1, x_j = rho*x_{j-1} + sqrt(1-rho^2)*e_j with e_j iid
 *   N(0,1): every x_j is N(0,1) and corr(x_i, x_j) = rho^|i-j| (AR(1)).
 *   rho = 0 (independent) by default, 0.5 with --corr, R with --rho R.
 *   The truth.  Drawn from its own stream (--theta-seed, default 20140613, a
 *   fixed constant), so every --seed replicates data from the same truth:
 *     logistic, robust: theta_0 ~ 0.5*N(0,1) (intercept), g_j ~ N(0,1/D), then
 *       theta_1..D = c*g with c chosen so that sd(theta^T x) = signal_sd
 *       exactly under the feature law above (default signal_sd = 2).
 *     softmax: a K x (D+1) matrix; every column (intercept and slopes) is
 *       centred over classes (sum_k theta_kj = 0, the representative a
 *       symmetric Gaussian prior's posterior is centred on; only contrasts
 *       theta_k - theta_l are identified), intercepts 0.5*N(0,1), slopes
 *       N(0,1/D) scaled by one c so that the mean over k of
 *       var(theta_k^T x) = signal_sd^2.
 *   Responses, with eta = theta_0 + theta^T x computed from the features AS
 *   PRINTED (the value strtod returns for the text), so the generating model
 *   holds exactly for the data flydb reads:
 *     logistic: y ~ Bernoulli(1/(1+exp(-eta))), written 0/1;
 *     softmax:  y ~ Categorical(softmax(eta_0..eta_{K-1})), written 0..K-1;
 *     robust:   y = eta + noise_scale * t_nu, Student-t by Z/sqrt(G/nu),
 *               G ~ chi^2_nu (Marsaglia-Tsang gamma), printed with P digits.
 *
 * Random numbers.  An embedded xoshiro256++ (Blackman & Vigna) seeded by
 * splitmix64; normals by the Marsaglia polar method with the second variate
 * cached.  A private copy rather than the project RNG (src/util/rng.c), so
 * the bytes a seed produces never change when the sampler's RNG is tuned.  Same arguments => identical bytes (on a
 * given libm: the polar method and the gamma sampler call log/sqrt/exp).
 *
 * Number formatting.  snprintf("%.*g") would dominate the run; here a value
 * |v| in [1e-5, 10^P) is scaled by an exact power of ten, rounded to a
 * P-digit integer (the rounding residual is made exact with fma, so the
 * digits are the correctly rounded ones except in exact-tie cases), and
 * printed as plain fixed point with trailing zeros removed.  Other values go
 * through snprintf("%.*g").  strtod of the text gives back the value within
 * half a unit in the P-th significant digit.
 *
 * Cost and workload.  Memory is O(K*D) whatever N is (one row at a time into
 * a 1 MiB output buffer, written with write(2)).  A closed pipe (`| head`)
 * ends the program quietly with status 0; other write errors exit 1; bad
 * arguments print the usage and exit 2.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- rng --- */

typedef struct { uint64_t s[4]; int has_spare; double spare; } rng;

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed)
{
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
  r->has_spare = 0;
  r->spare = 0.0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_u64(rng *r)
{
  uint64_t *s = r->s;
  uint64_t out = rotl(s[0] + s[3], 23) + s[0];
  uint64_t t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Uniform on (0,1): never 0, never 1. */
static inline double rng_unif(rng *r)
{
  return ((double)(rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

/* Standard normal, Marsaglia polar method, second variate cached. */
static inline double rng_normal(rng *r)
{
  if (r->has_spare) { r->has_spare = 0; return r->spare; }
  double u, v, q;
  do {
    u = (double)(int64_t)rng_u64(r) * 0x1.0p-63;   /* [-1, 1) */
    v = (double)(int64_t)rng_u64(r) * 0x1.0p-63;
    q = u * u + v * v;
  } while (q >= 1.0 || q == 0.0);
  double f = sqrt(-2.0 * log(q) / q);
  r->spare = v * f;
  r->has_spare = 1;
  return u * f;
}

/* Gamma(shape a, scale 1), Marsaglia & Tsang (2000); a > 0. */
static double rng_gamma(rng *r, double a)
{
  if (a < 1.0) {
    double g = rng_gamma(r, a + 1.0);
    return g * pow(rng_unif(r), 1.0 / a);
  }
  double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do { x = rng_normal(r); v = 1.0 + c * x; } while (v <= 0.0);
    v = v * v * v;
    double u = rng_unif(r);
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
  }
}

/* ------------------------------------------------------------ numbers --- */

static const double p10[23] = {
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
static const uint64_t u10[19] = {
  1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
  100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
  1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
  1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
  1000000000000000000ULL };

/* round(a * P) to nearest (ties to even, as printf), exactly: a >= 0, P an
 * exact power of ten, a*P < 2^63.  The product's rounding error lo
 * (|lo| <= ulp(a*P)/2) can only matter when the fraction is within |lo| of
 * one half; then fma gives lo exactly.  That is the slow path, taken for
 * ~1e-10 of O(1) values at 6 digits, and always from 2^52 on. */
static uint64_t round_scaled_exact(double a, double P)
{
  double hi = a * P;
  double lo = fma(a, P, -hi);          /* a*P == hi + lo exactly */
  if (hi >= 0x1.0p52) {                /* hi is an integer already */
    double fl = floor(lo), fr = lo - fl;
    uint64_t r = (uint64_t)hi + (uint64_t)(int64_t)fl;
    return r + (fr > 0.5 || (fr == 0.5 && (r & 1)));
  }
  double f = floor(hi);
  double fr = (hi - f) + lo;           /* hi - f exact */
  uint64_t r = (uint64_t)f;
  if (fr < 0.0) { r -= 1; fr += 1.0; }
  else if (fr >= 1.0) { r += 1; fr -= 1.0; }
  return r + (fr > 0.5 || (fr == 0.5 && (r & 1)));
}

static inline uint64_t round_scaled(double a, double P)
{
  double hi = a * P;
  if (hi < 0x1.0p52) {
    int64_t t = (int64_t)hi;           /* truncation == floor, hi >= 0 */
    double f = hi - (double)t;         /* exact */
    if (fabs(f - 0.5) > hi * 0x1.0p-52) return (uint64_t)t + (f > 0.5);
  }
  return round_scaled_exact(a, P);
}

static const char dig2[201] =
  "00010203040506070809101112131415161718192021222324252627282930313233343536"
  "37383940414243444546474849505152535455565758596061626364656667686970717273"
  "7475767778798081828384858687888990919293949596979899";

/* Write the prec decimal digits of r (10^(prec-1) <= r < 10^prec) to d. */
static inline void put_digits(char *d, uint64_t r, int prec)
{
  int i = prec;
  while (i >= 2) {
    unsigned q = (unsigned)(r % 100); r /= 100;
    d[--i] = dig2[2 * q + 1];
    d[--i] = dig2[2 * q];
  }
  if (i == 1) d[0] = (char)('0' + r);
}

/* 10^e for e = -6..23 (index e + 6): nearest doubles, used only to estimate
 * the decimal exponent (the rounding step verifies it). */
static const double p10e[30] = {
  1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
  1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
  1e21, 1e22, 1e23 };

/* dexp[k + 1023] = floor(k log10 2), filled by dexp_init(). */
static signed short dexp[2048];

static void dexp_init(void)
{
  for (int k = -1023; k <= 1024; k++)
    dexp[k + 1023] = (signed short)floor((double)k * 0.30102999566398120);
}

#define NUM_MAX 64   /* bytes fmt_num may touch past out (the text is <= 26) */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ \
    && defined(__GNUC__)
#define FAST_TEXT 1
#else
#define FAST_TEXT 0
#endif

#if FAST_TEXT
/* x < 10^8 as 8 ASCII digits, most significant in the lowest byte (SWAR:
 * split into 4-digit, then 2-digit, then 1-digit lanes of one word). */
static inline uint64_t swar8(uint64_t x)
{
  uint64_t v = (x / 10000) | ((x % 10000) << 32);
  uint64_t q = ((v * 10486) >> 20) & 0x0000007F0000007FULL;     /* lanes / 100 */
  v = q | ((v - q * 100) << 16);
  q = ((v * 103) >> 10) & 0x000F000F000F000FULL;                /* lanes / 10 */
  v = q | ((v - q * 10) << 8);
  return v + 0x3030303030303030ULL;
}

static inline void store64(char *p, uint64_t w) { memcpy(p, &w, 8); }
#endif

/* Text of r * 10^e / 10^(prec-1) (the digits of r, 10^(prec-1) <= r <
 * 10^prec, -5 <= e < prec) at p; returns the length.  Plain fixed point,
 * trailing zeros (and a bare '.') dropped. */
static inline int emit_fixed(char *p, uint64_t r, int e, int prec)
{
  int z  = e < 0 ? -e : 0;              /* leading zeros: 0.000ddd */
  int il = (e > 0 ? e : 0) + 1;         /* characters before the '.' */
#if FAST_TEXT
  if (prec <= 16) {
    /* Digits left-aligned in 16 bytes, as two words, padded with '0's.
     * Only stores: no load reads back a partly written word. */
    const uint64_t Z = 0x3030303030303030ULL;
    uint64_t A, B = Z;
    if (prec <= 8) A = swar8(r * u10[8 - prec]);
    else {
      uint64_t rr = r * u10[16 - prec];
      A = swar8(rr / 100000000); B = swar8(rr % 100000000);
    }
    int last = (B != Z) ? 15 - __builtin_clzll(B ^ Z) / 8
                        : 7 - __builtin_clzll(A ^ Z) / 8;   /* last nonzero */
    /* p[1 + k] = k-th character of zeros(z) digits... */
    store64(p + 1, Z);
    store64(p + 1 + z, A);
    store64(p + 9 + z, B);
    /* ...and the integer part, one byte at a time, then the point. */
    p[0] = z ? '0' : (char)A;
    for (int k = 1; k < il; k++) p[k] = (char)((k < 8 ? A : B) >> (8 * (k & 7)));
    p[il] = '.';
    return z + last >= il ? z + last + 2 : il;
  }
#endif
  char d[24];
  put_digits(d, r, prec);
  int last = prec - 1;
  while (d[last] == '0') last--;
  int n = 0;
  if (z) {
    p[n++] = '0'; p[n++] = '.';
    for (int i = 1; i < z; i++) p[n++] = '0';
    for (int i = 0; i <= last; i++) p[n++] = d[i];
    return n;
  }
  for (int i = 0; i < il; i++) p[n++] = d[i];
  if (last >= il) {
    p[n++] = '.';
    for (int i = il; i <= last; i++) p[n++] = d[i];
  }
  return n;
}

/* Format v with prec significant digits at out; return the end.  *printed
 * receives the double strtod gives for the text.  Writes scratch bytes up to
 * out + NUM_MAX.  Values outside [1e-5, 10^prec) and zero go through
 * snprintf("%.*g"). */
static char *fmt_num(char *out, double v, int prec, double *printed)
{
  double a = fabs(v);
  if (a >= 1e-5 && a < p10[prec]) {
    /* e = floor(log10 a): estimate from the binary exponent, then one
     * compare; the rounding below catches the remaining off-by-ones. */
    uint64_t bits; memcpy(&bits, &a, sizeof bits);
    int k = (int)((bits >> 52) & 0x7ff) - 1023;         /* a in [2^k, 2^(k+1)) */
    int e = dexp[k + 1023];
    e += (a >= p10e[e + 7]);
    for (int tries = 0; tries < 3; tries++) {
      int s = prec - 1 - e;
      if (s < 0 || s > 22) break;
      uint64_t r = round_scaled(a, p10[s]);
      if (r >= u10[prec]) { e++; continue; }
      if (r < u10[prec - 1]) { e--; continue; }
      int neg = v < 0;
      char *p = out;
      *p = '-';                                          /* branch-free sign */
      p += neg;
      int len = emit_fixed(p, r, e, prec);
      /* r / 10^s is exactly what strtod returns when r < 2^53 (one
       * correctly rounded division of exact operands). */
      double val = (double)(int64_t)r / p10[s];
      if (r >= (1ULL << 53)) { p[len] = '\0'; val = strtod(p, NULL); }
      *printed = neg ? -val : val;
      return p + len;
    }
  }
  if (v == 0.0) { *out = '0'; *printed = 0.0; return out + 1; }
  int n = snprintf(out, 32, "%.*g", prec, v);
  *printed = strtod(out, NULL);
  return out + n;
}

/* ------------------------------------------------------------- output --- */

#define OUT_CAP (1u << 20)

typedef struct { char *buf; size_t n, cap; } outbuf;

/* Write everything out; EPIPE ends the program quietly (the reader is gone). */
static void out_flush(outbuf *o)
{
  size_t off = 0;
  while (off < o->n) {
    ssize_t w = write(STDOUT_FILENO, o->buf + off, o->n - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) exit(0);
      fprintf(stderr, "flydb-gen: write to stdout: %s\n", strerror(errno));
      exit(1);
    }
    off += (size_t)w;
  }
  o->n = 0;
}

/* ---------------------------------------------------------------- cli --- */

enum { M_LOGISTIC, M_SOFTMAX, M_ROBUST };

typedef struct {
  int model;
  int64_t N;
  long D, K;
  double nu, noise, rho, signal_sd;
  uint64_t seed, theta_seed;
  int prec, header, truth;
  const char *truth_file;
  int got_model, got_rows, got_features, got_classes, got_nu, got_noise;
} opts;

static void usage(FILE *f)
{
  fputs(
"usage: flydb-gen --model logistic|softmax|robust --rows N --features D\n"
"                 [--classes K] [--nu V] [--noise-scale S] [--corr | --rho R]\n"
"                 [--signal-sd S] [--seed S] [--theta-seed S] [--precision P]\n"
"                 [--no-header] [--truth] [--truth-file F]\n"
"\n"
"Writes a synthetic CSV (header x1,...,xD,y; no intercept column) to stdout.\n"
"  --model M         logistic (y in 0/1), softmax (y in 0..K-1) or robust\n"
"                    (y = intercept + theta'x + S * Student-t(V) noise)\n"
"  --rows N          data rows (N >= 0; 1e8 style is accepted)\n"
"  --features D      feature columns, D >= 1\n"
"  --classes K       softmax classes, K >= 2 (default 3)\n"
"  --nu V            robust: Student-t degrees of freedom, V > 0 (default 4)\n"
"  --noise-scale S   robust: noise scale, S > 0 (default 1)\n"
"  --corr            AR(1) correlated features, rho = 0.5\n"
"  --rho R           AR(1) features x_j = R x_{j-1} + sqrt(1-R^2) e_j, |R| < 1\n"
"  --signal-sd S     sd of the linear predictor without intercept (default 2)\n"
"  --seed S          data seed (default 1)\n"
"  --theta-seed S    seed of the true parameters (default 20140613)\n"
"  --precision P     significant digits, 6..17 (default 6)\n"
"  --no-header       omit the header line\n"
"  --truth           print the true parameters (CSV param,value) to stderr\n"
"  --truth-file F    write the true parameters to file F\n", f);
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int bad(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("flydb-gen: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  usage(stderr);
  return 2;
}

/* Integer argument; accepts 1000000, 1e6, 1.5e3 if integral. */
static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s != '\0' && *end == '\0' && errno == 0) {
    if (v < lo || v > hi) return -1;
    *out = v; return 0;
  }
  errno = 0;
  double d = strtod(s, &end);
  if (*s == '\0' || *end != '\0' || errno != 0 || d != floor(d)
      || d < (double)lo || d > (double)hi) return -1;
  *out = (int64_t)d;
  return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
  char *end;
  if (*s == '-' || *s == '\0') return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (*end != '\0' || errno != 0) return -1;
  *out = v;
  return 0;
}

static int parse_dbl(const char *s, double *out)
{
  char *end;
  errno = 0;
  double d = strtod(s, &end);
  if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(d)) return -1;
  *out = d;
  return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
  memset(o, 0, sizeof *o);
  o->K = 3; o->nu = 4.0; o->noise = 1.0; o->rho = 0.0; o->signal_sd = 2.0;
  o->seed = 1; o->theta_seed = 20140613; o->prec = 6; o->header = 1;
  for (int i = 1; i < argc; i++) {
    char name[64];
    const char *arg = argv[i], *val = NULL;
    if (strncmp(arg, "--", 2) != 0) return bad("unexpected argument '%s'", arg);
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (len >= sizeof name) return bad("unknown option '%s'", arg);
    memcpy(name, arg, len); name[len] = '\0';
    if (eq) val = eq + 1;

    /* flags */
    int flag = 1;
    if      (!strcmp(name, "--help"))      { usage(stdout); exit(0); }
    else if (!strcmp(name, "--no-header")) o->header = 0;
    else if (!strcmp(name, "--truth"))     o->truth = 1;
    else if (!strcmp(name, "--corr"))      o->rho = 0.5;
    else flag = 0;
    if (flag) {
      if (val) return bad("option '%s' takes no value", name);
      continue;
    }
    /* options with a value */
    static const char *const valued[] = { "--model", "--rows", "--features",
      "--classes", "--nu", "--noise-scale", "--rho", "--signal-sd", "--seed",
      "--theta-seed", "--precision", "--truth-file" };
    int known = 0;
    for (size_t q = 0; q < sizeof valued / sizeof *valued; q++)
      known |= !strcmp(name, valued[q]);
    if (!known) return bad("unknown option '%s'", name);
    if (!val) {
      if (i + 1 >= argc) return bad("option '%s' needs a value", name);
      val = argv[++i];
    }
    int64_t iv;
    if (!strcmp(name, "--model")) {
      if      (!strcmp(val, "logistic")) o->model = M_LOGISTIC;
      else if (!strcmp(val, "softmax"))  o->model = M_SOFTMAX;
      else if (!strcmp(val, "robust"))   o->model = M_ROBUST;
      else return bad("unknown model '%s' (want logistic, softmax or robust)", val);
      o->got_model = 1;
    } else if (!strcmp(name, "--rows")) {
      if (parse_int(val, 0, INT64_MAX / 2, &iv)) return bad("--rows: '%s' is not a count >= 0", val);
      o->N = iv; o->got_rows = 1;
    } else if (!strcmp(name, "--features")) {
      if (parse_int(val, 1, 1000000, &iv)) return bad("--features: '%s' is not in 1..1000000", val);
      o->D = (long)iv; o->got_features = 1;
    } else if (!strcmp(name, "--classes")) {
      if (parse_int(val, 2, 10000, &iv)) return bad("--classes: '%s' is not in 2..10000", val);
      o->K = (long)iv; o->got_classes = 1;
    } else if (!strcmp(name, "--nu")) {
      if (parse_dbl(val, &o->nu) || !(o->nu > 0)) return bad("--nu: '%s' is not a number > 0", val);
      o->got_nu = 1;
    } else if (!strcmp(name, "--noise-scale")) {
      if (parse_dbl(val, &o->noise) || !(o->noise > 0)) return bad("--noise-scale: '%s' is not a number > 0", val);
      o->got_noise = 1;
    } else if (!strcmp(name, "--rho")) {
      if (parse_dbl(val, &o->rho) || !(fabs(o->rho) < 1)) return bad("--rho: '%s' is not in (-1, 1)", val);
    } else if (!strcmp(name, "--signal-sd")) {
      if (parse_dbl(val, &o->signal_sd) || !(o->signal_sd >= 0)) return bad("--signal-sd: '%s' is not a number >= 0", val);
    } else if (!strcmp(name, "--seed")) {
      if (parse_u64(val, &o->seed)) return bad("--seed: '%s' is not an unsigned integer", val);
    } else if (!strcmp(name, "--theta-seed")) {
      if (parse_u64(val, &o->theta_seed)) return bad("--theta-seed: '%s' is not an unsigned integer", val);
    } else if (!strcmp(name, "--precision")) {
      if (parse_int(val, 6, 17, &iv)) return bad("--precision: '%s' is not in 6..17", val);
      o->prec = (int)iv;
    } else if (!strcmp(name, "--truth-file")) {
      if (!*val) return bad("--truth-file: empty file name");
      o->truth_file = val;
    } else {
      return bad("unknown option '%s'", name);
    }
  }
  if (!o->got_model)    return bad("missing --model");
  if (!o->got_rows)     return bad("missing --rows");
  if (!o->got_features) return bad("missing --features");
  if (o->got_classes && o->model != M_SOFTMAX)
    return bad("--classes applies to --model softmax only");
  if ((o->got_nu || o->got_noise) && o->model != M_ROBUST)
    return bad("--nu and --noise-scale apply to --model robust only");
  if (o->model != M_SOFTMAX) o->K = 1;
  return 0;
}

/* -------------------------------------------------------------- truth --- */

/* var(b^T x) under the AR(1) feature law: sum_ij b_i b_j rho^|i-j|, by the
 * recursion h_j = b_j + rho h_{j-1} (h_j = sum_{i<=j} b_i rho^(j-i)). */
static double ar1_var(const double *b, long D, double rho)
{
  double h = 0.0, v = 0.0;
  for (long j = 0; j < D; j++) {
    h = rho * h;
    v += b[j] * b[j] + 2.0 * b[j] * h;
    h += b[j];
  }
  return v;
}

/* th is K x (D+1), row k = (intercept, slopes). */
static void draw_truth(const opts *o, double *th)
{
  long K = o->K, D = o->D, W = D + 1;
  rng r;
  rng_seed(&r, o->theta_seed ^ 0x7468657461ULL);   /* "theta" */
  for (long k = 0; k < K; k++) {
    th[k * W] = 0.5 * rng_normal(&r);
    for (long j = 1; j <= D; j++) th[k * W + j] = rng_normal(&r) / sqrt((double)D);
  }
  if (K > 1)
    for (long j = 0; j < W; j++) {
      double m = 0.0;
      for (long k = 0; k < K; k++) m += th[k * W + j];
      m /= (double)K;
      for (long k = 0; k < K; k++) th[k * W + j] -= m;
    }
  double v = 0.0;
  for (long k = 0; k < K; k++) v += ar1_var(th + k * W + 1, D, o->rho);
  v /= (double)K;
  double c = v > 0 ? o->signal_sd / sqrt(v) : 0.0;
  for (long k = 0; k < K; k++)
    for (long j = 1; j <= D; j++) th[k * W + j] *= c;
}

static int write_truth(FILE *f, const opts *o, const double *th)
{
  long W = o->D + 1;
  fprintf(f, "param,value\n");
  for (long k = 0; k < o->K; k++)
    for (long j = 0; j < W; j++) {
      char pre[32] = "";
      if (o->model == M_SOFTMAX) snprintf(pre, sizeof pre, "y%ld:", k);
      if (j == 0) fprintf(f, "%sintercept,%.17g\n", pre, th[k * W]);
      else        fprintf(f, "%sx%ld,%.17g\n", pre, j, th[k * W + j]);
    }
  if (o->model == M_ROBUST) {
    fprintf(f, "sigma,%.17g\n", o->noise);
    fprintf(f, "nu,%.17g\n", o->nu);
  }
  return ferror(f) ? -1 : 0;
}

/* --------------------------------------------------------------- main --- */

int main(int argc, char **argv)
{
  opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  signal(SIGPIPE, SIG_IGN);          /* write() reports EPIPE instead */
  dexp_init();

  long K = o.K, D = o.D, W = D + 1;
  double *th  = malloc((size_t)K * (size_t)W * sizeof *th);
  double *x   = malloc((size_t)D * sizeof *x);     /* features as printed */
  double *eta = malloc((size_t)K * sizeof *eta);
  size_t row_max = (size_t)(D + 1) * NUM_MAX + 2;
  outbuf ob = { NULL, 0, OUT_CAP > 2 * row_max ? OUT_CAP : 2 * row_max };
  ob.buf = malloc(ob.cap);
  if (!th || !x || !eta || !ob.buf) { fprintf(stderr, "flydb-gen: out of memory\n"); return 1; }

  draw_truth(&o, th);
  if (o.truth && write_truth(stderr, &o, th)) return 1;
  if (o.truth_file) {
    FILE *f = fopen(o.truth_file, "w");
    if (!f) { fprintf(stderr, "flydb-gen: %s: %s\n", o.truth_file, strerror(errno)); return 1; }
    int bad_w = write_truth(f, &o, th);
    if (fclose(f) != 0 || bad_w) {
      fprintf(stderr, "flydb-gen: %s: write failed\n", o.truth_file);
      return 1;
    }
  }

  if (o.header) {
    for (long j = 1; j <= D; j++) {
      ob.n += (size_t)snprintf(ob.buf + ob.n, 32, "x%ld,", j);
      if (ob.n + 32 > ob.cap) out_flush(&ob);
    }
    memcpy(ob.buf + ob.n, "y\n", 2); ob.n += 2;
  }

  rng r;
  rng_seed(&r, o.seed);
  const double rho = o.rho, sq = sqrt(1.0 - o.rho * o.rho);
  const int prec = o.prec;
  for (int64_t n = 0; n < o.N; n++) {
    if (ob.n + row_max > ob.cap) out_flush(&ob);
    char *p = ob.buf + ob.n;
    double prev = 0.0;
    for (long j = 0; j < D; j++) {
      double xj = rng_normal(&r);
      if (rho != 0.0) { if (j > 0) xj = rho * prev + sq * xj; prev = xj; }
      p = fmt_num(p, xj, prec, &x[j]);
      *p++ = ',';
    }
    if (o.model == M_SOFTMAX) {
      double mx = -INFINITY;
      for (long k = 0; k < K; k++) {
        const double *t = th + k * W;
        double s = t[0];
        for (long j = 0; j < D; j++) s += t[j + 1] * x[j];
        eta[k] = s;
        if (s > mx) mx = s;
      }
      double tot = 0.0;
      for (long k = 0; k < K; k++) { eta[k] = exp(eta[k] - mx); tot += eta[k]; }
      double u = rng_unif(&r) * tot, acc = 0.0;
      long y = K - 1;
      for (long k = 0; k < K - 1; k++) { acc += eta[k]; if (u < acc) { y = k; break; } }
      p += snprintf(p, 24, "%ld", y);
    } else {
      double s = th[0];
      for (long j = 0; j < D; j++) s += th[j + 1] * x[j];
      if (o.model == M_LOGISTIC) {
        double pr = 1.0 / (1.0 + exp(-s));
        *p++ = rng_unif(&r) < pr ? '1' : '0';
      } else {
        double z = rng_normal(&r);
        double g = 2.0 * rng_gamma(&r, 0.5 * o.nu);          /* chi^2_nu */
        double y = s + o.noise * z / sqrt(g / o.nu), yp;
        p = fmt_num(p, y, prec, &yp);
      }
    }
    *p++ = '\n';
    ob.n = (size_t)(p - ob.buf);
  }
  out_flush(&ob);
  free(th); free(x); free(eta); free(ob.buf);
  return 0;
}
