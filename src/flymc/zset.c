/*
 * zset.c -- the brightness variables z_1..z_N in about one bit a row.
 *
 * FlyMC keeps a small fraction of the N rows bright, and every loop over z
 * in the sampler runs over the bright rows or over row ids, never over "the
 * dark rows in some order".  So only the bright rows get per-row storage:
 *
 *   bits  N bits, bit n set iff row n is bright: is_bright in one load.
 *   arr   the B bright row ids; positions 0..B-1 are what the bright-row
 *         cache mirrors (ith_bright is arr[i]).
 *   tab   open-addressing hash table row -> position for the bright rows:
 *         linear probing, a power-of-two number of slots at load <= 1/2,
 *         murmur3's 64-bit finaliser as the hash, deletion by backward
 *         shift (no tombstones, so probe runs never silt up).
 *
 * Invariants (fly_zset_check): 0 <= B <= N; the bitmap has exactly B bits
 * set, those of arr[0..B); tab holds exactly the B pairs (arr[i], i); the
 * table has at least twice as many slots as arr has room.
 *
 * brighten(n) appends n at position B.  darken(n) moves the last bright row
 * arr[B-1] into n's slot p and updates its table entry: the return value p
 * and *moved_from = B-1 tell the bright-row cache (which mirrors arr[0..B))
 * to copy its slot B-1 into slot p.  All O(1), brighten amortised: when B
 * reaches the room in arr, arr doubles and the table is rebuilt at twice
 * the size.  Room never shrinks, so once the bright set has been as large
 * as it gets, nothing allocates; fly_zset_reserve lets the bright-row cache
 * grow both together.
 *
 * Memory: N/8 bytes for the bitmap, plus for room R >= B: 4R bytes of arr
 * and 8 * 2^ceil(log2 2R) bytes of table, i.e. 20 to 36 bytes a bright row.
 * A FlyMC run with B << N costs about 1 bit a row (the old arr/tab layout
 * cost 8 bytes a row); when B approaches N (bounds so loose that most rows
 * stay bright) it costs up to 36 bytes a row, against the bright block's
 * 8 * (D+1) bytes a bright row that such a run pays anyway.
 */
#include "zset.h"

#include <assert.h>
#include <string.h>

#include "util/mem.h"

#define EMPTY UINT32_MAX      /* free slot; row ids are < N <= UINT32_MAX */
#define MIN_ROOM 16

typedef struct {
  uint32_t row;               /* bright row id, or EMPTY */
  uint32_t pos;               /* its position in arr */
} slot;

struct fly_zset {
  uint64_t *bits;   /* N/64 + 1 words: bit n set iff row n is bright */
  uint32_t *arr;    /* room row ids; [0, B) are the bright rows */
  slot     *tab;    /* mask+1 slots (none while room == 0) */
  size_t    room;   /* bright rows arr can hold */
  size_t    mask;   /* table slots - 1; slots >= 2 * room */
  int64_t   N;      /* rows */
  int64_t   B;      /* bright rows */
};

/* murmur3 fmix64: every input bit affects every output bit, so consecutive
 * row ids spread over the table.  Tests may override it to force
 * collisions. */
