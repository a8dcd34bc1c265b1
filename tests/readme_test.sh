#!/bin/sh
# Compile the README's example against the library, run it, and compare its
# output with the output the README shows.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
extract() { # the fenced block between <!-- $1:begin --> and <!-- $1:end -->
    sed -n "/<!-- $1:begin -->/,/<!-- $1:end -->/p" README.md | sed '1,2d;$d' |
        sed '$d'
}
extract example > "$tmp/example.c"
extract output > "$tmp/expected.txt"
test -s "$tmp/example.c" && test -s "$tmp/expected.txt"
make -s --no-print-directory lib SAN= >/dev/null
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude -o "$tmp/example" \
    "$tmp/example.c" build/default/libtimewheel.a -lpthread -lm
"$tmp/example" > "$tmp/actual.txt"
diff -u "$tmp/expected.txt" "$tmp/actual.txt"
echo "README example: passed"
