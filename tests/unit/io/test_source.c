/*
 * test_source.c -- inputs as CSV text: gzip, zstd and xz decoded exactly
 * (also concatenated, also from standard input, whatever the read size);
 * every truncation and a flipped byte fail with a message naming the file;
 * Stata, SPSS and SAS files written by ReadStat's own writer come out as
 * the expected text (labels, missing values, quoting, %.17g numbers) with
 * their labelled variables listed as categorical; an SQL query's result;
 * closing a source in the middle of a conversion.
 *
 * Inputs are made in memory with the libraries' one-shot encoders and
 * written to temp files.
 */
#include <errno.h>
#include <lzma.h>
#include <readstat.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "io/source.h"
#include "tap.h"

static char dir[64];
static char paths[32][128];
static int n_paths;

static const char *tmp_path(const char *name)
{
  char *p = paths[n_paths++ % 32];
  snprintf(p, sizeof paths[0], "%s/%s", dir, name);
  return p;
}

static void write_file(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  if( !f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0 ){
    perror(path);
    exit(1);
  }
}

/* A CSV text of about n bytes, different on every line. */
static char *make_csv(size_t rows, size_t *len)
{
  size_t cap = 64 + rows * 64, k;
  char *t = malloc(cap);
  k = (size_t)snprintf(t, cap, "a,b,y\n");
  for(size_t i = 0; i < rows; i++)
    k += (size_t)snprintf(t + k, cap - k, "%zu,%.17g,%d\n", i, (double)i / 7.0 + 0.1,
                          (int)(i % 2));
  *len = k;
  return t;
}

/* ---- encoders ---- */

static unsigned char *gz(const char *in, size_t n, size_t *out_n)
{
  z_stream z;
  size_t cap = compressBound((uLong)n) + 64;
  unsigned char *o = malloc(cap);
  memset(&z, 0, sizeof z);
  deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)n;
  z.next_out = o;
  z.avail_out = (uInt)cap;
  deflate(&z, Z_FINISH);
  *out_n = cap - z.avail_out;
  deflateEnd(&z);
  return o;
}

static unsigned char *zst(const char *in, size_t n, size_t *out_n)
{
  size_t cap = ZSTD_compressBound(n);
  unsigned char *o = malloc(cap);
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  *out_n = ZSTD_compress2(c, o, cap, in, n);
  ZSTD_freeCCtx(c);
  return o;
}

static unsigned char *xz(const char *in, size_t n, size_t *out_n)
{
  size_t cap = lzma_stream_buffer_bound(n), pos = 0;
  unsigned char *o = malloc(cap);
  lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, (const uint8_t *)in, n, o, &pos, cap);
  *out_n = pos;
  return o;
}

typedef unsigned char *encoder(const char *, size_t, size_t *);
static const struct { const char *name, *ext; encoder *enc; } codecs[] = {
  { "gzip", "gz", gz }, { "zstd", "zst", zst }, { "xz", "xz", xz },
};

/* ---- reading a source whole ---- */

/* Read the whole text of an open source with fread of `chunk` bytes.
 * Returns the text (NUL-terminated), *n its length, *failed 1 if the
 * stream failed. */
static char *slurp(fly_source *s, size_t chunk, size_t *n, int *failed)
{
  FILE *f = fly_source_file(s);
  size_t cap = 1 << 16, len = 0, got;
  char *t = malloc(cap + 1);
  *failed = 0;
  for(;;){
    if( cap - len < chunk ){
      cap = 2*cap + chunk;
      t = realloc(t, cap + 1);
    }
    got = fread(t + len, 1, chunk, f);
    len += got;
    if( got < chunk ){
      *failed = ferror(f) != 0;
      break;
    }
  }
  t[len] = 0;
  *n = len;
  return t;
}

/* Open path, read it whole, close; NULL if open failed (err set). */
static char *read_source(const char *path, const fly_source_opts *o, size_t chunk,
                         size_t *n, int *failed, char *msg, size_t msg_cap,
                         const char **format, fly_err *err)
{
  fly_source *s = NULL;
  char *t;
  msg[0] = 0;
  if( fly_source_open(path, o, &s, err) ) return NULL;
  t = slurp(s, chunk, n, failed);
  if( fly_source_error(s) ) snprintf(msg, msg_cap, "%s", fly_source_error(s));
  if( format ) *format = fly_source_format(s);
  fly_source_close(s);
  return t;
}

