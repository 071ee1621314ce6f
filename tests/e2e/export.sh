#!/usr/bin/env bash
# flydb export: ingest -> sample --seed 3 -> export, then checks on the files.
#  - cmdstan: one file per chain with CmdStan's comment layout, the header
#    lp__,accept_stat__,..,theta.1,theta.2, one row per post-warm-up
#    iteration (warm-up first with --warmup, save_warmup = 1), and a
#    thinned run whose thin divides neither warmup nor iters;
#  - csv: long and wide files, with and without --warmup;
#  - every value equals the draw/iteration tables exactly (python3 reads
#    both as doubles; a few also with sqlite3 + awk at 17 digits);
#  - R, when Rscript and the posterior package are there: the files read as
#    cmdstanr's read_cmdstan_csv() reads them (metadata from '#' lines,
#    warm-up rows split off by ceiling(num_warmup / thin), draws via
#    posterior) give the means of `flydb summary` to 1e-12;
#  - usage errors (exit 2), a missing run (exit 1), no files left behind.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=f.db
expect 0 "$FLYDB" ingest "$TOY/tiny_logistic.csv" --db $db
expect 0 "$FLYDB" sample --db $db --iters 300 --seed 3 --quiet --z gibbs   # MH: its export columns
run=$(q $db "SELECT max(id) FROM run")
C=2 W=150 I=300 P=2
eq "run shape" "$(q $db "SELECT n_chains, n_warmup, n_iters, thin, n_params FROM run WHERE id = $run")" \
   "$(printf '%s\t%s\t%s\t1\t%s' $C $W $I $P)"
expect 0 "$FLYDB" summary --db $db          # fills the summary table

HEADER="lp__,accept_stat__,stepsize__,n_bright__,n_lik_evals__,n_reads__,theta.1,theta.2"
NCOL=$((6 + P))

# data_rows FILE: lines that are neither comments nor the header
data_rows() { grep -v -e '^#' -e '^lp__' "$1" | wc -l | tr -d ' '; }
# has_line FILE LINE: FILE has exactly this line
has_line() { grep -q -x -F -- "$2" "$1" || fail "$1 lacks the line '$2'"; }
# ncols_ok FILE N: every data row has N fields
ncols_ok() {
  awk -F, -v n="$2" '!/^#/ && NF != n { printf "line %d: %d fields\n", NR, NF; bad = 1 }
                     END { exit bad }' "$1" >&2 || fail "$1: rows without $2 fields"
}

# ---- cmdstan, post-warm-up only (default format, latest run) ------------
expect 0 "$FLYDB" export --db $db --out cs
only_files cs "${run}_chain1.csv" "${run}_chain2.csv"
out_has "cs/${run}_chain1.csv" "cs/${run}_chain2.csv"
for k in 1 2; do
  f=cs/${run}_chain$k.csv
  eq "$f header" "$(grep -v '^#' "$f" | head -1)" "$HEADER"
  eq "$f rows" "$(data_rows "$f")" $I
  ncols_ok "$f" $NCOL
  has_line "$f" "# model = flydb_logistic"
  has_line "$f" "# method = sample (Default)"
  has_line "$f" "#     num_samples = $I"
  has_line "$f" "#     num_warmup = $W (Default)"
  has_line "$f" "#     save_warmup = 0 (Default)"
  has_line "$f" "#     thin = 1 (Default)"
  has_line "$f" "# id = $k"
  has_line "$f" "#   seed = 3"
  has_line "$f" "#   file = ${run}_chain$k.csv"
  has_line "$f" "# Adaptation terminated"
  has_line "$f" '# flydb parameter names: "(Intercept)","x"'
  grep -q -E '^# Step size = [0-9.e+-]+$' "$f" || fail "$f: no '# Step size = X'"
  grep -q -E '^#  Elapsed Time: [0-9.]+ seconds \(Warm-up\)$' "$f" || fail "$f: no warm-up time"
  grep -q -E '^# +[0-9.]+ seconds \(Sampling\)$' "$f" || fail "$f: no sampling time"
  grep -q -E '^# +[0-9.]+ seconds \(Total\)$' "$f" || fail "$f: no total time"
  # the comments before the header, the adaptation lines between header and rows
  eq "$f layout" "$(awk '/^#/ { c = "#" } !/^#/ { c = "d" } c != last { s = s c; last = c }
                       END { print s }' "$f")" "#d#d#"
