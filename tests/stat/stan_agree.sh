#!/usr/bin/env bash
# flydb's posterior equals Stan's (Debian's rstan) on a model with a
# formula (issue 25, 26): 4,000 rows with a numeric column, two categorical
# columns, a two-level categorical target and missing values;
#   y ~ x1 * color + size + log(x2)
# sampled by flydb's default (it chooses the method: docs/design.md §16)
# and, separately, by FlyMC forced (--z gibbs), against Stan's NUTS on
# model.matrix of the same formula (read.csv with empty cells and NA as
# missing, na.omit, LC_COLLATE=C), both with N(0, 1) priors on every
# coefficient.  For every coefficient |mean_flydb - mean_Stan| <=
# 4 sqrt(mcse_flydb^2 + mcse_Stan^2), MCSEs from each side's chains
# (posterior's mcse_mean).  Fixed seeds.  TAP output; skipped when R or
# rstan is absent.
set -euo pipefail
flydb=$1
case $flydb in /*) ;; *) flydb=$PWD/$flydb ;; esac
command -v Rscript >/dev/null 2>&1 && Rscript -e 'library(rstan)' >/dev/null 2>&1 ||
  { echo "1..0 # SKIP R's rstan is not installed (apt-get install r-cran-rstan)"; exit 0; }
T=$(mktemp -d "${TMPDIR:-/tmp}/flydb-stan.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T"
export LC_COLLATE=C
iters=2000
[ "${FLYDB_TEST_LEVEL:-quick}" = accurate ] && iters=10000
form='y ~ x1 * color + size + log(x2)'
echo "# $form; flydb seeds 21 (default) and 22 (--z gibbs), Stan seed 23; $iters draws x 2 chains"

python3 - <<'PY'
import math, random
random.seed(11)
with open('d.csv', 'w') as f:
    f.write('x1,x2,color,size,y\n')
    for i in range(4000):
        x1 = random.gauss(0, 1); x2 = random.uniform(0.5, 3); c = random.choice(['red', 'blue', 'green'])
        s = random.choice(['S', 'M', 'L'])
        eta = 0.3 + 0.5 * x1 - 0.4 * math.log(x2) + {'red': 0.6, 'blue': -0.4, 'green': 0}[c] \
              + {'S': 0, 'M': 0.3, 'L': -0.3}[s] + 0.3 * x1 * (c == 'blue')
        y = 'yes' if random.random() < 1 / (1 + math.exp(-eta)) else 'no'
        f.write('%s,%.6f,%s,%s,%s\n' % ('NA' if i % 97 == 0 else '%.6f' % x1, x2,
                                        '' if i % 131 == 5 else c, s, y))
PY
"$flydb" ingest d.csv --db d.db >/dev/null 2>&1
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
summary_csv() { "$flydb" summary "$1" --db d.db --format csv | awk -F, 'NR > 1 { print $1 "," $2 "," $11 }'; }

"$flydb" sample --db d.db --formula "$form" --iters "$iters" --warmup 1000 --seed 21 --quiet
"$flydb" sample --db d.db --formula "$form" --iters "$iters" --warmup 1000 --seed 22 --quiet --z gibbs
echo "# flydb default chose: $(sqlite3 d.db "SELECT z_mode || ' + ' || sampler FROM run WHERE id = 1")"
summary_csv 1 >fly1.csv
summary_csv 2 >fly2.csv

Rscript - "$form" "$iters" >stan.csv 2>stan.log <<'R' || { cat stan.log >&2; echo "not ok 1 - Stan failed"; echo "1..1"; exit 0; }
suppressMessages({ library(rstan); library(posterior) })
rstan_options(auto_write = FALSE)
if (!dir.exists(file.path(rstan_options("boost_lib"), "boost"))) rstan_options(boost_lib = "/usr/include")
a <- commandArgs(trailingOnly = TRUE)
d <- read.csv("d.csv", stringsAsFactors = TRUE, na.strings = c("NA", ""))
mf <- model.frame(as.formula(a[1]), d, na.action = na.omit)
X <- model.matrix(as.formula(a[1]), mf); y <- as.integer(mf$y == "yes")
code <- "data { int N; int D; matrix[N, D] X; int<lower=0, upper=1> y[N]; }
  parameters { vector[D] beta; }
  model { beta ~ normal(0, 1); y ~ bernoulli_logit_glm(X, 0, beta); }"
fit <- sampling(stan_model(model_code = code), data = list(N = nrow(X), D = ncol(X), X = X, y = y),
                chains = 2, cores = 2, iter = 1000 + as.integer(a[2]), warmup = 1000, seed = 23,
                refresh = 0)
s <- summarise_draws(as_draws_array(as.array(fit, pars = "beta")), mean, mcse_mean)
write.table(data.frame(colnames(X), as.numeric(s$mean), as.numeric(s$mcse_mean)), sep = ",",
            row.names = FALSE, col.names = FALSE, quote = FALSE)
R

for f in fly1 fly2; do
  label=$([ $f = fly1 ] && echo "default" || echo "--z gibbs")
  [ "$(cut -d, -f1 $f.csv)" = "$(cut -d, -f1 stan.csv)" ] && ok "$label: coefficient names are R's" ||
    notok "$label: names $(cut -d, -f1 $f.csv | tr '\n' ' ') vs R's $(cut -d, -f1 stan.csv | tr '\n' ' ')"
  while IFS=, read -r name m1 s1 && IFS=, read -r name2 m2 s2 <&3; do
    z=$(awk -v a="$m1" -v b="$m2" -v s="$s1" -v t="$s2" 'BEGIN { printf "%.2f", (a - b) / sqrt(s * s + t * t) }')
    if awk -v z="$z" 'BEGIN { exit !(z <= 4 && z >= -4) }'; then
      ok "$label vs Stan, $name: z = $z (means $m1 vs $m2)"
    else
      notok "$label vs Stan, $name: z = $z (means $m1 vs $m2, mcse $s1, $s2)"
    fi
  done <$f.csv 3<stan.csv
done
echo "1..$n"
