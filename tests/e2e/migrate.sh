#!/usr/bin/env bash
# A database of schema version 1 (built here from schema/001_init.sql, with
# long draws of a run of 70 parameters: two draw blocks) is upgraded when
# flydb opens it read-write: user_version becomes the current one, the table
# profile exists, and the views draw and draws_named give back exactly the
# draws that were stored (values compared as %!.17g, a zero and a subnormal
# included).  A read-only command refuses to migrate.
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
  FROM c, it, param;"
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
eq "draw blocks" "$(q v1.db "SELECT count(*), min(blk), max(blk) FROM draw_block")" "$(printf '20\t0\t1')"
eq "draws after the upgrade" "$(q v1.db "SELECT chain, iter, idx, printf('%!.17g', value)
                                         FROM draw ORDER BY 1, 2, 3")" "$want"
eq "draws_named after the upgrade" "$(q v1.db "SELECT chain, iter, name, printf('%!.17g', value),
                                               warmup FROM draws_named ORDER BY 1, 2, 3")" "$want_named"
ok "version 1 upgraded: 700 draws of 70 parameters kept exactly in 20 blocks"
