/*
 * source_zip.c -- gzip, zstd and xz streams decoded into CSV text.
 *
 * Concept.  Each kind owns a decoder (zlib's inflate, a ZSTD_DStream, an
 * lzma_stream) and a 64 KiB input buffer refilled from the raw input
 * (fly_source_read_raw), and decodes straight into the caller's buffer
 * until it holds some text.  At the end of the raw input the decoder is
 * still called (it may hold text of a full output buffer); if it then gives
 * nothing and the member is not complete, the stream was truncated.
 * Concatenated members (gzip), frames (zstd) and streams (xz) are read one
 * after another, as their command-line tools do; bytes after the last one
 * must start another (no trailing garbage).
 *
 * Invariants.  A read returns text or ends only at a clean boundary: the
 * raw input ending inside a member/frame/stream is "truncated", a decoder
 * error is "corrupt"; both name the input and the count of raw bytes read
 * (in_bytes), and are FLY_CORRUPT.  `mid` is 1 from the first byte of a
 * member to its end.
 *
 * Cost.  Streaming, memory flat: the input buffer and the decoder's window
 * (gzip 32 KiB; zstd and xz as the header asks, 8 MiB at xz -6, at most
 * 2^FLY_ZIP_WINDOW_LOG_MAX bytes).
 *
 * Window limit.  The header of a zstd frame or an xz block states the
 * window (dictionary) the decoder allocates; a hostile 20-byte file could
 * ask for 4 GiB of xz dictionary.  Both are refused beyond 128 MiB (2^27),
 * zstd's own default limit, which its command-line tool also applies
 * without --memory or --long; xz -9 uses 64 MiB.  Such a file fails
 * (FLY_CORRUPT) with a message naming the limit.  The fuzz harnesses build with a
 * lower limit (tools/fuzz) so that an input cannot spend its execution
 * mapping a large window.
 */
#include "io/source_int.h"

#include <errno.h>
#include <lzma.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "util/mem.h"

#define ZIP_IN 65536       /* bytes of compressed input buffered */

#ifndef FLY_ZIP_WINDOW_LOG_MAX
#define FLY_ZIP_WINDOW_LOG_MAX 27   /* windows of at most 2^27 bytes */
#endif
/* liblzma's memory limit: the largest dictionary plus the decoder's own
 * state (about 30 KiB for LZMA2, 32 KiB for the stream and block layers). */
#define XZ_MEMLIMIT (((uint64_t)1 << FLY_ZIP_WINDOW_LOG_MAX) + ((uint64_t)1 << 17))

typedef struct zip zip;
typedef fly_rc zip_step(fly_source *s, zip *z, char *buf, size_t cap,
                        size_t *out, fly_err *err);

static zip_step gz_step, zst_step, xz_step;

struct zip {
  zip_step *step;            /* the kind's decoding step */
  unsigned char *in;         /* [ZIP_IN] */
  size_t   in_pos, in_len;   /* in[in_pos..in_len) not yet decoded */
  int      in_eof;           /* the raw input has ended */
  int      mid;              /* inside a member / frame / stream */
  int      done;             /* the text has ended */
  z_stream    z;             /* gzip */
  int         z_init;
  ZSTD_DStream *zs;          /* zstd */
  lzma_stream  x;            /* xz */
  int          x_init;
};

static fly_rc zip_new(fly_source *s, zip_step *step, zip **pz, fly_err *err)
{
  *pz = fly_alloc_array(1, sizeof **pz);
  if( !*pz ) return fly_fail(err, FLY_NOMEM, "%s: decoder", s->name);
  s->impl = *pz;
  (*pz)->step = step;
  (*pz)->in = fly_realloc_array(NULL, ZIP_IN, 1);     /* not zero-filled */
  if( !(*pz)->in ) return fly_fail(err, FLY_NOMEM, "%s: decoder", s->name);
  return FLY_OK;
}

/* Make sure unread input is buffered unless the raw input has ended. */
static fly_rc refill(fly_source *s, zip *z, fly_err *err)
{
  size_t got;
  fly_rc rc;
  if( z->in_pos < z->in_len || z->in_eof ) return FLY_OK;
  if( (rc = fly_source_read_raw(s, z->in, ZIP_IN, &got, err)) ) return rc;
  z->in_pos = 0;
  z->in_len = got;
  if( got == 0 ) z->in_eof = 1;
  return FLY_OK;
}