static void test_codecs(void)
{
  static const size_t chunks[] = { 1, 7, 4096, 1 << 20 };
  size_t n_csv, n_small;
  char *csv = make_csv(20000, &n_csv);       /* ~ 600 KB: many buffers */
  char *small = make_csv(40, &n_small);

  for(size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++){
    size_t nz, nz2, n, cut;
    unsigned char *z = codecs[c].enc(csv, n_csv, &nz);
    unsigned char *z2 = codecs[c].enc(small, n_small, &nz2);
    char name[32], msg[FLY_ERR_MSG];
    const char *path, *fmt = NULL;
    int failed, all_ok = 1, all_trunc = 1;
    fly_err err = { 0 };

    snprintf(name, sizeof name, "big.csv.%s", codecs[c].ext);
    path = tmp_path(name);
    write_file(path, z, nz);
    for(size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++){
      char *t = read_source(path, NULL, chunks[k], &n, &failed, msg, sizeof msg, &fmt, &err);
      if( k == 0 ) TAP_OK(fmt && strcmp(fmt, codecs[c].name) == 0, "%s: format %s", path, fmt ? fmt : "?");
      TAP_OK(t && !failed && n == n_csv && memcmp(t, csv, n) == 0,
             "%s decodes to the %zu bytes written, read %zu at a time", codecs[c].name, n_csv, chunks[k]);
      free(t);
    }

    /* two members / frames / streams one after the other */
    {
      unsigned char *zz = malloc(nz + nz2);
      memcpy(zz, z2, nz2);
      memcpy(zz + nz2, z, nz);
      write_file(path, zz, nz + nz2);
      char *t = read_source(path, NULL, 4096, &n, &failed, msg, sizeof msg, NULL, &err);
      TAP_OK(t && !failed && n == n_small + n_csv && memcmp(t, small, n_small) == 0 &&
             memcmp(t + n_small, csv, n_csv) == 0, "%s: concatenated streams read in turn", codecs[c].name);
      free(t);
      /* trailing garbage after the last one */
      memcpy(zz, z2, nz2);
      memcpy(zz + nz2, "garbage!", 8);
      write_file(path, zz, nz2 + 8);
      t = read_source(path, NULL, 4096, &n, &failed, msg, sizeof msg, NULL, &err);
      TAP_OK(t && failed && strncmp(msg, path, strlen(path)) == 0, "%s: trailing garbage fails: %s",
             codecs[c].name, msg);
      free(t);
      free(zz);
    }

    /* every truncation of the small one, from the first byte past the magic */
    for(cut = 6; cut < nz2; cut++){
      write_file(path, z2, cut);
      char *t = read_source(path, NULL, 4096, &n, &failed, msg, sizeof msg, NULL, &err);
      char want[128];
      snprintf(want, sizeof want, "%s: truncated %s stream after %zu bytes", path, codecs[c].name, cut);
      if( !t || !failed || strcmp(msg, want) != 0 ){
        if( all_trunc ) TAP_DIAG("cut %zu: '%s', want '%s'", cut, msg, want);
        all_trunc = 0;
      }
      free(t);
    }
    TAP_OK(all_trunc, "%s: each of %zu truncations fails as 'truncated ... after N bytes'",
           codecs[c].name, nz2 - 6);

    /* a flipped byte anywhere past the header: an error naming the file
     * (each format checks its data: CRC-32, XXH64, CRC-64), or a byte the
     * text does not depend on -- never wrong text */
    for(cut = 12; cut < nz2; cut++){
      unsigned char *bad = malloc(nz2);
      memcpy(bad, z2, nz2);
      bad[cut] ^= 0x5a;
      write_file(path, bad, nz2);
      char *t = read_source(path, NULL, 4096, &n, &failed, msg, sizeof msg, NULL, &err);
      if( !t || (failed && strncmp(msg, path, strlen(path)) != 0) ||
          (!failed && (n != n_small || memcmp(t, small, n) != 0)) ){
        if( all_ok ) TAP_DIAG("flip at %zu: failed %d, '%s'", cut, failed, msg);
        all_ok = 0;
      }
      free(t);
      free(bad);
    }
    TAP_OK(all_ok, "%s: a flipped byte fails naming the file, or is caught by the check", codecs[c].name);
    free(z);
    free(z2);
  }
  free(csv);
  free(small);
}

