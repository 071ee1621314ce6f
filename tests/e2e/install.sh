# tests/e2e/install.sh -- `meson install --destdir` of the build under test
# into a temporary root: the flydb program runs from there, the SQLite
# extension loads, there is a man page for flydb and for every subcommand
# `flydb --help` lists (each renders without warnings), and the bash
# completion loads and completes subcommands, options and option values.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD=$(cd "$(dirname "$FLYDB_BIN")/../.." && pwd)
[ -f "$BUILD/meson-private/coredata.dat" ] || fail "$BUILD is not a meson build directory"

# The build's install locations (absolute prefix, the others relative to it
# unless meson made them absolute).
opt() {
  meson introspect "$BUILD" --buildoptions |
    python3 -c 'import json, sys
for o in json.load(sys.stdin):
    if o["name"] == sys.argv[1]: print(o["value"])' "$1"
}
prefix=$(opt prefix)
under() { case $1 in /*) echo "$R$1" ;; *) echo "$R$prefix/$1" ;; esac; }
R=$T/root
# --no-rebuild: the test runs inside `meson test`, which has built already.
meson install -C "$BUILD" --destdir "$R" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
  { cat "$T/install.log" >&2; fail "meson install --destdir failed"; }
bin=$(under "$(opt bindir)")/flydb
ext=$(under "$(opt libdir)")/flydb/flydb_ext.so
man1=$(under "$(opt mandir)")/man1
[ -x "$bin" ] || fail "no $bin"
[ -x "$(dirname "$bin")/flydb-gen" ] || fail "no flydb-gen beside $bin"
[ -f "$ext" ] || fail "no $ext"

# The installed program: its version, and a short job.
expect 0 "$bin" --version
out_has "flydb "
ver=$(head -1 "$T/out")
"$bin" ingest "$FIX/good.csv" --db i.db >/dev/null 2>&1 || fail "installed flydb: ingest failed"
expect 0 "$bin" info --db i.db --no-columns
ok "installed flydb runs ($ver)"

# The extension: exports its entry point; loads into the sqlite3 shell
# unless it is a sanitizer build (whose runtime the shell lacks: sqlext.sh).
nm -D --defined-only "$ext" | grep -q ' sqlite3_flydbext_init$' ||
  fail "$ext does not export sqlite3_flydbext_init"
libs=$(ldd "$ext" 2>/dev/null || true)
case $libs in
  *libasan*|*libtsan*|*libubsan*) ok "extension installed (sanitizer build: not loaded)" ;;
  *) got=$(sqlite3 :memory: ".load ${ext%.so}" \
             "SELECT quantile(x, 0.5) FROM (SELECT 1 AS x UNION ALL SELECT 2 UNION ALL SELECT 3)")
     eq "quantile() of the installed extension" "$got" 2.0
     ok "extension installed and loads" ;;
esac

# The library (libflydb.so, its public headers and flydb.pc): the API
# walkthrough (tests/api/api_walkthrough.c: ingest -> tune -> run -> draws)
# compiles and links through `pkg-config --cflags --libs flydb`, with the .pc
# file's prefix moved into the temporary root, and runs on the toy data.
pc=$(find "$R" -path '*/pkgconfig/flydb.pc' -type f | head -n 1)
[ -n "$pc" ] || fail "no flydb.pc installed (find $R -path '*/pkgconfig/flydb.pc')"
mkdir "$T/pc"
sed "s|^prefix=.*|prefix=$R$prefix|" "$pc" >"$T/pc/flydb.pc"
flags=$(PKG_CONFIG_PATH=$T/pc pkg-config --cflags --libs flydb) ||
  fail "pkg-config --cflags --libs flydb failed on the installed flydb.pc"
prog=$E2E/../api/api_walkthrough.c
# A library built with sanitizers (build-san) needs their runtime first in
# the program that loads it: build the program with the same sanitizers.
san=()
so=$(find "$R" -name 'libflydb.so.0' | head -n 1)
if [ -n "$so" ] && ldd "$so" | grep -q libasan; then san=(-fsanitize=address,undefined); fi
# shellcheck disable=SC2086  # flags are words
${CC:-cc} -std=c11 -D_POSIX_C_SOURCE=200809L "${san[@]}" -o "$T/walk" "$prog" $flags -lm ||
  fail "compiling $prog against the installed library failed (flags: $flags)"
LD_LIBRARY_PATH=$(under "$(opt libdir)") "$T/walk" "$E2E/../../datasets/toy/logistic.csv" \
  "$T/walk.db" >"$T/walk.out" || { cat "$T/walk.out" >&2; fail "$prog, linked with the installed library, failed"; }
lib_ldd=$(LD_LIBRARY_PATH=$(under "$(opt libdir)") ldd "$T/walk" | grep libflydb)
case $lib_ldd in *"=> $R"*) ;; *) fail "the program did not load the installed libflydb.so.0: $lib_ldd" ;; esac
ok "library: $(basename "$prog") built through pkg-config ($flags) and run against the installed libflydb.so.0"