static fly_rc truncated(fly_source *s, fly_err *err)
{
  return fly_fail(err, FLY_CORRUPT, "%s: truncated %s stream after %llu bytes",
                  s->name, s->kind->name, (unsigned long long)s->in_bytes);
}

/* The raw byte the decoder has reached. */
static unsigned long long raw_at(const fly_source *s, const zip *z)
{
  return s->in_bytes - (z->in_len - z->in_pos);
}

static fly_rc corrupt(fly_source *s, const zip *z, const char *why, fly_err *err)
{
  return fly_fail(err, FLY_CORRUPT, "%s: corrupt %s stream near byte %llu: %s",
                  s->name, s->kind->name, raw_at(s, z), why);
}

/* The header asks for a window (what: "window", "dictionary") over the
 * limit. */
static fly_rc too_large(fly_source *s, const zip *z, const char *what, fly_err *err)
{
  return fly_fail(err, FLY_CORRUPT, "%s: %s stream near byte %llu: %s larger "
                  "than the limit of 2^%d bytes (decompress the file first)",
                  s->name, s->kind->name, raw_at(s, z), what,
                  FLY_ZIP_WINDOW_LOG_MAX);
}
/* The read of the three kinds: decode into buf until some text is there,
 * the text ends, or a failure.  z->step decodes once from
 * z->in[in_pos..in_len) into buf[*out..cap), advancing both, and clears
 * z->mid at the end of a member. */
static fly_rc zip_read(fly_source *s, char *buf, size_t cap, size_t *got,
                       fly_err *err)
{
  zip *z = s->impl;
  size_t out = 0;
  fly_rc rc;

  *got = 0;
  while( out == 0 && !z->done && cap > 0 ){
    if( (rc = refill(s, z, err)) ) return rc;
    if( z->in_pos == z->in_len && z->in_eof && !z->mid ){
      z->done = 1;
      break;
    }
    size_t in0 = z->in_pos;
    if( (rc = z->step(s, z, buf, cap, &out, err)) ) return rc;
    /* The input has ended inside a member and the decoder, given nothing
     * more, gives nothing more. */
    if( z->mid && z->in_eof && out == 0 && z->in_pos == in0 &&
        z->in_pos == z->in_len )
      return truncated(s, err);
  }
  *got = out;
  return FLY_OK;
}

/* ---- gzip (zlib) ---- */

static fly_rc gz_open(fly_source *s, fly_err *err)
{
  zip *z;
  fly_rc rc = zip_new(s, gz_step, &z, err);
  if( rc ) return rc;
  if( inflateInit2(&z->z, 16 + MAX_WBITS) != Z_OK )   /* gzip header only */
    return fly_fail(err, FLY_NOMEM, "%s: cannot start the gzip decoder", s->name);
  z->z_init = 1;
  return FLY_OK;
}

static fly_rc gz_step(fly_source *s, zip *z, char *buf, size_t cap,
                      size_t *out, fly_err *err)
{
  int r;
  z->z.next_in = z->in + z->in_pos;
  z->z.avail_in = (uInt)(z->in_len - z->in_pos);
  z->z.next_out = (Bytef *)buf + *out;
  z->z.avail_out = (uInt)(cap - *out > UINT32_MAX ? UINT32_MAX : cap - *out);
  z->mid = 1;
  r = inflate(&z->z, Z_NO_FLUSH);
  z->in_pos = z->in_len - z->z.avail_in;
  *out = (size_t)((char *)z->z.next_out - buf);
  if( r == Z_STREAM_END ){
    z->mid = 0;
    if( inflateReset(&z->z) != Z_OK ) return corrupt(s, z, "cannot reset", err);
    return FLY_OK;
  }
  if( r == Z_OK || r == Z_BUF_ERROR ) return FLY_OK;
  if( r == Z_MEM_ERROR ) return fly_fail(err, FLY_NOMEM, "%s: gzip decoder", s->name);
  return corrupt(s, z, z->z.msg ? z->z.msg : "bad data", err);
}

/* ---- zstd ---- */

