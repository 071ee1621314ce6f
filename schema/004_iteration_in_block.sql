-- flydb schema, version 4: the per-iteration diagnostics move into the
-- draw_block row of blk = 0, and `iteration` becomes a view.
--
-- Why: with version 3 each kept iteration still cost two B-tree inserts,
-- the draw block and the `iteration` row.  From version 4 an iteration of
-- up to 64 parameters is one insert.  The view `iteration` has the
-- columns and meaning of the table of versions 1-3: one row per
-- stored iteration, n_bright, n_lik_evals, n_reads and accepted never NULL.
-- Writers and deleters use draw_block; readers may use either.
--
-- The columns are added, not the table rebuilt: rows of blk > 0 and
-- existing rows get NULL, and no view over draw_block needs recreating.
-- The CHECK (tested against every row as it is added, when all are NULL)
-- keeps the old NOT NULL constraints: a row either has no diagnostics
-- (blk > 0, or a version-3 draw without an iteration row) or has them all
-- and blk = 0.
ALTER TABLE draw_block ADD COLUMN log_joint   REAL;     -- log p(theta, z | x) + const
ALTER TABLE draw_block ADD COLUMN n_bright    INTEGER;
ALTER TABLE draw_block ADD COLUMN n_lik_evals INTEGER;  -- per-datum likelihood evaluations
ALTER TABLE draw_block ADD COLUMN n_reads     INTEGER;  -- rows read from the store
ALTER TABLE draw_block ADD COLUMN accepted    INTEGER;  -- theta proposal accepted (0/1)
ALTER TABLE draw_block ADD COLUMN step_size   REAL;
ALTER TABLE draw_block ADD COLUMN full_logpost REAL     -- exact log p(theta | x) + const
  CONSTRAINT diagnostics CHECK (                         -- (--full-logpost-every), or NULL
    CASE WHEN n_bright IS NULL
         THEN coalesce(log_joint, n_lik_evals, n_reads, accepted, step_size,
                       full_logpost) IS NULL
         ELSE blk = 0 AND n_lik_evals IS NOT NULL AND n_reads IS NOT NULL
              AND accepted IS NOT NULL END);

-- Databases of version 3 keep their diagnostics, exactly.
UPDATE draw_block
SET log_joint = i.log_joint, n_bright = i.n_bright, n_lik_evals = i.n_lik_evals,
    n_reads = i.n_reads, accepted = i.accepted, step_size = i.step_size,
    full_logpost = i.full_logpost
FROM iteration i
WHERE draw_block.blk = 0 AND i.run_id = draw_block.run_id
  AND i.chain = draw_block.chain AND i.iter = draw_block.iter;

-- An iteration row without draws (not written by flydb, but possible in a
-- damaged file) is kept as a block row whose values are NULL, so that
-- `flydb check` reports the missing draws as before.
INSERT INTO draw_block(run_id, chain, iter, blk, log_joint, n_bright, n_lik_evals,
                       n_reads, accepted, step_size, full_logpost)
SELECT run_id, chain, iter, 0, log_joint, n_bright, n_lik_evals, n_reads,
       accepted, step_size, full_logpost
FROM iteration i
WHERE NOT EXISTS (SELECT 1 FROM draw_block b WHERE b.run_id = i.run_id
                  AND b.chain = i.chain AND b.iter = i.iter AND b.blk = 0);

DROP TABLE iteration;

-- One row per stored iteration, as the table of versions 1-3 was.
CREATE VIEW iteration AS
  SELECT run_id, chain, iter, log_joint, n_bright, n_lik_evals, n_reads,
         accepted, step_size, full_logpost
  FROM draw_block
  WHERE blk = 0 AND n_bright IS NOT NULL;
