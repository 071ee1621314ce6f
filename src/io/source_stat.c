/*
 * source_stat.c -- Stata, SPSS and SAS files (ReadStat) as CSV text.
 *
 * Concept.  ReadStat is a push parser: it calls back once per variable,
 * value label and cell.  Opening runs a first, short pass for the
 * dictionary -- the variable names and the value labels -- without the
 * data (Stata keeps its labels after the data and ReadStat seeks past the
 * rows when no value handler is set; SPSS keeps them before, so that pass
 * stops at the first cell).  The header and the categorical columns are
 * then known before any text is read.  A thread runs the second pass over
 * the data, writing the cells as CSV text into one end of a socket pair in
 * 64 KiB pieces; the stream reads the other end.  The socket's buffer is
 * the back-pressure: the thread blocks while the reader is slower.
 *
 * Cells: a missing value (system-missing, Stata's .a-.z, SPSS user-missing)
 * is empty; a variable with a value label set is written as the label of
 * its value (the number itself when that value has no label); other numbers
 * with %.17g; text as is, quoted when needed.
 *
 * Invariants.  Cells arrive in order: variable 0..n_var-1 of observation 0,
 * then of 1, ... (checked: anything else stops the stream).  Only the
 * thread touches the parser and `out` of the second pass while it runs;
 * the stream reads th_rc and th_msg only after joining it.  The thread
 * blocks every signal, so the ingest's handlers run in the reading thread
 * (whose wait for text resumes after a signal: the text comes soon).
 *
 * Cost.  The first pass reads the dictionary (and for Stata the labels at
 * the end of the file); the second reads the file once.  Memory: the
 * labels, the names, and 64 KiB of text plus one row, whatever the number
 * of rows.  Label lookup is a binary search per labelled cell.
 */
#include "io/source_int.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <readstat.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/mem.h"

#define STAT_CHUNK 65536     /* bytes of text the thread sends at a time */

typedef struct label {
  int     is_str;           /* key is skey (string variables) or num */
  double  num;
  char   *skey;
  char   *text;
} label;

typedef struct var {
  char   *name;
  int     set;              /* index into statsrc.set, -1: no labels */
} var;

typedef struct lset {
  char   *name;
  label  *lab;
  size_t  n, cap;
} lset;

typedef struct statsrc {
  readstat_error_t (*parse)(readstat_parser_t *, const char *, void *);
  const char *path;           /* the file (borrowed from the source) */
  size_t     set_name_max;    /* bytes of a label set name (see dta_set_name_max) */
  int        n_var;
  var       *var;             /* [n_var] */
  size_t     cap_var;
  lset      *set;
  size_t     n_set, cap_set;
  char       rs_msg[256];     /* ReadStat's last message, first pass */
  fly_srcbuf head;            /* the header row, handed out first */
  int        fd[2];           /* socket pair: [0] the stream, [1] the thread */
  pthread_t  th;
  int        th_started, th_joined;
  atomic_int stop;            /* the stream is closing: the thread aborts */
  fly_srcbuf out;             /* the thread's text not yet sent */
  int        next_var;        /* the thread's expected next variable */
  readstat_error_t th_rc;     /* the thread's result ... */
  char       th_msg[256];     /* ... and message (after join) */
} statsrc;

/* ---- first pass: the dictionary ---- */

static void keep_msg(char *dst, size_t cap, const char *msg)
{
  size_t n;
  snprintf(dst, cap, "%s", msg);
  n = strlen(dst);
  while( n > 0 && (dst[n - 1] == '\n' || dst[n - 1] == ' ') ) dst[--n] = 0;
}

static void on_error(const char *msg, void *ctx)      /* first pass */
{
  statsrc *t = ctx;
  keep_msg(t->rs_msg, sizeof t->rs_msg, msg);
}

static void on_error_th(const char *msg, void *ctx)   /* the thread's pass */
{
  statsrc *t = ctx;
  keep_msg(t->th_msg, sizeof t->th_msg, msg);
}

/* p with room for element n (of size bytes), doubling *cap; NULL when
 * out of memory (p is then untouched, and still owned by the caller). */