/* Standard input: dup a pipe holding data onto fd 0. */
static char *read_stdin(const void *data, size_t n, size_t *got, int *failed,
                        char *msg, const char **fmt)
{
  int fd[2];
  fly_err err = { 0 };
  char *t;
  if( pipe(fd) != 0 || n > 60000 ) return NULL;
  if( write(fd[1], data, n) != (ssize_t)n ) return NULL;
  close(fd[1]);
  dup2(fd[0], 0);
  close(fd[0]);
  clearerr(stdin);
  t = read_source("-", NULL, 4096, got, failed, msg, FLY_ERR_MSG, fmt, &err);
  return t;
}

static void test_stdin(void)
{
  size_t n_small, nz, n;
  char *small = make_csv(200, &n_small);
  char msg[FLY_ERR_MSG];
  const char *fmt;
  int failed;

  for(size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++){
    unsigned char *z = codecs[c].enc(small, n_small, &nz);
    char *t = read_stdin(z, nz, &n, &failed, msg, &fmt);
    TAP_OK(t && !failed && n == n_small && memcmp(t, small, n) == 0 && strcmp(fmt, codecs[c].name) == 0,
           "%s from standard input", codecs[c].name);
    free(t);
    t = read_stdin(z, nz / 2, &n, &failed, msg, &fmt);
    TAP_OK(t && failed && strncmp(msg, "<stdin>: truncated", 18) == 0,
           "truncated %s on standard input: %s", codecs[c].name, msg);
    free(t);
    free(z);
  }
  {
    char *t = read_stdin(small, n_small, &n, &failed, msg, &fmt);
    TAP_OK(t && !failed && n == n_small && memcmp(t, small, n) == 0 && strcmp(fmt, "csv") == 0,
           "plain CSV from standard input");
    free(t);
    /* a CSV whose first bytes look like a magic number's start */
    static const char odd[] = "(a),$b,<c>\n1,2,3\n";
    t = read_stdin(odd, sizeof odd - 1, &n, &failed, msg, &fmt);
    TAP_OK(t && !failed && strcmp(t, odd) == 0 && strcmp(fmt, "csv") == 0,
           "CSV starting with '(' from standard input is kept whole");
    free(t);
  }
  free(small);
}

static void test_plain(void)
{
  static const char odd[] = "\x1f" "a,b\n1,2\n", text[] = "x,y\n1,2\n";
  const char *p1 = tmp_path("odd.csv"), *p2 = tmp_path("plain.csv");
  fly_source *s = NULL;
  fly_err err = { 0 };
  char msg[FLY_ERR_MSG];
  size_t n;
  int failed;
  const char *fmt;

  write_file(p2, text, sizeof text - 1);
  TAP_OK(fly_source_open(p2, NULL, &s, &err) == FLY_OK && strcmp(fly_source_format(s), "csv") == 0,
         "plain CSV opens as csv");
  if( s ){
    FILE *f = fly_source_file(s);
    TAP_OK(fileno(f) >= 0, "plain CSV: the stream is the file itself (fd %d)", fileno(f));
    fly_source_close(s);
  }
  write_file(p1, odd, sizeof odd - 1);
  char *t = read_source(p1, NULL, 3, &n, &failed, msg, sizeof msg, &fmt, &err);
  TAP_OK(t && !failed && strcmp(t, odd) == 0 && strcmp(fmt, "csv") == 0,
         "a file starting with 1f but not gzip is CSV, rewound");
  free(t);
  TAP_OK(fly_source_open(tmp_path("nope.csv.gz"), NULL, &s, &err) == FLY_IO && !s &&
         strstr(err.msg, "nope.csv.gz"), "a missing file: %s", err.msg);
}

