/*
 * source_int.h -- what the kinds of source share (io/source*.c only).
 *
 * A kind is a const table (fly_source_kind): open its state, fill a buffer
 * with CSV text, close.  source.c finds the kind, owns the stream the
 * caller reads (a fopencookie stream over kind->read), and keeps the first
 * failure; the kinds live in source_zip.c (gzip, zstd, xz), source_stat.c
 * (ReadStat) and source_sql.c.  A converter writes its text through
 * fly_srcbuf, one growable buffer that holds at least one row.
 */
#ifndef FLY_SOURCE_INT_H
#define FLY_SOURCE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/source.h"

typedef struct fly_source_kind {
  const char *name;      /* fly_source_format() */
  /* Set up s->impl.  s->in is the opened raw input for the decoders, NULL
   * for the kinds that open s->path themselves. */
  fly_rc (*open)(fly_source *s, fly_err *err);
  /* Up to cap bytes of CSV text into buf: *got > 0, or 0 at the end of the
   * text (then 0 again).  A failure names s->name and the position; an
   * interrupted read returns FLY_IO with errno EINTR. */
  fly_rc (*read)(fly_source *s, char *buf, size_t cap, size_t *got,
                 fly_err *err);
  void (*close)(fly_source *s);   /* free s->impl; s->impl NULL: no-op */
} fly_source_kind;

extern const fly_source_kind fly_source_gzip, fly_source_zstd,
                             fly_source_xz, fly_source_dta, fly_source_sav,
                             fly_source_sas7bdat, fly_source_sql;

struct fly_source {
  const fly_source_kind *kind;  /* NULL: plain CSV, f is in */
  char       *path;             /* as given ("-": standard input) */
  char       *name;             /* in messages: path, or "<stdin>" */
  char       *query;            /* the SQL kind's query */
  FILE       *in;               /* raw input of the decoders; NULL once unused */
  int         own_in;           /* 1: in was opened here (not stdin) */
  unsigned char peek[32];       /* first bytes of in, read for detection */
  size_t      n_peek, peek_pos; /* peek[peek_pos..n_peek) not yet consumed */
  uint64_t    in_bytes;         /* raw bytes consumed (peek included) */
  FILE       *f;                /* what the caller reads */
  void       *impl;             /* the kind's state */
  fly_err     fail;             /* first read failure; code FLY_OK if none */
  char      **cat;              /* categorical columns [n_cat], owned */
  size_t      n_cat;
};

/* Read up to cap raw bytes of s->in (the peeked bytes first) into buf;
 * *got 0 only at the end of the input.  FLY_IO "name: read error: ...". */
fly_rc fly_source_read_raw(fly_source *s, void *buf, size_t cap, size_t *got,
                           fly_err *err);

/* Text of one or more rows being written, then handed out in pieces. */
typedef struct fly_srcbuf {
  char  *p;
  size_t len, cap;      /* bytes held, allocated */
  size_t pos;           /* p[pos..len) not yet handed out */
} fly_srcbuf;

void   fly_srcbuf_free(fly_srcbuf *b);
/* Append raw bytes / a cell of text (quoted per RFC 4180 when it holds a
 * comma, quote, CR, LF, or a blank at either end, since the CSV reader
 * trims those) / a number with %.17g.  0, or -1 when out of memory. */
int    fly_srcbuf_add(fly_srcbuf *b, const char *s, size_t n);
int    fly_srcbuf_text(fly_srcbuf *b, const char *s);
int    fly_srcbuf_num(fly_srcbuf *b, double v);
/* Move up to cap unread bytes into buf; returns how many.  The buffer is
 * emptied (pos = len = 0) when all were handed out. */
size_t fly_srcbuf_take(fly_srcbuf *b, char *buf, size_t cap);

#endif
