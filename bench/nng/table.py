#!/usr/bin/env python3
"""The table of an nng-bench run (bench/nng/bench.sh): for each number of
expire queues, N pending and build, the median over the rounds of each
metric and its range (min-max), as a Markdown table; with --dat FILE, the
medians as whitespace-separated columns for gnuplot (bench/nng/plot.gp).

    table.py RAW [--dat FILE]
"""
import statistics
import sys

METRICS = [
    ("cpu_per_wake_us", "CPU per expire wake-up, us"),
    ("sleep_p50_ms", "1 ms sleep late p50, ms"),
    ("sleep_p99_ms", "1 ms sleep late p99, ms"),
    ("sleep_max_ms", "1 ms sleep late max, ms"),
    ("burst_p50_ms", "burst late p50, ms"),
    ("burst_p99_ms", "burst late p99, ms"),
    ("burst_max_ms", "burst late max (last), ms"),
    ("arm_cancel_ns", "arm + cancel, ns"),
    ("bytes_per_aio", "bytes per aio"),
]


def parse(path):
    runs = {}
    with open(path) as f:
        for line in f:
            if line.startswith(("#", "keepalive", "layer")) or "=" not in line:
                continue
            kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
            key = (int(kv["queues"]), int(kv["n"]), kv["build"])
            runs.setdefault(key, []).append(kv)
    return runs


def fmt(v):
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def cell(rows, m):
    vals = [float(r[m]) for r in rows]
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt(med)
    return "%s (%s-%s)" % (fmt(med), fmt(min(vals)), fmt(max(vals)))


def extra(path):
    """The keepalive workload's lines as they are, and the layer
    comparison's medians."""
    ka, layer = [], {}
    with open(path) as f:
        for line in f:
            kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
            if line.startswith("keepalive"):
                ka.append(kv)
            elif line.startswith("layer"):
                layer.setdefault(kv["layer"], []).append(kv)
    if ka:
        print("\nkeepalive (one run each)\n")
        print("| clients | build | silent noticed | late p50 / p99 / max, ms "
              "| packets/s (of) | expire threads' CPU, ms/s |")
        print("|---|---|---|---|---|---|")
        for kv in ka:
            print("| %s | %s | %s of %s | %s / %s / %s | %s (%s) | %s |" % (
                kv["clients"], kv["build"], kv["noticed"], kv["silent"],
                kv["late_p50_ms"], kv["late_p99_ms"], kv["late_max_ms"],
                kv["packets_per_s"], kv["of"], kv["expire_cpu_ms_per_s"]))
    if layer:
        print("\nlayer, 10^5 pending: median (min-max)\n")
        print("| layer | arm + cancel, ns | heap per pending timer, bytes |")
        print("|---|---|---|")
        for name, rows in layer.items():
            print("| %s | %s | %s |" % (name, cell(rows, "arm_cancel_ns"),
                                         cell(rows, "heap_per_timer")))


def main():
    runs = parse(sys.argv[1])
    qs = sorted({k[0] for k in runs})
    ns = sorted({k[1] for k in runs})
    for q in qs:
        threads = {r["threads"] for k, v in runs.items() if k[0] == q
                   for r in v}
        name = "1 queue" if q == 1 else "default queues (%s)" % (
            ",".join(sorted(threads)) if q == 0 else q)
        print("\n%s: median (min-max) of %d rounds\n" % (
            name, max(len(v) for v in runs.values())))
        print("| N pending | build | " + " | ".join(l for _, l in METRICS)
              + " |")
        print("|---|---|" + "---|" * len(METRICS))
        for n in ns:
            for b in ("stock", "fix", "patched"):
                if (q, n, b) in runs:
                    print("| %d | %s | " % (n, b) + " | ".join(
                        cell(runs[(q, n, b)], m) for m, _ in METRICS) + " |")
    extra(sys.argv[1])
    if "--dat" in sys.argv:
        with open(sys.argv[sys.argv.index("--dat") + 1], "w") as f:
            f.write("# queues n " + " ".join(
                "%s_%s" % (b, m) for m, _ in METRICS
                for b in ("stock", "patched")) + "\n")
            for q in qs:
                for n in ns:
                    vals = []
                    for m, _ in METRICS:
                        for b in ("stock", "patched"):
                            rows = runs.get((q, n, b), [])
                            vals.append("%g" % statistics.median(
                                [float(r[m]) for r in rows]) if rows else "NaN")
                    f.write("%d %d %s\n" % (q, n, " ".join(vals)))
                f.write("\n\n")


main()
