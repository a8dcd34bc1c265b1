#!/bin/sh
# CI's run of nng's own tests (make nng-ci), in about half the time of
# make nng-test: nng's ctest on the patched build alone. The stock build
# is only configured, for its list of tests (ctest -N), which must be the
# patched one's: a test the patches dropped would pass unseen. A test that
# fails is run again on the patched build, up to NNG_CTEST_RERUNS times
# (2), and reported as a flake when it passes (nng's reqstress, tcp_test
# and multistress fail now and then on "Address in use" on either build).
# Only a test that fails every time makes the stock library built too and
# tests/nng/ctest.sh run, which tells a test that fails on both builds
# (nng's own) from one that fails on ours alone.
#
#   ci.sh STOCK PATCHED OUTDIR
#
# Needs the patched tree built (make nng-build-patched) and the stock tree
# made (tree.sh); builds the stock one itself when needed.
set -eu
stock=$1 patched=$2 out=$3
here=$(dirname "$0")
exclude=${NNG_CTEST_EXCLUDE:-'^(nng\.platform\.resolver_test|nng\.httpclient)$'}
mkdir -p "$out"

# The test names a configured tree has, excluded ones left out.
listed() {
    ctest --test-dir "$1/build" -N -E "$exclude" |
        sed -n 's/^ *Test *#[0-9]*: *\([^ ]*\).*/\1/p' | sort -u
}

sh "$here/build.sh" "$stock" 1 configure
listed "$stock" > "$out/list-stock.txt"
listed "$patched" > "$out/list-patched.txt"
if ! [ -s "$out/list-stock.txt" ] || ! cmp -s "$out/list-stock.txt" "$out/list-patched.txt"; then
    echo "nng-ci: the stock and the patched build do not list the same tests:"
    diff "$out/list-stock.txt" "$out/list-patched.txt" || true
    exit 1
fi

# $1 log; extra ctest arguments follow. The names of the tests that did
# not pass go to $1.fail.
run() {
    log=$1
    shift
    ctest --test-dir "$patched/build" -j2 --timeout 300 -E "$exclude" \
        --output-on-failure "$@" > "$log" 2>&1 || true
    grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" | grep -v 'Passed' |
        sed 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .*/\1/' | sort -u > "$log.fail"
}

start=$(date +%s)
total=$(wc -l < "$out/list-patched.txt")
run "$out/ci-patched.log"
passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Passed' "$out/ci-patched.log" || true)
echo "ctest (patched): $passed of $total passed in $(( $(date +%s) - start )) s"
if [ "$passed" != "$total" ] && ! [ -s "$out/ci-patched.log.fail" ]; then
    echo "nng-ci: ctest ran $passed of $total tests (log: $out/ci-patched.log)"
    exit 1
fi
cp "$out/ci-patched.log.fail" "$out/ci-left.txt"
i=1
while [ -s "$out/ci-left.txt" ] && [ "$i" -le "${NNG_CTEST_RERUNS:-2}" ]; do
    regex="^($(paste -sd'|' "$out/ci-left.txt" | sed 's/\./\\./g'))\$"
    run "$out/ci-rerun-$i.log" -R "$regex"
    : > "$out/ci-still.txt"
    for t in $(cat "$out/ci-left.txt"); do
        if grep -qE "Test +#[0-9]+: $(echo "$t" | sed 's/\./\\./g') .*Passed" "$out/ci-rerun-$i.log"; then
            echo "nng-ci: flake: $t failed, then passed on rerun $i"
        else
            echo "$t" >> "$out/ci-still.txt"
        fi
    done
    mv "$out/ci-still.txt" "$out/ci-left.txt"
    i=$((i + 1))
done
if ! [ -s "$out/ci-left.txt" ]; then
    echo "nng-ci: the same $total tests as the stock build lists pass on the patched nng (excluded: $exclude)"
    exit 0
fi
echo "nng-ci: $(paste -sd' ' "$out/ci-left.txt") failed every time on the patched build; building the stock one to tell nng's failures from ours"
sh "$here/build.sh" "$stock" "${NNG_JOBS:-2}"
exec sh "$here/ctest.sh" "$stock" "$patched" "$out"
