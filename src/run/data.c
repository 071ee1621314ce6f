/*
 * data.c -- the data set a model reads: the ingested one as stored, or the
 * data set derived from it by the model's formula (io/design.h).
 *
 * Without --formula a data set whose columns are all numeric and complete
 * is used as stored (the last column the target, every other a feature,
 * as flydb always did); one with a categorical column or a missing value
 * gets the formula "TARGET ~ ." (every column, categorical ones expanded
 * with treatment contrasts, rows with a missing value left out), as R's
 * glm(y ~ ., data) would.  A derived data set is a cache: built once per
 * (data set, design) in its own transaction and kept, like a bound set.
 */
#include <stdio.h>
#include <string.h>

#include "io/design.h"
#include "run/data.h"
#include "store/dataset.h"
#include "util/mem.h"

/* "col=level,col=level" into o (pointers into buf, of n_max pairs). */
static fly_rc parse_refs(const char *s, char *buf, size_t bn, const char **col,
                         const char **lev, size_t n_max, size_t *n, fly_err *err)
{
  *n = 0;
  if( !s || !*s ) return FLY_OK;
  if( strlen(s) >= bn ) return fly_fail(err, FLY_MISUSE, "--reference is too long");
  strcpy(buf, s);
  for(char *p = buf, *next; p; p = next){
    next = strchr(p, ',');
    if( next ) *next++ = 0;
    char *eq = strchr(p, '=');
    if( !eq || eq == p || !eq[1] )
      return fly_fail(err, FLY_MISUSE, "--reference: '%s' is not COLUMN=LEVEL", p);
    if( *n == n_max ) return fly_fail(err, FLY_MISUSE, "--reference: more than %zu columns", n_max);
    *eq = 0;
    col[*n] = p;
    lev[(*n)++] = eq + 1;
  }
  return FLY_OK;
}

#define MAX_REFS 64

fly_rc fly_run_data(fly_db *db, int64_t raw_id, const fly_model_spec *s,
                    fly_run_data_out *out, int *usage, fly_err *err)
{
  fly_dataset *ds = NULL;
  fly_design *d = NULL;
  char refbuf[4096];
  const char *rc_col[MAX_REFS], *rc_lev[MAX_REFS];
  fly_design_opts o = { 0, rc_col, rc_lev };
  fly_rc rc;

  memset(out, 0, sizeof *out);
  out->dataset_id = raw_id;
  *usage = 0;
  if( (rc = fly_dataset_load(db, raw_id, &ds, err)) ) return rc;
  /* modelled as stored: numeric and complete, or already derived */
  if( !s->formula && !s->reference && fly_dataset_require_numeric(ds, NULL) == FLY_OK )
    goto done;
  if( !s->formula ){
    const fly_dataset_column *t = fly_dataset_target(ds);
    if( !t || !t->name ){
      rc = fly_fail(err, FLY_CORRUPT, "data set %lld has no target column", (long long)raw_id);
      goto done;
    }
    /* a name that is not syntactic in R is backquoted, as R prints it */
    int plain = (t->name[0] >= 'A' && t->name[0] <= 'Z') || (t->name[0] >= 'a' && t->name[0] <= 'z');
    for(const char *p = t->name; *p && plain; p++)
      plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_';
    snprintf(out->formula, sizeof out->formula, plain ? "%s ~ ." : "`%s` ~ .", t->name);
  }else snprintf(out->formula, sizeof out->formula, "%s", s->formula);
  if( (rc = parse_refs(s->reference, refbuf, sizeof refbuf, rc_col, rc_lev, MAX_REFS,
                       &o.n_ref, err)) ){
    *usage = 1;
    goto done;
  }
  if( (rc = fly_design_bind(db, raw_id, out->formula, &o, &d, err)) ){
    *usage = rc == FLY_PARSE || rc == FLY_RANGE || rc == FLY_MISUSE;
    goto done;
  }
  fly_design_report rep;
  if( (rc = fly_design_materialise(db, raw_id, d, s->na_error ? FLY_DESIGN_NA_ERROR
                                                               : FLY_DESIGN_NA_OMIT,
                                   &out->dataset_id, &rep, err)) ){
    *usage = rc == FLY_RANGE && s->na_error;
    goto done;
  }
  out->derived = 1;
  out->n_rows = rep.n_rows;
  out->n_omitted = rep.n_omitted;
  snprintf(out->why, sizeof out->why, "formula %s: %s data set of %lld rows%s%s",
           out->formula, rep.reused ? "the" : "a new", (long long)rep.n_rows,
           rep.why[0] ? "; " : "", rep.why);
  size_t nl = 0;
  const char *const *lv = fly_design_response_levels(d, &nl);
  const char *mname = s->model ? s->model : "logistic";
  if( lv && !strcmp(mname, "logistic") ){
    if( nl != 2 ){
      rc = fly_fail(err, FLY_MISUSE, "--model logistic needs a target with two levels; "
                    "'%s' has %zu (--model softmax models more)",
                    ds->cols[fly_design_response(d) + (size_t)ds->has_intercept].name, nl);
      *usage = 1;
      goto done;
    }
    snprintf(out->target_note, sizeof out->target_note,
             "logistic: P(%s = '%s'), against '%s' (the first level), as glm does",
             ds->cols[fly_design_response(d) + (size_t)ds->has_intercept].name, lv[1], lv[0]);
  }
done:
  fly_design_free(d);
  fly_dataset_free(ds);
  return rc;
}
