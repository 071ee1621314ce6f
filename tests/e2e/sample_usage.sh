#!/usr/bin/env bash
# `flydb sample` usage errors exit 2 with a message naming the option and
# leave the database as it was (no run created); run-time errors (no data
# set, no database, not a flydb file, unknown data set) exit 1 with a clear
# message and create nothing.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=f.db
expect 0 "$FLYDB" ingest "$TOY/tiny_logistic.csv" --db $db
cp $db f.orig

# bad WANT ARGS...: `flydb sample --db f.db ARGS` exits 2, its first stderr
# line names WANT, and the database is untouched.
bad() {
  local want=$1
  shift
  expect 2 "$FLYDB" sample --db $db "$@"
  head -n 1 "$T/err" | grep -q -F -- "$want" ||
    { cat "$T/err" >&2; fail "flydb sample $*: message does not name '$want'"; }
  same_file $db f.orig
  only_files . f.db f.orig
  ok "sample $*: exit 2, $(head -n 1 "$T/err")"
}

bad --iters    --iters 0
bad --iters    --iters -5
bad --iters    --iters abc
bad --iters    --iters 10x
bad --iters    --iters ""
bad --iters    --iters
bad --warmup   --warmup -1
bad --chains   --chains 0
bad --chains   --chains two
bad --thin     --thin 0
bad --seed     --seed -1
bad --seed     --seed 1.5
bad --checkpoint-every --checkpoint-every 0
bad --z        --z bogus
bad --z        --z gibbs=0.5
bad --z        --z implicit=0
bad --z        --z implicit=1.5
bad --z        --z implicit=abc
bad --z        --z explicit=0
bad --z        --z explicit=-0.1
bad --regular  --regular --z gibbs
bad --regular  --regular --z implicit
bad --regular  --regular=1
bad --theta-steps --theta-steps 0
bad --theta-steps --theta-steps 2.5
bad --theta-steps --theta-steps 2 --regular
bad --theta-steps --regular --theta-steps 8
bad "--z gibbs" --bounds fixed --z gibbs
bad --bounds   --bounds bogus
bad --bounds   --bounds fixed=0
bad --bounds   --bounds fixed=-1
bad --frobnicate --frobnicate
bad --frobnicate --iters 10 --frobnicate=3
bad -x         -x
bad extra      extra
bad --iters    --iters 10 --iters 20
bad --model    --model probit
bad --resume   --resume 0
bad --resume   --resume abc

# The same conflicts hold whatever the order on the command line.
bad --regular  --z implicit --regular
bad "--z gibbs" --z gibbs --bounds fixed

# nothing was sampled by any of them
eq "runs" "$(q $db "SELECT count(*) FROM run")" 0

expect 0 "$FLYDB" sample --help
for o in --db --iters --warmup --chains --seed --thin --z --regular --bounds \
         --checkpoint-every --theta-steps --quiet --resume; do
  grep -q -F -- "$o" "$T/out" "$T/err" || fail "sample --help does not list $o"
done
same_file $db f.orig
ok "sample --help lists every option"

# ---- run-time errors: exit 1, clear message, nothing created -------------
rm f.orig
mkdir x && cd x
expect 1 "$FLYDB" sample --db missing.db --iters 10 --seed 1
err_has "missing.db"
only_files .
expect 1 "$FLYDB" sample --iters 10 --seed 1
err_has "flydb.db"
only_files .
ok "sample on a missing database: exit 1, $(head -n 1 "$T/err"); no file created"

# a flydb database without a data set
"$FLYDB" ingest "$TOY/tiny_logistic.csv" --db empty.db >/dev/null 2>&1
sqlite3 empty.db "PRAGMA foreign_keys = ON; DELETE FROM dataset;"
[ "$(q empty.db "SELECT count(*) FROM dataset")" = 0 ] || fail "could not empty the database"
cp empty.db empty.orig
expect 1 "$FLYDB" sample --db empty.db --iters 10 --seed 1
err_has "empty.db" "data set"
eq "runs in empty.db" "$(q empty.db "SELECT count(*) FROM run")" 0
ok "sample on a database with no data set: exit 1, $(head -n 1 "$T/err")"

# not a flydb file: refused, untouched
sqlite3 other.db "CREATE TABLE t(x); INSERT INTO t VALUES (1);"
cp other.db other.orig
expect 1 "$FLYDB" sample --db other.db --iters 10 --seed 1
err_has "other.db"
same_file other.db other.orig
printf 'not a database at all\n' >junk.db
cp junk.db junk.orig
expect 1 "$FLYDB" sample --db junk.db --iters 10 --seed 1
err_has "junk.db"
same_file junk.db junk.orig
ok "sample on a non-flydb file: exit 1, file untouched"

# two data sets: --data chooses; without it the message names them
"$FLYDB" ingest "$TOY/tiny_logistic.csv" --db two.db >/dev/null 2>&1
"$FLYDB" ingest "$TOY/tiny_logistic.csv" --db two.db --name second >/dev/null 2>&1
expect 1 "$FLYDB" sample --db two.db --iters 10 --seed 1 --quiet
err_has "--data" "tiny_logistic" "second"
expect 1 "$FLYDB" sample --db two.db --iters 10 --seed 1 --quiet --data nosuch
err_has "nosuch"
eq "runs in two.db" "$(q two.db "SELECT count(*) FROM run")" 0
expect 0 "$FLYDB" sample --db two.db --iters 10 --seed 1 --quiet --data second
eq "run on 'second'" "$(q two.db "SELECT dataset, status FROM runs")" "$(printf 'second\tdone')"
ok "two data sets: --data chooses, an unknown or missing --data fails clearly"
