/*
 * source.c -- find an input's format and hand out its CSV text as a FILE*.
 *
 * Concept.  Detection reads the first byte of the input; only when it could
 * start a compressed or statistical file (1f, 28, fd, '<', '$', 00) are up
 * to 32 bytes read and matched against the magic numbers.  Plain CSV is
 * then returned as the stream itself: the one byte goes back with ungetc,
 * or, after a longer look, the file is rewound (standard input, which
 * cannot be, keeps the bytes in peek and is read through a cookie).  The
 * statistical formats are also recognised by extension, and ReadStat opens
 * them itself by path.  Every other kind is a fopencookie stream whose read
 * calls kind->read; the first failure is kept in s->fail and every later
 * read fails again, so a reader can never see text after a gap.
 *
 * Invariants.  s->f is the caller's stream for the life of s; s->in is
 * either s->f (plain CSV) or read only by the kind (a decoder) or NULL.
 * peek[peek_pos..n_peek) are the bytes of in read for detection and not yet
 * handed on; in_bytes counts every raw byte handed on.
 *
 * Cost.  Detection: one or 32 bytes.  Reading: the kind's, plus one copy
 * through the cookie for requests smaller than the stream's buffer (glibc
 * passes larger ones straight through).
 */
#define _GNU_SOURCE
#include "io/source_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "util/mem.h"

void fly_source_opts_default(fly_source_opts *o)
{
  memset(o, 0, sizeof *o);
}

/* ---- text buffer ---- */

void fly_srcbuf_free(fly_srcbuf *b)
{
  fly_free(b->p);
  memset(b, 0, sizeof *b);
}

int fly_srcbuf_add(fly_srcbuf *b, const char *s, size_t n)
{
  if( n == 0 ) return 0;
  if( n > b->cap - b->len ){
    size_t cap = b->cap ? b->cap : 4096;
    char *p;
    while( cap - b->len < n ){
      if( cap > SIZE_MAX / 2 ) return -1;
      cap *= 2;
    }
    p = fly_realloc_array(b->p, cap, 1);
    if( !p ) return -1;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  return 0;
}

int fly_srcbuf_text(fly_srcbuf *b, const char *s)
{
  size_t n = strlen(s);
  int quote = n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' ||
                        s[n - 1] == '\t' || strpbrk(s, ",\"\r\n") != NULL);
  if( !quote ) return fly_srcbuf_add(b, s, n);
  if( fly_srcbuf_add(b, "\"", 1) ) return -1;
  for(;;){
    const char *q = strchr(s, '"');
    if( !q ) break;
    if( fly_srcbuf_add(b, s, (size_t)(q - s) + 1) || fly_srcbuf_add(b, "\"", 1) )
      return -1;
    s = q + 1;
  }
  return fly_srcbuf_add(b, s, strlen(s)) || fly_srcbuf_add(b, "\"", 1) ? -1 : 0;
}

int fly_srcbuf_num(fly_srcbuf *b, double v)
{
  char t[32];
  int n = snprintf(t, sizeof t, "%.17g", v);
  return fly_srcbuf_add(b, t, (size_t)n);
}

size_t fly_srcbuf_take(fly_srcbuf *b, char *buf, size_t cap)
{
  size_t n = b->len - b->pos;
  if( n > cap ) n = cap;
  memcpy(buf, b->p + b->pos, n);
  b->pos += n;
  if( b->pos == b->len ) b->pos = b->len = 0;
  return n;
}

/* ---- raw input ---- */

fly_rc fly_source_read_raw(fly_source *s, void *buf, size_t cap, size_t *got,
                           fly_err *err)
{
  size_t n = 0;
  if( s->peek_pos < s->n_peek ){
    n = s->n_peek - s->peek_pos;
    if( n > cap ) n = cap;
    memcpy(buf, s->peek + s->peek_pos, n);
    s->peek_pos += n;
  }else if( cap > 0 ){
    errno = 0;
    n = fread(buf, 1, cap, s->in);
    if( n == 0 && ferror(s->in) ){
      int e = errno;
      clearerr(s->in);
      *got = 0;
      fly_fail(err, FLY_IO, "%s: read error: %s", s->name,
               e ? strerror(e) : "unknown error");
      errno = e;
      return FLY_IO;
    }
  }
  s->in_bytes += n;
  *got = n;
  return FLY_OK;
}

