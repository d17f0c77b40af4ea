#!/usr/bin/env bash
# tests/layers/check.sh — the layering of doc/ARCHITECTURE.md checked on the code itself (TAP
# output; exit 1 on any breach):
#   1. every file of src/ sits in a wing;
#   2. nothing depends against the order: between the top folders src -> model -> sched -> net,
#      and between the wings of src/ as ALLOWED below (and src/README.md) says;
#   3. no circle between modules;
#   4. only src/store/ includes <sqlite3.h>.
# A module is NAME.c with NAME.h, NAME-private.h (its inside header) and NAME-PART.c when no
# NAME-PART.h exists (a part of NAME.h's implementation in a file of its own). Module A depends
# on B when A #includes a header of B, or, given the built static libraries, when A's object
# uses a function or variable that B's object defines (nm): a circle of calls is a circle too.
#   check.sh SOURCE_ROOT [LIBRARY.a ...]
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
shift || true
libs=()
for lib in "$@"; do libs+=("$(realpath "$lib")"); done # meson gives them relative to the build
cd "$root" || exit 1
# What each folder may depend on besides itself. Keep in step with src/README.md.
allowed='
net:
sched: net
model: sched net
src/util:
src/store: src/util model sched net
src/input: src/util model sched net
src/import: src/util sched net
src/output: src/store src/util model sched net
src/run: src/input src/import src/store src/util model sched net
src/cli: src/run src/input src/import src/output src/store src/util model sched net
'
files=$(git ls-files 'src/*.[ch]' 'model/*.[ch]' 'sched/*.[ch]' 'net/*.[ch]' 2>/dev/null) ||
  files=$(find src model sched net -name '*.[ch]')
{
  # "allow FOLDER DEP..." lines, then "inc FILE TARGET" / "sqlite FILE", then nm's lines.
  printf '%s\n' "$allowed" | sed -n 's/^\([^:]*\):\(.*\)$/allow \1 \2/p'
  for f in $files; do
    sed -n "s|^[[:space:]]*#[[:space:]]*include[[:space:]]*\"\([^\"]*\)\".*|inc $f \1|p;
            s|^[[:space:]]*#[[:space:]]*include[[:space:]]*<sqlite3\.h>.*|sqlite $f|p" "$f"
    echo "file $f"
  done
  for lib in "${libs[@]}"; do nm -A "$lib" 2>/dev/null | sed 's/^/nm /'; done
} | awk -v libs=$# '
function norm(p,   n, i, k, parts, out) { # a/b/../c -> a/c
  n = split(p, parts, "/"); k = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "." || parts[i] == "") continue
    if (parts[i] == ".." && k > 0) { k--; continue }
    out[++k] = parts[i]
  }
  p = out[1]; for (i = 2; i <= k; i++) p = p "/" out[i]
  return p
}
function folder(p,   a) {
  if (p ~ /^src\/[^\/]+\//) { split(p, a, "/"); return "src/" a[2] }
  if (p ~ /^src\//) return "src"
  split(p, a, "/"); return a[1]
}
function module(p,   q) {
  sub(/\.[ch]$/, "", p); sub(/-private$/, "", p)
  for (q = p; !((q ".h") in exists) && q ~ /\/[^\/]*-[^\/]*$/; ) sub(/-[^-\/]*$/, "", q)
  return ((q ".h") in exists) ? q : p
}
function depend(a, b, why,   fa, fb) {
  if (a == b) return
  if (!((a, b) in edge)) { edge[a, b] = why; adj[a] = adj[a] " " b; nodes[a]; nodes[b] }
  fa = folder(a); fb = folder(b)
  if (fa != fb && !((fa, fb) in ok) && !((a, b) in told)) {
    told[a, b] = 1; up++
    print "# against the order: " a " -> " b " (" why "); " fa " may depend on: " (deps[fa] == "" ? "nothing of ours" : deps[fa])
  }
}
function strong(v,   i, k, w, list, comp, size) {
  idx[v] = low[v] = ++counter; stack[++sp] = v; on[v] = 1
  k = split(adj[v], list, " ")
  for (i = 1; i <= k; i++) {
    w = list[i]
    if (!(w in idx)) { strong(w); if (low[w] < low[v]) low[v] = low[w] }
    else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
  }
  if (low[v] == idx[v]) {
    comp = ""; size = 0
    do { w = stack[sp--]; on[w] = 0; comp = comp " " w; size++ } while (w != v)
    if (size > 1) { circles++; print "# circle:" comp }
  }
}
$1 == "allow" { layer[$2] = 1; deps[$2] = ""; for (i = 3; i <= NF; i++) { ok[$2, $i] = 1; deps[$2] = deps[$2] " " $i } next }
$1 == "file" { exists[$2] = 1; if (!(folder($2) in layer)) { stray++; print "# " $2 ": in no layer (src/ has wings only)" } next }
$1 == "inc" { incs[++ninc] = $2 " " $3; next }
$1 == "sqlite" { if (folder($2) != "src/store") { sqlite++; print "# " $2 " includes <sqlite3.h>: only src/store/ speaks SQL" } next }
$1 == "nm" {
  # nm -A: LIB:OBJECT:VALUE TYPE NAME or LIB:OBJECT: U NAME; objects are FOLDER_FILE.c.o
  line = substr($0, 4); n = split(line, f, ":"); obj = f[2]; sub(/.*\//, "", obj)
  if (obj !~ /\.c\.o$/ || obj ~ /^meson-generated/) next
  sub(/\.c\.o$/, "", obj); k = split(obj, part, "_")
  if (part[1] == "src") { src = "src/" part[2]; start = 3 } else { src = part[1]; start = 2 }
  for (i = start; i <= k; i++) src = src "/" part[i]
  m = split(f[3], w, " "); type = w[m - 1]; name = w[m]
  if (type == "U") uses[++nuse] = module(src) " " name
  else if (type ~ /^[TDRB]$/) { defs[name] = module(src); ndefs++ }
  next
}
END {
  if (libs && !ndefs) { print "# the libraries gave no symbols (nm missing, or LTO objects?)"; stray++ }
  for (i = 1; i <= ninc; i++) {
    split(incs[i], a, " "); from = a[1]; d = from; sub(/\/[^\/]*$/, "", d)
    t = norm(d "/" a[2])
    if (!(t in exists)) continue # a generated or system header
    depend(module(from), module(t), "#include")
  }
  for (i = 1; i <= nuse; i++) {
    split(uses[i], a, " ")
    if (a[2] in defs) depend(a[1], defs[a[2]], "calls " a[2])
  }
  for (v in nodes) if (!(v in idx)) strong(v)
  print "1..4"
  print (stray ? "not ok" : "ok") " 1 - every file of src/ sits in a wing" (stray ? ": " stray : "")
  print (up ? "not ok" : "ok") " 2 - nothing depends against the order" (up ? ": " up : "")
  print (circles ? "not ok" : "ok") " 3 - no circle" (circles ? ": " circles : "")
  print (sqlite ? "not ok" : "ok") " 4 - only src/store/ includes sqlite3.h" (sqlite ? ": " sqlite : "")
  exit (stray || up || circles || sqlite) ? 1 : 0
}'
