# shellcheck shell=bash
# tools/lib.sh -- shared by tools/setup and tools/test (sourced, not run).
#
# flydb_deps       install the Debian 12 packages flydb needs (and with
#                  arguments "test" and/or "bench" what the tests or
#                  tools/bench need too), only those
#                  that are missing (apt-get is called only then), with sudo
#                  when not root.
# flydb_configure  meson setup DIR ARGS..., or reconfigure DIR if it is
#                  already a meson build directory (so options given here
#                  always win over what the directory had).
#
# FLYDB_WERROR=1 (set by .ci/run) turns warnings into errors in every build
# directory configured here (-Dwerror_ci=true); otherwise they stay warnings.

FLYDB_PACKAGES=(build-essential meson ninja-build pkg-config libsqlite3-dev
                liblz4-dev libxxhash-dev libopenblas-dev libfftw3-dev liblapacke-dev
                libplplot-dev sqlite3 zlib1g-dev libzstd-dev liblzma-dev libreadstat-dev)
# What only the tests need: python3 (e2e checks), R with the posterior and
# coda packages (reads flydb's CmdStan export, regenerates the diagnostics'
# reference numbers; nnet's multinom and glm check the formulas' MAPs,
# rstan's NUTS the posterior of a formula model; loo and RSQLite check flydb
# loo against loo::loo and loo_subsample; bayesplot and pandas run
# docs/r-and-python.md), rsvg-convert (renders the plots), valgrind
# (tools/test --valgrind), clang with its sanitizer runtimes (the short
# fuzz runs; absent, they would be skipped), man-db (renders the generated
# man pages), dpkg-dev, debhelper and lintian (the package test deb.sh),
# zstd, xz-utils and R's haven (compressed and Stata/SPSS/SAS inputs,
# ingest_sources.sh), OpenMPI's headers and mpirun (-Dmpi=auto turns MPI on
# when found; the tests in tests/mpi run ranks with mpirun).
FLYDB_TEST_PACKAGES=(python3 r-base-core r-cran-posterior r-cran-coda r-cran-loo r-cran-rsqlite
                     r-cran-nnet r-cran-rstan r-cran-bayesplot python3-pandas
                     librsvg2-bin valgrind clang libclang-rt-14-dev
                     man-db dpkg-dev debhelper lintian zstd xz-utils r-cran-haven
                     libopenmpi-dev openmpi-bin)
# What tools/bench needs (and so the e2e test bench_smoke): R with ggplot2
# (its `diamonds` data set, tools/make_diamonds.R) and data.table (fread, the
# ingest baseline), rstan and posterior (Stan's NUTS, the baseline of the
# `stan` experiment), GNU time (peak RSS), the sqlite3 shell.
FLYDB_BENCH_PACKAGES=(r-base-core r-cran-ggplot2 r-cran-data.table r-cran-rstan r-cran-posterior
                      time sqlite3)

# flydb_missing_packages PKG...: those not installed, one a line (one
# dpkg-query for all: on a loaded machine each process start is costly).
flydb_missing_packages() {
  local p line
  local -A ok=()
  while read -r line; do
    case $line in *" install ok installed") ok[${line%% *}]=1 ;; esac
  done < <(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null || true)
  for p in "$@"; do
    [ -n "${ok[$p]:-}" ] || printf '%s\n' "$p"
  done
}

# flydb_deps [test] [bench]: the build's packages, and with "test" the
# tests' too, with "bench" tools/bench's.
flydb_deps() {
  local missing sudo=() pkgs=("${FLYDB_PACKAGES[@]}") a
  for a in "$@"; do
    case $a in
      test) pkgs+=("${FLYDB_TEST_PACKAGES[@]}") ;;
      bench) pkgs+=("${FLYDB_BENCH_PACKAGES[@]}") ;;
    esac
  done
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "tools: no dpkg-query: not a Debian system; install by hand: ${pkgs[*]}" >&2
    return 0
  fi
  mapfile -t missing < <(flydb_missing_packages "${pkgs[@]}")
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "tools: missing packages (${missing[*]}) and not root, no sudo: run as root" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo "tools: installing ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

flydb_configure() {
  local dir=$1
  shift
  local werror=false
  [ "${FLYDB_WERROR:-0}" = 1 ] && werror=true
  if [ -f "$dir/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$dir" "$@" "-Dwerror_ci=$werror"
  else
    meson setup "$dir" "$@" "-Dwerror_ci=$werror"
  fi
}
