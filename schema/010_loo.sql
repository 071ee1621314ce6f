-- flydb schema, version 10: leave-one-out cross-validation of a run
-- (`flydb loo`, src/loo/loo.c owns both tables).
--
-- Why: PSIS-LOO (the expected log pointwise predictive density of each data
-- row left out, and its Pareto k diagnostic) is how two models of the same
-- data are compared.  On tall data it is estimated from m sampled rows
-- (Magnusson et al. 2019, as R's loo::loo_subsample), so the table keeps
-- the estimate with both its standard errors, and loo_point the sampled
-- rows (every row when method = 'exact') with the names and definitions of
-- R's loo package.  A new result of a run replaces the old one in one
-- transaction.
CREATE TABLE loo (
  run_id         INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
  method         TEXT    NOT NULL CHECK (method IN ('exact', 'subsample')),
  n_rows         INTEGER NOT NULL CHECK (n_rows >= 1),         -- N
  m              INTEGER NOT NULL CHECK (m >= 1 AND m <= n_rows), -- rows with exact PSIS-LOO
  n_draws        INTEGER NOT NULL CHECK (n_draws >= 2),        -- S, pooled over chains
  seed           INTEGER NOT NULL,                             -- row sample's seed
  r_eff          REAL    NOT NULL,                             -- relative efficiency used
  approximation  TEXT    NOT NULL,                             -- 'plpd': log lik at the posterior mean
  elpd_loo       REAL    NOT NULL,
  se             REAL    NOT NULL,   -- SE of elpd_loo (spread of the rows)
  subsampling_se REAL    NOT NULL,   -- SE from sampling m of N rows (0 when exact)
  p_loo          REAL    NOT NULL,
  p_loo_se       REAL    NOT NULL,
  looic          REAL    NOT NULL,   -- -2 elpd_loo
  looic_se       REAL    NOT NULL,
  k_good         INTEGER NOT NULL,   -- sampled rows with k <= 0.5
  k_ok           INTEGER NOT NULL,   -- 0.5 < k <= 0.7
  k_bad          INTEGER NOT NULL,   -- 0.7 < k <= 1
  k_verybad      INTEGER NOT NULL,   -- k > 1 (or not estimable)
  seconds        REAL,
  created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

-- One sampled row of a run's loo: row is the 0-based stored row (as
-- page.first_row counts), elpd_loo, p_loo and pareto_k its PSIS-LOO values,
-- plpd its log likelihood at the posterior mean (the approximation).
CREATE TABLE loo_point (
  run_id   INTEGER NOT NULL REFERENCES loo(run_id) ON DELETE CASCADE,
  row      INTEGER NOT NULL,
  elpd_loo REAL    NOT NULL,
  p_loo    REAL    NOT NULL,
  pareto_k REAL,                      -- NULL: not estimable (+inf)
  plpd     REAL    NOT NULL,
  PRIMARY KEY (run_id, row)
) WITHOUT ROWID;
