/*
 * pages.c -- reading a paged row table: the page map, verified page fetches
 * through incremental BLOB I/O, an LRU cache of decoded pages, and batched
 * random row reads.
 *
 * Open reads the table's shape from its dataset / bound_set row and loads
 * one record per page (rowid, checksum, codec, rows: 24 bytes) plus one
 * cache-slot index (4 bytes), so page_no -> rowid is an array lookup and
 * per-page metadata never costs a query.  The records come from the
 * covering index page_map / bound_page_map (schema 005): the payloads are
 * not read.  The map is checked to be
 * complete: pages 0..n_pages-1 each present, first_row = page_no*page_rows,
 * every page but the last full, raw_bytes = n_rows*width*prec.  Pages are
 * immutable after ingest, so the map stays valid while the handle lives.
 *
 * Fetching page k: position a BLOB handle on its rowid (sqlite3_blob_open
 * the first time in a call, sqlite3_blob_reopen after), read the stored
 * payload in one sqlite3_blob_read (served from the memory map set up by
 * db.c, or the OS page cache beyond it), verify its XXH3-64 checksum
 * against the map, decode.  A raw f64 page is read straight into its
 * destination and verified there, so it costs one copy.  The BLOB handle is
 * closed when each public call returns (unless the caller holds it,
 * fly_pages_hold, and releases it itself): an open handle is an active
 * statement that pins a read transaction, which would block writers in
 * other processes (rollback journal) or stop the WAL from ever being reset
 * while a run writes its draws.  A call that is served from the cache never
 * touches SQLite.  If the handle is expired by a write (SQLITE_ABORT) it is
 * reopened once.  Taking and dropping the read lock costs fcntl/stat round
 * trips at every call, far more than a fetch inside a transaction, so a
 * caller that scans page by page should hold a read transaction
 * (BEGIN ... COMMIT) around the scan.
 *
 * Cache: n_slots = cache_bytes / page bytes (at least 2, at most n_pages)
 * slots of page_rows*width doubles, all allocated at open.  slot_of[k] is
 * the slot holding page k or -1 (O(1) lookup); slots form one intrusive
 * doubly linked list, most recently used first; a miss reuses the tail.  So
 * the cache never exceeds its bound and its steady state allocates nothing.
 *
 * read_rows: each id becomes a key (page << 32 | request index), the keys are
 * sorted by page (insertion sort for small batches, LSD radix on the page
 * bits otherwise: O(n) per 11 bits of page number), then each needed page is
 * visited once and its rows copied to the caller's positions.  The key
 * workspace only grows.  Cost per batch: O(n) + one fetch per uncached page
 * touched; a cached row costs one memcpy of width doubles.
 *
 * Admission: once the cache is full, a raw page that read_rows needs and
 * that is neither cached nor seen lately is read into the I/O buffer and
 * only its requested rows are decoded; it is not cached but remembered in a
 * ring of the last n_slots such pages (slot_of[k] = GHOST).  A second miss
 * on a remembered page caches it.  Out of core most pages a random batch
 * touches are never asked for again: decoding all page_rows rows into a
 * cold slot for a few of them would add to the cost of the read, and
 * would evict pages that are asked for again.
 *
 * Check: fly_pages_check scans every page of a table without a handle,
 * judging each map entry and checksum with the same code as open and
 * fetch, but reporting every problem instead of failing at the first.
 */
#include "store/pages.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/codec.h"
#include "util/mem.h"

#define RADIX_BITS 11
#define RADIX      (1u << RADIX_BITS)
#define SMALL_SORT 48          /* insertion sort at or below this batch size */
#define GHOST      (-2)        /* slot_of: not cached, in the ghost ring */

typedef struct pmeta {
  int64_t  rowid;              /* page.id: the BLOB I/O key */
  uint64_t checksum;           /* XXH3-64 of the stored payload */
  uint32_t n_rows;             /* rows in this page */
  uint32_t codec;              /* FLY_CODEC_RAW or FLY_CODEC_LZ4 */
} pmeta;

typedef struct slot {
  int64_t page_no;             /* page held, -1 if empty */
  int32_t prev, next;          /* LRU list neighbours, -1 at the ends */
} slot;

struct fly_pages {
  fly_db        *db;           /* borrowed */
  sqlite3       *h;            /* borrowed from db */
  fly_table      table;
  int64_t        owner;
  const char    *tname;        /* "page" or "bound_page" */
  char           name[48];     /* "data set 3", for messages */
  fly_pages_info info;
  size_t         page_vals;    /* page_rows*width values */
  pmeta         *meta;         /* n_pages records */
  int32_t       *slot_of;      /* n_pages: slot index, -1, or GHOST */
  slot          *slots;        /* n_slots */
  double        *vals;         /* n_slots*page_vals decoded values */
  int32_t        n_slots;
  int32_t        head, tail;   /* most / least recently used slot */
  int64_t       *ghost;        /* n_slots pages read past the cache, or -1 */
  int32_t        ghost_pos;    /* next ring entry to overwrite */
  sqlite3_blob  *blob;         /* open during a call, or between held calls */
  int            hold;         /* fly_pages_hold: keep blob between calls */
  unsigned char *io;           /* stored payload, io_cap bytes */
  size_t         io_cap;
  unsigned char *scratch;      /* f32 lz4 decode, page_vals*4 bytes */
  uint64_t      *keys, *tmp;   /* read_rows sort workspace, ws_cap each */
  size_t         ws_cap;
  size_t         hist[RADIX];  /* radix sort counts */
  fly_pages_stats st;
  fly_prof      *prof;         /* borrowed, or NULL */
};

