-- flydb schema, version 8: draws are stored one row per parameter, chain
-- and run of up to 64 consecutive kept iterations (draw_chunk), so that the
-- views read a parameter's draws in order, by a range scan.
--
-- Why: with versions 3-7 a row of draw_block held one iteration's
-- parameters, and the views unpacked it through a join on idx ranges; the
-- everyday query, a per-parameter aggregate grouped by name, then sorted
-- every draw of the run with the whole block row attached (tens of seconds
-- for a few million draws).  A draw_chunk row holds parameter idx of one
-- chain at iterations iter0, iter0 + step, .. iter0 + (n-1) step in
-- columns v0 .. v(n-1) (NULL after them), keyed (run_id, idx, chain,
-- iter0).  The views expand a row through draw_slot (k = 0..63) and pick
-- column vk with a binary CASE (six comparisons); `draws_named` starts from
-- param in name order (index param_name), so `GROUP BY name` and
-- `WHERE name = ..` need no sort and no scan of other parameters.
--
-- Writing stays cheap: the writer buffers iterations in memory and writes
-- P chunk rows per 64 kept iterations, in the transaction of the
-- checkpoint that ends them; a chunk left partial by a commit is rewritten
-- whole (INSERT OR REPLACE, same key) by the next.  So no draw is ever in two
-- rows, and a crash loses or keeps a commit whole.  draw_block keeps the
-- per-iteration diagnostics (one row of blk = 0, read by the view
-- `iteration`) and loses its value columns.

CREATE TABLE draw_chunk (
  run_id INTEGER NOT NULL,
  idx    INTEGER NOT NULL,      -- parameter (param.idx)
  chain  INTEGER NOT NULL,
  iter0  INTEGER NOT NULL,      -- iteration of v0
  step   INTEGER NOT NULL CHECK (step >= 1),   -- iteration of vk = iter0 + k step
  n      INTEGER NOT NULL CHECK (n BETWEEN 1 AND 64),  -- draws in the row: v0 .. v(n-1)
  v0 REAL, v1 REAL, v2 REAL, v3 REAL, v4 REAL, v5 REAL, v6 REAL, v7 REAL, v8 REAL, v9 REAL,
  v10 REAL, v11 REAL, v12 REAL, v13 REAL, v14 REAL, v15 REAL, v16 REAL, v17 REAL, v18 REAL,
  v19 REAL, v20 REAL, v21 REAL, v22 REAL, v23 REAL, v24 REAL, v25 REAL, v26 REAL, v27 REAL,
  v28 REAL, v29 REAL, v30 REAL, v31 REAL, v32 REAL, v33 REAL, v34 REAL, v35 REAL, v36 REAL,
  v37 REAL, v38 REAL, v39 REAL, v40 REAL, v41 REAL, v42 REAL, v43 REAL, v44 REAL, v45 REAL,
  v46 REAL, v47 REAL, v48 REAL, v49 REAL, v50 REAL, v51 REAL, v52 REAL, v53 REAL, v54 REAL,
  v55 REAL, v56 REAL, v57 REAL, v58 REAL, v59 REAL, v60 REAL, v61 REAL, v62 REAL, v63 REAL,
  PRIMARY KEY (run_id, idx, chain, iter0)
) WITHOUT ROWID;

-- k = 0 .. 63: a draw_chunk row c expands to the rows k < c.n.  Its
-- statistics (sqlite_stat1: 64 rows) tell the query planner that it is
-- small, so that a join of draws_named to `iteration` looks each draw's
-- iteration up by its key rather than scanning the chain's iterations.
CREATE TABLE draw_slot (k INTEGER PRIMARY KEY);
WITH RECURSIVE s(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM s WHERE k < 63)
INSERT INTO draw_slot SELECT k FROM s;
ANALYZE draw_slot;

-- Parameters in name order: draws_named's outer loop for GROUP BY name and
-- WHERE name = ...
CREATE INDEX param_name ON param(run_id, name);

