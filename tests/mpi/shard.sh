#!/usr/bin/env bash
# flydb shard: a data set split into shard databases of contiguous row
# ranges with a manifest.  Each shard is an ordinary flydb database (info,
# check, dump work on it); the shards' dumps, concatenated, are the
# original's dump; the manifest's column statistics are the original's bits;
# a manifest assembled from shards ingested separately lists them in the
# order given; a missing, extra, swapped or damaged shard is refused with
# its name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/../e2e/lib.sh"
flydb=$FLYDB
data=$here/../../datasets/toy/logistic.csv

# expect_fail WHAT PATTERN CMD...: CMD exits 1 with PATTERN in its message.
expect_fail() {
  local what=$1 pat=$2 rc=0
  shift 2
  "$@" >out.txt 2>err.txt || rc=$?
  [ "$rc" = 1 ] || fail "$what: exit $rc, want 1 ($(cat err.txt))"
  grep -q -- "$pat" err.txt || fail "$what: message '$(cat err.txt)' lacks '$pat'"
  ok "$what refused: $(head -c 160 err.txt)"
}

# concat_dumps OUT SHARD...: the shards' dumps with one header.
concat_dumps() {
  local out=$1 first=1 s
  shift
  : >"$out"
  for s in "$@"; do
    if [ $first = 1 ]; then "$flydb" dump --db "$s" >>"$out"; first=0
    else "$flydb" dump --db "$s" | tail -n +2 >>"$out"; fi
  done
}

"$flydb" ingest "$data" --db big.db --page-rows 37 2>/dev/null
"$flydb" dump --db big.db >whole.csv

for S in 1 3 4; do
  "$flydb" shard --db big.db --shards $S --out s$S 2>/dev/null
  shards=()
  for ((k = 0; k < S; k++)); do shards+=("s$S/$(printf 'shard-%03d.db' $k)"); done
  [ "$(find s$S -name 'shard-*.db' | wc -l)" = $S ] || fail "S=$S: not $S shard files"
  concat_dumps cat$S.csv "${shards[@]}"
  cmp -s whole.csv cat$S.csv || fail "S=$S: the shards' dumps differ from the original's"
  # contiguous, balanced ranges: floor(k N / S)
  got=$(sqlite3 s$S/manifest.db "SELECT group_concat(first_row || '+' || n_rows, ' ') FROM (SELECT * FROM shard ORDER BY k)")
  want=$(python3 -c "N,S=2000,$S; print(' '.join(f'{k*N//S}+{(k+1)*N//S-k*N//S}' for k in range(S)))")
  [ "$got" = "$want" ] || fail "S=$S: ranges $got, want $want"
  for s in "${shards[@]}"; do
    "$flydb" check --db "$s" >/dev/null || fail "S=$S: check of $s"
    "$flydb" info --db "$s" | grep -q "data set 'logistic'" || fail "S=$S: info of $s"
  done
  "$flydb" shard --verify --full --manifest s$S/manifest.db >/dev/null
  ok "S=$S: $S shards, ranges $got, dumps concatenated = original, check/info/verify pass"
done

# The manifest's statistics over all rows are the unsharded ingest's bits.
q="SELECT idx, name, role, n, quote(mean), quote(sd), quote(min), quote(max) FROM"
a=$(sqlite3 big.db "$q dataset_column ORDER BY idx")
b=$(sqlite3 s3/manifest.db "$q shard_column ORDER BY idx")
[ "$a" = "$b" ] || fail "manifest statistics differ: $b, want $a"
ok "manifest column statistics = the original's, bit for bit"

# Refusals before anything is written.
rc=0; "$flydb" shard --db big.db --shards 0 --out z 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "--shards 0: exit $rc, want 2 (usage)"
expect_fail "more shards than rows" "want 1 to 2000" "$flydb" shard --db big.db --shards 2001 --out z
expect_fail "an existing output" "already exists" "$flydb" shard --db big.db --shards 4 --out s4
[ ! -e z ] || [ -z "$(ls z)" ] || fail "a refused split left files in z"

# Damage, each in a fresh copy of the 4-shard directory.
fresh() { rm -rf d; cp -r s4 d; }
fresh; mv d/shard-002.db gone.db
expect_fail "a missing shard" "shard 2 (d/shard-002.db) is missing" \
  "$flydb" shard --verify --manifest d/manifest.db
fresh; cp d/shard-003.db d/shard-004.db
expect_fail "an extra shard" "extra shard d/shard-004.db" \
  "$flydb" shard --verify --manifest d/manifest.db
