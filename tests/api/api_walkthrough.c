/* The library's round trip: CSV -> data set -> bounds -> chains -> draws,
 * through flydb.h only.  Usage: api_walkthrough LOGISTIC_CSV SCRATCH_DB */
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include "flydb.h"

#define CHECK(c) do{ if( !(c) ){ fprintf(stderr, "FAIL %s: %s\n", #c, err.msg); return 1; } }while(0)

int main(int argc, char **argv)
{
  fly_err err = {0};
  fly_ingest_opts io; fly_ingest_result ir;
  fly_run_cfg cfg; fly_run_result res;
  fly_db *db = NULL; fly_bounds *bd = NULL; fly_trace_reader *tr = NULL;
  double x[2 * 400], truth[2] = { 0.135, 2.0 };     /* datasets/toy/logistic.truth.csv */
  size_t n = 0; int usage = 0;
  if( argc != 3 ) return 2;
  unlink(argv[2]);
  fly_ingest_opts_default(&io);
  CHECK(fly_ingest(argv[2], NULL, argv[1], &io, &ir, &err) == FLY_OK && ir.n_rows == 2000);
  CHECK(fly_db_open(argv[2], 0, &db, &err) == FLY_OK);
  fly_model_spec spec = { .model = "logistic" };
  CHECK(fly_run_tune(db, NULL, &spec, NULL, NULL, &bd, &usage, &err) == FLY_OK && bd->P == 2);
  fly_run_cfg_default(&cfg);
  cfg.iters = 400; cfg.seed = 11; cfg.seed_set = 1;
  CHECK(fly_run_sample(argv[2], &cfg, NULL, &res, &err) == FLY_OK && res.chains == 2);
  CHECK(fly_trace_reader_open(db, res.run_id, &tr, &err) == FLY_OK);
  for(size_t c = 0; c < 2; c++){
    CHECK(fly_trace_draws(tr, c, 0, 2, (int64_t)cfg.iters / 2, 400, x, NULL, &n, &err) == FLY_OK);
    CHECK(n == 400);
    for(size_t p = 0; p < 2; p++){     /* the truth within 4 posterior sd */
      double m = 0, v = 0;
      for(size_t t = 0; t < n; t++) m += x[p * 400 + t] / (double)n;
      for(size_t t = 0; t < n; t++) v += pow(x[p * 400 + t] - m, 2) / (double)(n - 1);
      printf("chain %zu theta[%zu]: mean %.4f sd %.4f (truth %.3f)\n", c, p, m, sqrt(v), truth[p]);
      CHECK(fabs(m - truth[p]) < 4 * sqrt(v) && fabs(m - bd->theta_map[p]) < sqrt(v));
    }
  }
  fly_trace_reader_close(tr); fly_bounds_free(bd); fly_db_close(db);
  return 0;
}
