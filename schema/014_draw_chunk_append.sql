-- flydb schema, version 14: draw_chunk rows stored in the order they are
-- written (a rowid table), found by parameter through the unique index
-- draw_chunk_key (run_id, idx, chain, iter0).
--
-- Why: in versions 8-13 draw_chunk was a WITHOUT ROWID table keyed
-- (run_id, idx, chain, iter0), so a commit of a chain's draws inserted into
-- P key ranges, one a parameter, between the ranges of other parameters and
-- chains: each filled leaf page was split among its neighbours, and a
-- commit rewrote some 4-5 pages (16 KiB each) a parameter, about 9 times
-- the bytes of the draws it stored.  Now the rows are appended at the end
-- of the table (new pages, written once), and only the small index entries
-- (run_id, idx, chain, iter0, rowid: about 12 bytes) go to P key ranges,
-- most commits touching one index page a parameter.  Readers reach a
-- parameter's rows, in iteration order, by a range scan of the index and a
-- rowid lookup per row of 64 draws.
--
-- Columns, constraints and meaning are those of version 8; the views draw,
-- draws_named and draws_by_iter are unchanged (they name the table, which
-- keeps its name: the rename below is done with legacy_alter_table on, so
-- that SQLite neither rewrites nor rechecks the views that name it).
-- Existing rows keep their values and are copied in key order.

CREATE TABLE draw_chunk_v14 (
  run_id INTEGER NOT NULL,
  idx    INTEGER NOT NULL,      -- parameter (param.idx)
  chain  INTEGER NOT NULL,
  iter0  INTEGER NOT NULL,      -- iteration of v0
  step   INTEGER NOT NULL CHECK (step >= 1),   -- iteration of vk = iter0 + k step
  n      INTEGER NOT NULL CHECK (n BETWEEN 1 AND 64),  -- draws in the row: v0 .. v(n-1)
  v0 REAL, v1 REAL, v2 REAL, v3 REAL, v4 REAL, v5 REAL, v6 REAL, v7 REAL, v8 REAL, v9 REAL,
  v10 REAL, v11 REAL, v12 REAL, v13 REAL, v14 REAL, v15 REAL, v16 REAL, v17 REAL, v18 REAL, v19 REAL,
  v20 REAL, v21 REAL, v22 REAL, v23 REAL, v24 REAL, v25 REAL, v26 REAL, v27 REAL, v28 REAL, v29 REAL,
  v30 REAL, v31 REAL, v32 REAL, v33 REAL, v34 REAL, v35 REAL, v36 REAL, v37 REAL, v38 REAL, v39 REAL,
  v40 REAL, v41 REAL, v42 REAL, v43 REAL, v44 REAL, v45 REAL, v46 REAL, v47 REAL, v48 REAL, v49 REAL,
  v50 REAL, v51 REAL, v52 REAL, v53 REAL, v54 REAL, v55 REAL, v56 REAL, v57 REAL, v58 REAL, v59 REAL,
  v60 REAL, v61 REAL, v62 REAL, v63 REAL
);
INSERT INTO draw_chunk_v14 SELECT * FROM draw_chunk ORDER BY run_id, idx, chain, iter0;

PRAGMA legacy_alter_table = ON;
DROP TABLE draw_chunk;
ALTER TABLE draw_chunk_v14 RENAME TO draw_chunk;
PRAGMA legacy_alter_table = OFF;

-- The key of versions 8-13: a row is one parameter, chain and first
-- iteration (the writer replaces a partial row under it).
CREATE UNIQUE INDEX draw_chunk_key ON draw_chunk(run_id, idx, chain, iter0);
