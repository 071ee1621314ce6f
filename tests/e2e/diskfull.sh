#!/usr/bin/env bash
# A full file system (a 3 MiB tmpfs; needs root, else the test is skipped
# with status 77):
#   - an ingest that does not fit into a new database: exit 1 with a
#     disk-full message and no file left on the file system (neither the
#     database nor its temporary);
#   - the same into an existing database (rollback-journal mode, then WAL
#     mode): exit 1, the file byte-identical, no journal left;
#   - a run whose draws fill the disk: exit 1 with a disk-full message, the
#     run not 'done' and consistent (each chain's draws and diagnostics end
#     at its checkpoint), `flydb info` and `flydb summary` work on the
#     database; with space made (the tmpfs grown) `--resume` completes it
#     and its draws equal those of an uninterrupted run.
#   - another file takes the last byte: `flydb info` and `flydb summary`
#     on the WAL database either work or exit 1 saying the disk is full
#     (SQLite's own words are "disk I/O error": it cannot grow the -shm
#     file), and the database is unchanged.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: mounting a small tmpfs needs root"
  exit 77
fi
GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
[ -x "$GEN" ] || fail "no flydb-gen at $GEN"
fs=$T/fs
mkdir "$fs"
if ! mount -t tmpfs -o size=3m tmpfs "$fs" 2>"$T/err"; then
  echo "SKIP: cannot mount a tmpfs: $(cat "$T/err")"
  exit 77
fi
diskfull_cleanup() {
  umount "$fs" 2>/dev/null || umount -l "$fs" 2>/dev/null || true
  e2e_cleanup
}
trap diskfull_cleanup EXIT

# full_msg WHAT: stderr of the last `expect` says the disk is full.
full_msg() {
  grep -q -i -E 'disk is full|disk full|no space left' "$T/err" ||
    { cat "$T/err" >&2; fail "$1: stderr does not say the disk is full"; }
}

"$GEN" --model logistic --rows 50000 --features 20 --seed 3 >big.csv    # 9 MB
"$GEN" --model logistic --rows 2000 --features 3 --seed 4 >small.csv
echo "# file system: $(df -k "$fs" | awk 'NR == 2 { print $2 " KiB, " $4 " KiB free" }')"

# ---- ingest into a new database ------------------------------------------
expect 1 "$FLYDB" ingest big.csv --db "$fs/new.db"
full_msg "ingest into a new database"
only_files "$fs"
ok "ingest into a new database on a full disk: exit 1 ($(head -n 1 "$T/err")), no file left"

expect 1 "$FLYDB" ingest - --db "$fs/new.db" --name big <big.csv
full_msg "ingest from stdin into a new database"
only_files "$fs"
ok "the same from standard input"

# ---- ingest into an existing database ------------------------------------
expect 0 "$FLYDB" ingest small.csv --db "$fs/t.db"
cp "$fs/t.db" t.orig
expect 1 "$FLYDB" ingest big.csv --db "$fs/t.db"
full_msg "ingest into an existing database"
msg=$(head -n 1 "$T/err")
same_file "$fs/t.db" t.orig
only_files "$fs" t.db
expect 0 "$FLYDB" info --db "$fs/t.db"
out_has "data set 'small'"
grep -q -F "'big'" "$T/out" && fail "the failed data set is visible"
ok "ingest into an existing database (rollback journal): exit 1 ($msg), file unchanged"

# WAL mode (a run was written)
expect 0 "$FLYDB" sample --db "$fs/t.db" --iters 20 --seed 1 --quiet
eq "journal mode" "$(q "$fs/t.db" "PRAGMA journal_mode")" wal
only_files "$fs" t.db
cp "$fs/t.db" t.orig
expect 1 "$FLYDB" ingest big.csv --db "$fs/t.db" --precision f32
full_msg "ingest into an existing WAL database"
same_file "$fs/t.db" t.orig
only_files "$fs" t.db
expect 0 "$FLYDB" info --db "$fs/t.db"
out_has "data set 'small'"
eq "integrity" "$(q "$fs/t.db" "PRAGMA integrity_check")" ok
ok "ingest into an existing database (WAL): exit 1, file unchanged, nothing left beside it"
rm "$fs/t.db"