fresh; cp s4/shard-000.db d/shard-001.db
expect_fail "a swapped shard" "shard 1 (d/shard-001.db): its column statistics" \
  "$flydb" shard --verify --manifest d/manifest.db
fresh; sqlite3 d/shard-003.db "DELETE FROM page WHERE page_no = 2"
expect_fail "a shard missing a page" "shard 3 (d/shard-003.db)" \
  "$flydb" shard --verify --full --manifest d/manifest.db
fresh
python3 - <<'PY'
import sqlite3
c = sqlite3.connect("d/shard-002.db")
i, p = c.execute("SELECT id, payload FROM page WHERE page_no = 3").fetchone()
b = bytearray(p); b[20] ^= 1
c.execute("UPDATE page SET payload = ? WHERE id = ?", (bytes(b), i)); c.commit()
PY
expect_fail "a damaged page" "shard 2 (d/shard-002.db): data set 1, page 3: checksum" \
  "$flydb" shard --verify --full --manifest d/manifest.db
fresh; sqlite3 d/shard-001.db "UPDATE dataset_column SET mean = mean + 1 WHERE idx = 1"
expect_fail "changed statistics" "shard 1 (d/shard-001.db): its column statistics" \
  "$flydb" shard --verify --manifest d/manifest.db
fresh; sqlite3 d/manifest.db "UPDATE shard SET n_rows = 499 WHERE k = 1"
expect_fail "a row count unlike the shard's" "shard 1 (d/shard-001.db) has 500 rows, the manifest says 499" \
  "$flydb" shard --verify --manifest d/manifest.db
fresh; sqlite3 d/manifest.db "UPDATE shard SET first_row = 1001 WHERE k = 2"
expect_fail "a manifest with a gap" "want shard 2 from row 1000" \
  "$flydb" shard --verify --manifest d/manifest.db
expect_fail "no manifest" "not a shard manifest" \
  "$flydb" shard --verify --manifest big.db

# A manifest from shards ingested separately (say on other machines): the
# CSV cut in three, each part ingested under the same name.
head -1 "$data" >h.csv
tail -n +2 "$data" >rows.csv
mkdir parts
for p in 1 2 3; do
  { cat h.csv; sed -n "$(( (p - 1) * 700 + 1 )),$(( p * 700 ))p" rows.csv; } >p$p.csv
  "$flydb" ingest p$p.csv --db parts/p$p.db --name logistic --page-rows 50 2>/dev/null
done
"$flydb" shard --assemble --manifest parts/m.db parts/p1.db parts/p2.db parts/p3.db 2>/dev/null
"$flydb" shard --verify --full --manifest parts/m.db >/dev/null
concat_dumps asm.csv parts/p1.db parts/p2.db parts/p3.db
cmp -s whole.csv asm.csv || fail "assembled: the shards' dumps differ from the original's"
b=$(sqlite3 parts/m.db "$q shard_column ORDER BY idx")
[ "$a" = "$b" ] || fail "assembled manifest statistics differ: $b, want $a"
[ "$(sqlite3 parts/m.db "SELECT group_concat(path, ' ') FROM (SELECT path FROM shard ORDER BY k)")" \
  = "p1.db p2.db p3.db" ] || fail "assembled: shards beside the manifest are not stored by name"
ok "assembled from 3 separate ingests: verify --full passes, dumps and statistics = the original's"
# The manifest moves with its directory.
mv parts parts2
"$flydb" shard --verify --manifest parts2/m.db >/dev/null
ok "a moved directory still verifies"
"$flydb" ingest "$here/../../datasets/toy/robust.csv" --db r.db 2>/dev/null
expect_fail "a shard of other columns" "shard 1 (r.db) has 4 columns, want 3" \
  "$flydb" shard --assemble --manifest m2.db parts2/p1.db r.db
expect_fail "a shard given twice" "is shard 0 too" \
  "$flydb" shard --assemble --manifest m3.db parts2/p1.db parts2/p1.db
expect_fail "a shard that is not flydb" "shard 1 (h.csv)" \
  "$flydb" shard --assemble --manifest m4.db parts2/p1.db h.csv
expect_fail "an existing manifest" "already exists" \
  "$flydb" shard --assemble --manifest parts2/m.db parts2/p1.db
[ ! -e m2.db ] && [ ! -e m3.db ] && [ ! -e m4.db ] || fail "a refused assemble left a manifest"
ok "refused assembles leave no manifest"