static double now_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- open: shape and page map ---------------------------------------- */

static fly_rc load_shape(fly_pages *p, fly_err *err)
{
  sqlite3_stmt *st = NULL;
  fly_rc rc = fly_db_prepare(p->db, p->table == FLY_TABLE_DATA
    ? "SELECT width, page_rows, n_rows, prec, n_pages FROM dataset WHERE id = ?1"
    : "SELECT b.width, b.page_rows, d.n_rows, 4, b.n_pages FROM bound_set b"
      " JOIN dataset d ON d.id = b.dataset_id WHERE b.id = ?1", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, p->owner);
  int s = sqlite3_step(st);
  if( s == SQLITE_ROW ){
    int64_t width = sqlite3_column_int64(st, 0);
    p->info.page_rows = sqlite3_column_int64(st, 1);
    p->info.n_rows = sqlite3_column_int64(st, 2);
    p->info.prec = sqlite3_column_int(st, 3);
    p->info.n_pages = sqlite3_column_int64(st, 4);
    p->info.width = width > 0 ? (size_t)width : 0;
    if( width < 1 || p->info.page_rows < 1 || p->info.n_rows < 1
        || (p->info.prec != FLY_PREC_F64 && p->info.prec != FLY_PREC_F32) )
      rc = fly_fail(err, FLY_CORRUPT, "%s: bad shape (width %lld, page_rows "
                    "%lld, n_rows %lld, prec %d)", p->name, (long long)width,
                    (long long)p->info.page_rows, (long long)p->info.n_rows,
                    p->info.prec);
  }else if( s == SQLITE_DONE ){
    rc = fly_fail(err, FLY_RANGE, "%s: no such %s in %s", p->name,
                  p->table == FLY_TABLE_DATA ? "data set" : "bound set",
                  fly_db_path(p->db));
  }else{
    rc = fly_db_fail(p->db, err, "reading the table shape");
    fly_err_prefix(err, "%s", p->name);
  }
  sqlite3_finalize(st);
  if( rc ) return rc;

  const fly_pages_info *in = &p->info;
  int64_t want_pages = (in->n_rows - 1) / in->page_rows + 1;
  if( in->n_pages != want_pages )
    return fly_fail(err, FLY_CORRUPT, "%s: n_pages is %lld, but %lld rows of "
                    "%lld a page need %lld (unfinished write?)", p->name,
                    (long long)in->n_pages, (long long)in->n_rows,
                    (long long)in->page_rows, (long long)want_pages);
  if( in->n_pages > INT32_MAX
      || (uint64_t)in->page_rows > SIZE_MAX / in->width
      || (size_t)in->page_rows * in->width > (size_t)INT32_MAX / 8 )
    return fly_fail(err, FLY_RANGE, "%s: %lld pages of %lld rows x %zu values "
                    "is beyond this reader's limits", p->name,
                    (long long)in->n_pages, (long long)in->page_rows, in->width);
  p->page_vals = (size_t)in->page_rows * in->width;
  return FLY_OK;
}

static fly_rc missing(const fly_pages *p, int64_t k, fly_err *err)
{
  int64_t first = k * p->info.page_rows;
  int64_t last = first + p->info.page_rows - 1;
  if( last >= p->info.n_rows ) last = p->info.n_rows - 1;
  return fly_fail(err, FLY_CORRUPT, "%s: page %lld of %lld is missing "
                  "(rows %lld..%lld)", p->name, (long long)k,
                  (long long)p->info.n_pages, (long long)first, (long long)last);
}

/* The problems of page k's map entry (first_row, n_rows, codec,
 * raw_bytes) against the table's shape, as fly_pages_open and
 * fly_pages_check both judge it: the row range, then (when that is right)
 * raw_bytes, then the codec.  Each goes to fn(u, "page K: ..."); returns
 * how many. */
typedef void entry_fn(void *u, const char *msg);

static int entry_problems(const fly_pages_info *in, int64_t k, int64_t first,
                          int64_t nr, int64_t codec, int64_t raw, entry_fn *fn,
                          void *u)
{
  char msg[256];
  int n = 0;
  int64_t want = k == in->n_pages - 1 ? in->n_rows - k * in->page_rows
                                      : in->page_rows;
  if( first != k * in->page_rows || nr != want ){
    snprintf(msg, sizeof msg, "page %lld: rows %lld..%lld, want %lld..%lld",
             (long long)k, (long long)first,
             (long long)((uint64_t)first + (uint64_t)nr - 1),
             (long long)(k * in->page_rows),
             (long long)(k * in->page_rows + want - 1));
    fn(u, msg);
    n++;
  }else if( raw != want * (int64_t)in->width * in->prec ){
    snprintf(msg, sizeof msg, "page %lld: raw_bytes %lld, want %lld (%lld rows "
             "x %zu values x %d bytes)", (long long)k, (long long)raw,
             (long long)(want * (int64_t)in->width * in->prec), (long long)want,
             in->width, in->prec);
    fn(u, msg);
    n++;
  }
  if( codec != FLY_CODEC_RAW && codec != FLY_CODEC_LZ4 ){
    snprintf(msg, sizeof msg, "page %lld: unknown codec %lld (want 0 raw or 1 "
             "lz4)", (long long)k, (long long)codec);
    fn(u, msg);
    n++;
  }
  return n;
}

