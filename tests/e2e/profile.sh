#!/usr/bin/env bash
# flydb sample --profile: the report on stderr and the table profile, for
# --regular, --z gibbs and --z implicit.  Every chain has one row per part
# (theta, z, read, decode, write, other), shares in [0, 100] that add up to
# 100 (times are exclusive, so they partition the loop), seconds that add up
# to about the loop time; without --profile nothing is stored.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=f.db
expect 0 "$FLYDB" ingest "$TOY/tiny_logistic.csv" --db $db

parts="decode other read theta write z"
for mode in "--regular" "--z gibbs" "--z implicit"; do
  # shellcheck disable=SC2086  # $mode is two words
  expect 0 "$FLYDB" sample --db $db --seed 3 --iters 400 --chains 2 --quiet --profile $mode
  run=$(q $db "SELECT max(id) FROM run")
  err_has "profile of the sampling loop" "chain 1" "chain 2" "total"
  for p in $parts; do
    grep -q "^$p " "$T/err" || { cat "$T/err" >&2; fail "$mode: no line for part $p"; }
  done
  eq "$mode: parts per chain" "$(q $db "SELECT chain || ':' || group_concat(part, ' ')
        FROM (SELECT * FROM profile WHERE run_id = $run ORDER BY chain, part) GROUP BY chain")" \
     "$(printf '0:%s\n1:%s' "$parts" "$parts")"
  eq "$mode: shares outside [0, 100]" "$(q $db "SELECT count(*) FROM profile WHERE run_id = $run
        AND NOT (share BETWEEN 0 AND 100 AND seconds >= 0)")" 0
  eq "$mode: chains whose shares do not add up to 100" "$(q $db "SELECT count(*) FROM
        (SELECT chain, sum(share) s FROM profile WHERE run_id = $run GROUP BY chain)
        WHERE abs(s - 100) > 1e-6")" 0
  eq "$mode: iterations profiled" "$(q $db "SELECT DISTINCT n_iters FROM profile WHERE run_id = $run")" 600
  # the profiled time is the loop's: within 20% + 0.1 s of the slowest chain's loop time
  eq "$mode: profiled seconds vs the loop" "$(q $db "SELECT max(s) <= r.sample_seconds * 1.2 + 0.1
        AND max(s) >= r.sample_seconds * 0.8 - 0.1 FROM (SELECT sum(seconds) s FROM profile
        WHERE run_id = $run GROUP BY chain), run r WHERE r.id = $run")" 1
  # the total column of the report: shares of all chains together, adding up to 100
  total=$(awk '$1 ~ /^(theta|z|read|decode|write|other)$/ { gsub("%", "", $4); s += $4 } END { printf "%.0f", s }' "$T/err")
  [ "$total" -ge 99 ] && [ "$total" -le 101 ] || { cat "$T/err" >&2; fail "$mode: total shares add up to $total"; }
  ok "$mode: profile of 2 chains, shares in [0, 100] adding up to 100 (report total $total%)"
done
eq "theta share of regular MCMC" "$(q $db "SELECT sum(seconds) > 0 FROM profile
      WHERE run_id = 1 AND part = 'theta'")" 1

expect 0 "$FLYDB" sample --db $db --seed 3 --iters 100 --chains 1 --quiet
run=$(q $db "SELECT max(id) FROM run")
eq "rows without --profile" "$(q $db "SELECT count(*) FROM profile WHERE run_id = $run")" 0
if grep -q "profile of" "$T/err"; then fail "a profile was printed without --profile"; fi
ok "without --profile: no report, no rows"

