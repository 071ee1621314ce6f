#!/usr/bin/env bash
# Extreme data never put a NaN or an infinity into the stored draws and
# never hang.  Each data set is ingested and sampled (--iters 200 --seed 1)
# with gibbs z updates (the default), --regular, --z implicit, --z explicit
# and --bounds fixed; every command runs under `timeout 120`, so a hang
# fails the test.  Every case has a proper posterior under the default
# N(0, I) prior (its Hessian is X'WX + I), so every run must succeed: exit
# 0, status 'done', all 2 x 300 x P draws present and finite (SQLite stores
# a NaN as NULL, so NULL counts too), every iteration's log joint density
# and step size finite, and `flydb summary` prints no NaN or Inf.
#
#   large       x1 up to 1e6 in magnitude, x2 in [-1, 1]
#   offset      x1 = 1e6 + U(-1/2, 1/2): nearly collinear with the intercept
#   mixed       columns of scale 1e6, 1e-6 and 1, targets independent of them
#   separable   y = (x > 0), x in [-1, 1]: post-warm-up draws of theta_x > 0
#   seplarge    the same with x up to 1e6 in magnitude
#   bigsep      x = +-1e6 exactly, y = (x > 0): theta_x > 0 after warm-up
#   constant    a column of 3s (collinear with the intercept) and one of 0s
#   duplicated  5 distinct rows, each 200 times
#   single      one row
#   allequal    every target 1
# Last, a CSV with a header and no rows is refused by ingest (exit 1, a
# message, no database created).
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TO=120
MODES=("" "--regular" "--z implicit" "--z explicit" "--bounds fixed")

gen() {
  case $1 in
    large) awk 'BEGIN { srand(1); print "x1,x2,y"
             for(i = 0; i < 500; i++){ x1 = (rand() - 0.5) * 2e6; x2 = (rand() - 0.5) * 2
               p = 1 / (1 + exp(-(2 * x1 / 1e6 + x2))); printf "%.9g,%.9g,%d\n", x1, x2, rand() < p } }' ;;
    offset) awk 'BEGIN { srand(2); print "x1,x2,y"
             for(i = 0; i < 500; i++){ u = rand() - 0.5; x2 = (rand() - 0.5) * 2
               p = 1 / (1 + exp(-(2 * u + x2))); printf "%.12g,%.9g,%d\n", 1e6 + u, x2, rand() < p } }' ;;
    mixed) awk 'BEGIN { srand(8); print "big,tiny,x,y"
             for(i = 0; i < 500; i++)
               printf "%.9g,%.9g,%.9g,%d\n", (rand() - 0.5) * 2e6, (rand() - 0.5) * 2e-6, rand() - 0.5, rand() < 0.5 }' ;;
    separable) awk 'BEGIN { srand(3); print "x,y"
             for(i = 0; i < 500; i++){ x = (rand() - 0.5) * 2; printf "%.9g,%d\n", x, (x > 0) } }' ;;
    seplarge) awk 'BEGIN { srand(7); print "x,y"
             for(i = 0; i < 500; i++){ x = (rand() - 0.5) * 2e6; printf "%.9g,%d\n", x, (x > 0) } }' ;;
    bigsep) awk 'BEGIN { print "x,y"; for(i = 0; i < 500; i++) print (i % 2 ? "1000000,1" : "-1000000,0") }' ;;
    constant) awk 'BEGIN { srand(4); print "c3,c0,x,y"
             for(i = 0; i < 500; i++){ x = (rand() - 0.5) * 2; printf "3,0,%.9g,%d\n", x, rand() < 1 / (1 + exp(-x)) } }' ;;
    duplicated) awk 'BEGIN { srand(5); print "x1,x2,y"
             for(k = 0; k < 5; k++) a[k] = sprintf("%.6g,%.6g,%d", (rand() - 0.5) * 4, (rand() - 0.5) * 4, k % 2)
             for(i = 0; i < 1000; i++) print a[i % 5] }' ;;
    single) printf 'x1,x2,y\n0.3,-1.2,1\n' ;;
    allequal) awk 'BEGIN { srand(6); print "x1,x2,y"
             for(i = 0; i < 500; i++) printf "%.9g,%.9g,1\n", (rand() - 0.5) * 2, (rand() - 0.5) * 2 }' ;;
  esac
}

# check_run DB RUN WHAT: run RUN is done with all draws finite.
check_run() {
  local db=$1 run=$2 what=$3 P want got bad
  eq "$what: status" "$(q "$db" "SELECT status FROM run WHERE id = $run")" "done"
  P=$(q "$db" "SELECT n_params FROM run WHERE id = $run")
  want=$((2 * 300 * P))
  got=$(q "$db" "SELECT count(*) FROM draw WHERE run_id = $run")
  eq "$what: draws" "$got" "$want"
  bad=$(q "$db" "SELECT count(*) FROM draw WHERE run_id = $run
                 AND (value IS NULL OR value != value OR abs(value) > 1e300)")
  [ "$bad" = 0 ] || fail "$what: $bad draws are NaN (NULL) or infinite"
  eq "$what: iteration rows" "$(q "$db" "SELECT count(*) FROM iteration WHERE run_id = $run")" 600
  bad=$(q "$db" "SELECT count(*) FROM iteration WHERE run_id = $run
                 AND (log_joint IS NULL OR log_joint != log_joint OR abs(log_joint) > 1e300
                      OR step_size IS NULL OR NOT step_size > 0 OR step_size > 1e300)")
  [ "$bad" = 0 ] || fail "$what: $bad iterations with a log joint density or step size NaN (NULL) or infinite"
}

# positive DB RUN IDX WHAT: every post-warm-up draw of parameter IDX > 0.
positive() {
  local m
  m=$(q "$1" "SELECT min(value) FROM draw d JOIN run r ON r.id = d.run_id
              WHERE d.run_id = $2 AND d.idx = $3 AND d.iter > r.n_warmup")
  awk -v m="$m" 'BEGIN { exit !(m > 0) }' || fail "$4: smallest post-warm-up draw of theta_$3 is $m, want > 0 (separable data)"
}

for c in large offset mixed separable seplarge bigsep constant duplicated single allequal; do
  gen $c >$c.csv
  expect 0 timeout $TO "$FLYDB" ingest $c.csv --db $c.db
  for m in "${MODES[@]}"; do
    what="$c ${m:-(gibbs)}"
    # shellcheck disable=SC2086
    expect 0 timeout $TO "$FLYDB" sample --db $c.db --iters 200 --seed 1 --quiet $m
    run=$(q $c.db "SELECT max(id) FROM run")
    check_run $c.db "$run" "$what"
    case $c in separable|seplarge|bigsep) positive $c.db "$run" 1 "$what" ;; esac
  done
  expect 0 timeout $TO "$FLYDB" summary --db $c.db 1
  if grep -E -i -w -q 'nan|[-+]?inf(inity)?' "$T/out"; then
    cat "$T/out" >&2
    fail "$c: summary prints NaN or Inf"
  fi
  ok "$c: ingest, 5 samplers exit 0 with finite draws and diagnostics, summary finite"
done

printf 'x1,x2,y\n' >empty.csv
expect 1 timeout $TO "$FLYDB" ingest empty.csv --db empty.db
err_has "empty.csv" "no data rows"
[ ! -e empty.db ] || fail "a refused ingest created empty.db"
ok "a header without rows: ingest exit 1 ($(head -n 1 "$T/err")), no database"
