#!/bin/sh
# nng's aio timers, stock against patched, interleaved in one run (issue 31;
# docs/brokers.md, "nng"). Builds bench/nng/nngbench.c against each
# library (static libnng.a of each tree; the patched one also links
# timewheel, found through PKG_CONFIG_PATH), then for each round, each N
# pending and each number of expire queues runs the stock and the patched
# program one after the other, in an order that alternates, so that a
# change in the machine's load falls on both alike.
#
#   bench.sh SRC STOCK PATCHED OUTDIR
#
# NNG_BENCH_N (default "0 1000 10000 100000"), NNG_BENCH_QUEUES ("1 0":
# one queue, and nng's default of one per CPU), NNG_BENCH_SECONDS (3 s of
# the re-armed sleep per run), NNG_BENCH_ROUNDS (3). Raw lines go to
# OUTDIR/raw.txt, the medians over the rounds (and the range) to
# OUTDIR/table.txt and stdout.
set -eu
src=$1 stock=$2 patched=$3 out=$4
ns=${NNG_BENCH_N:-"0 1000 10000 100000"}
queues=${NNG_BENCH_QUEUES:-"1 0"}
seconds=${NNG_BENCH_SECONDS:-3}
rounds=${NNG_BENCH_ROUNDS:-3}
mkdir -p "$out"
cc=${CC:-cc}
flags="-std=c11 -O2 -g -Wall -Wextra -Werror"
$cc $flags -I"$stock/include" -o "$out/nngbench-stock" "$src" \
    "$stock/build/libnng.a" -lpthread
tw_libs=$(pkg-config --libs timewheel)
tw_dir=$(pkg-config --variable=libdir timewheel)
$cc $flags -I"$patched/include" -o "$out/nngbench-patched" "$src" \
    "$patched/build/libnng.a" $tw_libs -Wl,-rpath,"$tw_dir" -lpthread

echo "# nng-bench $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/raw.txt"
r=1
flip=0
while [ "$r" -le "$rounds" ]; do
    for n in $ns; do
        for q in $queues; do
            if [ "$flip" = 0 ]; then order="stock patched"; flip=1
            else order="patched stock"; flip=0; fi
            for b in $order; do
                line=$("$out/nngbench-$b" "$n" "$q" "$seconds" "$r")
                echo "build=$b round=$r load=$(cut -d' ' -f1 /proc/loadavg) $line" | tee -a "$out/raw.txt"
            done
        done
    done
    r=$((r + 1))
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/raw.txt"
python3 "$(dirname "$0")/table.py" "$out/raw.txt" | tee "$out/table.txt"
