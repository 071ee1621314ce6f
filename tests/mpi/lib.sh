# shellcheck shell=bash
# tests/mpi/lib.sh -- sourced by the tests that start ranks (run as
# `bash script.sh path/to/flydb HAVE_MPI`): tests/e2e/lib.sh, then a skip
# (exit 77) when flydb was built without MPI, mpirun is missing, or the
# e2e wrapper (valgrind) would sit between mpirun and flydb; and
# `run R CMD...`: CMD on R ranks over loopback, as root in a container,
# more ranks than cores, not bound to a core, within 300 s.
set -euo pipefail
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
# shellcheck disable=SC2034  # used by the scripts that source this
flydb=$FLYDB
if [ -n "${FLYDB_E2E_WRAPPER:-}" ]; then
  echo "SKIP: ranks under $FLYDB_E2E_WRAPPER (mpirun starts the wrapper, and its kill check finds no flydb)"
  exit 77
fi
if [ "${2:-0}" != 1 ] || ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: flydb built without MPI, or no mpirun (tools/setup installs openmpi-bin)"
  exit 77
fi
# OpenMPI 4.1 leaves allocations of its MCA components at MPI_Finalize,
# from modules it has unloaded by then (frames that do not symbolize), so
# LeakSanitizer cannot tell them from flydb's: the ranks of a sanitizer
# build run with leak detection off, every other ASan and UBSan check on.
# The chain, z and store code they drive is leak-checked by the e2e and
# unit suites, which run without MPI.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
run() { timeout 300 mpirun --bind-to none --oversubscribe --allow-run-as-root --mca btl self,vader,tcp \
          --mca btl_tcp_if_include lo -np "$@"; }
