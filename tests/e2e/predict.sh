#!/usr/bin/env bash
# flydb predict (src/predict): a run's predictions for new rows.
#  - against R (tests/e2e/r/predict_check.R: draws through RSQLite,
#    model.matrix on the new CSV with the training levels), every mean and
#    interval end to 1e-10, and the stored lpd, Brier, AUC, accuracy and
#    RMSE: logistic with categorical columns, an interaction, a transform
#    and --reference (all draws, and thinned by --draws); softmax with a
#    categorical target and features (class columns named by label), and
#    on numeric columns as stored (classes named 0..K-1);
#    robust regression on columns as stored (the t mixture's quantiles);
#  - standard input and a gzip file give the same bytes as the file; a
#    rerun adds a prediction row; a file without the target predicts and
#    stores no scores; extra columns are ignored;
#  - bad input (a missing column, i.e. another data set's file; an unseen
#    level; a missing value; not a number; a bad target; a run of another
#    data set) fails naming file, line, column and value, writes no --out
#    file and leaves the database byte-identical (to stdout: only a prefix
#    of the good rows' output, as --help says);
#  - flydb check finds a damaged prediction table (a score out of range,
#    missing or not the model's, too many draws, a run that does not exist);
#  - 10^6 rows predicted with a peak RSS under 100 MB.
# The R checks need Rscript and RSQLite (have_r: a failure in CI, else skipped).
. "$(dirname "$0")/lib.sh"
set -euo pipefail
export LC_COLLATE=C

GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
TOY=$E2E/../../datasets/toy
RCHECK=$E2E/r/predict_check.R
have_r=$(have_r RSQLite)
rcheck() {   # rcheck DB RUN TRAIN NEW PRED FORMULA REF LEVEL S
  [ $have_r = 1 ] || return 0
  Rscript "$RCHECK" "$@" >r.out 2>&1 || { cat r.out >&2; fail "predict differs from R: $*"; }
  ok "R agrees ($(grep -c '^ok' r.out) checks): $4 with run $2 of $1"
}

python3 - <<'PY'
import math, random
def logistic(fn, n, seed, extra=False, target=True):
    random.seed(seed)
    with open(fn, 'w') as f:
        f.write(('junk,' if extra else '') + 'x1,x2,color,size' + (',y' if target else '') + '\n')
        for i in range(n):
            x1 = random.gauss(0, 1); x2 = random.uniform(0.5, 3); c = random.choice(['red', 'blue', 'green'])
            s = random.choice(['S', 'M', 'L', 'XL'])
            eta = 0.4 * x1 - 0.3 * math.log(x2) + {'red': 0.8, 'blue': -0.5, 'green': 0}[c] \
                  + {'S': 0, 'M': 0.3, 'L': -0.3, 'XL': 0.1}[s] + 0.2 * x1 * (c == 'blue')
            y = 'yes' if random.random() < 1 / (1 + math.exp(-eta)) else 'no'
            f.write(('"a, b",' if extra else '') + '%.6f,%.6f,%s,%s' % (x1, x2, c, s)
                    + (',' + y if target else '') + '\n')
def softmax(fn, n, seed):
    random.seed(seed)
    with open(fn, 'w') as f:
        f.write('x1,x2,g,cls\n')
        for i in range(n):
            x1 = random.gauss(0, 1); x2 = random.uniform(0.5, 3); g = random.choice(['u', 'v'])
            e = [0, 0.8 * x1 + (g == 'v') * 0.5, -0.6 * x1 + 0.4 * math.sqrt(x2)]
            m = max(e); p = [math.exp(v - m) for v in e]
            u = random.random() * sum(p); k = 0
            while u > p[k]: u -= p[k]; k += 1
            f.write('%.6f,%.6f,%s,%s\n' % (x1, x2, g, ['a', 'b', 'c'][k]))
logistic('lg.csv', 2000, 7); logistic('lg_new.csv', 300, 8, extra=True)
logistic('lg_nott.csv', 50, 9, target=False)
softmax('sm.csv', 1500, 1); softmax('sm_new.csv', 200, 2)
PY
head -n 1501 "$TOY/robust.csv" >rb.csv
{ head -n 1 "$TOY/robust.csv"; tail -n 300 "$TOY/robust.csv"; } >rb_new.csv

# ---- logistic: categorical columns, interaction, transform, reference ------
LF='y ~ x1 * color + log(x2) + size'
db=p.db
expect 0 "$FLYDB" ingest lg.csv --db $db
expect 0 "$FLYDB" sample --db $db --data lg --formula "$LF" --reference size=M --iters 300 \
  --seed 3 --quiet
