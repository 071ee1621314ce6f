-- flydb schema, version 9: typed columns, missing values, and data sets
-- derived from others (materialised model matrices).
--
-- Why: real CSVs hold categorical columns ('red', 'blue') and missing
-- cells.  A categorical column is stored in the pages as integer level
-- codes 0..n_levels-1 (first-seen order), its labels and counts in table
-- `level`; a missing value of any column is a NaN in the pages, counted in
-- dataset_column.n_missing.  The statistics n, mean, sd, min, max cover the
-- values that are not missing (a categorical column's: its codes).
--
-- Every data set written before version 9 is numeric without missing
-- values, which is what the defaults say.
ALTER TABLE dataset_column ADD COLUMN type TEXT NOT NULL DEFAULT 'numeric'
  CONSTRAINT column_type CHECK (type IN ('numeric', 'categorical'));
ALTER TABLE dataset_column ADD COLUMN n_missing INTEGER NOT NULL DEFAULT 0
  CONSTRAINT column_missing CHECK (n_missing >= 0);

-- The levels of a categorical column idx of a data set: code is the value
-- stored in the pages, count the rows holding it.  Labels are the cell
-- texts exactly (quotes undone), distinct within a column.
CREATE TABLE level (
  dataset_id  INTEGER NOT NULL,
  idx         INTEGER NOT NULL,            -- dataset_column.idx
  code        INTEGER NOT NULL CHECK (code >= 0),
  label       TEXT    NOT NULL,
  count       INTEGER NOT NULL CHECK (count >= 0),
  PRIMARY KEY (dataset_id, idx, code),
  UNIQUE (dataset_id, idx, label),
  FOREIGN KEY (dataset_id, idx) REFERENCES dataset_column(dataset_id, idx)
    ON DELETE CASCADE
) WITHOUT ROWID;

-- A data set derived from another by a model design (src/io/design.h):
-- its rows are the model-matrix rows of the parent's rows that have no
-- missing value in a column the design uses, in the parent's order.
-- design_key is the canonical text of the bound design; one derived data
-- set per (parent, key), reused by later runs.
CREATE TABLE derived (
  dataset_id  INTEGER PRIMARY KEY REFERENCES dataset(id) ON DELETE CASCADE,
  parent_id   INTEGER NOT NULL REFERENCES dataset(id) ON DELETE CASCADE,
  design_key  TEXT    NOT NULL,
  n_omitted   INTEGER NOT NULL CHECK (n_omitted >= 0),  -- parent rows left out
  UNIQUE (parent_id, design_key)
);

-- Rows of the parent left out because column idx (of the parent) is
-- missing; a row missing in several used columns counts for each.
CREATE TABLE derived_omit (
  dataset_id  INTEGER NOT NULL REFERENCES derived(dataset_id) ON DELETE CASCADE,
  idx         INTEGER NOT NULL,            -- the parent's dataset_column.idx
  n_rows      INTEGER NOT NULL CHECK (n_rows > 0),
  PRIMARY KEY (dataset_id, idx)
) WITHOUT ROWID;
