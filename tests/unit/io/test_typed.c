/*
 * test_typed.c -- typed ingest and the materialised design.
 *
 * Type detection: a column turns categorical at its first label, early or
 * late (the pages above re-coded: the stored codes must equal those of the
 * same file with the column declared categorical); declared types; NA,
 * empty cells and --na-strings as NaN, counted; level labels (quoted, with
 * "" escapes, numbers as written) and counts; the errors.  The design: a
 * derived data set whose rows equal a direct expansion of the raw rows by
 * fly_design_row (rows with a missing used value left out and counted), the
 * names R gives, reuse under the same key, --na error naming the row, and
 * fly_dataset_check finding nothing wrong.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/design.h"
#include "io/ingest.h"
#include "store/codec.h"
#include "store/dataset.h"
#include "store/pages.h"
#include "util/mem.h"

#include "tap.h"

static char dir[64], path[128];

static fly_rc ingest(const char *text, const char *name, const char *cat,
                     const char *num, const char *na, fly_err *err)
{
  fly_ingest_opts o;
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  fly_ingest_opts_default(&o);
  o.name = name;
  o.page_rows = 4;
  o.categorical = cat;
  o.numeric = num;
  o.na_strings = na;
  fly_rc rc = fly_ingest(path, f, "mem.csv", &o, NULL, err);
  fclose(f);
  return rc;
}

/* All stored rows of data set id, row-major (free with free). */
static double *rows_of(fly_db *db, int64_t id, int64_t *n, size_t *w)
{
  fly_pages *p = NULL;
  double *all = NULL;
  if( fly_pages_open(db, FLY_TABLE_DATA, id, 0, &p, NULL) ) return NULL;
  const fly_pages_info *in = fly_pages_info_of(p);
  all = calloc((size_t)in->n_rows * in->width + (size_t)in->page_rows * in->width,
               sizeof *all);
  for(int64_t pg = 0; all && pg < in->n_pages; pg++){
    size_t k;
    fly_pages_read_page(p, pg, all + (size_t)(pg * in->page_rows) * in->width, &k, NULL);
  }
  *n = in->n_rows;
  *w = in->width;
  fly_pages_close(p);
  return all;
}

static int same_bits(const double *a, const double *b, size_t n)
{
  return memcmp(a, b, n * sizeof *a) == 0;
}

static const char *label(const fly_dataset *ds, const char *col, size_t code)
{
  const fly_dataset_column *c = fly_dataset_column_find(ds, col);
  return c && c->categorical && code < c->n_levels ? c->levels[code] : "?";
}

