/*
 * csv.c -- streaming RFC 4180 reader for `flydb ingest`.
 *
 * Concept.  The input is read through one buffer, a record at a time.  A
 * record is parsed in place: each field is scanned once, and a plain decimal
 * number is converted while it is scanned (Clinger's fast path: at most 19
 * significant digits whose value m <= 2^53 and a power of ten 10^e with
 * |e| <= 22 are both exact doubles, so one IEEE multiply or divide gives the
 * correctly rounded result, bit for bit what strtod returns).  In the read
 * buffer, a number's integer and fraction digits are each taken 8 bytes at
 * a time (SWAR: the run of digits found by a mask, converted by three
 * multiplies; a single integer digit before the point directly), which
 * gives the same m and e as a digit loop without its branches, and its
 * sign is applied as a bit (random signs defeat a branch predictor); the
 * buffer has FLY_CSV_PAD bytes after its sentinel for that.  A plain
 * decimal outside that range (e.g. 17 significant digits) goes to strtod in
 * place.  Anything else -- quotes, a lone CR, an error -- falls back to a
 * general path that isolates the field, undoes the quoting and calls strtod.
 * Numbers are strtod's, in the C locale.
 *
 * Invariants.
 *   pos <= end <= cap, and buf[end] == 0: a sentinel, so every scanner may
 *   look one byte ahead and stops at the end of the buffered bytes without
 *   a bounds check (a NUL inside the data is told apart by its address).
 *   buf[pos] starts the next record, on physical line `line`; base + pos
 *   bytes of input have been consumed.
 *   A parser that runs into the end of the buffered bytes before the record
 *   ends returns MORE (never once eof is set); the caller refills and parses
 *   the record again from its start, so nothing is committed until a whole
 *   record has been read.  Positions in messages are 1-based: the line where
 *   the field starts, the field's index.
 *
 * Cost.  One pass over the bytes; per field no allocation, and no library
 * call for numbers of up to 15 digits.  A record that runs past the buffer
 * is moved to the front and parsed again; a record longer than the buffer
 * doubles it.  Memory is the 1 MiB buffer, or under 2x the longest record,
 * plus the longest non-plain cell and the header, whatever the file size;
 * the cells mode (fly_csv_next_cells) adds one buffer of the read buffer's
 * size for the unescaped texts of quoted cells, so a record's texts stay
 * put until the next call.
 * The workload is one sequential pass of a large numeric file (10^6 x 20
 * and up) whose cells mostly have 15 significant digits or fewer, so the
 * fast path is what matters; strtod is several times slower per byte.
 */
#include "csv.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "util/err.h"
#include "util/mem.h"

#define CSV_BUF_DEFAULT ((size_t)1 << 20)   /* bytes */
#define SHOW_MAX 40                         /* bytes of a bad cell quoted */

/* Internal status: the record runs past the buffered bytes; refill and
 * parse it again.  Never returned to a caller. */
#define MORE FLY_RC_COUNT

/* Clinger's fast path needs double arithmetic without excess precision. */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define FAST_EXACT 1
#else
#define FAST_EXACT 0
#endif

struct fly_csv {
  FILE     *f;          /* input */
  int       own;        /* 1: close f (not stdin) */
  int       eof;        /* f has no more bytes */
  char     *path;       /* display name, owned */
  char     *buf;        /* cap + 1 + FLY_CSV_PAD bytes, buf[end] == 0 */
  size_t    cap;        /* buffer capacity, bytes */
  size_t    pos;        /* start of the next record in buf */
  size_t    end;        /* bytes held in buf */
  uint64_t  base;       /* input offset of buf[0], bytes */
  int64_t   line;       /* physical line of buf[pos] */
  int64_t   rec_line;   /* line where the last record started */
  int64_t   n_rec;      /* data records read */
  size_t    ncols;      /* header width */
  char     *names;      /* header names, each NUL-terminated */
  size_t    names_len;  /* bytes used in names */
  size_t    names_cap;  /* bytes allocated for names */
  size_t   *name_off;   /* ncols offsets into names */
  size_t    off_cap;    /* entries allocated for name_off */
  char     *tmp;        /* scratch for one unquoted/trimmed cell */
  size_t    tmp_cap;    /* bytes allocated for tmp */
  char     *txt;        /* cells mode: unescaped quoted texts of a record */
  size_t    txt_cap;    /* bytes allocated for txt, > cap when in use */
  size_t    txt_len;    /* bytes of txt used by the current record */
  int       chunk;      /* 1: a chunk reader: buf, path and names borrowed
                           (buf from the caller, the others from the
                           header's reader), txt kept for the chunk */
};

/* How a field ended. */
enum { T_COMMA, T_EOL, T_EOF };

/* One field located by the general path. */
typedef struct {
  const char *s, *e;    /* content; quoted: between the quotes, "" doubled */
  int         quoted;   /* 1 if the field was quoted */
  int         nul;      /* unquoted: 1 if the content holds a NUL byte
                           (quoted: 0, the caller looks) */
  int         term;     /* T_COMMA, T_EOL or T_EOF */
} fld;