# Man pages: flydb(1), flydb-gen(1) and one per subcommand of `flydb --help`.
cmds=$("$bin" --help | awk '/^usage:/ { u = 1; next } u && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || fail "flydb --help lists no commands"
pages=(flydb flydb-gen)
for c in $cmds; do pages+=("flydb-$c"); done
for p in "${pages[@]}"; do
  f=$man1/$p.1
  [ -f "$f" ] || fail "no man page $f"
  grep -q "^\.TH \"${p^^}\" 1 " "$f" || fail "$f: no .TH line for ${p^^}(1)"
  if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
    MANWIDTH=80 man --warnings -l "$f" >"$T/page" 2>"$T/warn" || fail "man -l $f failed"
    [ ! -s "$T/warn" ] || { cat "$T/warn" >&2; fail "man --warnings -l $f warns"; }
    grep -q "^NAME" "$T/page" || fail "$f renders without a NAME section"
  fi
done
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
  MANWIDTH=200 man -l "$man1/flydb-sample.1" 2>/dev/null >"$T/page"
  for o in $("$bin" sample --help 2>&1 | awk '$1 ~ /^--/ { print $1 }'); do
    grep -q -F -- "$o" "$T/page" || fail "flydb-sample(1) lacks $o"
  done
  ok "man pages: ${pages[*]} (rendered by man -l, no warnings; flydb-sample(1) has every option)"
else
  ok "man pages: ${pages[*]} (man or groff not installed: not rendered)"
fi

# Bash completion, where bash-completion looks for it.
comp=$(find "$R" -path '*/bash-completion/completions/flydb' -type f)
[ -n "$comp" ] || fail "no bash completion installed (find $R -path '*/bash-completion/completions/flydb')"
# complete WORDS...: the completions offered for the last word (may be "").
complete_words() {
  bash -c '. "$1" || exit 1
           complete -p flydb >/dev/null || exit 1
           shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
           _flydb; printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort | tr "\n" " "' \
    bash "$comp" "$@"
}
eq "flydb sa<TAB>" "$(complete_words flydb sa)" "sample "
eq "flydb <TAB>" "$(complete_words flydb '' | wc -w)" "$(($(echo "$cmds" | wc -w) + 2))"
eq "flydb sample --sam<TAB>" "$(complete_words flydb sample --sam)" "--sampler "
eq "flydb sample --sampler <TAB>" "$(complete_words flydb sample --sampler '')" "hmc mala mh nuts slice "
eq "flydb sample --z=<TAB>" "$(complete_words flydb sample --z = '')" "explicit gibbs implicit "
eq "flydb summary --format c<TAB>" "$(complete_words flydb summary --format c)" "csv "
eq "flydb ingest --no<TAB>" "$(complete_words flydb ingest --no)" "--no-intercept "
ok "bash completion ($comp): subcommands, options, values"
