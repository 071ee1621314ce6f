/*
 * shard.c -- `flydb shard`: split a data set into shard databases with a
 * manifest, assemble a manifest from shards made elsewhere, or verify one
 * (all through shard/shard.h).
 *
 *   flydb shard --db big.db --shards S --out DIR    DIR/shard-000.db ...
 *                                                   and DIR/manifest.db
 *   flydb shard --assemble --manifest M SHARD...    M lists the shards,
 *                                                   in that row order
 *   flydb shard --verify --manifest M [--full]      each shard present,
 *                                                   matching (and with
 *                                                   --full, every row)
 *   [mpirun -np R] flydb shard --tune-bounds --manifest M: MAP,
 *                                                   Laplace precision, each
 *                                                   shard's xi and moments,
 *                                                   each rank reading and
 *                                                   writing its own shards
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "modelopt.h"
#include "mpi/comm.h"
#include "shard/shard.h"
#include "shard/shard_map.h"

static void show(void *u, const fly_shard_info *s)
{
  (void)u;
  printf("  shard %lld: %s, rows %lld..%lld (%lld), digest %016llx\n",
         (long long)s->k, s->path, (long long)s->first_row,
         (long long)(s->first_row + s->n_rows - 1), (long long)s->n_rows,
         (unsigned long long)s->digest);
}

int fly_cmd_shard(int argc, char **argv)
{
  fly_opt opts[] = {
    { "db", FLY_OPT_VALUE, "database to split (default ./flydb.db)", 0, 0 },
    { "data", FLY_OPT_VALUE, "data set to split (default: the only one)", 0, 0 },
    { "shards", FLY_OPT_VALUE, "number of shards S (contiguous row ranges)", 0, 0 },
    { "out", FLY_OPT_VALUE, "directory for the shards and manifest.db (made if missing)", 0, 0 },
    { "assemble", FLY_OPT_FLAG, "write --manifest listing the SHARD files given, in row order", 0, 0 },
    { "verify", FLY_OPT_FLAG, "check --manifest against its shards", 0, 0 },
    { "full", FLY_OPT_FLAG, "with --verify: read every row and compare the digests", 0, 0 },
    { "manifest", FLY_OPT_VALUE, "manifest database (with --assemble, --verify or --tune-bounds)", 0, 0 },
    { "tune-bounds", FLY_OPT_FLAG, "tune the bounds of --manifest: MAP, Laplace precision, each "
                            "shard's xi and moments (by mpirun's ranks, or one process)", 0, 0 },
    FLY_MODEL_OPTS,
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_rc rc;
  const char *synopsis = "--shards S --out DIR [--db PATH] [--data NAME] | "
                         "--assemble --manifest M SHARD... | --verify --manifest M [--full] | "
                         "--tune-bounds --manifest M [model options]";

  if( fly_args_parse(&a, argc, argv, FLY_ARGS_MAXPOS, &err) )
    return fly_usage_error(&a, "shard", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "shard", synopsis); return 0; }
  const char *manifest = fly_args_str(&a, "manifest", NULL);
  int assemble = fly_args_set(&a, "assemble"), verify = fly_args_set(&a, "verify");
  /* Not --tune: mpirun takes "--tune FILE" for itself wherever it appears. */

  if( fly_args_set(&a, "tune-bounds") ){
    fly_model_spec spec;
    fly_comm *c = NULL;
    fly_shard_map *r = NULL;
    if( !manifest || assemble || verify ){
      fly_fail(&err, FLY_MISUSE, "--tune-bounds needs --manifest M, and excludes --assemble and --verify");
      return fly_usage_error(&a, "shard", synopsis, &err);
    }
    if( fly_modelopt_spec(&a, &spec, &err) )
      return fly_usage_error(&a, "shard", synopsis, &err);
    rc = fly_comm_open(&c, &err);
    if( rc == FLY_OK ) rc = fly_shard_map_run(manifest, &spec, c, 1, &r, &err);
    if( rc == FLY_OK && fly_comm_rank(c) == 0 ){
      /* %a: the exact bits, so runs on different rank counts compare. */
      printf("MAP of %lld rows in %lld shards, %d ranks: log posterior %a\n",
             (long long)r->n_rows, (long long)r->n_shards, fly_comm_size(c), r->logpost);
      for(size_t i = 0; i < r->P; i++)
        printf("theta[%zu] %.17g %a  H[%zu,%zu] %a\n", i, r->theta[i], r->theta[i],
               i, i, r->H[i * r->P + i]);
    }
    fly_shard_map_free(r);
    int code = fly_report(rc, &err);
    fly_comm_close(c);
    return code;
  }
  if( assemble || verify ){
    if( assemble && verify ){
      fly_fail(&err, FLY_MISUSE, "--assemble and --verify exclude each other");
      return fly_usage_error(&a, "shard", synopsis, &err);
    }
    if( !manifest ){
      fly_fail(&err, FLY_MISUSE, "--%s needs --manifest M", assemble ? "assemble" : "verify");
      return fly_usage_error(&a, "shard", synopsis, &err);
    }
    if( assemble ){
      if( a.n_pos == 0 ){
        fly_fail(&err, FLY_MISUSE, "--assemble needs the shard files, in row order");
        return fly_usage_error(&a, "shard", synopsis, &err);
      }
      rc = fly_shard_assemble(manifest, a.pos, (size_t)a.n_pos, &err);
      if( rc == FLY_OK )
        fprintf(stderr, "wrote %s listing %d shards\n", manifest, a.n_pos);
      return fly_report(rc, &err);
    }
    int64_t n = 0;
    printf("manifest %s\n", manifest);
    rc = fly_shard_verify(manifest, fly_args_set(&a, "full"), show, NULL, &n, &err);
    if( rc == FLY_OK ) printf("ok: %lld rows%s\n", (long long)n,
                              fly_args_set(&a, "full") ? ", every digest matches" : "");
    return fly_report(rc, &err);
  }

  int64_t s = 0;
  if( a.n_pos != 0 ){
    fly_fail(&err, FLY_MISUSE, "shard files are given only with --assemble");
    return fly_usage_error(&a, "shard", synopsis, &err);
  }
  if( !fly_args_set(&a, "shards") || !fly_args_set(&a, "out") ){
    fly_fail(&err, FLY_MISUSE, "splitting needs --shards S and --out DIR");
    return fly_usage_error(&a, "shard", synopsis, &err);
  }
  if( fly_args_int(&a, "shards", 0, 1, (int64_t)1 << 31, &s, &err) )
    return fly_usage_error(&a, "shard", synopsis, &err);
  const char *out = fly_args_str(&a, "out", NULL);
  rc = fly_shard_split(fly_args_str(&a, "db", "flydb.db"), fly_args_str(&a, "data", NULL),
                       s, out, &err);
  if( rc == FLY_OK )
    fprintf(stderr, "wrote %lld shards and %s/%s\n", (long long)s, out, FLY_SHARD_MANIFEST);
  return fly_report(rc, &err);
}
