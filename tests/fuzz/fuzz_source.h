/*
 * fuzz_source.h -- what the libFuzzer targets of the sources (io/source.h)
 * share: fuzz_gz.c, fuzz_zst.c, fuzz_xz.c and fuzz_stat.c each define
 * their format and call fuzz_source_one().
 *
 * The input is written to one temp file per process (with the format's
 * extension, in /dev/shm when writable, removed at exit), opened as a
 * source, and its text read twice, in 1021-byte freads and in 64 KiB ones,
 * up to FUZZ_TEXT_MAX bytes (then the source is closed early, as an ingest
 * that fails does).  The two reach the source differently: a fread smaller
 * than the stream's buffer (glibc: 8 KiB for a cookie stream) becomes
 * buffer-sized reads whatever its size (so 1021 bytes calls the source as
 * 3 bytes would, with a 340th of the freads), a larger one is passed
 * through.  Properties checked, a failure aborting (a crash for libFuzzer):
 * the open fails with FLY_IO, FLY_CORRUPT or FLY_NOMEM and a
 * message starting with the path; on success the format is the expected
 * one; both reads give the same text, the same failure and the same
 * message, and a failure's message starts with the path; the text is never
 * read past an error.  Leaks and memory errors are the sanitizers'.
 */
#ifndef FUZZ_SOURCE_H
#define FUZZ_SOURCE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/source.h"

/* Bytes of text read at most: more than any seed gives, and little enough
 * that a small input decoding to a lot of text (a run of a repeated byte)
 * does not spend the run in 3-byte freads. */
#define FUZZ_TEXT_MAX ((size_t)1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                       \
  do{ if( !(cond) ){                                                      \
    fprintf(stderr, "fuzz_source: check failed at %s:%d: %s\n", __FILE__, \
            __LINE__, #cond);                                             \
    abort();                                                              \
  } }while( 0 )

static char fuzz_tmp[64];

static void fuzz_remove_tmp(void)
{
  if( fuzz_tmp[0] ) unlink(fuzz_tmp);
}

/* Write data to the temp file named with extension ext (".gz"). */
static const char *fuzz_write(const uint8_t *data, size_t size, const char *ext)
{
  FILE *f;
  if( !fuzz_tmp[0] || !strstr(fuzz_tmp, ext) ){
    int fd;
    fuzz_remove_tmp();
    /* tmpfs where there is one: a file per input costs less there */
    snprintf(fuzz_tmp, sizeof fuzz_tmp, "%s/flydb_fuzz_src_XXXXXX%s",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", ext);
    fd = mkstemps(fuzz_tmp, (int)strlen(ext));
    if( fd < 0 ){ perror("mkstemps"); abort(); }
    close(fd);
    static int registered;
    if( !registered++ ) atexit(fuzz_remove_tmp);
  }
  f = fopen(fuzz_tmp, "wb");
  if( !f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0 ){
    perror(fuzz_tmp);
    abort();
  }
  return fuzz_tmp;
}

typedef struct fuzz_text {
  char  *p;
  size_t n;
  int    failed;
  char   msg[FLY_ERR_MSG];
} fuzz_text;

/* Open path and read its text in chunk-byte freads, up to FUZZ_TEXT_MAX.
 * Returns 0, or -1 when the open failed (t->msg holds its message). */
static int fuzz_read(const char *path, const char *format, size_t chunk,
                     fuzz_text *t)
{
  fly_source *s = NULL;
  fly_err err = { 0 };
  fly_rc rc = fly_source_open(path, NULL, &s, &err);
  size_t plen = strlen(path);
  FILE *f;

  memset(t, 0, sizeof *t);
  if( rc != FLY_OK ){
    CHECK(s == NULL);
    CHECK(rc == FLY_IO || rc == FLY_CORRUPT || rc == FLY_NOMEM);
    CHECK(strncmp(err.msg, path, plen) == 0 && err.msg[plen] == ':');
    snprintf(t->msg, sizeof t->msg, "%s", err.msg);
    return -1;
  }
  CHECK(strcmp(fly_source_format(s), format) == 0 || strcmp(fly_source_format(s), "csv") == 0);
  f = fly_source_file(s);
  size_t cap = 0;
  while( t->n < FUZZ_TEXT_MAX ){
    size_t got;
    if( cap - t->n < chunk ){        /* grown as needed: ASan makes big blocks dear */
      cap = 2*cap + chunk;
      t->p = realloc(t->p, cap);
      CHECK(t->p);
    }
    got = fread(t->p + t->n, 1, chunk, f);
    t->n += got;
    if( got < chunk ){
      t->failed = ferror(f) != 0;
      break;
    }
  }
  if( t->failed ){
    const char *m = fly_source_error(s);
    CHECK(m && strncmp(m, path, plen) == 0 && m[plen] == ':');
    snprintf(t->msg, sizeof t->msg, "%s", m);
    char c;
    CHECK(fread(&c, 1, 1, f) == 0 && ferror(f));        /* stays failed */
  }else if( t->n < FUZZ_TEXT_MAX ){
    CHECK(fly_source_error(s) == NULL);
  }
  fly_source_close(s);
  return 0;
}

static void fuzz_source_one(const uint8_t *data, size_t size, const char *ext,
                            const char *format)
{
  const char *path = fuzz_write(data, size, ext);
  fuzz_text a, b;
  int ra = fuzz_read(path, format, 1021, &a);
  int rb = fuzz_read(path, format, 65536, &b);

  CHECK(ra == rb);
  if( ra != 0 ){
    CHECK(strcmp(a.msg, b.msg) == 0);
  }else{
    size_t n = a.n < b.n ? a.n : b.n;
    CHECK(memcmp(a.p, b.p, n) == 0);
    /* a read that stopped at the cap may not have reached a failure the
     * other one saw just past it */
    if( a.n < FUZZ_TEXT_MAX && b.n < FUZZ_TEXT_MAX ){
      CHECK(a.failed == b.failed && a.n == b.n);
      CHECK(strcmp(a.msg, b.msg) == 0);
    }
  }
  free(a.p);
  free(b.p);
}

/* A decoder's target: data with the magic number put in front when it does
 * not start with it, so every input reaches the decoder (not the plain-CSV
 * path). */
static inline void fuzz_zip_one(const uint8_t *data, size_t size, const char *magic,
                                size_t m, const char *ext, const char *format)
{
  uint8_t *buf;
  if( size >= m && memcmp(data, magic, m) == 0 ){
    fuzz_source_one(data, size, ext, format);
    return;
  }
  buf = malloc(size + m);
  CHECK(buf);
  memcpy(buf, magic, m);
  if( size ) memcpy(buf + m, data, size);
  fuzz_source_one(buf, size + m, ext, format);
  free(buf);
}

#endif
