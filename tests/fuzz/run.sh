#!/bin/sh
# make fuzz: run the libFuzzer target once per mode, in parallel (one core
# each), for the given number of seconds, starting from the committed corpus.
# Each process keeps what it finds in build/fuzz/corpus-<mode>. A crashing
# (or slow, or leaking) input is copied into tests/fuzz/corpus as
# regress-<mode>-<hash>, where `make test` replays it from then on.
#
#   usage: run.sh FUZZER SECONDS MAX_LEN
set -u
bin=$1
secs=$2
maxlen=$3
dir=build/fuzz
corpus=tests/fuzz/corpus

for mode in hier hashed; do
    mkdir -p "$dir/corpus-$mode" "$dir/artifacts-$mode"
    rm -f "$dir/artifacts-$mode"/*
    TW_FUZZ_MODE=$mode "$bin" -max_total_time="$secs" -max_len="$maxlen" \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts-$mode/" \
        "$dir/corpus-$mode" "$corpus" >"$dir/$mode.log" 2>&1 &
    eval "pid_$mode=\$!"
done

status=0
total=0
for mode in hier hashed; do
    eval "pid=\$pid_$mode"
    if wait "$pid"; then rc=0; else rc=$?; fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/$mode.log")
    cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$dir/$mode.log" | sed 's/.*\(cov: [0-9]*\).*/\1/')
    total=$((total + ${execs:-0}))
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $mode: ${execs:-?} executions in $secs s, clean (${cov:-cov ?})"
        continue
    fi
    status=1
    echo "fuzz $mode: FAILED after ${execs:-?} executions (exit $rc); log:"
    grep -E -A 2 'timewheel fuzz|runtime error|ERROR: [A-Za-z]*Sanitizer' \
        "$dir/$mode.log" | head -12
    echo "  (whole log: $dir/$mode.log)"
    for f in "$dir/artifacts-$mode"/*; do
        [ -f "$f" ] || continue
        name=$corpus/regress-$mode-$(basename "$f" | sed 's/^[a-z]*-//' | cut -c1-16)
        cp "$f" "$name"
        echo "fuzz $mode: input saved as $name (make test now replays it;"
        echo "  TW_FUZZ_TRACE=1 $bin $name  shows every step)"
    done
done
echo "fuzz: $total executions in total"
exit $status
