/*
 * test_csv.c -- the streaming CSV reader: RFC 4180 syntax, exact error
 * positions, bit-exact numbers, records longer than the buffer.
 *
 * Inputs are strings written to temp files.  Most cases run with several
 * initial buffer sizes (1 byte up to the default), so every record also
 * crosses a refill boundary at every offset; results and messages must not
 * depend on where the buffer happened to end.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/csv.h"
#include "tap.h"

static const size_t bufsizes[] = { 0, 1, 2, 3, 5, 8, 13, 64, 4096 };
#define N_BUFSIZES (sizeof bufsizes / sizeof bufsizes[0])

static char paths[64][32];
static int n_paths;

/* Write data[0..n) to a fresh temp file; the path lives until exit. */
static const char *tmpfile_with(const char *data, size_t n)
{
  char *p = paths[n_paths++ % 64];
  int fd;
  FILE *f;
  if( n_paths > 64 ){ unlink(p); }
  strcpy(p, "/tmp/flydb_csv_XXXXXX");
  fd = mkstemp(p);
  if( fd < 0 ){ perror("mkstemp"); exit(2); }
  f = fdopen(fd, "wb");
  if( !f || fwrite(data, 1, n, f) != n || fclose(f) != 0 ){
    perror("write temp");
    exit(2);
  }
  return p;
}

typedef struct {
  fly_rc   rc;       /* FLY_DONE, or the failure (open or next) */
  int      open_ok;  /* 1 if fly_csv_open succeeded */
  size_t   ncols;
  size_t   nrows;
  double  *v;        /* nrows x ncols */
  int64_t *lines;    /* fly_csv_line of each row */
  uint64_t bytes;    /* fly_csv_bytes at the end */
  char     names[256];  /* names joined with '|' */
  fly_err  err;
} result;

static void result_free(result *r)
{
  free(r->v);
  free(r->lines);
  memset(r, 0, sizeof *r);
}

/* Read a whole file with the given buffer size. */
static void parse_path(const char *path, size_t bufsize, result *r)
{
  fly_csv *c = NULL;
  size_t cap = 0, j;
  double *row = NULL;

  memset(r, 0, sizeof *r);
  r->rc = fly_csv_open_buf(path, bufsize, &c, &r->err);
  if( r->rc != FLY_OK ){
    if( c ){ r->rc = FLY_MISUSE; fly_csv_close(c); }  /* must be NULL */
    return;
  }
  r->open_ok = 1;
  r->ncols = fly_csv_ncols(c);
  for( j = 0; j < r->ncols; j++ ){
    size_t k = strlen(r->names);
    snprintf(r->names + k, sizeof r->names - k, "%s%s", j ? "|" : "",
             fly_csv_colname(c, j));
  }
  row = calloc(r->ncols, sizeof *row);
  while( (r->rc = fly_csv_next(c, row, &r->err)) == FLY_ROW ){
    if( r->nrows == cap ){
      cap = cap ? 2*cap : 16;
      r->v = realloc(r->v, cap*r->ncols*sizeof *r->v);
      r->lines = realloc(r->lines, cap*sizeof *r->lines);
    }
    memcpy(r->v + r->nrows*r->ncols, row, r->ncols*sizeof *row);
    r->lines[r->nrows++] = fly_csv_line(c);
  }
  r->bytes = fly_csv_bytes(c);
  if( r->rc == FLY_DONE ){                  /* stays done */
    if( fly_csv_next(c, row, NULL) != FLY_DONE ) r->rc = FLY_MISUSE;
  }
  free(row);
  fly_csv_close(c);
}

static void parse_str(const char *data, size_t n, size_t bufsize, result *r)
{
  parse_path(tmpfile_with(data, n), bufsize, r);
}

/* The input must fail with FLY_PARSE at line:col, the message containing
 * want, identically for every buffer size. */
