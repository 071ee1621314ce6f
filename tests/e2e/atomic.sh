#!/usr/bin/env bash
# Nothing half-written: a failed ingest into an existing database leaves it
# byte-identical (cmp and SHA-256) with no journal, -wal, -shm or temporary
# file beside it; a failed ingest into a new database leaves no file; a
# duplicate data set name is refused before anything is written.
. "$(dirname "$0")/lib.sh"

# 100,000 good rows (several MB of pages, many pages with --page-rows 7),
# then one bad cell on the last line.
gen_csv 100000 6 31 >big.csv
cp big.csv bad_last.csv
echo "1,2,3,oops,5,0" >>bad_last.csv
last=$(wc -l <bad_last.csv)
mkdir db
expect 0 "$FLYDB" ingest "$FIX/good.csv" --db db/t.db
cp db/t.db t.orig

expect 1 "$FLYDB" ingest bad_last.csv --db db/t.db
err_has "bad_last.csv:$last:4" "'oops'" "number"
same_file db/t.db t.orig
only_files db t.db
ok "bad last line ($last) into an existing database: unchanged, nothing left"

expect 1 "$FLYDB" ingest bad_last.csv --db db/t.db --page-rows 7 --name many
err_has "bad_last.csv:$last:4"
same_file db/t.db t.orig
only_files db t.db
ok "the same with --page-rows 7 (14,000+ pages written, then rolled back)"

printf '9,9,9,9,9\n' >>big.csv   # last row: 5 fields, header has 6
expect 1 "$FLYDB" ingest big.csv --db db/t.db --precision f32 --name short
err_has "big.csv:$last:6" "5 fields" "6"
same_file db/t.db t.orig
only_files db t.db
ok "ragged last row, f32, into an existing database: unchanged"

expect 1 "$FLYDB" ingest bad_last.csv --db db/new.db
err_has "bad_last.csv:$last:4"
only_files db t.db
ok "bad last line into a new database: no file left behind"

expect 1 "$FLYDB" ingest "$FIX/good.csv" --db db/t.db
err_has "'good'" "--name"
same_file db/t.db t.orig
only_files db t.db
expect 1 "$FLYDB" ingest bad_last.csv --db db/t.db --name good
err_has "'good'"
same_file db/t.db t.orig
only_files db t.db
ok "duplicate data set name refused, database unchanged"

head -n 50001 bad_last.csv >half.csv
expect 0 "$FLYDB" ingest half.csv --db db/t.db --name half
eq "data sets" "$(q db/t.db "SELECT group_concat(name || ':' || n_rows, ',') FROM dataset")" \
   "good:25,half:50000"
only_files db t.db
check_pages db/t.db half
ok "a good ingest after the failures: committed, no journal left"
