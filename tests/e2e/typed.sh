#!/usr/bin/env bash
# Typed columns and missing values through the CLI: detection (also from
# standard input), --categorical/--numeric/--na-strings, `flydb info`
# listing types, missing counts and levels, `flydb dump` writing labels and
# NA so that ingest -> dump -> ingest stores the same data set, and
# `flydb check` finding a level count or a code that does not match the
# pages.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

cat >cat.csv <<'CSV'
carat,cut,color,zip,price
0.23,Ideal,E,02134,326
0.21,Premium,E,,326
0.23,Good,NA,02134,327
NA,Premium,"I, J",10001,334
0.31,Good,J,10001,.
0.24,"Very Good",J,02134,336
CSV

# --- detection and declared types ------------------------------------------
expect 0 "$FLYDB" ingest cat.csv --db t.db --categorical zip --na-strings .
eq "types" "$(q t.db "SELECT group_concat(name || ':' || type || ':' || n_missing, ' ')
                      FROM dataset_column WHERE dataset_id = 1")" \
   "(Intercept):numeric:0 carat:numeric:1 cut:categorical:0 color:categorical:1 zip:categorical:1 price:numeric:1"
eq "cut levels in first-seen order" \
   "$(q t.db "SELECT group_concat(label || '=' || count, ' ') FROM level
              WHERE dataset_id = 1 AND idx = 2 ORDER BY code")" \
   "Ideal=1 Premium=2 Good=2 Very Good=1"
eq "zip keeps its leading zero" \
   "$(q t.db "SELECT group_concat(label, ' ') FROM level WHERE dataset_id = 1 AND idx = 4")" \
   "02134 10001"
ok "detected and declared types, missing counts and levels"

expect 0 "$FLYDB" info --db t.db
out_has "categorical" "levels of 'cut' (4): 'Ideal' 1, 'Premium' 2, 'Good' 2, 'Very Good' 1" \
        "levels of 'color' (3): 'E' 2, 'I, J' 1, 'J' 2"
grep -E "^ +1  carat +feature +numeric +1 " "$T/out" >/dev/null || fail "info: carat line"
ok "info lists types, missing counts and levels"

# Standard input: the same data set.
expect 0 "$FLYDB" ingest - --db t.db --name piped --categorical zip --na-strings . <cat.csv
eq "stdin pages" "$(q t.db "SELECT count(DISTINCT hex(payload)) FROM page GROUP BY page_no")" 1
eq "stdin levels" "$(q t.db "SELECT count(*) FROM (SELECT idx, code, label, count FROM level
                             WHERE dataset_id = 1 EXCEPT SELECT idx, code, label, count
                             FROM level WHERE dataset_id = 2)")" 0
ok "standard input gives the same pages and levels"

# --- dump -> ingest round trip ---------------------------------------------
expect 0 "$FLYDB" dump --db t.db --data cat
cp "$T/out" dumped.csv
eq "dump" "$(cat dumped.csv)" "$(printf '%s\n' 'carat,cut,color,zip,price' \
  '0.23,Ideal,E,02134,326' '0.21,Premium,E,NA,326' \
  '0.23,Good,NA,02134,327' 'NA,Premium,"I, J",10001,334' \
  '0.31,Good,J,10001,NA' '0.24,Very Good,J,02134,336')"
expect 0 "$FLYDB" ingest dumped.csv --db r.db --name cat --categorical zip
same() { q "$1" "SELECT $2 ORDER BY 1, 2" | md5sum; }
for t in "page_no, first_row, n_rows, codec, raw_bytes, checksum, hex(payload) FROM page WHERE dataset_id = 1" \
         "idx, name, role, n, mean, sd, min, max, type, n_missing FROM dataset_column WHERE dataset_id = 1" \
         "idx, code, label, count FROM level WHERE dataset_id = 1"; do
  eq "round trip: ${t##*FROM }" "$(same r.db "$t")" "$(same t.db "$t")"
done
ok "ingest -> dump -> ingest stores the same pages, columns and levels"

# A numeric file without missing values dumps and re-ingests to the same pages.
expect 0 "$FLYDB" ingest "$FIX/good.csv" --db n.db
expect 0 "$FLYDB" dump --db n.db
cp "$T/out" good2.csv
expect 0 "$FLYDB" ingest good2.csv --db n2.db --name good
eq "numeric round trip" "$(same n2.db "hex(payload), 1 FROM page")" "$(same n.db "hex(payload), 1 FROM page")"
ok "a numeric data set round-trips too"

# The bundled diamonds (strings and NA as R's write.csv wrote them) dump
# back to the same bytes.
expect 0 "$FLYDB" ingest "$E2E/../../datasets/diamonds/diamonds.csv" --db d.db
expect 0 "$FLYDB" dump --db d.db
same_file "$T/out" "$E2E/../../datasets/diamonds/diamonds.csv"
eq "diamonds missing" "$(q d.db "SELECT group_concat(name || ':' || n_missing, ' ') FROM dataset_column
                               WHERE n_missing > 0")" "color:36 depth:54"
ok "datasets/diamonds/diamonds.csv: ingest -> dump gives the file back byte for byte"

# --- check -------------------------------------------------------------------
expect 0 "$FLYDB" check --db t.db
q t.db "UPDATE level SET count = count + 1 WHERE dataset_id = 1 AND idx = 2 AND code = 0"
expect 1 "$FLYDB" check --db t.db
out_has "column 2: level 0 counts 2 rows, the pages hold 1" "levels count 7 rows, want 6"
q t.db "UPDATE level SET count = count - 1 WHERE dataset_id = 1 AND idx = 2 AND code = 0"
q t.db "DELETE FROM level WHERE dataset_id = 1 AND idx = 3 AND code = 2"
expect 1 "$FLYDB" check --db t.db
out_has "column 3 is categorical with 2 levels, but the pages hold 2 values that are no level code"
q t.db "UPDATE dataset_column SET n_missing = 0 WHERE dataset_id = 2 AND idx = 1"
expect 1 "$FLYDB" check --db t.db
out_has "column 1 ('carat'): n_missing 0, but the pages hold 1 missing values"
ok "check compares levels and missing counts with the pages"