static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
  size_t c;
  void *q;
  if( n < *cap ) return p;
  c = *cap ? 2 * *cap : 8;
  q = fly_realloc_array(p, c, size);
  if( q ) *cap = c;
  return q;
}

/* The label set named by ReadStat's name, added if new; NULL when out of
 * memory.  ReadStat 1.1.8 passes a Stata name as the file's fixed-width
 * field, without a NUL when the field is full: read at most its width. */
static lset *find_set(statsrc *t, const char *raw)
{
  char name[130];
  size_t len = strnlen(raw, t->set_name_max);
  lset *set;
  memcpy(name, raw, len);
  name[len] = 0;
  for(size_t i = 0; i < t->n_set; i++)
    if( strcmp(t->set[i].name, name) == 0 ) return &t->set[i];
  if( !(set = grow(t->set, &t->cap_set, t->n_set, sizeof *t->set)) ) return NULL;
  t->set = set;
  memset(&t->set[t->n_set], 0, sizeof t->set[t->n_set]);
  t->set[t->n_set].name = fly_strdup(name);
  return t->set[t->n_set].name ? &t->set[t->n_set++] : NULL;
}

static int on_variable(int index, readstat_variable_t *v, const char *val_labels,
                       void *ctx)
{
  statsrc *t = ctx;
  const char *name = readstat_variable_get_name(v);
  var *vs;
  if( index != t->n_var ) return READSTAT_HANDLER_ABORT;
  if( !(vs = grow(t->var, &t->cap_var, (size_t)t->n_var, sizeof *t->var)) )
    return READSTAT_HANDLER_ABORT;
  t->var = vs;
  vs = &t->var[t->n_var];
  vs->set = -1;
  vs->name = fly_strdup(name ? name : "");
  if( !vs->name ) return READSTAT_HANDLER_ABORT;
  if( val_labels && val_labels[0] ){
    lset *set = find_set(t, val_labels);
    if( !set ) return READSTAT_HANDLER_ABORT;
    vs->set = (int)(set - t->set);
  }
  t->n_var++;
  return READSTAT_HANDLER_OK;
}

static int on_value_label(const char *set_name, readstat_value_t x,
                          const char *text, void *ctx)
{
  statsrc *t = ctx;
  lset *s;
  label *l;
  if( readstat_value_is_system_missing(x) || readstat_value_is_tagged_missing(x) )
    return READSTAT_HANDLER_OK;           /* missing is an empty cell anyway */
  s = find_set(t, set_name);
  if( !s || !(l = grow(s->lab, &s->cap, s->n, sizeof *s->lab)) ) return READSTAT_HANDLER_ABORT;
  s->lab = l;
  l = &s->lab[s->n];
  memset(l, 0, sizeof *l);
  l->is_str = readstat_value_type_class(x) == READSTAT_TYPE_CLASS_STRING;
  if( l->is_str ){
    const char *k = readstat_string_value(x);
    l->skey = fly_strdup(k ? k : "");
    if( !l->skey ) return READSTAT_HANDLER_ABORT;
  }else{
    l->num = readstat_double_value(x);
    if( isnan(l->num) ) return READSTAT_HANDLER_OK;   /* no order: qsort needs one */
  }
  l->text = fly_strdup(text ? text : "");
  if( !l->text ){ fly_free(l->skey); return READSTAT_HANDLER_ABORT; }
  s->n++;
  return READSTAT_HANDLER_OK;
}

static int stop_at_value(int obs, readstat_variable_t *v, readstat_value_t x,
                         void *ctx)
{
  (void)obs; (void)v; (void)x; (void)ctx;
  return READSTAT_HANDLER_ABORT;
}

static int label_cmp(const void *pa, const void *pb)
{
  const label *a = pa, *b = pb;
  if( a->is_str != b->is_str ) return a->is_str - b->is_str;
  if( a->is_str ) return strcmp(a->skey, b->skey);
  return a->num < b->num ? -1 : a->num > b->num;
}

