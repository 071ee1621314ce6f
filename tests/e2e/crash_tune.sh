#!/usr/bin/env bash
# kill -9 during `flydb tune` on a 10^5-row store (150 features, so that a
# build takes about a second in a release build).  A build writes its bound
# pages, moments, MAP and Laplace matrices and status 'ready' in one
# transaction (src/tune/tune.c), so afterwards there is no bound set in
# status 'building' and every 'ready' one is whole: bound pages matching the
# data pages, matrices of the right size, moment rows, and (once it exists)
# `flydb check` accepts the database.  Then `flydb sample --iters 50` works:
# it reuses a ready set, or builds one if the kill left none.
#
# Kill points cycle through three builds: MAP bounds on an untuned store,
# fixed bounds on an untuned store, and `--force` over an existing ready
# set (which the killed rebuild deletes first, in its transaction: the old
# set must survive).  Half the kill points are aimed at the write phase
# (after "Laplace covariance" is printed; "hot journal left" in the output
# shows a kill inside the write transaction), the others at a random moment.
# FLYDB_TEST_LEVEL=accurate: 50 kill points, else 4.  FLYDB_TEST_SEED fixes
# the kill moments (printed either way).
. "$(dirname "$0")/lib.sh"
set -euo pipefail

GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
[ -x "$GEN" ] || fail "no flydb-gen at $GEN"

bg=
crash_cleanup() {
  if [ -n "$bg" ]; then kill -9 "$bg" 2>/dev/null || true; fi
  e2e_cleanup
}
trap crash_cleanup EXIT

tseed=${FLYDB_TEST_SEED:-$(( ($$ ^ $(date +%s)) & 32767 ))}
RANDOM=$tseed
echo "# kill moments from FLYDB_TEST_SEED=$tseed"
kills=4
[ "${FLYDB_TEST_LEVEL:-}" = accurate ] && kills=50

have_check=0
if "$FLYDB" check --help >/dev/null 2>&1; then
  have_check=1
else
  echo "# flydb check is not available: its assertions are skipped"
fi

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# rand_frac LO HI: $frac = a random number in [LO, HI) with 3 decimals.  Not
# called in $(...): bash reseeds RANDOM in subshells, so FLYDB_TEST_SEED
# would not fix the sequence.
rand_frac() { local r=$((RANDOM % 1000)); frac=$(awk -v lo="$1" -v hi="$2" -v r=$r 'BEGIN { printf "%.3f", lo + (hi - lo) * r / 1000 }'); }
after() { awk -v f="$1" -v ms="$2" 'BEGIN { printf "%.3f", f * ms / 1000 }'; }