static void test_detect(void)
{
  fly_err err = {0};
  fly_db *db = NULL;
  fly_dataset *ds = NULL;
  int64_t id = 0;
  /* z is numeric for 9 rows (3 pages of 4 rows), then 'b' on row 10. */
  const char *late =
    "x,z,c,y\n"
    "1,5,red,0\n2,2.50,\"blue\",1\n3,5,red,0\n4,,NA,1\n5,7,\"a,\"\"q\"\"\",0\n"
    "6,5,red,1\n7,NA,red,0\n8,2.50,blue,1\n9,7,red,0\nNULL,b,red,1\n"
    "11,5,red,0\n";
  fly_rc rc = ingest(late, "late", NULL, NULL, "NULL", &err);
  TAP_OK(rc == FLY_OK, "a late label: ingested (%s)", rc ? err.msg : "ok");
  rc = ingest(late, "decl", "z", NULL, "NULL", &err);
  TAP_OK(rc == FLY_OK, "declared categorical: ingested (%s)", rc ? err.msg : "ok");
  if( fly_db_open(path, 0, &db, &err) ) return;

  int64_t n1 = 0, n2 = 0;
  size_t w1 = 0, w2 = 0;
  fly_dataset_find(db, "late", &id, NULL);
  double *a = rows_of(db, id, &n1, &w1);
  fly_dataset_load(db, id, &ds, NULL);
  fly_dataset_find(db, "decl", &id, NULL);
  double *b = rows_of(db, id, &n2, &w2);
  TAP_OK(a && b && n1 == 11 && n1 == n2 && w1 == 5 && w1 == w2
         && same_bits(a, b, (size_t)n1 * w1),
         "the re-coded pages equal those of the declared column");
  const fly_dataset_column *z = ds ? fly_dataset_column_find(ds, "z") : NULL;
  TAP_OK(z && z->categorical && z->n_levels == 4 && z->n_missing == 2
         && strcmp(z->levels[0], "5") == 0 && strcmp(z->levels[1], "2.50") == 0
         && strcmp(z->levels[2], "7") == 0 && strcmp(z->levels[3], "b") == 0
         && z->level_counts[0] == 4 && z->level_counts[1] == 2
         && z->level_counts[3] == 1 && z->n == 9,
         "z: levels as written in first-seen order, counts, 2 missing");
  TAP_OK(a && a[2] == 0 && a[5 + 2] == 1 && a[4 * 5 + 2] == 2 && isnan(a[3 * 5 + 2])
         && a[9 * 5 + 2] == 3, "z: codes in the pages");
  const fly_dataset_column *c = ds ? fly_dataset_column_find(ds, "c") : NULL;
  TAP_OK(c && c->categorical && c->n_levels == 3 && c->n_missing == 1
         && strcmp(label(ds, "c", 2), "a,\"q\"") == 0,
         "c: a quoted label with a comma and \"\" escapes");
  const fly_dataset_column *x = ds ? fly_dataset_column_find(ds, "x") : NULL;
  TAP_OK(x && !x->categorical && x->n_missing == 1 && x->n == 10
         && a && isnan(a[9 * 5 + 1]) && x->mean == (1+2+3+4+5+6+7+8+9+11) / 10.0,
         "x: NULL from --na-strings is missing, left out of the statistics");
  fly_err e2 = {0};
  TAP_OK(ds && fly_dataset_require_numeric(ds, &e2) == FLY_MISUSE
         && strstr(e2.msg, "column 'x' has 1 missing"),
         "a raw data set with missing values is not for a model as it is (%s)", e2.msg);
  free(a);
  free(b);
  fly_dataset_free(ds);
  fly_db_close(db);

  rc = ingest("a,y\n1,0\n1.0,1\nq,0\n", "amb", NULL, NULL, NULL, &err);
  TAP_OK(rc == FLY_PARSE && strstr(err.msg, "mem.csv:4:1") && strstr(err.msg, "'1'")
         && strstr(err.msg, "'1.0'") && strstr(err.msg, "--categorical a"),
         "two texts of one number above a late label: refused (%s)", err.msg);
  rc = ingest("a,y\n1,0\nq,1\n", "num", NULL, "a", NULL, &err);
  TAP_OK(rc == FLY_PARSE && strstr(err.msg, "mem.csv:3:1: 'q' is not a number"),
         "a label in a declared numeric column: refused (%s)", err.msg);
  rc = ingest("a,y\n1,0\n", "bad", "nosuch", NULL, NULL, &err);
  TAP_OK(rc == FLY_RANGE && strstr(err.msg, "nosuch"),
         "--categorical names a missing column: refused (%s)", err.msg);
}

static void collect(void *ctx, const char *scope, const char *what)
{
  snprintf(ctx, 512, "%s: %s", scope, what);
}

