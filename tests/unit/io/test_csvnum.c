/*
 * test_csvnum.c -- the CSV reader's numbers are strtod's, bit for bit.
 *
 * Random decimal texts of every shape the fast paths take or refuse (a
 * sign or none, 0 to 12 integer digits with leading zeros, a point with 0
 * to 12 fraction digits, an exponent of 1 to 3 digits), so integer and
 * fraction runs of every length 0..12 meet the 8-byte scanner (runs of 8
 * and more go the digit loop's way), and each falls at every offset of a
 * record and at the end of the buffer.  Read through a file (the reader's
 * own buffer) and a chunk reader (a buffer of exactly the chunk's bytes):
 * each cell is a number exactly when strtod gives a finite value, and then
 * the same bits.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/csv.h"
#include "tap.h"
#include "util/mem.h"

#define ROWS 100000
#define COLS 5

static uint64_t rng = 88172645463325252u;
static unsigned rnd(unsigned n)
{
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (unsigned)(rng % n);
}

/* One random decimal text into t (at least one digit). */
static void num_text(char *t)
{
  int ni = (int)rnd(13), nf = rnd(4) ? (int)rnd(13) : -1;
  if( ni == 0 && nf <= 0 ) ni = 1;
  if( rnd(3) == 0 ) *t++ = rnd(2) ? '-' : '+';
  for(int i = 0; i < ni; i++) *t++ = (char)('0' + (i == 0 && rnd(3) == 0 ? 0 : rnd(10)));
  if( nf >= 0 ){
    *t++ = '.';
    for(int i = 0; i < nf; i++) *t++ = (char)('0' + (rnd(4) == 0 ? 0 : rnd(10)));
  }
  if( rnd(5) == 0 ){
    *t++ = rnd(2) ? 'e' : 'E';
    if( rnd(2) ) *t++ = rnd(2) ? '-' : '+';
    for(int i = 0, ne = 1 + (int)rnd(3); i < ne; i++) *t++ = (char)('0' + rnd(10));
  }
  *t = 0;
}

/* The cells of reader c against texts[ROWS][COLS]: mismatches. */
static long check(fly_csv *c, char (*texts)[COLS][48])
{
  fly_csv_cell cells[COLS];
  fly_err err;
  long bad = 0, r = 0;
  fly_rc rc;
  while( (rc = fly_csv_next_cells(c, cells, &err)) == FLY_ROW && r < ROWS ){
    for(int j = 0; j < COLS; j++){
      double want = strtod(texts[r][j], NULL), got = cells[j].v;
      int fin = isfinite(want);
      if( cells[j].num != fin || (fin && memcmp(&want, &got, sizeof want) != 0) ){
        if( bad++ < 5 )
          TAP_DIAG("row %ld '%s': strtod %.17g, reader %.17g (num %d)", r,
                   texts[r][j], want, got, cells[j].num);
      }
    }
    r++;
  }
  if( rc != FLY_DONE || r != ROWS ){
    TAP_DIAG("status %d after %ld rows: %s", (int)rc, r, rc ? err.msg : "");
    bad++;
  }
  return bad;
}

int main(void)
{
  char (*texts)[COLS][48] = malloc(ROWS * sizeof *texts);
  char path[] = "/tmp/flydb_csvnum_XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
  if( !texts || !f ){ perror("temp"); return 2; }
  fputs("a,b,c,d,e\n", f);
  for(int r = 0; r < ROWS; r++)
    for(int j = 0; j < COLS; j++){
      num_text(texts[r][j]);
      fprintf(f, "%s%c", texts[r][j], j + 1 < COLS ? ',' : '\n');
    }
  if( fclose(f) != 0 ){ perror("temp"); return 2; }

  fly_csv *c = NULL;
  fly_err err;
  TAP_OK(fly_csv_open(path, &c, &err) == FLY_OK, "open");
  TAP_OK(check(c, texts) == 0, "%d random decimals read from a file are strtod's",
         ROWS * COLS);
  fly_csv_close(c);

  /* The data rows as one chunk whose buffer ends right after them. */
  fly_csv *hdr = NULL, *ch = NULL;
  TAP_OK(fly_csv_open(path, &hdr, &err) == FLY_OK, "open the header");
  size_t cap = (size_t)ROWS * COLS * 48, got = 0;
  char *buf = fly_alloc_array(cap + 1 + FLY_CSV_PAD, 1);
  int64_t line = fly_csv_next_line(hdr);
  TAP_OK(buf && fly_csv_read_raw(hdr, buf, cap, &got, &err) == FLY_OK && got < cap,
         "read the rows raw");
  char *fit = fly_realloc_array(buf, got + 1 + FLY_CSV_PAD, 1);  /* no slack */
  if( fit ) buf = fit;
  TAP_OK(fly_csv_open_chunk(hdr, buf, got, line, &ch, &err) == FLY_OK, "chunk");
  TAP_OK(check(ch, texts) == 0, "and from a chunk, the same");
  fly_csv_close(ch);
  fly_free(buf);
  fly_csv_close(hdr);
  unlink(path);
  free(texts);
  return tap_done();
}