static void expect_err(const char *name, const char *data, long line,
                       long col, const char *want)
{
  const char *path = tmpfile_with(data, strlen(data));
  char prefix[128], first[FLY_ERR_MSG] = "";
  size_t b;
  int ok = 1;
  snprintf(prefix, sizeof prefix, "%s:%ld:%ld: ", path, line, col);
  for( b = 0; b < N_BUFSIZES; b++ ){
    result r;
    parse_path(path, bufsizes[b], &r);
    if( r.rc != FLY_PARSE || r.err.code != FLY_PARSE
        || strncmp(r.err.msg, prefix, strlen(prefix)) != 0
        || !strstr(r.err.msg, want)
        || (b > 0 && strcmp(first, r.err.msg) != 0) ){
      TAP_DIAG("bufsize %zu: rc %d msg: %s", bufsizes[b], (int)r.rc,
               r.err.msg);
      ok = 0;
    }
    if( b == 0 ) memcpy(first, r.err.msg, sizeof first);
    result_free(&r);
  }
  TAP_OK(ok, "%s: %s", name, first + strlen(path) + 1);
}

/* The input must parse to rows x ncols values equal to want (bitwise) with
 * the given names, identically for every buffer size. */
static void expect_ok(const char *name, const char *data, size_t len,
                      const char *names, size_t ncols, size_t nrows,
                      const double *want, const int64_t *lines)
{
  const char *path = tmpfile_with(data, len);
  size_t b;
  int ok = 1;
  for( b = 0; b < N_BUFSIZES; b++ ){
    result r;
    parse_path(path, bufsizes[b], &r);
    if( r.rc != FLY_DONE ){
      TAP_DIAG("bufsize %zu: rc %d: %s", bufsizes[b], (int)r.rc, r.err.msg);
      ok = 0;
    }else if( r.ncols != ncols || r.nrows != nrows
              || strcmp(r.names, names) != 0 || r.bytes != len
              || (nrows && memcmp(r.v, want, nrows*ncols*sizeof *want))
              || (lines && nrows
                  && memcmp(r.lines, lines, nrows*sizeof *lines)) ){
      TAP_DIAG("bufsize %zu: %zu x %zu names '%s' bytes %llu", bufsizes[b],
               r.nrows, r.ncols, r.names, (unsigned long long)r.bytes);
      ok = 0;
    }
    result_free(&r);
  }
  TAP_OK(ok, "%s", name);
}

