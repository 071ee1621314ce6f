-- flydb schema, version 11: predictions of a run for new rows (`flydb
-- predict`, src/predict/predict.c owns the table).
--
-- Why: a fitted model is judged on rows it did not see.  Each prediction
-- of a run on a new file adds one row (a rerun adds another), written in
-- one transaction after every row was predicted: the file, how many rows
-- and draws, the interval's level and, when the file held the target, the
-- held-out scores.  The predictions themselves go to the CSV output, not
-- here (they are as many as the rows).
CREATE TABLE prediction (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  source     TEXT    NOT NULL,                    -- the new rows' file, or <stdin>
  n_rows     INTEGER NOT NULL CHECK (n_rows >= 0),
  n_draws    INTEGER NOT NULL CHECK (n_draws >= 1),  -- S, pooled over chains
  level      REAL    NOT NULL CHECK (level > 0 AND level < 1),
  has_target INTEGER NOT NULL CHECK (has_target IN (0, 1)),
  lpd        REAL,   -- sum over rows of log mean_s p(y_i | th_s); NULL without target
  brier      REAL,   -- logistic, softmax: mean squared error of the probabilities
  auc        REAL,   -- logistic: Mann-Whitney AUC (ties count 1/2)
  accuracy   REAL,   -- softmax: fraction whose most probable class is y
  rmse       REAL,   -- robust: root mean squared error of the predictive mean
  seconds    REAL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX prediction_run ON prediction(run_id);
