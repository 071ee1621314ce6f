#!/usr/bin/env bash
# Same seed => bit-identical draws (docs/design.md §10), in every z mode:
# gibbs (the default), --regular, --z implicit, --z explicit and implicit
# with --bounds fixed.  A different seed gives different draws.  The draws
# do not depend on how they are written (--checkpoint-every), on --thin
# (thinning keeps a subset of the same chain) nor on the number of chains
# (chain c uses RNG stream c of the seed).
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=f.db
expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db $db
expect 0 "$FLYDB" tune --db $db

# sample ARGS...: one run, prints its id.
sample() {
  expect 0 "$FLYDB" sample --db $db --quiet "$@"
  q $db "SELECT max(id) FROM run"
}

# cmp_runs A B [CHAINS]: the draws of run B equal those of run A exactly, in
# chains 0..CHAINS-1 (default all, and then the counts must agree); the
# per-iteration diagnostics agree too.  Prints nothing; fails with counts.
cmp_runs() {
  local a=$1 b=$2 cw="" na nb nsame ni
  [ $# -ge 3 ] && cw="AND chain < $3"
  na=$(q $db "SELECT count(*) FROM draw WHERE run_id = $a $cw")
  nb=$(q $db "SELECT count(*) FROM draw WHERE run_id = $b $cw")
  # INTERSECT, not a join on iter (which the views compute)
  nsame=$(q $db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $a $cw
                 INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $b $cw)")
  [ "$na" -gt 0 ] || fail "run $a has no draws"
  [ "$na" = "$nb" ] && [ "$nsame" = "$na" ] ||
    fail "runs $a and $b: $na and $nb draws, $nsame equal"
  ni=$(q $db "SELECT count(*) FROM iteration x JOIN iteration y ON y.run_id = $b
              AND y.chain = x.chain AND y.iter = x.iter
              WHERE x.run_id = $a ${cw:+AND x.chain < $3} AND x.log_joint IS y.log_joint
              AND x.n_bright = y.n_bright AND x.accepted = y.accepted
              AND x.n_lik_evals = y.n_lik_evals AND x.step_size IS y.step_size")
  [ "$ni" = "$(q $db "SELECT count(*) FROM iteration WHERE run_id = $a $cw")" ] ||
    fail "runs $a and $b: equal draws but only $ni iteration rows agree"
}

# n_equal A B: how many draws of A and B agree.
n_equal() {
  q $db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $1
         INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $2)"
}

ITERS=1000
for mode in "" "--regular" "--z implicit" "--z explicit" "--z implicit=0.3" "--bounds fixed"; do
  # shellcheck disable=SC2086  # word splitting of $mode intended
  r1=$(sample --seed 11 --iters $ITERS --chains 2 $mode)
  # shellcheck disable=SC2086
  r2=$(sample --seed 11 --iters $ITERS --chains 2 $mode)
  # shellcheck disable=SC2086
  r3=$(sample --seed 12 --iters $ITERS --chains 2 $mode)
  [ "$r1" != "$r2" ] && [ "$r2" != "$r3" ] || fail "runs not created"
  cmp_runs "$r1" "$r2"
  total=$(q $db "SELECT count(*) FROM draw WHERE run_id = $r1")
  eq "draws of run $r1" "$total" $((2 * (ITERS + ITERS / 2) * 2))
  same=$(n_equal "$r1" "$r3")
  # a different seed starts elsewhere; a few repeated values at most
  [ "$same" -lt $((total / 100)) ] ||
    fail "${mode:-gibbs}: seeds 11 and 12 share $same of $total draws"
  ok "${mode:-gibbs (default)}: seed 11 twice -> identical $total draws and diagnostics; seed 12 -> $same equal"
done

# The commit cadence does not change the draws.
ra=$(sample --seed 21 --iters $ITERS)
rb=$(sample --seed 21 --iters $ITERS --checkpoint-every 7)
cmp_runs "$ra" "$rb"
ok "--checkpoint-every 7 gives the draws of the default cadence"

# --thin K keeps every K-th iteration of the same chain.
rt=$(sample --seed 21 --iters $ITERS --thin 4)
nt=$(q $db "SELECT count(*) FROM draw WHERE run_id = $rt")
eq "thinned draws" "$nt" $((2 * (ITERS + ITERS / 2) / 4 * 2))
eq "thinned = subset" "$(q $db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw
      WHERE run_id = $rt INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $ra)")" "$nt"
ok "--thin 4: every 4th draw of the unthinned chain"

# Chain c depends on (seed, c) only: chains 0 and 1 of a 3-chain run are
# the chains of the 2-chain run.
r3c=$(sample --seed 21 --iters $ITERS --chains 3)
cmp_runs "$ra" "$r3c" 2
same=$(q $db "SELECT count(*) FROM (SELECT iter, idx, value FROM draw
              WHERE run_id = $r3c AND chain = 2 INTERSECT SELECT iter, idx, value FROM draw
              WHERE run_id = $r3c AND chain < 2)")
[ "$same" -lt 50 ] || fail "chain 2 repeats $same draws of chains 0/1"
ok "chains 0, 1 of --chains 3 equal --chains 2; chain 2 is new"

# One chain alone equals chain 0 of a multi-chain run.
r1c=$(sample --seed 21 --iters $ITERS --chains 1)
cmp_runs "$r1c" "$ra" 1
ok "--chains 1 equals chain 0 of --chains 2"

# Seeds are not silently aliased: a seed the program accepts is the seed it
# uses (run.seed), or it is refused as a usage error.
big=4611686018427387904   # 2^62
rc=0
"$FLYDB" sample --db $db --quiet --seed $big --iters 20 >"$T/out" 2>"$T/err" || rc=$?
case $rc in
  2) ok "--seed 2^62 refused: $(head -n 1 "$T/err")" ;;
  0) rs=$(q $db "SELECT max(id) FROM run")
     eq "run.seed for --seed $big" "$(q $db "SELECT seed FROM run WHERE id = $rs")" "$big" ;;
  *) cat "$T/err" >&2; fail "--seed $big: exit status $rc" ;;
esac
