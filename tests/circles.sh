#!/bin/sh
# Circles between the files of a room (issue 29): for each pair of files of
# one folder, does each call into the other? A circle means a helper lives
# in the wrong file: a reader of either file goes back and forth. Read from
# the compiled objects (nm), so that a call made through a header's inline
# function counts for the .c file that includes it, and a .c file and its
# own header are one unit by construction.
#
#   sh tests/circles.sh [-a ALLOWFILE] [-k ROOM]... SRCDIR=OBJDIR...
#
# Each SRCDIR=OBJDIR names a room and the folder of its objects (one .o per
# .c, named after it). A symbol defined in one object and undefined in
# another of the same room is an edge; two files with an edge each way are
# a circle. Functions and objects both count: a variable of one file read
# by the other ties them as a call does.
#
# ALLOWFILE lists the pairs judged inherent to a protocol, one a line:
#   ROOM FILE_A FILE_B reason...
# (FILE_A and FILE_B sorted; lines starting with # are comments). An
# allowed pair is printed with its reason, an allow line that matches no
# circle is reported as stale (it fails the check: the list stays true).
# -k ROOM: a room whose circles are known and owned elsewhere; printed,
# not failed (the list of such rooms is in the make target that calls this).
# Exit 1 on any other circle.
set -eu
allow=/dev/null
known=""
while [ $# -gt 0 ]; do
    case $1 in
    -a) allow=$2; shift 2 ;;
    -k) known="$known $2"; shift 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-a ALLOW] [-k ROOM]... SRCDIR=OBJDIR..." >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# One line per (room, file, def|use, symbol) over every room.
for pair in "$@"; do
    room=${pair%%=*}
    objdir=${pair#*=}
    [ -d "$objdir" ] || { echo "circles: $objdir (for $room) is not built" >&2; exit 2; }
    for o in "$objdir"/*.o; do
        [ -e "$o" ] || continue
        f=$(basename "$o" .o).c
        nm --defined-only -g "$o" | awk -v r="$room" -v f="$f" \
            'NF == 3 { print r, f, "def", $3 }'
        nm -u "$o" | awk -v r="$room" -v f="$f" '{ print r, f, "use", $NF }'
    done
done > "$tmp/syms"

# Edges a -> b (a uses what b defines), with one symbol as the witness, then
# the pairs with an edge each way, checked against the allow-list.
rc=0
awk -v known="$known" -v allowfile="$allow" '
BEGIN {
    n = split(known, k, " ")
    for (i = 1; i <= n; i++) isknown[k[i]] = 1
    while ((getline line < allowfile) > 0) {
        if (line ~ /^[ \t]*(#|$)/) continue
        split(line, w, " ")
        key = w[1] " " w[2] " " w[3]
        why = line
        sub(/^[^ ]+ +[^ ]+ +[^ ]+ +/, "", why)
        allowed[key] = why
    }
}
$3 == "def" { owner[$1 " " $4] = $2 }
$3 == "use" { use[NR] = $0 }
END {
    for (i in use) {
        split(use[i], u, " ")
        o = owner[u[1] " " u[4]]
        if (o == "" || o == u[2]) continue
        e = u[1] " " u[2] " " o
        if (!(e in edge) || u[4] < edge[e]) edge[e] = u[4]
    }
    bad = 0; nknown = 0; nallowed = 0
    for (e in edge) {
        split(e, p, " ")
        if (p[2] > p[3]) continue
        back = p[1] " " p[3] " " p[2]
        if (!(back in edge)) continue
        msg = sprintf("%s: %s <-> %s (%s uses %s, %s uses %s)", p[1], p[2], p[3],
                      p[2], edge[e], p[3], edge[back])
        if (e in allowed) {
            printf "allowed  %s: %s\n", msg, allowed[e]
            used[e] = 1; nallowed++
        } else if (p[1] in isknown) {
            printf "known    %s\n", msg; nknown++
        } else {
            printf "CIRCLE   %s\n", msg; bad++
        }
    }
    for (a in allowed)
        if (!(a in used)) {
            printf "STALE    allow-list line with no circle: %s\n", a; bad++
        }
    printf "circles: %d to fix, %d known (owned elsewhere), %d allowed\n",
           bad, nknown, nallowed
    exit bad > 0
}' "$tmp/syms" > "$tmp/out" || rc=$?
grep -v '^circles:' "$tmp/out" | sort -k2 || true
grep '^circles:' "$tmp/out"
exit $rc