static fly_rc zst_open(fly_source *s, fly_err *err)
{
  zip *z;
  fly_rc rc = zip_new(s, zst_step, &z, err);
  if( rc ) return rc;
  z->zs = ZSTD_createDStream();
  if( !z->zs || ZSTD_isError(ZSTD_initDStream(z->zs)) ||
      ZSTD_isError(ZSTD_DCtx_setParameter(z->zs, ZSTD_d_windowLogMax,
                                          FLY_ZIP_WINDOW_LOG_MAX)) )
    return fly_fail(err, FLY_NOMEM, "%s: cannot start the zstd decoder", s->name);
  return FLY_OK;
}

static fly_rc zst_step(fly_source *s, zip *z, char *buf, size_t cap,
                       size_t *out, fly_err *err)
{
  ZSTD_inBuffer ib = { z->in, z->in_len, z->in_pos };
  ZSTD_outBuffer ob = { buf, cap, *out };
  size_t r;
  r = ZSTD_decompressStream(z->zs, &ob, &ib);
  if( ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge )
    return too_large(s, z, "window", err);
  if( ZSTD_isError(r) ) return corrupt(s, z, ZSTD_getErrorName(r), err);
  z->in_pos = ib.pos;
  *out = ob.pos;
  z->mid = r != 0;          /* 0: a frame is complete and flushed */
  return FLY_OK;
}

/* ---- xz (liblzma) ---- */

static fly_rc xz_open(fly_source *s, fly_err *err)
{
  zip *z;
  lzma_stream init = LZMA_STREAM_INIT;
  fly_rc rc = zip_new(s, xz_step, &z, err);
  if( rc ) return rc;
  z->x = init;
  if( lzma_stream_decoder(&z->x, XZ_MEMLIMIT, LZMA_CONCATENATED) != LZMA_OK )
    return fly_fail(err, FLY_NOMEM, "%s: cannot start the xz decoder", s->name);
  z->x_init = 1;
  z->mid = 1;               /* liblzma itself tells where streams end */
  return FLY_OK;
}

static const char *xz_why(lzma_ret r)
{
  switch( r ){
  case LZMA_FORMAT_ERROR:  return "not in the .xz format";
  case LZMA_OPTIONS_ERROR: return "unsupported options";
  case LZMA_DATA_ERROR:    return "compressed data is corrupt";
  case LZMA_BUF_ERROR:     return "unexpected end of input";
  case LZMA_MEM_ERROR:     return "out of memory";
  default:                 return "decoder error";
  }
}

static fly_rc xz_step(fly_source *s, zip *z, char *buf, size_t cap,
                      size_t *out, fly_err *err)
{
  lzma_ret r;
  int fin = z->in_pos == z->in_len && z->in_eof;
  z->x.next_in = z->in + z->in_pos;
  z->x.avail_in = z->in_len - z->in_pos;
  z->x.next_out = (uint8_t *)buf + *out;
  z->x.avail_out = cap - *out;
  r = lzma_code(&z->x, fin ? LZMA_FINISH : LZMA_RUN);
  z->in_pos = z->in_len - z->x.avail_in;
  *out = (size_t)((char *)z->x.next_out - buf);
  if( r == LZMA_STREAM_END ){
    z->mid = 0;
    z->done = *out == 0;
    return FLY_OK;
  }
  if( r == LZMA_OK ) return FLY_OK;
  if( r == LZMA_BUF_ERROR && fin ) return truncated(s, err);
  if( r == LZMA_MEM_ERROR ) return fly_fail(err, FLY_NOMEM, "%s: xz decoder", s->name);
  if( r == LZMA_MEMLIMIT_ERROR ) return too_large(s, z, "dictionary", err);
  return corrupt(s, z, xz_why(r), err);
}

static void zip_close(fly_source *s)
{
  zip *z = s->impl;
  if( !z ) return;
  if( z->z_init ) inflateEnd(&z->z);
  ZSTD_freeDStream(z->zs);                /* NULL: no-op */
  if( z->x_init ) lzma_end(&z->x);
  fly_free(z->in);
  fly_free(z);
  s->impl = NULL;
}

const fly_source_kind fly_source_gzip = { "gzip", gz_open, zip_read, zip_close };
const fly_source_kind fly_source_zstd = { "zstd", zst_open, zip_read, zip_close };
const fly_source_kind fly_source_xz = { "xz", xz_open, zip_read, zip_close };
