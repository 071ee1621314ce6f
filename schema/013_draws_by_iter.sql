-- flydb schema, version 14: the view draws_by_iter, the draws reached by
-- iteration, so that a join of two parameters' draws on (chain, iter) is a
-- lookup per draw.
--
-- Why: the views draw and draws_named compute iter (iter0 + k step of a
-- draw_chunk row, schema 8), so a condition on iter cannot use an index;
-- as the inner side of a join on (chain, iter) each draw scanned the other
-- parameter's draws of its chain.  draws_by_iter starts from the stored
-- iteration instead: draw_block's row (run_id, chain, iter), its key, then
-- for each parameter the draw_chunk row holding that iteration (the one
-- with the largest iter0 <= iter: one seek of draw_chunk's key) and the
-- slot k = (iter - iter0) / step in it.  So a lookup by (run_id, chain,
-- iter), and a range of iter, are seeks; a scan of a parameter's whole
-- trace is faster through draws_named, which reads 64 draws a row.
--
-- The rows are those of draws_named, exactly: a draw is at iteration iter
-- of its chunk row, and every iteration with draws has its draw_block row
-- (store/trace.c writes both in one transaction).  CROSS JOIN fixes the
-- loop order (iteration, parameter, chunk, slot), so that as the inner
-- side of a join the planner enters it by the iteration's key.  Nothing is
-- stored: no data moves.

CREATE VIEW draws_by_iter AS
  SELECT i.run_id, i.chain, i.iter, p.idx, p.name,
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
         i.iter <= r.n_warmup AS warmup
  FROM draw_block i
  CROSS JOIN param p ON p.run_id = i.run_id
  CROSS JOIN draw_chunk c ON c.run_id = i.run_id AND c.idx = p.idx AND c.chain = i.chain
   AND c.iter0 = (SELECT max(m.iter0) FROM draw_chunk m
                  WHERE m.run_id = i.run_id AND m.idx = p.idx AND m.chain = i.chain
                    AND m.iter0 <= i.iter)
  CROSS JOIN draw_slot s ON s.k = (i.iter - c.iter0) / c.step
   AND s.k < c.n AND (i.iter - c.iter0) % c.step = 0
  JOIN run r ON r.id = i.run_id
  WHERE i.blk = 0;
