#!/usr/bin/env bash
# Ingest from standard input (`-`), and several data sets in one file.
. "$(dirname "$0")/lib.sh"

gen_csv 2000 4 21 >a.csv
gen_csv 700 7 22 >b.csv

# shellcheck disable=SC2002  # a pipe is what this checks
cat a.csv | expect 0 "$FLYDB" ingest - --name x --db t.db
eq "stdin data set" "$(q t.db "SELECT name, source, n_rows FROM dataset")" \
   "$(printf 'x\t<stdin>\t2000')"
check_stats t.db x a.csv "" 1 1e-9
check_pages t.db x
ok "cat a.csv | flydb ingest - --name x"

expect 0 "$FLYDB" ingest - --db t.db <"$FIX/good.csv"
eq "default name for stdin" "$(q t.db "SELECT name FROM dataset WHERE id = (SELECT max(id) FROM dataset)")" stdin
ok "flydb ingest - (default name 'stdin')"

expect 0 "$FLYDB" ingest b.csv --db t.db --page-rows 100
eq "three data sets" "$(q t.db "SELECT group_concat(name || ':' || n_rows || ':' || width, ',')
    FROM (SELECT * FROM dataset ORDER BY id)")" "x:2000:5,stdin:25:5,b:700:8"
check_stats t.db x a.csv "" 1 1e-9
check_stats t.db b b.csv "" 1 1e-9
check_pages t.db x
check_pages t.db b
eq "pages per data set" "$(q t.db "SELECT group_concat(n, ',') FROM (SELECT count(*) AS n
    FROM page GROUP BY dataset_id ORDER BY dataset_id)")" "5,1,7"
expect 0 "$FLYDB" info --db t.db
out_has "data set 'x'" "data set 'stdin'" "data set 'b'" "<stdin>"
only_files . a.csv b.csv t.db
ok "three data sets in one file, each with its own pages and statistics"

# A file made with 64 KiB SQLite pages (as before 16 KiB became the default)
# keeps them, and its default data pages fill one of those.
expect 0 "$FLYDB" ingest a.csv --db old.db
sqlite3 old.db "PRAGMA journal_mode=DELETE; PRAGMA page_size=65536; VACUUM" >/dev/null
expect 0 "$FLYDB" ingest b.csv --db old.db
eq "page size kept" "$(q old.db "PRAGMA page_size")" 65536
eq "page rows follow it" "$(q old.db "SELECT group_concat(page_rows, ',') FROM dataset")" \
   "$(( (16384 - 136) / (5 * 8) )),$(( (65536 - 136) / (8 * 8) ))"
check_stats old.db b b.csv "" 1 1e-9
check_pages old.db b
rm -f old.db old.db-wal old.db-shm
ok "a file with 64 KiB pages keeps them; new data pages fill one"

expect 1 "$FLYDB" ingest - --name bad --db t.db --numeric x2 <"$FIX/nonnumeric.csv"
err_has "<stdin>:3:2" "number"
ok "a bad cell on stdin is reported as <stdin>:3:2"
