#!/usr/bin/env bash
# Bad input is refused with exit status 1 and a message naming the place:
# file:line:column for a bad cell, file:line for a bad row or header.  A
# refused ingest into a new database leaves no file behind.
. "$(dirname "$0")/lib.sh"

# bad FIXTURE STRING...: ingest into a new database fails (exit 1), stderr
# names every STRING, and nothing is left in the directory.
bad() {
  local f=$1
  shift
  mkdir out
  expect 1 "$FLYDB" ingest "$FIX/$f" --db out/new.db
  err_has "$@"
  only_files out
  rmdir out
  ok "$f: $(head -n 1 "$T/err")"
}

bad ragged_short.csv   "ragged_short.csv:3:3" "2 fields" "3"
bad ragged_long.csv    "ragged_long.csv:4:4"  "4 fields" "3"
bad nonnumeric.csv     "nonnumeric.csv:3:2"   "'abc'" "number"
bad empty_cell.csv     "empty_cell.csv:3:2"   "empty"
bad nan.csv            "nan.csv:4:1"          "NaN" "finite"
bad inf.csv            "inf.csv:2:3"          "-inf" "finite"
bad overflow.csv       "overflow.csv:3:2"     "1e999" "finite"
bad empty.csv          "empty.csv:1"          "empty"
bad header_only.csv    "header_only.csv"      "no data rows"
bad dup_cols.csv       "dup_cols.csv:1:3"     "duplicate" "'a'"
bad unterminated.csv   "unterminated.csv:3:2" "quote"
bad after_multiline.csv "after_multiline.csv:4:2" "'x'" "number"

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
