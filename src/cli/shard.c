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
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "shard/shard.h"

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
    { "manifest", FLY_OPT_VALUE, "manifest database (with --assemble or --verify)", 0, 0 },
    { "help", FLY_OPT_FLAG, "show this help", 0, 0 },
    { NULL, 0, NULL, 0, 0 },
  };
  fly_args a = { opts, {0}, 0 };
  fly_err err = {0};
  fly_rc rc;
  const char *synopsis = "--shards S --out DIR [--db PATH] [--data NAME] | "
                         "--assemble --manifest M SHARD... | --verify --manifest M [--full]";

  if( fly_args_parse(&a, argc, argv, FLY_ARGS_MAXPOS, &err) )
    return fly_usage_error(&a, "shard", synopsis, &err);
  if( fly_args_set(&a, "help") ){ fly_args_usage(&a, "shard", synopsis); return 0; }
  const char *manifest = fly_args_str(&a, "manifest", NULL);
  int assemble = fly_args_set(&a, "assemble"), verify = fly_args_set(&a, "verify");

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
