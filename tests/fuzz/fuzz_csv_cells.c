/*
 * fuzz_csv_cells.c -- libFuzzer target for the CSV reader's cells mode
 * (fly_csv_next_cells), the path typed ingest reads.
 *
 * Input: the first byte b picks the initial read-buffer size (b + 1 bytes,
 * 1..256: fuzz_csv covers the 1 MiB default, whose allocation would cost
 * most of the time here), the rest is the file.
 * Checked:
 *   - two readers in cells mode, with that buffer and with a REF_BUF one
 *     that holds the input whole, agree on everything (statuses, every
 *     cell's text bytes, number flag and value bits, positions, messages);
 *   - a third reader in numbers mode (fly_csv_next, with the REF_BUF buffer:
 *     fuzz_csv checks that mode at every boundary) agrees while it reads
 *     records: every cell a number with the same bits.  When it stops on a
 *     cell that is not a number, cells mode reads that record (the cell not
 *     a number, or stops on a syntax error further on); on any other
 *     error, cells mode stops with the same message;
 *   - on an accepted file, a naive tokenizer finds the same texts (quotes
 *     undone, unquoted cells trimmed of blanks), and a cell is a number
 *     exactly when strtod takes its trimmed text whole to a finite value.
 * A disagreement aborts (a crash for libFuzzer).  Sources: src/io/csv.c,
 * src/util/err.c, src/util/mem.c.  Without libFuzzer, replay_main.c drives
 * this function over a corpus.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/csv.h"
#include "util/mem.h"

#define FUZZ_NAME "fuzz_csv_cells"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BLANK(ch) ((ch) == ' ' || (ch) == '\t')

/* The texts of every cell of an accepted file, joined: each cell's bytes
 * then a 0x1f separator (cells never hold NUL, and the check compares
 * lengths, so the separator may also occur inside a cell). */
typedef struct texts { char *p; size_t n, cap; } texts;

static void put(texts *t, const char *s, size_t n)
{
  if( t->n + n + 1 > t->cap ){
    t->cap = 2 * (t->n + n + 1);
    t->p = realloc(t->p, t->cap);
    CHECK(t->p);
  }
  memcpy(t->p + t->n, s, n);
  t->n += n;
  t->p[t->n++] = 0x1f;
}

/* The naive tokenizer over the whole input, data records only. */
static void ref_texts(const uint8_t *d, size_t size, texts *out)
{
  char *cb = malloc(size + 1);
  size_t i = 0;
  int head = 1;

  CHECK(cb);
  if( size >= 3 && memcmp(d, "\xEF\xBB\xBF", 3) == 0 ) i = 3;
  while( i < size ){
    if( d[i] == '\n' ){ i++; continue; }
    if( d[i] == '\r' ){
      i += i + 1 < size && d[i + 1] == '\n' ? 2 : 1;
      continue;
    }
    for(;;){
      size_t k = 0, a = 0;
      int quoted = 0;
      while( i < size && BLANK(d[i]) ) i++;
      if( i < size && d[i] == '"' ){
        quoted = 1;
        for( i++;; ){
          CHECK(i < size);
          if( d[i] == '"' ){
            if( i + 1 < size && d[i + 1] == '"' ){ cb[k++] = '"'; i += 2; continue; }
            i++;
            break;
          }
          cb[k++] = (char)d[i++];
        }
        while( i < size && BLANK(d[i]) ) i++;
      }else{
        while( i < size && d[i] != ',' && d[i] != '\n' && d[i] != '\r' )
          cb[k++] = (char)d[i++];
        while( k > a && BLANK(cb[k - 1]) ) k--;
      }
      (void)quoted;
      if( !head ) put(out, cb + a, k - a);
      if( i < size && d[i] == ',' ){ i++; continue; }
      break;
    }
    if( i < size ) i += d[i] == '\r' && i + 1 < size && d[i + 1] == '\n' ? 2 : 1;
    head = 0;
  }
  free(cb);
}

/* Is text s[0..n) a finite number as the reader defines it (strtod over the
 * text trimmed of blanks, whole)?  *v: its value. */
