/*
 * fuzz_csv.c -- libFuzzer target for the streaming CSV reader.
 *
 * Input: the first byte b picks the initial read-buffer size (b + 1 bytes,
 * 1..255, or the 1 MiB default when b is 255), the rest is the file.  The
 * file is read twice in lockstep, with that buffer and with a REF_BUF one
 * that holds the input whole, and the two readers must agree on everything
 * -- header, every status, every value bit for bit, positions, and the
 * exact error message -- because where the buffer happens to end must never
 * change a result.  (The default is picked by one byte value only: it holds
 * any fuzz input whole, as REF_BUF does, and its zero-filled 1 MiB costs
 * ASan several executions' time.)  When the file is accepted, a
 * naive in-memory tokenizer (ref_check) must find the same records and
 * strtod the same values from them.  Also checked: a parse error names the
 * file first, the byte count never exceeds the file size and reaches it at
 * FLY_DONE.  A disagreement aborts (a crash for libFuzzer).
 *
 * The input goes to one temp file per process, rewritten for each input and
 * removed at exit.  Without libFuzzer, replay_main.c drives this function
 * over a corpus.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/csv.h"
#include "util/mem.h"

#define FUZZ_NAME "fuzz_csv"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BLANK(ch) ((ch) == ' ' || (ch) == '\t')

/* The reference: RFC 4180 read the slow, obvious way over the whole input,
 * run only on inputs the reader accepted (so any oddity is a mismatch).
 * vals holds the reader's nrec x ncols values. */
static void ref_check(const uint8_t *d, size_t size, size_t ncols,
                      const double *vals, size_t nrec)
{
  char *cb = malloc(size + 1);
  size_t i = 0, rec = 0, j;
  int head = 1;

  CHECK(cb);
  if( size >= 3 && memcmp(d, "\xEF\xBB\xBF", 3) == 0 ) i = 3;
  while( i < size ){
    if( d[i] == '\n' ){ i++; continue; }                 /* blank line */
    if( d[i] == '\r' ){
      i += i + 1 < size && d[i + 1] == '\n' ? 2 : 1;
      continue;
    }
    for( j = 0;; j++ ){
      size_t k = 0, a = 0;
      while( i < size && BLANK(d[i]) ) i++;
      if( i < size && d[i] == '"' ){
        for( i++;; ){
          CHECK(i < size);
          if( d[i] == '"' ){
            if( i + 1 < size && d[i + 1] == '"' ){
              cb[k++] = '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          cb[k++] = (char)d[i++];
        }
        while( i < size && BLANK(d[i]) ) i++;
      }else{
        while( i < size && d[i] != ',' && d[i] != '\n' && d[i] != '\r' ){
          CHECK(d[i] != '"');
          cb[k++] = (char)d[i++];
        }
      }
      while( a < k && BLANK(cb[a]) ) a++;
      while( k > a && BLANK(cb[k - 1]) ) k--;
      cb[k] = 0;
      if( head ){
        CHECK(k > a);
      }else{
        char *e;
        double v;
        CHECK(rec < nrec && j < ncols && k > a && (unsigned char)cb[a] > ' ');
        v = strtod(cb + a, &e);
        CHECK(e == cb + k && isfinite(v));
        CHECK(memcmp(&v, &vals[rec*ncols + j], sizeof v) == 0);
      }
      if( i < size && d[i] == ',' ){ i++; continue; }
      break;
    }
    CHECK(j + 1 == ncols);
    if( i < size ){
      CHECK(d[i] == '\n' || d[i] == '\r');
      i += d[i] == '\r' && i + 1 < size && d[i + 1] == '\n' ? 2 : 1;
    }
    if( !head ) rec++;
    head = 0;
  }
  CHECK(!head && rec == nrec);
  free(cb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fly_csv *a = NULL, *b = NULL;
  fly_err ea = { 0 }, eb = { 0 };
  double *va = NULL, *vb = NULL, *all = NULL;
  size_t bufsize, n, j, plen, nrec = 0, cap = 0;
  fly_rc ra, rb;

  if( size == 0 ) return 0;
  bufsize = data[0] < 255 ? (size_t)data[0] + 1 : 0;
  data++;
  size--;
  write_input(data, size);
  plen = strlen(tmp_path);

  ra = fly_csv_open_buf(tmp_path, bufsize, &a, &ea);
  rb = fly_csv_open_buf(tmp_path, REF_BUF(size), &b, &eb);
  CHECK(ra == rb);
  if( ra != FLY_OK ){
    CHECK(a == NULL && b == NULL);
    CHECK(ra == FLY_PARSE && ea.code == FLY_PARSE);
    CHECK(strcmp(ea.msg, eb.msg) == 0);
    CHECK(strncmp(ea.msg, tmp_path, plen) == 0 && ea.msg[plen] == ':');
    return 0;
  }
  n = fly_csv_ncols(a);
  CHECK(n >= 1 && n == fly_csv_ncols(b));
  for( j = 0; j < n; j++ ){
    const char *s = fly_csv_colname(a, j);
    CHECK(s && s[0] && strcmp(s, fly_csv_colname(b, j)) == 0);
  }
  CHECK(fly_csv_colname(a, n) == NULL);
  CHECK(fly_csv_bytes(a) == fly_csv_bytes(b) && fly_csv_bytes(a) <= size);
  va = fly_alloc_array(n, sizeof *va);
  vb = fly_alloc_array(n, sizeof *vb);
  CHECK(va && vb);
  for(;;){
    ra = fly_csv_next(a, va, &ea);
    rb = fly_csv_next(b, vb, &eb);
    CHECK(ra == rb);
    CHECK(fly_csv_records(a) == fly_csv_records(b));
    CHECK(fly_csv_line(a) == fly_csv_line(b));
    CHECK(fly_csv_bytes(a) <= size);
    if( ra != FLY_ROW ) break;
    CHECK(fly_csv_bytes(a) == fly_csv_bytes(b));
    CHECK(fly_csv_line(a) >= 2);
    for( j = 0; j < n; j++ ){
      CHECK(memcmp(&va[j], &vb[j], sizeof va[j]) == 0);
      CHECK(isfinite(va[j]));
    }
    if( nrec == cap ){
      cap = cap ? 2*cap : 16;
      all = fly_realloc_array(all, cap*n, sizeof *all);
      CHECK(all);
    }
    memcpy(all + nrec*n, va, n*sizeof *va);
    nrec++;
  }
  if( ra == FLY_DONE ){
    CHECK(fly_csv_bytes(a) == size && fly_csv_bytes(b) == size);
    CHECK(fly_csv_next(a, va, NULL) == FLY_DONE);
    CHECK((int64_t)nrec == fly_csv_records(a));
    ref_check(data, size, n, all, nrec);
  }else{
    CHECK(ra == FLY_PARSE && ea.code == FLY_PARSE);
    CHECK(strcmp(ea.msg, eb.msg) == 0);
    CHECK(strncmp(ea.msg, tmp_path, plen) == 0 && ea.msg[plen] == ':');
    ra = fly_csv_next(a, va, &eb);               /* same error again */
    CHECK(ra == FLY_PARSE && strcmp(ea.msg, eb.msg) == 0);
  }
  fly_free(va);
  fly_free(vb);
  fly_free(all);
  fly_csv_close(a);
  fly_csv_close(b);
  return 0;
}