static const double p10[23] = {
  1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* Bytes that stop an unquoted field (NUL: only at the buffer end). */
static const unsigned char stop[256] = {
  [0] = 1, [','] = 1, ['\n'] = 1, ['\r'] = 1, ['"'] = 1,
};

#define IS_DIGIT(ch) ((unsigned)((ch) - '0') < 10u)
#define IS_BLANK(ch) ((ch) == ' ' || (ch) == '\t')

/* The value of m * 10^e10 (m exact, -m when neg) into *out: 1 when
 * Clinger's fast path gives it exactly, 2 when it needs strtod. */
static int clinger(uint64_t m, int64_t e10, int neg, double *out)
{
  if( m == 0 ){ *out = neg ? -0.0 : 0.0; return 1; }
  if( !FAST_EXACT || m > ((uint64_t)1 << 53) || e10 < -22 || e10 > 22 )
    return 2;
  double v = (double)m;
  uint64_t bits;
  v = e10 < 0 ? v / p10[-e10] : v * p10[e10];
  memcpy(&bits, &v, sizeof bits);           /* the sign without a branch: */
  bits |= (uint64_t)neg << 63;              /* signs of real data are a   */
  memcpy(out, &bits, sizeof bits);          /* coin toss to a predictor   */
  return 1;
}

/* An exponent  (e|E) [+-] digits  at *ps, if any, added to *e10 (*ps past
 * it).  0 when an 'e' has no digits after it. */
static int exponent(const char **ps, int64_t *e10)
{
  const char *t = *ps;
  int64_t x = 0;
  int eneg = 0;
  if( *t != 'e' && *t != 'E' ) return 1;
  t++;
  if( *t == '-' ){ eneg = 1; t++; }
  else if( *t == '+' ) t++;
  if( !IS_DIGIT(*t) ) return 0;
  while( IS_DIGIT(*t) ){
    if( x < 100000 ) x = x*10 + (*t - '0');
    t++;
  }
  *e10 += eneg ? -x : x;
  *ps = t;
  return 1;
}

/* Parse a plain decimal  [+-] digits [. digits] [(e|E) [+-] digits]  (at
 * least one mantissa digit) at p.  Returns 1 with *out when the value is
 * exact by Clinger's fast path, 2 when the syntax is plain but the value
 * needs strtod, 0 when the text is not a plain decimal.  With 1 or 2, *endp
 * is the end of the number.  Stops at any non-number byte, so it never
 * passes the sentinel. */
static int fast_num(const char *p, const char **endp, double *out)
{
  const char *s = p, *d, *g;
  uint64_t m = 0;
  int64_t nsig, e10 = 0;
  size_t nd;
  int neg = 0;

  if( *s == '-' ){ neg = 1; s++; }
  else if( *s == '+' ) s++;
  d = s;
  while( *s == '0' ) s++;
  g = s;
  while( IS_DIGIT(*s) ){ m = m*10 + (uint64_t)(*s - '0'); s++; }
  nsig = s - g;
  nd = (size_t)(s - d);
  if( *s == '.' ){
    const char *f = ++s;
    if( nsig == 0 ){
      while( *s == '0' ) s++;
      e10 = -(int64_t)(s - f);
    }
    g = s;
    while( IS_DIGIT(*s) ){ m = m*10 + (uint64_t)(*s - '0'); s++; }
    nsig += s - g;
    e10 -= s - g;
    nd += (size_t)(s - f);
  }
  if( nd == 0 || !exponent(&s, &e10) ) return 0;
  *endp = s;
  if( nsig > 19 ) return 2;                 /* m wrapped */
  return clinger(m, e10, neg, out);
}

/* The digits leading the 8 bytes at s: how many (0..8), *val their value.
 * Byte b is a digit when b ^ '0' < 10: the high bit of ((x & 0x7f) + 0x76)
 * | x, per byte without carries. */
static unsigned digits8(const char *s, uint64_t *val)
{
  uint64_t x, nd;
  unsigned n;
  memcpy(&x, s, sizeof x);
  x ^= UINT64_C(0x3030303030303030);
  nd = (((x & UINT64_C(0x7F7F7F7F7F7F7F7F)) + UINT64_C(0x7676767676767676)) | x)
       & UINT64_C(0x8080808080808080);
  n = nd ? (unsigned)__builtin_ctzll(nd) >> 3 : 8;
  if( n == 0 ){ *val = 0; return 0; }
  x <<= 8 * (8 - n);                        /* the digits high, zeros low */
  x = x * 10 + (x >> 8);                    /* pairs */
  x = (((x & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x000F424000000064))
       + (((x >> 16) & UINT64_C(0x000000FF000000FF))
          * UINT64_C(0x0000271000000001))) >> 32;
  *val = x & 0xFFFFFFFFu;
  return n;
}

/* fast_num for p in the read buffer (FLY_CSV_PAD bytes readable past the
 * sentinel): integer and fraction parts of up to 7 digits each by
 * digits8 (an integer part of one digit before a point directly), the
 * same m and e10 as the digit loop, so the same result; longer ones by
 * fast_num. */
static int fast_num_buf(const char *p, const char **endp, double *out)
{
  static const uint64_t pow10i[8] = { 1, 10, 100, 1000, 10000, 100000,
                                      1000000, 10000000 };
  const char *s = p;
  uint64_t m, f;
  unsigned ni, nf = 0;
  int64_t e10 = 0;
  int neg = *s == '-';                      /* no branch, as in clinger */

  s += neg | (*s == '+');
  if( IS_DIGIT(s[0]) && s[1] == '.' ){      /* one integer digit: common */
    m = (uint64_t)(s[0] - '0');
    ni = 1;
  }else if( (ni = digits8(s, &m)) == 8 ){
    return fast_num(p, endp, out);
  }
  s += ni;
  if( *s == '.' ){
    if( (nf = digits8(++s, &f)) == 8 ) return fast_num(p, endp, out);
    s += nf;
    m = m * pow10i[nf] + f;
    e10 = -(int64_t)nf;
  }
  if( ni + nf == 0 || !exponent(&s, &e10) ) return 0;
  *endp = s;
  return clinger(m, e10, neg, out);
}

/* Lines started inside [s, e): LF, CRLF and a lone CR each end one. */
static int64_t nlines(const char *s, const char *e)
{
  int64_t n = 0;
  for( ; s < e; s++ )
    if( *s == '\n' || (*s == '\r' && s[1] != '\n') ) n++;
  return n;
}

/* Printable copy of s[0..n) for a message: control bytes as '?', at most
 * SHOW_MAX bytes then "...". */
static const char *show(char *dst, size_t cap, const char *s, size_t n)
{
  size_t i, k = 0;
  for( i = 0; i < n && k + 4 < cap; i++ ){
    unsigned char ch = (unsigned char)s[i];
    if( i == SHOW_MAX ){
      memcpy(dst + k, "...", 3);
      k += 3;
      break;
    }
    dst[k++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
  }
  dst[k] = 0;
  return dst;
}

/* Grow an array to hold need elements of size bytes; returns the new
 * pointer (p itself if big enough) or NULL, leaving p and *cap untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
  size_t n = *cap ? *cap : 64;
  void *q;
  if( need <= *cap ) return p;
  while( n < need ){
    if( n > SIZE_MAX/2 ) return NULL;
    n *= 2;
  }
  q = fly_realloc_array(p, n, size);
  if( q ) *cap = n;
  return q;
}

/* Move the unread bytes from pos to the front, grow the buffer if they fill
 * it, and read more.  Sets eof when the input is exhausted. */
static fly_rc refill(fly_csv *c, fly_err *err)
{
  size_t want, got;
  if( c->pos > 0 ){
    size_t keep = c->end - c->pos;
    memmove(c->buf, c->buf + c->pos, keep);
    c->base += c->pos;
    c->end = keep;
    c->pos = 0;
  }
  if( c->end == c->cap ){
    size_t cap = c->cap * 2;
    char *b = c->cap < (SIZE_MAX - 1)/2
            ? fly_realloc_array(c->buf, cap + 1 + FLY_CSV_PAD, 1) : NULL;
    if( !b )
      return fly_fail(err, FLY_NOMEM,
                      "%s:%lld: out of memory growing the read buffer past "
                      "%zu bytes for one record", c->path,
                      (long long)c->line, c->cap);
    c->buf = b;
    c->cap = cap;
  }
  want = c->cap - c->end;
  errno = 0;
  got = fread(c->buf + c->end, 1, want, c->f);
  c->end += got;
  c->buf[c->end] = 0;
  if( got < want ){
    if( ferror(c->f) )
      return fly_fail(err, FLY_IO, "%s: read error: %s", c->path,
                      errno ? strerror(errno) : "unknown error");
    c->eof = 1;
  }
  return FLY_OK;
}

/* Skip blank lines at pos, committing them.  Returns FLY_OK with buf[pos]
 * the start of a record or the end of input, or MORE. */
static fly_rc skip_blank(fly_csv *c)
{
  const char *buf = c->buf, *end = buf + c->end, *p = buf + c->pos;
  for(;;){
    if( *p == '\n' ) p++;
    else if( *p == '\r' ){
      if( p + 1 == end && !c->eof ) return MORE;
      p += p[1] == '\n' ? 2 : 1;
    }else break;
    c->line++;
    c->pos = (size_t)(p - buf);
  }
  return FLY_OK;
}

/* Locate the field at *pp (line *pl, index col): skip blanks, then either a
 * quoted field or bytes up to the next ',', line end or end of input, with
 * blanks trimmed.  Consumes the terminator and sets f->term.  *pl counts the
 * line ends inside quotes, not the terminator. */
static fly_rc field(fly_csv *c, const char **pp, int64_t *pl, size_t col,
                    fld *f, fly_err *err)
{
  const char *end = c->buf + c->end, *p = *pp;
  int64_t line = *pl;
  char what[8];

  while( IS_BLANK(*p) ) p++;
  if( *p == '"' ){
    const char *q = p + 1, *r;
    for(;;){
      r = memchr(q, '"', (size_t)(end - q));
      if( !r ){
        if( !c->eof ) return MORE;
        return fly_fail(err, FLY_PARSE,
                        "%s:%lld:%zu: unterminated quoted field, want a "
                        "closing '\"' before the end of the file",
                        c->path, (long long)line, col);
      }
      if( r + 1 == end && !c->eof ) return MORE;
      if( r[1] != '"' ) break;
      q = r + 2;
    }
    f->s = p + 1;
    f->e = r;
    f->quoted = 1;
    f->nul = 0;                             /* not scanned for: see text_cell */
    line += nlines(p + 1, r);
    p = r + 1;
    while( IS_BLANK(*p) ) p++;
  }else{
    f->s = p;
    f->nul = 0;
    for(;;){
      unsigned char ch = (unsigned char)*p;
      if( stop[ch] ){
        if( ch || p == end ) break;
        f->nul = 1;                         /* a NUL inside the data */
      }
      p++;
    }
    if( *p == '"' )
      return fly_fail(err, FLY_PARSE,
                      "%s:%lld:%zu: '\"' inside an unquoted field, want the "
                      "whole field quoted with '\"' doubled",
                      c->path, (long long)line, col);
    f->e = p;
    while( f->e > f->s && IS_BLANK(f->e[-1]) ) f->e--;
    f->quoted = 0;
  }
  switch( *p ){
  case ',':
    p++;
    f->term = T_COMMA;
    break;
  case '\n':
    p++;
    f->term = T_EOL;
    break;
  case '\r':
    if( p + 1 == end && !c->eof ) return MORE;
    p += p[1] == '\n' ? 2 : 1;
    f->term = T_EOL;
    break;
  default:
    if( *p == 0 && p == end ){
      if( !c->eof ) return MORE;
      f->term = T_EOF;
      break;
    }
    /* only after a closing quote */
    if( (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f )
      snprintf(what, sizeof what, "'%c'", *p);
    else
      snprintf(what, sizeof what, "0x%02x", (unsigned)(unsigned char)*p);
    return fly_fail(err, FLY_PARSE,
                    "%s:%lld:%zu: unexpected %s after a closing quote, want "
                    "',' or the end of the line",
                    c->path, (long long)line, col, what);
  }
  *pp = p;
  *pl = line;
  return FLY_OK;
}

/* What a cell's text is as a number. */
enum { NUM_OK, NUM_EMPTY, NUM_NOT, NUM_NONFINITE, NUM_OVERFLOW, NUM_NOMEM };

/* Can strtod read a number from text starting with ch (after blanks)?  It
 * would skip \v \f \n first, which a cell never does; in the C locale a
 * number starts with a sign, a digit, a point, or inf / nan in any case,
 * so a label starting otherwise ("Fair", "c3") is no number without
 * asking. */
static int may_start_num(char ch)
{
  return (unsigned char)ch > ' ' && (IS_DIGIT(ch) || ch == '+' || ch == '-'
                                     || ch == '.' || (ch | 0x20) == 'i'
                                     || (ch | 0x20) == 'n');
}

/* Convert the text of a located field (quotes undone, blanks trimmed) with
 * strtod semantics into *out.  *pa, *pb: the trimmed text in c->tmp, for
 * messages.  Returns NUM_OK or why not. */
static int num_of(fly_csv *c, const fld *f, double *out, char **pa, char **pb)
{
  size_t n = (size_t)(f->e - f->s), k = 0;
  const char *s, *q;
  char *t, *a, *b, *qe;
  double v;

  t = grow(c->tmp, &c->tmp_cap, n + 1, 1);
  if( !t ) return NUM_NOMEM;
  c->tmp = t;
  if( f->quoted ){
    for( s = f->s; s < f->e; s++ ){
      t[k++] = *s;
      if( *s == '"' ) s++;                  /* "" -> " */
    }
  }else{
    memcpy(t, f->s, n);
    k = n;
  }
  a = t;
  b = t + k;
  while( a < b && IS_BLANK(*a) ) a++;
  while( b > a && IS_BLANK(b[-1]) ) b--;
  *b = 0;
  *pa = a;
  *pb = b;
  if( a == b ) return NUM_EMPTY;
  if( fast_num(a, &q, &v) == 1 && q == b ){
    *out = v;
    return NUM_OK;
  }
  if( may_start_num(*a) ){
    errno = 0;
    v = strtod(a, &qe);
    if( qe == b ){
      if( isfinite(v) ){
        *out = v;
        return NUM_OK;
      }
      return errno == ERANGE ? NUM_OVERFLOW : NUM_NONFINITE;
    }
  }
  return NUM_NOT;
}

/* Convert a located field to a finite double (strtod semantics, blanks
 * trimmed).  line and col place it in messages. */
static fly_rc cell(fly_csv *c, const fld *f, int64_t line, size_t col,
                   double *out, fly_err *err)
{
  char *a = NULL, *b = NULL, txt[SHOW_MAX + 8], nm[SHOW_MAX + 8];
  const char *s;
  int r = num_of(c, f, out, &a, &b);

  if( r == NUM_OK ) return FLY_OK;
  if( r == NUM_NOMEM )
    return fly_fail(err, FLY_NOMEM, "%s:%lld:%zu: out of memory for a "
                    "%zu-byte cell", c->path, (long long)line, col,
                    (size_t)(f->e - f->s));
  s = c->names + c->name_off[col - 1];
  show(nm, sizeof nm, s, strlen(s));
  show(txt, sizeof txt, a, (size_t)(b - a));
  if( r == NUM_EMPTY )
    return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: empty cell, want a number "
                    "(column '%s')", c->path, (long long)line, col, nm);
  if( r == NUM_OVERFLOW )
    return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: '%s' overflows a double, "
                    "want a finite number (column '%s')",
                    c->path, (long long)line, col, txt, nm);
  if( r == NUM_NONFINITE )
    return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: '%s' is not a finite "
                    "number; NaN and Inf are not allowed (column '%s')",
                    c->path, (long long)line, col, txt, nm);
  return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: '%s' is not a number "
                  "(column '%s')", c->path, (long long)line, col, txt, nm);
}

