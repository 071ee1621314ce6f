#!/usr/bin/env bash
# Parallel ingest (--threads): the data set is the same bytes whatever the
# number of threads -- `flydb dump`, the page payloads, the column table and
# the levels -- on numeric, categorical (with a column turning categorical
# in a late chunk), quoted-newline and missing-value files of several 1 MiB
# chunks, and a mixed file of 19 chunks, pre-typed by the parse threads
# (f64 and f32); an error is the first one in file order, with the same message,
# whichever thread met it first; standard input works; SIGINT leaves nothing.
. "$(dirname "$0")/lib.sh"

writer=
threads_cleanup() {
  [ -n "$writer" ] && kill "$writer" 2>/dev/null
  e2e_cleanup
}
trap threads_cleanup EXIT

gen_csv 60000 8 51 >num.csv                       # ~3.6 MB: 4 chunks
# categorical: labels, a column of small integers that turns categorical at
# row 50000 (a late chunk: its rows above are re-coded), a numeric one.
awk 'BEGIN { srand(52); print "a,color,code,cut,y"
  split("red,blue,green,Very Good,Fair", L, ",")
  for(i = 0; i < 80000; i++){
    code = (i == 50000) ? "x" : int(rand() * 20)
    printf "%.6g,%s,%s,%s,%d\n", rand() * 10, L[1 + int(rand() * 5)], code,
           L[1 + int(rand() * 5)], (rand() < 0.5) } }' >cat.csv
# quoted cells with line feeds, commas, "" escapes and CRLF line ends, long
# enough that chunk boundaries fall among them
awk 'BEGIN { srand(53); printf "x,note,y\r\n"
  for(i = 0; i < 40000; i++){
    k = int(rand() * 4)
    note = k == 0 ? "\"two\nlines, \"\"quoted\"\"\"" : k == 1 ? "\"a,b\r\nc\"" : k == 2 ? "plain" : "\"\n\n\""
    printf "%.5f,%s,%d\r\n", rand(), note, (rand() < 0.3) } }' >quoted.csv
# missing values: empty cells and NA in numeric and categorical columns
awk 'BEGIN { srand(54); print "x1,x2,g,y"
  for(i = 0; i < 70000; i++){
    r = rand()
    a = r < 0.05 ? "" : sprintf("%.7g", rand())
    b = r > 0.95 ? "NA" : sprintf("%d", rand() * 1000)
    g = r < 0.1 ? "NA" : (r < 0.5 ? "p" : "q")
    printf "%s,%s,%s,%d\n", a, b, g, rand() < 0.5 } }' >na.csv

# enough chunks (~19 MB) that most are parsed after the typing thread is
# ready, so the parse threads pre-type them: settled numbers with a few
# missing cells; labels looked up by the parse threads, short and long
# (over 8 bytes), with more distinct labels (3000, 1500) than the threads'
# shared index's small table holds (the rest in its big one); small
# integers tracked as numbers that turn categorical at row 300000 (chunks
# pre-typed as numbers after the turn are typed again), and 2000 of them
# turning at row 200000 (their codes past the small table move to the big
# one then); a 0/1 target.
awk 'BEGIN { srand(55); print "a,color,code,many,long,n,grp,y"
  split("red,blue,green,Very Good,Fair", L, ",")
  for(i = 0; i < 400000; i++){
    code = (i == 300000) ? "x" : int(rand() * 20)
    m = sprintf("L%05d", int(rand() * 3000))
    lg = sprintf("longlabel-%d-x", int(rand() * 1500))
    r = rand()
    n = r < 0.001 ? "" : r < 0.002 ? "NA" : sprintf("%.4f", rand())
    g = (i == 200000) ? "g" : int(rand() * 2000)
    printf "%.6g,%s,%s,%s,%s,%s,%s,%d\n", rand() * 10, L[1 + int(rand() * 5)], code, m, lg, n,
           g, (rand() < 0.5) } }' >mix.csv

# fingerprint DB: everything of the data set that an ingest writes.
fingerprint() {
  "$FLYDB" dump --db "$1" | md5sum
  q "$1" "SELECT page_no, first_row, n_rows, codec, raw_bytes, hex(payload) FROM page ORDER BY page_no" | md5sum
  q "$1" "SELECT * FROM dataset_column ORDER BY idx" | md5sum
  q "$1" "SELECT * FROM level ORDER BY idx, code" | md5sum
  q "$1" "SELECT n_rows, n_pages, raw_bytes, stored_bytes, width FROM dataset"
}

for f in num cat quoted na mix; do
  for t in 1 2 4; do
    expect 0 "$FLYDB" ingest $f.csv --db $f-$t.db --threads $t
    check_pages $f-$t.db $f
    fingerprint $f-$t.db >$f-$t.fp
  done
  [ "$(wc -l <$f-1.fp)" -ge 5 ] || fail "$f: no fingerprint"
  same_file $f-1.fp $f-2.fp
  same_file $f-1.fp $f-4.fp
  "$FLYDB" dump --db $f-1.db >$f-1.dump
  "$FLYDB" dump --db $f-4.db >$f-4.dump
  same_file $f-1.dump $f-4.dump
  ok "$f.csv: the same data set with 1, 2 and 4 threads ($(tail -n 1 $f-1.fp | tr '\t' ' '))"
