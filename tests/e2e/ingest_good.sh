#!/usr/bin/env bash
# A good CSV ingested and read back: the dataset row, per-column statistics
# (against awk), the page table, `flydb info`, the default database and name,
# and CSV quirks (BOM, CRLF, quotes, spaces, blank line, no final newline).
. "$(dirname "$0")/lib.sh"

gen_csv 3000 6 11 >data.csv
expect 0 "$FLYDB" ingest data.csv --db t.db
err_has "3000 rows" "'data'"
# a new file has 16 KiB SQLite pages, and a data page fills one of them
eq "SQLite page size" "$(q t.db "PRAGMA page_size")" 16384
pr=$(( (16384 - 136) / (7 * 8) ))
eq "dataset row" "$(q t.db "SELECT name, source, n_rows, width, n_features,
    has_intercept, target_name, page_rows, n_pages, prec FROM dataset")" \
   "$(printf 'data\tdata.csv\t3000\t7\t6\t1\ty\t%d\t%d\t8' $pr $(( (3000 + pr - 1) / pr )))"
check_stats t.db data data.csv "" 1 1e-9
check_pages t.db data
only_files . data.csv t.db
ok "3000 x 6 CSV: dataset row, column statistics, pages"

expect 0 "$FLYDB" ingest "$FIX/good.csv" --db t.db
eq "data sets" "$(q t.db "SELECT group_concat(name, ',') FROM dataset")" "data,good"
eq "good rows" "$(q t.db "SELECT n_rows FROM dataset WHERE name = 'good'")" 25
check_stats t.db good "$FIX/good.csv" "" 1 1e-9
check_pages t.db good
eq "pages of data unchanged" "$(q t.db "SELECT count(*) FROM page p JOIN dataset d
    ON d.id = p.dataset_id WHERE d.name = 'data'")" $(( (3000 + pr - 1) / pr ))
only_files . data.csv t.db
ok "second data set (default name from the file name) beside the first"

expect 0 "$FLYDB" info --db t.db
out_has "data set 'data'" "data set 'good'" "3000" "(Intercept)" "x5" "target"
expect 0 "$FLYDB" info --db t.db --no-columns
out_has "data set 'data'" "data set 'good'"
grep -q -F "(Intercept)" "$T/out" && fail "info --no-columns printed the column table"
ok "flydb info, with and without columns"

# Default database ./flydb.db.
mkdir d && cd d
expect 0 "$FLYDB" ingest "$FIX/good.csv"
[ -f flydb.db ] || fail "no ./flydb.db after ingest without --db"
expect 0 "$FLYDB" info
out_has "data set 'good'"
only_files . flydb.db
cd ..
ok "default database ./flydb.db"

# BOM, CRLF, quoted names and numbers, spaces around a number, a blank line,
# no newline at the end of the file.
expect 0 "$FLYDB" ingest "$FIX/quirks.csv" --db quirks.db
eq "quirks" "$(q quirks.db "SELECT n_rows, target_name FROM dataset")" "$(printf '3\ty')"
eq "quirks columns" "$(q quirks.db "SELECT group_concat(name || '=' || mean || '/' ||
    min || '/' || max, ';') FROM (SELECT * FROM dataset_column ORDER BY idx)")" \
   "(Intercept)=1.0/1.0/1.0;x 1=3.16666666666667/1.0/5.0;x2=2.53333333333333/-0.4/6.0;y=0.333333333333333/0.0/1.0"
ok "BOM, CRLF, quotes, spaces, blank line, no final newline"
