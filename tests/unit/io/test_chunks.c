/*
 * test_chunks.c -- cutting a CSV into chunks at record boundaries: the
 * quote-parity boundary finder (fly_csv_boundary) and the line counter,
 * and chunk readers (fly_csv_open_chunk) that must give the records,
 * cell texts, lines and first error a single reader gives.
 *
 * The reader thread of io/chunks.c is emulated with blocks of 1 byte and
 * up, so a quote, a "" escape, a CRLF and a quoted line feed fall on every
 * block boundary; then the threaded reader itself runs on the same inputs.
 * The after-stage (work at random speeds, then commits) must commit every
 * chunk in file order before fly_chunks_finish returns, and none after a
 * failed commit, whose error the caller gets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/chunks.h"
#include "io/csv.h"
#include "tap.h"
#include "util/mem.h"

static const char *tmp_with(const char *data)
{
  static char p[32];
  strcpy(p, "/tmp/flydb_chunks_XXXXXX");
  int fd = mkstemp(p);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
  if( !f || fputs(data, f) < 0 || fclose(f) != 0 ){ perror("temp"); exit(2); }
  return p;
}

/* A transcript of records: "line:text|text|...\n" each, then the status
 * and the error message. */
typedef struct { char *s; size_t n, cap; } text;

static void put(text *t, const char *s, size_t n)
{
  if( t->n + n + 1 > t->cap ){
    t->cap = 2 * (t->n + n + 1);
    t->s = realloc(t->s, t->cap);
    if( !t->s ) exit(2);
  }
  memcpy(t->s + t->n, s, n);
  t->n += n;
  t->s[t->n] = 0;
}

static void put_row(text *t, const fly_csv_cell *c, size_t nc, int64_t line)
{
  char b[32];
  put(t, b, (size_t)snprintf(b, sizeof b, "%lld:", (long long)line));
  for(size_t j = 0; j < nc; j++){
    put(t, c[j].s, c[j].n);
    put(t, j + 1 < nc ? "|" : "\n", 1);
  }
}

static void put_end(text *t, fly_rc rc, const fly_err *err)
{
  char b[32];
  put(t, b, (size_t)snprintf(b, sizeof b, "rc %d ", (int)rc));
  if( rc != FLY_DONE && rc != FLY_OK ) put(t, err->msg, strlen(err->msg));
}

/* The single reader's transcript. */
static void serial(const char *path, text *t)
{
  fly_csv *c = NULL;
  fly_err err = {0};
  fly_csv_cell cells[16];
  fly_rc rc = fly_csv_open(path, &c, &err);
  if( rc ){ put_end(t, rc, &err); return; }
  while( (rc = fly_csv_next_cells(c, cells, &err)) == FLY_ROW )
    put_row(t, cells, fly_csv_ncols(c), fly_csv_line(c));
  put_end(t, rc, &err);
  fly_csv_close(c);
}

/* Parse chunk buf[0..n) from line into t; returns its status. */
static fly_rc chunk(fly_csv *hdr, char *buf, size_t n, int64_t line, text *t,
                    fly_err *err)
{
  fly_csv *c = NULL;
  fly_csv_cell cells[16];
  fly_rc rc = fly_csv_open_chunk(hdr, buf, n, line, &c, err);
  if( rc ) return rc;
  while( (rc = fly_csv_next_cells(c, cells, err)) == FLY_ROW )
    put_row(t, cells, fly_csv_ncols(c), fly_csv_line(c));
  fly_csv_close(c);
  return rc == FLY_DONE ? FLY_OK : rc;
}

/* The reader thread's loop, by hand: blocks of bs bytes, cut at the last
 * boundary in each block.  *n_chunks: chunks made. */
static void emulate(const char *path, size_t bs, text *t, int *n_chunks)
{
  fly_csv *hdr = NULL;
  fly_err err = {0};
  fly_rc rc = fly_csv_open(path, &hdr, &err);
  char *pend = NULL;
  size_t len = 0, got;
  int inq = 0;
  int64_t line;

  *n_chunks = 0;
  if( rc ){ put_end(t, rc, &err); return; }
  line = fly_csv_next_line(hdr);
  for(;;){
    pend = fly_realloc_array(pend, len + bs + 1, 1);
    if( (rc = fly_csv_read_raw(hdr, pend + len, bs, &got, &err)) ) break;
    size_t b = fly_csv_boundary(pend + len, got, &inq), cut = b ? len + b : 0;
    len += got;
    if( got < bs ) cut = len;
    if( cut ){
      char *buf = fly_alloc_array(cut + 1 + FLY_CSV_PAD, 1), *rest;
      memcpy(buf, pend, cut);
      rest = fly_alloc_array(len - cut + bs + 1, 1);
      memcpy(rest, pend + cut, len - cut);
      fly_free(pend);
      pend = rest;
      int64_t l0 = line;
      line += fly_csv_count_lines(buf, cut);
      (*n_chunks)++;
      rc = cut > 0 ? chunk(hdr, buf, cut, l0, t, &err) : FLY_OK;
      fly_free(buf);
      if( rc ) break;
      len -= cut;
    }
    if( got < bs ){ rc = FLY_DONE; break; }
  }
  put_end(t, rc, &err);
  fly_free(pend);
  fly_csv_close(hdr);
}

