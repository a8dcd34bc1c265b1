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
        head = ["metric"]
        for n in ns:
            head += ["N=%d stock" % n, "N=%d patched" % n]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for m, label in METRICS:
            row = [label]
            for n in ns:
                for b in ("stock", "patched"):
                    rows = runs.get((q, n, b))
                    row.append(cell(rows, m) if rows else "")
            print("| " + " | ".join(row) + " |")
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
