#!/usr/bin/env bash
# formula_r.sh path/to/formula_mm -- the formula module's model matrices
# against R's model.matrix on the same CSVs (tests/r/formula_r.R): column
# names, the rows kept after missing values, every value to 1e-12
# relative, for 182 formulas (32 written out, 150 drawn at random).
# Skipped (77) only when R is not installed.
set -euo pipefail
driver=${1:?usage: formula_r.sh path/to/formula_mm}
case $driver in /*) ;; *) driver=$PWD/$driver ;; esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v Rscript >/dev/null 2>&1; then
  echo "SKIP: R (Rscript) is not installed: the comparison with R's model.matrix needs it (Debian: r-base-core)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/flydb-formula-r.XXXXXX")
trap 'rm -rf "$work"' EXIT
# LC_ALL=C: R sorts factor levels in byte order, as flydb does.
LC_ALL=C Rscript --vanilla "$here/formula_r.R" "$driver" "$work" 2>"$work/stderr" || {
  cat "$work/stderr" >&2
  exit 1
}
