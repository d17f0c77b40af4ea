#!/usr/bin/env bash
# tests/e2e/help-width.sh — every subcommand's --help, and `ranksim --help`, fit 80 and 120
# columns (no line wider, counted in characters), exit 0 on stdout, and print no `?` for a
# character the terminal can show: under C.UTF-8 the text keeps its UTF-8 (no "[OPTION?]", the
# same number of `?` as under the C locale, where it is transliterated to ASCII). TAP output.
#   help-width.sh RANKSIM
set -u
bin=$1
cmds=(run sweep runs report explain trace plot diff prune import match cost nccl-tests list)
echo "1..$(( (${#cmds[@]} + 1) * 2 ))"
n=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # WIDTH ARGS...: one TAP line
  local width=$1; shift
  n=$((n + 1))
  local name="ranksim $* at $width columns"
  if ! COLUMNS=$width LC_ALL=C.UTF-8 "$bin" "$@" >"$tmp/u" 2>"$tmp/e"; then
    echo "not ok $n - $name: exit status $? ($(head -c 200 "$tmp/e"))"; fail=1; return
  fi
  if [ ! -s "$tmp/u" ] || [ -s "$tmp/e" ]; then
    echo "not ok $n - $name: the help is not on stdout alone"; fail=1; return
  fi
  COLUMNS=$width LC_ALL=C "$bin" "$@" >"$tmp/a" 2>/dev/null
  local wide
  wide=$(LC_ALL=C.UTF-8 awk -v w="$width" 'length($0) > w { print NR ": " length($0); exit }' "$tmp/u")
  local wide_a
  wide_a=$(LC_ALL=C awk -v w="$width" 'length($0) > w { print NR ": " length($0); exit }' "$tmp/a")
  local qu qa
  qu=$(tr -cd '?' <"$tmp/u" | wc -c)
  qa=$(tr -cd '?' <"$tmp/a" | wc -c)
  if [ -n "$wide" ] || [ -n "$wide_a" ]; then
    echo "not ok $n - $name: line ${wide:-$wide_a} columns"; fail=1
  elif grep -q 'OPTION?' "$tmp/u" "$tmp/a"; then
    echo "not ok $n - $name: [OPTION?] in the usage line"; fail=1
  elif [ "$qu" != "$qa" ]; then
    echo "not ok $n - $name: $qu '?' under C.UTF-8, $qa under C (a character turned into '?')"
    fail=1
  elif LC_ALL=C grep -q '[^[:print:][:space:]]' "$tmp/a"; then
    echo "not ok $n - $name: non-ASCII bytes under the C locale"; fail=1
  else
    echo "ok $n - $name"
  fi
}
for w in 80 120; do
  check "$w" --help
  for c in "${cmds[@]}"; do
    check "$w" "$c" --help
  done
done
exit $fail
