-- flydb schema, version 3: draws are stored one row per iteration and
-- block of 64 parameters, and `draw` becomes a view that unpacks them.
--
-- Why: the long table took one B-tree insert per parameter per iteration,
-- and an insert costs about as much as a FlyMC iteration, so writing the
-- trace cost more than sampling it.  A block row holds parameters
-- 64 blk .. 64 blk + 63 of one iteration in columns v0..v63 (NULL past the
-- last parameter): one insert per iteration for up to 64 parameters.  The
-- values stay SQLite REALs, so the views below are plain SQL, exact, and
-- read by the stock sqlite3 shell; `draw` and `draws_named` keep their
-- columns and meaning (one row per parameter and iteration).  Writers and
-- deleters use draw_block; readers may use either.

CREATE TABLE draw_block (
  run_id INTEGER NOT NULL,
  chain  INTEGER NOT NULL,
  iter   INTEGER NOT NULL,
  blk    INTEGER NOT NULL,     -- parameters idx = 64 blk + k are in column vk
  v0 REAL, v1 REAL, v2 REAL, v3 REAL, v4 REAL, v5 REAL, v6 REAL, v7 REAL,
  v8 REAL, v9 REAL, v10 REAL, v11 REAL, v12 REAL, v13 REAL, v14 REAL, v15 REAL,
  v16 REAL, v17 REAL, v18 REAL, v19 REAL, v20 REAL, v21 REAL, v22 REAL, v23 REAL,
  v24 REAL, v25 REAL, v26 REAL, v27 REAL, v28 REAL, v29 REAL, v30 REAL, v31 REAL,
  v32 REAL, v33 REAL, v34 REAL, v35 REAL, v36 REAL, v37 REAL, v38 REAL, v39 REAL,
  v40 REAL, v41 REAL, v42 REAL, v43 REAL, v44 REAL, v45 REAL, v46 REAL, v47 REAL,
  v48 REAL, v49 REAL, v50 REAL, v51 REAL, v52 REAL, v53 REAL, v54 REAL, v55 REAL,
  v56 REAL, v57 REAL, v58 REAL, v59 REAL, v60 REAL, v61 REAL, v62 REAL, v63 REAL,
  PRIMARY KEY (run_id, chain, iter, blk)
) WITHOUT ROWID;

-- Databases of version 2 keep their draws.
INSERT INTO draw_block
SELECT run_id, chain, iter, idx / 64,
  max(CASE idx % 64 WHEN 0 THEN value END), max(CASE idx % 64 WHEN 1 THEN value END),
  max(CASE idx % 64 WHEN 2 THEN value END), max(CASE idx % 64 WHEN 3 THEN value END),
  max(CASE idx % 64 WHEN 4 THEN value END), max(CASE idx % 64 WHEN 5 THEN value END),
  max(CASE idx % 64 WHEN 6 THEN value END), max(CASE idx % 64 WHEN 7 THEN value END),
  max(CASE idx % 64 WHEN 8 THEN value END), max(CASE idx % 64 WHEN 9 THEN value END),
  max(CASE idx % 64 WHEN 10 THEN value END), max(CASE idx % 64 WHEN 11 THEN value END),
  max(CASE idx % 64 WHEN 12 THEN value END), max(CASE idx % 64 WHEN 13 THEN value END),
  max(CASE idx % 64 WHEN 14 THEN value END), max(CASE idx % 64 WHEN 15 THEN value END),
  max(CASE idx % 64 WHEN 16 THEN value END), max(CASE idx % 64 WHEN 17 THEN value END),
  max(CASE idx % 64 WHEN 18 THEN value END), max(CASE idx % 64 WHEN 19 THEN value END),
  max(CASE idx % 64 WHEN 20 THEN value END), max(CASE idx % 64 WHEN 21 THEN value END),
  max(CASE idx % 64 WHEN 22 THEN value END), max(CASE idx % 64 WHEN 23 THEN value END),
  max(CASE idx % 64 WHEN 24 THEN value END), max(CASE idx % 64 WHEN 25 THEN value END),
  max(CASE idx % 64 WHEN 26 THEN value END), max(CASE idx % 64 WHEN 27 THEN value END),
  max(CASE idx % 64 WHEN 28 THEN value END), max(CASE idx % 64 WHEN 29 THEN value END),
  max(CASE idx % 64 WHEN 30 THEN value END), max(CASE idx % 64 WHEN 31 THEN value END),
  max(CASE idx % 64 WHEN 32 THEN value END), max(CASE idx % 64 WHEN 33 THEN value END),
  max(CASE idx % 64 WHEN 34 THEN value END), max(CASE idx % 64 WHEN 35 THEN value END),
  max(CASE idx % 64 WHEN 36 THEN value END), max(CASE idx % 64 WHEN 37 THEN value END),
  max(CASE idx % 64 WHEN 38 THEN value END), max(CASE idx % 64 WHEN 39 THEN value END),
  max(CASE idx % 64 WHEN 40 THEN value END), max(CASE idx % 64 WHEN 41 THEN value END),
  max(CASE idx % 64 WHEN 42 THEN value END), max(CASE idx % 64 WHEN 43 THEN value END),
  max(CASE idx % 64 WHEN 44 THEN value END), max(CASE idx % 64 WHEN 45 THEN value END),
  max(CASE idx % 64 WHEN 46 THEN value END), max(CASE idx % 64 WHEN 47 THEN value END),
  max(CASE idx % 64 WHEN 48 THEN value END), max(CASE idx % 64 WHEN 49 THEN value END),
  max(CASE idx % 64 WHEN 50 THEN value END), max(CASE idx % 64 WHEN 51 THEN value END),
  max(CASE idx % 64 WHEN 52 THEN value END), max(CASE idx % 64 WHEN 53 THEN value END),
  max(CASE idx % 64 WHEN 54 THEN value END), max(CASE idx % 64 WHEN 55 THEN value END),
  max(CASE idx % 64 WHEN 56 THEN value END), max(CASE idx % 64 WHEN 57 THEN value END),
  max(CASE idx % 64 WHEN 58 THEN value END), max(CASE idx % 64 WHEN 59 THEN value END),
  max(CASE idx % 64 WHEN 60 THEN value END), max(CASE idx % 64 WHEN 61 THEN value END),
  max(CASE idx % 64 WHEN 62 THEN value END), max(CASE idx % 64 WHEN 63 THEN value END)