/* ReadStat's error as a fly_rc naming the file. */
static fly_rc rs_fail(fly_source *s, readstat_error_t r, const char *detail,
                      fly_err *err)
{
  fly_rc code = r == READSTAT_ERROR_MALLOC ? FLY_NOMEM
              : r == READSTAT_ERROR_OPEN ? FLY_IO : FLY_CORRUPT;
  const char *m = readstat_error_message(r);
  return fly_fail(err, code, "%s: ReadStat: %s%s%s", s->name,
                  m ? m : "error", detail[0] ? ": " : "", detail);
}

/* ---- second pass: the rows, in the thread ---- */

/* Send t->out whole; -1 if the stream has gone. */
static int flush_out(statsrc *t)
{
  size_t off = 0;
  while( off < t->out.len ){
    ssize_t n;
    if( atomic_load(&t->stop) ) return -1;
    n = send(t->fd[1], t->out.p + off, t->out.len - off, MSG_NOSIGNAL);
    if( n < 0 ){
      if( errno == EINTR ) continue;
      return -1;
    }
    off += (size_t)n;
  }
  t->out.len = 0;
  return 0;
}

static const char *label_of(const lset *s, const label *key)
{
  const label *l = s->n ? bsearch(key, s->lab, s->n, sizeof *s->lab, label_cmp) : NULL;
  return l ? l->text : NULL;
}

static int on_cell(int obs, readstat_variable_t *v, readstat_value_t x, void *ctx)
{
  statsrc *t = ctx;
  int j = readstat_variable_get_index(v), bad = 0;

  if( j != t->next_var || j >= t->n_var ){
    snprintf(t->th_msg, sizeof t->th_msg, "observation %d: variable %d where "
             "%d was expected", obs + 1, j + 1, t->next_var + 1);
    return READSTAT_HANDLER_ABORT;
  }
  if( j > 0 ) bad = fly_srcbuf_add(&t->out, ",", 1);
  if( !bad && !readstat_value_is_missing(x, v) ){
    const lset *s = t->var[j].set >= 0 ? &t->set[t->var[j].set] : NULL;
    label key = { 0, 0.0, NULL, NULL };
    const char *text = NULL;
    if( readstat_value_type_class(x) == READSTAT_TYPE_CLASS_STRING ){
      const char *sv = readstat_string_value(x);
      key.is_str = 1;
      key.skey = (char *)(sv ? sv : "");
      text = s ? label_of(s, &key) : NULL;
      bad = fly_srcbuf_text(&t->out, text ? text : key.skey);
    }else{
      key.num = readstat_double_value(x);
      text = s && !isnan(key.num) ? label_of(s, &key) : NULL;
      bad = text ? fly_srcbuf_text(&t->out, text) : fly_srcbuf_num(&t->out, key.num);
    }
  }
  if( bad ){
    snprintf(t->th_msg, sizeof t->th_msg, "out of memory at observation %d", obs + 1);
    return READSTAT_HANDLER_ABORT;
  }
  if( j + 1 < t->n_var ){
    t->next_var++;
    return READSTAT_HANDLER_OK;
  }
  t->next_var = 0;
  if( atomic_load(&t->stop) ) return READSTAT_HANDLER_ABORT;
  if( fly_srcbuf_add(&t->out, "\n", 1) ){
    snprintf(t->th_msg, sizeof t->th_msg, "out of memory at observation %d", obs + 1);
    return READSTAT_HANDLER_ABORT;
  }
  if( t->out.len >= STAT_CHUNK && flush_out(t) ) return READSTAT_HANDLER_ABORT;
  return READSTAT_HANDLER_OK;
}

/* The second pass's dictionary must be the first's (ReadStat 1.1.8 also
 * needs a variable handler to read values). */
static int same_variable(int index, readstat_variable_t *v, const char *val_labels,
                         void *ctx)
{
  statsrc *t = ctx;
  const char *name = readstat_variable_get_name(v);
  (void)val_labels;
  if( index < t->n_var && strcmp(t->var[index].name, name ? name : "") == 0 )
    return READSTAT_HANDLER_OK;
  snprintf(t->th_msg, sizeof t->th_msg, "variable %d changed between two reads", index + 1);
  return READSTAT_HANDLER_ABORT;
}

