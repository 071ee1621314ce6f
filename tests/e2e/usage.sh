#!/usr/bin/env bash
# Usage errors exit with status 2, print the usage, and touch nothing;
# --help exits 0 and lists every option.
. "$(dirname "$0")/lib.sh"

good=$FIX/good.csv

usage_error() {
  expect 2 "$FLYDB" "$@"
  [ -s "$T/err" ] || fail "no message for: flydb $*"
  only_files .
  ok "flydb $*: $(head -n 1 "$T/err")"
}

usage_error
usage_error frobnicate
usage_error ingest "$good" --bogus
usage_error ingest "$good" -x
usage_error ingest "$good" --page-rows 0
usage_error ingest "$good" --page-rows -3
usage_error ingest "$good" --page-rows abc
usage_error ingest "$good" --page-rows 10x
usage_error ingest "$good" --precision f16
usage_error ingest
usage_error ingest --db x.db
usage_error ingest "$good" "$good"
usage_error ingest "$good" --db
usage_error ingest "$good" --name ""
usage_error ingest "$good" --no-intercept=1
usage_error ingest "$good" --target y --target y
usage_error info --bogus
usage_error info extra

expect 2 "$FLYDB" ingest "$good" --bogus
err_has "bogus"
expect 2 "$FLYDB" ingest "$good" --page-rows 0
err_has "page-rows"
expect 2 "$FLYDB" ingest "$good" --precision f16
err_has "f16"
ok "usage errors name the option"

expect 0 "$FLYDB" ingest --help
for o in --db --target --no-intercept --page-rows --precision --name; do
  grep -q -F -- "$o" "$T/out" "$T/err" || fail "ingest --help does not list $o"
done
expect 0 "$FLYDB" info --help
expect 0 "$FLYDB" --help
out_has ingest info
expect 0 "$FLYDB" --version
out_has flydb
only_files .
ok "--help and --version"