/* "page K: checksum mismatch ..." into msg when stored != computed. */
static int checksum_problem(int64_t k, uint64_t stored, uint64_t computed,
                            size_t nb, char *msg, size_t n)
{
  if( stored == computed ) return 0;
  snprintf(msg, n, "page %lld: checksum mismatch (stored 0x%016llx, computed "
           "0x%016llx over %zu payload bytes)", (long long)k,
           (unsigned long long)stored, (unsigned long long)computed, nb);
  return 1;
}

/* load_map: the first map problem becomes the error. */
typedef struct map_fail { const fly_pages *p; fly_err *err; fly_rc rc; } map_fail;

static void map_problem(void *u, const char *msg)
{
  map_fail *f = u;
  if( f->rc == FLY_OK )
    f->rc = fly_fail(f->err, FLY_CORRUPT, "%s, %s", f->p->name, msg);
}

static fly_rc load_map(fly_pages *p, fly_err *err)
{
  const fly_pages_info *in = &p->info;
  sqlite3_stmt *st = NULL;
  int64_t next = 0;              /* next page_no expected */
  int s;
  fly_rc rc = fly_db_prepare(p->db, p->table == FLY_TABLE_DATA
    ? "SELECT id, page_no, first_row, n_rows, codec, raw_bytes, checksum"
      " FROM page WHERE dataset_id = ?1 ORDER BY page_no"
    : "SELECT id, page_no, first_row, n_rows, codec, raw_bytes, checksum"
      " FROM bound_page WHERE bound_set_id = ?1 ORDER BY page_no", &st, err);
  if( rc ) return rc;
  sqlite3_bind_int64(st, 1, p->owner);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t k = sqlite3_column_int64(st, 1);
    int64_t nr = sqlite3_column_int64(st, 3);
    int64_t codec = sqlite3_column_int64(st, 4);
    int64_t sum = sqlite3_column_int64(st, 6);
    map_fail f = { p, err, FLY_OK };

    if( k > next ){ rc = missing(p, next, err); goto done; }
    if( k < next || k >= in->n_pages ){
      rc = fly_fail(err, FLY_CORRUPT, "%s: unexpected page %lld (the table "
                    "has pages 0..%lld)", p->name, (long long)k,
                    (long long)in->n_pages - 1);
      goto done;
    }
    if( entry_problems(in, k, sqlite3_column_int64(st, 2), nr, codec,
                       sqlite3_column_int64(st, 5), map_problem, &f) ){
      rc = f.rc;
      goto done;
    }
    pmeta *m = &p->meta[k];
    m->rowid = sqlite3_column_int64(st, 0);
    memcpy(&m->checksum, &sum, sizeof sum);
    m->n_rows = (uint32_t)nr;
    m->codec = (uint32_t)codec;
    next = k + 1;
  }
  if( s != SQLITE_DONE ){
    rc = fly_db_fail(p->db, err, "reading the page map");
    fly_err_prefix(err, "%s", p->name);
  }else if( next < in->n_pages ){
    rc = missing(p, next, err);
  }
done:
  sqlite3_finalize(st);
  return rc;
}

/* fly_pages_open and fly_pages_open_like: the shape and map read from the
 * database, or copied from like. */