/* The threaded reader's transcript (the last chunk's rc is the status). */
static void threaded(const char *path, int threads, text *t)
{
  fly_csv *hdr = NULL;
  fly_chunks *q = NULL;
  const fly_chunk *ch;
  fly_err err = {0};
  fly_rc rc = fly_csv_open(path, &hdr, &err);
  if( !rc ) rc = fly_chunks_start(hdr, threads, NULL, NULL, &q, &err);
  while( !rc && (rc = fly_chunks_next(q, &ch, &err)) == FLY_ROW ){
    size_t nc = fly_csv_ncols(hdr);
    for(size_t i = 0; i < ch->rows; i++) put_row(t, ch->cells + i * nc, nc, ch->lines[i]);
    rc = ch->rc;
    if( rc ) err = ch->err;
  }
  put_end(t, rc, &err);
  fly_chunks_stop(q);
  fly_csv_close(hdr);
}

/* The after-stage: the caller notes each chunk's first line in its slot,
 * work takes a random while, commit appends the slot's line to a log (a
 * commit of the chunk at line fail_at fails). */
typedef struct stage_log {
  int64_t  slot_line[64];
  int64_t  log[4096];
  int      n_log;
  int64_t  fail_at;
  unsigned seed;
} stage_log;

static fly_rc log_work(void *ctx, size_t slot, fly_err *err)
{
  stage_log *g = ctx;
  (void)slot; (void)err;
  usleep((useconds_t)(rand_r(&g->seed) % 3000));
  return FLY_OK;
}

static fly_rc log_commit(void *ctx, size_t slot, fly_err *err)
{
  stage_log *g = ctx;
  if( g->slot_line[slot] == g->fail_at )
    return fly_fail(err, FLY_IO, "commit at line %lld", (long long)g->fail_at);
  g->log[g->n_log++] = g->slot_line[slot];
  return FLY_OK;
}

/* A file of many chunks through the stage on `threads` threads: commits
 * in file order, all of them before fly_chunks_finish returns, or none
 * after a failed one, whose error comes back. */
static void stage_test(const char *path, int threads, int64_t fail_k)
{
  fly_csv *hdr = NULL;
  fly_chunks *q = NULL;
  const fly_chunk *ch;
  fly_err err = {0};
  static stage_log g;
  int64_t taken[4096];
  int n_taken = 0;
  memset(&g, 0, sizeof g);
  g.seed = 7u + (unsigned)threads;
  g.fail_at = -1;
  fly_chunks_stage st = { log_work, log_commit, NULL, &g };
  fly_rc rc = fly_csv_open(path, &hdr, &err);
  if( !rc ) rc = fly_chunks_start(hdr, threads, NULL, &st, &q, &err);
  while( !rc && (rc = fly_chunks_next(q, &ch, &err)) == FLY_ROW ){
    g.slot_line[ch->slot] = ch->lines[0];
    if( n_taken == fail_k ) g.fail_at = ch->lines[0];
    taken[n_taken++] = ch->lines[0];
    rc = ch->rc;
  }
  if( rc == FLY_DONE ) rc = fly_chunks_finish(q, &err);
  int ok = fail_k < 0 ? n_taken > 4 && rc == FLY_OK && g.n_log == n_taken
                      : n_taken > fail_k && rc == FLY_IO && g.n_log == fail_k;
  for(int i = 0; ok && i < g.n_log; i++) ok = g.log[i] == taken[i];
  TAP_OK(ok, "after-stage on %d threads: %d chunks, %d committed in file order%s (%s)",
         threads, n_taken, g.n_log, fail_k < 0 ? "" : ", none after the failed one",
         rc ? err.msg : "ok");
  fly_chunks_stop(q);
  fly_csv_close(hdr);
}

