# tests/bench/paired.sh — sourced by the benches that time two or three commands in turn
# (bench-sweep-jobs.sh, bench-serve-timeline.sh): each round's wall and CPU seconds, medians,
# and ratios taken pair by pair. The caller sets $tmp (a private folder, emptied of *.db files
# before each command).

# Runs CMD... (fresh databases in $tmp) and appends "wall cpu" (seconds; CPU = user + system of
# the command and its children) to $tmp/NAME.
paired_timed() { # NAME CMD...
    name=$1
    shift
    rm -f "$tmp"/*.db "$tmp"/*.db-*
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$@"
    t1=$(date +%s.%N)
    read -r u s <"$tmp/cpu"
    echo "$t0 $t1 $u $s" | awk '{ printf "%.3f %.3f\n", $2 - $1, $3 + $4 }' >>"$tmp/$name"
}

# The median of the numbers on standard input, one a line.
paired_med() {
    sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Median of column COL (1 wall, 2 CPU) of $tmp/NAME.
paired_col() { # NAME COL
    cut -d' ' -f"$2" "$tmp/$1" | paired_med
}

# Median over the rounds of FACTOR x A's column COL / B's (the files' lines paired in order).
paired_ratio() { # A B COL [FACTOR]
    paste -d' ' "$tmp/$1" "$tmp/$2" | awk -v c="$3" -v f="${4:-1}" '{ print f * $c / $(c + 2) }' |
        paired_med
}
