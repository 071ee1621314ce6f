#!/usr/bin/env bash
# A database of schema version 1 (built here from schema/001_init.sql, with
# long draws of a run of 70 parameters, 2 chains of 5 iterations) is upgraded when
# flydb opens it read-write: user_version becomes the current one, the table
# profile exists, and the views draw and draws_named give back exactly the
# draws that were stored (values compared as %!.17g, a zero and a subnormal
# included), and the view iteration the diagnostics (NULLs, a subnormal and
# an integer above 2^53 included), kept in the draw_block rows of blk 0;
# the draws end in draw_chunk, one row a parameter and chain.  A read-only
# command refuses to migrate.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

SCHEMA=$E2E/../../schema
sqlite3 v1.db <"$SCHEMA/001_init.sql"
sqlite3 v1.db "PRAGMA application_id = 1181514052; PRAGMA user_version = 1;
  INSERT INTO dataset(id, name, source, n_rows, width, n_features, has_intercept,
                      target_name, page_rows, n_pages, prec, raw_bytes, stored_bytes)
  VALUES (1, 'd', 'd.csv', 1, 2, 1, 1, 'y', 1, 0, 8, 16, 0);
  INSERT INTO run(id, dataset_id, model, sampler, z_mode, n_chains, n_warmup, n_iters,
                  thin, seed, n_params, status, version)
  VALUES (1, 1, 'logistic', 'mh', 'gibbs', 2, 2, 3, 1, 1, 70, 'done', 'old');
  WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 69)
  INSERT INTO param SELECT 1, i, 'p' || i FROM k;
  WITH RECURSIVE c(c) AS (SELECT 0 UNION ALL SELECT 1),
       it(t) AS (SELECT 1 UNION ALL SELECT t + 1 FROM it WHERE t < 5)
  INSERT INTO draw SELECT 1, c, t, idx,
         CASE WHEN idx = 3 THEN 0.0 WHEN idx = 4 THEN 4.9e-322 ELSE (c + 1) * t / 7.0 - idx END
  FROM c, it, param;
  WITH RECURSIVE c(c) AS (SELECT 0 UNION ALL SELECT 1),
       it(t) AS (SELECT 1 UNION ALL SELECT t + 1 FROM it WHERE t < 5)
  INSERT INTO iteration SELECT 1, c, t,
         CASE WHEN t = 2 THEN NULL WHEN t = 3 THEN 4.9e-322 ELSE -(c + 1) * t / 3.0 - 1e6 END,
         10 * c + t, 1000 * t + c, 9007199254740993 - t, t % 2,
         CASE WHEN t = 1 THEN NULL ELSE t / 7.0 END,
         CASE WHEN t = 4 THEN -123.456 + c END
  FROM c, it;"
# every column with its storage class, doubles as %!.17g
icols="chain, iter, typeof(log_joint), printf('%!.17g', log_joint), n_bright, n_lik_evals,
       n_reads, typeof(n_reads), accepted, typeof(step_size), printf('%!.17g', step_size),
       typeof(full_logpost), printf('%!.17g', full_logpost)"
want_iter=$(q v1.db "SELECT $icols FROM iteration ORDER BY 1, 2")
want=$(q v1.db "SELECT chain, iter, idx, printf('%!.17g', value) FROM draw ORDER BY 1, 2, 3")
want_named=$(q v1.db "SELECT chain, iter, name, printf('%!.17g', value), warmup FROM draws_named
                      ORDER BY 1, 2, 3")
eq "draws stored in version 1" "$(q v1.db "SELECT count(*) FROM draw")" 700

cp v1.db v1.orig
expect 1 "$FLYDB" export 1 --out x --db v1.db
err_has "schema version 1" "read-write once to migrate"
same_file v1.db v1.orig
ok "a read-only command leaves a version-1 file alone: $(head -n 1 "$T/err")"
expect 0 "$FLYDB" info --db v1.db --no-columns
eq "user_version after the upgrade" "$(q v1.db "PRAGMA user_version")" \
   "$(grep -c . <(ls "$SCHEMA"/[0-9][0-9][0-9]_*.sql))"
eq "table profile" "$(q v1.db "SELECT count(*) FROM sqlite_schema WHERE name = 'profile'")" 1
eq "page map indexes" "$(q v1.db "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema
    WHERE type = 'index' AND name LIKE '%page_map' ORDER BY name)")" "bound_page_map,page_map"
eq "draw chunks" "$(q v1.db "SELECT count(*), sum(n), count(DISTINCT idx) FROM draw_chunk")" "$(printf '140\t700\t70')"
eq "draw_block rows of blk 0" "$(q v1.db "SELECT count(*), min(blk), max(blk) FROM draw_block")" "$(printf '10\t0\t0')"
eq "draw_block has no value columns" "$(q v1.db "SELECT count(*) FROM pragma_table_info('draw_block') WHERE name GLOB 'v[0-9]*'")" 0
eq "draws after the upgrade" "$(q v1.db "SELECT chain, iter, idx, printf('%!.17g', value)
                                         FROM draw ORDER BY 1, 2, 3")" "$want"
eq "draws_named after the upgrade" "$(q v1.db "SELECT chain, iter, name, printf('%!.17g', value),
                                               warmup FROM draws_named ORDER BY 1, 2, 3")" "$want_named"
eq "iteration is a view" "$(q v1.db "SELECT type FROM sqlite_schema WHERE name = 'iteration'")" view
eq "iteration rows after the upgrade" "$(q v1.db "SELECT $icols FROM iteration ORDER BY 1, 2")" "$want_iter"
eq "diagnostics in blocks 0" "$(q v1.db "SELECT blk, count(n_bright), count(*) FROM draw_block
                                          GROUP BY blk")" "$(printf '0\t10\t10')"
eq "no kernel statistics in old rows (version 7)" \
   "$(q v1.db "SELECT count(treedepth), count(n_leapfrog), count(divergent), count(energy),
                      count(accept_stat) FROM iteration")" "$(printf '0\t0\t0\t0\t0')"
# the hand-made file has no pages or checkpoints, but its rows are complete
expect 1 "$FLYDB" check --db v1.db --quick
! grep -E "draw|iteration" "$T/out" || fail "check finds draw or iteration rows damaged"
ok "version 1 upgraded: 700 draws of 70 parameters kept exactly in 140 chunks, 10 iteration rows exactly"

# A new file gets the current schema directly (fly_schema_current): the same
# objects with the same SQL, rows and statistics as the migrations leave,
# and no free pages.
printf 'x,y\n1,0\n2,1\n' >new.csv
expect 0 "$FLYDB" ingest new.csv --db new.db
schema="SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name"
eq "a new file's schema against version 1 migrated" "$(q new.db "$schema")" "$(q v1.db "$schema")"
rows="SELECT (SELECT group_concat(k) FROM draw_slot), (SELECT group_concat(tbl || ':' || stat) FROM sqlite_stat1)"
eq "draw slots and statistics of a new file" "$(q new.db "$rows")" "$(q v1.db "$rows")"
eq "objects in a new file" "$(q new.db "SELECT count(*) > 30 FROM sqlite_schema")" 1
eq "free pages in a new file" "$(q new.db "PRAGMA freelist_count")" 0
eq "user_version of a new file" "$(q new.db "PRAGMA user_version")" "$(q v1.db "PRAGMA user_version")"
ok "a new file's schema is the migrated one, object for object"