static int is_number(const char *s, size_t n, double *v)
{
  char *t = malloc(n + 1), *a, *b, *e;
  int r = 0;
  CHECK(t);
  memcpy(t, s, n);
  t[n] = 0;
  a = t;
  b = t + n;
  while( a < b && BLANK(*a) ) a++;
  while( b > a && BLANK(b[-1]) ) b--;
  *b = 0;
  if( a < b && (unsigned char)*a > ' ' ){
    *v = strtod(a, &e);
    r = e == b && isfinite(*v);
  }
  free(t);
  return r;
}

static int value_error(const char *msg)
{
  return strstr(msg, "is not a number") || strstr(msg, "empty cell")
      || strstr(msg, "not a finite number") || strstr(msg, "overflows a double");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fly_csv *a = NULL, *b = NULL, *c = NULL;
  fly_err ea = { 0 }, eb = { 0 }, ec = { 0 };
  fly_csv_cell *ca = NULL, *cb = NULL;
  double *vc = NULL;
  texts got = { 0 }, want = { 0 };
  size_t bufsize, n, j;
  int numbers = 1;                 /* the numbers-mode reader still in step */
  fly_rc ra, rb, rc;

  if( size == 0 ) return 0;
  bufsize = (size_t)data[0] + 1;
  data++;
  size--;
  write_input(data, size);

  ra = fly_csv_open_buf(tmp_path, bufsize, &a, &ea);
  rb = fly_csv_open_buf(tmp_path, REF_BUF(size), &b, &eb);
  rc = fly_csv_open_buf(tmp_path, REF_BUF(size), &c, &ec);
  CHECK(ra == rb && ra == rc);
  if( ra != FLY_OK ) return 0;    /* the header: fuzz_csv's business */
  n = fly_csv_ncols(a);
  ca = fly_alloc_array(n, sizeof *ca);
  cb = fly_alloc_array(n, sizeof *cb);
  vc = fly_alloc_array(n, sizeof *vc);
  CHECK(ca && cb && vc);
  for(;;){
    ra = fly_csv_next_cells(a, ca, &ea);
    rb = fly_csv_next_cells(b, cb, &eb);
    CHECK(ra == rb);
    CHECK(fly_csv_line(a) == fly_csv_line(b));
    CHECK(fly_csv_records(a) == fly_csv_records(b));
    if( numbers ){
      rc = fly_csv_next(c, vc, &ec);
      if( rc == FLY_ROW ){
        CHECK(ra == FLY_ROW);
        for( j = 0; j < n; j++ )
          CHECK(ca[j].num && memcmp(&ca[j].v, &vc[j], sizeof vc[j]) == 0);
      }else if( rc == FLY_PARSE && value_error(ec.msg) ){
        /* cells mode reads on: the record, or a syntax error after it */
        CHECK(ra == FLY_ROW || (ra == FLY_PARSE && !value_error(ea.msg)));
        numbers = 0;
      }else{
        CHECK(ra == rc);
        if( ra == FLY_PARSE ) CHECK(strcmp(ea.msg, ec.msg) == 0);
      }
    }
    if( ra != FLY_ROW ) break;
    CHECK(fly_csv_bytes(a) == fly_csv_bytes(b));
    for( j = 0; j < n; j++ ){
      double v = 0;
      CHECK(ca[j].n == cb[j].n && memcmp(ca[j].s, cb[j].s, ca[j].n) == 0);
      CHECK(ca[j].num == cb[j].num && ca[j].quoted == cb[j].quoted);
      CHECK(memcmp(&ca[j].v, &cb[j].v, sizeof v) == 0 || (isnan(ca[j].v) && isnan(cb[j].v)));
      CHECK(!memchr(ca[j].s, 0, ca[j].n));
      CHECK(ca[j].num == is_number(ca[j].s, ca[j].n, &v));
      if( ca[j].num ) CHECK(memcmp(&ca[j].v, &v, sizeof v) == 0);
      else CHECK(isnan(ca[j].v));
      put(&got, ca[j].s, ca[j].n);
    }
  }
  if( ra == FLY_DONE ){
    CHECK(fly_csv_bytes(a) == size);
    ref_texts(data, size, &want);
    CHECK(got.n == want.n && (got.n == 0 || memcmp(got.p, want.p, got.n) == 0));
  }else{
    CHECK(ra == FLY_PARSE && strcmp(ea.msg, eb.msg) == 0);
  }
  free(got.p);
  free(want.p);
  fly_free(ca);
  fly_free(cb);
  fly_free(vc);
  fly_csv_close(a);
  fly_csv_close(b);
  fly_csv_close(c);
  return 0;
}
