-- flydb schema, version 1.
-- One file holds data sets (rows in LZ4 pages), tuned bounds (per-row
-- bound parameters in pages, moment tables), and runs (draws, diagnostics,
-- checkpoints).  PRAGMA user_version is the schema version and
-- application_id = 0x466c7944 ("FlyD"); both are set by the program.

-- A data set: rows of `width` values, the features (intercept first when
-- present) then the target in the last position.
CREATE TABLE dataset (
  id            INTEGER PRIMARY KEY,
  name          TEXT    NOT NULL UNIQUE,
  source        TEXT    NOT NULL,          -- CSV path or '<stdin>'
  n_rows        INTEGER NOT NULL CHECK (n_rows > 0),
  width         INTEGER NOT NULL CHECK (width >= 2),  -- values per stored row
  n_features    INTEGER NOT NULL,          -- D, intercept included
  has_intercept INTEGER NOT NULL CHECK (has_intercept IN (0, 1)),
  target_name   TEXT    NOT NULL,
  page_rows     INTEGER NOT NULL CHECK (page_rows > 0),
  n_pages       INTEGER NOT NULL,
  prec          INTEGER NOT NULL CHECK (prec IN (4, 8)),  -- bytes per stored value
  raw_bytes     INTEGER NOT NULL,          -- rows x width x prec
  stored_bytes  INTEGER NOT NULL,          -- sum of payload sizes
  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);

-- Column idx of a stored row (0-based), with statistics over all rows.
CREATE TABLE dataset_column (
  dataset_id  INTEGER NOT NULL REFERENCES dataset(id) ON DELETE CASCADE,
  idx         INTEGER NOT NULL,
  name        TEXT    NOT NULL,
  role        TEXT    NOT NULL CHECK (role IN ('intercept', 'feature', 'target')),
  csv_col     INTEGER,                     -- 1-based CSV column, NULL for the intercept
  n           INTEGER NOT NULL,
  mean        REAL    NOT NULL,
  sd          REAL    NOT NULL,
  min         REAL    NOT NULL,
  max         REAL    NOT NULL,
  PRIMARY KEY (dataset_id, idx)
) WITHOUT ROWID;

-- Rows first_row .. first_row+n_rows-1 of a data set, row-major; immutable.
-- checksum: XXH3-64 of payload as stored (signed 64-bit reinterpretation).
CREATE TABLE page (
  id          INTEGER PRIMARY KEY,         -- rowid for incremental BLOB I/O
  dataset_id  INTEGER NOT NULL REFERENCES dataset(id) ON DELETE CASCADE,
  page_no     INTEGER NOT NULL,
  first_row   INTEGER NOT NULL,
  n_rows      INTEGER NOT NULL,
  codec       INTEGER NOT NULL CHECK (codec IN (0, 1)),   -- 0 raw, 1 lz4
  raw_bytes   INTEGER NOT NULL,
  checksum    INTEGER NOT NULL,
  payload     BLOB    NOT NULL,
  UNIQUE (dataset_id, page_no)
);

-- Tuned lower bounds for (data set, model, prior, tuning).  Per-row bound
-- parameters live in bound_page (f32, width = n_xi + 1: the xi values, then
-- the gap key used by the thinning bound), moments in `moment`.
CREATE TABLE bound_set (
  id           INTEGER PRIMARY KEY,
  dataset_id   INTEGER NOT NULL REFERENCES dataset(id) ON DELETE CASCADE,
  model        TEXT    NOT NULL,
  model_opts   TEXT    NOT NULL,           -- e.g. 'prior=normal;scale=1'
  tuning       TEXT    NOT NULL,           -- 'map' or 'fixed=1.5'
  status       TEXT    NOT NULL CHECK (status IN ('building', 'ready')),
  n_params     INTEGER NOT NULL,
  width        INTEGER NOT NULL,           -- values per bound row
  page_rows    INTEGER NOT NULL,
  n_pages      INTEGER NOT NULL DEFAULT 0,
  theta_map    BLOB,                       -- f64[n_params]
  laplace_cov  BLOB,                       -- f64[n_params^2], P = H^-1
  laplace_prec BLOB,                       -- f64[n_params^2], H
  key_prec     BLOB,                       -- f64[D^2], H_D: thinning-key metric
  map_logpost  REAL,
  map_iters    INTEGER,
  map_grad_norm REAL,
  tune_seconds REAL,
  created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  UNIQUE (dataset_id, model, model_opts, tuning)
);

CREATE TABLE bound_page (
  id           INTEGER PRIMARY KEY,
  bound_set_id INTEGER NOT NULL REFERENCES bound_set(id) ON DELETE CASCADE,
  page_no      INTEGER NOT NULL,
  first_row    INTEGER NOT NULL,
  n_rows       INTEGER NOT NULL,
  codec        INTEGER NOT NULL CHECK (codec IN (0, 1)),
  raw_bytes    INTEGER NOT NULL,
  checksum     INTEGER NOT NULL,
  payload      BLOB    NOT NULL,
  UNIQUE (bound_set_id, page_no)
);

