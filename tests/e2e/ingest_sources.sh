#!/usr/bin/env bash
# Inputs other than plain CSV (io/source.h): the same data ingested from a
# CSV, its .gz, .zst and .xz (as files and through standard input), Stata,
# SPSS and SAS files written by R's haven, and an SQL query on another
# database give a byte-identical `flydb dump`; a truncated compressed file,
# a corrupt .dta and a bad query fail naming the input, and an existing
# database stays byte-identical (a new one is not created).
. "$(dirname "$0")/lib.sh"

for tool in gzip zstd xz; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: no $tool (tools/setup installs it)"; exit 77; }
done

gen_csv 3000 5 31 >d.csv
expect 0 "$FLYDB" ingest d.csv --name d --db plain.db
expect 0 "$FLYDB" dump --db plain.db --data d
cp "$T/out" want.txt
[ "$(wc -l <want.txt)" -eq 3001 ] || fail "dump of the plain CSV: $(wc -l <want.txt) lines"

gzip -k d.csv
zstd -q d.csv
xz -k d.csv
for f in d.csv.gz d.csv.zst d.csv.xz; do
  expect 0 "$FLYDB" ingest "$f" --name d --db "$f.db"
  expect 0 "$FLYDB" dump --db "$f.db" --data d
  same_file "$T/out" want.txt
  # shellcheck disable=SC2002  # a pipe is what this checks
  cat "$f" | expect 0 "$FLYDB" ingest - --name d --db "stdin-$f.db"
  expect 0 "$FLYDB" dump --db "stdin-$f.db" --data d
  same_file "$T/out" want.txt
  eq "$f: source" "$(q "$f.db" "SELECT source FROM dataset")" "$f"
done
ok "plain, .gz, .zst, .xz and each through standard input: the same dump"

# two gzip members one after the other (as `cat a.gz b.gz`) read as one text
head -n 1001 d.csv | gzip >two.csv.gz
tail -n +1002 d.csv | gzip >>two.csv.gz
expect 0 "$FLYDB" ingest two.csv.gz --name d --db two.db
expect 0 "$FLYDB" dump --db two.db --data d
same_file "$T/out" want.txt
ok "a gzip file of two members"

cp plain.db keep.db
for f in d.csv.gz d.csv.zst d.csv.xz; do
  size=$(wc -c <"$f")
  head -c $((size / 2)) "$f" >"tr-$f"
  expect 1 "$FLYDB" ingest "tr-$f" --name t --db plain.db
  err_has "tr-$f: truncated" "stream after $((size / 2)) bytes"
  same_file plain.db keep.db
  # shellcheck disable=SC2002
  cat "tr-$f" | expect 1 "$FLYDB" ingest - --name t --db plain.db
  err_has "<stdin>: truncated"
  same_file plain.db keep.db
  expect 1 "$FLYDB" ingest "tr-$f" --name t --db new.db
  [ ! -e new.db ] || fail "a failed ingest created new.db"
done
# a flipped byte in the middle: the checksum or the decoder catches it
size=$(wc -c <d.csv.gz)
cp d.csv.gz bad.csv.gz
printf '\377\377\377\377' | dd of=bad.csv.gz bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
expect 1 "$FLYDB" ingest bad.csv.gz --name t --db plain.db
err_has "bad.csv.gz: corrupt gzip stream"
same_file plain.db keep.db
ok "truncated .gz/.zst/.xz (file and stdin) and a corrupt .gz: an error naming the file, the database unchanged"

# SQL query on another database: text cells (sqlite3 .import keeps them as
# TEXT) pass through as written, and REAL/INTEGER cells print exactly.
sqlite3 other.db ".mode csv" ".import d.csv t"
expect 0 "$FLYDB" ingest --from other.db --query "SELECT * FROM t" --name d --db sql.db
expect 0 "$FLYDB" dump --db sql.db --data d
same_file "$T/out" want.txt
sqlite3 other.db "CREATE TABLE r(a REAL, b INTEGER, y INTEGER);
  INSERT INTO r VALUES (0.1, 3, 0), (2.5e-8, -4, 1), (-1e300, 9007199254740993, 1);"
