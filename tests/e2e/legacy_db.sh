#!/usr/bin/env bash
# A database written by an earlier release (fixtures/release-d10e41a.db,
# made by flydb built from commit d10e41a, schema version 5): toy logistic
# data, run 1 complete (--iters 20000 --thin 100 --seed 5) and run 2 with
# the same options stopped by ^C at about 8,600 iterations.  Today's flydb
# must open it (migrating it to the typed run_setting and the kernel
# statistics columns, NULL for its MH runs), summarise run 1, resume run 2
# from its stored configuration (the draws up to its checkpoints exactly
# those of run 1, the rest the same posterior), and find nothing wrong
# with it.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

cp "$FIX/release-d10e41a.db" old.db
eq "fixture schema" "$(q old.db "PRAGMA user_version")" 5
eq "fixture runs" "$(q old.db "SELECT group_concat(id || ':' || status) FROM run")" \
   "1:done,2:running"

expect 0 "$FLYDB" summary 1 --db old.db
out_has "ess_bulk" "(Intercept)"
ok "run 1 of the old file summarises"

eq "migrated" "$(q old.db "PRAGMA user_version") $(q old.db "SELECT count(*) FROM run_setting")" \
   "$("$FLYDB" --version | sed -n 's/^schema *\([0-9]*\).*/\1/p') 2"
eq "old draws in chunks, none left in draw_block" \
   "$(q old.db "SELECT (SELECT sum(n) FROM draw_chunk) = (SELECT count(*) FROM draw),
                       (SELECT count(*) FROM draw_block WHERE blk > 0)")" \
   "$(printf '1\t0')"
eq "old iterations have no kernel statistics" \
   "$(q old.db "SELECT count(*) > 0, count(treedepth), count(n_leapfrog), count(divergent),
                       count(energy), count(accept_stat) FROM iteration")" \
   "$(printf '1\t0\t0\t0\t0\t0')"
eq "typed setting of run 2" \
   "$(q old.db "SELECT prior, prior_scale, bounds, theta_steps, proposal, init, sketch,
                       checkpoint_every FROM run_setting WHERE run_id = 2")" \
   "$(printf 'normal\t1.0\tmap\t32\tlaplace\tlaplace\t1\t500')"
eq "old columns are numeric without missing values" \
   "$(q old.db "SELECT group_concat(DISTINCT type), sum(n_missing), (SELECT count(*) FROM level)
                FROM dataset_column")" "$(printf 'numeric\t0\t0')"
ok "the migration gives both runs their typed setting, and the columns their type"

# The iterations each chain of run 2 had committed (its checkpoint).
ck=$(q old.db "SELECT group_concat(iter) FROM (SELECT iter FROM checkpoint WHERE run_id = 2
               ORDER BY chain)")
expect 0 "$FLYDB" sample --db old.db --resume 2 --quiet
eq "run 2 status" "$(q old.db "SELECT status FROM run WHERE id = 2")" done
# draws RUN [MAXITER_CHAIN0 MAXITER_CHAIN1]: a checksum of the run's draws
draws() { q old.db "SELECT chain, iter, idx, printf('%!.17g', value) FROM draw
                    WHERE run_id = $1 AND iter <= CASE chain WHEN 0 THEN ${2:-1e18}
                                                   ELSE ${3:-1e18} END ORDER BY 1, 2, 3" | md5sum; }
eq "draws up to the old checkpoints" "$(draws 2 "${ck%,*}" "${ck#*,}")" \
   "$(draws 1 "${ck%,*}" "${ck#*,}")"
eq "iterations after the resume" "$(q old.db "SELECT count(*) FROM iteration WHERE run_id = 2")" \
   "$(q old.db "SELECT count(*) FROM iteration WHERE run_id = 1")"
# After the checkpoints the chains continue with this release's kernels.
# The gibbs z step has drawn its uniforms in another order since fe3cba9
# (a change of the draws made on purpose), so the continuation is not the
# old release's bit for bit: it must be the same posterior, run 2's means
# within 4 combined MCSEs of run 1's on every coefficient.
expect 0 "$FLYDB" summary 2 --db old.db
zmax=$(q old.db "SELECT max(abs(a.mean - b.mean) / sqrt(a.mcse_mean * a.mcse_mean
                                                      + b.mcse_mean * b.mcse_mean))
                 FROM summary a JOIN summary b ON a.idx = b.idx
                 WHERE a.run_id = 1 AND b.run_id = 2")
awk -v z="$zmax" 'BEGIN { exit !(z != "" && z + 0 <= 4) }' ||
  fail "resumed run 2's means are $zmax combined MCSEs from run 1's"
ok "run 2 resumes from the old checkpoints (iterations $ck) to a complete run whose means agree with run 1's (max z $zmax)"

expect 0 "$FLYDB" check --db old.db
ok "flydb check finds nothing wrong with the migrated file"