/* ---- ReadStat ---- */

static ssize_t write_bytes(const void *data, size_t len, void *ctx)
{
  return (ssize_t)fwrite(data, 1, len, ctx);
}

static const double xs[] = { 0.1, -2.5, 1e-300, 0, 3.141592653589793, 12345678.9, 7 };
static const int    ns[] = { 1, 2, 3, 4, 5, -6, 0 };
static const int    cs[] = { 1, 2, 1, 3, 0, 2, 4 };        /* 0: missing, 4: no label */
static const char  *ss[] = { "a", "b,c", "", "d\"e", " f", "g", "NA" };
#define N_OBS 7

/* Write fmt ("dta", "sav", "sas7bdat") with rows copies of the 7 rows. */
static void write_stat(const char *path, const char *fmt, int rows)
{
  FILE *f = fopen(path, "wb");
  readstat_writer_t *w = readstat_writer_init();
  int dta = strcmp(fmt, "dta") == 0, sas = strcmp(fmt, "sas7bdat") == 0;
  readstat_label_set_t *ls = NULL;
  readstat_variable_t *vx, *vn, *vc = NULL, *vs;

  readstat_set_data_writer(w, write_bytes);
  if( !sas ){
    ls = readstat_add_label_set(w, dta ? READSTAT_TYPE_INT32 : READSTAT_TYPE_DOUBLE, "colors");
    if( dta ){
      readstat_label_int32_value(ls, 1, "red");
      readstat_label_int32_value(ls, 2, "blue");
      readstat_label_int32_value(ls, 3, "a \"quoted\", label");
    }else{
      readstat_label_double_value(ls, 1, "red");
      readstat_label_double_value(ls, 2, "blue");
      readstat_label_double_value(ls, 3, "a \"quoted\", label");
    }
  }
  vx = readstat_add_variable(w, "x", READSTAT_TYPE_DOUBLE, 0);
  vn = readstat_add_variable(w, "n", READSTAT_TYPE_INT32, 0);
  if( !sas ){
    vc = readstat_add_variable(w, "color", dta ? READSTAT_TYPE_INT32 : READSTAT_TYPE_DOUBLE, 0);
    readstat_variable_set_label_set(vc, ls);
  }
  vs = readstat_add_variable(w, "s", READSTAT_TYPE_STRING, 8);
  if( dta ) readstat_begin_writing_dta(w, f, rows * N_OBS);
  else if( sas ) readstat_begin_writing_sas7bdat(w, f, rows * N_OBS);
  else readstat_begin_writing_sav(w, f, rows * N_OBS);
  for(int r = 0; r < rows * N_OBS; r++){
    int i = r % N_OBS;
    readstat_begin_row(w);
    if( i == 3 ) readstat_insert_missing_value(w, vx);
    else readstat_insert_double_value(w, vx, xs[i]);
    readstat_insert_int32_value(w, vn, ns[i] + (r / N_OBS) * 10);
    if( vc ){
      if( cs[i] == 0 ) readstat_insert_missing_value(w, vc);
      else if( dta ) readstat_insert_int32_value(w, vc, cs[i]);
      else readstat_insert_double_value(w, vc, cs[i]);
    }
    readstat_insert_string_value(w, vs, ss[i]);
    readstat_end_row(w);
  }
  readstat_end_writing(w);
  readstat_writer_free(w);
  fclose(f);
}

static const char *q(const char *s)      /* the expected CSV form of s */
{
  static char b[64];
  if( strcmp(s, "b,c") == 0 ) return "\"b,c\"";
  if( strcmp(s, "d\"e") == 0 ) return "\"d\"\"e\"";
  if( strcmp(s, " f") == 0 ) return "\" f\"";
  snprintf(b, sizeof b, "%s", s);
  return b;
}