static fly_rc open_pages(fly_db *db, fly_table table, int64_t owner, const fly_pages *like,
                         size_t cache_bytes, fly_pages **pp, fly_err *err)
{
  fly_pages *p = NULL;
  fly_rc rc = FLY_OK;
  size_t page_bytes, n_slots;

  *pp = NULL;
  if( table != FLY_TABLE_DATA && table != FLY_TABLE_BOUND )
    return fly_fail(err, FLY_MISUSE, "pages: unknown table %d", (int)table);
  p = fly_alloc_array(1, sizeof *p);
  if( !p ) return fly_fail(err, FLY_NOMEM, "opening pages of %lld",
                           (long long)owner);
  p->db = db;
  p->h = fly_db_sqlite(db);
  p->table = table;
  p->owner = owner;
  p->tname = table == FLY_TABLE_DATA ? "page" : "bound_page";
  snprintf(p->name, sizeof p->name, "%s %lld",
           table == FLY_TABLE_DATA ? "data set" : "bound set", (long long)owner);

  if( like ){
    p->info = like->info;
    p->page_vals = like->page_vals;
  }else if( (rc = load_shape(p, err)) ){
    goto done;
  }
  p->meta = fly_alloc_array((size_t)p->info.n_pages, sizeof *p->meta);
  p->slot_of = fly_alloc_array((size_t)p->info.n_pages, sizeof *p->slot_of);
  if( !p->meta || !p->slot_of ){
    rc = fly_fail(err, FLY_NOMEM, "%s: page map of %lld pages", p->name,
                  (long long)p->info.n_pages);
    goto done;
  }
  if( like ) memcpy(p->meta, like->meta, (size_t)p->info.n_pages * sizeof *p->meta);
  else if( (rc = load_map(p, err)) ) goto done;

  /* Cache slots, all allocated now; the values untouched (mem.h), so
   * slots never filled cost no RAM and no time. */
  page_bytes = p->page_vals * sizeof(double);
  n_slots = cache_bytes / page_bytes;
  if( n_slots < 2 ) n_slots = 2;
  if( n_slots > (size_t)p->info.n_pages ) n_slots = (size_t)p->info.n_pages;
  p->n_slots = (int32_t)n_slots;
  p->slots = fly_alloc_array(n_slots, sizeof *p->slots);
  p->ghost = fly_alloc_array(n_slots, sizeof *p->ghost);
  p->vals = fly_alloc_untouched(n_slots, page_bytes);
  p->io_cap = fly_codec_bound(p->page_vals * (size_t)p->info.prec);
  p->io = fly_alloc_array(p->io_cap, 1);
  if( p->info.prec == FLY_PREC_F32 )
    p->scratch = fly_alloc_array(p->page_vals, FLY_PREC_F32);
  if( !p->slots || !p->ghost || !p->vals || !p->io
      || (p->info.prec == FLY_PREC_F32 && !p->scratch) ){
    rc = fly_fail(err, FLY_NOMEM, "%s: out of memory for a page cache of %zu pages "
                  "x %zu bytes (%.0f MiB)", p->name, n_slots, page_bytes,
                  (double)n_slots * (double)page_bytes / 1048576.0);
    goto done;
  }
  /* Slots fill in order, each a fresh page of memory: on 4 KiB pages a
   * 62 KB slot costs 16 page faults, more than the fetch itself; a 2 MiB
   * page serves 32 such slots with one fault. */
  fly_mem_random_access(p->vals, n_slots * page_bytes);
  /* the page map is looked up at random rows by every thinned z step */
  fly_mem_random_access(p->slot_of, (size_t)p->info.n_pages * sizeof *p->slot_of);
  for(int64_t k = 0; k < p->info.n_pages; k++) p->slot_of[k] = -1;
  for(int32_t i = 0; i < p->n_slots; i++){
    p->slots[i].page_no = -1;
    p->slots[i].prev = i - 1;
    p->slots[i].next = i + 1 < p->n_slots ? i + 1 : -1;
    p->ghost[i] = -1;
  }
  p->head = 0;
  p->tail = p->n_slots - 1;

done:
  if( rc ){
    fly_pages_close(p);
    return rc;
  }
  *pp = p;
  return FLY_OK;
}

fly_rc fly_pages_open(fly_db *db, fly_table table, int64_t owner,
                      size_t cache_bytes, fly_pages **pp, fly_err *err)
{
  return open_pages(db, table, owner, NULL, cache_bytes, pp, err);
}

fly_rc fly_pages_open_like(fly_db *db, fly_table table, int64_t owner, const fly_pages *like,
                           size_t cache_bytes, fly_pages **pp, fly_err *err)
{
  *pp = NULL;
  if( like && (like->table != table || like->owner != owner) )
    return fly_fail(err, FLY_MISUSE, "pages: %s %lld opened like %s",
                    table == FLY_TABLE_DATA ? "data set" : "bound set", (long long)owner,
                    like->name);
  if( like && strcmp(sqlite3_db_filename(fly_db_sqlite(db), "main"),
                     sqlite3_db_filename(like->h, "main")) != 0 )
    return fly_fail(err, FLY_MISUSE, "pages: %s of %s opened like a handle on %s",
                    like->name, fly_db_path(db), fly_db_path(like->db));
  return open_pages(db, table, owner, like, cache_bytes, pp, err);
}

void fly_pages_close(fly_pages *p)
{
  if( !p ) return;
  sqlite3_blob_close(p->blob);
  fly_free(p->meta);
  fly_free(p->slot_of);
  fly_free(p->slots);
  fly_free(p->ghost);
  fly_free_untouched(p->vals);
  fly_free(p->io);
  fly_free(p->scratch);
  fly_free(p->keys);
  fly_free(p->tmp);
  fly_free(p);
}

const fly_pages_info *fly_pages_info_of(const fly_pages *p)
{
  return &p->info;
}

int fly_pages_row_cached(const fly_pages *p, int64_t row)
{
  if( row < 0 || row >= p->info.n_rows ) return 0;
  return p->slot_of[row / p->info.page_rows] >= 0;
}

void fly_pages_prefetch_row(const fly_pages *p, int64_t row)
{
  __builtin_prefetch(&p->slot_of[row / p->info.page_rows]);
}

void fly_pages_stats_get(const fly_pages *p, fly_pages_stats *s)
{
  *s = p->st;
}

