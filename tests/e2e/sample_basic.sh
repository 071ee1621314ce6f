#!/usr/bin/env bash
# ingest -> sample --seed -> SQL checks on what a run leaves in the database:
# the run row, long draws (chains x (warm-up + iters) x P, iterations 1..T
# without gaps), per-iteration diagnostics, the draws_named view, param
# names, run_config (seed pinned, options given marked is_default 0, resolved
# defaults marked 1), the summary table (consistent with the draws) and the
# output of `flydb summary` and `flydb info`.  Also --thin and --quiet.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=f.db
expect 0 "$FLYDB" ingest "$TOY/tiny_logistic.csv" --db $db

# ---- one run: 2 chains x (250 warm-up + 500), P = 2 -------------------
C=2 ITERS=500 W=250 P=2 N=100
expect 0 "$FLYDB" sample --db $db --seed 7 --iters $ITERS --chains $C
cp "$T/out" sample.out
run=$(q $db "SELECT max(id) FROM run")
eq "runs" "$(q $db "SELECT count(*) FROM run")" 1
eq "run row" "$(q $db "SELECT status, n_chains, n_warmup, n_iters, thin, seed, n_params,
                              z_mode, model, finished_at IS NOT NULL, wall_seconds > 0
                       FROM run WHERE id = $run")" \
   "$(printf 'done\t%s\t%s\t%s\t1\t7\t%s\tgibbs\tlogistic\t1\t1' $C $W $ITERS $P)"
eq "runs view" "$(q $db "SELECT dataset, status, seed FROM runs WHERE run_id = $run")" \
   "$(printf 'tiny_logistic\tdone\t7')"
ok "run $run: status done, warm-up iters/2 = $W, seed 7 stored"

eq "draw count" "$(q $db "SELECT count(*) FROM draw WHERE run_id = $run")" $((C * (W + ITERS) * P))
eq "draws per chain" "$(q $db "SELECT group_concat(x, ' ') FROM (
      SELECT chain || ':' || count(*) || ':' || count(DISTINCT iter) || ':' || min(iter) || ':' || max(iter) AS x
      FROM draw WHERE run_id = $run GROUP BY chain ORDER BY chain)")" \
   "0:$(((W + ITERS) * P)):$((W + ITERS)):1:$((W + ITERS)) 1:$(((W + ITERS) * P)):$((W + ITERS)):1:$((W + ITERS))"
eq "idx range" "$(q $db "SELECT min(idx), max(idx), count(DISTINCT idx) FROM draw WHERE run_id = $run")" \
   "$(printf '0\t%s\t%s' $((P - 1)) $P)"
eq "non-finite draws" "$(q $db "SELECT count(*) FROM draw WHERE run_id = $run
                                AND (value IS NULL OR typeof(value) != 'real' OR abs(value) > 1e6)")" 0
# each chain moves, and the two chains differ
eq "chains that never move" "$(q $db "SELECT count(*) FROM (SELECT chain, idx FROM draw
      WHERE run_id = $run AND iter > $W GROUP BY chain, idx HAVING count(DISTINCT value) < 20)")" 0
same=$(q $db "SELECT count(*) FROM (SELECT iter, idx, value FROM draw WHERE run_id = $run AND chain = 0
      INTERSECT SELECT iter, idx, value FROM draw WHERE run_id = $run AND chain = 1)")
[ "$same" -lt $((W + ITERS)) ] || fail "chains 0 and 1 share $same draws: one RNG stream for both?"
ok "draws: $((C * (W + ITERS) * P)) rows, iterations 1..$((W + ITERS)) in every chain, chains distinct"

eq "iteration rows" "$(q $db "SELECT count(*), count(DISTINCT chain || '/' || iter) FROM iteration
                             WHERE run_id = $run")" "$(printf '%s\t%s' $((C * (W + ITERS))) $((C * (W + ITERS))))"
eq "iteration without draws" "$(q $db "SELECT count(*) FROM iteration i WHERE run_id = $run
      AND (SELECT count(*) FROM draw d WHERE d.run_id = i.run_id AND d.chain = i.chain
           AND d.iter = i.iter) != $P")" 0