static void test_syntax(void)
{
  {
    static const char s[] = "a,b,c\n1,2,3\n4.5,-6e2,+7\n";
    const double w[] = { 1, 2, 3, 4.5, -600, 7 };
    const int64_t l[] = { 2, 3 };
    expect_ok("plain LF", s, sizeof s - 1, "a|b|c", 3, 2, w, l);
  }
  {
    static const char s[] = "a,b\r\n1,2\r\n3,4\r\n";
    const double w[] = { 1, 2, 3, 4 };
    const int64_t l[] = { 2, 3 };
    expect_ok("CRLF", s, sizeof s - 1, "a|b", 2, 2, w, l);
  }
  {
    static const char s[] = "a,b\r1,2\r\r3,4";
    const double w[] = { 1, 2, 3, 4 };
    const int64_t l[] = { 2, 4 };
    expect_ok("lone CR line ends", s, sizeof s - 1, "a|b", 2, 2, w, l);
  }
  {
    static const char s[] = "\xEF\xBB\xBF" "a,b\n1,2\n";
    const double w[] = { 1, 2 };
    expect_ok("UTF-8 BOM skipped", s, sizeof s - 1, "a|b", 2, 1, w, NULL);
  }
  {
    static const char s[] = "\xEF\xBB\xBF";
    result r;
    parse_str(s, sizeof s - 1, 0, &r);
    TAP_OK(r.rc == FLY_PARSE && strstr(r.err.msg, ":1:1: no header"),
           "BOM only: %s", r.err.msg);
    result_free(&r);
  }
  {
    static const char s[] = "a,b\n1,2";
    const double w[] = { 1, 2 };
    expect_ok("no final newline", s, sizeof s - 1, "a|b", 2, 1, w, NULL);
  }
  {
    static const char s[] = "a,b\r\n1,2\r";
    const double w[] = { 1, 2 };
    expect_ok("final CR", s, sizeof s - 1, "a|b", 2, 1, w, NULL);
  }
  {
    static const char s[] = "a,b";
    expect_ok("header only, no newline", s, sizeof s - 1, "a|b", 2, 0, NULL,
              NULL);
  }
  {
    static const char s[] = "x,y\n\n\n";
    expect_ok("header only, blank lines", s, sizeof s - 1, "x|y", 2, 0,
              NULL, NULL);
  }
  {
    static const char s[] = "\n\na,b\n\n1,2\n\r\n\n3,4\n\n";
    const double w[] = { 1, 2, 3, 4 };
    const int64_t l[] = { 5, 8 };
    expect_ok("blank lines skipped", s, sizeof s - 1, "a|b", 2, 2, w, l);
  }
  {
    static const char s[] =
      "\"a\",\"b,c\",\"d\"\"e\"\n\" 1.5 \",2,\"3\"\n\"-4\",\"5e1\",6\n";
    const double w[] = { 1.5, 2, 3, -4, 50, 6 };
    expect_ok("quoted names and numbers", s, sizeof s - 1, "a|b,c|d\"e", 3,
              2, w, NULL);
  }
  {
    static const char s[] = "a,\"b\nc\",\"d\r\ne\"\n1,2,3\n\n4,5,6\n";
    const double w[] = { 1, 2, 3, 4, 5, 6 };
    const int64_t l[] = { 4, 6 };
    expect_ok("newlines inside quoted names", s, sizeof s - 1,
              "a|b\nc|d\r\ne", 3, 2, w, l);
  }
  {
    static const char s[] = " a , b\t\n  1 ,\t2  \n \"3\" , \"\t4 \"\n";
    const double w[] = { 1, 2, 3, 4 };
    expect_ok("blanks around fields", s, sizeof s - 1, "a|b", 2, 2, w, NULL);
  }
  {
    static const char s[] = "\" a \",b\n1,2\n";
    const double w[] = { 1, 2 };
    expect_ok("quoted name keeps its blanks", s, sizeof s - 1, " a |b", 2,
              1, w, NULL);
  }
  {
    static const char s[] = "v\n.5\n5.\n-0\n0e999\n00012.50\n0x1p-2\n"
                            "1e-400\n+.5e-3\n";
    const double w[] = { .5, 5., -0.0, 0, 12.5, 0.25, 0, .5e-3 };
    expect_ok("number forms", s, sizeof s - 1, "v", 1, 8, w, NULL);
  }
  {
    static const char s[] = "\xc3\xa9t\xc3\xa9,b\n1,2\n";
    const double w[] = { 1, 2 };
    expect_ok("UTF-8 name", s, sizeof s - 1, "\xc3\xa9t\xc3\xa9|b", 2, 1, w,
              NULL);
  }
}

