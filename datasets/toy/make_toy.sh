#!/bin/sh
# make_toy.sh -- regenerate the small synthetic data sets in datasets/toy/
# with flydb-gen (same arguments => identical bytes).
#
#   sh datasets/toy/make_toy.sh [path/to/flydb-gen]     (from the repo root)
#
# Each X.csv comes with X.truth.csv (param,value: the true parameters).
set -eu
GEN=${1:-build/tools/flydb-gen}
DIR=$(dirname "$0")

# logistic.csv: 2000 rows, one feature named x, y in 0/1.
"$GEN" --model logistic --rows 2000 --features 1 --seed 1 \
       --truth-file "$DIR/logistic.truth.csv" | sed '1s/^x1,y$/x,y/' > "$DIR/logistic.csv"
sed -i 's/^x1,/x,/' "$DIR/logistic.truth.csv"

# tiny_logistic.csv: 100 rows from a separate draw (seed 2),
# a wide 2-parameter posterior for quadrature-on-a-grid checks.
"$GEN" --model logistic --rows 100 --features 1 --seed 2 \
       --truth-file "$DIR/tiny_logistic.truth.csv" | sed '1s/^x1,y$/x,y/' > "$DIR/tiny_logistic.csv"
sed -i 's/^x1,/x,/' "$DIR/tiny_logistic.truth.csv"

# softmax.csv: 3000 rows, features x1,x2, y in 0,1,2.
"$GEN" --model softmax --rows 3000 --features 2 --classes 3 --seed 3 \
       --truth-file "$DIR/softmax.truth.csv" > "$DIR/softmax.csv"

# robust.csv: 2000 rows, features x1,x2, y = eta + 0.5 * t_4 noise.
"$GEN" --model robust --rows 2000 --features 2 --nu 4 --noise-scale 0.5 --seed 4 \
       --truth-file "$DIR/robust.truth.csv" > "$DIR/robust.csv"