# ---- draws fill the disk -------------------------------------------------
OPTS=(--iters 20000 --warmup 10 --checkpoint-every 100 --seed 1 --quiet)
expect 0 "$FLYDB" ingest small.csv --db "$fs/s.db"
expect 0 "$FLYDB" tune --db "$fs/s.db"
echo "# before sampling: $(df -k "$fs" | awk 'NR == 2 { print $4 " KiB free" }')"
expect 1 "$FLYDB" sample --db "$fs/s.db" "${OPTS[@]}"
full_msg "sample"
msg=$(head -n 1 "$T/err")
# shellcheck disable=SC2012
left=$(ls -A "$fs" | tr '\n' ' ')
# flydb first, as a user would
expect 0 "$FLYDB" info --db "$fs/s.db"
out_has "data set 'small'"
run=$(q "$fs/s.db" "SELECT max(id) FROM run")
status=$(q "$fs/s.db" "SELECT status FROM run WHERE id = $run")
[ "$status" = running ] || [ "$status" = failed ] || fail "run $run: status '$status' after a full disk"
P=$(q "$fs/s.db" "SELECT n_params FROM run WHERE id = $run")
bad=$(q "$fs/s.db" "
  WITH c(chain) AS (SELECT DISTINCT chain FROM draw WHERE run_id = $run
                    UNION SELECT chain FROM checkpoint WHERE run_id = $run),
       k AS (SELECT c.chain, ifnull(ck.iter, 0) AS it FROM c
             LEFT JOIN checkpoint ck ON ck.run_id = $run AND ck.chain = c.chain)
  SELECT 'chain ' || k.chain || ': checkpoint at ' || k.it || ', ' ||
         (SELECT count(*) FROM draw d WHERE d.run_id = $run AND d.chain = k.chain) || ' draws, ' ||
         (SELECT count(*) FROM iteration i WHERE i.run_id = $run AND i.chain = k.chain) || ' iteration rows'
  FROM k
  WHERE (SELECT count(*) FROM draw d WHERE d.run_id = $run AND d.chain = k.chain) != k.it * $P
     OR (SELECT ifnull(max(iter), 0) FROM draw d WHERE d.run_id = $run AND d.chain = k.chain) != k.it
     OR (SELECT count(*) FROM iteration i WHERE i.run_id = $run AND i.chain = k.chain) != k.it")
[ -z "$bad" ] || fail "run $run after a full disk: $bad"
at=$(q "$fs/s.db" "SELECT group_concat(chain || ':' || iter, ' ') FROM checkpoint WHERE run_id = $run")
eq "integrity" "$(q "$fs/s.db" "PRAGMA integrity_check")" ok
# summary: needs post-warm-up draws in every chain
nchains=$(q "$fs/s.db" "SELECT n_chains FROM run WHERE id = $run")
nwith=$(q "$fs/s.db" "SELECT count(*) FROM checkpoint WHERE run_id = $run AND iter > 10")
if [ "$nwith" = "$nchains" ]; then
  expect 0 "$FLYDB" summary --db "$fs/s.db"
  out_has "rhat" "ess_bulk"
  sumwhat="summary printed"
else
  expect 1 "$FLYDB" summary --db "$fs/s.db"
  err_has "no post-warm-up draws"
  sumwhat="summary: '$(head -n 1 "$T/err")' (a chain without post-warm-up draws)"
fi
ok "draws fill the disk: exit 1 ($msg), run $run '$status', checkpoints (chain:iter) ${at:-none}, consistent; info works, $sumwhat; left: $left"

# ---- the disk filled to the last byte by another file --------------------
# Reading a WAL database needs a few bytes for its -shm index; with none
# free, a read fails, and must say the disk is full (SQLite itself only says
# "disk I/O error"), exit 1 and change nothing.
dd if=/dev/zero of="$fs/filler" bs=64k 2>/dev/null || true
sha_before=$(sha256sum <"$fs/s.db")
for cmd in "info --no-columns" "summary"; do
  got=0
  # shellcheck disable=SC2086  # cmd is two words on purpose
  "$FLYDB" $cmd --db "$fs/s.db" >"$T/out" 2>"$T/err" || got=$?
  case $got in
    0) ok "with 0 bytes free: flydb $cmd works" ;;
    1) if [ "$cmd" = summary ] && [ "$nwith" != "$nchains" ] &&
          grep -q "no post-warm-up draws" "$T/err"; then
         # a chain had no checkpoint yet when the disk filled (see above)
         ok "with 0 bytes free: flydb summary exits 1: $(head -n 1 "$T/err")"
       else
         full_msg "$cmd with 0 bytes free"
         ok "with 0 bytes free: flydb $cmd exits 1: $(head -n 1 "$T/err")"
       fi ;;
    *) cat "$T/err" >&2; fail "with 0 bytes free: flydb $cmd exits $got" ;;
  esac
done
eq "database unchanged by reads on a full disk" "$(sha256sum <"$fs/s.db")" "$sha_before"
rm -f "$fs/filler"
