-- flydb schema, version 7: the theta kernel's own per-iteration statistics
-- in the draw_block row of blk = 0, and in the view `iteration`.
--
-- Why: NUTS reports what Stan reports (tree depth, leapfrog steps, whether
-- the trajectory diverged, the Hamiltonian at the sampled point, and its
-- acceptance statistic), and `flydb summary` warns from them as Stan does.
-- Kernels without them (mh, mala, slice, hmc) leave them NULL, and so do
-- all rows written before version 7.
--
-- The columns are added, not the table rebuilt (as in version 4).  The
-- CHECK `kernel_stats` keeps the rule of `diagnostics`: a row of blk > 0
-- carries no diagnostics, so these are NULL there too.  They are either
-- all NULL or all set, and only on a row that has the diagnostics.
ALTER TABLE draw_block ADD COLUMN treedepth   INTEGER;  -- NUTS tree depth reached
ALTER TABLE draw_block ADD COLUMN n_leapfrog  INTEGER;  -- leapfrog steps this iteration
ALTER TABLE draw_block ADD COLUMN divergent   INTEGER;  -- trajectory diverged (0/1)
ALTER TABLE draw_block ADD COLUMN energy      REAL;     -- Hamiltonian at the sampled point
ALTER TABLE draw_block ADD COLUMN accept_stat REAL      -- mean min(1, exp(H0 - H)) over the tree
  CONSTRAINT kernel_stats CHECK (
    CASE WHEN treedepth IS NULL
         THEN coalesce(n_leapfrog, divergent, energy, accept_stat) IS NULL
         ELSE blk = 0 AND n_bright IS NOT NULL AND n_leapfrog IS NOT NULL
              AND divergent IS NOT NULL END);

DROP VIEW iteration;

-- One row per stored iteration, as in versions 4-6, with the kernel's
-- statistics (NULL for kernels without them).
CREATE VIEW iteration AS
  SELECT run_id, chain, iter, log_joint, n_bright, n_lik_evals, n_reads,
         accepted, step_size, full_logpost,
         treedepth, n_leapfrog, divergent, energy, accept_stat
  FROM draw_block
  WHERE blk = 0 AND n_bright IS NOT NULL;