/* Cells mode: the text of a located field into *cl (quotes undone into
 * c->txt, which holds more than the buffer so it never moves during a
 * record; an unquoted field is trimmed, a quoted one kept as written), and
 * its value when it is a finite number.  FLY_PARSE for a NUL byte. */
static fly_rc text_cell(fly_csv *c, const fld *f, int64_t line, size_t col,
                        fly_csv_cell *cl, fly_err *err)
{
  char *a = NULL, *b = NULL;
  int r;

  if( f->quoted && memchr(f->s, '"', (size_t)(f->e - f->s)) ){
    char *t = c->txt + c->txt_len;
    size_t k = 0;
    for( const char *s = f->s; s < f->e; s++ ){
      t[k++] = *s;
      if( *s == '"' ) s++;                  /* "" -> " */
    }
    cl->s = t;
    cl->n = k;
    c->txt_len += k;
  }else{
    cl->s = f->s;
    cl->n = (size_t)(f->e - f->s);
  }
  if( f->quoted ? memchr(cl->s, 0, cl->n) != NULL : f->nul )
    return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: NUL byte in a cell",
                    c->path, (long long)line, col);
  cl->quoted = f->quoted;
  {                                         /* a label: no number to try */
    const char *q = cl->s, *e = cl->s + cl->n;
    while( q < e && IS_BLANK(*q) ) q++;
    if( q < e && !may_start_num(*q) ){
      cl->num = 0;
      cl->v = NAN;
      return FLY_OK;
    }
  }
  r = num_of(c, f, &cl->v, &a, &b);
  if( r == NUM_NOMEM )
    return fly_fail(err, FLY_NOMEM, "%s:%lld:%zu: out of memory for a "
                    "%zu-byte cell", c->path, (long long)line, col, cl->n);
  cl->num = r == NUM_OK;
  if( !cl->num ) cl->v = NAN;
  return FLY_OK;
}

