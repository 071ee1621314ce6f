#!/usr/bin/env bash
# Softmax with a formula against R's nnet::multinom (issue 25): a
# three-level categorical target, a numeric and a categorical feature and
# missing values; `flydb tune --model softmax --formula 'fruit ~ x1 + color'
# --prior-scale 1e4` has a MAP whose class contrasts beta_k - beta_first
# (the likelihood's identified part; flydb keeps every class row, the prior
# fixes their sum) equal multinom's coefficients (R's baseline-category
# parameterisation, first level the baseline) to 1e-6, and the run's
# parameters are named "<class label>:<column>" in R's level order.
. "$(dirname "$0")/lib.sh"
set -euo pipefail
command -v Rscript >/dev/null 2>&1 && Rscript -e 'library(nnet)' >/dev/null 2>&1 ||
  { echo "SKIP: R's nnet is not installed (tools/test installs it)"; exit 77; }
export LC_COLLATE=C

python3 - <<'PY'
import math, random
random.seed(5)
with open('f.csv', 'w') as f:
    f.write('x1,color,fruit\n')
    for i in range(3000):
        x1 = random.gauss(0, 1); c = random.choice(['red', 'blue', 'green'])
        eta = [0, 0.5 + 0.8 * x1 + (0.4 if c == 'red' else 0), -0.3 - 0.6 * x1 + (0.7 if c == 'blue' else 0)]
        z = [math.exp(e) for e in eta]; u = random.random() * sum(z)
        k = 0 if u < z[0] else 1 if u < z[0] + z[1] else 2
        f.write('%s,%s,%s\n' % ('NA' if i % 101 == 0 else '%.6f' % x1, c, ['cherry', 'apple', 'banana'][k]))
PY
db=f.db
expect 0 "$FLYDB" ingest f.csv --db $db
expect 0 "$FLYDB" tune --db $db --model softmax --formula 'fruit ~ x1 + color' --prior-scale 1e4
q $db "SELECT hex(theta_map) FROM bound_set WHERE id = (SELECT max(id) FROM bound_set)" >map.hex
Rscript - <<'R' || fail "softmax MAP differs from multinom's (above)"
suppressMessages(library(nnet))
h <- readLines("map.hex")
r <- as.raw(strtoi(substring(h, seq(1, nchar(h), 2), seq(2, nchar(h), 2)), 16L))
th <- readBin(r, "double", n = length(r) / 8, endian = "little")
d <- read.csv("f.csv", stringsAsFactors = TRUE, na.strings = c("NA", ""))
m <- multinom(fruit ~ x1 + color, d, trace = FALSE, reltol = 1e-15, maxit = 5000)
want <- coef(m)                        # (K-1) x D, rows: classes 2..K
K <- nrow(want) + 1; D <- ncol(want)
B <- matrix(th, K, D, byrow = TRUE)    # flydb: class-major K x D
got <- sweep(B[-1, , drop = FALSE], 2, B[1, ])
dif <- max(abs(got - want))
cat(sprintf("# softmax: %d x %d contrasts, max |flydb - multinom| = %.2e\n", K - 1, D, dif))
quit(status = if (dif <= 1e-6) 0 else 1)
R
ok "softmax MAP contrasts = multinom's to 1e-6"
expect 0 "$FLYDB" sample --db $db --model softmax --formula 'fruit ~ x1 + color' --iters 50 --seed 1 --z gibbs
eq "class-labelled parameter names" \
   "$(q $db "SELECT group_concat(name, ' ') FROM (SELECT name FROM param WHERE run_id = 1 ORDER BY idx)")" \
   "apple:(Intercept) apple:x1 apple:colorgreen apple:colorred banana:(Intercept) banana:x1 banana:colorgreen banana:colorred cherry:(Intercept) cherry:x1 cherry:colorgreen cherry:colorred"
ok "softmax parameters named by class label in R's level order"