expect 0 "$FLYDB" predict lg_new.csv --db $db --out lg_p.csv
out_has "run 1 (logistic): 300 rows predicted from lg_new.csv with 600 draws" "lpd" "brier" "auc"
eq "header" "$(head -n 1 lg_p.csv)" "row,mean,lower,upper"
eq "rows" "$(wc -l <lg_p.csv)" 301
eq "stored" "$(q $db "SELECT run_id, source, n_rows, n_draws, level, has_target, lpd < 0,
                      auc > 0.5, accuracy IS NULL, rmse IS NULL FROM prediction")" \
   "$(printf '1\tlg_new.csv\t300\t600\t0.9\t1\t1\t1\t1\t1')"
rcheck $db 1 lg.csv lg_new.csv lg_p.csv "$LF" size=M 0.9 600
expect 0 "$FLYDB" predict 1 lg_new.csv --db $db --out lg_p2.csv --draws 250 --level 0.5
rcheck $db 1 lg.csv lg_new.csv lg_p2.csv "$LF" size=M 0.5 250
eq "a rerun adds a row" "$(q $db "SELECT count(*), group_concat(n_draws) FROM prediction")" \
   "$(printf '2\t600,250')"

# standard input and gzip give the same bytes; stdout carries the CSV
expect 0 "$FLYDB" predict - --db $db --out lg_stdin.csv <lg_new.csv
same_file lg_stdin.csv lg_p.csv
gzip -c lg_new.csv >lg_new.csv.gz
expect 0 "$FLYDB" predict lg_new.csv.gz --db $db
cmp -s "$T/out" lg_p.csv || fail "gzip input to stdout differs from the file's predictions"
err_has "300 rows predicted from lg_new.csv.gz"
ok "standard input, gzip and stdout give the same predictions"

# --out onto a pipe (or a device such as /dev/null) writes into it: a file
# renamed onto it would replace the node
mkfifo pipe.csv
cat pipe.csv >from_pipe.csv &
expect 0 "$FLYDB" predict lg_new.csv --db $db --out pipe.csv
wait
[ -p pipe.csv ] || fail "--out onto a FIFO replaced it with a $(stat -c %F pipe.csv)"
same_file from_pipe.csv lg_p.csv
ok "--out onto a FIFO writes the predictions into it and leaves it a FIFO"

# no target: predictions, no scores
expect 0 "$FLYDB" predict lg_nott.csv --db $db --out nott.csv
eq "no-target row" "$(q $db "SELECT n_rows, has_target, lpd IS NULL, brier IS NULL FROM prediction
                             ORDER BY id DESC LIMIT 1")" "$(printf '50\t0\t1\t1')"
eq "no-target rows" "$(wc -l <nott.csv)" 51

# ---- softmax: a categorical target, classes by label ------------------------
SF='cls ~ x1 + g + sqrt(x2)'
expect 0 "$FLYDB" ingest sm.csv --db $db
expect 0 "$FLYDB" sample --db $db --data sm --model softmax --formula "$SF" --iters 300 --seed 3 \
  --quiet
expect 0 "$FLYDB" predict 2 sm_new.csv --db $db --out sm_p.csv --draws 250
out_has "accuracy" "brier"
eq "softmax header" "$(head -n 1 sm_p.csv)" \
   "row,a,a_lower,a_upper,b,b_lower,b_upper,c,c_lower,c_upper"
rcheck $db 2 sm.csv sm_new.csv sm_p.csv "$SF" - 0.9 250

# ---- robust regression, columns as stored ----------------------------------
expect 0 "$FLYDB" ingest rb.csv --db $db
expect 0 "$FLYDB" sample --db $db --data rb --model robust --iters 300 --seed 3 --quiet
expect 0 "$FLYDB" predict 3 rb_new.csv --db $db --out rb_p.csv --level 0.8
out_has "rmse"
rcheck $db 3 rb.csv rb_new.csv rb_p.csv 'y ~ x1 + x2' - 0.8 600

# softmax on columns as stored: classes 0..K-1 name the columns
head -n 1201 "$TOY/softmax.csv" >so.csv
{ head -n 1 "$TOY/softmax.csv"; tail -n 200 "$TOY/softmax.csv"; } >so_new.csv
expect 0 "$FLYDB" ingest so.csv --db $db
expect 0 "$FLYDB" sample --db $db --data so --model softmax --iters 200 --seed 2 --quiet
expect 0 "$FLYDB" predict 4 so_new.csv --db $db --out so_p.csv
eq "numeric classes header" "$(head -n 1 so_p.csv)" \
   "row,0,0_lower,0_upper,1,1_lower,1_upper,2,2_lower,2_upper"
rcheck $db 4 so.csv so_new.csv so_p.csv 'y ~ x1 + x2' - 0.9 400

