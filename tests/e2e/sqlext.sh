#!/usr/bin/env bash
# The SQLite extension (src/sqlext): `.load` it into the stock sqlite3 shell
# and check that its aggregates over post-warm-up draws equal what `flydb
# summary` stores (ess_bulk, ess_tail, rhat, mcse_mean, q5/q95, median, mad,
# sd, to 1e-9 relative), that they do not depend on the order rows arrive in
# or on how chains are numbered, a few values known from R, and the errors:
# unequal chain lengths, a repeated (chain, iter), NULL draws, p outside
# [0, 1] or varying within a group.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

EXT=$(dirname "$FLYDB_BIN")/../sqlext/flydb_ext
[ -f "$EXT.so" ] || fail "no extension at $EXT.so (is src/sqlext built?)"
TOY=$E2E/../../datasets/toy
db=f.db

# A module built with -fsanitize=address,undefined (the sanitizer build of
# the test suite) can only be loaded into the stock sqlite3 shell with the sanitizer
# runtimes preloaded; leaks of the shell itself are not ours to report.
# The same for ThreadSanitizer (tools/test --tsan), whose runtime cannot be
# loaded after start-up at all.
# (ldd's output is read whole: `ldd | grep -q` under pipefail fails at
# random when grep exits first and ldd gets SIGPIPE.)
PRELOAD=
libs=$(ldd "$EXT.so" 2> /dev/null || true)
for rt in libasan libubsan libtsan; do
  case $libs in
    *"$rt"*) f=$(${CC:-cc} -print-file-name="$rt.so")
             [ -f "$f" ] && PRELOAD="$PRELOAD $f" ;;
  esac
done

# x DB SQL: SQL with the extension loaded; stop at the first error.
x() { printf '.load %s\n%s\n' "$EXT" "$2" |
        LD_PRELOAD="${PRELOAD# }" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
        sqlite3 -batch -bail -noheader -separator "$(printf '\t')" "$1"; }

expect 0 "$FLYDB" ingest "$TOY/tiny_logistic.csv" --db $db
expect 0 "$FLYDB" sample --db $db --iters 400 --seed 3 --quiet
expect 0 "$FLYDB" summary 1 --db $db
P=$(q $db "SELECT count(*) FROM summary WHERE run_id = 1")
[ "$P" -ge 2 ] || fail "summary holds $P rows, want one per parameter"

# ---- equal to the summary table ----------------------------------------
# close(a, b): a equals b to 1e-9 relative, or both are NULL
close() { echo "(($1 IS NULL AND $2 IS NULL) OR abs($1 - $2) <= 1e-9 * abs($2))"; }
AGG="SELECT name, ess_bulk(chain, iter, value) AS eb, ess_tail(chain, iter, value) AS et,
            rhat(chain, iter, value) AS rh, mcse_mean(chain, iter, value) AS mm,
            quantile(value, 0.05) AS q5, quantile(value, 0.95) AS q95,
            median(value) AS med, mad(value) AS md, sd(value) AS sd, avg(value) AS mean"
CMP="SELECT s.name, a.eb, s.ess_bulk, a.et, s.ess_tail, a.rh, s.rhat, a.mm, s.mcse_mean,
            a.q5, s.q5, a.q95, s.q95, a.med, s.median, a.md, s.mad, a.sd, s.sd
     FROM summary s LEFT JOIN a ON a.name = s.name
     WHERE s.run_id = 1 AND NOT ($(close a.eb s.ess_bulk) AND $(close a.et s.ess_tail)
       AND $(close a.rh s.rhat) AND $(close a.mm s.mcse_mean) AND $(close a.q5 s.q5)
       AND $(close a.q95 s.q95) AND $(close a.med s.median) AND $(close a.md s.mad)
       AND $(close a.sd s.sd) AND $(close a.mean s.mean))"
bad=$(x $db "WITH a AS ($AGG FROM draws_named WHERE run_id = 1 AND NOT warmup
                          GROUP BY name) $CMP")