static void test_design(void)
{
  char last[512] = "";
  fly_err err = {0};
  fly_db *db = NULL;
  fly_design *d = NULL;
  fly_design_report rep, rep2;
  fly_dataset *dv = NULL;
  int64_t raw = 0, id = 0, id2 = 0, nr = 0, nd = 0;
  size_t wr = 0, wd = 0;
  const char *csv =
    "x,cut,y\n"
    "1.5,Good,0\n2,Fair,1\nNA,Ideal,1\n-1,Ideal,0\n3,,1\n0.25,Good,0\n4,Fair,NA\n";
  fly_rc rc = ingest(csv, "dia", NULL, NULL, NULL, &err);
  TAP_OK(rc == FLY_OK, "design: raw data set ingested (%s)", rc ? err.msg : "ok");
  if( fly_db_open(path, 0, &db, &err) ) return;
  fly_dataset_find(db, "dia", &raw, NULL);
  rc = fly_design_bind(db, raw, "y ~ x + cut", NULL, &d, &err);
  TAP_OK(rc == FLY_OK, "bound 'y ~ x + cut' (%s)", rc ? err.msg : "ok");
  if( rc ){ fly_db_close(db); return; }
  rc = fly_design_materialise(db, raw, d, FLY_DESIGN_NA_OMIT, &id, &rep, &err);
  TAP_OK(rc == FLY_OK && !rep.reused && rep.n_rows == 4 && rep.n_omitted == 3
         && strstr(rep.why, "1 in 'x'") && strstr(rep.why, "1 in 'cut'")
         && strstr(rep.why, "1 in 'y'"),
         "materialised: 4 rows, 3 left out (%s)", rc ? err.msg : rep.why);
  rc = fly_dataset_load(db, id, &dv, &err);
  TAP_OK(rc == FLY_OK && fly_dataset_require_numeric(dv, NULL) == FLY_OK,
         "the derived data set is for a model as it is");
  TAP_OK(rc == FLY_OK && dv->parent_id == raw && dv->width == 5 && dv->has_intercept
         && strcmp(dv->cols[0].name, "(Intercept)") == 0
         && strcmp(dv->cols[1].name, "x") == 0
         && strcmp(dv->cols[2].name, "cutGood") == 0
         && strcmp(dv->cols[3].name, "cutIdeal") == 0
         && strcmp(dv->cols[4].name, "y") == 0 && strcmp(dv->cols[4].role, "target") == 0,
         "derived columns: (Intercept), x, cutGood, cutIdeal, y");

  /* The derived rows are the direct expansion of the complete raw rows. */
  double *r = rows_of(db, raw, &nr, &wr), *v = rows_of(db, id, &nd, &wd);
  double want[8][5], got[5];
  size_t k = 0, col;
  for(int64_t i = 0; r && i < nr && k < 8; i++){
    const double *x = r + (size_t)i * wr + 1;
    if( fly_design_row(d, x, got, &col) != 0 ) continue;
    memcpy(want[k], got, 4 * sizeof *got);
    want[k++][4] = fly_design_y(d, x);
  }
  TAP_OK(v && k == 4 && nd == 4 && wd == 5 && same_bits(&want[0][0], v, 20),
         "derived pages equal the direct expansion, bit for bit");
  double hand[4][5] = { {1, 1.5, 1, 0, 0}, {1, 2, 0, 0, 1}, {1, -1, 0, 1, 0},
                        {1, 0.25, 1, 0, 0} };
  TAP_OK(v && memcmp(hand, v, sizeof hand) == 0,
         "derived rows as model.matrix gives them (Fair the reference)");
  free(r);
  free(v);

  rc = fly_design_materialise(db, raw, d, FLY_DESIGN_NA_OMIT, &id2, &rep2, &err);
  TAP_OK(rc == FLY_OK && rep2.reused && id2 == id && rep2.n_omitted == 3
         && strcmp(rep.why, rep2.why) == 0, "the same design again: reused");
  int64_t only = 0;
  rc = fly_dataset_find(db, NULL, &only, &err);
  TAP_OK(rc == FLY_MISUSE, "find without a name: the ingested sets only "
         "(several here) (%s)", err.msg);
  fly_design_free(d);

  rc = fly_design_bind(db, raw, "y ~ x", NULL, &d, &err);
  if( rc == FLY_OK )
    rc = fly_design_materialise(db, raw, d, FLY_DESIGN_NA_ERROR, &id2, NULL, &err);
  TAP_OK(rc == FLY_RANGE && strstr(err.msg, "row 3: 'x' is missing"),
         "--na error names the first row (%s)", err.msg);
  fly_design_free(d);
  d = NULL;
  rc = fly_design_bind(db, raw, "y ~ x3", NULL, &d, &err);
  TAP_OK(rc == FLY_RANGE && strstr(err.msg, "x3"), "an unknown column (%s)", err.msg);
  fly_design_free(d);

  fly_checker ck;
  fly_dataset_checked *cs = NULL;
  size_t n = 0;
  memset(&ck, 0, sizeof ck);
  fly_dataset_check(db, &ck, &cs, &n, NULL);
  TAP_OK(ck.n_problems == 0 && n >= 3, "check: %zu data sets, no problems", n);
  fly_dataset_checked_free(cs, n);
  fly_db_exec(db, "UPDATE derived SET n_omitted = 2", NULL);
  memset(&ck, 0, sizeof ck);
  ck.report = collect;
  ck.ctx = last;
  fly_dataset_check(db, &ck, &cs, &n, NULL);
  TAP_OK(ck.n_problems == 1 && strstr(last, "4 rows and 2 left out, but its parent 'dia' has 7"),
         "check: a wrong n_omitted is found (%lld problems, the last: %s)",
         (long long)ck.n_problems, last);
  fly_dataset_checked_free(cs, n);
  fly_dataset_free(dv);
  fly_db_close(db);
}