void fly_pages_set_prof(fly_pages *p, fly_prof *prof) { p->prof = prof; }

/* ---- fetching one page ------------------------------------------------ */

/* End of a public call: drop the BLOB handle and with it the read
 * transaction it pins. */
static void release(fly_pages *p)
{
  if( p->blob ){
    sqlite3_blob_close(p->blob);
    p->blob = NULL;
  }
}

/* End of a public call: release unless the caller holds the handle. */
static void call_end(fly_pages *p)
{
  if( !p->hold ) release(p);
}

void fly_pages_hold(fly_pages *p, int on)
{
  p->hold = on != 0;
  if( !on ) release(p);
}

void fly_pages_release(fly_pages *p) { release(p); }

/* Point the BLOB handle at page k's payload. */
static fly_rc seek_blob(fly_pages *p, int64_t k, fly_err *err)
{
  int64_t rowid = p->meta[k].rowid;
  if( p->blob ){
    if( sqlite3_blob_reopen(p->blob, rowid) == SQLITE_OK ) return FLY_OK;
    release(p);                 /* aborted or expired: open afresh */
  }
  if( sqlite3_blob_open(p->h, "main", p->tname, "payload", rowid, 0,
                        &p->blob) != SQLITE_OK ){
    char what[64];
    snprintf(what, sizeof what, "opening the payload (row id %lld)",
             (long long)rowid);
    fly_rc rc = fly_db_fail(p->db, err, what);
    release(p);
    fly_err_prefix(err, "%s, page %lld", p->name, (long long)k);
    return rc;
  }
  return FLY_OK;
}

/* Read page k's stored payload into buf (io_cap bytes, or the page's raw
 * size when its codec is raw) and verify its size and checksum; *nb is its
 * size in bytes. */
static fly_rc read_payload(fly_pages *p, int64_t k, void *buf, int *nb,
                           fly_err *err)
{
  const pmeta *m = &p->meta[k];
  size_t raw = (size_t)m->n_rows * p->info.width * (size_t)p->info.prec;
  fly_rc rc;
  int s = SQLITE_OK;

  for(int attempt = 0; attempt < 2; attempt++){
    if( (rc = seek_blob(p, k, err)) ) return rc;
    *nb = sqlite3_blob_bytes(p->blob);
    if( m->codec == FLY_CODEC_RAW ? (size_t)*nb != raw : (size_t)*nb > p->io_cap )
      return fly_fail(err, FLY_CORRUPT, "%s, page %lld: stored payload of %d "
                      "bytes, but the page holds %zu raw bytes (%s)", p->name,
                      (long long)k, *nb, raw,
                      m->codec == FLY_CODEC_RAW ? "raw" : "lz4");
    s = sqlite3_blob_read(p->blob, buf, *nb, 0);
    if( s == SQLITE_OK ){
      char msg[160];
      if( checksum_problem(k, m->checksum, fly_codec_checksum(buf, (size_t)*nb),
                           (size_t)*nb, msg, sizeof msg) )
        return fly_fail(err, FLY_CORRUPT, "%s, %s", p->name, msg);
      p->st.page_reads++;
      return FLY_OK;
    }
    release(p);                 /* SQLITE_ABORT: expired by a write; retry */
    if( s != SQLITE_ABORT ) break;
  }
  return fly_fail(err, FLY_SQL, "%s, page %lld: reading the payload: %s (%s)",
                  p->name, (long long)k, sqlite3_errstr(s), fly_db_path(p->db));
}

/* Read, verify and decode page k into dst (page_vals doubles). */
static fly_rc fetch_page(fly_pages *p, int64_t k, double *dst, fly_err *err)
{
  const pmeta *m = &p->meta[k];
  size_t n_vals = (size_t)m->n_rows * p->info.width;
  void *buf = m->codec == FLY_CODEC_RAW && p->info.prec == FLY_PREC_F64
            ? (void *)dst : (void *)p->io;
  int nb;
  fly_rc rc = read_payload(p, k, buf, &nb, err);
  if( rc == FLY_OK && buf != (void *)dst ){
    rc = fly_codec_decode((int)m->codec, buf, (size_t)nb, p->info.prec,
                          n_vals, dst, p->scratch, err);
    if( rc ) fly_err_prefix(err, "%s, page %lld", p->name, (long long)k);
  }
  return rc;
}

/* Fetches are charged to FLY_PROF_DECODE and to decode_seconds. */
static double fetch_begin(fly_pages *p)
{
  if( p->prof ) fly_prof_push(p->prof, FLY_PROF_DECODE);
  return now_seconds();
}

static void fetch_end(fly_pages *p, double t0)
{
  p->st.decode_seconds += now_seconds() - t0;
  if( p->prof ) fly_prof_pop(p->prof);
}

static fly_rc fetch(fly_pages *p, int64_t k, double *dst, fly_err *err)
{
  double t0 = fetch_begin(p);
  fly_rc rc = fetch_page(p, k, dst, err);
  fetch_end(p, t0);
  return rc;
}

/* ---- the LRU cache ---------------------------------------------------- */