/* A record has more than ncols fields: count them (p is after the comma
 * that ended field ncols) and report. */
static fly_rc too_many(fly_csv *c, const char *p, int64_t line, fly_err *err)
{
  int64_t l0 = line;
  size_t k = c->ncols;
  fld f;
  fly_rc rc;
  do{
    rc = field(c, &p, &line, k + 1, &f, err);
    if( rc != FLY_OK ) return rc;
    k++;
  }while( f.term == T_COMMA );
  return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: row has %zu fields, header "
                  "has %zu", c->path, (long long)l0, c->ncols + 1, k,
                  c->ncols);
}

/* Parse one data record at pos into vals, or (cells non-NULL) into
 * cells. */
static fly_rc record(fly_csv *c, double *vals, fly_csv_cell *cells,
                     fly_err *err)
{
  const char *buf = c->buf, *p;
  const size_t n = c->ncols;
  int64_t line, start;
  size_t j = 0;
  fly_rc rc;

  rc = skip_blank(c);
  if( rc != FLY_OK ) return rc;
  p = buf + c->pos;
  if( p == buf + c->end ) return c->eof ? FLY_DONE : MORE;
  line = start = c->line;
  if( !c->chunk ) c->txt_len = 0;
  for(;;){
    const char *q = p, *e, *ne;
    double v;
    int term, r;

    while( IS_BLANK(*q) ) q++;
    r = fast_num_buf(q, &e, &v);
    if( r == 2 ){                           /* plain, but not exact fast */
      char *se;
      v = strtod(q, &se);
      r = (se == e && isfinite(v)) ? 1 : 0;
    }
    ne = r == 1 ? e : q;
    if( r == 1 ){
      if( *e != ',' ) while( IS_BLANK(*e) ) e++;
      if( *e == ',' ){ p = e + 1; term = T_COMMA; }
      else if( *e == '\n' ){ p = e + 1; term = T_EOL; }
      else if( *e == '\r' && e[1] == '\n' ){ p = e + 2; term = T_EOL; }
      else r = 0;
    }
    if( r == 1 && cells ){                  /* [q, number end) is the text */
      fly_csv_cell *cl = &cells[j];
      cl->s = q;
      cl->n = (size_t)(ne - q);
      cl->v = v;
      cl->num = 1;
      cl->quoted = 0;
    }
    if( r != 1 ){                           /* the general path */
      int64_t fl = line;
      fld f;
      rc = field(c, &p, &fl, j + 1, &f, err);
      if( rc != FLY_OK ) return rc;
      rc = cells ? text_cell(c, &f, line, j + 1, &cells[j], err)
                 : cell(c, &f, line, j + 1, &v, err);
      if( rc != FLY_OK ) return rc;
      line = fl;
      term = f.term;
    }
    if( cells ) j++;
    else vals[j++] = v;
    if( term == T_COMMA ){
      if( j == n ) return too_many(c, p, line, err);
      continue;
    }
    if( j < n )
      return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: row has %zu field%s, "
                      "header has %zu", c->path, (long long)line, j + 1, j,
                      j == 1 ? "" : "s", n);
    if( term == T_EOL ) line++;
    break;
  }
  c->pos = (size_t)(p - buf);
  c->line = line;
  c->rec_line = start;
  c->n_rec++;
  return FLY_ROW;
}