done
ok "cmdstan: 2 files, CmdStan comment layout, header $HEADER, $I rows of $NCOL fields"

# check_values DIR FORMAT WARM: every value in the exported files equals the
# database's double (python3 reads both exactly).
check_values() {
  python3 - "$db" "$run" "$1" "$2" "$3" <<'EOF' || fail "exported values differ from the database"
import csv, glob, math, sqlite3, sys
db, run, d, fmt, warm = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
con = sqlite3.connect(db)
W, P = con.execute("SELECT n_warmup, n_params FROM run WHERE id=?", (run,)).fetchone()
names = [r[0] for r in con.execute("SELECT name FROM param WHERE run_id=? ORDER BY idx", (run,))]
lo = 0 if warm else W
draws = {}
for c, it, idx, v in con.execute("SELECT chain, iter, idx, value FROM draw WHERE run_id=? AND iter>?", (run, lo)):
    draws.setdefault((c, it), [None] * P)[idx] = v
itr = {(c, it): r for c, it, *r in con.execute(
    "SELECT chain, iter, log_joint, accepted, step_size, n_bright, n_lik_evals, n_reads "
    "FROM iteration WHERE run_id=? AND iter>?", (run, lo))}
bad = 0
def same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
if fmt == "cmdstan":
    for f in sorted(glob.glob(f"{d}/{run}_chain*.csv")):
        c = int(f.rsplit("chain", 1)[1][:-4]) - 1
        rows = [r for r in csv.reader(l for l in open(f) if not l.startswith("#"))][1:]
        its = sorted(it for (cc, it) in draws if cc == c)
        if len(rows) != len(its):
            print(f"{f}: {len(rows)} rows, want {len(its)}"); bad = 1; continue
        for r, it in zip(rows, its):
            lp, acc, step, nb, nl, nr = itr[(c, it)]
            want = [lp, acc, step, nb, nl, nr] + draws[(c, it)]
            got = [float(r[0]), float(r[1]), float(r[2]), int(r[3]), int(r[4]), int(r[5])] + [float(x) for x in r[6:]]
            if not all(same(a, b) for a, b in zip(got, want)) or len(got) != len(want):
                print(f"{f}: iteration {it}: {r} != {want}"); bad = 1; break
else:
    rows = list(csv.reader(open(f"{d}/{run}_draws.csv")))
    if rows[0] != ["run_id", "chain", "iter", "name", "value", "warmup"]:
        print("long header", rows[0]); bad = 1
    want = sorted((c + 1, it, names[p], v, int(it <= W)) for (c, it), vs in draws.items() for p, v in enumerate(vs))
    got = sorted((int(r[1]), int(r[2]), r[3], float(r[4]), int(r[5])) for r in rows[1:] if int(r[0]) == run)
    if got != want or len(rows) - 1 != len(want):
        print(f"long: {len(rows) - 1} rows, {len(want)} wanted, equal: {got == want}"); bad = 1
    rows = list(csv.reader(open(f"{d}/{run}_wide.csv")))
    if rows[0] != ["chain", "iter", "warmup"] + names:
        print("wide header", rows[0]); bad = 1
    want = sorted((c + 1, it, int(it <= W), *vs) for (c, it), vs in draws.items())
    got = sorted((int(r[0]), int(r[1]), int(r[2]), *map(float, r[3:])) for r in rows[1:])
    if got != want:
        print(f"wide: {len(got)} rows, {len(want)} wanted, equal: {got == want}"); bad = 1
sys.exit(bad)
EOF
}
check_values cs cmdstan 0
# a few values by sqlite3 and awk, 17 significant digits: (chain, row, column)
for pick in "1 1 7" "1 300 8" "2 150 7" "2 300 8"; do
  set -- $pick
  got=$(grep -v -e '^#' -e '^lp__' "cs/${run}_chain$1.csv" | awk -F, -v r="$2" -v k="$3" \
        'NR == r { printf "%.17g", $k + 0 }')
  want=$(sqlite3 -batch -noheader -separator , $db "SELECT printf('%!.17g', value) FROM draw
         WHERE run_id = $run AND chain = $(($1 - 1)) AND iter = $((W + $2)) AND idx = $(($3 - 7))")
  awk -v a="$got" -v b="$want" 'BEGIN { exit !(a + 0 == b + 0) }' ||
    fail "chain $1 row $2 column $3: file $got, draw table $want"
done
ok "cmdstan: every value equals the draw and iteration tables exactly"

# ---- cmdstan --warmup: save_warmup = 1, warm-up rows first -------------
expect 0 "$FLYDB" export $run --db $db --out cw --warmup
only_files cw "${run}_chain1.csv" "${run}_chain2.csv"
for k in 1 2; do
  f=cw/${run}_chain$k.csv
  eq "$f rows" "$(data_rows "$f")" $((W + I))
  ncols_ok "$f" $NCOL
  has_line "$f" "#     save_warmup = 1"
  eq "$f warm-up rows before '# Adaptation terminated'" \
     "$(awk '/^# Adaptation terminated/ { print n; exit } !/^#/ && !/^lp__/ { n++ }' "$f")" $W
done
check_values cw cmdstan 1
ok "cmdstan --warmup: $W warm-up rows, then '# Adaptation terminated', then $I"

# ---- csv, long and wide -------------------------------------------------
expect 0 "$FLYDB" export $run --db $db --format csv --out pl
only_files pl "${run}_draws.csv" "${run}_wide.csv"
eq "long rows" "$(($(wc -l <pl/${run}_draws.csv) - 1))" $((C * I * P))
eq "wide rows" "$(($(wc -l <pl/${run}_wide.csv) - 1))" $((C * I))
eq "long header" "$(head -1 pl/${run}_draws.csv)" "run_id,chain,iter,name,value,warmup"
eq "wide header" "$(head -1 pl/${run}_wide.csv)" "chain,iter,warmup,(Intercept),x"
ncols_ok pl/${run}_draws.csv 6
ncols_ok pl/${run}_wide.csv $((3 + P))
eq "long chains, iterations, warm-up flags" "$(awk -F, 'NR > 1 { c[$2]++; if( $3 <= '$W' || $6 != 0 ) bad++ }
    END { print c[1] + 0, c[2] + 0, bad + 0 }' pl/${run}_draws.csv)" "$((I * P)) $((I * P)) 0"
check_values pl csv 0
expect 0 "$FLYDB" export $run --db $db --format csv --out plw --warmup
eq "long rows with warm-up" "$(($(wc -l <plw/${run}_draws.csv) - 1))" $((C * (W + I) * P))
eq "warm-up flags" "$(awk -F, 'NR > 1 && $6 == 1 { n++; if( $3 > '$W' ) bad++ } END { print n + 0, bad + 0 }' \
    plw/${run}_draws.csv)" "$((C * W * P)) 0"
check_values plw csv 1
ok "csv: long ($((C * I * P)) rows) and wide ($((C * I)) rows), values exact; --warmup adds flagged rows"

# ---- a thinned run: thin 3 divides neither warm-up 50 nor iters 100 -----
expect 0 "$FLYDB" sample --db $db --iters 100 --warmup 50 --thin 3 --chains 3 --seed 5 --quiet \
  --z gibbs   # MH, as above: the columns check_values reads
run2=$(q $db "SELECT max(id) FROM run")
expect 0 "$FLYDB" export $run2 --db $db --out th --warmup
only_files th "${run2}_chain1.csv" "${run2}_chain2.csv" "${run2}_chain3.csv"
# kept: iterations 3, 6, .., 48 (16 warm-up), 51, .., 150 (34)
for k in 1 2 3; do
  f=th/${run2}_chain$k.csv
  eq "$f rows" "$(data_rows "$f")" 50
  has_line "$f" "#     num_warmup = 48"
  has_line "$f" "#     num_samples = 102"
  has_line "$f" "#     thin = 3"
  eq "$f warm-up rows" "$(awk '/^# Adaptation terminated/ { print n; exit } !/^#/ && !/^lp__/ { n++ }' "$f")" 16
done
run_save=$run; run=$run2; check_values th cmdstan 1; run=$run_save
ok "thin 3: 16 + 34 rows; num_warmup 48 and num_samples 102 split them under ceiling and floor"

# ---- R: read as cmdstanr does, means equal flydb summary ---------------
if command -v Rscript >/dev/null 2>&1 && Rscript -e 'library(posterior)' >/dev/null 2>&1; then
  expect 0 "$FLYDB" summary $run2 --db $db
  for d in "cs $run" "cw $run" "th $run2"; do
    set -- $d
    q $db "SELECT name, printf('%!.17g', mean) FROM summary WHERE run_id = $2 ORDER BY idx" >"$T/means"
    Rscript - "$1" "$2" "$T/means" >"$T/r.out" 2>&1 <<'EOF' || { cat "$T/r.out" >&2; fail "R check of $1"; }
suppressMessages(library(posterior))
a <- commandArgs(TRUE)
files <- Sys.glob(file.path(a[1], paste0(a[2], "_chain*.csv")))
meta <- function(f) {            # cmdstanr's read_csv_metadata, key = value lines
  l <- sub("(Default)", "", gsub("#", "", grep("^#", readLines(f), value = TRUE)), fixed = TRUE)
  kv <- strsplit(grep("=", l, fixed = TRUE, value = TRUE), "=", fixed = TRUE)
  kv <- kv[lengths(kv) == 2]
  setNames(lapply(kv, function(x) trimws(x[2])), sapply(kv, function(x) trimws(x[1])))
}
m <- meta(files[1])
nw <- ceiling(as.numeric(m$num_warmup) / as.numeric(m$thin))
chains <- lapply(files, function(f) {
  d <- read.csv(text = grep("^#", readLines(f), value = TRUE, invert = TRUE))
  if (m$save_warmup == "1" && nw > 0) d <- d[-seq_len(nw), , drop = FALSE]
  d[, !endsWith(names(d), "__"), drop = FALSE]
})
x <- as_draws_array(chains)
variables(x) <- sub("^theta\\.([0-9]+)$", "theta[\\1]", variables(x))
got <- summarise_draws(x, "mean")$mean
want <- read.delim(a[3], header = FALSE, colClasses = c("character", "numeric"))[[2]]
cat("posterior means", format(got, digits = 17), "\nflydb summary  ", format(want, digits = 17), "\n")
if (length(got) != length(want) || any(abs(got - want) > 1e-12 * pmax(1, abs(want)))) quit(status = 1)
EOF
    ok "R ($1): posterior::as_draws_array of the files gives the means of flydb summary ($(tail -1 "$T/r.out" | tr -s ' '))"
  done
else
  echo "SKIP: Rscript with the posterior package not found: means not checked in R"
fi

# ---- errors -------------------------------------------------------------
expect 2 "$FLYDB" export --db $db
err_has "--out"
expect 2 "$FLYDB" export --db $db --out bad --format json
err_has "json"
expect 2 "$FLYDB" export abc --db $db --out bad
err_has "RUN_ID"
expect 1 "$FLYDB" export 99 --db $db --out bad
err_has "no run 99"
[ ! -e bad ] || only_files bad
ok "usage errors exit 2, a missing run exits 1, no files left behind"
