/*
 * ingest.c -- a CSV stream into a new data set (see ingest.h).
 *
 * The row loop: read a record as cells, type each (a number rounded to the
 * stored precision, a level code, or NaN for a missing cell), build the
 * stored row ([1] features... target), add it to the column statistics
 * (store/dataset.h) and to the page writer, which writes a full page at a
 * time.  Only then are the dataset row's counts, the column table and the
 * levels written (fly_dataset_finish), so a data set is complete or
 * absent.  Cost: one strtod per cell, one LZ4 compression per page, and a
 * hash lookup per cell of a categorical column or of a numeric column with
 * at most FLY_INGEST_TRACK_LEVELS distinct texts so far (a column with more
 * stops tracking and pays nothing more).
 *
 * A column that turns categorical after rows were stored: its tracked
 * numbers (text -> stored value) become its first levels, and before the
 * commit one more pass decodes every page, re-codes the values of the
 * rows above the turn (a binary search on the stored bits) and rewrites
 * those pages, recomputing the statistics.  Memory stays one page plus the
 * level dictionaries: at most FLY_INGEST_TRACK_LEVELS texts per numeric
 * column, and the levels of the categorical ones.
 *
 * Parallel parsing (threads > 1): io/chunks.h parses chunks of records on
 * worker threads; this thread takes them in file order and types their
 * cells as the one-thread loop does (type_row), so typing, re-coding and
 * the statistics see the same rows in the same order.  Most of that work
 * is done before, on the worker that parsed a record, while its cells are
 * in that worker's cache (pre_record, see batch): settled numbers stored,
 * labels looked up in a shared index of each column's levels (shidx), so
 * that this thread only counts the codes found and types in full the rare
 * record with something new.  Pages are cut at
 * the same rows (a multiple of page_rows from the first; the rows of a
 * page that a chunk leaves unfilled are carried into the next chunk's),
 * encoded on the workers (LZ4 and XXH3, the bulk of a page's cost) and
 * inserted by them in file order, one chunk at a time (the chunks'
 * after-stage), so the payloads are those of one thread.  An error is
 * reported at the first bad record in file order: a chunk's parse error
 * only after its rows above it were stored (and typed, which may fail
 * first).
 *
 * A new database is built privately and published with link(), which
 * refuses to replace a database another process created meanwhile; the
 * file is fsynced first, so a crash after the link cannot leave a
 * published but unwritten file.  rename() is the fallback only where the
 * file system has no hard links.  With parse threads, the new file is
 * created (its schema's DDL, a serial cost fixed per ingest) once they
 * have started, so the first chunks are parsed meanwhile; it is still
 * opened before any row is typed, so its failure comes first.
 */
#include "io/ingest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "io/chunks.h"
#include "store/codec.h"
#include "store/dataset.h"
#include "store/pages.h"
#include "store/pagewriter.h"
#include "util/mem.h"

/* Default page size: as many rows as fit, uncompressed, in one SQLite page
 * of the file (the largest payload a table leaf holds is its size less 35
 * bytes; the record's other columns take up to ~100 more).  Random reads
 * fetch and decode a whole page per row they need, so pages stay small; a
 * payload that filled 70% of a SQLite page would waste the rest (one such
 * record per leaf), and one larger than a page would spill into overflow
 * pages.  At least 16 rows, however wide. */
#define PAGE_SLACK_BYTES 136
static int64_t auto_page_rows(int64_t sqlite_page, size_t width, int prec)
{
  int64_t r = (sqlite_page - PAGE_SLACK_BYTES) / ((int64_t)width * prec);
  return r < 16 ? 16 : r;
}

fly_rc fly_ingest_page_rows(fly_db *db, size_t width, int prec,
                           int64_t *rows, fly_err *err)
{
  int64_t sp = 0;
  fly_rc rc = fly_db_page_bytes(db, &sp, err);
  if( rc == FLY_OK ) *rows = auto_page_rows(sp, width, prec);
  return rc;
}

void fly_ingest_opts_default(fly_ingest_opts *o)
{
  memset(o, 0, sizeof *o);
  o->intercept = 1;
  o->prec = FLY_PREC_F64;
}