/* ---- the caller's stream ---- */

static ssize_t cookie_read(void *cookie, char *buf, size_t size)
{
  fly_source *s = cookie;
  size_t got = 0;
  fly_rc rc;

  if( s->fail.code != FLY_OK ){
    errno = EIO;
    return -1;
  }
  rc = s->kind->read(s, buf, size, &got, &s->fail);
  if( rc != FLY_OK ){
    int e = errno;
    if( rc == FLY_IO && e == EINTR ){     /* a signal: not a failure of the data */
      s->fail.code = FLY_OK;
      s->fail.msg[0] = 0;
    }else{
      if( s->fail.code == FLY_OK ) fly_fail(&s->fail, rc, "%s: %s", s->name, fly_rc_str(rc));
      e = EIO;
    }
    errno = e;
    return -1;
  }
  return (ssize_t)got;
}

/* Plain CSV after a longer look at standard input: the peeked bytes, then
 * the rest of the input. */
static fly_rc csv_read(fly_source *s, char *buf, size_t cap, size_t *got,
                       fly_err *err)
{
  return fly_source_read_raw(s, buf, cap, got, err);
}

static const fly_source_kind csv_peeked = { "csv", NULL, csv_read, NULL };

/* ---- detection ---- */

static int has_ext(const char *path, const char *ext)
{
  size_t n = strlen(path), m = strlen(ext);
  return n > m && strcasecmp(path + n - m, ext) == 0;
}

static const unsigned char sas_magic[32] = {
  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  0xc2, 0xea, 0x81, 0x60, 0xb3, 0x14, 0x11, 0xcf, 0xbd, 0x92, 0x08, 0x00,
  0x09, 0xc7, 0x31, 0x8c, 0x18, 0x1f, 0x10, 0x11 };