-- Databases of version 7 keep their draws, exactly: the rows of the view
-- `draw` (as of version 3) become chunks of up to 64 draws at iterations
-- spaced by the run's thin (a gap in a damaged file starts a new chunk).
INSERT INTO draw_chunk
SELECT run_id, idx, chain, min(iter), thin, count(*),
  max(CASE q % 64 WHEN 0 THEN value END), max(CASE q % 64 WHEN 1 THEN value END),
  max(CASE q % 64 WHEN 2 THEN value END), max(CASE q % 64 WHEN 3 THEN value END),
  max(CASE q % 64 WHEN 4 THEN value END), max(CASE q % 64 WHEN 5 THEN value END),
  max(CASE q % 64 WHEN 6 THEN value END), max(CASE q % 64 WHEN 7 THEN value END),
  max(CASE q % 64 WHEN 8 THEN value END), max(CASE q % 64 WHEN 9 THEN value END),
  max(CASE q % 64 WHEN 10 THEN value END), max(CASE q % 64 WHEN 11 THEN value END),
  max(CASE q % 64 WHEN 12 THEN value END), max(CASE q % 64 WHEN 13 THEN value END),
  max(CASE q % 64 WHEN 14 THEN value END), max(CASE q % 64 WHEN 15 THEN value END),
  max(CASE q % 64 WHEN 16 THEN value END), max(CASE q % 64 WHEN 17 THEN value END),
  max(CASE q % 64 WHEN 18 THEN value END), max(CASE q % 64 WHEN 19 THEN value END),
  max(CASE q % 64 WHEN 20 THEN value END), max(CASE q % 64 WHEN 21 THEN value END),
  max(CASE q % 64 WHEN 22 THEN value END), max(CASE q % 64 WHEN 23 THEN value END),
  max(CASE q % 64 WHEN 24 THEN value END), max(CASE q % 64 WHEN 25 THEN value END),
  max(CASE q % 64 WHEN 26 THEN value END), max(CASE q % 64 WHEN 27 THEN value END),
  max(CASE q % 64 WHEN 28 THEN value END), max(CASE q % 64 WHEN 29 THEN value END),
  max(CASE q % 64 WHEN 30 THEN value END), max(CASE q % 64 WHEN 31 THEN value END),
  max(CASE q % 64 WHEN 32 THEN value END), max(CASE q % 64 WHEN 33 THEN value END),
  max(CASE q % 64 WHEN 34 THEN value END), max(CASE q % 64 WHEN 35 THEN value END),
  max(CASE q % 64 WHEN 36 THEN value END), max(CASE q % 64 WHEN 37 THEN value END),
  max(CASE q % 64 WHEN 38 THEN value END), max(CASE q % 64 WHEN 39 THEN value END),
  max(CASE q % 64 WHEN 40 THEN value END), max(CASE q % 64 WHEN 41 THEN value END),
  max(CASE q % 64 WHEN 42 THEN value END), max(CASE q % 64 WHEN 43 THEN value END),
  max(CASE q % 64 WHEN 44 THEN value END), max(CASE q % 64 WHEN 45 THEN value END),
  max(CASE q % 64 WHEN 46 THEN value END), max(CASE q % 64 WHEN 47 THEN value END),
  max(CASE q % 64 WHEN 48 THEN value END), max(CASE q % 64 WHEN 49 THEN value END),
  max(CASE q % 64 WHEN 50 THEN value END), max(CASE q % 64 WHEN 51 THEN value END),
  max(CASE q % 64 WHEN 52 THEN value END), max(CASE q % 64 WHEN 53 THEN value END),
  max(CASE q % 64 WHEN 54 THEN value END), max(CASE q % 64 WHEN 55 THEN value END),
  max(CASE q % 64 WHEN 56 THEN value END), max(CASE q % 64 WHEN 57 THEN value END),
  max(CASE q % 64 WHEN 58 THEN value END), max(CASE q % 64 WHEN 59 THEN value END),
  max(CASE q % 64 WHEN 60 THEN value END), max(CASE q % 64 WHEN 61 THEN value END),
  max(CASE q % 64 WHEN 62 THEN value END), max(CASE q % 64 WHEN 63 THEN value END)
FROM (SELECT run_id, idx, chain, iter, value, thin, island,
             row_number() OVER (PARTITION BY run_id, idx, chain, island ORDER BY iter) - 1 AS q
      FROM (SELECT d.run_id, d.idx, d.chain, d.iter, d.value,
                   max(coalesce(r.thin, 1), 1) AS thin,
                   d.iter - max(coalesce(r.thin, 1), 1) * row_number()
                     OVER (PARTITION BY d.run_id, d.idx, d.chain ORDER BY d.iter) AS island
            FROM draw d LEFT JOIN run r ON r.id = d.run_id))