/* Parse the header row at pos into names; rec_line is where it starts. */
static fly_rc header(fly_csv *c, fly_err *err)
{
  const char *p;
  int64_t line;
  fld f;
  fly_rc rc;

  rc = skip_blank(c);
  if( rc != FLY_OK ) return rc;
  p = c->buf + c->pos;
  if( p == c->buf + c->end ){
    if( !c->eof ) return MORE;
    return fly_fail(err, FLY_PARSE, "%s:%lld:1: no header: the file %s, "
                    "want a header row of column names", c->path,
                    (long long)c->line, c->line == 1 ? "is empty"
                    : "has only blank lines");
  }
  line = c->rec_line = c->line;
  c->ncols = 0;
  c->names_len = 0;
  do{
    size_t j = c->ncols, n, k = 0;
    int64_t fl = line;
    const char *s;
    char *nm;
    size_t *off;

    rc = field(c, &p, &line, j + 1, &f, err);
    if( rc != FLY_OK ) return rc;
    n = (size_t)(f.e - f.s);
    nm = grow(c->names, &c->names_cap, c->names_len + n + 1, 1);
    off = grow(c->name_off, &c->off_cap, j + 1, sizeof *off);
    if( nm ) c->names = nm;
    if( off ) c->name_off = off;
    if( !nm || !off )
      return fly_fail(err, FLY_NOMEM, "%s:%lld:%zu: out of memory for the "
                      "header", c->path, (long long)fl, j + 1);
    nm += c->names_len;
    for( s = f.s; s < f.e; s++ ){
      nm[k++] = *s;
      if( f.quoted && *s == '"' ) s++;
    }
    nm[k] = 0;
    if( strspn(nm, " \t") == k )            /* empty, or blanks in quotes */
      return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: empty column name, want "
                      "a name for every column", c->path, (long long)fl,
                      j + 1);
    if( memchr(nm, 0, k) )
      return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: NUL byte in a column "
                      "name", c->path, (long long)fl, j + 1);
    c->name_off[j] = c->names_len;
    c->names_len += k + 1;
    c->ncols = j + 1;
  }while( f.term == T_COMMA );
  if( f.term == T_EOL ) line++;
  c->pos = (size_t)(p - c->buf);
  c->line = line;
  return FLY_OK;
}