static char *expect_stat(int labels, int rows)
{
  size_t cap = 200 + (size_t)rows * N_OBS * 100, k;
  char *t = malloc(cap);
  static const char *lab[] = { "", "red", "blue", "\"a \"\"quoted\"\", label\"", "4" };
  k = (size_t)snprintf(t, cap, labels ? "x,n,color,s\n" : "x,n,s\n");
  for(int r = 0; r < rows * N_OBS; r++){
    int i = r % N_OBS;
    char x[32] = "";
    if( i != 3 ) snprintf(x, sizeof x, "%.17g", xs[i]);
    k += (size_t)snprintf(t + k, cap - k, "%s,%d,", x, ns[i] + (r / N_OBS) * 10);
    if( labels ) k += (size_t)snprintf(t + k, cap - k, "%s,", lab[cs[i]]);
    k += (size_t)snprintf(t + k, cap - k, "%s\n", q(ss[i]));
  }
  return t;
}

static void test_stat(void)
{
  static const char *fmts[] = { "dta", "sav", "sas7bdat" };
  for(size_t k = 0; k < 3; k++){
    int labels = k < 2;
    char name[32], msg[FLY_ERR_MSG];
    const char *path, *fmt = NULL;
    fly_source *s = NULL;
    fly_err err = { 0 };
    size_t n;
    int failed;

    snprintf(name, sizeof name, "small.%s", fmts[k]);
    path = tmp_path(name);
    write_stat(path, fmts[k], 1);
    char *want = expect_stat(labels, 1);
    char *t = read_source(path, NULL, 5, &n, &failed, msg, sizeof msg, &fmt, &err);
    TAP_OK(t && !failed && strcmp(t, want) == 0 && strcmp(fmt, fmts[k]) == 0,
           "%s: the expected CSV text (labels, missing, quoting, %%.17g)", fmts[k]);
    if( t && strcmp(t, want) != 0 ) TAP_DIAG("got:\n%s\nwant:\n%s", t, want);
    if( !t ) TAP_DIAG("%s", err.msg);
    free(t);
    free(want);

    if( fly_source_open(path, NULL, &s, &err) == FLY_OK ){
      const char *const *names;
      size_t n_cat;
      fly_source_categorical(s, &names, &n_cat);
      TAP_OK(labels ? n_cat == 1 && strcmp(names[0], "color") == 0 : n_cat == 0,
             "%s: %zu categorical column(s)%s", fmts[k], n_cat, n_cat ? " (color)" : "");
      fly_source_close(s);
    }else{
      TAP_OK(0, "%s: open: %s", fmts[k], err.msg);
    }

    /* many rows: the socket's back-pressure and the 64 KiB pieces */
    snprintf(name, sizeof name, "big.%s", fmts[k]);
    path = tmp_path(name);
    write_stat(path, fmts[k], 3000);
    want = expect_stat(labels, 3000);
    t = read_source(path, NULL, 4096, &n, &failed, msg, sizeof msg, &fmt, &err);
    TAP_OK(t && !failed && strcmp(t, want) == 0, "%s: %d rows, %zu bytes of text", fmts[k],
           3000 * N_OBS, n);
    free(t);
    free(want);

    /* closed after a few bytes, with the thread still converting */
    TAP_OK(fly_source_open(path, NULL, &s, &err) == FLY_OK, "%s: open", fmts[k]);
    if( s ){
      char b[10];
      TAP_OK(fread(b, 1, sizeof b, fly_source_file(s)) == sizeof b, "%s: a first read", fmts[k]);
      fly_source_close(s);
      TAP_OK(1, "%s: closed in the middle of a conversion", fmts[k]);
    }

    /* truncated files: an error naming the file, at open or while reading */
    {
      FILE *f = fopen(path, "rb");
      long len;
      fseek(f, 0, SEEK_END);
      len = ftell(f);
      rewind(f);
      char *all = malloc((size_t)len);
      if( fread(all, 1, (size_t)len, f) != (size_t)len ) len = 0;
      fclose(f);
      int all_ok = 1;
      for(long cut = 0; cut < len; cut += len / 37 + 1){
        write_file(path, all, (size_t)cut);
        t = read_source(path, NULL, 4096, &n, &failed, msg, sizeof msg, NULL, &err);
        const char *m = t ? msg : err.msg;
        if( (t && !failed) || strncmp(m, path, strlen(path)) != 0 ){
          if( all_ok ) TAP_DIAG("cut %ld: failed %d msg '%s'", cut, t ? failed : -1, m);
          all_ok = 0;
        }
        free(t);
      }
      TAP_OK(all_ok, "%s: 38 truncations each fail naming the file", fmts[k]);
      free(all);
    }
  }
  {
    const char *path = tmp_path("garbage.dta");
    fly_source *s = NULL;
    fly_err err = { 0 };
    write_file(path, "this is not a Stata file at all", 31);
    TAP_OK(fly_source_open(path, NULL, &s, &err) == FLY_CORRUPT && !s &&
           strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "ReadStat"),
           "a corrupt .dta: %s", err.msg);
  }
}