static void unlink_slot(fly_pages *p, int32_t i)
{
  slot *s = &p->slots[i];
  if( s->prev >= 0 ) p->slots[s->prev].next = s->next; else p->head = s->next;
  if( s->next >= 0 ) p->slots[s->next].prev = s->prev; else p->tail = s->prev;
  s->prev = s->next = -1;
}

static void push_front(fly_pages *p, int32_t i)
{
  slot *s = &p->slots[i];
  s->prev = -1;
  s->next = p->head;
  if( p->head >= 0 ) p->slots[p->head].prev = i;
  p->head = i;
  if( p->tail < 0 ) p->tail = i;
}

static void push_back(fly_pages *p, int32_t i)
{
  slot *s = &p->slots[i];
  s->next = -1;
  s->prev = p->tail;
  if( p->tail >= 0 ) p->slots[p->tail].next = i;
  p->tail = i;
  if( p->head < 0 ) p->head = i;
}

static double *slot_vals(const fly_pages *p, int32_t i)
{
  return p->vals + (size_t)i * p->page_vals;
}

/* Page k through the cache: its decoded values, most recently used now. */
static fly_rc cached(fly_pages *p, int64_t k, const double **rows,
                     fly_err *err)
{
  int32_t i = p->slot_of[k];
  if( i >= 0 ){
    p->st.cache_hits++;
    if( i != p->head ){ unlink_slot(p, i); push_front(p, i); }
    *rows = slot_vals(p, i);
    return FLY_OK;
  }
  i = p->tail;                                 /* empty or least recent */
  unlink_slot(p, i);
  if( p->slots[i].page_no >= 0 ) p->slot_of[p->slots[i].page_no] = -1;
  p->slots[i].page_no = -1;
  fly_rc rc = fetch(p, k, slot_vals(p, i), err);
  if( rc ){
    push_back(p, i);                           /* empty: reused first */
    return rc;
  }
  p->slots[i].page_no = k;
  p->slot_of[k] = i;
  push_front(p, i);
  *rows = slot_vals(p, i);
  return FLY_OK;
}

static fly_rc page_range(const fly_pages *p, int64_t k, fly_err *err)
{
  if( k < 0 || k >= p->info.n_pages )
    return fly_fail(err, FLY_RANGE, "%s: page %lld out of range (pages "
                    "0..%lld)", p->name, (long long)k,
                    (long long)p->info.n_pages - 1);
  return FLY_OK;
}

fly_rc fly_pages_read_page(fly_pages *p, int64_t page_no, double *out,
                           size_t *n_rows, fly_err *err)
{
  fly_rc rc = page_range(p, page_no, err);
  if( rc ) return rc;
  size_t n_vals = (size_t)p->meta[page_no].n_rows * p->info.width;
  int32_t i = p->slot_of[page_no];
  if( i >= 0 ){                 /* already decoded: copy, do not reorder */
    p->st.cache_hits++;
    memcpy(out, slot_vals(p, i), n_vals * sizeof *out);
  }else{
    rc = fetch(p, page_no, out, err);
    call_end(p);
    if( rc ) return rc;
  }
  if( n_rows ) *n_rows = p->meta[page_no].n_rows;
  return FLY_OK;
}

fly_rc fly_pages_get(fly_pages *p, int64_t page_no, const double **rows,
                     size_t *n_rows, fly_err *err)
{
  fly_rc rc = page_range(p, page_no, err);
  if( rc == FLY_OK ) rc = cached(p, page_no, rows, err);
  call_end(p);
  if( rc ) return rc;
  if( n_rows ) *n_rows = p->meta[page_no].n_rows;
  return FLY_OK;
}

/* ---- batched row reads ------------------------------------------------ */

static fly_rc grow_workspace(fly_pages *p, size_t n, fly_err *err)
{
  if( n <= p->ws_cap ) return FLY_OK;
  size_t cap = p->ws_cap ? p->ws_cap : 256;
  while( cap < n ) cap = cap > SIZE_MAX / 2 ? n : 2 * cap;
  uint64_t *k = fly_realloc_array(p->keys, cap, sizeof *k);
  if( !k ) goto nomem;
  p->keys = k;
  uint64_t *t = fly_realloc_array(p->tmp, cap, sizeof *t);
  if( !t ) goto nomem;
  p->tmp = t;
  p->ws_cap = cap;
  return FLY_OK;
nomem:
  return fly_fail(err, FLY_NOMEM, "%s: sort workspace for %zu row ids",
                  p->name, n);
}

static void insertion_sort(uint64_t *a, size_t n)
{
  for(size_t i = 1; i < n; i++){
    uint64_t x = a[i];
    size_t j = i;
    while( j > 0 && a[j - 1] > x ){ a[j] = a[j - 1]; j--; }
    a[j] = x;
  }
}

/* Stable LSD radix sort of keys[0..n) on bits 32.. (the page number);
 * leaves the result in p->keys. */