/* Duplicate header names, by open addressing on an FNV-1a hash. */
static fly_rc dup_names(fly_csv *c, fly_err *err)
{
  size_t m = 16, j, h, *tab = NULL;
  fly_rc rc = FLY_OK;
  char nm[SHOW_MAX + 8];

  while( m < 2*c->ncols ) m *= 2;
  tab = fly_alloc_array(m, sizeof *tab);
  if( !tab ){
    rc = fly_fail(err, FLY_NOMEM, "%s: out of memory checking the header",
                  c->path);
    goto done;
  }
  for( j = 0; j < c->ncols; j++ ){
    const char *s = c->names + c->name_off[j];
    uint64_t x = UINT64_C(1469598103934665603);
    const unsigned char *u;
    for( u = (const unsigned char *)s; *u; u++ )
      x = (x ^ *u)*UINT64_C(1099511628211);
    for( h = (size_t)x & (m - 1); tab[h]; h = (h + 1) & (m - 1) ){
      if( strcmp(c->names + c->name_off[tab[h] - 1], s) == 0 ){
        rc = fly_fail(err, FLY_PARSE, "%s:%lld:%zu: duplicate column name "
                      "'%s' (columns %zu and %zu)", c->path,
                      (long long)c->rec_line,
                      j + 1, show(nm, sizeof nm, s, strlen(s)), tab[h],
                      j + 1);
        goto done;
      }
    }
    tab[h] = j + 1;
  }
done:
  fly_free(tab);
  return rc;
}

