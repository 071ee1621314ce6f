/*
 * plot.h -- pictures of a run: per parameter its trace, autocorrelation and
 * posterior density, per run the panels of the FlyMC paper's Figure 4 (log
 * joint, bright rows, likelihood evaluations and rows read per iteration),
 * as SVG files drawn with PLplot, and an index.html that shows them all;
 * and the pictures of the run's stored posterior predictive check
 * (ppc/ppc.h): calibration, or the residuals' QQ plot and PIT histogram.
 * plot.c states what each picture shows and the file names.
 *
 * PLplot keeps global state: one picture is drawn at a time, so a process
 * plots from one thread only.
 */
#ifndef FLY_PLOT_H
#define FLY_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "util/err.h"

/* The maximum number of chains a run may have to be plotted. */
#define FLY_PLOT_MAX_CHAINS 4096

typedef struct fly_plot fly_plot;

/* What fly_plot_write draws (an or of these). */
enum {
  FLY_PLOT_MCMC        = 1,  /* trace, acf, density, the run's panels */
  FLY_PLOT_CALIBRATION = 2,  /* the stored calibration check */
  FLY_PLOT_RESIDUALS   = 4,  /* the stored residual check */
  FLY_PLOT_ALL         = 7   /* MCMC and whichever check is stored, if any */
};

/* Read run_id of db (0: the latest run) for plotting: its header and the
 * diagnostics of every chain (5 numbers a kept iteration).  db is borrowed
 * and must outlive the plot.  FLY_RANGE for no such run, a run without
 * draws or more than FLY_PLOT_MAX_CHAINS chains; FLY_CORRUPT, FLY_SQL,
 * FLY_NOMEM.  *pp NULL on failure. */
fly_rc fly_plot_open(fly_db *db, int64_t run_id, fly_plot **pp, fly_err *err);
void   fly_plot_close(fly_plot *pl);                     /* NULL: no-op */

/* The run's id (never 0). */
int64_t fly_plot_run_id(const fly_plot *pl);

/* Draw the pictures of kinds into the existing directory dir, then
 * dir/index.html; *n_files gets the number of SVG files.  kinds other than
 * FLY_PLOT_ALL that name a check the run does not have stored give
 * FLY_RANGE (naming the run).  Each file is written under a
 * temporary name and renamed into place when complete, so a failure
 * leaves no partial file (the pictures finished before it stay).  Once
 * per plot (FLY_MISUSE after).  FLY_IO naming the file, FLY_RANGE for a
 * path longer than 4095 bytes, FLY_NOMEM, FLY_SQL, FLY_CORRUPT.  Memory:
 * the draws of a block of parameters, at most 2^24 doubles. */
fly_rc fly_plot_write(fly_plot *pl, const char *dir, unsigned kinds,
                      size_t *n_files, fly_err *err);

#endif