# accepted: the fraction of the iteration's --theta-steps proposals accepted
K=$(q $db "SELECT value FROM run_config WHERE run_id = $run AND key = 'theta-steps'")
# the default chooses the kernel (docs/design.md §16): 32 MH updates a z step, or one NUTS
case $(q $db "SELECT sampler FROM run WHERE id = $run") in
  mh) eq "theta updates per iteration (gibbs with mh, chosen)" "$K" 32 ;;
  nuts) eq "theta updates per iteration (nuts, chosen)" "$K" 1 ;;
  *) fail "the default chose sampler '$(q $db "SELECT sampler FROM run WHERE id = $run")'" ;;
esac
eq "bad diagnostics" "$(q $db "SELECT count(*) FROM iteration WHERE run_id = $run AND (
      log_joint IS NULL OR abs(log_joint) > 1e300 OR n_bright < 0 OR n_bright > $N
      OR accepted < 0 OR accepted > 1 OR abs(accepted * $K - round(accepted * $K)) > 1e-9
      OR n_lik_evals < 0 OR n_reads < 0)")" 0
acc=$(q $db "SELECT avg(accepted) FROM iteration WHERE run_id = $run")
awk -v a="$acc" 'BEGIN { exit !(a > 0.05 && a < 0.95) }' || fail "acceptance rate $acc"
ok "iteration: one row per chain and iteration, diagnostics in range (acceptance $acc)"

eq "param" "$(q $db "SELECT group_concat(name, '|') FROM (SELECT name FROM param
                    WHERE run_id = $run ORDER BY idx)")" "(Intercept)|x"
eq "draws_named names" "$(q $db "SELECT group_concat(name, '|') FROM (SELECT DISTINCT name
      FROM draws_named WHERE run_id = $run ORDER BY name)")" "(Intercept)|x"
eq "draws_named rows" "$(q $db "SELECT count(*), sum(warmup), count(DISTINCT name)
      FROM draws_named WHERE run_id = $run")" \
   "$(printf '%s\t%s\t%s' $((C * (W + ITERS) * P)) $((C * W * P)) $P)"
eq "draws_named warm-up flag" "$(q $db "SELECT count(*) FROM draws_named WHERE run_id = $run
      AND warmup != (iter <= $W)")" 0
eq "draws_named value" "$(q $db "SELECT count(*) FROM (SELECT d.chain, d.iter, p.name, d.value
      FROM draw d JOIN param p ON p.run_id = d.run_id AND p.idx = d.idx WHERE d.run_id = $run
      INTERSECT SELECT chain, iter, name, value FROM draws_named WHERE run_id = $run)")" $((C * (W + ITERS) * P))
ok "draws_named: '(Intercept)' and 'x', warm-up flagged"

cfg() { q $db "SELECT value || ',' || is_default FROM run_config WHERE run_id = $run AND key = '$1'"; }
eq "run_config seed" "$(cfg seed)" "7,0"
eq "run_config iters" "$(cfg iters)" "$ITERS,0"
eq "run_config chains" "$(cfg chains)" "$C,0"
eq "run_config warmup" "$(cfg warmup)" "$W,1"
ok "run_config: seed 7, iters, chains given (is_default 0), warmup resolved (is_default 1)"

# ---- summary ------------------------------------------------------------
eq "summary rows" "$(q $db "SELECT group_concat(name, '|') FROM (SELECT name FROM summary
                           WHERE run_id = $run ORDER BY idx)")" "(Intercept)|x"
eq "summary sanity" "$(q $db "SELECT count(*) FROM summary WHERE run_id = $run
      AND sd > 0 AND q5 < median AND median < q95 AND q5 < mean AND mean < q95
      AND rhat > 0.9 AND rhat < 2 AND ess_bulk > 1 AND ess_tail > 1 AND mcse_mean > 0")" $P
# summary.mean is the mean of the post-warm-up draws of all chains
eq "summary mean = mean of draws" "$(q $db "SELECT count(*) FROM summary s WHERE s.run_id = $run
      AND abs(s.mean - (SELECT avg(value) FROM draw d WHERE d.run_id = s.run_id
                        AND d.idx = s.idx AND d.iter > $W)) <= 1e-9 * (1 + abs(s.mean))
      AND abs(s.sd - (SELECT sqrt((sum(value * value) - sum(value) * sum(value) / count(*))
                                  / (count(*) - 1))
                      FROM draw d WHERE d.run_id = s.run_id AND d.idx = s.idx
                      AND d.iter > $W)) <= 1e-6 * s.sd")" $P