printf 'a,b,y\n0.1,3,0\n2.5e-8,-4,1\n-1e300,9007199254740993,1\n' >r.csv
expect 0 "$FLYDB" ingest r.csv --name r --db r.db
expect 0 "$FLYDB" dump --db r.db --data r
cp "$T/out" want-r.txt
expect 0 "$FLYDB" ingest --from other.db --query "SELECT a, b, y FROM r ORDER BY rowid" --name r --db sql.db
expect 0 "$FLYDB" dump --db sql.db --data r
same_file "$T/out" want-r.txt
eq "query source" "$(q sql.db "SELECT source FROM dataset WHERE name = 'r'")" other.db
cp sql.db keep-sql.db
sum=$(sha256sum <other.db)
expect 1 "$FLYDB" ingest --from other.db --query "SELECT * FROM nope" --name x --db sql.db
err_has "other.db: query 'SELECT * FROM nope': no such table: nope"
expect 1 "$FLYDB" ingest --from other.db --query "DELETE FROM r" --name x --db sql.db
err_has "not a read-only statement"
same_file sql.db keep-sql.db
eq "the queried database is untouched" "$(sha256sum <other.db)" "$sum"
expect 2 "$FLYDB" ingest --from other.db --db sql.db
err_has "--from and --query go together"
expect 2 "$FLYDB" ingest d.csv --query "SELECT 1" --db sql.db
ok "--from DB --query SQL: the same dump; a bad query names itself, nothing written"

# Stata, SPSS and SAS files written by R's haven, with the numbers of a CSV
# printed by R with %.17g (so both hold the same doubles).
if command -v Rscript >/dev/null 2>&1 && Rscript -e 'library(haven)' >/dev/null 2>&1; then
  Rscript -e '
    suppressMessages(library(haven))
    set.seed(5)
    n <- 500
    d <- data.frame(x1 = rnorm(n), x2 = runif(n) * 1e-3, k = sample(-5:5, n, TRUE),
                    y = rbinom(n, 1, 0.4))
    txt <- c("x1,x2,k,y", sprintf("%.17g,%.17g,%d,%d", d$x1, d$x2, d$k, d$y))
    writeLines(txt, "s.csv")
    write_dta(d, "s.dta"); write_sav(d, "s.sav")
    suppressWarnings(write_sas(d, "s.sas7bdat"))' || fail "R could not write the files"
  expect 0 "$FLYDB" ingest s.csv --name s --db s.db
  expect 0 "$FLYDB" dump --db s.db --data s
  cp "$T/out" want-s.txt
  for f in s.dta s.sav s.sas7bdat; do
    expect 0 "$FLYDB" ingest "$f" --name s --db "$f.db"
    expect 0 "$FLYDB" dump --db "$f.db" --data s
    same_file "$T/out" want-s.txt
  done
  ok ".dta, .sav and .sas7bdat written by haven: the same dump as the CSV"

  cp s.db keep-s.db
  size=$(wc -c <s.dta)
  head -c $((size * 2 / 3)) s.dta >cut.dta
  expect 1 "$FLYDB" ingest cut.dta --name t --db s.db
  err_has "cut.dta: ReadStat"
  same_file s.db keep-s.db
  head -c 200 s.dta >hdr.dta
  printf 'garbage that is no Stata header' | dd of=hdr.dta bs=1 seek=20 conv=notrunc 2>/dev/null
  expect 1 "$FLYDB" ingest hdr.dta --name t --db s.db
  err_has "hdr.dta: ReadStat"
  same_file s.db keep-s.db
  expect 1 "$FLYDB" ingest - --name t --db s.db <s.dta
  err_has "cannot be read from standard input"
  same_file s.db keep-s.db
  ok "a truncated and a corrupt .dta, and a .dta on stdin: an error naming the file, nothing written"

  # Value labels as categorical levels: the same dump as the CSV of R's
  # as_factor() (labels, a value without one as its number, NA empty).
  # Needs the typed ingest (categorical columns); skipped without it.
  if "$FLYDB" ingest --help 2>&1 | grep -q -- --categorical; then
    Rscript -e '
      suppressMessages(library(haven))
      set.seed(3); n <- 200
      d <- data.frame(x = rnorm(n), color = labelled(sample(c(1, 2, 3, 4, NA), n, TRUE),
                        c(red = 1, blue = 2, "a \"q\", l" = 3)), y = rbinom(n, 1, 0.5))
      write_dta(d, "l.dta"); write_sav(d, "l.sav")
      f <- as.character(as_factor(d$color, levels = "default"))
      lab <- ifelse(is.na(f), "", paste0("\"", gsub("\"", "\"\"", f), "\""))
      writeLines(c("x,color,y", sprintf("%.17g,%s,%d", d$x, lab, d$y)), "l.csv")' ||
      fail "R could not write the labelled files"
    expect 0 "$FLYDB" ingest l.csv --name l --db l.db
    expect 0 "$FLYDB" dump --db l.db --data l
    cp "$T/out" want-l.txt
    for f in l.dta l.sav; do
      expect 0 "$FLYDB" ingest "$f" --name l --db "$f.db"
      expect 0 "$FLYDB" dump --db "$f.db" --data l
      same_file "$T/out" want-l.txt
    done
    ok ".dta and .sav value labels: the same categorical column as R's as_factor"
  else
    echo "ok - # SKIP value labels: this flydb has no categorical columns"
  fi
else
  echo "ok - # SKIP R with haven is not installed (r-cran-haven): no .dta/.sav/.sas7bdat files to read"
fi
