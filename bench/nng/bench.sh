#!/bin/sh
# nng's aio timers, stock against patched, interleaved in one run (issue 31;
# docs/brokers.md, "nng"). Builds bench/nng/nngbench.c against each
# library (static libnng.a of each tree; the patched one also links
# timewheel, found through PKG_CONFIG_PATH), then for each round, each N
# pending and each number of expire queues runs the stock and the patched
# program one after the other, in an order that alternates, so that a
# change in the machine's load falls on both alike.
#
#   bench.sh SRC STOCK PATCHED OUTDIR [FIX]
#
# FIX: a tree with the series' first patch alone (the expire loop's wait),
# library built: it runs too, with N = 0 and 10^3 on one queue (build=fix).
#
# NNG_BENCH_N (default "0 1000 10000 100000"), NNG_BENCH_QUEUES ("1 0":
# one queue, and nng's default of one per CPU), NNG_BENCH_SECONDS (3 s of
# the re-armed sleep per run), NNG_BENCH_ROUNDS (3). Raw lines go to
# OUTDIR/raw.txt, the medians over the rounds (and the range) to
# OUTDIR/table.txt and stdout (NNG_BENCH_RT: below). Then the keepalive workload (keepalive.c,
# NNG_BENCH_KA_N, default "10000 100000", empty: none) on both, and the layer
# comparison (layer.c) on the installed timewheel.
set -eu
src=$1 stock=$2 patched=$3 out=$4 fix=${5:-}
ns=${NNG_BENCH_N:-"0 1000 10000 100000"}
queues=${NNG_BENCH_QUEUES:-"1 0"}
seconds=${NNG_BENCH_SECONDS:-3}
rounds=${NNG_BENCH_ROUNDS:-3}
# NNG_BENCH_RT=1 runs every program under SCHED_FIFO (chrt -f 1), so that
# on a machine loaded by others the figures are nng's own and not the
# time a woken thread waits for a CPU; the run says which it was, and
# writes into OUTDIR-rt.
rt=env
if [ "${NNG_BENCH_RT:-0}" = 1 ]; then
    chrt -f 1 true 2>/dev/null || { echo "bench.sh: NNG_BENCH_RT=1 needs chrt -f (CAP_SYS_NICE)" >&2; exit 1; }
    rt="chrt -f 1"
    out=$out-rt
fi
mkdir -p "$out"
cc=${CC:-cc}
flags="-std=c11 -O2 -g -Wall -Wextra -Werror"
$cc $flags -I"$stock/include" -o "$out/nngbench-stock" "$src" \
    "$stock/build/libnng.a" -lpthread
tw_libs=$(pkg-config --libs timewheel)
tw_dir=$(pkg-config --variable=libdir timewheel)
$cc $flags -I"$patched/include" -o "$out/nngbench-patched" "$src" \
    "$patched/build/libnng.a" $tw_libs -Wl,-rpath,"$tw_dir" -lpthread
here=$(dirname "$0")
if [ -n "$fix" ]; then
    $cc $flags -I"$fix/include" -o "$out/nngbench-fix" "$src" \
        "$fix/build/libnng.a" -lpthread
fi
$cc $flags -I"$stock/include" -o "$out/keepalive-stock" "$here/keepalive.c" \
    "$stock/build/libnng.a" -lpthread
$cc $flags -I"$patched/include" -o "$out/keepalive-patched" \
    "$here/keepalive.c" "$patched/build/libnng.a" $tw_libs \
    -Wl,-rpath,"$tw_dir" -lpthread
# The layer question (core wheel under nng's lock, or the service).
$cc $flags $(pkg-config --cflags timewheel-service) -o "$out/layer" \
    "$here/layer.c" $(pkg-config --libs timewheel-service timewheel) \
    -Wl,-rpath,"$tw_dir" -Wl,--disable-new-dtags -lpthread

sched="SCHED_OTHER (the default)"
[ "$rt" = env ] || sched="SCHED_FIFO 1 (chrt -f 1)"
echo "# nng-bench $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs, $sched; load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/raw.txt"
r=1
flip=0
while [ "$r" -le "$rounds" ]; do
    for n in $ns; do
        for q in $queues; do
            if [ "$flip" = 0 ]; then order="stock patched"; flip=1
            else order="patched stock"; flip=0; fi
            for b in $order; do
                line=$($rt "$out/nngbench-$b" "$n" "$q" "$seconds" "$r")
                echo "build=$b round=$r load=$(cut -d' ' -f1 /proc/loadavg) $line" | tee -a "$out/raw.txt"
            done
            if [ -n "$fix" ] && [ "$q" = 1 ] && [ "$n" -le 1000 ]; then
                line=$($rt "$out/nngbench-fix" "$n" "$q" "$seconds" "$r")
                echo "build=fix round=$r load=$(cut -d' ' -f1 /proc/loadavg) $line" | tee -a "$out/raw.txt"
            fi
        done
    done
    r=$((r + 1))
done
# A broker's keepalive timers, one per client (keepalive.c).
ka_ns=${NNG_BENCH_KA_N-"10000 100000"}
for n in $ka_ns; do
    for b in stock patched; do
        line=$($rt "$out/keepalive-$b" "$n" "${NNG_BENCH_KA_SECONDS:-6}")
        echo "keepalive build=$b load=$(cut -d' ' -f1 /proc/loadavg) $line" | tee -a "$out/raw.txt"
    done
done
# Arm + cancel on each layer of timewheel, 10^5 pending, three rounds.
for r in 1 2 3; do
    $rt "$out/layer" 100000 200000 | sed "s/^/layer round=$r load=$(cut -d' ' -f1 /proc/loadavg) /" | tee -a "$out/raw.txt"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/raw.txt"
python3 "$(dirname "$0")/table.py" "$out/raw.txt" --dat "$out/plot.dat" | tee "$out/table.txt"
if command -v gnuplot >/dev/null; then
    gnuplot -e "dat='$out/plot.dat'; png='$out/nng.png'; sub='$(head -1 "$out/raw.txt" | sed "s/^# nng-bench //; s/'//g"), median of $rounds rounds'" "$(dirname "$0")/plot.gp"
    echo "plot: $out/nng.png (docs/img/nng.png is a copy of one run's)"
fi