for name in "(Intercept)" "x"; do
  grep -q -F -- "$name" sample.out || fail "sample's summary lacks '$name'"
done
expect 0 "$FLYDB" summary --db $db
out_has "(Intercept)" "x" "rhat" "ess_bulk"
# gibbs: the thinning waste is rows read per iteration / mean bright rows
waste=$(q $db "SELECT printf('%.1f', avg(n_reads) / avg(n_bright)) FROM iteration
               WHERE run_id = $run AND iter > $W")
out_has "thinning waste $waste:"
expect 0 "$FLYDB" summary "$run" --db $db
out_has "(Intercept)" "x"
expect 1 "$FLYDB" summary 99 --db $db
err_has "99"
ok "summary: table filled and consistent with the draws; \`flydb summary\` prints both names"

expect 0 "$FLYDB" info --db $db
out_has "tuned bounds" "bounds map" "runs" "$run: data set 'tiny_logistic'" "done"
ok "info lists the tuned bounds and the run"

# ---- --thin, --quiet, --warmup ------------------------------------------
expect 0 "$FLYDB" sample --db $db --seed 8 --iters 100 --warmup 50 --thin 5 --chains 3 --quiet
[ -s "$T/out" ] && { cat "$T/out" >&2; fail "--quiet printed a summary"; }
run2=$(q $db "SELECT max(id) FROM run")
[ "$run2" != "$run" ] || fail "no new run"
eq "thinned run" "$(q $db "SELECT status, n_chains, n_warmup, n_iters, thin FROM run WHERE id = $run2")" \
   "$(printf 'done\t3\t50\t100\t5')"
eq "thinned draws" "$(q $db "SELECT count(*), min(iter), max(iter), sum(iter % 5 != 0)
                             FROM draw WHERE run_id = $run2")" "$(printf '%s\t5\t150\t0' $((3 * 30 * P)))"
eq "thinned iteration rows" "$(q $db "SELECT count(*) FROM iteration WHERE run_id = $run2")" $((3 * 30))
eq "thinned draws_named warm-up" "$(q $db "SELECT sum(warmup) FROM draws_named WHERE run_id = $run2")" $((3 * 10 * P))
eq "run_config warmup given" "$(q $db "SELECT value || ',' || is_default FROM run_config
                                      WHERE run_id = $run2 AND key = 'warmup'")" "50,0"
eq "run_config thin given" "$(q $db "SELECT value || ',' || is_default FROM run_config
                                    WHERE run_id = $run2 AND key = 'thin'")" "5,0"
# the first run is untouched by the second
eq "first run's draws" "$(q $db "SELECT count(*) FROM draw WHERE run_id = $run")" $((C * (W + ITERS) * P))
ok "--thin 5 keeps iterations 5, 10, ..; --quiet prints nothing on stdout"

# ---- every resolved option is stored, defaults marked (STYLE.md, Traces) --
# The first run gave --seed --iters --chains --db; the others must still be
# in run_config with their resolved values and is_default = 1.
missing=
for kv in thin=1 z=gibbs bounds=map checkpoint-every=1000 model=logistic; do
  k=${kv%%=*} v=${kv#*=}
  got=$(cfg "$k")
  [ "$got" = "$v,1" ] || missing="$missing $k (got '${got}', want '$v,1')"
done
[ -z "$missing" ] || fail "run_config lacks resolved defaults:$missing"
ok "run_config holds the resolved defaults, marked is_default 1"

# ---- --theta-steps default: 32 for gibbs with mh only ---------------------
# An HMC update costs --leapfrog passes over the bright rows: it keeps one.
expect 0 "$FLYDB" sample --db $db --seed 3 --iters 20 --chains 1 --sampler hmc --quiet
run3=$(q $db "SELECT max(id) FROM run")
eq "theta updates per iteration (gibbs, hmc default)" "$(q $db "SELECT value || ',' || is_default
    FROM run_config WHERE run_id = $run3 AND key = 'theta-steps'")" "1,1"
ok "--theta-steps defaults to 1 with --sampler hmc"