[ -z "$bad" ] || fail "aggregates differ from the summary table:
name ess_bulk(ext, summary) ess_tail rhat mcse_mean q5 q95 median mad sd
$bad"
eq "finite diagnostics" "$(x $db "SELECT count(*) FROM ($AGG FROM draws_named
      WHERE run_id = 1 AND NOT warmup GROUP BY name)
      WHERE eb > 0 AND et > 0 AND rh > 0.9 AND q5 < q95")" "$P"
ok "ess_bulk, ess_tail, rhat, mcse_mean, quantile, median, mad, sd equal \`flydb summary\` for $P parameters"

# rows in another order, chains renumbered (any integers): the same results
bad=$(x $db "WITH a AS ($AGG FROM (SELECT name, 1000 - 7 * chain AS chain, iter,
                                          value FROM draws_named
                                   WHERE run_id = 1 AND NOT warmup
                                   ORDER BY value DESC) GROUP BY name) $CMP")
[ -z "$bad" ] || fail "results depend on row order or chain numbering:
$bad"
ok "row order and chain numbering do not matter"

# ---- known values (R) ----------------------------------------------------
eq "R: quantile(1:10, c(.05, 0, 1, .5)), sd, median, mad" \
   "$(x $db "WITH t(value) AS (VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10))
             SELECT quantile(value, 0.05), quantile(value, 0), quantile(value, 1),
                    quantile(value, 0.5), printf('%.15g', sd(value)), median(value),
                    printf('%.15g', mad(value)) FROM t")" \
   "$(printf '1.45\t1.0\t10.0\t5.5\t3.02765035409749\t5.5\t3.7065')"
eq "constant draws: no estimate (NULL), empty group: NULL" \
   "$(x $db "SELECT quote(rhat(chain, iter, 1.5)), quote(ess_bulk(chain, iter, 2)),
                    quote(sd(1))
             FROM draws_named WHERE run_id = 1 AND NOT warmup AND name = (SELECT min(name) FROM param);
             SELECT quote(ess_bulk(chain, iter, value)), quote(quantile(value, 0.5))
             FROM draws_named WHERE 0")" \
   "$(printf 'NULL\tNULL\t0.0\nNULL\tNULL')"
ok "known values from R; NULL for no estimate"

# ---- errors --------------------------------------------------------------
last=$(q $db "SELECT max(iter) FROM draw WHERE run_id = 1")
expect 1 x $db "SELECT name, ess_bulk(chain, iter, value) FROM draws_named
                WHERE run_id = 1 AND NOT warmup AND NOT (chain = 1 AND iter = $last)
                GROUP BY name"
err_has "ess_bulk: chains have unequal numbers of draws (chain 0: 400, chain 1: 399)"
expect 1 x $db "SELECT rhat(chain, iter, value) FROM draws_named WHERE run_id = 1
                AND NOT warmup"
err_has "rhat: chain 0 has iter 201 twice"
expect 1 x $db "SELECT ess_tail(chain, iter, NULL) FROM draws_named WHERE run_id = 1"
err_has "ess_tail: value is NULL"
expect 1 x $db "SELECT mcse_mean(chain, 'x', value) FROM draws_named WHERE run_id = 1"
err_has "mcse_mean: iter is 'x', want an integer"
ok "unequal chains, repeated (chain, iter), NULL value, bad iter: SQL errors"

for p in 1.5 -0.01 NULL "'a'"; do
  expect 1 x $db "SELECT name, quantile(value, $p) FROM draws_named WHERE run_id = 1
                  GROUP BY name"
  err_has "quantile: p"
done
err_has "want a number in [0, 1]"
expect 1 x $db "SELECT quantile(value, 1.5) FROM draws_named"
err_has "quantile: p = 1.5, want a value in [0, 1]"
expect 1 x $db "SELECT quantile(value, iter / 1000.0) FROM draws_named WHERE run_id = 1"
err_has "quantile: p changes within a group"
ok "p outside [0, 1], NULL, text or varying: SQL errors"
