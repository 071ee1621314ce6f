/*
 * flydb.h -- the flydb library: exact Bayesian MCMC (Firefly Monte Carlo)
 * for data sets that need not fit in memory, in one SQLite file.
 *
 * What a program does with it, in order (tests/api/api_walkthrough.c is
 * the whole round trip in 40 lines):
 *
 *   fly_ingest()            a CSV stream -> a data set of LZ4 pages
 *                           (io/ingest.h)
 *   fly_db_open()           the database (store/db.h)
 *   fly_run_tune()          the MAP, Laplace matrices and per-row bounds of a
 *                           model, built once and stored (run/run.h)
 *   fly_run_sample()        a sampling job from a typed fly_run_cfg: chains in
 *                           threads, draws and checkpoints committed
 *                           together, progress by callback (run/run.h)
 *   fly_run_resume()        the same job continued from its stored
 *                           configuration after ^C or a crash
 *   fly_trace_reader_open() a run's draws and per-iteration diagnostics
 *                           (store/trace.h)
 *   fly_report_summary()    the posterior table of a run: mean, sd,
 *                           quantiles, R-hat, bulk/tail ESS, MCSE (run/report.h)
 *   fly_export_dir()        a run as CmdStan or long/wide CSV files
 *                           (io/export.h)
 *   fly_plot_open()         its trace, ACF and density plots as SVG
 *                           (io/plot.h)
 *   fly_loo_run()           a run's PSIS-LOO on tall data, stored, and
 *                           fly_loo_compare() of runs by it (loo/loo.h)
 *   fly_dataset_load()      a data set's shape and column statistics
 *                           (store/dataset.h)
 *   fly_versions_get()      the run-time versions of SQLite, LZ4, xxHash and
 *                           OpenBLAS, for bug reports (util/version.h)
 *
 * Conventions (every header below follows them):
 * - Functions return a fly_rc: FLY_OK, an error code (FLY_NOMEM, FLY_IO,
 *   FLY_CORRUPT, FLY_PARSE, FLY_RANGE, FLY_SQL, FLY_NUMERIC, FLY_MISUSE) or a
 *   status (FLY_ROW, FLY_DONE); fly_rc_str() names it.  The last parameter
 *   is a caller-owned fly_err *err (may be NULL) that receives a message
 *   naming the data: file:line:column, the page, the chain and iteration.
 * - Handles are opaque.  A constructor takes an out-pointer that is NULL on
 *   failure; a destructor accepts NULL and cannot fail.  Whoever creates an
 *   object frees it; a borrowed pointer says how long it stays valid.
 * - Thread safety: a handle is used by one thread at a time.  Different
 *   handles, also on the same database file, may be used concurrently (the
 *   run driver gives each chain its own connection); SQLite's WAL lets a
 *   reader query a file while a run writes it.
 * - Same configuration and seed => bit-identical draws, on the same machine
 *   and build (libmvec and OpenBLAS pick kernels by CPU).
 *
 * Link with pkg-config: `cc prog.c $(pkg-config --cflags --libs flydb)`.
 */
#ifndef FLYDB_H
#define FLYDB_H

#include "util/err.h"
#include "util/version.h"
#include "store/db.h"
#include "store/dataset.h"
#include "store/trace.h"
#include "io/ingest.h"
#include "run/run.h"
#include "run/report.h"
#include "io/export.h"
#include "io/plot.h"
#include "loo/loo.h"

#endif
