#!/usr/bin/env bash
# Bad input is refused with exit status 1 and a message naming the place:
# file:line:column for a bad cell, file:line for a bad row or header.  A
# refused ingest into a new database leaves no file behind.
. "$(dirname "$0")/lib.sh"

# bad FIXTURE STRING...: ingest into a new database fails (exit 1), stderr
# names every STRING, and nothing is left in the directory.  $OPTS: more
# ingest options.
bad() {
  local f=$1
  shift
  mkdir out
  # shellcheck disable=SC2086
  expect 1 "$FLYDB" ingest "$FIX/$f" --db out/new.db ${OPTS:-}
  err_has "$@"
  only_files out
  rmdir out
  ok "$f: $(head -n 1 "$T/err")"
}

bad ragged_short.csv   "ragged_short.csv:3:3" "2 fields" "3"
bad ragged_long.csv    "ragged_long.csv:4:4"  "4 fields" "3"
# A cell that is not a finite number is a label (the column turns
# categorical) unless the column is declared numeric.
OPTS="--numeric x2" bad nonnumeric.csv "nonnumeric.csv:3:2" "'abc'" "number" "--numeric"
OPTS="--numeric x1" bad nan.csv        "nan.csv:4:1"        "'NaN'" "number"
OPTS="--numeric y" bad inf.csv         "inf.csv:2:3"        "'-inf'" "number"
OPTS="--numeric x2,y" bad overflow.csv "overflow.csv:3:2"   "'1e999'" "number"
OPTS="--numeric nosuch" bad good.csv   "good.csv:1" "--numeric 'nosuch'" "not a column"
OPTS="--categorical x1 --numeric x1" bad good.csv "'x1'" "both"
bad empty.csv          "empty.csv:1"          "empty"
bad header_only.csv    "header_only.csv"      "no data rows"
bad dup_cols.csv       "dup_cols.csv:1:3"     "duplicate" "'a'"
bad unterminated.csv   "unterminated.csv:3:2" "quote"

# A line of its own after a quoted header name holding a line end: 'x'
# makes column 2 categorical, and the row is still line 4.
mkdir out
expect 0 "$FLYDB" ingest "$FIX/after_multiline.csv" --db out/new.db
eq "levels after a multi-line header" "$(q out/new.db "SELECT group_concat(label) FROM level")" "2,x"
rm -rf out
ok "after_multiline.csv: the label on line 4 is a level"

# More distinct numbers than a column tracks, then a label: refused,
# asking to declare the column; the existing database stays byte-identical.
awk 'BEGIN { print "a,b,y"; for(i = 0; i < 5000; i++) print i / 7 "," i "," i % 2;
             print "1,oops,0" }' >late.csv
"$FLYDB" ingest "$FIX/good.csv" --db keep.db 2>/dev/null
cp keep.db keep.before
expect 1 "$FLYDB" ingest late.csv --db keep.db
err_has "late.csv:5002:2" "'oops'" "--categorical b" "--na-strings"
cmp keep.db keep.before
expect 1 "$FLYDB" ingest late.csv --db keep.db --categorical a --numeric b
err_has "late.csv:5002:2" "'oops'" "declared --numeric"
cmp keep.db keep.before
ok "a type clash late in a file leaves the database byte-identical"
expect 0 "$FLYDB" ingest late.csv --db keep.db --na-strings oops
eq "declared missing" "$(q keep.db "SELECT n_missing FROM dataset_column WHERE name = 'b' AND
                                   dataset_id = 2")" 1
ok "--na-strings makes the late cell missing"

mkdir out
expect 1 "$FLYDB" ingest "$FIX/good.csv" --db out/new.db --target nosuch
err_has "good.csv:1" "nosuch"
only_files out
ok "--target not in the header: $(head -n 1 "$T/err")"

expect 1 "$FLYDB" ingest nosuch.csv --db out/new.db
err_has "nosuch.csv"
only_files out
ok "missing CSV file: $(head -n 1 "$T/err")"

# The same errors from standard input name <stdin>.
expect 1 "$FLYDB" ingest - --db out/new.db <"$FIX/ragged_short.csv"
err_has "<stdin>:3:3" "fields"
expect 1 "$FLYDB" ingest - --db out/new.db <"$FIX/empty.csv"
err_has "<stdin>"
only_files out
ok "stdin: errors name <stdin>"