static void test_errors(void)
{
  result r;

  expect_err("ragged: too few", "a,b,c,d,e\n1,2,3,4,5\n\n1,2,3,4,5\n"
             "1,2,3,4,5\n1,2,3,4,5\n1,2,3\n", 7, 4,
             "row has 3 fields, header has 5");
  expect_err("ragged: one field", "a,b\n1,2\n7\n", 3, 2,
             "row has 1 field, header has 2");
  expect_err("ragged: too many", "a,b\n1,2\n1,2,3,4\n", 3, 3,
             "row has 4 fields, header has 2");
  expect_err("ragged: trailing comma", "a,b\n1,2,\n", 2, 3,
             "row has 3 fields, header has 2");
  expect_err("ragged: last line, no newline", "a,b,c\r\n1,2", 2, 3,
             "row has 2 fields, header has 3");
  expect_err("ragged: extra quoted field with newline",
             "a,b\n1,2,\"x\ny\",4\n", 2, 3, "row has 4 fields, header has 2");
  expect_err("ragged: after a multi-line name", "a,\"b\nc\"\n1\n", 3, 2,
             "row has 1 field, header has 2");
  expect_err("non-numeric", "a,b\n1,2\n1,abc\n", 3, 2,
             "'abc' is not a number (column 'b')");
  expect_err("non-numeric, first field", "a,b\nx1,2\n", 2, 1,
             "'x1' is not a number (column 'a')");
  expect_err("trailing junk", "a,b\n1,2.5kg\n", 2, 2, "'2.5kg'");
  expect_err("two numbers in a cell", "a,b\n1,2 3\n", 2, 2, "'2 3'");
  expect_err("half exponent", "a\n1e\n", 2, 1, "'1e' is not a number");
  expect_err("lone sign", "a\n-\n", 2, 1, "'-' is not a number");
  expect_err("lone point", "a\n.\n", 2, 1, "'.' is not a number");
  expect_err("vertical tab before a number", "a\n\v1\n", 2, 1,
             "'?1' is not a number (column 'a')");
  {
    char s[200];
    snprintf(s, sizeof s, "a\n%s\n",
             "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
    expect_err("long text truncated", s, 2, 1,
               "'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy...' is not a");
  }
  expect_err("empty cell, middle", "a,b,c\n1,,3\n", 2, 2,
             "empty cell, want a number (column 'b')");
  expect_err("empty cell, first", "a,b\n,1\n", 2, 1, "empty cell");
  expect_err("empty cell, last", "a,b\n1,\n", 2, 2, "empty cell");
  expect_err("empty cell, blanks", "a,b\n1,  \t\n", 2, 2, "empty cell");
  expect_err("empty cell, quoted", "a,b\n1,\"\"\n", 2, 2, "empty cell");
  expect_err("empty cell, one column", "a\n1\n \n", 3, 1, "empty cell");
  expect_err("nan", "a,b\n1,nan\n", 2, 2, "'nan' is not a finite number; "
             "NaN and Inf are not allowed (column 'b')");
  expect_err("NaN(123)", "a,b\n1,NAN(123)\n", 2, 2, "not a finite");
  expect_err("inf", "a,b\ninf,1\n", 2, 1, "'inf' is not a finite number; "
             "NaN and Inf are not allowed (column 'a')");
  expect_err("-Infinity", "a,b\n1,-Infinity\n", 2, 2, "not a finite");
  expect_err("quoted inf", "a,b\n1,\"inf\"\n", 2, 2, "not a finite");
  expect_err("overflow 1e999", "a,b\n1,1e999\n", 2, 2,
             "'1e999' overflows a double, want a finite number (column 'b')");
  expect_err("overflow -2e308", "a,b\n1,-2e308\n", 2, 2, "overflows");
  expect_err("empty file", "", 1, 1, "no header: the file is empty");
  expect_err("only blank lines", "\n\r\n\n", 4, 1,
             "no header: the file has only blank lines");
  expect_err("duplicate name", "a,b,a\n1,2,3\n", 1, 3,
             "duplicate column name 'a' (columns 1 and 3)");
  expect_err("duplicate after trimming", "x, y ,\"y\"\n", 1, 3,
             "duplicate column name 'y' (columns 2 and 3)");
  expect_err("empty name, middle", "a,,b\n", 1, 2, "empty column name");
  expect_err("empty name, trailing comma", "a,b,\n1,2,3\n", 1, 3,
             "empty column name");
  expect_err("empty name, quoted", "\"\",b\n", 1, 1, "empty column name");
  expect_err("empty name, blanks", "a,  ,b\n", 1, 2, "empty column name");
  expect_err("empty name, quoted blanks", "a,\" \t\",b\n", 1, 2,
             "empty column name");
  expect_err("unterminated quote, data", "a,b\n1,2\n3,\"4\n5,6\n", 3, 2,
             "unterminated quoted field");
  expect_err("unterminated quote, header", "a,\"b\n", 1, 2,
             "unterminated quoted field");
  expect_err("unterminated quote, escaped end", "a\n\"1\"\"", 2, 1,
             "unterminated quoted field");
  expect_err("quote inside unquoted, data", "a,b\n1,2\"3\n", 2, 2,
             "'\"' inside an unquoted field");
  expect_err("quote inside unquoted, header", "a\"b,c\n", 1, 1,
             "'\"' inside an unquoted field");
  expect_err("text after closing quote", "a,b\n1,\"2\"x\n", 2, 2,
             "unexpected 'x' after a closing quote");
  expect_err("line after a multi-line name", "a,\"b\nc\"\n1,2\n3,x\n", 4, 2,
             "'x' is not a number (column 'b?c')");
  expect_err("multi-line cell starts on its line", "a,b\n1,2\n3,\"x\ny\"\n",
             3, 2, "'x?y' is not a number (column 'b')");
  expect_err("too many: extra field spans lines",
             "a,b\n1,2,\"\n\n\"\n3,4\n", 2, 3, "row has 3 fields");
  expect_err("line counts after CR-only lines", "a,b\r1,2\r\r3,z\r", 4, 2,
             "'z'");

  /* Embedded NULs: strlen() cannot carry them, so test by length. */
  {
    static const char s[] = "a,b\n1,2\0003\n";
    parse_str(s, sizeof s - 1, 3, &r);
    TAP_OK(r.rc == FLY_PARSE
           && strstr(r.err.msg, ":2:2: '2?3' is not a number"),
           "NUL inside a cell: %s", r.err.msg);
    result_free(&r);
  }
  {
    static const char s[] = "a,b\0c\n1,2\n";
    parse_str(s, sizeof s - 1, 2, &r);
    TAP_OK(r.rc == FLY_PARSE && strstr(r.err.msg, ":1:2: NUL byte"),
           "NUL in a name: %s", r.err.msg);
    result_free(&r);
  }

  /* Cannot open. */
  parse_path("/nonexistent/dir/x.csv", 0, &r);
  TAP_OK(r.rc == FLY_IO && r.err.code == FLY_IO
         && strstr(r.err.msg, "/nonexistent/dir/x.csv")
         && strstr(r.err.msg, strerror(ENOENT)), "cannot open: %s",
         r.err.msg);
  result_free(&r);
  parse_path("/tmp", 0, &r);
  TAP_OK(r.rc == FLY_IO, "a directory: %s", r.err.msg);
  result_free(&r);

  /* NULL err is allowed. */
  {
    fly_csv *c = (fly_csv *)&r;
    const char *p = tmpfile_with("", 0);
    TAP_OK(fly_csv_open(p, &c, NULL) == FLY_PARSE && c == NULL,
           "NULL err, *pc NULL on failure");
    fly_csv_close(NULL);
  }
}

/* xorshift64*: deterministic test data. */
static uint64_t rs = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void)
{
  rs ^= rs >> 12;
  rs ^= rs << 25;
  rs ^= rs >> 27;
  return rs * UINT64_C(2685821657736338717);
}

