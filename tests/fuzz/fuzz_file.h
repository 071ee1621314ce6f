/*
 * fuzz_file.h -- what the CSV harnesses share: the input written to one
 * temp file per process (rewritten for each input, removed at exit, so the
 * reader sees a real file), and CHECK, which aborts (a crash for libFuzzer)
 * naming the harness and the failed condition.  Included by one .c each.
 */
#ifndef FLY_FUZZ_FILE_H
#define FLY_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REF_BUF ((size_t)1 << 16)   /* bytes, more than any fuzz input */

#define CHECK(cond)                                                        \
  do{ if( !(cond) ){                                                       \
    fprintf(stderr, "%s: check failed at %s:%d: %s\n", FUZZ_NAME,         \
            __FILE__, __LINE__, #cond);                                    \
    abort();                                                               \
  } }while( 0 )

static char tmp_path[64];

static void remove_tmp(void)
{
  if( tmp_path[0] ) unlink(tmp_path);
}

/* data[0..size) into the temp file tmp_path. */
static void write_input(const uint8_t *data, size_t size)
{
  FILE *f;
  if( !tmp_path[0] ){
    int fd;
    snprintf(tmp_path, sizeof tmp_path, "/tmp/flydb_%s_XXXXXX", FUZZ_NAME);
    fd = mkstemp(tmp_path);
    if( fd < 0 ){ perror("mkstemp"); abort(); }
    close(fd);
    atexit(remove_tmp);
  }
  f = fopen(tmp_path, "wb");
  if( !f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0 ){
    perror(tmp_path);
    abort();
  }
}

#endif