# ready_ok DB: every bound set is 'ready' and whole; prints the number of
# ready sets.
ready_ok() {
  local db=$1 bad
  bad=$(q "$db" "
    WITH d AS (SELECT * FROM dataset),
         b AS (SELECT * FROM bound_set)
    SELECT 'bound set ' || id || ' has status ' || status FROM b WHERE status != 'ready'
    UNION ALL SELECT 'bound set ' || b.id || ': n_pages ' || b.n_pages || ', data pages ' || d.n_pages
      FROM b JOIN d ON d.id = b.dataset_id WHERE b.n_pages != d.n_pages
    UNION ALL SELECT 'bound set ' || b.id || ': ' || (SELECT count(*) FROM bound_page p
      WHERE p.bound_set_id = b.id) || ' bound pages, want ' || b.n_pages FROM b
      WHERE (SELECT count(*) FROM bound_page p WHERE p.bound_set_id = b.id) != b.n_pages
    UNION ALL SELECT 'bound set ' || b.id || ' page ' || bp.page_no || ': rows '
      || bp.first_row || '+' || bp.n_rows || ', data page ' || ifnull(p.first_row || '+' || p.n_rows, 'missing')
      FROM b JOIN bound_page bp ON bp.bound_set_id = b.id
      LEFT JOIN page p ON p.dataset_id = b.dataset_id AND p.page_no = bp.page_no
      WHERE p.first_row IS NOT bp.first_row OR p.n_rows IS NOT bp.n_rows
    UNION ALL SELECT 'bound set ' || b.id || ': matrices of the wrong size' FROM b
      WHERE ifnull(length(theta_map), 0) != 8 * n_params
         OR ifnull(length(laplace_cov), 0) != 8 * n_params * n_params
         OR ifnull(length(laplace_prec), 0) != 8 * n_params * n_params
    UNION ALL SELECT 'bound set ' || b.id || ': no MAP log posterior or tuning time' FROM b
      WHERE map_logpost IS NULL OR tune_seconds IS NULL
    UNION ALL SELECT 'bound set ' || b.id || ': no moments' FROM b
      WHERE NOT EXISTS (SELECT 1 FROM moment m WHERE m.bound_set_id = b.id)
    UNION ALL SELECT 'orphan bound pages or moments'
      WHERE EXISTS (SELECT 1 FROM bound_page WHERE bound_set_id NOT IN (SELECT id FROM b))
         OR EXISTS (SELECT 1 FROM moment WHERE bound_set_id NOT IN (SELECT id FROM b))")
  [ -z "$bad" ] || fail "$db: $(echo "$bad" | head -n 5 | tr '\n' ';')"
  q "$db" "SELECT count(*) FROM bound_set"
}

# ---- the store ------------------------------------------------------------
"$GEN" --model logistic --rows 100000 --features 150 --seed 11 >t.csv
expect 0 "$FLYDB" ingest t.csv --db base.db --name t
rm t.csv
cp base.db tuned.db
t0=$(now_ms)
expect 0 "$FLYDB" tune --db tuned.db
ref_ms=$(( $(now_ms) - t0 ))
# the write phase: from "Laplace covariance ... (A s)" to "ready: ... B s"
a=$(sed -n 's/.*Laplace covariance.*(\([0-9.]*\) s).*/\1/p' "$T/err" | head -n 1)
b=$(sed -n 's/.*bound set [0-9]* ready:.* \([0-9.]*\) s$/\1/p' "$T/err" | head -n 1)
if [ -n "$a" ] && [ -n "$b" ]; then
  write_ms=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%d", (b - a) * 1000 + 1 }')
else
  echo "# no phase times in the tune output; write phase taken as half the build"
  write_ms=$((ref_ms / 2))
fi
eq "bound sets after tune" "$(ready_ok tuned.db)" 1
if [ $have_check = 1 ]; then expect 0 "$FLYDB" check --db tuned.db; fi
echo "# tune of 100000 x 150: $ref_ms ms, of which writing bounds $write_ms ms"

# wait_laplace: poll until the background tune printed its Laplace line
# (0) or ended (1).
wait_laplace() {
  local _
  for _ in $(seq 12000); do
    grep -q -F "Laplace covariance" "$T/bg.err" 2>/dev/null && return 0
    kill -0 "$bg" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

n_none=0 n_ready=0 n_old=0
for k in $(seq "$kills"); do
  case $((k % 3)) in
    1) what="MAP bounds"; cp base.db t.db; args=(); sargs=() ;;
    2) what="fixed bounds"; cp base.db t.db; args=(--bounds fixed); sargs=(--bounds fixed) ;;
    0) what="--force over a ready set"; cp tuned.db t.db; args=(--force); sargs=() ;;
  esac
  old_id=$(q t.db "SELECT ifnull(max(id), 0) FROM bound_set")
  rm -f "$T/bg.err"   # not the previous tune's Laplace line
  "$FLYDB" tune --db t.db "${args[@]}" >"$T/bg.out" 2>"$T/bg.err" &
  bg=$!
  if [ $((k % 4)) = 0 ] || [ $((k % 4)) = 3 ]; then
    rand_frac 0 0.7
    if wait_laplace; then sleep "$(after "$frac" "$write_ms")"; fi
    when="$frac x ${write_ms} ms into the write phase"
  else
    rand_frac 0 1.1
    sleep "$(after "$frac" "$ref_ms")"
    when="$frac x ${ref_ms} ms"
  fi
  kill -9 "$bg" 2>/dev/null || true
  rc=0
  { wait "$bg"; } 2>/dev/null || rc=$?
  bg=
  [ "$rc" = 137 ] || [ "$rc" = 0 ] || { cat "$T/bg.err" >&2; fail "tune ($what): exit status $rc"; }
  hot=$([ -s t.db-journal ] && echo ", hot journal left" || echo "")
  # flydb opens it first (a hot journal is rolled back by flydb itself)
  expect 0 "$FLYDB" info --db t.db --no-columns
  eq "integrity" "$(q t.db "PRAGMA integrity_check")" ok
  n=$(ready_ok t.db)
  if [ $have_check = 1 ]; then expect 0 "$FLYDB" check --db t.db; fi
  if [ "$old_id" != 0 ]; then
    [ "$n" = 1 ] || fail "--force killed at $when: $n bound sets, want 1 (old or rebuilt)"
    state="one ready set ($([ "$(q t.db "SELECT id FROM bound_set")" = "$old_id" ] && echo "the old one" || echo "rebuilt"))"
    [ "$(q t.db "SELECT id FROM bound_set")" = "$old_id" ] && n_old=$((n_old + 1))
  elif [ "$n" = 0 ]; then
    [ "$rc" = 137 ] || fail "tune exit status 0 but no bound set"
    state="no bound set"
    n_none=$((n_none + 1))
  else
    [ "$n" = 1 ] || fail "$what killed at $when: $n bound sets"
    state="one ready set"
    n_ready=$((n_ready + 1))
  fi
  have=$(q t.db "SELECT ifnull(max(id), 0) FROM bound_set")
  expect 0 "$FLYDB" sample --db t.db --iters 50 --seed 1 --quiet "${sargs[@]}"
  run=$(q t.db "SELECT max(id) FROM run")
  eq "run status" "$(q t.db "SELECT status FROM run WHERE id = $run")" "done"
  eq "bound sets after sampling" "$(ready_ok t.db)" 1
  used=$(q t.db "SELECT bound_set_id FROM run WHERE id = $run")
  if [ "$have" != 0 ]; then
    eq "bound set used by the run (reused)" "$used" "$have"
  fi
  ok "tune ($what) kill -9 at $when (exit $rc$hot): $state; sample --iters 50 then works (bound set $used)"
done
echo "# $kills kill points: $n_none left no bound set, $n_ready a ready one; --force: $n_old kept the old set"
[ $have_check = 1 ] || echo "# flydb check was not available: not run"
