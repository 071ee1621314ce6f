#!/usr/bin/env bash
# A --db that is not a flydb database (a text file, a SQLite file of another
# program, a flydb file of a newer schema version, a missing file for info)
# is refused with exit status 1 and left untouched.
. "$(dirname "$0")/lib.sh"

# refused DB: ingest and info both fail, name DB, and leave it byte-identical.
refused() {
  local db=$1
  cp "$db" "$db.orig"
  expect 1 "$FLYDB" ingest "$FIX/good.csv" --db "$db"
  err_has "$db"
  ok "ingest into $db refused: $(head -n 1 "$T/err")"
  expect 1 "$FLYDB" info --db "$db"
  err_has "$db"
  ok "info of $db refused: $(head -n 1 "$T/err")"
  same_file "$db" "$db.orig"
  rm "$db.orig"
}

printf 'hello, I am a text file, not a database\n' >text.db
refused text.db

sqlite3 other.db "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);"
refused other.db

expect 0 "$FLYDB" ingest "$FIX/good.csv" --db v99.db
sqlite3 v99.db "PRAGMA user_version = 99"
refused v99.db

only_files . other.db text.db v99.db

expect 1 "$FLYDB" info --db missing.db
err_has "missing.db"
[ ! -e missing.db ] || fail "info created missing.db"
ok "info of a missing database: $(head -n 1 "$T/err")"

expect 1 "$FLYDB" ingest "$FIX/good.csv" --db nodir/new.db
err_has "nodir/new.db"
[ ! -e nodir ] || fail "ingest created nodir/"
ok "ingest into a directory that does not exist: $(head -n 1 "$T/err")"
only_files . other.db text.db v99.db