/* One random number in one of many textual forms. */
static int rand_number(char *s, size_t cap)
{
  uint64_t u = rnd();
  double x;
  int form = (int)(rnd() % 10);
  memcpy(&x, &u, sizeof x);
  if( !isfinite(x) ) x = 1.0/3;
  switch( form ){
  case 0: return snprintf(s, cap, "%.17g", x);
  case 1: return snprintf(s, cap, "%.6g", x);
  case 2: return snprintf(s, cap, "%e", x);
  case 3: return snprintf(s, cap, "%.15g", (double)(rnd() % 2000000) / 7e3);
  case 4: return snprintf(s, cap, "%.16g", ldexp((double)(rnd() >> 11), -40));
  case 5: return snprintf(s, cap, "%lld", (long long)(int64_t)rnd());
  case 6: return snprintf(s, cap, "%lld", (long long)(rnd() % 100000) - 50000);
  default: {
    /* decimal text near the fast-path limits: 1..22 digits, exponent
     * -30..30, sometimes a point */
    int nd = 1 + (int)(rnd() % 22), k = 0, i, pt = (int)(rnd() % (nd + 2));
    if( rnd() & 1 ) s[k++] = '-';
    for( i = 0; i < nd; i++ ){
      if( i == pt ) s[k++] = '.';
      s[k++] = (char)('0' + (i == 0 && nd > 1 ? 1 + rnd() % 9 : rnd() % 10));
    }
    if( rnd() % 3 ) k += snprintf(s + k, cap - (size_t)k, "e%d",
                                  (int)(rnd() % 61) - 30);
    s[k] = 0;
    return k;
  }
  }
}