-- Collapsed bound statistics: for logistic regression S (D x D), mu (D x 1),
-- c (1 x 1), so that sum_n log B_n(th) = th'S th + th'mu + c.
CREATE TABLE moment (
  bound_set_id INTEGER NOT NULL REFERENCES bound_set(id) ON DELETE CASCADE,
  name         TEXT    NOT NULL,
  i            INTEGER NOT NULL,
  j            INTEGER NOT NULL,
  value        REAL    NOT NULL,
  PRIMARY KEY (bound_set_id, name, i, j)
) WITHOUT ROWID;

-- A sampling run: chains of one model on one data set.
CREATE TABLE run (
  id            INTEGER PRIMARY KEY,
  dataset_id    INTEGER NOT NULL REFERENCES dataset(id),
  bound_set_id  INTEGER REFERENCES bound_set(id),
  model         TEXT    NOT NULL,
  sampler       TEXT    NOT NULL,
  z_mode        TEXT    NOT NULL,          -- 'regular', 'explicit', 'implicit', 'gibbs'
  n_chains      INTEGER NOT NULL,
  n_warmup      INTEGER NOT NULL,
  n_iters       INTEGER NOT NULL,          -- post-warm-up iterations
  thin          INTEGER NOT NULL,
  seed          INTEGER NOT NULL,
  n_params      INTEGER NOT NULL,
  status        TEXT    NOT NULL CHECK (status IN ('running', 'done', 'failed')),
  message       TEXT,
  version       TEXT    NOT NULL,
  created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  finished_at   TEXT,
  wall_seconds  REAL,                      -- whole command(s), tuning included
  sample_seconds REAL                      -- the iteration loops only (slowest chain)
);

-- Every resolved option of a run; is_default = 1 when the user did not set it.
CREATE TABLE run_config (
  run_id     INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  key        TEXT    NOT NULL,
  value      TEXT    NOT NULL,
  is_default INTEGER NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

CREATE TABLE param (
  run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  idx    INTEGER NOT NULL,
  name   TEXT    NOT NULL,
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

-- Draws, long: iterations are numbered 1.. across warm-up and sampling;
-- iter <= run.n_warmup are warm-up draws.
CREATE TABLE draw (
  run_id INTEGER NOT NULL,
  chain  INTEGER NOT NULL,
  iter   INTEGER NOT NULL,
  idx    INTEGER NOT NULL,
  value  REAL    NOT NULL,
  PRIMARY KEY (run_id, chain, iter, idx)
) WITHOUT ROWID;

-- Per-iteration diagnostics.
CREATE TABLE iteration (
  run_id      INTEGER NOT NULL,
  chain       INTEGER NOT NULL,
  iter        INTEGER NOT NULL,
  log_joint   REAL,      -- log p(theta, z | x) up to a constant
  n_bright    INTEGER NOT NULL,
  n_lik_evals INTEGER NOT NULL,  -- per-datum likelihood evaluations this iteration
  n_reads     INTEGER NOT NULL,  -- rows read from the store this iteration
  accepted    INTEGER NOT NULL,  -- theta proposal accepted (0/1)
  step_size   REAL,
  full_logpost REAL,   -- exact log p(theta | x) + const by a full scan, every
                       -- --full-logpost-every iterations (NULL otherwise)
  PRIMARY KEY (run_id, chain, iter)
) WITHOUT ROWID;

-- Latest resumable state of each chain (theta, z, RNG, adaptation).
CREATE TABLE checkpoint (
  run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  chain  INTEGER NOT NULL,
  iter   INTEGER NOT NULL,     -- iterations completed and committed
  state  BLOB    NOT NULL,
  PRIMARY KEY (run_id, chain)
) WITHOUT ROWID;

CREATE TABLE summary (
  run_id    INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  idx       INTEGER NOT NULL,
  name      TEXT    NOT NULL,
  mean      REAL, sd REAL, median REAL, mad REAL, q5 REAL, q95 REAL,
  rhat      REAL, ess_bulk REAL, ess_tail REAL, mcse_mean REAL,
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

CREATE VIEW draws_named AS
  SELECT d.run_id, d.chain, d.iter, p.name, d.value,
         d.iter <= r.n_warmup AS warmup
  FROM draw d
  JOIN param p ON p.run_id = d.run_id AND p.idx = d.idx
  JOIN run r   ON r.id = d.run_id;

CREATE VIEW runs AS
  SELECT r.id AS run_id, ds.name AS dataset, r.model, r.sampler, r.z_mode,
         r.n_chains, r.n_warmup, r.n_iters, r.seed, r.status, r.created_at,
         r.wall_seconds, r.sample_seconds
  FROM run r JOIN dataset ds ON ds.id = r.dataset_id;