# ---- bad input: named, nothing written --------------------------------------
cp $db before.db
bad() {   # bad RUN FILE MESSAGE...
  local run=$1 f=$2
  shift 2
  expect 1 "$FLYDB" predict "$run" "$f" --db $db --out never.csv
  err_has "$@"
  [ ! -e never.csv ] || fail "--out written by a failing prediction"
  same_file $db before.db
}
bad 1 sm_new.csv "sm_new.csv:1: no column 'color'"           # another data set's file
bad 2 lg_new.csv "lg_new.csv:1: no column 'g'"               # a run of another data set
sed '5s/,red,/,purple,/;5s/,blue,/,purple,/;5s/,green,/,purple,/' lg_new.csv >unseen.csv
bad 1 unseen.csv "unseen.csv:5:4: column 'color': level 'purple' is not one of the 3 levels"
expect 1 "$FLYDB" predict 1 unseen.csv --db $db       # to stdout: streamed, as --help says
err_has "unseen.csv:5:4: column 'color'"
head -c "$(wc -c <"$T/out")" lg_p.csv | cmp -s - "$T/out" ||
  fail "a failing prediction to stdout wrote other than a prefix of the good rows' output"
same_file $db before.db
sed '7s/^\("a, b"\),[^,]*,/\1,,/' lg_new.csv >empty.csv
bad 1 empty.csv "empty.csv:7:2: column 'x1' is missing"
sed '9s/,[^,]*$/,NA/' lg_new.csv >natarget.csv
bad 1 natarget.csv "natarget.csv:9:6: column 'y' is missing"
sed '4s/^\("a, b"\),[^,]*,/\1,abc,/' lg_new.csv >nan.csv
bad 1 nan.csv "nan.csv:4:2: column 'x1': 'abc' is not a number"
sed '3s/,[^,]*$/,maybe/' lg_new.csv >badtarget.csv
bad 1 badtarget.csv "badtarget.csv:3:6: column 'y': level 'maybe'"
sed '6s/,[0-9.]*,\(red\|blue\|green\),/,-1,\1,/' lg_new.csv >neglog.csv
bad 1 neglog.csv "neglog.csv:6:3: column 'x2': a transform of the formula is undefined"
{ head -n 1 "$TOY/robust.csv"; echo "1,2,7"; echo "1,,7"; } >rb_bad.csv
bad 3 rb_bad.csv "rb_bad.csv:3:2: column 'x2' is missing"
expect 1 "$FLYDB" predict 9 lg_new.csv --db $db
err_has "no run 9"
expect 2 "$FLYDB" predict --db $db
expect 2 "$FLYDB" predict 1 lg_new.csv --db $db --level 1
same_file $db before.db
ok "bad input fails with its position and leaves the database byte-identical"

# ---- flydb check of the prediction table --------------------------------------
expect 0 "$FLYDB" check --db $db
out_has "no problems found" "$(q $db "SELECT count(*) FROM prediction") predictions"
lg1=$(q $db "SELECT min(id) FROM prediction WHERE run_id = 1 AND has_target")
sm2=$(q $db "SELECT min(id) FROM prediction WHERE run_id = 2")
rb3=$(q $db "SELECT min(id) FROM prediction WHERE run_id = 3")
nt=$(q $db "SELECT min(id) FROM prediction WHERE NOT has_target")
cp $db bad.db
q bad.db "UPDATE prediction SET auc = 1.5, n_draws = 100000 WHERE id = $lg1;
          UPDATE prediction SET rmse = 0.5 WHERE id = $sm2;
          UPDATE prediction SET lpd = NULL WHERE id = $rb3;
          UPDATE prediction SET brier = 0.25 WHERE id = $nt;
          INSERT INTO prediction(run_id, source, n_rows, n_draws, level, has_target)
            VALUES (99, 'x.csv', 1, 1, 0.9, 0)"
expect 1 "$FLYDB" check --db bad.db
out_has "run 1 prediction $lg1: auc is 1.5, outside [0, 1]" \
  "run 1 prediction $lg1: n_draws 100000, the run has 600 post-warm-up iterations" \
  "run 2 prediction $sm2: rmse is 0.5; the model's held-out scores have none" \
  "run 3 prediction $rb3: lpd is NULL; the model's held-out scores have it" \
  "run 1 prediction $nt: brier is 0.25; the model's held-out scores have none" \
  "run 99 prediction" "a prediction of a run that does not exist" \
  "table prediction, row id" "refers to a missing run row" "7 problems found"
ok "flydb check finds a damaged prediction table"

# ---- 10^6 rows in flat memory ----------------------------------------------
if [ -x /usr/bin/time ]; then
  "$GEN" --model logistic --rows 5000 --features 5 --seed 1 >small.csv
  "$GEN" --model logistic --rows 1000000 --features 5 --seed 2 >big.csv
  expect 0 "$FLYDB" ingest small.csv --db big.db
  expect 0 "$FLYDB" sample --db big.db --iters 200 --seed 1 --quiet
  expect 0 /usr/bin/time -f 'maxrss %M' "$FLYDB" predict big.csv --db big.db --draws 100 \
    --out big_p.csv
  rss=$(sed -n 's/^maxrss //p' "$T/err")
  eq "rows" "$(wc -l <big_p.csv)" 1000001
  [ "$rss" -lt 102400 ] || fail "predicting 10^6 rows took $rss kB of RSS"
  ok "10^6 rows predicted in $rss kB of peak RSS"
fi
