-- flydb schema, version 12: posterior predictive checks of a run (`flydb
-- ppc`, src/ppc/ppc.c owns the three ppc tables) and the relative
-- efficiency of each loo row (src/loo/loo.c).
--
-- Why: a fitted model is checked against its own data: for a classifier,
-- rows binned by predicted probability against the observed frequency
-- with the band the model itself predicts (calibration); for robust
-- regression the standardised residuals against the Student-t (PIT, QQ
-- and tail).  The check streams the rows once, so only per-bin sums are
-- kept: a table of bins and, for the bands, the replicated count of each
-- bin at each posterior draw.  A new check of a run replaces the old one
-- in one transaction.
CREATE TABLE ppc (
  run_id     INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
  kind       TEXT    NOT NULL CHECK (kind IN ('calibration', 'residual')),
  model      TEXT    NOT NULL,                    -- logistic, softmax, robust
  n_rows     INTEGER NOT NULL CHECK (n_rows >= 1),
  n_draws    INTEGER NOT NULL CHECK (n_draws >= 1), -- M, pooled over chains
  n_bins     INTEGER NOT NULL CHECK (n_bins >= 1),
  n_classes  INTEGER NOT NULL CHECK (n_classes >= 1), -- classes checked (1 unless softmax)
  seed       INTEGER NOT NULL,                    -- replications' seed
  level      REAL    NOT NULL,                    -- central probability of the bands
  ece        REAL,     -- expected calibration error (softmax: mean over classes)
  mce        REAL,     -- largest |observed - predicted| of a non-empty bin
  accuracy   REAL,     -- argmax of the mean predicted probabilities (logistic: p > 1/2)
  n_outside  INTEGER,  -- non-empty bins whose observed frequency is outside its band
  n_nonempty INTEGER,  -- non-empty bins (all classes)
  nu         REAL,     -- Student-t degrees of freedom (residual)
  sigma      REAL,     -- its scale (residual)
  seconds    REAL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

-- One line of a check (docs/format.md section 8):
--  part 'calibration': bin of class `class` (logistic: 1, the event y = 1),
--    rows with lo <= mean predicted probability < hi (the last bin closed):
--    n rows, predicted = their mean predicted probability, observed = the
--    frequency of the class among them, band_lo/band_hi the band of the
--    replicated frequency;
--  part 'pit': rows whose PIT F_t((y - x'b)/sigma) lies in [lo, hi): n,
--    observed = n / n_rows, predicted = hi - lo, band_lo/band_hi the band
--    of the replicated fraction;
--  part 'qq': level lo, predicted = the Student-t quantile, observed = the
--    residuals' quantile;
--  part 'tail': two-sided level lo, predicted = lo, observed = the fraction
--    of rows with |r| above the t quantile hi, n of them.
CREATE TABLE ppc_bin (
  run_id    INTEGER NOT NULL REFERENCES ppc(run_id) ON DELETE CASCADE,
  part      TEXT    NOT NULL CHECK (part IN ('calibration', 'pit', 'qq', 'tail')),
  class     INTEGER NOT NULL,
  bin       INTEGER NOT NULL,        -- 0-based within (part, class)
  lo        REAL    NOT NULL,
  hi        REAL    NOT NULL,
  n         INTEGER,
  predicted REAL,
  observed  REAL,
  band_lo   REAL,
  band_hi   REAL,
  PRIMARY KEY (run_id, part, class, bin)
) WITHOUT ROWID;

-- The replicated count of a calibration bin at posterior draw `draw`
-- (0-based among the n_draws used): rows of the bin whose replicated
-- target y_rep ~ p(y | theta_draw) is the class; of a residual check's PIT
-- bin (class 0): rows whose replicated residual falls in the bin.
CREATE TABLE ppc_rep (
  run_id INTEGER NOT NULL REFERENCES ppc(run_id) ON DELETE CASCADE,
  class  INTEGER NOT NULL,
  bin    INTEGER NOT NULL,
  draw   INTEGER NOT NULL,
  n_rep  INTEGER NOT NULL,
  PRIMARY KEY (run_id, class, bin, draw)
) WITHOUT ROWID;

-- r_eff of each loo row: 'given' (--r-eff, the same for every row) or
-- 'chains' (each row's own, as loo::relative_eff on exp(log_lik); loo.r_eff
-- then holds their mean and loo_point.r_eff each row's).
ALTER TABLE loo ADD COLUMN r_eff_source TEXT NOT NULL DEFAULT 'given'
  CHECK (r_eff_source IN ('given', 'chains'));
ALTER TABLE loo_point ADD COLUMN r_eff REAL;
