#!/usr/bin/env bash
# flydb ingest options: --target (a middle and the first column),
# --no-intercept, --precision f32 (values and statistics as stored),
# --page-rows (many pages, exact multiples, one row a page), --name.
. "$(dirname "$0")/lib.sh"

gen_csv 100 5 3 >d.csv

expect 0 "$FLYDB" ingest d.csv --db t.db --target x2 --name mid
eq "target x2" "$(q t.db "SELECT target_name, width, n_features FROM dataset
    WHERE name = 'mid'")" "$(printf 'x2\t6\t5')"
eq "stored order" "$(q t.db "SELECT group_concat(name, ',') FROM (SELECT name
    FROM dataset_column WHERE dataset_id = (SELECT id FROM dataset WHERE name = 'mid')
    ORDER BY idx)")" "(Intercept),x1,x3,x4,y,x2"
check_stats t.db mid d.csv x2 1 1e-9
ok "--target x2 (a middle column) is stored last"

expect 0 "$FLYDB" ingest d.csv --db t.db --no-intercept --name=noicpt
eq "no intercept" "$(q t.db "SELECT has_intercept, width, n_features, target_name
    FROM dataset WHERE name = 'noicpt'")" "$(printf '0\t5\t4\ty')"
check_stats t.db noicpt d.csv "" 0 1e-9
check_pages t.db noicpt
ok "--no-intercept, --name=VALUE"

expect 0 "$FLYDB" ingest d.csv --db t.db --no-intercept --target x1 --name first
check_stats t.db first d.csv x1 0 1e-9
ok "--target on the first column with --no-intercept"

# f32: values are rounded to f32 before the statistics (0.1 -> 0.100000001490116).
{ echo "a,b,y"; awk 'BEGIN { for(i = 0; i < 50; i++) printf "%.3f,%d,%d\n", 0.1 + i / 8, i, i % 2 }'; } >p.csv
expect 0 "$FLYDB" ingest p.csv --db t.db --precision f32 --name p32
expect 0 "$FLYDB" ingest p.csv --db t.db --precision f64 --name p64
eq "f32 prec" "$(q t.db "SELECT prec, raw_bytes FROM dataset WHERE name = 'p32'")" \
   "$(printf '4\t%d' $((50 * 4 * 4)))"
eq "f64 prec" "$(q t.db "SELECT prec, raw_bytes FROM dataset WHERE name = 'p64'")" \
   "$(printf '8\t%d' $((50 * 4 * 8)))"
eq "f32 min of a" "$(q t.db "SELECT c.min FROM dataset_column c JOIN dataset d ON
    d.id = c.dataset_id WHERE d.name = 'p32' AND c.name = 'a'")" 0.100000001490116
eq "f64 min of a" "$(q t.db "SELECT c.min FROM dataset_column c JOIN dataset d ON
    d.id = c.dataset_id WHERE d.name = 'p64' AND c.name = 'a'")" 0.1
check_stats t.db p32 p.csv "" 1 1e-6
check_pages t.db p32
gen_csv 500 4 5 >big.csv
expect 0 "$FLYDB" ingest big.csv --db t.db --precision f32 --name big32
check_stats t.db big32 big.csv "" 1 1e-6
check_pages t.db big32
ok "--precision f32: 4-byte values, statistics of the stored values"

printf 'a,y\n1,0\n1e300,1\n' >huge.csv
expect 1 "$FLYDB" ingest huge.csv --db t.db --precision f32
err_has "huge.csv:3:1" "f32"
ok "--precision f32 refuses a value that does not fit (huge.csv:3:1)"

expect 0 "$FLYDB" ingest d.csv --db t.db --page-rows 7 --name p7
eq "p7 pages" "$(q t.db "SELECT page_rows, n_pages FROM dataset WHERE name = 'p7'")" \
   "$(printf '7\t15')"
check_pages t.db p7
check_stats t.db p7 d.csv "" 1 1e-9
head -n 15 d.csv >d14.csv
expect 0 "$FLYDB" ingest d14.csv --db t.db --page-rows 7 --name p7x2
eq "14 rows in pages of 7" "$(q t.db "SELECT n_rows, n_pages FROM dataset WHERE name = 'p7x2'")" \
   "$(printf '14\t2')"
check_pages t.db p7x2
head -n 11 d.csv >d10.csv
expect 0 "$FLYDB" ingest d10.csv --db t.db --page-rows 1 --name p1
eq "one row a page" "$(q t.db "SELECT n_pages FROM dataset WHERE name = 'p1'")" 10
check_pages t.db p1
expect 0 "$FLYDB" ingest d10.csv --db t.db --page-rows 1000 --name pbig
eq "one partial page" "$(q t.db "SELECT n_pages FROM dataset WHERE name = 'pbig'")" 1
check_pages t.db pbig
ok "--page-rows 7 (15 pages), exact multiple, 1, more than the rows"
only_files . big.csv d.csv d10.csv d14.csv huge.csv p.csv t.db
