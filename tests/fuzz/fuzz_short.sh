#!/usr/bin/env bash
# fuzz_short.sh SRCROOT -- the short fuzz run of the default test command.
#
# Builds the libFuzzer harnesses (CSV reader in both modes, page decoder,
# checkpoint parser, formula parser, the gzip/zstd/xz/ReadStat sources) with
# clang -fsanitize=fuzzer,address,undefined into a temporary directory and
# fuzzes each for FLYDB_FUZZ_SECONDS (default 10) seconds on a copy of its
# seed corpus; fails if any input crashes (printed in hex).
# Exit 77 (meson: skipped) when clang cannot build with -fsanitize=fuzzer.
# The long run is tools/fuzz; this script is that command with a short time.
set -uo pipefail
src=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
secs=${FLYDB_FUZZ_SECONDS:-10}
[ "${FLYDB_TEST_LEVEL:-}" = accurate ] && secs=${FLYDB_FUZZ_SECONDS:-60}
export FLYDB_FUZZ_CLEAN=1
unset FLYDB_FUZZ_WORK
exec bash "$src/tools/fuzz" "$secs" all
