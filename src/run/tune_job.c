/*
 * tune_job.c -- tuning as a job of its own (`flydb tune`): the model spec
 * resolved against the data set, then the bound set found or built
 * (tune/tune.h) and loaded; a shard manifest is tuned by its ranks
 * (shard/shard_map.h).
 */
#include "run/run.h"
#include "shard/shard_map.h"
#include "store/dataset.h"
#include "store/db.h"
#include "tune/tune.h"

fly_rc fly_run_tune(fly_db *db, const char *data, const fly_model_spec *s,
                    const fly_tune_opts *o, fly_bounds **pb, int *usage, fly_err *err)
{
  int64_t ds = 0, bs = 0;
  fly_model m;
  fly_rc rc;
  *pb = NULL;
  *usage = 0;
  if( fly_shard_is_manifest(db) ) return fly_shard_tune_bounds(db, s, o, pb, err);
  if( (rc = fly_dataset_find(db, data, &ds, err)) ) return rc;
  if( (rc = fly_model_spec_resolve(s, db, ds, &m, err)) ){
    *usage = rc == FLY_MISUSE;
    return rc;
  }
  if( (rc = fly_tune_get(db, ds, &m, o, &bs, err)) ) return rc;
  return fly_bounds_load(db, bs, &m, pb, err);
}
