#!/usr/bin/env bash
# flydb plot: ingest -> sample --seed 3 -> plot, then checks on the files:
# every expected SVG (trace, autocorrelation and density per parameter; log
# joint, bright count, likelihood evaluations and rows read per run) and
# index.html exist and nothing else; every SVG is well-formed XML with a
# title naming its parameter and the heading and axis label drawn as text
# (PLplot writes each character as a reference, so the text is read by an
# XML parser); index.html shows every SVG; a long run's series are cut to
# at most 2000 points a line; and, when rsvg-convert is there, pictures
# render to PNGs of sensible size that are not one colour.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=f.db
expect 0 "$FLYDB" ingest "$TOY/tiny_logistic.csv" --db $db
expect 0 "$FLYDB" sample --db $db --iters 300 --seed 3 --quiet
run=$(q $db "SELECT max(id) FROM run")

RUN_SVG="run_lp.svg run_bright.svg run_lik_evals.svg run_reads.svg"
PAR_SVG="p1_Intercept_trace.svg p1_Intercept_acf.svg p1_Intercept_density.svg
         p2_x_trace.svg p2_x_acf.svg p2_x_density.svg"
# shellcheck disable=SC2086  # word lists
ALL="$RUN_SVG $(echo $PAR_SVG)"

# check_dir DIR: the expected files, well-formed, titled, all in index.html
check_dir() {
  local d=$1 f
  # shellcheck disable=SC2086
  only_files "$d" index.html $ALL
  for f in $ALL; do
    [ -s "$d/$f" ] || fail "$d/$f is empty"
    grep -q -F "src=\"$f\"" "$d/index.html" || fail "$d/index.html does not show $f"
  done
  # one python for all files: each SVG parses as XML, index.html as HTML
  # shellcheck disable=SC2086
  (cd "$d" && python3 -c '
import html.parser, sys, xml.dom.minidom
for f in sys.argv[1:]:
    try: xml.dom.minidom.parse(f)
    except Exception as e: sys.exit(f"{f} is not well-formed XML: {e}")
html.parser.HTMLParser().feed(open("index.html").read())' $ALL) || fail "$d: malformed files"
  grep -q -F "<title>Trace of (Intercept)</title>" "$d/p1_Intercept_trace.svg" || fail "trace title"
  grep -q -F "<title>Autocorrelation of x</title>" "$d/p2_x_acf.svg" || fail "acf title"
  grep -q -F "<title>Posterior density of x</title>" "$d/p2_x_density.svg" || fail "density title"
  python3 - "$d/p1_Intercept_trace.svg" <<'EOF' || fail "trace heading or x label missing"
import sys, xml.dom.minidom
def text(n):
    return "".join(c.data if c.nodeType == c.TEXT_NODE else text(c) for c in n.childNodes)
texts = {text(t) for t in xml.dom.minidom.parse(sys.argv[1]).getElementsByTagName("text")}
for want in ("Trace of (Intercept)", "iteration", "chain 1", "chain 2", "warm-up"):
    if want not in texts:
        sys.exit(f"{sys.argv[1]}: no text '{want}' among {sorted(texts)[:12]}")
EOF
}

expect 0 "$FLYDB" plot --db $db --out pics
out_has "10 SVG files" "pics/index.html"
check_dir pics
ok "plot: 10 well-formed SVG files (4 per run, 3 per parameter) and an index.html showing them"

# ---- a long run: every path of at most 2000 points ------------------------
expect 0 "$FLYDB" sample --db $db --iters 3000 --chains 3 --seed 4 --quiet
run2=$(q $db "SELECT max(id) FROM run")
expect 0 "$FLYDB" plot $run2 --db $db --out long
check_dir long
python3 - long <<'EOF' || fail "a line has more than 2000 points"
import glob, re, sys
worst = 0
for f in glob.glob(sys.argv[1] + "/*.svg"):
    for d in re.findall(r'(?:<path d|points)="([^"]*)"', open(f).read()):
        n = len(re.findall(r"-?[0-9.]+[ ,]-?[0-9.]+", d))
        worst = max(worst, n)
        if n > 2000:
            print(f, n, "points"); sys.exit(1)
print("largest path:", worst, "points")
EOF
size=$(du -k long/p1_Intercept_trace.svg | cut -f1)
[ "$size" -lt 200 ] || fail "a trace of 3 x 4500 iterations takes $size KB"
ok "long run (3 chains x 4500 iterations): lines cut to <= 2000 points, trace ${size} KB"

# ---- rendering ---------------------------------------------------------------
if command -v rsvg-convert >/dev/null 2>&1; then
  for f in p1_Intercept_trace p2_x_density; do
    rsvg-convert "pics/$f.svg" -o "$T/$f.png" || fail "rsvg-convert failed on $f.svg"
    python3 - "$T/$f.png" <<'EOF' || fail "$f.svg renders badly"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), f"unexpected PNG format {depth}/{ctype}"
bpp = 4 if ctype == 6 else 3
raw, stride, prev, colours, ink = zlib.decompress(idat), w * bpp, bytearray(w * bpp), set(), 0
for y in range(h):
    ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if ft == 1: line[i] = (line[i] + a) & 255
        elif ft == 2: line[i] = (line[i] + b) & 255
        elif ft == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif ft == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3])
        colours.add(px)
        if px != b"\xff\xff\xff": ink += 1
    prev = line
print(f"{sys.argv[1]}: {w}x{h}, {len(data)} bytes, {len(colours)} colours, {100 * ink / (w * h):.1f}% ink")
assert len(data) > 2048, "PNG under 2 KB"
assert w >= 400 and h >= 300, "too small"
assert len(colours) >= 20, "hardly any colours"
assert 0.02 < ink / (w * h) < 0.9, "nearly blank or nearly filled"
EOF
  done
  ok "rsvg-convert renders them to PNGs (> 2 KB, many colours, 2-90% ink)"
else
  echo "SKIP: rsvg-convert not found (package librsvg2-bin): rendering not checked"
fi

# ---- errors -------------------------------------------------------------
expect 2 "$FLYDB" plot --db $db
err_has "--out"
expect 2 "$FLYDB" plot x1 --db $db --out bad
err_has "RUN_ID"
expect 1 "$FLYDB" plot 99 --db $db --out bad
err_has "no run 99"
[ ! -e bad ] || fail "a failed plot created bad/"
ok "usage errors exit 2, a missing run exits 1"