#ifndef FLY_ZSET_HASH
static inline uint64_t fmix64(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
#define FLY_ZSET_HASH(r) fmix64(r)
#endif

static inline size_t home(const fly_zset *z, uint32_t r)
{
  return (size_t)FLY_ZSET_HASH((uint64_t)r) & z->mask;
}

static inline int bit(const fly_zset *z, int64_t n)
{
  return (int)((z->bits[(uint64_t)n >> 6] >> ((uint64_t)n & 63)) & 1);
}

/* Slot of row r, which must be in the table. */
static size_t find(const fly_zset *z, uint32_t r)
{
  size_t i = home(z, r);
  while( z->tab[i].row != r ){
    assert(z->tab[i].row != EMPTY);
    i = (i + 1) & z->mask;
  }
  return i;
}

/* Insert (r, p); r must not be in the table, and there must be room. */
static void insert(fly_zset *z, uint32_t r, uint32_t p)
{
  size_t i = home(z, r);
  while( z->tab[i].row != EMPTY ) i = (i + 1) & z->mask;
  z->tab[i].row = r;
  z->tab[i].pos = p;
}

/* Empty slot i and shift back the entries after it that may move closer to
 * their home slot: an entry at j with home k may move to i when i lies on
 * its probe path k..j, i.e. dist(k, j) >= dist(i, j).  Stops at the first
 * empty slot, so every lookup still finds its row before an empty slot. */
static void delete_slot(fly_zset *z, size_t i)
{
  size_t j = i;
  for(;;){
    j = (j + 1) & z->mask;
    if( z->tab[j].row == EMPTY ) break;
    size_t k = home(z, z->tab[j].row);
    if( ((j - k) & z->mask) >= ((j - i) & z->mask) ){
      z->tab[i] = z->tab[j];
      i = j;
    }
  }
  z->tab[i].row = EMPTY;
}

/* Room for `want` bright rows: arr resized, a table of >= 2*want slots
 * rebuilt from arr[0..B).  Nothing changes on failure. */
static int grow(fly_zset *z, size_t want)
{
  size_t slots = 1;
  while( slots < 2 * want ) slots *= 2;
  slot *tab = fly_alloc_array(slots, sizeof *tab);
  if( !tab ) return 0;
  uint32_t *arr = fly_realloc_array(z->arr, want, sizeof *arr);
  if( !arr ){
    fly_free(tab);
    return 0;
  }
  memset(tab, 0xff, slots * sizeof *tab);       /* every row EMPTY */
  fly_free(z->tab);
  z->arr = arr;
  z->tab = tab;
  z->room = want;
  z->mask = slots - 1;
  for( int64_t i = 0; i < z->B; i++ ) insert(z, arr[i], (uint32_t)i);
  return 1;
}

fly_rc fly_zset_new(int64_t N, fly_zset **pz, fly_err *err)
{
  fly_zset *z = NULL;
  *pz = NULL;
  if( N < 0 || N > FLY_ZSET_MAX_N )
    return fly_fail(err, FLY_RANGE, "zset: %lld rows, want 0..%lld",
                    (long long)N, (long long)FLY_ZSET_MAX_N);
  z = fly_alloc_array(1, sizeof *z);
  if( !z ) goto nomem;
  z->bits = fly_alloc_array((size_t)N / 64 + 1, sizeof *z->bits);
  if( !z->bits ) goto nomem;
  fly_mem_random_access(z->bits, ((size_t)N / 64 + 1) * sizeof *z->bits);
  z->N = N;
  z->B = 0;
  *pz = z;
  return FLY_OK;
nomem:
  fly_zset_free(z);
  return fly_fail(err, FLY_NOMEM, "zset: cannot allocate for %lld rows",
                  (long long)N);
}

void fly_zset_free(fly_zset *z)
{
  if( !z ) return;
  fly_free(z->bits);
  fly_free(z->arr);
  fly_free(z->tab);
  fly_free(z);
}

fly_rc fly_zset_reserve(fly_zset *z, int64_t n, fly_err *err)
{
  if( n > z->N ) n = z->N;
  if( n <= 0 || (size_t)n <= z->room ) return FLY_OK;
  if( !grow(z, (size_t)n) )
    return fly_fail(err, FLY_NOMEM, "zset: cannot make room for %lld bright "
                    "rows of %lld", (long long)n, (long long)z->N);
  return FLY_OK;
}

int64_t fly_zset_n(const fly_zset *z) { return z->N; }
int64_t fly_zset_n_bright(const fly_zset *z) { return z->B; }

int fly_zset_is_bright(const fly_zset *z, int64_t n)
{
  assert(n >= 0 && n < z->N);
  return bit(z, n);
}

size_t fly_zset_dark_in(const fly_zset *z, int64_t r0, size_t n, int64_t *off)
{
  size_t k = 0;
  assert(r0 >= 0 && r0 + (int64_t)n <= z->N);
  for( size_t i = 0; i < n; i++ ){
    off[k] = (int64_t)i;
    k += !bit(z, r0 + (int64_t)i);     /* branch-free: most rows are dark */
  }
  return k;
}

void fly_zset_prefetch(const fly_zset *z, int64_t n)
{
  __builtin_prefetch(&z->bits[(uint64_t)n >> 6]);
}

int64_t fly_zset_pos(const fly_zset *z, int64_t n)
{
  assert(n >= 0 && n < z->N);
  if( !bit(z, n) ) return -1;
  return z->tab[find(z, (uint32_t)n)].pos;
}

int64_t fly_zset_brighten(fly_zset *z, int64_t n)
{
  assert(n >= 0 && n < z->N);
  if( bit(z, n) ) return -1;
  int64_t b = z->B;
  if( (size_t)b == z->room ){
    /* b < N here (n is dark), so the new room is larger */
    size_t want = z->room < MIN_ROOM ? MIN_ROOM : 2 * z->room;
    if( want > (size_t)z->N ) want = (size_t)z->N;
    if( !grow(z, want) ) return FLY_ZSET_NOMEM;
  }
  z->arr[b] = (uint32_t)n;
  insert(z, (uint32_t)n, (uint32_t)b);
  z->bits[(uint64_t)n >> 6] |= (uint64_t)1 << ((uint64_t)n & 63);
  z->B = b + 1;
  return b;
}

int64_t fly_zset_darken(fly_zset *z, int64_t n, int64_t *moved_from)
{
  assert(n >= 0 && n < z->N);
  if( !bit(z, n) ) return -1;
  size_t i = find(z, (uint32_t)n);
  int64_t p = z->tab[i].pos, last = z->B - 1;
  delete_slot(z, i);
  if( p != last ){
    uint32_t m = z->arr[last];          /* last bright row moves to p */
    z->arr[p] = m;
    z->tab[find(z, m)].pos = (uint32_t)p;
  }
  z->bits[(uint64_t)n >> 6] &= ~((uint64_t)1 << ((uint64_t)n & 63));
  z->B = last;
  if( moved_from ) *moved_from = last;
  return p;
}

int64_t fly_zset_ith_bright(const fly_zset *z, int64_t i)
{
  assert(i >= 0 && i < z->B);
  return z->arr[i];
}

/* Darken every bright row, last first (nothing moves): O(B). */
static void all_dark(fly_zset *z)
{
  while( z->B > 0 ) (void)fly_zset_darken(z, z->arr[z->B - 1], NULL);
}

fly_rc fly_zset_set_bright(fly_zset *z, const int64_t *list, int64_t n,
                           fly_err *err)
{
  fly_rc rc;
  all_dark(z);
  if( n < 0 || n > z->N )
    return fly_fail(err, FLY_RANGE, "zset: %lld bright rows of %lld",
                    (long long)n, (long long)z->N);
  if( (rc = fly_zset_reserve(z, n, err)) ) return rc;
  for( int64_t k = 0; k < n; k++ ){
    int64_t r = list[k];
    if( r < 0 || r >= z->N ){
      all_dark(z);
      return fly_fail(err, FLY_RANGE,
                      "zset: bright entry %lld is row %lld, want 0..%lld",
                      (long long)k, (long long)r, (long long)z->N - 1);
    }
    if( fly_zset_brighten(z, r) < 0 ){   /* room is reserved: a repeat */
      all_dark(z);
      return fly_fail(err, FLY_RANGE,
                      "zset: bright entry %lld repeats row %lld",
                      (long long)k, (long long)r);
    }
  }
  return FLY_OK;
}

int fly_zset_check(const fly_zset *z)
{
  if( !z || z->N < 0 || z->B < 0 || z->B > z->N ) return 0;
  if( (size_t)z->B > z->room || (size_t)z->room > (size_t)z->N ) return 0;
  if( z->room > 0 &&
      (!z->arr || !z->tab || ((z->mask + 1) & z->mask) || z->mask + 1 < 2 * z->room) )
    return 0;
  /* bitmap: B bits, none at or past N */
  size_t words = (size_t)z->N / 64 + 1;
  int64_t ones = 0;
  for( size_t w = 0; w < words; w++ ) ones += __builtin_popcountll(z->bits[w]);
  if( ones != z->B || (z->bits[words - 1] >> (z->N % 64)) ) return 0;
  /* arr[i] bright and mapped to i: rows distinct (one position each), so
   * the B bits set are exactly theirs */
  for( int64_t i = 0; i < z->B; i++ ){
    uint32_t r = z->arr[i];
    if( (int64_t)r >= z->N || !bit(z, r) ) return 0;
    size_t s = home(z, r), steps = 0;
    while( z->tab[s].row != r ){
      if( z->tab[s].row == EMPTY || ++steps > z->mask ) return 0;
      s = (s + 1) & z->mask;
    }
    if( z->tab[s].pos != (uint32_t)i ) return 0;
  }
  /* and the table holds nothing else */
  int64_t used = 0;
  for( size_t s = 0; z->room > 0 && s <= z->mask; s++ )
    used += z->tab[s].row != EMPTY;
  return used == z->B;
}