FROM draw GROUP BY run_id, chain, iter, idx / 64;

-- draws_named (schema 001) reads `draw` by name, so it reads the view.
DROP TABLE draw;

-- One row per stored draw: (run_id, chain, iter, idx, value), as the table
-- of versions 1-2 was.
CREATE VIEW draw AS
  SELECT b.run_id, b.chain, b.iter, p.idx,
         CASE p.idx % 64
           WHEN 0 THEN b.v0 WHEN 1 THEN b.v1 WHEN 2 THEN b.v2 WHEN 3 THEN b.v3
           WHEN 4 THEN b.v4 WHEN 5 THEN b.v5 WHEN 6 THEN b.v6 WHEN 7 THEN b.v7
           WHEN 8 THEN b.v8 WHEN 9 THEN b.v9 WHEN 10 THEN b.v10 WHEN 11 THEN b.v11
           WHEN 12 THEN b.v12 WHEN 13 THEN b.v13 WHEN 14 THEN b.v14 WHEN 15 THEN b.v15
           WHEN 16 THEN b.v16 WHEN 17 THEN b.v17 WHEN 18 THEN b.v18 WHEN 19 THEN b.v19
           WHEN 20 THEN b.v20 WHEN 21 THEN b.v21 WHEN 22 THEN b.v22 WHEN 23 THEN b.v23
           WHEN 24 THEN b.v24 WHEN 25 THEN b.v25 WHEN 26 THEN b.v26 WHEN 27 THEN b.v27
           WHEN 28 THEN b.v28 WHEN 29 THEN b.v29 WHEN 30 THEN b.v30 WHEN 31 THEN b.v31
           WHEN 32 THEN b.v32 WHEN 33 THEN b.v33 WHEN 34 THEN b.v34 WHEN 35 THEN b.v35
           WHEN 36 THEN b.v36 WHEN 37 THEN b.v37 WHEN 38 THEN b.v38 WHEN 39 THEN b.v39
           WHEN 40 THEN b.v40 WHEN 41 THEN b.v41 WHEN 42 THEN b.v42 WHEN 43 THEN b.v43
           WHEN 44 THEN b.v44 WHEN 45 THEN b.v45 WHEN 46 THEN b.v46 WHEN 47 THEN b.v47
           WHEN 48 THEN b.v48 WHEN 49 THEN b.v49 WHEN 50 THEN b.v50 WHEN 51 THEN b.v51
           WHEN 52 THEN b.v52 WHEN 53 THEN b.v53 WHEN 54 THEN b.v54 WHEN 55 THEN b.v55
           WHEN 56 THEN b.v56 WHEN 57 THEN b.v57 WHEN 58 THEN b.v58 WHEN 59 THEN b.v59
           WHEN 60 THEN b.v60 WHEN 61 THEN b.v61 WHEN 62 THEN b.v62 WHEN 63 THEN b.v63
         END AS value
  FROM draw_block b
  JOIN param p ON p.run_id = b.run_id AND p.idx >= 64 * b.blk AND p.idx < 64 * b.blk + 64;