static void radix_sort(fly_pages *p, size_t n)
{
  uint64_t max_page = (uint64_t)p->info.n_pages - 1;
  for(unsigned sh = 32; sh < 64 && (max_page >> (sh - 32)) != 0;
      sh += RADIX_BITS){
    uint64_t *src = p->keys, *dst = p->tmp;
    size_t sum = 0;
    memset(p->hist, 0, sizeof p->hist);
    for(size_t i = 0; i < n; i++) p->hist[(src[i] >> sh) & (RADIX - 1)]++;
    for(size_t d = 0; d < RADIX; d++){
      size_t c = p->hist[d];
      p->hist[d] = sum;
      sum += c;
    }
    for(size_t i = 0; i < n; i++) dst[p->hist[(src[i] >> sh) & (RADIX - 1)]++] = src[i];
    p->keys = dst;
    p->tmp = src;
  }
}

/* Batches from this size on prefetch their cached rows first. */
#define PREFETCH_MIN 16

/* Whether read_rows reads page k past the cache (see Admission above). */
static int passes_by(const fly_pages *p, int64_t k)
{
  return p->slot_of[k] == -1 && p->meta[k].codec == FLY_CODEC_RAW
      && p->slots[p->tail].page_no >= 0;
}

static void ghost_add(fly_pages *p, int64_t k)
{
  int64_t old = p->ghost[p->ghost_pos];
  if( old >= 0 && p->slot_of[old] == GHOST ) p->slot_of[old] = -1;
  p->ghost[p->ghost_pos] = k;
  p->slot_of[k] = GHOST;
  if( ++p->ghost_pos == p->n_slots ) p->ghost_pos = 0;
}

/* Page k (raw) read into io; decode only the m rows its keys ask for. */
static fly_rc read_past(fly_pages *p, int64_t k, const uint64_t *keys,
                        size_t m, const int64_t *ids, double *out,
                        fly_err *err)
{
  const size_t w = p->info.width, row_bytes = w * (size_t)p->info.prec;
  const int64_t P = p->info.page_rows;
  double t0 = fetch_begin(p);
  int nb;
  fly_rc rc = read_payload(p, k, p->io, &nb, err);
  for(size_t j = 0; rc == FLY_OK && j < m; j++){
    size_t i = (size_t)(keys[j] & 0xffffffffu);
    rc = fly_codec_decode(FLY_CODEC_RAW, p->io + (size_t)(ids[i] - k * P) * row_bytes,
                          row_bytes, p->info.prec, w, out + i * w, NULL, err);
  }
  if( rc == FLY_OK ) ghost_add(p, k);
  fetch_end(p, t0);
  return rc;
}

fly_rc fly_pages_read_rows(fly_pages *p, const int64_t *ids, size_t n,
                           double *out, fly_err *err)
{
  const int64_t N = p->info.n_rows, P = p->info.page_rows;
  const size_t w = p->info.width;
  int sorted = 1;
  fly_rc rc;

  if( n == 0 ) return FLY_OK;
  if( n > UINT32_MAX )
    return fly_fail(err, FLY_RANGE, "%s: a batch of %zu rows is too large "
                    "(at most %u)", p->name, n, UINT32_MAX);
  if( (rc = grow_workspace(p, n, err)) ) return rc;

  uint64_t *keys = p->keys, prev = 0;
  for(size_t i = 0; i < n; i++){
    int64_t id = ids[i];
    if( id < 0 || id >= N )
      return fly_fail(err, FLY_RANGE, "%s: row %lld out of range (rows "
                      "0..%lld; request index %zu)", p->name, (long long)id,
                      (long long)N - 1, i);
    uint64_t key = (uint64_t)(id / P) << 32 | (uint64_t)i;
    if( key < prev ) sorted = 0;
    keys[i] = prev = key;
  }
  if( !sorted ){
    if( n <= SMALL_SORT ) insertion_sort(keys, n);
    else radix_sort(p, n);
  }

  keys = p->keys;
  /* rows of cached pages cost a copy each from random places in the
   * decoded cache: start loading them all before the copies */
  if( n >= PREFETCH_MIN ){
    const size_t lines = (w * sizeof(double) + 63) / 64;
    for(size_t j = 0; j < n; j++){
      int64_t k = (int64_t)(keys[j] >> 32);
      int32_t s = p->slot_of[k];
      if( s < 0 ) continue;
      const char *r = (const char *)(slot_vals(p, s)
                      + (size_t)(ids[keys[j] & 0xffffffffu] - k * P) * w);
      for(size_t l = 0; l < lines; l++) __builtin_prefetch(r + 64 * l);
    }
  }
  for(size_t j = 0, e; j < n && rc == FLY_OK; j = e){
    int64_t k = (int64_t)(keys[j] >> 32);
    for(e = j + 1; e < n && (int64_t)(keys[e] >> 32) == k; e++) ;
    if( passes_by(p, k) ){
      rc = read_past(p, k, keys + j, e - j, ids, out, err);
      continue;
    }
    const double *rows = NULL;
    if( (rc = cached(p, k, &rows, err)) ) break;
    for(size_t t = j; t < e; t++){
      size_t i = (size_t)(keys[t] & 0xffffffffu);
      memcpy(out + i * w, rows + (size_t)(ids[i] - k * P) * w, w * sizeof *out);
    }
  }
  call_end(p);
  if( rc == FLY_OK ) p->st.rows_read += (int64_t)n;
  return rc;
}

