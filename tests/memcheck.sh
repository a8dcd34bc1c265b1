#!/bin/sh
# make memcheck's run (tests/extra.mk): the Criterion suite under valgrind's
# memcheck, in JOBS shards at once. Criterion's own -j2 cannot be used (its
# runner then leaks a block of its own under valgrind), so each shard is a
# runner of its own at -j1, given its share of the suites by name; valgrind
# runs one thread at a time, so JOBS shards keep JOBS cores busy.
#
#   memcheck.sh TWTEST LOGDIR JOBS EXCLUDE -- VALGRIND [ARGS...]
#
# EXCLUDE: an extended regular expression over "suite/test"; the tests it
# matches are left out. VALGRIND and its arguments are run with
# --log-file=LOGDIR/%p.log added: one log per process (valgrind follows
# Criterion's children), each of which must be clean. Fails when a shard
# fails, when a log has an error or a leak, or when the shards together did
# not run every test the list kept.
set -eu
bin=$1 logs=$2 jobs=$3 exclude=$4
shift 4
[ "$1" = -- ] && shift

rm -rf "$logs" && mkdir -p "$logs"
"$bin" --list > "$logs/list.txt"
# "suite/test" for every test of the binary, in its order.
sed -n 's/^\([A-Za-z0-9_]*\): [0-9]* tests*$/S \1/p
    s/^[^A-Za-z0-9_]* \([A-Za-z0-9_]*\)$/T \1/p' "$logs/list.txt" |
    awk '$1 == "S" { s = $2; next } { print s "/" $2 }' |
    grep -Ev "$exclude" > "$logs/tests.txt" || true
total=$(wc -l < "$logs/tests.txt")
[ "$total" -gt 0 ] || { echo "memcheck: no test left to run"; exit 1; }

# The shards, by suite: each suite to the shard with the fewest tests so
# far, biggest suites first. A suite that lost tests to EXCLUDE is named
# test by test, a whole one as "suite/*" (Criterion's pattern has a length
# limit, about 4 kB).
sed -n 's/^\([A-Za-z0-9_]*\): \([0-9]*\) tests*$/\1 \2/p' "$logs/list.txt" > "$logs/suites.txt"
awk -v n="$jobs" '
    FILENAME == ARGV[1] { listed[$1] = $2; next }
    { split($0, p, "/"); kept[p[1]]++; names[p[1]] = names[p[1]] "|" $0 }
    END {
        for (s in kept) order[++k] = s
        for (i = 1; i <= k; i++)            # biggest first, then by name
            for (j = i + 1; j <= k; j++)
                if (kept[order[j]] > kept[order[i]] ||
                    (kept[order[j]] == kept[order[i]] && order[j] < order[i])) {
                    t = order[i]; order[i] = order[j]; order[j] = t
                }
        for (i = 1; i <= k; i++) {
            s = order[i]; best = 0
            for (j = 1; j < n; j++)
                if (load[j] < load[best]) best = j
            load[best] += kept[s]
            part = kept[s] == listed[s] ? s "/*" : substr(names[s], 2)
            shard[best] = shard[best] (shard[best] == "" ? "" : "|") part
        }
        for (j = 0; j < n; j++) print shard[j]
    }' "$logs/suites.txt" "$logs/tests.txt" > "$logs/shards.txt"

i=0
while read -r pattern; do
    if [ -n "$pattern" ]; then
        ( rc=0; "$@" --log-file="$logs/%p.log" "$bin" -j1 --filter "@($pattern)" \
            > "$logs/shard$i.out" 2>&1 || rc=$?; echo $rc > "$logs/shard$i.rc" ) &
    fi
    i=$((i + 1))
done < "$logs/shards.txt"
wait

status=0 ran=0
for out in "$logs"/shard*.out; do
    cat "$out"
    rc=$(cat "${out%.out}.rc")
    [ "$rc" = 0 ] || { echo "memcheck: $(basename "$out" .out) exited with $rc"; status=1; }
    n=$(sed -n 's/.*Synthesis: Tested: \([0-9]*\) .*/\1/p' "$out" | tail -1)
    ran=$((ran + ${n:-0}))
done
if [ "$ran" != "$total" ]; then
    echo "memcheck: the shards ran $ran tests of the $total listed"
    status=1
fi
bad=$(grep -L 'ERROR SUMMARY: 0 errors' "$logs"/*.log || true)
leaky=$(grep -L 'All heap blocks were freed' "$logs"/*.log || true)
if [ -n "$bad$leaky" ]; then
    echo "memcheck: errors or leaks in:" $bad $leaky
    status=1
fi
[ "$status" = 0 ] || exit 1
echo "memcheck: $total tests in $jobs shards, $(ls "$logs"/*.log | wc -l) processes, no error, every heap block freed"