static void *convert(void *arg)
{
  statsrc *t = arg;
  readstat_parser_t *p = readstat_parser_init();
  if( !p ){
    t->th_rc = READSTAT_ERROR_MALLOC;
  }else{
    readstat_set_error_handler(p, on_error_th);
    readstat_set_variable_handler(p, same_variable);
    readstat_set_value_handler(p, on_cell);
    t->th_rc = t->parse(p, t->path, t);
    readstat_parser_free(p);
  }
  if( t->th_rc == READSTAT_OK && t->next_var != 0 ){
    t->th_rc = READSTAT_ERROR_PARSE;
    snprintf(t->th_msg, sizeof t->th_msg, "the last observation is incomplete");
  }
  if( t->th_rc == READSTAT_OK && flush_out(t) ) t->th_rc = READSTAT_ERROR_USER_ABORT;
  shutdown(t->fd[1], SHUT_WR);            /* the stream sees the end */
  return NULL;
}

/* ---- the kind ---- */

/* The width of a Stata file's label-set-name field (its "lbllist"): 9
 * bytes before release 108, 33 before 118, 129 from 118 on; release from
 * the "<release>NNN</release>" of the XML-like header or the first byte of
 * the old binary one.  9 when the header is unreadable (ReadStat then
 * refuses the file anyway).  Other formats: 129 (their set names are
 * ReadStat's own NUL-terminated strings). */
static size_t dta_set_name_max(const fly_source *s)
{
  static const char tag[] = "<stata_dta><header><release>";
  unsigned char h[32] = { 0 };
  int release = 0;
  FILE *f;
  if( s->kind != &fly_source_dta ) return 129;
  f = fopen(s->path, "rb");
  if( !f ) return 9;
  if( fread(h, 1, sizeof h, f) == 0 ) h[0] = 0;
  fclose(f);
  if( memcmp(h, tag, sizeof tag - 1) == 0 ){
    const unsigned char *d = h + sizeof tag - 1;
    if( d[0] >= '0' && d[0] <= '9' && d[1] >= '0' && d[1] <= '9' && d[2] >= '0' && d[2] <= '9' )
      release = (d[0] - '0')*100 + (d[1] - '0')*10 + (d[2] - '0');
  }else{
    release = h[0];
  }
  return release >= 118 ? 129 : release >= 108 ? 33 : 9;
}