fly_rc fly_csv_open(const char *path, fly_csv **pc, fly_err *err)
{
  return fly_csv_open_buf(path, 0, pc, err);
}

/* Open path ("-": stdin) or, when f is non-NULL, the borrowed stream f
 * named path; then read the header. */
static fly_rc open_csv(FILE *f, const char *path, size_t bufsize, fly_csv **pc,
                       fly_err *err)
{
  fly_csv *c = NULL;
  fly_rc rc = FLY_OK;

  if( !pc || !path )
    return fly_fail(err, FLY_MISUSE, "fly_csv_open: NULL argument");
  *pc = NULL;
  if( bufsize == 0 ) bufsize = CSV_BUF_DEFAULT;
  if( bufsize > SIZE_MAX/4 )
    return fly_fail(err, FLY_MISUSE, "fly_csv_open: buffer size %zu",
                    bufsize);
  c = fly_alloc_array(1, sizeof *c);
  if( !c ) return fly_fail(err, FLY_NOMEM, "%s: out of memory", path);
  c->line = 1;
  c->cap = bufsize;
  c->buf = fly_alloc_array(bufsize + 1 + FLY_CSV_PAD, 1);
  c->path = fly_strdup(!f && strcmp(path, "-") == 0 ? "<stdin>" : path);
  if( !c->buf || !c->path ){
    rc = fly_fail(err, FLY_NOMEM, "%s: out of memory for the read buffer",
                  path);
    goto done;
  }
  if( f ){
    c->f = f;
  }else if( strcmp(path, "-") == 0 ){
    c->f = stdin;
  }else{
    errno = 0;
    c->f = fopen(path, "rb");
    if( !c->f ){
      rc = fly_fail(err, FLY_IO, "cannot open %s: %s", path,
                    errno ? strerror(errno) : "unknown error");
      goto done;
    }
    c->own = 1;
  }
  while( c->end < 3 && !c->eof ){
    rc = refill(c, err);
    if( rc != FLY_OK ) goto done;
  }
  if( c->end >= 3 && memcmp(c->buf, "\xEF\xBB\xBF", 3) == 0 ) c->pos = 3;
  while( (rc = header(c, err)) == MORE ){
    rc = refill(c, err);
    if( rc != FLY_OK ) goto done;
  }
  if( rc != FLY_OK ) goto done;
  rc = dup_names(c, err);

done:
  if( rc != FLY_OK ){
    fly_csv_close(c);
    return rc;
  }
  *pc = c;
  return FLY_OK;
}

fly_rc fly_csv_open_buf(const char *path, size_t bufsize, fly_csv **pc,
                        fly_err *err)
{
  return open_csv(NULL, path, bufsize, pc, err);
}

fly_rc fly_csv_open_stream(FILE *f, const char *name, fly_csv **pc,
                           fly_err *err)
{
  if( !f ) return fly_fail(err, FLY_MISUSE, "fly_csv_open_stream: NULL stream");
  return open_csv(f, name, 0, pc, err);
}

void fly_csv_close(fly_csv *c)
{
  if( !c ) return;
  if( c->own && c->f ) fclose(c->f);
  if( !c->chunk ){
    fly_free(c->path);
    fly_free(c->names);
    fly_free(c->name_off);
  }
  if( !c->chunk ) fly_free(c->buf);
  fly_free(c->tmp);
  fly_free(c->txt);
  fly_free(c);
}

fly_rc fly_csv_next(fly_csv *c, double *vals, fly_err *err)
{
  fly_rc rc;
  if( !c || !vals )
    return fly_fail(err, FLY_MISUSE, "fly_csv_next: NULL argument");
  for(;;){
    rc = record(c, vals, NULL, err);
    if( rc != MORE ) return rc;
    rc = refill(c, err);
    if( rc != FLY_OK ) return rc;
  }
}

