/*
 * tune_job.c -- tuning as a job of its own (`flydb tune`): the data set the
 * model reads (run/data.h), the model spec resolved against it, then the
 * bound set found or built
 * (tune/tune.h) and loaded; a shard manifest is tuned by its ranks
 * (shard/shard_map.h).
 */
#include "run/data.h"
#include "run/run.h"
#include "shard/shard_map.h"
#include "store/dataset.h"
#include "store/db.h"
#include "tune/tune.h"

fly_rc fly_run_tune(fly_db *db, const char *data, const fly_model_spec *s,
                    const fly_tune_opts *o, const fly_run_hooks *hooks, fly_bounds **pb,
                    int *usage, fly_err *err)
{
  int64_t ds = 0, bs = 0;
  fly_model m;
  fly_run_data_out dout;
  fly_rc rc;
  *pb = NULL;
  *usage = 0;
  if( fly_shard_is_manifest(db) ) return fly_shard_tune_bounds(db, s, o, pb, err);
  if( (rc = fly_dataset_find(db, data, &ds, err)) ) return rc;
  if( (rc = fly_run_data(db, ds, s, &dout, usage, err)) ) return rc;
  if( dout.derived && hooks && hooks->message ){
    hooks->message(hooks->ctx, dout.why);
    if( dout.target_note[0] ) hooks->message(hooks->ctx, dout.target_note);
  }
  ds = dout.dataset_id;
  if( (rc = fly_model_spec_resolve(s, db, ds, &m, err)) ){
    *usage = rc == FLY_MISUSE;
    return rc;
  }
  if( (rc = fly_tune_get(db, ds, &m, o, &bs, err)) ) return rc;
  return fly_bounds_load(db, bs, &m, pb, err);
}
