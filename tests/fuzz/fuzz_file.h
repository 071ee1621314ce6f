/*
 * fuzz_file.h -- what the CSV harnesses share: the input written to one
 * temp file per process (rewritten for each input, removed at exit, so the
 * reader sees a real file; in /dev/shm when writable, since on a disk the
 * write-back of one small file per input costs most of an execution), and
 * CHECK, which aborts (a crash for libFuzzer) naming the harness and the
 * failed condition.  Included by one .c each.
 */
#ifndef FLY_FUZZ_FILE_H
#define FLY_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The read-buffer size, in bytes, of the reference reader for an input of
 * size bytes: it holds the input whole, so one fread reads it and sees the
 * end.  Sized per input, not one large buffer for all: zero-filling 64 KiB
 * per reader per input was a third of an execution under ASan. */
#define REF_BUF(size) ((size_t)(size) + 1)

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
    snprintf(tmp_path, sizeof tmp_path, "%s/flydb_%s_XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", FUZZ_NAME);
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
