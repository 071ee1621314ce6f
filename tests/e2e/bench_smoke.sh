# tests/e2e/bench_smoke.sh -- every tools/bench subcommand in --smoke mode
# against the build under test (the build directory holding this flydb):
# the harness runs, its tables have their shape (every cell a number, the
# baseline's ratio column 1.00x), and it writes nothing into docs/; all of
# it with git absent from PATH, where the commit measured is "unknown".
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$E2E/../.." && pwd)
BUILD=${FLYDB%/src/cli/flydb}
[ -x "$BUILD/tools/flydb-gen" ] && [ -x "$BUILD/tools/bench_rows" ] ||
  fail "no flydb-gen or bench_rows beside $FLYDB"
if ! command -v Rscript >/dev/null || [ ! -x /usr/bin/time ] ||
   ! Rscript -e 'quit(status = !all(sapply(c("ggplot2", "data.table"), requireNamespace, quietly = TRUE)))' 2>/dev/null; then
  echo "SKIP: tools/bench needs R with ggplot2 and data.table, and GNU time (tools/test installs them)"
  exit 77
fi
docs_before=$(cd "$TOP" && cat docs/*.md | sha256sum)
# As on a minimal system: tools/bench must not need git (nor a checkout).
hide_git

# bench SUBCOMMAND ARGS...: run it in smoke mode; the table in $T/out.
bench() {
  expect 0 "$TOP/tools/bench" "$@" --smoke --build "$BUILD" --dir "$T/w/bench"
}

# shape NCOLS FIRST LABEL COL [LAST]: the markdown table in $T/out has NCOLS
# columns in every row, a number in every cell from column FIRST on (to
# column LAST, when given: the columns after it may say "-", not measured),
# and "1.00x" in column COL of the row that starts with "| LABEL".
shape() {
  awk -F'|' -v nc="$1" -v first="$2" -v label="| $3" -v col="$4" -v last="${5:-0}" '
    /^\|/ && !/^\|---/ {
      if( NF - 2 != nc ){ printf "row with %d cells, want %d: %s\n", NF - 2, nc, $0; bad = 1 }
      if( !hdr++ ) next
      rows++
      for(j = first + 1; j <= (last ? last + 1 : NF - 1); j++)
        if( $j !~ /[0-9]/ || $j ~ /nan|inf/ ){ printf "cell %d not a number: %s\n", j - 1, $0; bad = 1 }
      if( index($0, label) == 1 ){ base++
        if( $(col + 1) !~ /^ *1\.00x *$/ ){ printf "baseline column %d is %s, want 1.00x\n", col, $(col + 1); bad = 1 } } }
    END { if( rows == 0 ){ print "no table rows"; bad = 1 }
          if( base == 0 ){ print "no baseline row " label; bad = 1 }
          exit bad }' "$T/out" >&2 || { cat "$T/out" >&2; fail "table is malformed"; }
}

for m in logistic softmax robust; do
  bench table1 --model "$m"
  err_has "tools/bench: commit unknown"
  shape 11 2 "regular MCMC |" 11
  out_has "runs: 1" "untuned FlyMC" "MAP-tuned FlyMC (implicit q = 0.01)" "Gibbs by thinning"
  [ "$(grep -c '^| ' "$T/out")" = 5 ] || fail "table1 $m: want a header and 4 rows"
  ok "table1 --model $m"
done
bench table1 --model logistic --theta-steps 2
shape 11 2 "regular MCMC |" 11
out_has "MAP-tuned FlyMC (implicit q = 0.01, 2 θ updates)" "θ updates per z update: 2"
ok "table1 --theta-steps 2"
bench table1 --model logistic --algorithms implicit,untuned
shape 11 2 "regular MCMC |" 11
[ "$(grep -c '^| ' "$T/out")" = 4 ] || fail "table1 --algorithms: want a header and 3 rows"
out_has "untuned FlyMC" "MAP-tuned FlyMC (implicit q = 0.01)"
if grep -q "Gibbs by thinning" "$T/out"; then fail "table1 --algorithms ran gibbs"; fi
[ "$(grep -o '^| [a-zA-Z-]* ' "$T/out" | tr -d '| ' | tr '\n' ' ')" = "algorithm regular untuned MAP-tuned " ] ||
  fail "table1 --algorithms: rows out of table order"
ok "table1 --algorithms implicit,untuned: regular and those rows, in table order"

bench scaling --modes "regular gibbs gibbs:1"
shape 12 3 "1000 | regular |" 11
shape 12 3 "1000 | gibbs |" 4
out_has "| 2000 | gibbs |" "ESS per iteration is that of regular at N = 1000"
out_has "| 2000 | gibbs:1 |"
ok "scaling"

# out of core: f32 stores, a 1 MiB cache, read() calls, a 4 GiB address
# space (which an AddressSanitizer build cannot run in: the bench says so)
if [[ $(ldd "$FLYDB") == *libasan* ]]; then
  expect 1 "$TOP/tools/bench" scaling --mem-limit 4G --smoke --build "$BUILD" --dir "$T/w/bench"
  err_has "--mem-limit: $FLYDB is built with AddressSanitizer"
  bench scaling --modes "regular gibbs" --precision f32 --cache-mb 1 --no-mmap
  lim=""
else
  bench scaling --modes "regular gibbs" --precision f32 --cache-mb 1 --mem-limit 4G --no-mmap
  lim=" prlimit --as=4294967296"
fi
shape 12 3 "1000 | gibbs |" 4
out_has "--precision f32" "FLYDB_MMAP=off$lim flydb sample" "--cache-mb 1" "| 2000 | gibbs |"
[ -f "$T/w/bench/scaling-2000-20-f32-smoke.db" ] || fail "scaling --precision f32: no f32 store"
ok "scaling out of core (--precision f32 --cache-mb 1${lim:+ --mem-limit 4G} --no-mmap)"
bench scaling --modes gibbs
grep -q '^| 1000 | gibbs | [0-9.]* | 1.00x | - |.*| - | [0-9]* |$' "$T/out" ||
  { cat "$T/out" >&2; fail "scaling without regular: the ratios to regular are not '-'"; }
ok "scaling without regular: no ratio to regular"

bench ingest
shape 7 2 "numeric, flydb ingest --threads 2 |" 6 6
out_has "categorical, flydb ingest --threads 1" "sqlite3 .import" "data.table::fread" "cat > /dev/null"
ok "ingest"

bench rows
shape 3 2 "sequential scan" 3
out_has "random rows, cold cache" "random rows, warm cache"
ok "rows"

expect 2 "$TOP/tools/bench" rows --smoke --append --build "$BUILD" --dir "$T/w/bench"
err_has "not appending"
expect 2 "$TOP/tools/bench" table1 --no-such-option
expect 2 "$TOP/tools/bench" table1 --smoke --algorithms gibbs,nuts --build "$BUILD" --dir "$T/w/bench"
err_has "not 'nuts'"
[ "$(cd "$TOP" && cat docs/*.md | sha256sum)" = "$docs_before" ] || fail "tools/bench --smoke changed docs/"
ok "--smoke never appends; docs/ unchanged"