static void test_exact(void)
{
  const size_t ncols = 8, nrows = 25000, nn = ncols*nrows;
  size_t cap = nn*40 + 64, len = 0, i, j, b, bad = 0;
  char *text = malloc(cap), **cells = malloc(nn*sizeof *cells);
  char *pool = malloc(nn*40), *q = pool;
  double *want = malloc(nn*sizeof *want);
  static const char *fixed[] = {
    "0.1", "1e22", "1e23", "9007199254740992", "9007199254740993",
    "9007199254740995", "2.2250738585072011e-308", "4.9e-324", "1e-22",
    "123456789012345678901234567890", "0.30000000000000004",
    "1.7976931348623157e308", "-0.0", "1e-400", "5e-324", "3.14159",
    "8.98846567431158e307", "0.000000000000000000000000001",
    "18446744073709551615", "18446744073709551616", "1844674407370955161",
    "9999999999999999999", "7.2057594037927933e16", "1e15", "1e-15",
  };
  const size_t nfixed = sizeof fixed / sizeof fixed[0];

  len = (size_t)snprintf(text, cap, "c0");
  for( j = 1; j < ncols; j++ )
    len += (size_t)snprintf(text + len, cap - len, ",c%zu", j);
  text[len++] = '\n';
  for( i = 0; i < nn; i++ ){
    int k;
    if( i < nfixed ) k = snprintf(q, 40, "%s", fixed[i]);
    else k = rand_number(q, 40);
    cells[i] = q;
    want[i] = strtod(q, NULL);
    memcpy(text + len, q, (size_t)k);
    len += (size_t)k;
    text[len++] = (i + 1) % ncols ? ',' : '\n';
    q += k + 1;
  }
  {
    const char *path = tmpfile_with(text, len);
    static const size_t bs[] = { 0, 7, 1000 };
    for( b = 0; b < 3; b++ ){
      result r;
      parse_path(path, bs[b], &r);
      bad = 0;
      if( r.rc == FLY_DONE && r.nrows == nrows ){
        for( i = 0; i < nn; i++ )
          if( memcmp(&r.v[i], &want[i], sizeof want[i]) != 0 && bad++ < 5 )
            TAP_DIAG("'%s': got %.17g want %.17g", cells[i], r.v[i],
                     want[i]);
      }else{
        TAP_DIAG("rc %d: %s", (int)r.rc, r.err.msg);
        bad = 1;
      }
      TAP_OK(bad == 0, "%zu numbers bit-identical to strtod (bufsize %zu)",
             nn, bs[b]);
      result_free(&r);
    }
  }
  free(text);
  free(cells);
  free(pool);
  free(want);
}

/* Records longer than the initial buffer: a 3 MB line of 200000 fields, and
 * a quoted cell of 3 MB of blanks around a number. */