/* ---- integrity check ------------------------------------------------- */

typedef struct scan_ctx { fly_checker *ck; } scan_ctx;

static void scan_problem(void *u, const char *msg)
{
  fly_check_problem(((scan_ctx *)u)->ck, "%s", msg);
}

static void missing_range(fly_checker *ck, const fly_pages_info *t, int64_t a,
                          int64_t b)
{
  int64_t last = (b + 1) * t->page_rows - 1;
  if( last >= t->n_rows ) last = t->n_rows - 1;
  if( a == b )
    fly_check_problem(ck, "page %lld is missing (rows %lld..%lld)", (long long)a,
                      (long long)(a * t->page_rows), (long long)last);
  else
    fly_check_problem(ck, "pages %lld..%lld are missing (rows %lld..%lld)",
                      (long long)a, (long long)b, (long long)(a * t->page_rows),
                      (long long)last);
}

void fly_pages_check(fly_db *db, fly_table table, int64_t owner,
                     const fly_pages_info *t, fly_pages_check_fn *fn, void *u,
                     fly_checker *ck, fly_pages_scan *r)
{
  sqlite3_stmt *st = NULL;
  double *vals = NULL;
  void *scratch = NULL;
  size_t page_vals = (size_t)t->page_rows * t->width;
  int64_t next = 0;
  scan_ctx sc = { ck };
  fly_err e = {0};
  int s;

  memset(r, 0, sizeof *r);
  vals = fly_alloc_array(page_vals, sizeof *vals);
  if( t->prec == FLY_PREC_F32 ) scratch = fly_alloc_array(page_vals, FLY_PREC_F32);
  if( !vals || (t->prec == FLY_PREC_F32 && !scratch) ){
    fly_check_problem(ck, "out of memory for a page of %lld rows x %zu values",
                      (long long)t->page_rows, t->width);
    r->bad = 1;
    goto done;
  }
  if( fly_db_prepare(db, table == FLY_TABLE_DATA
        ? "SELECT page_no, first_row, n_rows, codec, raw_bytes, checksum, payload"
          " FROM page WHERE dataset_id = ?1 ORDER BY page_no"
        : "SELECT page_no, first_row, n_rows, codec, raw_bytes, checksum, payload"
          " FROM bound_page WHERE bound_set_id = ?1 ORDER BY page_no", &st, &e) ){
    fly_check_problem(ck, "%s", e.msg);
    r->bad = 1;
    goto done;
  }
  sqlite3_bind_int64(st, 1, owner);
  while( (s = sqlite3_step(st)) == SQLITE_ROW ){
    int64_t k = sqlite3_column_int64(st, 0);
    int64_t first = sqlite3_column_int64(st, 1);
    int64_t nr = sqlite3_column_int64(st, 2);
    int64_t codec = sqlite3_column_int64(st, 3);
    int64_t sum = sqlite3_column_int64(st, 5);
    const void *pay = sqlite3_column_blob(st, 6);
    size_t nb = (size_t)sqlite3_column_bytes(st, 6);
    uint64_t stored;
    char msg[160];
    int bad = 0;

    r->n_rows += (uint64_t)nr;
    r->bytes += nb;
    if( k < 0 || k >= t->n_pages ){
      fly_check_problem(ck, "unexpected page %lld (the table has pages 0..%lld)",
                        (long long)k, (long long)t->n_pages - 1);
      r->bad = r->layout_bad = 1;
      continue;
    }
    if( k > next ){
      missing_range(ck, t, next, k - 1);
      r->bad = r->layout_bad = 1;
    }
    next = k + 1;
    int64_t want = k == t->n_pages - 1 ? t->n_rows - k * t->page_rows
                                       : t->page_rows;
    if( first != k * t->page_rows || nr != want ) r->layout_bad = 1;
    if( entry_problems(t, k, first, nr, codec, sqlite3_column_int64(st, 4),
                       scan_problem, &sc) )
      bad = 1;
    memcpy(&stored, &sum, sizeof stored);
    if( checksum_problem(k, stored, fly_codec_checksum(pay ? pay : "", nb), nb,
                         msg, sizeof msg) ){
      fly_check_problem(ck, "%s", msg);
      bad = 1;
    }
    if( !bad && fly_codec_decode((int)codec, pay ? pay : "", nb, t->prec,
                                 (size_t)nr * t->width, vals, scratch, &e) ){
      fly_check_problem(ck, "page %lld: %s", (long long)k, e.msg);
      bad = 1;
    }
    if( bad ) r->bad = 1;
    else if( fn ) fn(u, k, vals, (size_t)nr);
  }
  if( s != SQLITE_DONE ){
    fly_check_problem(ck, "%s: %s", table == FLY_TABLE_DATA
                      ? "reading table page" : "reading table bound_page",
                      sqlite3_errmsg(fly_db_sqlite(db)));
    r->bad = 1;
  }else if( next < t->n_pages ){
    missing_range(ck, t, next, t->n_pages - 1);
    r->bad = r->layout_bad = 1;
  }
done:
  sqlite3_finalize(st);
  fly_free(vals);
  fly_free(scratch);
}