GROUP BY run_id, idx, chain, island, q / 64;

-- Every iteration with draws keeps a row of blk = 0 (readers list a
-- chain's iterations from it).  Then draw_block is rebuilt without its
-- value columns v0 .. v63 (64 bytes of record header an iteration, even
-- when NULL): rows of blk = 0, the diagnostics and both CHECKs as in
-- versions 4 and 7.
INSERT OR IGNORE INTO draw_block(run_id, chain, iter, blk)
SELECT DISTINCT run_id, chain, iter, 0 FROM draw_block WHERE blk > 0;

CREATE TABLE draw_block_v8 (
  run_id INTEGER NOT NULL,
  chain  INTEGER NOT NULL,
  iter   INTEGER NOT NULL,
  blk    INTEGER NOT NULL,     -- 0 (versions 3-7: the block of 64 parameters)
  log_joint   REAL,            -- log p(theta, z | x) + const
  n_bright    INTEGER,
  n_lik_evals INTEGER,         -- per-datum likelihood evaluations
  n_reads     INTEGER,         -- rows read from the store
  accepted    INTEGER,         -- theta proposal accepted (0/1)
  step_size   REAL,
  full_logpost REAL            -- exact log p(theta | x) + const, or NULL
    CONSTRAINT diagnostics CHECK (
      CASE WHEN n_bright IS NULL
           THEN coalesce(log_joint, n_lik_evals, n_reads, accepted, step_size,
                         full_logpost) IS NULL
           ELSE blk = 0 AND n_lik_evals IS NOT NULL AND n_reads IS NOT NULL
                AND accepted IS NOT NULL END),
  treedepth   INTEGER,         -- NUTS tree depth reached
  n_leapfrog  INTEGER,         -- leapfrog steps this iteration
  divergent   INTEGER,         -- trajectory diverged (0/1)
  energy      REAL,            -- Hamiltonian at the sampled point
  accept_stat REAL             -- mean min(1, exp(H0 - H)) over the tree
    CONSTRAINT kernel_stats CHECK (
      CASE WHEN treedepth IS NULL
           THEN coalesce(n_leapfrog, divergent, energy, accept_stat) IS NULL
           ELSE blk = 0 AND n_bright IS NOT NULL AND n_leapfrog IS NOT NULL
                AND divergent IS NOT NULL END),
  PRIMARY KEY (run_id, chain, iter, blk)
) WITHOUT ROWID;
INSERT INTO draw_block_v8
SELECT run_id, chain, iter, blk, log_joint, n_bright, n_lik_evals, n_reads, accepted,
       step_size, full_logpost, treedepth, n_leapfrog, divergent, energy, accept_stat
FROM draw_block WHERE blk = 0;

DROP VIEW iteration;
DROP VIEW draws_named;
DROP VIEW draw;
DROP TABLE draw_block;
ALTER TABLE draw_block_v8 RENAME TO draw_block;

-- One row per stored iteration, as in version 7.
CREATE VIEW iteration AS
  SELECT run_id, chain, iter, log_joint, n_bright, n_lik_evals, n_reads,
         accepted, step_size, full_logpost,
         treedepth, n_leapfrog, divergent, energy, accept_stat
  FROM draw_block
  WHERE blk = 0 AND n_bright IS NOT NULL;

-- One row per stored draw: (run_id, chain, iter, idx, value), as in
-- versions 1-7.
CREATE VIEW draw AS
  SELECT c.run_id, c.chain, c.iter0 + s.k * c.step AS iter, c.idx,
         CASE WHEN s.k < 32 THEN CASE WHEN s.k < 16 THEN CASE WHEN s.k < 8 THEN CASE WHEN
         s.k < 4 THEN CASE WHEN s.k < 2 THEN CASE WHEN s.k < 1 THEN c.v0 ELSE c.v1 END ELSE
         CASE WHEN s.k < 3 THEN c.v2 ELSE c.v3 END END ELSE CASE WHEN s.k < 6 THEN CASE
         WHEN s.k < 5 THEN c.v4 ELSE c.v5 END ELSE CASE WHEN s.k < 7 THEN c.v6 ELSE c.v7
         END END END ELSE CASE WHEN s.k < 12 THEN CASE WHEN s.k < 10 THEN CASE WHEN s.k < 9
         THEN c.v8 ELSE c.v9 END ELSE CASE WHEN s.k < 11 THEN c.v10 ELSE c.v11 END END ELSE
         CASE WHEN s.k < 14 THEN CASE WHEN s.k < 13 THEN c.v12 ELSE c.v13 END ELSE CASE
         WHEN s.k < 15 THEN c.v14 ELSE c.v15 END END END END ELSE CASE WHEN s.k < 24 THEN
         CASE WHEN s.k < 20 THEN CASE WHEN s.k < 18 THEN CASE WHEN s.k < 17 THEN c.v16 ELSE
         c.v17 END ELSE CASE WHEN s.k < 19 THEN c.v18 ELSE c.v19 END END ELSE CASE WHEN s.k
         < 22 THEN CASE WHEN s.k < 21 THEN c.v20 ELSE c.v21 END ELSE CASE WHEN s.k < 23
         THEN c.v22 ELSE c.v23 END END END ELSE CASE WHEN s.k < 28 THEN CASE WHEN s.k < 26
         THEN CASE WHEN s.k < 25 THEN c.v24 ELSE c.v25 END ELSE CASE WHEN s.k < 27 THEN
         c.v26 ELSE c.v27 END END ELSE CASE WHEN s.k < 30 THEN CASE WHEN s.k < 29 THEN
         c.v28 ELSE c.v29 END ELSE CASE WHEN s.k < 31 THEN c.v30 ELSE c.v31 END END END END
         END ELSE CASE WHEN s.k < 48 THEN CASE WHEN s.k < 40 THEN CASE WHEN s.k < 36 THEN
         CASE WHEN s.k < 34 THEN CASE WHEN s.k < 33 THEN c.v32 ELSE c.v33 END ELSE CASE
         WHEN s.k < 35 THEN c.v34 ELSE c.v35 END END ELSE CASE WHEN s.k < 38 THEN CASE WHEN
         s.k < 37 THEN c.v36 ELSE c.v37 END ELSE CASE WHEN s.k < 39 THEN c.v38 ELSE c.v39
         END END END ELSE CASE WHEN s.k < 44 THEN CASE WHEN s.k < 42 THEN CASE WHEN s.k <
         41 THEN c.v40 ELSE c.v41 END ELSE CASE WHEN s.k < 43 THEN c.v42 ELSE c.v43 END END
         ELSE CASE WHEN s.k < 46 THEN CASE WHEN s.k < 45 THEN c.v44 ELSE c.v45 END ELSE
         CASE WHEN s.k < 47 THEN c.v46 ELSE c.v47 END END END END ELSE CASE WHEN s.k < 56
         THEN CASE WHEN s.k < 52 THEN CASE WHEN s.k < 50 THEN CASE WHEN s.k < 49 THEN c.v48
         ELSE c.v49 END ELSE CASE WHEN s.k < 51 THEN c.v50 ELSE c.v51 END END ELSE CASE
         WHEN s.k < 54 THEN CASE WHEN s.k < 53 THEN c.v52 ELSE c.v53 END ELSE CASE WHEN s.k
         < 55 THEN c.v54 ELSE c.v55 END END END ELSE CASE WHEN s.k < 60 THEN CASE WHEN s.k
         < 58 THEN CASE WHEN s.k < 57 THEN c.v56 ELSE c.v57 END ELSE CASE WHEN s.k < 59
         THEN c.v58 ELSE c.v59 END END ELSE CASE WHEN s.k < 62 THEN CASE WHEN s.k < 61 THEN
         c.v60 ELSE c.v61 END ELSE CASE WHEN s.k < 63 THEN c.v62 ELSE c.v63 END END END END
         END END AS value
  FROM draw_chunk c CROSS JOIN draw_slot s ON s.k < c.n;

-- One row per stored draw with its parameter's name and warm-up flag, as in
-- versions 1-7.  CROSS JOIN fixes the loop order (SQLite keeps the left
-- table outside): param (in name order), the chunks of that parameter, the
-- slots of a chunk.
CREATE VIEW draws_named AS
  SELECT c.run_id, c.chain, c.iter0 + s.k * c.step AS iter, p.name,
         CASE WHEN s.k < 32 THEN CASE WHEN s.k < 16 THEN CASE WHEN s.k < 8 THEN CASE WHEN
         s.k < 4 THEN CASE WHEN s.k < 2 THEN CASE WHEN s.k < 1 THEN c.v0 ELSE c.v1 END ELSE
         CASE WHEN s.k < 3 THEN c.v2 ELSE c.v3 END END ELSE CASE WHEN s.k < 6 THEN CASE
         WHEN s.k < 5 THEN c.v4 ELSE c.v5 END ELSE CASE WHEN s.k < 7 THEN c.v6 ELSE c.v7
         END END END ELSE CASE WHEN s.k < 12 THEN CASE WHEN s.k < 10 THEN CASE WHEN s.k < 9
         THEN c.v8 ELSE c.v9 END ELSE CASE WHEN s.k < 11 THEN c.v10 ELSE c.v11 END END ELSE
         CASE WHEN s.k < 14 THEN CASE WHEN s.k < 13 THEN c.v12 ELSE c.v13 END ELSE CASE
         WHEN s.k < 15 THEN c.v14 ELSE c.v15 END END END END ELSE CASE WHEN s.k < 24 THEN
         CASE WHEN s.k < 20 THEN CASE WHEN s.k < 18 THEN CASE WHEN s.k < 17 THEN c.v16 ELSE
         c.v17 END ELSE CASE WHEN s.k < 19 THEN c.v18 ELSE c.v19 END END ELSE CASE WHEN s.k
         < 22 THEN CASE WHEN s.k < 21 THEN c.v20 ELSE c.v21 END ELSE CASE WHEN s.k < 23
         THEN c.v22 ELSE c.v23 END END END ELSE CASE WHEN s.k < 28 THEN CASE WHEN s.k < 26
         THEN CASE WHEN s.k < 25 THEN c.v24 ELSE c.v25 END ELSE CASE WHEN s.k < 27 THEN
         c.v26 ELSE c.v27 END END ELSE CASE WHEN s.k < 30 THEN CASE WHEN s.k < 29 THEN
         c.v28 ELSE c.v29 END ELSE CASE WHEN s.k < 31 THEN c.v30 ELSE c.v31 END END END END
         END ELSE CASE WHEN s.k < 48 THEN CASE WHEN s.k < 40 THEN CASE WHEN s.k < 36 THEN
         CASE WHEN s.k < 34 THEN CASE WHEN s.k < 33 THEN c.v32 ELSE c.v33 END ELSE CASE
         WHEN s.k < 35 THEN c.v34 ELSE c.v35 END END ELSE CASE WHEN s.k < 38 THEN CASE WHEN
         s.k < 37 THEN c.v36 ELSE c.v37 END ELSE CASE WHEN s.k < 39 THEN c.v38 ELSE c.v39
         END END END ELSE CASE WHEN s.k < 44 THEN CASE WHEN s.k < 42 THEN CASE WHEN s.k <
         41 THEN c.v40 ELSE c.v41 END ELSE CASE WHEN s.k < 43 THEN c.v42 ELSE c.v43 END END
         ELSE CASE WHEN s.k < 46 THEN CASE WHEN s.k < 45 THEN c.v44 ELSE c.v45 END ELSE
         CASE WHEN s.k < 47 THEN c.v46 ELSE c.v47 END END END END ELSE CASE WHEN s.k < 56
         THEN CASE WHEN s.k < 52 THEN CASE WHEN s.k < 50 THEN CASE WHEN s.k < 49 THEN c.v48
         ELSE c.v49 END ELSE CASE WHEN s.k < 51 THEN c.v50 ELSE c.v51 END END ELSE CASE
         WHEN s.k < 54 THEN CASE WHEN s.k < 53 THEN c.v52 ELSE c.v53 END ELSE CASE WHEN s.k
         < 55 THEN c.v54 ELSE c.v55 END END END ELSE CASE WHEN s.k < 60 THEN CASE WHEN s.k
         < 58 THEN CASE WHEN s.k < 57 THEN c.v56 ELSE c.v57 END ELSE CASE WHEN s.k < 59
         THEN c.v58 ELSE c.v59 END END ELSE CASE WHEN s.k < 62 THEN CASE WHEN s.k < 61 THEN
         c.v60 ELSE c.v61 END ELSE CASE WHEN s.k < 63 THEN c.v62 ELSE c.v63 END END END END
         END END AS value,
         c.iter0 + s.k * c.step <= r.n_warmup AS warmup
  FROM param p
  CROSS JOIN draw_chunk c ON c.run_id = p.run_id AND c.idx = p.idx
  CROSS JOIN draw_slot s ON s.k < c.n
  JOIN run r ON r.id = p.run_id;
