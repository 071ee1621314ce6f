#!/usr/bin/env bash
# Formulas against R (issue 25): a CSV with a categorical target (no/yes),
# two categorical features and missing values, modelled by `flydb tune
# --formula F --prior-scale 1e4` (a prior so wide the MAP is the maximum
# likelihood estimate to far below 1e-6); for each formula the coefficients'
# names equal R's model.matrix names and the MAP equals
# glm(F, family = binomial, data = read.csv(f, stringsAsFactors = TRUE,
# na.strings = c("NA", ""))) -- flydb reads empty cells as missing -- to
# 1e-6 (rows with a missing value left out by both: na.omit).  R under
# LC_COLLATE=C sorts levels in byte order, as flydb does.  Also: sample with
# a formula names its parameters as R does; --na error refuses naming the
# row; a bad formula, an unknown column and an unseen reference level are
# usage errors that leave the file byte-identical.
. "$(dirname "$0")/lib.sh"
set -euo pipefail
command -v Rscript >/dev/null 2>&1 || { echo "SKIP: R is not installed (tools/test installs it)"; exit 77; }
export LC_COLLATE=C

python3 - <<'PY'
import math, random
random.seed(7)
with open('d.csv', 'w') as f:
    f.write('x1,x2,color,size,y\n')
    for i in range(2500):
        x1 = random.gauss(0, 1); x2 = random.uniform(0.5, 3); c = random.choice(['red', 'blue', 'green'])
        s = random.choice(['S', 'M', 'L', 'XL'])
        eta = 0.4 * x1 - 0.3 * math.log(x2) + {'red': 0.8, 'blue': -0.5, 'green': 0}[c] \
              + {'S': 0, 'M': 0.3, 'L': -0.3, 'XL': 0.1}[s] + 0.2 * x1 * (c == 'blue')
        y = 'yes' if random.random() < 1 / (1 + math.exp(-eta)) else 'no'
        f.write('%s,%.6f,%s,%s,%s\n' % ('NA' if i % 89 == 0 else '%.6f' % x1, x2,
                                        '' if i % 151 == 3 else c, s, y))
PY
db=d.db
expect 0 "$FLYDB" ingest d.csv --db $db

i=0
while IFS= read -r f; do
  i=$((i + 1))
  expect 0 "$FLYDB" tune --db $db --formula "$f" --prior-scale 1e4
  bs=$(q $db "SELECT max(id) FROM bound_set")
  q $db "SELECT c.name FROM bound_set b JOIN dataset_column c ON c.dataset_id = b.dataset_id
         WHERE b.id = $bs AND c.role != 'target' ORDER BY c.idx" >names.$i
  q $db "SELECT hex(theta_map) FROM bound_set WHERE id = $bs" >map.$i
  Rscript - "$f" names.$i map.$i <<'R' || fail "formula '$f': flydb's MAP differs from glm's (above)"
a <- commandArgs(trailingOnly = TRUE)
h <- readLines(a[3])
r <- as.raw(strtoi(substring(h, seq(1, nchar(h), 2), seq(2, nchar(h), 2)), 16L))
map <- readBin(r, "double", n = length(r) / 8, endian = "little")
d <- read.csv("d.csv", stringsAsFactors = TRUE, na.strings = c("NA", ""))
g <- glm(as.formula(a[1]), family = binomial, data = d,
         control = glm.control(epsilon = 1e-14, maxit = 100))
want <- coef(g); got <- setNames(map, readLines(a[2]))
if (!identical(names(want), names(got))) {
  cat("names: R", names(want), "\n       flydb", names(got), "\n"); quit(status = 1)
}
dif <- max(abs(want - got))
cat(sprintf("# %s: %d coefficients, max |MAP - glm| = %.2e\n", a[1], length(want), dif))
quit(status = if (dif <= 1e-6) 0 else 1)
R
  ok "formula '$f': R's names, MAP = glm's to 1e-6"
done <<'FORMULAS'
y ~ .
y ~ x1 + log(x2) + color + size
y ~ x1 * color + I(x1^2)
y ~ color:size - 1
y ~ x1 + x1:color
y ~ . - size
y ~ sqrt(x2) + color - 1
FORMULAS

# sample with a formula: parameters named as R names them, the rows left out said
expect 0 "$FLYDB" sample --db $db --formula 'y ~ x1 + color' --iters 100 --seed 1
grep -q "left out .* rows with a missing value" "$T/err" || fail "no word of the rows left out: $(cat "$T/err")"
grep -q "P(y = 'yes'), against 'no'" "$T/err" || fail "no word of the target's coding: $(cat "$T/err")"
eq "parameter names" "$(q $db "SELECT group_concat(name, ' ') FROM (SELECT name FROM param
                               WHERE run_id = (SELECT max(id) FROM run) ORDER BY idx)")" \
   "(Intercept) x1 colorgreen colorred"
eq "formula stored" "$(q $db "SELECT value FROM run_config WHERE run_id = (SELECT max(id) FROM run)
                              AND key = 'formula'")" "y ~ x1 + color"
ok "sample --formula: R's names, the rows left out and the target's coding said, the formula stored"

cp $db before.db
expect 2 "$FLYDB" sample --db $db --formula 'y ~ x1 +' --iters 10
grep -q "formula" "$T/err" || fail "bad formula: $(cat "$T/err")"
expect 2 "$FLYDB" sample --db $db --formula 'y ~ x3' --iters 10
grep -q "x3" "$T/err" || fail "unknown column: $(cat "$T/err")"
expect 2 "$FLYDB" sample --db $db --formula 'y ~ color' --reference color=purple --iters 10
grep -q "purple" "$T/err" || fail "unseen reference level: $(cat "$T/err")"
expect 2 "$FLYDB" sample --db $db --formula 'y ~ x1 + size' --na error --iters 10
grep -q "row" "$T/err" || fail "--na error names no row: $(cat "$T/err")"
same_file $db before.db
ok "bad formula, unknown column, unseen reference level, --na error: usage errors, file unchanged"
