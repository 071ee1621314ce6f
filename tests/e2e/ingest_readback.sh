#!/usr/bin/env bash
# Ingest -> dump reads back exactly the values of the CSV: bit for bit in f64
# (random doubles printed with 17 digits, extremes, subnormals, -0), and the
# f32 rounding of each value in f32; through several pages and page sizes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
flydb=$1
cd "$T"

python3 - <<'PY'
import random, struct
random.seed(11)
vals = [0.0, -0.0, 1e-300, -2.5e-308, 5e-324, 1.7976931348623157e308, -1e300,
        0.1, 1/3, 123456789.123456789, -7.0, 2**-1074 * 3]
with open("exact.csv", "w") as f:
    f.write("a,b,c,y\n")
    for i in range(2000):
        row = []
        for j in range(3):
            if random.random() < 0.05:
                v = random.choice(vals)
            else:
                # random bit patterns of finite doubles
                while True:
                    v = struct.unpack("<d", struct.pack("<Q", random.getrandbits(64)))[0]
                    if v == v and abs(v) != float("inf"):
                        break
            row.append(repr(v))
        row.append(str(random.randint(0, 1)))
        f.write(",".join(row) + "\n")
PY

"$flydb" ingest exact.csv --db e.db --page-rows 97 2> /dev/null
"$flydb" dump --db e.db > back.csv
python3 - <<'PY'
import csv, math, struct, sys
def bits(x): return struct.pack("<d", x)
a = list(csv.reader(open("exact.csv"))); b = list(csv.reader(open("back.csv")))
assert a[0] == b[0], (a[0], b[0])
assert len(a) == len(b), (len(a), len(b))
bad = sum(1 for ra, rb in zip(a[1:], b[1:]) for x, y in zip(ra, rb) if bits(float(x)) != bits(float(y)))
if bad: sys.exit(f"f64: {bad} values differ after ingest + dump")
PY
ok "f64: 8000 values (random bit patterns, extremes, subnormals, -0) read back bit for bit"

"$flydb" dump --db e.db --intercept > withicpt.csv
[ "$(sed -n 1p withicpt.csv)" = "(Intercept),a,b,c,y" ] || fail "--intercept header"
[ "$(cut -d, -f1 withicpt.csv | sed 1d | sort -u)" = "1" ] || fail "--intercept prints 1 first"
ok "dump --intercept"

# f32: each value reads back as its float32 rounding (finite ones only)
python3 - <<'PY'
import random
random.seed(5)
with open("f32.csv", "w") as f:
    f.write("a,b,y\n")
    for i in range(1500):
        f.write(f"{random.gauss(0, 1e3)!r},{random.uniform(-1, 1)!r},{i % 2}\n")
PY
"$flydb" ingest f32.csv --db e.db --name f32 --precision f32 2> /dev/null
"$flydb" dump --db e.db --data f32 > back32.csv
python3 - <<'PY'
import csv, struct, sys
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
a = list(csv.reader(open("f32.csv"))); b = list(csv.reader(open("back32.csv")))
assert len(a) == len(b)
bad = sum(1 for ra, rb in zip(a[1:], b[1:]) for x, y in zip(ra, rb) if f32(float(x)) != float(y))
if bad: sys.exit(f"f32: {bad} values differ from their f32 rounding")
PY
ok "f32: 4500 values read back as their f32 rounding"