/* The kind whose magic number starts p[0..n), or NULL (CSV). */
static const fly_source_kind *by_magic(const unsigned char *p, size_t n)
{
  static const struct { const char *magic; size_t len; const fly_source_kind *kind; } tab[] = {
    { "\x1f\x8b", 2, &fly_source_gzip },
    { "\x28\xb5\x2f\xfd", 4, &fly_source_zstd },
    { "\xfd" "7zXZ\x00", 6, &fly_source_xz },
    { "<stata_dta>", 11, &fly_source_dta },
    { "$FL2", 4, &fly_source_sav },
    { "$FL3", 4, &fly_source_sav },
  };
  for(size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if( n >= tab[i].len && memcmp(p, tab[i].magic, tab[i].len) == 0 ) return tab[i].kind;
  if( n >= sizeof sas_magic && memcmp(p, sas_magic, sizeof sas_magic) == 0 )
    return &fly_source_sas7bdat;
  return NULL;
}

static const fly_source_kind *by_ext(const char *path)
{
  if( has_ext(path, ".dta") ) return &fly_source_dta;
  if( has_ext(path, ".sav") || has_ext(path, ".zsav") ) return &fly_source_sav;
  if( has_ext(path, ".sas7bdat") ) return &fly_source_sas7bdat;
  return NULL;
}

static int is_decoder(const fly_source_kind *k)
{
  return k == &fly_source_gzip || k == &fly_source_zstd || k == &fly_source_xz;
}

/* Find s->kind from s->in; s->kind NULL: plain CSV, in at its first byte. */
static fly_rc detect(fly_source *s, int is_stdin, fly_err *err)
{
  int c;
  size_t got;

  errno = 0;
  c = getc(s->in);
  if( c == EOF ){
    if( ferror(s->in) )
      return fly_fail(err, FLY_IO, "%s: read error: %s", s->name,
                      errno ? strerror(errno) : "unknown error");
    return FLY_OK;                              /* empty: the CSV reader says so */
  }
  if( !strchr("\x1f\x28\xfd<$", c) && c != 0 ){
    if( ungetc(c, s->in) == EOF )
      return fly_fail(err, FLY_IO, "%s: cannot push back a byte", s->name);
    return FLY_OK;
  }
  s->peek[0] = (unsigned char)c;
  s->n_peek = 1;
  errno = 0;
  got = fread(s->peek + 1, 1, sizeof s->peek - 1, s->in);
  if( got < sizeof s->peek - 1 && ferror(s->in) )
    return fly_fail(err, FLY_IO, "%s: read error: %s", s->name,
                    errno ? strerror(errno) : "unknown error");
  s->n_peek += got;
  s->kind = by_magic(s->peek, s->n_peek);
  if( s->kind && (is_decoder(s->kind) || !is_stdin) ) return FLY_OK;
  if( s->kind ){
    return fly_fail(err, FLY_IO, "%s: a %s file cannot be read from standard "
                    "input (ReadStat needs to seek): give its path", s->name,
                    s->kind->name);
  }
  if( !is_stdin && fseek(s->in, 0, SEEK_SET) == 0 ){
    s->n_peek = 0;
    return FLY_OK;
  }
  s->kind = &csv_peeked;
  return FLY_OK;
}

fly_rc fly_source_open(const char *path, const fly_source_opts *o,
                       fly_source **ps, fly_err *err)
{
  fly_source *s = NULL;
  fly_rc rc = FLY_OK;
  int is_stdin;

  *ps = NULL;
  if( !path ) return fly_fail(err, FLY_MISUSE, "fly_source_open: no path");
  is_stdin = strcmp(path, "-") == 0;
  s = fly_alloc_array(1, sizeof *s);
  if( !s ) return fly_fail(err, FLY_NOMEM, "opening %s", path);
  s->path = fly_strdup(path);
  s->name = fly_strdup(is_stdin ? "<stdin>" : path);
  if( !s->path || !s->name ){ rc = fly_fail(err, FLY_NOMEM, "opening %s", path); goto done; }

  if( o && o->query ){
    s->kind = &fly_source_sql;
    s->query = fly_strdup(o->query);
    if( !s->query ){ rc = fly_fail(err, FLY_NOMEM, "opening %s", path); goto done; }
  }else if( !is_stdin && by_ext(path) ){
    s->kind = by_ext(path);
  }else{
    if( is_stdin ){
      s->in = stdin;
    }else{
      errno = 0;
      s->in = fopen(path, "rb");
      if( !s->in ){
        rc = fly_fail(err, FLY_IO, "cannot open %s: %s", path,
                      errno ? strerror(errno) : "unknown error");
        goto done;
      }
      s->own_in = 1;
    }
    if( (rc = detect(s, is_stdin, err)) ) goto done;
    if( s->kind && !is_decoder(s->kind) && s->kind != &csv_peeked ){
      fclose(s->in);                  /* ReadStat opens the path itself */
      s->in = NULL;
      s->own_in = 0;
      s->n_peek = 0;
    }
  }

  if( !s->kind ){
    s->f = s->in;
  }else{
    cookie_io_functions_t io = { cookie_read, NULL, NULL, NULL };  /* s is closed by us */
    if( s->kind->open && (rc = s->kind->open(s, err)) ) goto done;
    s->f = fopencookie(s, "r", io);
    if( !s->f ){ rc = fly_fail(err, FLY_NOMEM, "opening a stream for %s", s->name); goto done; }
  }
  *ps = s;
  s = NULL;

done:
  fly_source_close(s);
  return rc;
}

void fly_source_close(fly_source *s)
{
  if( !s ) return;
  if( s->f && s->f != s->in ) fclose(s->f);
  if( s->kind && s->kind->close ) s->kind->close(s);
  if( s->in && s->own_in ) fclose(s->in);
  for(size_t i = 0; i < s->n_cat; i++) fly_free(s->cat[i]);
  fly_free(s->cat);
  fly_free(s->query);
  fly_free(s->name);
  fly_free(s->path);
  fly_free(s);
}

FILE *fly_source_file(fly_source *s)
{
  return s->f;
}

const char *fly_source_format(const fly_source *s)
{
  return s->kind ? s->kind->name : "csv";
}

const char *fly_source_error(const fly_source *s)
{
  return s->fail.code != FLY_OK ? s->fail.msg : NULL;
}

void fly_source_categorical(const fly_source *s, const char *const **names,
                            size_t *n)
{
  *names = (const char *const *)s->cat;
  *n = s->n_cat;
}