fly_rc fly_csv_next_cells(fly_csv *c, fly_csv_cell *cells, fly_err *err)
{
  fly_rc rc;
  if( !c || !cells )
    return fly_fail(err, FLY_MISUSE, "fly_csv_next_cells: NULL argument");
  for(;;){
    if( c->txt_cap <= c->cap ){             /* unescaped texts fit in txt */
      char *t = fly_realloc_array(c->txt, c->cap + 1, 1);
      if( !t )
        return fly_fail(err, FLY_NOMEM, "%s:%lld: out of memory for a record "
                        "of up to %zu bytes", c->path, (long long)c->line,
                        c->cap);
      c->txt = t;
      c->txt_cap = c->cap + 1;
    }
    rc = record(c, NULL, cells, err);
    if( rc != MORE ) return rc;
    rc = refill(c, err);
    if( rc != FLY_OK ) return rc;
  }
}

size_t fly_csv_ncols(const fly_csv *c) { return c->ncols; }

const char *fly_csv_colname(const fly_csv *c, size_t j)
{
  return j < c->ncols ? c->names + c->name_off[j] : NULL;
}

const char *fly_csv_path(const fly_csv *c) { return c->path; }
int64_t fly_csv_line(const fly_csv *c) { return c->rec_line; }
int64_t fly_csv_records(const fly_csv *c) { return c->n_rec; }
uint64_t fly_csv_bytes(const fly_csv *c) { return c->base + c->pos; }

int64_t fly_csv_next_line(const fly_csv *c) { return c->line; }

fly_rc fly_csv_read_raw(fly_csv *c, char *dst, size_t n, size_t *got,
                        fly_err *err)
{
  size_t k = c->end - c->pos, r;
  if( k > n ) k = n;
  memcpy(dst, c->buf + c->pos, k);
  c->pos += k;
  *got = k;
  if( k == n || c->eof ) return FLY_OK;
  errno = 0;
  r = fread(dst + k, 1, n - k, c->f);
  *got += r;
  c->base += r;                     /* bytes consumed = base + pos */
  if( r < n - k ){
    if( ferror(c->f) )
      return fly_fail(err, FLY_IO, "%s: read error: %s", c->path,
                      errno ? strerror(errno) : "unknown error");
    c->eof = 1;
  }
  return FLY_OK;
}

size_t fly_csv_boundary(const char *s, size_t n, int *inq)
{
  size_t last = 0, i;
  int in = *inq;
  if( !in && !memchr(s, '"', n) ){          /* no quotes: the last LF */
    for( i = n; i > 0; i-- )
      if( s[i - 1] == '\n' ) return i;
    return 0;
  }
  for( i = 0; i < n; i++ ){
    if( s[i] == '"' ) in ^= 1;
    else if( s[i] == '\n' && !in ) last = i + 1;
  }
  *inq = in;
  return last;
}

/* Line ends in s[i] for i in [a, b) of s[0..n), one byte at a time. */
static int64_t count_lines_bytes(const char *s, size_t a, size_t b, size_t n)
{
  int64_t k = 0;
  for(size_t i = a; i < b; i++)
    if( s[i] == '\n' || (s[i] == '\r' && (i + 1 == n || s[i + 1] != '\n')) )
      k++;
  return k;
}

int64_t fly_csv_count_lines(const char *s, size_t n)
{
  int64_t k = 0;
  size_t i = 0;
#ifdef __SSE2__
  /* 16 bytes at a time: each line feed adds 1 to its byte lane (up to
   * 255 blocks, then the lanes are summed); a block holding a CR is
   * counted a byte at a time, where a lone CR ends a line. */
  const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
  while( i + 16 <= n ){
    __m128i acc = _mm_setzero_si128(), sum;
    for(int j = 0; j < 255 && i + 16 <= n; j++, i += 16){
      __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
      if( _mm_movemask_epi8(_mm_cmpeq_epi8(x, cr)) )
        k += count_lines_bytes(s, i, i + 16, n);
      else
        acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(x, lf));
    }
    sum = _mm_sad_epu8(acc, _mm_setzero_si128());
    k += _mm_cvtsi128_si32(sum) + _mm_extract_epi16(sum, 4);
  }
#endif
  return k + count_lines_bytes(s, i, n, n);
}

fly_rc fly_csv_open_chunk(const fly_csv *hdr, char *buf, size_t n,
                          int64_t line, fly_csv **pc, fly_err *err)
{
  fly_csv *c = fly_alloc_array(1, sizeof *c);
  *pc = NULL;
  if( !c ){
    return fly_fail(err, FLY_NOMEM, "%s:%lld: out of memory for a chunk",
                    hdr->path, (long long)line);
  }
  c->chunk = 1;
  c->eof = 1;
  c->path = hdr->path;
  c->names = hdr->names;
  c->name_off = hdr->name_off;
  c->ncols = hdr->ncols;
  c->buf = buf;
  c->buf[n] = 0;
  c->cap = c->end = n;
  c->line = c->rec_line = line;
  *pc = c;
  return FLY_OK;
}