static void test_long(void)
{
  const size_t nc = 200000;
  size_t cap = nc*80 + 64, len = 0, j, r;
  char *s = malloc(cap);
  result res;
  int ok;

  for( j = 0; j < nc; j++ )
    len += (size_t)snprintf(s + len, cap - len, "%scol%zu", j ? "," : "", j);
  s[len++] = '\n';
  for( r = 0; r < 2; r++ ){
    for( j = 0; j < nc; j++ )
      len += (size_t)snprintf(s + len, cap - len, "%s%.17g", j ? "," : "",
                              (double)(j + 1)/3 + (double)r);
    s[len++] = '\n';
  }
  parse_str(s, len, 0, &res);
  ok = res.rc == FLY_DONE && res.ncols == nc && res.nrows == 2
       && res.bytes == len;
  for( r = 0; ok && r < 2; r++ )
    for( j = 0; j < nc; j++ )
      if( res.v[r*nc + j] != (double)(j + 1)/3 + (double)r ){ ok = 0; break; }
  TAP_OK(ok, "%zu-byte records of %zu fields (1 MiB buffer)", len/3, nc);
  result_free(&res);

  len = (size_t)snprintf(s, cap, "a,b\n1,\"");
  memset(s + len, ' ', 3000000);
  len += 3000000;
  len += (size_t)snprintf(s + len, cap - len, "2.5");
  memset(s + len, '\t', 1000);
  len += 1000;
  len += (size_t)snprintf(s + len, cap - len, "\"\n3,4\n");
  parse_str(s, len, 0, &res);
  TAP_OK(res.rc == FLY_DONE && res.nrows == 2 && res.v[1] == 2.5
         && res.v[3] == 4 && res.lines[1] == 3,
         "3 MB quoted cell of blanks around a number");
  result_free(&res);

  /* ...and an error far into a long record */
  len = (size_t)snprintf(s, cap, "a\n\"");
  memset(s + len, '7', 2500000);
  len += 2500000;
  parse_str(s, len, 0, &res);
  TAP_OK(res.rc == FLY_PARSE && strstr(res.err.msg, ":2:1: unterminated"),
         "unterminated 2.5 MB quoted cell: %s", res.err.msg);
  result_free(&res);
  free(s);
}

/* Progress and position accessors through a file with mixed line ends. */
static void test_accessors(void)
{
  static const char s[] = "\xEF\xBB\xBFp,q\n1,2\r\n\n3,4\n";
  const char *path = tmpfile_with(s, sizeof s - 1);
  fly_csv *c = NULL;
  fly_err err = { 0 };
  double v[2];
  int ok;

  ok = fly_csv_open(path, &c, &err) == FLY_OK;
  TAP_OK(ok && fly_csv_ncols(c) == 2 && strcmp(fly_csv_colname(c, 1), "q") == 0
         && fly_csv_colname(c, 2) == NULL && fly_csv_line(c) == 1
         && fly_csv_records(c) == 0 && fly_csv_bytes(c) == 7
         && strcmp(fly_csv_path(c), path) == 0, "after open");
  if( !ok ) return;
  TAP_OK(fly_csv_next(c, v, &err) == FLY_ROW && v[0] == 1 && v[1] == 2
         && fly_csv_line(c) == 2 && fly_csv_records(c) == 1
         && fly_csv_bytes(c) == 12, "first record");
  TAP_OK(fly_csv_next(c, v, &err) == FLY_ROW && v[0] == 3 && v[1] == 4
         && fly_csv_line(c) == 4 && fly_csv_records(c) == 2
         && fly_csv_bytes(c) == sizeof s - 1, "second record");
  TAP_OK(fly_csv_next(c, v, &err) == FLY_DONE && fly_csv_records(c) == 2,
         "done");
  TAP_OK(fly_csv_next(c, NULL, &err) == FLY_MISUSE, "NULL vals: misuse");
  fly_csv_close(c);
}

int main(void)
{
  int i;
  test_syntax();
  test_errors();
  test_exact();
  test_long();
  test_accessors();
  for( i = 0; i < n_paths && i < 64; i++ ) unlink(paths[i]);
  return tap_done();
}
