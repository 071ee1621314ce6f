#!/usr/bin/env bash
# docs/r-and-python.md runs as it stands: its R snippets (in one R session,
# in order) and its Python snippet, on the database its first lines make.
# Skipped only when R's RSQLite/posterior/bayesplot or Python's pandas are
# not installed (tools/test installs them).
. "$(dirname "$0")/lib.sh"
set -euo pipefail
DOC=$E2E/../../docs/r-and-python.md
Rscript -e 'library(RSQLite); library(posterior); library(bayesplot)' >/dev/null 2>&1 ||
  { echo "SKIP: R's RSQLite, posterior or bayesplot is not installed"; exit 77; }
# Debian's python3 has python3-pandas; a python3 earlier on PATH may not
PY=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import pandas' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: python3-pandas is not installed"; exit 77; }

expect 0 "$FLYDB" ingest "$E2E/../../datasets/toy/logistic.csv"
expect 0 "$FLYDB" sample --iters 1000 --seed 1 --quiet
expect 0 "$FLYDB" summary
expect 0 "$FLYDB" loo
awk '/^```r$/ { on = 1; next } /^```$/ { on = 0 } on' "$DOC" >doc.R
awk '/^```python$/ { on = 1; next } /^```$/ { on = 0 } on' "$DOC" >doc.py
[ -s doc.R ] && [ -s doc.py ] || fail "no R or Python snippets in $DOC"
Rscript doc.R >r.out 2>&1 || { cat r.out >&2; fail "the R snippets of docs/r-and-python.md failed"; }
grep -q "ess_bulk" r.out || fail "R: no summarise_draws output"
grep -q "elpd_loo" r.out || fail "R: no loo table"
[ -s trace.pdf ] || fail "R: bayesplot drew nothing"
"$PY" doc.py >py.out 2>&1 || { cat py.out >&2; fail "the Python snippet of docs/r-and-python.md failed"; }
grep -q "elpd_loo" py.out || fail "Python: no loo table"
ok "docs/r-and-python.md: its R and Python snippets run and agree with flydb's summary"