static fly_rc stat_open(fly_source *s, fly_err *err)
{
  statsrc *t = fly_alloc_array(1, sizeof *t);
  readstat_parser_t *p = NULL;
  readstat_error_t r;
  sigset_t all, old;
  fly_rc rc = FLY_OK;

  if( !t ) return fly_fail(err, FLY_NOMEM, "%s: ReadStat", s->name);
  s->impl = t;
  t->fd[0] = t->fd[1] = -1;
  t->path = s->path;
  t->set_name_max = dta_set_name_max(s);
  t->parse = s->kind == &fly_source_dta ? readstat_parse_dta
           : s->kind == &fly_source_sav ? readstat_parse_sav
           : readstat_parse_sas7bdat;

  /* first pass: names and labels */
  p = readstat_parser_init();
  if( !p ) return fly_fail(err, FLY_NOMEM, "%s: ReadStat", s->name);
  readstat_set_error_handler(p, on_error);
  readstat_set_variable_handler(p, on_variable);
  readstat_set_value_label_handler(p, on_value_label);
  if( s->kind != &fly_source_dta ) readstat_set_value_handler(p, stop_at_value);
  r = t->parse(p, s->path, t);
  readstat_parser_free(p);
  if( r != READSTAT_OK && !(r == READSTAT_ERROR_USER_ABORT && s->kind != &fly_source_dta &&
                            t->n_var > 0) )
    return rs_fail(s, r, t->rs_msg, err);
  if( t->n_var == 0 ) return fly_fail(err, FLY_CORRUPT, "%s: no variables", s->name);
  for(size_t i = 0; i < t->n_set; i++)
    if( t->set[i].n > 1 ) qsort(t->set[i].lab, t->set[i].n, sizeof *t->set[i].lab, label_cmp);

  /* header and categorical columns */
  s->cat = fly_alloc_array((size_t)t->n_var, sizeof *s->cat);
  if( !s->cat ) return fly_fail(err, FLY_NOMEM, "%s: ReadStat", s->name);
  for(int j = 0; j < t->n_var; j++){
    if( (j > 0 && fly_srcbuf_add(&t->head, ",", 1)) || fly_srcbuf_text(&t->head, t->var[j].name) )
      return fly_fail(err, FLY_NOMEM, "%s: header", s->name);
    if( t->var[j].set >= 0 && t->set[t->var[j].set].n > 0 ){
      s->cat[s->n_cat] = fly_strdup(t->var[j].name);
      if( !s->cat[s->n_cat++] ) return fly_fail(err, FLY_NOMEM, "%s: header", s->name);
    }else{
      t->var[j].set = -1;
    }
  }
  if( fly_srcbuf_add(&t->head, "\n", 1) )
    return fly_fail(err, FLY_NOMEM, "%s: header", s->name);

  /* second pass: the rows, in a thread that blocks every signal */
  if( socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, t->fd) != 0 )
    return fly_fail(err, FLY_IO, "%s: socketpair: %s", s->name, strerror(errno));
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  if( pthread_create(&t->th, NULL, convert, t) != 0 )
    rc = fly_fail(err, FLY_NOMEM, "%s: cannot start the ReadStat thread", s->name);
  else
    t->th_started = 1;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static fly_rc stat_read(fly_source *s, char *buf, size_t cap, size_t *got,
                        fly_err *err)
{
  statsrc *t = s->impl;
  ssize_t n;

  *got = 0;
  if( t->head.pos < t->head.len ){
    *got = fly_srcbuf_take(&t->head, buf, cap);
    return FLY_OK;
  }
  if( t->th_joined ) return FLY_OK;
  /* A signal does not stop this wait: the thread converts a local file,
   * so text (or the end) comes soon, and the reader then sees its flag. */
  do n = read(t->fd[0], buf, cap); while( n < 0 && errno == EINTR );
  if( n > 0 ){
    *got = (size_t)n;
    return FLY_OK;
  }
  if( n < 0 )
    return fly_fail(err, FLY_IO, "%s: reading converted rows: %s", s->name, strerror(errno));
  pthread_join(t->th, NULL);
  t->th_joined = 1;
  if( t->th_rc != READSTAT_OK ) return rs_fail(s, t->th_rc, t->th_msg, err);
  return FLY_OK;
}

static void stat_close(fly_source *s)
{
  statsrc *t = s->impl;
  if( !t ) return;
  if( t->th_started && !t->th_joined ){
    char sink[4096];
    atomic_store(&t->stop, 1);
    /* unblock a send in progress: read until the thread shuts its end */
    for(;;){
      ssize_t n = read(t->fd[0], sink, sizeof sink);
      if( n == 0 || (n < 0 && errno != EINTR) ) break;
    }
    pthread_join(t->th, NULL);
  }
  if( t->fd[0] >= 0 ) close(t->fd[0]);
  if( t->fd[1] >= 0 ) close(t->fd[1]);
  for(int j = 0; j < t->n_var; j++) fly_free(t->var[j].name);
  fly_free(t->var);
  for(size_t i = 0; i < t->n_set; i++){
    for(size_t k = 0; k < t->set[i].n; k++){
      fly_free(t->set[i].lab[k].skey);
      fly_free(t->set[i].lab[k].text);
    }
    fly_free(t->set[i].lab);
    fly_free(t->set[i].name);
  }
  fly_free(t->set);
  fly_srcbuf_free(&t->head);
  fly_srcbuf_free(&t->out);
  fly_free(t);
  s->impl = NULL;
}

const fly_source_kind fly_source_dta = { "dta", stat_open, stat_read, stat_close };
const fly_source_kind fly_source_sav = { "sav", stat_open, stat_read, stat_close };
const fly_source_kind fly_source_sas7bdat = { "sas7bdat", stat_open, stat_read, stat_close };