/* The record hook: each record's first value, kept by slot and index in
 * the chunk (the hook owns its slot's data while the chunk is parsed); it
 * fails on the record whose first value is fail_row. */
typedef struct hook_log {
  double *seen[64];
  size_t  cap[64];
  double  fail_row;
} hook_log;

static fly_rc hook_record(void *ctx, size_t slot, size_t i,
                          const fly_csv_cell *cells, fly_err *err)
{
  hook_log *h = ctx;
  if( cells[0].v == h->fail_row )
    return fly_fail(err, FLY_IO, "hook at row %.0f", h->fail_row);
  if( i >= h->cap[slot] ){
    size_t n = 2 * i + 1024;
    double *p = realloc(h->seen[slot], n * sizeof *p);
    if( !p ) return fly_fail(err, FLY_NOMEM, "hook");
    h->seen[slot] = p;
    h->cap[slot] = n;
  }
  h->seen[slot][i] = cells[0].v;
  return FLY_OK;
}

/* The hook on `threads` threads over path (first column: the row number):
 * it saw every record the caller gets, in its chunk's slot and place;
 * failing at row fail_row (< 0: never), the chunk ends before it with the
 * hook's error and the caller got exactly the rows above. */
static void hook_test(const char *path, int threads, double fail_row)
{
  fly_csv *hdr = NULL;
  fly_chunks *q = NULL;
  const fly_chunk *ch;
  fly_err err = {0};
  static hook_log h;
  memset(&h, 0, sizeof h);
  h.fail_row = fail_row;
  fly_chunks_stage st = { NULL, NULL, hook_record, &h };
  int64_t rows = 0;
  int same = 1;
  fly_rc rc = fly_csv_open(path, &hdr, &err);
  if( !rc ) rc = fly_chunks_start(hdr, threads, NULL, &st, &q, &err);
  while( !rc && (rc = fly_chunks_next(q, &ch, &err)) == FLY_ROW ){
    size_t nc = fly_csv_ncols(hdr);
    for(size_t i = 0; i < ch->rows; i++, rows++)
      same = same && h.seen[ch->slot][i] == ch->cells[i * nc].v
                  && ch->cells[i * nc].v == (double)rows;
    rc = ch->rc;
    if( rc ) err = ch->err;
  }
  int ok = same && (fail_row < 0 ? rc == FLY_DONE && rows == 400000
                                 : rc == FLY_IO && rows == (int64_t)fail_row
                                   && strstr(err.msg, "hook at row") != NULL);
  TAP_OK(ok, "record hook on %d threads: %lld records seen in their slots%s (%s)",
         threads, (long long)rows, fail_row < 0 ? "" : ", its failure ends the input there",
         rc == FLY_DONE ? "done" : err.msg);
  fly_chunks_stop(q);
  fly_csv_close(hdr);
  for(size_t k = 0; k < 64; k++) free(h.seen[k]);
}

static const char *inputs[] = {
  "a,b\n1,2\n3,4\n",
  "a,b\r\n1,\"x\ny\"\r\n\"p,\"\"q\"\"\",4\r\n\r\n5,\"\"\"\"\n6,7",
  "a,b\n\"\n\n\",\"\r\n\"\n\n\n\"1\",\"\"\n",
  "a,b\r1,2\r\"3\r\",4\r",                 /* lone CRs */
  "\xEF\xBB\xBF" "a,b\n1,2\n3,\"unterminated\n4,5\n",
  "a,b\n1,2\n3,x\"y\n\"4\",5\n6,7,8\n",    /* quote in an unquoted field */
  "a,b\n1,2\n3\n4,5,6\n",                 /* ragged */
  "a,b\n\"1\" x,2\n",                     /* after a closing quote */
};