done
for t in 1 2 4; do
  expect 0 "$FLYDB" ingest mix.csv --db mix32-$t.db --threads $t --precision f32
  fingerprint mix32-$t.db >mix32-$t.fp
done
same_file mix32-1.fp mix32-2.fp
same_file mix32-1.fp mix32-4.fp
ok "mix.csv with --precision f32: the same data set with 1, 2 and 4 threads"
eq "levels of mix.csv" "$(q mix-4.db "SELECT group_concat(n) FROM (SELECT count(*) n FROM level
    GROUP BY idx ORDER BY idx)")" "5,21,3000,1500,2001"
eq "missing cells of mix.csv's n" "$(q mix-4.db "SELECT n_missing > 0 FROM dataset_column
    WHERE name = 'n'")" 1
eq "pages of num.csv" "$(q num-1.db "SELECT n_pages > 4 FROM dataset")" 1
eq "code turned categorical" "$(q cat-4.db "SELECT count(*) FROM level l JOIN dataset_column c
    ON c.idx = l.idx WHERE c.name = 'code'")" 21
eq "quoted rows" "$(q quoted-4.db "SELECT n_rows FROM dataset")" 40000

# standard input
# shellcheck disable=SC2002  # a pipe is what this checks
cat quoted.csv | expect 0 "$FLYDB" ingest - --db stdin.db --name quoted --threads 4
fingerprint stdin.db >stdin.fp
sed -i '1d' stdin.fp; sed '1d' quoted-1.fp | diff - stdin.fp >/dev/null ||
  fail "stdin with 4 threads differs from the file with 1"
ok "standard input with 4 threads: the same pages as the file with 1"

# first_error NAME WANT: every thread count fails on NAME.csv with the
# same message, which names WANT; nothing is written.
first_error() {
  local t
  for t in 1 2 4; do
    expect 1 "$FLYDB" ingest "$1.csv" --db "e$t.db" --threads $t "${@:3}"
    cp "$T/err" "$1-$t.err"
    [ ! -e "e$t.db" ] || fail "$1: a database was left with $t threads"
  done
  err_has "$2"
  same_file "$1-1.err" "$1-2.err"
  same_file "$1-1.err" "$1-4.err"
  ok "$1: with 1, 2 and 4 threads: $(head -n 1 "$1-1.err")"
}
# parse errors in three chunks: the first in file order wins
sed -e '20000s/^[^,]*,/1"2,/' -e '45000s/,[^,]*$//' -e '58000s/$/,"/' num.csv >perr.csv
first_error perr "perr.csv:20000:1: '\"' inside an unquoted field"
# a parse error in a late chunk, seen first by its worker, after a type
# error in an early chunk that only the writer sees
sed -e '9000s/^[^,]*,/abc,/' -e '50000s/,[^,]*$//' num.csv >terr.csv
first_error terr "terr.csv:9000:1: 'abc' is not a number" --numeric x1
# a type error after a parse error: the parse error
sed -e '9000s/,[^,]*$//' -e '50000s/^[^,]*,/abc,/' num.csv >tperr.csv
first_error tperr "tperr.csv:9000:" --numeric x1
# in pre-typed chunks: a text in a settled column late in the file (the
# parse thread flags its record, the typing thread reports it), and a label
# first seen late in a categorical column, then the same label turning up
# in a numeric column
sed -e '350001s/^[^,]*,/abc,/' mix.csv >lerr.csv
first_error lerr "lerr.csv:350001:1: 'abc' is not a number, and column 'a' held more than"
sed -e '340001s/,Fair,/,Fuchsia,/; 340001s/,red,/,Fuchsia,/; 340001s/,blue,/,Fuchsia,/' \
    -e '340001s/,green,/,Fuchsia,/; 340001s/,Very Good,/,Fuchsia,/' \
    -e '360001s/^[^,]*,/Fuchsia,/' mix.csv >lerr2.csv
first_error lerr2 "lerr2.csv:360001:1: 'Fuchsia' is not a number"
# an unterminated quote: its line, whatever the chunks after it
sed -e '30000s/^/"/' num.csv >uq.csv
first_error uq "uq.csv:30000:1: unterminated quoted field"

# SIGINT while the reader waits for more input: no file left.  The CSV
# comes through a FIFO whose writer then holds it open.
mkdir db
mkfifo fifo
(cat num.csv; : >sent; exec sleep 600) >fifo &
writer=$!
set -m
"$FLYDB" ingest fifo --db db/new.db --threads 4 2>"$T/err" &
pid=$!
set +m
for _ in $(seq 1200); do [ -e sent ] && break; sleep 0.1; done
sleep 1
kill -0 "$pid" 2>/dev/null || { cat "$T/err" >&2; fail "flydb ended before SIGINT"; }
kill -INT "$pid"
rc=0
for _ in $(seq 1200); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
[ -d "/proc/$pid" ] && { kill -KILL "$pid"; fail "flydb still running 120 s after SIGINT"; }
wait "$pid" || rc=$?
kill "$writer" 2>/dev/null || true
wait "$writer" 2>/dev/null || true
writer=
[ "$rc" = 130 ] || { cat "$T/err" >&2; fail "exit status $rc after SIGINT, want 130"; }
err_has "interrupted" "nothing was stored"
only_files db
ok "SIGINT during a 4-thread ingest: no file left"