static const char *base_name(const char *path)
{
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Default data set name: the file name without directory and extension. */
static void default_name(const char *path, char *out, size_t cap)
{
  if( strcmp(path, "-") == 0 || strcmp(path, "<stdin>") == 0 ){
    snprintf(out, cap, "stdin");
    return;
  }
  snprintf(out, cap, "%s", base_name(path));
  char *dot = strchr(out, '.');
  if( dot && dot != out ) *dot = 0;
}

static int interrupted(const fly_ingest_opts *o)
{
  return o->interrupt && *o->interrupt;
}

/* ---- level dictionaries --------------------------------------------- */

/* Distinct texts of one column, by code (first-seen order): a hash table of
 * codes over an arena of NUL-terminated labels.  val is the stored number
 * of a text seen while the column was numeric.  key: the text's short key
 * (short_key), which with its length identifies a text of at most 8
 * bytes, so most lookups compare two numbers instead of the bytes. */
typedef struct lvl { size_t off, len; int64_t count; double val; uint64_t key; } lvl;

typedef struct dict {
  char     *txt;              /* labels, NUL-terminated */
  size_t    txt_len, txt_cap;
  lvl      *e;                /* n entries, index = code */
  size_t    n, cap;
  uint32_t *tab;              /* code + 1, 0 empty; tab_cap a power of 2 */
  size_t    tab_cap;
} dict;

static void dict_free(dict *d)
{
  fly_free(d->txt);
  fly_free(d->e);
  fly_free(d->tab);
  memset(d, 0, sizeof *d);
}

static int dict_init(dict *d)
{
  memset(d, 0, sizeof *d);
  d->tab_cap = 16;
  d->tab = fly_alloc_array(d->tab_cap, sizeof *d->tab);
  return d->tab != NULL;
}

/* Up to 8 bytes of s[0..n) in one number, with no byte outside it read:
 * for 4 <= n <= 8 the first and the last four (together every byte), for
 * n < 4 bytes 0, n/2 and n-1 (every byte), for longer texts their first
 * and last four only.  Two texts of one length <= 8 with one key are the
 * same text (the typing of categorical cells, a short label each, then
 * compares no bytes). */
static inline uint64_t short_key(const char *s, size_t n)
{
  uint32_t a, b;
  if( n >= 4 ){
    memcpy(&a, s, 4);
    memcpy(&b, s + n - 4, 4);
    return (uint64_t)a | (uint64_t)b << 32;
  }
  if( n == 0 ) return 0;
  return (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[n / 2] << 8 |
         (uint64_t)(unsigned char)s[n - 1] << 16;
}

/* The table slot to start probing at for a text of length n and short key
 * k (a multiplicative hash; longer texts add XXH3 of every byte). */
static size_t hash_of(const char *s, size_t n, uint64_t k)
{
  uint64_t x = (k ^ (uint64_t)n << 59) * UINT64_C(0x9E3779B97F4A7C15);
  if( n > 8 ) x ^= XXH3_64bits(s, n);
  return (size_t)(x >> 32 ^ x);
}

/* Text s[0..n), of short key k, in d: its code + 1, or 0 (then *slot is
 * where to insert).  Reads s only when n > 8. */
static uint32_t dict_find(const dict *d, const char *s, size_t n, uint64_t k,
                          size_t *slot)
{
  size_t m = d->tab_cap - 1, h = hash_of(s, n, k) & m;
  for(;; h = (h + 1) & m){
    uint32_t c = d->tab[h];
    if( c == 0 ){ *slot = h; return 0; }
    const lvl *e = &d->e[c - 1];
    if( e->len == n && e->key == k && (n <= 8 || memcmp(d->txt + e->off, s, n) == 0) )
      return c;
  }
}

static void *grow_to(void *p, size_t *cap, size_t need, size_t size)
{
  size_t n = *cap ? *cap : 16;
  void *q;
  if( need <= *cap ) return p;
  while( n < need ){ if( n > SIZE_MAX / 4 ) return NULL; n *= 2; }
  q = fly_realloc_array(p, n, size);
  if( q ) *cap = n;
  return q;
}

/* Add text s[0..n) of short key k (absent; slot from dict_find) with value
 * val.  Returns its code, or -1 out of memory. */
static int64_t dict_add(dict *d, const char *s, size_t n, uint64_t k,
                        size_t slot, double val)
{
  char *t;
  lvl *e;
  if( d->n >= UINT32_MAX - 1 ) return -1;
  if( !(t = grow_to(d->txt, &d->txt_cap, d->txt_len + n + 1, 1)) ) return -1;
  d->txt = t;
  if( !(e = grow_to(d->e, &d->cap, d->n + 1, sizeof *e)) ) return -1;
  d->e = e;
  memcpy(d->txt + d->txt_len, s, n);
  d->txt[d->txt_len + n] = 0;
  e[d->n] = (lvl){ d->txt_len, n, 1, val, k };
  d->txt_len += n + 1;
  d->tab[slot] = (uint32_t)++d->n;
  if( 2 * d->n >= d->tab_cap ){            /* keep the load under 1/2 */
    size_t cap = d->tab_cap * 2, m = cap - 1;
    uint32_t *tab = fly_alloc_array(cap, sizeof *tab);
    if( !tab ) return -1;
    for(size_t c = 0; c < d->n; c++){
      size_t h = hash_of(d->txt + e[c].off, e[c].len, e[c].key) & m;
      while( tab[h] ) h = (h + 1) & m;
      tab[h] = (uint32_t)(c + 1);
    }
    fly_free(d->tab);
    d->tab = tab;
    d->tab_cap = cap;
  }
  return (int64_t)d->n - 1;
}

/* ---- shared level index ---------------------------------------------- */

/* A column's texts (text -> code) in tables the parse threads read while
 * the typing thread adds to them (parallel ingest only): open addressing,
 * a slot holding the text's key, length, copy (texts over 8 bytes) and
 * code, so a probe reads one slot; a slot's code is stored (release) after
 * the rest, so a reader (acquire) that finds a code finds its text, and
 * one that finds an empty slot has a text not yet added, or not kept,
 * which the typing thread then handles.  Codes below SH_LEVELS are in the
 * small table; a categorical column's codes from SH_LEVELS to
 * SH_BIG_LEVELS in a big one, made when the first such code is added
 * (published, release, once its memory is ready: pages untouched until
 * written, so memory follows the levels added).  A text's code puts it in
 * one table only, so a lookup that ends on an empty slot of the small
 * table goes on in the big one. */
#define SH_LEVELS     1024
#define SH_SLOTS      (2 * SH_LEVELS)
#define SH_BIG_LEVELS ((size_t)1 << 16)
#define SH_BIG_SLOTS  (2 * SH_BIG_LEVELS)
typedef struct shslot {
  atomic_uint code1;          /* code + 1, 0: empty */
  uint32_t    len;
  uint64_t    key;            /* short_key */
  char       *txt;            /* len > 8: a copy of the text */
} shslot;
typedef struct shidx {
  shslot           *small;    /* SH_SLOTS, codes [0, SH_LEVELS) */
  _Atomic(shslot *) big;      /* NULL, or SH_BIG_SLOTS, codes [SH_LEVELS,
                                 SH_BIG_LEVELS) */
} shidx;

static int sh_init(shidx *h)
{
  atomic_init(&h->big, NULL);
  if( !(h->small = fly_alloc_array(SH_SLOTS, sizeof *h->small)) ) return 0;
  for(size_t i = 0; i < SH_SLOTS; i++) atomic_init(&h->small[i].code1, 0);
  return 1;
}

static void sh_free(shidx *h)
{
  shslot *g = atomic_load_explicit(&h->big, memory_order_relaxed);
  if( h->small ) for(size_t i = 0; i < SH_SLOTS; i++) fly_free(h->small[i].txt);
  fly_free(h->small);
  if( g ){
    for(size_t i = 0; i < SH_BIG_SLOTS; i++) fly_free(g[i].txt);
    fly_free_untouched(g);
  }
  memset(h, 0, sizeof *h);
}

/* Text s[0..n) (short key k) is code `code` of its column (the typing
 * thread, once per code); cat: the column is categorical (else codes from
 * SH_LEVELS on are not kept).  0: out of memory. */
static int sh_add(shidx *h, int64_t code, const char *s, size_t n, uint64_t k,
                  int cat)
{
  shslot *t = h->small, *e;
  size_t m = SH_SLOTS - 1, i;
  if( !t || code >= (int64_t)SH_BIG_LEVELS || n > UINT32_MAX ) return 1;
  if( code >= SH_LEVELS ){
    if( !cat ) return 1;
    t = atomic_load_explicit(&h->big, memory_order_relaxed);
    if( !t ){                       /* zero pages: every slot empty */
      if( !(t = fly_alloc_untouched(SH_BIG_SLOTS, sizeof *t)) ) return 0;
      atomic_store_explicit(&h->big, t, memory_order_release);
    }
    m = SH_BIG_SLOTS - 1;
  }
  i = hash_of(s, n, k) & m;
  while( atomic_load_explicit(&t[i].code1, memory_order_relaxed) ) i = (i + 1) & m;
  e = &t[i];
  if( n > 8 ){
    if( !(e->txt = fly_alloc_array(n, 1)) ) return 0;
    memcpy(e->txt, s, n);
  }
  e->key = k;
  e->len = (uint32_t)n;
  atomic_store_explicit(&e->code1, (unsigned)code + 1, memory_order_release);
  return 1;
}

/* The code of text s[0..n) (short key k, hash x) in table t of `slots`
 * slots, or -1: an empty slot first. */
static int64_t sh_probe(const shslot *t, size_t slots, const char *s,
                        size_t n, uint64_t k, size_t x)
{
  size_t m = slots - 1, i = x & m;
  for(;; i = (i + 1) & m){
    unsigned c = atomic_load_explicit(&t[i].code1, memory_order_acquire);
    if( c == 0 ) return -1;
    if( t[i].key == k && t[i].len == n
        && (n <= 8 || memcmp(t[i].txt, s, n) == 0) )
      return (int64_t)c - 1;
  }
}

/* The code of text s[0..n) (short key k) in h, or -1 if not there (yet). */
static int64_t sh_find(const shidx *h, const char *s, size_t n, uint64_t k)
{
  size_t x = hash_of(s, n, k);
  int64_t c = sh_probe(h->small, SH_SLOTS, s, n, k, x);
  const shslot *g;
  if( c < 0 && (g = atomic_load_explicit(&h->big, memory_order_acquire)) )
    c = sh_probe(g, SH_BIG_SLOTS, s, n, k, x);
  return c;
}

/* ---- typed columns -------------------------------------------------- */

enum { DECL_NONE, DECL_NUM, DECL_CAT };

/* What a column is, as the parse threads may read it (tcol.mode). */
enum { M_SETTLED = 1, M_TRACK, M_CAT };

/* One CSV column's type and what it takes to change it. */
typedef struct tcol {
  int       cat;        /* 1: categorical: values are codes */
  int       decl;       /* DECL_NONE, DECL_NUM, DECL_CAT */
  int       track;      /* numeric, undeclared: d holds its distinct texts */
  atomic_int mode;      /* M_SETTLED: numeric for good (!cat && !track;
                           never turns back), M_TRACK, M_CAT: written by
                           the typing thread, read by the parse threads */
  shidx     sh;         /* parallel ingest, not M_SETTLED at the start:
                           its texts for the parse threads */
  int64_t   flip;       /* rows [0, flip) hold numbers to re-code */
  size_t    n_num;      /* levels that were numbers when it turned */
  uint64_t *key;        /* n_num: the stored bits of each, sorted ... */
  uint32_t *code;       /* ... with its code */
  dict      d;          /* categorical: its levels; numeric: see track */
} tcol;

/* t's mode, from cat and track (tcol.mode mirrors it for the parse
 * threads; set_mode after each change of either). */
static int mode_of(const tcol *t)
{
  return t->cat ? M_CAT : t->track ? M_TRACK : M_SETTLED;
}

static void set_mode(tcol *t)
{
  atomic_store_explicit(&t->mode, mode_of(t), memory_order_relaxed);
}

/* Does s[0..n) appear in the comma-separated list? */
static int in_list(const char *list, const char *s, size_t n)
{
  const char *p = list;
  if( !list ) return 0;
  for(;;){
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if( k == n && memcmp(p, s, n) == 0 ) return 1;
    if( !e ) return 0;
    p = e + 1;
  }
}

/* Every name of a --categorical / --numeric list is a column. */
static fly_rc check_list(fly_csv *csv, const char *list, const char *opt,
                         fly_err *err)
{
  const char *p = list;
  if( !list ) return FLY_OK;
  for(;;){
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p), j;
    for(j = 0; j < fly_csv_ncols(csv); j++){
      const char *nm = fly_csv_colname(csv, j);
      if( strlen(nm) == k && memcmp(nm, p, k) == 0 ) break;
    }
    if( j == fly_csv_ncols(csv) )
      return fly_fail(err, FLY_RANGE, "%s:1: --%s '%.*s' is not a column of the "
                      "header", fly_csv_path(csv), opt, (int)k, p);
    if( !e ) return FLY_OK;
    p = e + 1;
  }
}

/* Is cell c (k: its short_key) a missing value? */
static int is_na(const fly_ingest_opts *o, const fly_csv_cell *c, uint64_t k)
{
  if( c->n == 0 || (c->n == 2 && k == ('N' | 'A' << 8 | 'A' << 16)) ) return 1;
  return o->na_strings && in_list(o->na_strings, c->s, c->n);
}

static int cmp_pair(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Column t (CSV column col) turns categorical at row `row` on the label
 * why: its tracked numbers become its first levels, to be re-coded in the
 * pages already written.  Two texts of one stored number cannot be told
 * apart there: an error. */
static fly_rc turn_categorical(fly_csv *csv, tcol *t, size_t col, int64_t row,
                               int64_t at, const char *why, fly_err *err)
{
  const char *path = fly_csv_path(csv), *nm = fly_csv_colname(csv, col);
  long long line = (long long)at;
  size_t n = t->d.n;
  uint64_t *pair = NULL;                      /* (bits, code) interleaved */
  fly_rc rc = FLY_OK;

  if( n > 0 ){
    pair = fly_alloc_array(n, 2 * sizeof *pair);
    t->key = fly_alloc_array(n, sizeof *t->key);
    t->code = fly_alloc_array(n, sizeof *t->code);
    if( !pair || !t->key || !t->code ){
      rc = fly_fail(err, FLY_NOMEM, "%s:%lld:%zu: re-coding %zu levels", path,
                    line, col + 1, n);
      goto done;
    }
    for(size_t k = 0; k < n; k++){
      memcpy(&pair[2 * k], &t->d.e[k].val, sizeof(double));
      pair[2 * k + 1] = k;
    }
    qsort(pair, n, 2 * sizeof *pair, cmp_pair);
    for(size_t k = 0; k < n; k++){
      if( k > 0 && pair[2 * k] == pair[2 * k - 2] ){
        const lvl *a = &t->d.e[pair[2 * k - 1]], *b = &t->d.e[pair[2 * k + 1]];
        rc = fly_fail(err, FLY_PARSE, "%s:%lld:%zu: column '%s' turns categorical "
                      "at '%s', but the rows above hold '%s' and '%s', the same "
                      "number as stored: declare it with --categorical %s",
                      path, line, col + 1, nm, why, t->d.txt + a->off,
                      t->d.txt + b->off, nm);
        goto done;
      }
      t->key[k] = pair[2 * k];
      t->code[k] = (uint32_t)pair[2 * k + 1];
    }
  }
  t->cat = 1;
  t->track = 0;
  set_mode(t);
  t->flip = row;
  t->n_num = n;
  /* its texts the shared index did not keep while it was numeric */
  for(size_t c = SH_LEVELS; c < n && rc == FLY_OK; c++){
    const lvl *e = &t->d.e[c];
    if( !sh_add(&t->sh, (int64_t)c, t->d.txt + e->off, e->len, e->key, 1) )
      rc = fly_fail(err, FLY_NOMEM, "%s:%lld:%zu: the index of %zu levels",
                    path, line, col + 1, n);
  }
done:
  fly_free(pair);
  return rc;
}

/* The stored value of cell c of CSV column col in *v: a number (rounded to
 * prec), a level code, or NaN for a missing cell; the column's type may
 * change (row: rows stored so far). */
static fly_rc typed_value(fly_csv *csv, const fly_ingest_opts *o, tcol *t,
                          size_t col, const fly_csv_cell *c, int64_t row,
                          int64_t line, double *v, fly_err *err)
{
  size_t slot;
  uint32_t hit;
  int64_t code;
  uint64_t k = short_key(c->s, c->n);

  if( is_na(o, c, k) ){ *v = NAN; return FLY_OK; }
  if( !t->cat ){
    if( c->num ){
      double x = c->v;
      if( o->prec == FLY_PREC_F32 ){
        float f = (float)x;
        if( !isfinite(f) )
          return fly_fail(err, FLY_RANGE, "%s:%lld:%zu: %g does not fit in f32 "
                          "(use --precision f64)", fly_csv_path(csv),
                          (long long)line, col + 1, x);
        x = (double)f;
      }
      *v = x;
      if( !t->track ) return FLY_OK;
      if( (hit = dict_find(&t->d, c->s, c->n, k, &slot)) ){
        t->d.e[hit - 1].count++;
        return FLY_OK;
      }
      if( t->d.n >= FLY_INGEST_TRACK_LEVELS ){  /* numeric, surely */
        t->track = 0;
        set_mode(t);
        dict_free(&t->d);
        return FLY_OK;
      }
      if( (code = dict_add(&t->d, c->s, c->n, k, slot, x)) < 0
          || !sh_add(&t->sh, code, c->s, c->n, k, 0) )
        goto nomem;
      return FLY_OK;
    }
    char txt[48];
    const char *nm = fly_csv_colname(csv, col);
    snprintf(txt, sizeof txt, "%.*s%s", c->n > 40 ? 40 : (int)c->n, c->s,
             c->n > 40 ? "..." : "");
    if( t->decl == DECL_NUM )
      return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: '%s' is not a number "
                      "(column '%s' is declared --numeric)", fly_csv_path(csv),
                      (long long)line, col + 1, txt, nm);
    if( !t->track )
      return fly_fail(err, FLY_PARSE, "%s:%lld:%zu: '%s' is not a number, and "
                      "column '%s' held more than %d distinct numbers above it: "
                      "declare it with --categorical %s, or name '%s' in "
                      "--na-strings if it marks a missing value",
                      fly_csv_path(csv), (long long)line, col + 1,
                      txt, nm, FLY_INGEST_TRACK_LEVELS, nm, txt);
    fly_rc rc = turn_categorical(csv, t, col, row, line, txt, err);
    if( rc ) return rc;
  }
  if( (hit = dict_find(&t->d, c->s, c->n, k, &slot)) ){
    t->d.e[hit - 1].count++;
    *v = (double)(hit - 1);
    return FLY_OK;
  }
  if( o->prec == FLY_PREC_F32 && t->d.n >= ((size_t)1 << 24) )
    return fly_fail(err, FLY_RANGE, "%s:%lld:%zu: column '%s' has more than 2^24 "
                    "levels, beyond f32 codes (use --precision f64)",
                    fly_csv_path(csv), (long long)line, col + 1,
                    fly_csv_colname(csv, col));
  if( (code = dict_add(&t->d, c->s, c->n, k, slot, NAN)) < 0
      || !sh_add(&t->sh, code, c->s, c->n, k, 1) )
    goto nomem;
  *v = (double)code;
  return FLY_OK;
nomem:
  return fly_fail(err, FLY_NOMEM, "%s:%lld:%zu: out of memory for the levels "
                  "of column '%s'", fly_csv_path(csv), (long long)line,
                  col + 1, fly_csv_colname(csv, col));
}

/* The code of stored number x of column t, which turned categorical. */
static double recode(const tcol *t, double x)
{
  uint64_t k;
  size_t lo = 0, hi = t->n_num;
  if( isnan(x) ) return x;
  memcpy(&k, &x, sizeof k);
  while( lo < hi ){
    size_t mid = lo + (hi - lo) / 2;
    if( t->key[mid] < k ) lo = mid + 1;
    else hi = mid;
  }
  if( FLY_NEVER(lo == t->n_num || t->key[lo] != k) ) return NAN;
  return (double)t->code[lo];
}

/* The fix-up pass, inside the transaction: the pages holding rows above
 * the row where a column turned categorical get their numbers re-coded,
 * and the statistics are recomputed from all pages (they saw numbers).
 * Cost: one decode of every page, one encode of each re-coded one; one
 * page in memory. */
static fly_rc fix_pages(fly_db *db, int64_t ds, fly_pagewriter *pw,
                        const tcol *tc, const size_t *src, size_t width,
                        int64_t n_rows, fly_dataset_stats **pst, fly_err *err)
{
  fly_pages *pg = NULL;
  fly_dataset_stats *st = NULL;
  double *rows = NULL;
  int64_t last = 0;
  fly_rc rc;

  for(size_t j = 0; j < width; j++)
    if( src[j] != (size_t)-1 && tc[src[j]].flip > last ) last = tc[src[j]].flip;
  rc = fly_dataset_set_counts(db, ds, n_rows, fly_pagewriter_pages(pw),
                              fly_pagewriter_raw_bytes(pw),
                              fly_pagewriter_stored_bytes(pw), err);
  if( rc == FLY_OK ) rc = fly_pages_open(db, FLY_TABLE_DATA, ds, 0, &pg, err);
  if( rc == FLY_OK ) rc = fly_dataset_stats_new(width, &st, err);
  if( rc ) goto done;
  const fly_pages_info *in = fly_pages_info_of(pg);
  rows = fly_alloc_array((size_t)in->page_rows, width * sizeof *rows);
  if( !rows ){ rc = fly_fail(err, FLY_NOMEM, "re-coding pages"); goto done; }
  for(int64_t p = 0; p < in->n_pages; p++){
    size_t n;
    int64_t r0 = p * in->page_rows;
    if( (rc = fly_pages_read_page(pg, p, rows, &n, err)) ) goto done;
    if( r0 < last ){
      for(size_t j = 0; j < width; j++){
        if( src[j] == (size_t)-1 ) continue;
        const tcol *t = &tc[src[j]];
        for(size_t i = 0; i < n && r0 + (int64_t)i < t->flip; i++)
          rows[i * width + j] = recode(t, rows[i * width + j]);
      }
      if( (rc = fly_pagewriter_rewrite(pw, p, rows, n, err)) ) goto done;
    }
    fly_dataset_stats_add(st, rows, n);
  }
  fly_dataset_stats_free(*pst);
  *pst = st;
  st = NULL;
done:
  fly_free(rows);
  fly_pages_close(pg);
  fly_dataset_stats_free(st);
  return rc;
}

/* The column types of the header, declared or to detect. */
static fly_rc type_columns(fly_csv *csv, const fly_ingest_opts *o, tcol *tc,
                           fly_err *err)
{
  fly_rc rc = check_list(csv, o->categorical, "categorical", err);
  if( rc == FLY_OK ) rc = check_list(csv, o->numeric, "numeric", err);
  for(size_t j = 0; rc == FLY_OK && j < fly_csv_ncols(csv); j++){
    const char *nm = fly_csv_colname(csv, j);
    size_t ln = strlen(nm);
    tcol *t = &tc[j];
    if( !dict_init(&t->d) ) return fly_fail(err, FLY_NOMEM, "ingest");
    if( in_list(o->categorical, nm, ln) ){
      if( in_list(o->numeric, nm, ln) )
        return fly_fail(err, FLY_MISUSE, "column '%s' is declared both "
                        "--categorical and --numeric", nm);
      t->decl = DECL_CAT;
      t->cat = 1;
    }else if( in_list(o->numeric, nm, ln) ){
      t->decl = DECL_NUM;
    }else{
      t->track = 1;
    }
    atomic_init(&t->mode, mode_of(t));
  }
  return rc;
}

/* The categorical columns' labels and counts into cols (by stored column,
 * src as in fly_ingest_csv), pointing into *plab and *pcnt (allocated). */
static fly_rc put_levels(const tcol *tc, size_t ncsv, const size_t *src,
                         size_t width, fly_dataset_column *cols,
                         const char ***plab, int64_t **pcnt, fly_err *err)
{
  size_t n_lab = 0;
  const char **labels;
  int64_t *counts;
  for(size_t j = 0; j < ncsv; j++) if( tc[j].cat ) n_lab += tc[j].d.n;
  *plab = labels = fly_alloc_array(n_lab + 1, sizeof *labels);
  *pcnt = counts = fly_alloc_array(n_lab + 1, sizeof *counts);
  if( !labels || !counts )
    return fly_fail(err, FLY_NOMEM, "ingest: %zu level labels", n_lab);
  n_lab = 0;
  for(size_t j = 0; j < width; j++){
    if( src[j] == (size_t)-1 || !tc[src[j]].cat ) continue;
    const dict *d = &tc[src[j]].d;
    cols[j].categorical = 1;
    cols[j].n_levels = d->n;
    cols[j].levels = labels + n_lab;
    cols[j].level_counts = counts + n_lab;
    for(size_t c = 0; c < d->n; c++, n_lab++){
      labels[n_lab] = d->txt + d->e[c].off;
      counts[n_lab] = d->e[c].count;
    }
  }
  return FLY_OK;
}

/* ---- the row loop --------------------------------------------------- */

/* What it takes to store one record. */
typedef struct rowput {
  fly_csv               *csv;       /* the header's reader: path, names */
  const fly_ingest_opts *o;
  tcol                  *tc;        /* ncsv */
  size_t                 ncsv, width;
  const size_t          *pos;       /* CSV column j -> stored column pos[j] */
  double                *row;       /* width: scratch */
  fly_dataset_stats     *stats;
  fly_pagewriter        *pw;
  int                    plain;     /* a settled number is its value */
} rowput;

/* Record number n (0-based), cells[0..ncsv) starting on line `line`: type
 * its cells into row[0..width) as stored. */
static fly_rc type_row(rowput *x, const fly_csv_cell *cells, int64_t line,
                       int64_t n, double *row, fly_err *err)
{
  fly_rc rc;
  if( x->o->intercept ) row[0] = 1.0;
  for(size_t j = 0; j < x->ncsv; j++){
    const fly_csv_cell *c = &cells[j];
    const tcol *t = &x->tc[j];
    double *v = &row[x->pos[j]];
    if( x->plain && c->num && !t->cat && !t->track )
      *v = c->v;                            /* a numeric column, settled */
    else if( (rc = typed_value(x->csv, x->o, &x->tc[j], j, c, n, line, v, err)) )
      return rc;
  }
  return FLY_OK;
}

/* Add a typed row (from line `line`) to the pages. */
static fly_rc store_row(rowput *x, const double *row, int64_t line, fly_err *err)
{
  fly_rc rc;
  if( (rc = fly_pagewriter_add(x->pw, row, err)) )
    fly_err_prefix(err, "%s:%lld", fly_csv_path(x->csv), (long long)line);
  return rc;
}

static fly_rc put_row(rowput *x, const fly_csv_cell *cells, int64_t line,
                      int64_t n, fly_err *err)
{
  fly_rc rc = type_row(x, cells, line, n, x->row, err);
  if( rc ) return rc;
  fly_dataset_stats_add(x->stats, x->row, 1);
  return store_row(x, x->row, line, err);
}

/* The rows of one chunk of a parallel ingest, in the chunk's slot.
 *
 * Pre-typing (pre_record, on the worker that parsed the chunk, while its
 * cells are in that worker's cache).  At the chunk's first record the
 * worker fixes each column's mode for the chunk: settled columns (ty_*)
 * take a number's value; the others (un_*, tracked numbers and
 * categorical columns) look their texts up in the column's shared index
 * (shidx), and take the number, or the code, found; their codes go to
 * `code` (-1: a missing cell), for the typing thread to count; a missing
 * cell is NaN in any column.  A record with anything else (a text in a
 * settled column, a text not in the index, a text in a tracked column, an
 * f32 overflow) is flagged, and the typing thread types it in full from its cells, as it
 * does every record of a chunk parsed before it was ready (pre 0), and
 * of a chunk whose modes changed since (un_mode): a column's codes never
 * change and a settled column stays settled, so what a worker stores for
 * a record of unchanged modes is what type_row would.
 *
 * Pages: the rows carried over from the chunks above (fewer than a page)
 * and the chunk's first rows are copied into `first`, its first page; the
 * next pages are in rows; the rest is carried to the next chunk.  The
 * line of each page's last row (a failure to store a page is reported
 * there, as fly_pagewriter_add would); the pages encoded by a worker (enc,
 * blob), inserted in file order by a worker. */
typedef struct batch {
  double        *rows;        /* cap rows of width values: the chunk's */
  unsigned char *flag;        /* cap: 1 when the record needs type_row */
  size_t         cap;
  int32_t       *code;        /* the chunk's rows * n_un codes, code_cap */
  size_t         code_cap;
  int            pre;         /* the worker pre-typed the chunk */
  size_t         n_ty, n_un;  /* settled columns (ty_col, at ty_pos) and
                                 the others (un_col, at un_pos, of mode
                                 un_mode), ncsv each */
  size_t        *ty_col, *ty_pos, *un_col, *un_pos;
  int           *un_mode;
  double        *first;       /* page_rows rows: the chunk's first page */
  const double **page;        /* cap_pages: each page's first row */
  int64_t       *last_line;   /* cap_pages */
  fly_page_blob *blob;        /* cap_pages */
  unsigned char *enc;         /* cap_pages encoded pages, enc_bound apart */
  size_t         cap_pages, n_pages;
  unsigned char *scratch;     /* f32 packing of one page, or NULL */
} batch;

typedef struct pstage {
  rowput     *x;
  batch      *b;              /* fly_chunks_slots(threads) */
  size_t      n_b;
  size_t      page_rows, enc_bound;
  atomic_int  ready;          /* x is filled in: chunks parsed from now on
                                 are pre-typed */
} pstage;

/* The parse threads and their after-stage.  They may start before the
 * database is ready (ps.x's page writer, page_rows and enc_bound set
 * later, then ps.ready): the stage runs only on chunks handed back, after
 * the row loop has filled them in. */
typedef struct par {
  fly_chunks *q;
  pstage      ps;
} par;

static void batch_free(batch *b)
{
  fly_free(b->rows);
  fly_free(b->flag);
  fly_free(b->code);
  fly_free(b->ty_col);
  fly_free(b->ty_pos);
  fly_free(b->un_col);
  fly_free(b->un_pos);
  fly_free(b->un_mode);
  fly_free(b->first);
  fly_free(b->page);
  fly_free(b->last_line);
  fly_free(b->blob);
  fly_free(b->enc);
  fly_free(b->scratch);
  memset(b, 0, sizeof *b);
}

/* Room in b for `rows` rows of width values (and their flags).  0: out of
 * memory. */
static int batch_rows(batch *b, size_t rows, size_t width)
{
  size_t n = b->cap ? b->cap : 1024;
  if( rows <= b->cap ) return 1;
  while( n < rows ) n *= 2;
  double *r = fly_realloc_array(b->rows, n, width * sizeof *r);
  if( r ) b->rows = r;
  unsigned char *f = r ? fly_realloc_array(b->flag, n, 1) : NULL;
  if( f ) b->flag = f;
  if( !r || !f ) return 0;
  b->cap = n;
  return 1;
}

/* Room in b for `pages` pages and the first page.  0: out of memory. */
static int batch_pages(const pstage *ps, batch *b, size_t pages)
{
  size_t width = ps->x->width;
  if( !b->first
      && !(b->first = fly_alloc_array(ps->page_rows, width * sizeof *b->first)) )
    return 0;
  if( pages > b->cap_pages ){
    fly_free(b->page);
    fly_free(b->last_line);
    fly_free(b->blob);
    fly_free(b->enc);
    b->page = fly_alloc_array(pages, sizeof *b->page);
    b->last_line = fly_alloc_array(pages, sizeof *b->last_line);
    b->blob = fly_alloc_array(pages, sizeof *b->blob);
    b->enc = fly_alloc_array(pages, ps->enc_bound);
    b->cap_pages = b->page && b->last_line && b->blob && b->enc ? pages : 0;
    if( !b->cap_pages ) return 0;
  }
  size_t sb = fly_pagewriter_scratch_bytes(ps->x->pw);
  if( sb && !b->scratch && !(b->scratch = fly_alloc_array(sb, 1)) ) return 0;
  return 1;
}

/* The chunk's column modes, fixed at its first record (see batch). */
static int pre_columns(const rowput *x, batch *b)
{
  size_t nc = x->ncsv;
  if( !b->ty_col ){
    b->ty_col = fly_alloc_array(nc, sizeof *b->ty_col);
    b->ty_pos = fly_alloc_array(nc, sizeof *b->ty_pos);
    b->un_col = fly_alloc_array(nc, sizeof *b->un_col);
    b->un_pos = fly_alloc_array(nc, sizeof *b->un_pos);
    b->un_mode = fly_alloc_array(nc, sizeof *b->un_mode);
    if( !b->ty_col || !b->ty_pos || !b->un_col || !b->un_pos || !b->un_mode )
      return 0;
  }
  b->n_ty = b->n_un = 0;
  for(size_t j = 0; j < nc; j++){
    int m = atomic_load_explicit(&x->tc[j].mode, memory_order_relaxed);
    if( m == M_SETTLED ){
      b->ty_col[b->n_ty] = j;
      b->ty_pos[b->n_ty++] = x->pos[j];
    }else{
      b->un_col[b->n_un] = j;
      b->un_pos[b->n_un] = x->pos[j];
      b->un_mode[b->n_un++] = m;
    }
  }
  return 1;
}

/* A cell that is no number in a settled column: if it is missing, NaN
 * into *v (as typed_value stores it) and 1; else 0 (the record is typed
 * in full, which reports it). */
static int pre_missing(const rowput *x, const fly_csv_cell *c, double *v)
{
  if( !is_na(x->o, c, short_key(c->s, c->n)) ) return 0;
  *v = NAN;
  return 1;
}

/* Number v as stored (f32: rounded; *bad set if it overflows). */
static inline double pre_num(double v, int f32, int *bad)
{
  if( !f32 ) return v;
  float f = (float)v;
  *bad |= !isfinite(f);
  return (double)f;
}

/* The chunks' record hook: pre-type record i of the chunk in slot (see
 * batch).  Pre-typing needs the --na-strings texts to be no numbers and
 * is off when there are any; it needs the column texts' shared indexes,
 * which a column settled from the start does without. */
static fly_rc pre_record(void *ctx, size_t slot, size_t i,
                         const fly_csv_cell *cells, fly_err *err)
{
  pstage *ps = ctx;
  batch *b = &ps->b[slot];
  const rowput *x;
  if( i == 0 ){
    b->pre = atomic_load_explicit(&ps->ready, memory_order_acquire)
             && !ps->x->o->na_strings;
    if( b->pre && !pre_columns(ps->x, b) ) goto nomem;
  }
  if( !b->pre ) return FLY_OK;
  x = ps->x;
  if( !batch_rows(b, i + 1, x->width) ) goto nomem;
  if( (i + 1) * b->n_un > b->code_cap ){
    size_t n = 2 * (i + 1) * b->n_un;
    int32_t *c = fly_realloc_array(b->code, n, sizeof *c);
    if( !c ) goto nomem;
    b->code = c;
    b->code_cap = n;
  }
  double *row = b->rows + i * x->width;
  int f32 = x->o->prec == FLY_PREC_F32, bad = 0;
  if( x->o->intercept ) row[0] = 1.0;
  for(size_t k = 0; k < b->n_ty; k++){
    const fly_csv_cell *c = &cells[b->ty_col[k]];
    double *v = &row[b->ty_pos[k]];
    if( c->num ) *v = pre_num(c->v, f32, &bad);
    else bad |= !pre_missing(x, c, v);
  }
  int32_t *code = b->code + i * b->n_un;
  for(size_t k = 0; k < b->n_un && !bad; k++){
    const fly_csv_cell *c = &cells[b->un_col[k]];
    uint64_t key = short_key(c->s, c->n);
    double *v = &row[b->un_pos[k]];
    int64_t got;
    if( is_na(x->o, c, key) ){
      *v = NAN;
      code[k] = -1;
      continue;
    }
    if( b->un_mode[k] == M_TRACK && !c->num ){ bad = 1; break; }
    got = sh_find(&x->tc[b->un_col[k]].sh, c->s, c->n, key);
    if( got < 0 ){ bad = 1; break; }
    code[k] = (int32_t)got;
    *v = b->un_mode[k] == M_CAT ? (double)got : pre_num(c->v, f32, &bad);
  }
  b->flag[i] = (unsigned char)bad;
  return FLY_OK;
nomem:
  return fly_fail(err, FLY_NOMEM, "ingest: rows of a chunk");
}

/* Do the modes of b's chunk still hold?  (The typing thread.) */
static int modes_hold(const rowput *x, const batch *b)
{
  for(size_t k = 0; k < b->n_un; k++){
    if( mode_of(&x->tc[b->un_col[k]]) != b->un_mode[k] ) return 0;
  }
  return 1;
}

/* Record i of b's chunk, pre-typed and not flagged: count its codes. */
static void count_rest(rowput *x, const batch *b, size_t i)
{
  const int32_t *code = b->code + i * b->n_un;
  for(size_t k = 0; k < b->n_un; k++)
    if( code[k] >= 0 ) x->tc[b->un_col[k]].d.e[code[k]].count++;
}

/* The stage's work: encode the chunk's pages (on a worker); a page stored
 * raw stays in the batch's rows, which live until the chunk is inserted. */
static fly_rc stage_encode(void *ctx, size_t slot, fly_err *err)
{
  const pstage *ps = ctx;
  batch *b = &ps->b[slot];
  fly_rc rc = FLY_OK;
  for(size_t i = 0; i < b->n_pages && rc == FLY_OK; i++)
    rc = fly_pagewriter_encode_in(ps->x->pw, b->page[i], b->scratch,
                                  b->enc + i * ps->enc_bound, &b->blob[i], err);
  return rc;
}

/* The stage's commit: insert the chunk's pages (in file order). */
static fly_rc stage_insert(void *ctx, size_t slot, fly_err *err)
{
  const pstage *ps = ctx;
  batch *b = &ps->b[slot];
  for(size_t i = 0; i < b->n_pages; i++){
    fly_rc rc = fly_pagewriter_put(ps->x->pw, &b->blob[i], err);
    if( rc ){
      fly_err_prefix(err, "%s:%lld", fly_csv_path(ps->x->csv),
                     (long long)b->last_line[i]);
      return rc;
    }
  }
  return FLY_OK;
}

/* Start parsing x->csv on `threads` threads; x (borrowed until par_stop)
 * may be filled in later, up to the first fly_chunks_next. */
static fly_rc par_start(par *p, rowput *x, int threads,
                        const volatile sig_atomic_t *interrupt, fly_err *err)
{
  memset(p, 0, sizeof *p);
  atomic_init(&p->ps.ready, 0);
  p->ps.x = x;
  p->ps.n_b = fly_chunks_slots(threads);
  p->ps.b = fly_alloc_array(p->ps.n_b, sizeof *p->ps.b);
  if( !p->ps.b )
    return fly_fail(err, FLY_NOMEM, "ingest: buffers for %d threads", threads);
  fly_chunks_stage stage = { stage_encode, stage_insert, pre_record, &p->ps };
  return fly_chunks_start(x->csv, threads, interrupt, &stage, &p->q, err);
}

/* Stop and join the threads and free the batches.  Idempotent. */
static void par_stop(par *p)
{
  fly_chunks_stop(p->q);
  p->q = NULL;
  if( p->ps.b ) for(size_t j = 0; j < p->ps.n_b; j++) batch_free(&p->ps.b[j]);
  fly_free(p->ps.b);
  p->ps.b = NULL;
}

int fly_ingest_default_threads(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > FLY_INGEST_MAX_THREADS ? FLY_INGEST_MAX_THREADS : (int)n;
}

/* The records of x->csv parsed on `threads` threads (io/chunks.h; p: the
 * threads, started here unless par_start already did, stopped here), typed
 * here in file order, their full pages encoded on the parse threads and
 * inserted in file order (the chunks' after-stage); the rows of the last
 * partial page are added to the page writer here at the end.  The same
 * rows, values, pages and first error as the one-thread loop: a failure
 * to store a page is about rows above the one being typed, so it comes
 * first.  *pn: records typed, *bytes: input consumed. */
static fly_rc put_chunks(rowput *x, par *p, int threads, const char *name,
                         int64_t *pn, uint64_t *bytes, fly_err *err)
{
  const fly_ingest_opts *o = x->o;
  const fly_chunk *ch;
  fly_chunks *q;
  pstage *ps = &p->ps;
  double *carry = NULL;        /* < page_rows rows of the page being filled */
  size_t n_carry = 0, width = x->width, row_bytes = width * sizeof *carry;
  int64_t n = 0, line = fly_csv_next_line(x->csv);
  fly_rc rc = FLY_OK, rs;

  if( !p->q && (rc = par_start(p, x, threads, o->interrupt, err)) ) goto done;
  q = p->q;
  ps->page_rows = (size_t)fly_pagewriter_page_rows(x->pw);
  ps->enc_bound = fly_pagewriter_enc_bound(x->pw);
  atomic_store_explicit(&ps->ready, 1, memory_order_release);
  carry = fly_alloc_array(ps->page_rows, row_bytes);
  if( !carry ){
    rc = fly_fail(err, FLY_NOMEM, "ingest: a page of %zu rows", ps->page_rows);
    goto done;
  }
  while( (rc = fly_chunks_next(q, &ch, err)) == FLY_ROW ){
    batch *b = &ps->b[ch->slot];
    size_t i, pr = ps->page_rows, np, head;
    int pre = b->pre && modes_hold(x, b);
    if( !b->pre && !batch_rows(b, ch->rows, width) ){
      rc = fly_fail(err, FLY_NOMEM, "ingest: %zu rows", ch->rows);
      goto done;
    }
    for(i = 0; i < ch->rows && !interrupted(o); i++, n++){
      line = ch->lines[i];
      if( pre && !b->flag[i] ){
        count_rest(x, b, i);
        rc = FLY_OK;
      }else{
        rc = type_row(x, ch->cells + i * x->ncsv, line, n, b->rows + i * width,
                      err);
        pre = pre && modes_hold(x, b);
      }
      if( rc ){
        if( (rs = fly_chunks_finish(q, err)) ) rc = rs;
        goto done;
      }
      if( ((n + 1) & 4095) == 0 && o->progress )
        o->progress(o->progress_ctx, name, n + 1, ch->end_bytes);
    }
    /* the rows typed (all of them unless the ingest is failing) */
    fly_dataset_stats_add(x->stats, b->rows, i);
    np = (n_carry + i) / pr;
    if( !batch_pages(ps, b, np) ){
      rc = fly_fail(err, FLY_NOMEM, "ingest: %zu pages", np);
      goto done;
    }
    b->n_pages = np;
    if( np == 0 ){
      if( i > 0 ) memcpy(carry + n_carry * width, b->rows, i * row_bytes);
      n_carry += i;                     /* (rows is NULL before any row) */
    }else{
      head = pr - n_carry;              /* the chunk's rows in its first page */
      memcpy(b->first, carry, n_carry * row_bytes);
      memcpy(b->first + n_carry * width, b->rows, head * row_bytes);
      for(size_t k = 0; k < np; k++){
        b->page[k] = k ? b->rows + (head + (k - 1) * pr) * width : b->first;
        b->last_line[k] = ch->lines[head + k * pr - 1];
      }
      n_carry = n_carry + i - np * pr;
      memcpy(carry, b->rows + (i - n_carry) * width, n_carry * row_bytes);
    }
    if( interrupted(o) ) break;
    if( ch->rc ){
      /* The rows above the error are stored first, as one thread would:
       * its failure is the first error. */
      if( (rc = fly_chunks_finish(q, err)) == FLY_OK
          && (rc = stage_encode(ps, ch->slot, err)) == FLY_OK
          && (rc = stage_insert(ps, ch->slot, err)) == FLY_OK ){
        rc = ch->rc;
        if( err ) *err = ch->err;
      }
      goto done;
    }
    *bytes = ch->end_bytes;
  }
  if( rc == FLY_DONE ) rc = FLY_OK;
  if( interrupted(o) )
    rc = fly_fail(err, FLY_IO, "interrupted at line %lld of %s: nothing was stored",
                  (long long)line, fly_csv_path(x->csv));
  if( rc ) goto done;
  if( (rc = fly_chunks_finish(q, err)) ) goto done;
  for(size_t j = 0; j < n_carry && rc == FLY_OK; j++)
    rc = fly_pagewriter_add(x->pw, carry + j * width, err);
done:
  par_stop(p);
  fly_free(carry);
  *pn = n;
  return rc;
}

/* Where the rows go: an open database in a transaction (db), or a new one
 * to build privately at tmp (db NULL; path: its name in messages),
 * created and its transaction begun by dest_open.  With parse threads,
 * that happens once they have started, so creating the schema overlaps
 * parsing the first chunks; nothing is stored before it. */
typedef struct dest {
  fly_db     *db;
  const char *tmp, *path;
} dest;

static fly_rc dest_open(dest *d, fly_err *err)
{
  if( d->db ) return FLY_OK;
  errno = 0;
  fly_rc rc = fly_db_open(d->tmp, FLY_DB_CREATE | FLY_DB_FAST, &d->db, err);
  if( rc )
    return fly_fail(err, rc, "cannot create database %s: %s", d->path,
                    errno ? strerror(errno) : "SQLite could not open it");
  return fly_db_begin(d->db, err);
}

/* fly_ingest_csv into d (see dest). */
static fly_rc ingest_rows(dest *d, fly_csv *csv, const fly_ingest_opts *o,
                          fly_ingest_result *res, fly_err *err)
{
  fly_rc rc = FLY_OK;
  fly_db *db = NULL;
  size_t ncsv = fly_csv_ncols(csv), tcol_ = ncsv - 1, width = 0, k;
  size_t *src = NULL;          /* stored column j <- CSV column src[j] */
  size_t *pos = NULL;          /* CSV column j -> stored column pos[j] */
  double *row = NULL;
  fly_csv_cell *cells = NULL;
  tcol *tc = NULL;
  const char **labels = NULL;
  int64_t *lcounts = NULL;
  fly_dataset_column *cols = NULL;
  fly_dataset_stats *stats = NULL;
  fly_pagewriter *pw = NULL;
  int64_t ds = 0, n = 0, page_rows = o->page_rows;
  uint64_t bytes = 0;
  int late = 0;
  char name[256];
  int threads = o->threads > 0 ? o->threads : fly_ingest_default_threads();
  par p;
  rowput rp;

  memset(&p, 0, sizeof p);
  memset(&rp, 0, sizeof rp);
  rp.csv = csv;
  rp.o = o;
  if( o->name ) snprintf(name, sizeof name, "%s", o->name);
  else default_name(fly_csv_path(csv), name, sizeof name);
  if( o->prec != FLY_PREC_F64 && o->prec != FLY_PREC_F32 )
    return fly_fail(err, FLY_MISUSE, "ingest: precision %d is not f64 or f32",
                    o->prec);
  /* rp is filled in below, before the first chunk is taken */
  if( !d->db && threads > 1 && ncsv >= 2
      && (rc = par_start(&p, &rp, threads, o->interrupt, err)) )
    goto done;
  if( (rc = dest_open(d, err)) ) goto done;
  db = d->db;
  if( ncsv < 2 ){
    rc = fly_fail(err, FLY_PARSE, "%s:1: the header has %zu column; need at "
                  "least one feature and a target", fly_csv_path(csv), ncsv);
    goto done;
  }
  if( o->target ){
    for(tcol_ = 0; tcol_ < ncsv; tcol_++)
      if( strcmp(fly_csv_colname(csv, tcol_), o->target) == 0 ) break;
    if( tcol_ == ncsv ){
      rc = fly_fail(err, FLY_RANGE, "%s:1: --target '%s' is not a column of "
                    "the header (first columns: '%s', '%s'%s)", fly_csv_path(csv),
                    o->target, fly_csv_colname(csv, 0), fly_csv_colname(csv, 1),
                    ncsv > 2 ? ", ..." : "");
      goto done;
    }
  }
  width = ncsv + (o->intercept ? 1 : 0);
  if( page_rows == 0 && (rc = fly_ingest_page_rows(db, width, o->prec,
                                                    &page_rows, err)) )
    goto done;
  src = fly_alloc_array(width, sizeof *src);
  pos = fly_alloc_array(ncsv, sizeof *pos);
  row = fly_alloc_array(width, sizeof *row);
  cols = fly_alloc_array(width, sizeof *cols);
  cells = fly_alloc_array(ncsv, sizeof *cells);
  tc = fly_alloc_array(ncsv, sizeof *tc);
  if( !src || !pos || !row || !cols || !cells || !tc ){
    rc = fly_fail(err, FLY_NOMEM, "ingest");
    goto done;
  }
  if( (rc = type_columns(csv, o, tc, err)) ) goto done;
  for(size_t j = 0; threads > 1 && j < ncsv; j++)
    if( atomic_load_explicit(&tc[j].mode, memory_order_relaxed) != M_SETTLED
        && !sh_init(&tc[j].sh) ){
      rc = fly_fail(err, FLY_NOMEM, "ingest");
      goto done;
    }
  if( (rc = fly_dataset_stats_new(width, &stats, err)) ) goto done;
  k = 0;
  if( o->intercept ) src[k++] = (size_t)-1;
  for(size_t j = 0; j < ncsv; j++) if( j != tcol_ ) src[k++] = j;
  src[k++] = tcol_;
  for(size_t j = 0; j < width; j++) if( src[j] != (size_t)-1 ) pos[src[j]] = j;
  for(size_t j = 0; j < width; j++){
    int is_icpt = src[j] == (size_t)-1;
    cols[j].idx = (int64_t)j;
    cols[j].name = is_icpt ? "(Intercept)" : fly_csv_colname(csv, src[j]);
    cols[j].role = is_icpt ? "intercept" : j == width - 1 ? "target" : "feature";
    cols[j].csv_col = is_icpt ? 0 : (int64_t)src[j] + 1;
  }

  fly_dataset_spec spec = { name, fly_csv_path(csv), fly_csv_colname(csv, tcol_),
                            (int64_t)width, o->intercept, page_rows, o->prec };
  if( (rc = fly_dataset_create(db, &spec, &ds, err)) ) goto done;
  rc = fly_pagewriter_open(db, FLY_TABLE_DATA, ds, width, page_rows, o->prec,
                           &pw, err);
  if( rc ) goto done;

  rp = (rowput){ csv, o, tc, ncsv, width, pos, row, stats, pw,
                 /* A number needs no more than its value: f64, and no
                  * number can be an --na-strings text. */
                 o->prec == FLY_PREC_F64 && !o->na_strings };
  if( threads > 1 ){
    rc = put_chunks(&rp, &p, threads, name, &n, &bytes, err);
    if( rc ) goto done;
    rc = FLY_DONE;
  }
  while( threads <= 1 && ((rc = fly_csv_next_cells(csv, cells, err)) == FLY_ROW
                          || interrupted(o)) ){
    if( interrupted(o) ){
      rc = fly_fail(err, FLY_IO, "interrupted at line %lld of %s: nothing was stored",
                    (long long)fly_csv_line(csv), fly_csv_path(csv));
      goto done;
    }
    if( (rc = put_row(&rp, cells, fly_csv_line(csv), n, err)) ) goto done;
    n++;
    if( (n & 4095) == 0 && o->progress )
      o->progress(o->progress_ctx, name, n, fly_csv_bytes(csv));
  }
  if( threads <= 1 ) bytes = fly_csv_bytes(csv);
  if( rc != FLY_DONE ) goto done;
  rc = FLY_OK;
  if( n == 0 ){
    rc = fly_fail(err, FLY_PARSE, "%s: the header has no data rows below it",
                  fly_csv_path(csv));
    goto done;
  }
  if( (rc = fly_pagewriter_finish(pw, err)) ) goto done;
  for(size_t j = 0; j < ncsv; j++) if( tc[j].flip > 0 ) late = 1;
  if( late && (rc = fix_pages(db, ds, pw, tc, src, width, n, &stats, err)) )
    goto done;
  if( (rc = put_levels(tc, ncsv, src, width, cols, &labels, &lcounts, err)) )
    goto done;
  rc = fly_dataset_finish(db, ds, fly_pagewriter_pages(pw),
                          fly_pagewriter_raw_bytes(pw),
                          fly_pagewriter_stored_bytes(pw), cols, stats, err);
  if( rc == FLY_OK && res ){
    res->dataset_id = ds;
    res->n_rows = n;
    res->bytes_read = bytes;
    snprintf(res->name, sizeof res->name, "%s", name);
  }

done:
  par_stop(&p);
  fly_pagewriter_free(pw);
  fly_dataset_stats_free(stats);
  if( tc )
    for(size_t j = 0; j < ncsv; j++){
      dict_free(&tc[j].d);
      sh_free(&tc[j].sh);
      fly_free(tc[j].key);
      fly_free(tc[j].code);
    }
  fly_free(tc);
  fly_free(cells);
  fly_free(labels);
  fly_free(lcounts);
  fly_free(src);
  fly_free(pos);
  fly_free(row);
  fly_free(cols);
  return rc;
}

fly_rc fly_ingest_csv(fly_db *db, fly_csv *csv, const fly_ingest_opts *o,
                      fly_ingest_result *res, fly_err *err)
{
  dest d = { db, NULL, NULL };
  if( !db ) return fly_fail(err, FLY_MISUSE, "fly_ingest_csv: NULL database");
  return ingest_rows(&d, csv, o, res, err);
}

/* Remove <db>.ingest-PID.tmp files left by ingests that were killed (a
 * SIGKILL cannot be caught): only those whose process no longer exists. */
static void remove_stale_temps(const char *db_path)
{
  char dir[4096], pat[4200];
  const char *base = base_name(db_path);
  size_t dl = (size_t)(base - db_path);
  if( dl >= sizeof dir ) return;
  memcpy(dir, db_path, dl);
  dir[dl] = 0;
  snprintf(pat, sizeof pat, "%s.ingest-", base);
  DIR *d = opendir(dl ? dir : ".");
  if( !d ) return;
  struct dirent *e;
  size_t pl = strlen(pat);
  while( (e = readdir(d)) ){
    const char *nm = e->d_name;
    if( strncmp(nm, pat, pl) != 0 ) continue;
    char *end;
    long pid = strtol(nm + pl, &end, 10);
    if( pid <= 0 || strcmp(end, ".tmp") != 0 ) continue;
    if( kill((pid_t)pid, 0) == 0 || errno != ESRCH ) continue;  /* alive, or not ours */
    char full[8400];
    snprintf(full, sizeof full, "%s%s", dir, nm);
    unlink(full);
  }
  closedir(d);
}

static fly_rc sync_file(const char *path, fly_err *err)
{
  int fd = open(path, O_RDONLY);
  if( fd < 0 || fsync(fd) != 0 ){
    fly_rc rc = fly_fail(err, FLY_IO, "syncing %s: %s", path, strerror(errno));
    if( fd >= 0 ) close(fd);
    return rc;
  }
  close(fd);
  return FLY_OK;
}

/* Build the new database db_path privately from csv, then publish it. */
static fly_rc ingest_new(const char *db_path, fly_csv *csv,
                         const fly_ingest_opts *o, fly_ingest_result *res,
                         fly_err *err)
{
  char tmp[4200];
  dest d = { NULL, tmp, db_path };
  fly_rc rc;

  snprintf(tmp, sizeof tmp, "%s.ingest-%ld.tmp", db_path, (long)getpid());
  unlink(tmp);
  rc = ingest_rows(&d, csv, o, res, err);
  if( rc == FLY_OK ) rc = fly_db_commit(d.db, err);
  fly_db_close(d.db);
  if( rc == FLY_OK ) rc = sync_file(tmp, err);
  if( rc == FLY_OK && link(tmp, db_path) != 0 ){
    if( errno == EPERM || errno == EOPNOTSUPP ){
      if( rename(tmp, db_path) != 0 )
        rc = fly_fail(err, FLY_IO, "renaming %s to %s: %s", tmp, db_path,
                      strerror(errno));
    }else{
      rc = fly_fail(err, FLY_IO, "creating %s: %s", db_path, strerror(errno));
    }
  }
  unlink(tmp);
  return rc;
}

fly_rc fly_ingest(const char *db_path, FILE *in, const char *src_name,
                  const fly_ingest_opts *o, fly_ingest_result *res,
                  fly_err *err)
{
  fly_csv *csv = NULL;
  fly_db *db = NULL;
  fly_ingest_opts dflt, oo;
  fly_rc rc;
  struct stat sb;
  int fresh;

  if( !db_path || !src_name )
    return fly_fail(err, FLY_MISUSE, "fly_ingest: NULL argument");
  if( !o ){ fly_ingest_opts_default(&dflt); o = &dflt; }
  /* The default name comes from the source as given ("-": "stdin"). */
  oo = *o;
  char name[256];
  if( !oo.name ){
    default_name(src_name, name, sizeof name);
    oo.name = name;
  }
  if( !oo.name[0] ) return fly_fail(err, FLY_MISUSE, "the data set name must not be empty");
  fresh = stat(db_path, &sb) != 0 && errno == ENOENT;

  /* Check the database before reading a possibly huge CSV. */
  if( !fresh && (rc = fly_db_open(db_path, 0, &db, err)) ) goto done;
  rc = in ? fly_csv_open_stream(in, src_name, &csv, err)
          : fly_csv_open(src_name, &csv, err);
  if( rc ) goto done;

  remove_stale_temps(db_path);
  if( fresh ){
    rc = ingest_new(db_path, csv, &oo, res, err);
  }else{
    rc = fly_db_begin(db, err);
    if( rc == FLY_OK ) rc = fly_ingest_csv(db, csv, &oo, res, err);
    if( rc == FLY_OK ) rc = fly_db_commit(db, err);
    if( rc ) fly_db_rollback(db);
  }
done:
  fly_db_close(db);
  fly_csv_close(csv);
  return rc;
}
