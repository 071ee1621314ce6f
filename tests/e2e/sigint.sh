#!/usr/bin/env bash
# ^C during an ingest: into a new database it leaves no file (neither the
# database nor its temporary); into an existing database the data set is
# not there, `flydb info` works at once, and the file is as before.  The
# existing database gets more rows than SQLite's page cache holds (64 MiB),
# so pages have already been written into the file when ^C comes.
#
# Not timing-dependent: the CSV comes through a FIFO whose writer sends all
# rows and then holds the pipe open, so flydb is certainly in the middle of
# the ingest (waiting for more rows) when SIGINT arrives.  The job runs with
# job control on (set -m) so that, as at a terminal, SIGINT is not ignored.
. "$(dirname "$0")/lib.sh"

writer=
sigint_cleanup() {
  [ -n "$writer" ] && kill "$writer" 2>/dev/null
  e2e_cleanup
}
trap sigint_cleanup EXIT

gen_csv 200000 8 41 >big.csv
gen_csv 1200000 8 42 >huge.csv   # ~80 MB of pages

# wait_for TEST...: poll up to 120 s until `test TEST...` holds.
wait_for() {
  local _
  for _ in $(seq 1200); do
    test "$@" && return 0
    sleep 0.1
  done
  return 1
}

# interrupt CSV DB: ingest CSV through a FIFO into DB, interrupt it once all
# rows are sent, and check it died of SIGINT.
interrupt() {
  local csv=$1 db=$2 pid rc=0
  rm -f fifo sent
  mkfifo fifo
  (cat "$csv"; : >sent; exec sleep 600) >fifo &
  writer=$!
  set -m
  "$FLYDB" ingest fifo --db "$db" --name big 2>"$T/err" &
  pid=$!
  set +m
  wait_for -e sent || fail "the writer never finished sending rows"
  sleep 1
  kill -0 "$pid" 2>/dev/null || { cat "$T/err" >&2; fail "flydb ended before SIGINT"; }
  kill -INT "$pid"
  if ! wait_for ! -d "/proc/$pid"; then
    kill -KILL "$pid"
    fail "flydb still running 120 s after SIGINT"
  fi
  wait "$pid" || rc=$?
  kill "$writer" 2>/dev/null || true
  wait "$writer" 2>/dev/null || true
  writer=
  rm -f fifo sent
  [ "$rc" = 130 ] || { cat "$T/err" >&2; fail "flydb exit status $rc after SIGINT, want 130"; }
}

mkdir db
interrupt big.csv db/new.db
only_files db
ok "SIGINT during an ingest into a new database: no file left"

expect 0 "$FLYDB" ingest "$FIX/good.csv" --db db/t.db
cp db/t.db t.orig
interrupt huge.csv db/t.db
expect 0 "$FLYDB" info --db db/t.db
out_has "data set 'good'"
grep -q -F "'big'" "$T/out" && fail "the interrupted data set is visible"
eq "data sets" "$(q db/t.db "SELECT group_concat(name, ',') FROM dataset")" good
eq "integrity" "$(q db/t.db "PRAGMA integrity_check")" ok
same_file db/t.db t.orig
only_files db t.db
ok "SIGINT during an ingest into an existing database: data set absent, file as before"