/* Labels that the level dictionary's short keys must tell apart: every
 * length 1 .. 12, texts of one length differing in one byte at each
 * place (first, middle, last; inside the middle of a long text, which its
 * key does not see), permutations, and a prefix of another.  Each row's
 * code must name its own label, and there must be as many levels as
 * distinct labels, each counted once per row. */
static void test_labels(void)
{
  static const char *lab[] = {
    "a", "b", "ab", "ba", "aa", "abc", "acb", "abd", "xbc", "axc", "abcd", "abce", "xbcd", "abxd",
    "abcde", "abxde", "abcdf", "abcdef", "abxdef", "abcdeg", "abcdefg", "abcXefg",
    "abcdefgh", "abcdXfgh", "abcdefgX", "Xbcdefgh", "aaaaXbbbb", "aaaaYbbbb", "aaaaXbbbbb",
    "aaaaYbbbbb", "aaaabXbbbbb", "aaaabYbbbbb", "abcdefghijkl", "abcdefghijkm", "0", "00",
    "000", "0000", "00000", "000000000"
  };
  /* and 300 texts of 11 bytes with one first and one last four bytes
   * (one short key: only their middles tell them apart) */
  enum { NFIX = sizeof lab / sizeof *lab, NGEN = 300 };
  static char gen[NGEN][16];
  const char *all[NFIX + NGEN];
  for(size_t i = 0; i < NFIX; i++) all[i] = lab[i];
  for(size_t i = 0; i < NGEN; i++){
    snprintf(gen[i], sizeof gen[i], "pppp%03zuqqqq", i);
    all[NFIX + i] = gen[i];
  }
  const size_t n = NFIX + NGEN;
#define lab all
  char *csv = malloc(64 * 3 * n + 16);
  size_t len = (size_t)sprintf(csv, "c,y\n");
  for(int rep = 0; rep < 3; rep++)
    for(size_t i = 0; i < n; i++) len += (size_t)sprintf(csv + len, "%s,%d\n", lab[(i * 7 + (size_t)rep) % n], (int)(i % 2));
  fly_err err = {0};
  fly_rc rc = ingest(csv, "labels", "c", NULL, NULL, &err);
  TAP_OK(rc == FLY_OK, "labels of length 1..12 and 300 with one short key: ingested (%s)", rc ? err.msg : "ok");
  fly_db *db = NULL;
  fly_dataset *ds = NULL;
  int64_t id = 0, nr = 0;
  size_t w = 0;
  if( fly_db_open(path, 0, &db, &err) ){ free(csv); return; }
  fly_dataset_find(db, "labels", &id, NULL);
  double *rows = rows_of(db, id, &nr, &w);
  fly_dataset_load(db, id, &ds, NULL);
  const fly_dataset_column *c = ds ? fly_dataset_column_find(ds, "c") : NULL;
  int right = rows && c && c->n_levels == n && nr == (int64_t)(3 * n);
  for(int rep = 0; right && rep < 3; rep++)
    for(size_t i = 0; right && i < n; i++){
      double v = rows[(size_t)rep * n * w + i * w + (w - 2)];   /* [1] c y */
      right = strcmp(label(ds, "c", (size_t)v), lab[(i * 7 + (size_t)rep) % n]) == 0;
    }
  for(size_t k = 0; right && k < n; k++) right = c->level_counts[k] == 3;
  TAP_OK(right, "each of %zu labels its own level (%zu levels), each row its label, "
         "each counted 3 times", n, c ? c->n_levels : 0);
#undef lab
  free(rows);
  fly_dataset_free(ds);
  fly_db_close(db);
  free(csv);
}

int main(void)
{
  snprintf(dir, sizeof dir, "/tmp/flydb_typed_XXXXXX");
  if( !mkdtemp(dir) ){ perror("mkdtemp"); return 2; }
  snprintf(path, sizeof path, "%s/t.db", dir);
  test_detect();
  test_labels();
  test_design();
  unlink(path);
  rmdir(dir);
  return tap_done();
}