int main(void)
{
  static const size_t bss[] = { 1, 2, 3, 5, 8, 13, 64 };
  size_t k, i;

  TAP_OK(fly_csv_count_lines("a\nb\r\nc\rd\r", 10) == 4, "line ends: LF, CRLF, lone CR, CR at the end");
  {
    /* long texts (the counter takes 16 bytes at a time): LF, CRLF and
     * lone CRs anywhere, a CRLF split between two 16-byte blocks, more
     * than 255 blocks; every prefix length against a byte-by-byte count */
    static char s[9000];
    unsigned x = 12345u;
    int bad = 0;
    for(i = 0; i < sizeof s; i++){
      x = x * 1103515245u + 12345u;
      unsigned r = (x >> 16) % 100;
      s[i] = r < 8 ? '\n' : r < 10 && i > 4000 ? '\r' : 'a';
    }
    s[31] = '\r'; s[32] = '\n';
    for(size_t n = 0; n <= sizeof s; n += n < 100 ? 1 : 97){
      int64_t want = 0;
      for(i = 0; i < n; i++)
        want += s[i] == '\n' || (s[i] == '\r' && (i + 1 == n || s[i + 1] != '\n'));
      if( fly_csv_count_lines(s, n) != want ) bad++;
    }
    TAP_OK(bad == 0, "line ends of long texts, every length: as one byte at a time");
  }
  {
    int inq = 0;
    TAP_OK(fly_csv_boundary("1,2\n3,4", 7, &inq) == 4 && inq == 0, "no quotes: after the last LF");
    TAP_OK(fly_csv_boundary("1,\"a\nb", 7, &inq) == 0 && inq == 1, "an open quote: no boundary");
    TAP_OK(fly_csv_boundary("\n\"\"c\"\n2\n", 8, &inq) == 8 && inq == 0,
           "in quotes at the start, an escaped quote, then boundaries");
    inq = 1;
    TAP_OK(fly_csv_boundary("x\ny", 3, &inq) == 0 && inq == 1, "a quoted LF is no boundary");
  }
  {
    /* a NUL byte inside a cell, unquoted (found by the field scan) or
     * quoted, is an error at the cell; one past the data is its end */
    static const struct { const char *s; size_t n; const char *want; } nul[] = {
      { "a,b\n1,x\0y\n", 11, "<nul>:2:2: NUL byte in a cell" },
      { "a,b\n1,x \0\n", 11, "<nul>:2:2: NUL byte in a cell" },
      { "a,b\n1,\"x\0y\"\n", 13, "<nul>:2:2: NUL byte in a cell" },
      { "a,b\nx,y\n", 9, NULL },
    };
    for(size_t t = 0; t < sizeof nul / sizeof nul[0]; t++){
      fly_csv *c = NULL;
      fly_err err = {0};
      fly_csv_cell cells[2];
      FILE *f = fmemopen((void *)nul[t].s, nul[t].n, "r");
      fly_rc rc = f ? fly_csv_open_stream(f, "<nul>", &c, &err) : FLY_IO;
      if( rc == FLY_OK ) rc = fly_csv_next_cells(c, cells, &err);
      TAP_OK(nul[t].want ? rc == FLY_PARSE && strstr(err.msg, nul[t].want) == err.msg
                         : rc == FLY_ROW,
             "NUL bytes, case %zu: %s", t, rc == FLY_ROW ? "a row" : err.msg);
      fly_csv_close(c);
      if( f ) fclose(f);
    }
  }
  for(k = 0; k < sizeof inputs / sizeof inputs[0]; k++){
    const char *path = tmp_with(inputs[k]);
    text want = {0};
    serial(path, &want);
    int ok = 1;
    for(i = 0; i < sizeof bss / sizeof bss[0]; i++){
      text got = {0};
      int nch;
      emulate(path, bss[i], &got, &nch);
      if( strcmp(got.s, want.s) != 0 ){
        ok = 0;
        TAP_DIAG("block %zu bytes, %d chunks:\n%s\nwant:\n%s", bss[i], nch, got.s, want.s);
      }
      free(got.s);
    }
    for(int th = 1; th <= 4; th *= 2){
      text got = {0};
      threaded(path, th, &got);
      if( strcmp(got.s, want.s) != 0 ){
        ok = 0;
        TAP_DIAG("%d threads:\n%s\nwant:\n%s", th, got.s, want.s);
      }
      free(got.s);
    }
    TAP_OK(ok, "input %zu: chunks of every block size and the threaded reader give the "
           "single reader's records, lines and error (%s)", k,
           strrchr(want.s, '\n') ? strrchr(want.s, '\n') + 1 : want.s);
    free(want.s);
    unlink(path);
  }
  {
    char big[] = "/tmp/flydb_chunks_big_XXXXXX";
    int fd = mkstemp(big);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if( !f ){ perror("temp"); exit(2); }
    fputs("a,b,c\n", f);
    for(int r = 0; r < 400000; r++) fprintf(f, "%d,%d.25,x%d\n", r, r % 977, r % 13);
    if( fclose(f) != 0 ){ perror("temp"); exit(2); }
    for(int th = 1; th <= 4; th *= 2) stage_test(big, th, -1);
    for(int th = 1; th <= 4; th *= 2) hook_test(big, th, -1);
    hook_test(big, 2, 250000);
    stage_test(big, 2, 3);
    unlink(big);
  }
  return tap_done();
}