/* ---- SQL ---- */

static void test_sql(void)
{
  const char *path = tmp_path("other.db");
  sqlite3 *db;
  fly_source_opts o;
  fly_source *s = NULL;
  fly_err err = { 0 };
  char msg[FLY_ERR_MSG], *t;
  size_t n;
  int failed;
  const char *fmt;

  /* literals SQLite parses exactly even without x87 long double (valgrind) */
  sqlite3_open(path, &db);
  sqlite3_exec(db, "CREATE TABLE t(a INTEGER, b REAL, c TEXT, d);"
               "INSERT INTO t VALUES (1, 0.1, 'plain', 5), (-9007199254740993, 4.5e15, 'a,b', NULL),"
               "  (NULL, -0.0, 'say \"hi\"', 2.5), (3, NULL, NULL, 'x');"
               "CREATE TABLE b(x BLOB); INSERT INTO b VALUES (1), (x'00ff');", NULL, NULL, NULL);
  sqlite3_close(db);

  fly_source_opts_default(&o);
  o.query = "SELECT a, b, c, d AS \"d,e\" FROM t ORDER BY rowid";
  t = read_source(path, &o, 7, &n, &failed, msg, sizeof msg, &fmt, &err);
  {
    static const char want[] = "a,b,c,\"d,e\"\n1,0.10000000000000001,plain,5\n"
      "-9007199254740993,4500000000000000,\"a,b\",\n"
      ",0,\"say \"\"hi\"\"\",2.5\n3,,,x\n";       /* -0.0 is stored as 0 */
    int same = t && !failed && strcmp(fmt, "sql") == 0 && strcmp(t, want) == 0;
    TAP_OK(same, "a query's result as CSV text");
    if( !same ) TAP_DIAG("got:\n%s", t ? t : err.msg);
  }
  free(t);

  o.query = "SELECT x FROM b";
  t = read_source(path, &o, 4096, &n, &failed, msg, sizeof msg, NULL, &err);
  TAP_OK(t && failed && strstr(msg, "row 2") && strstr(msg, "BLOB") && strstr(msg, "SELECT x FROM b"),
         "a BLOB stops the stream: %s", msg);
  free(t);

  static const struct { const char *q, *want; } bad[] = {
    { "SELECT * FROM nope", "no such table: nope" },
    { "SELECT 1; SELECT 2", "more than one statement" },
    { "DELETE FROM t", "not a read-only statement" },
    { "", "no statement" },
  };
  for(size_t i = 0; i < sizeof bad / sizeof bad[0]; i++){
    o.query = bad[i].q;
    TAP_OK(fly_source_open(path, &o, &s, &err) == FLY_SQL && !s && strstr(err.msg, bad[i].want) &&
           strstr(err.msg, path), "query '%s': %s", bad[i].q, err.msg);
  }
  o.query = "SELECT 1";
  TAP_OK(fly_source_open(tmp_path("missing.db"), &o, &s, &err) == FLY_SQL && !s,
         "a missing database: %s", err.msg);
}

int main(void)
{
  snprintf(dir, sizeof dir, "/tmp/flydb_test_source_XXXXXX");
  if( !mkdtemp(dir) ){ perror("mkdtemp"); return 1; }
  test_codecs();
  test_plain();
  test_sql();
  test_stat();
  test_stdin();
  for(int i = 0; i < n_paths && i < 32; i++) unlink(paths[i]);
  rmdir(dir);
  return tap_done();
}
