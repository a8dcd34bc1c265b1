/*
 * Summary.java: from the rows of every round to the comparison table. For
 * each figure and implementation: the median over the rounds, the min and
 * the max; then the ratio timewheel/Netty of the medians (above 1 is
 * better for rates, below 1 for costs; the "better" column says which).
 * Writes raw.csv, results.csv and report.md, and prints the table.
 */
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

final class Summary {
    static final String[] IMPLS = {"netty", "hier", "hashed"};

    /** The parameters of a run, for the report. */
    static final class Run {
        final int rounds, warmup, svcWarmup;
        final long n, lateNs, idleNs;
        final String started = stamp(), loadStart = load();
        String svcCommand, command, impl; /* impl: null, both modes */
        double seconds;

        Run(int rounds, int warmup, int svcWarmup, long n, long lateNs, long idleNs) {
            this.rounds = rounds;
            this.warmup = warmup;
            this.svcWarmup = svcWarmup;
            this.n = n;
            this.lateNs = lateNs;
            this.idleNs = idleNs;
        }
    }

    /** A figure of the table: which row, how to show it, which way is better. */
    record Figure(String workload, String metric, String label, String unit, double scale,
                  boolean higherBetter) {}

    static final Figure[] TABLE = {
        new Figure("schedule-1p", "ops_per_s", "schedules/s, 1 producer", "M/s", 1e-6, true),
        new Figure("schedule-2p", "ops_per_s", "schedules/s, 2 producers", "M/s", 1e-6, true),
        new Figure("cancel-1p", "ops_per_s", "cancels/s, 1 thread", "M/s", 1e-6, true),
        new Figure("cancel-2p", "ops_per_s", "cancels/s, 2 threads", "M/s", 1e-6, true),
        new Figure("rearm-1p", "ops_per_s", "re-arms/s, 1 thread (Netty: cancel + newTimeout)",
                   "M/s", 1e-6, true),
        new Figure("schedule-1p", "cpu_ns_per_op", "CPU per schedule, 1 producer, process", "ns",
                   1, false),
        new Figure("schedule-1p", "cpu_ns_per_op_threads",
                   "CPU per schedule, 1 producer, producer + worker", "ns", 1, false),
        new Figure("schedule-2p", "cpu_ns_per_op", "CPU per schedule, 2 producers, process",
                   "ns", 1, false),
        new Figure("schedule-2p", "cpu_ns_per_op_threads",
                   "CPU per schedule, 2 producers, producers + worker", "ns", 1, false),
        new Figure("cancel-1p", "cpu_ns_per_op", "CPU per cancel, 1 thread, process", "ns", 1,
                   false),
        new Figure("cancel-1p", "cpu_ns_per_op_threads",
                   "CPU per cancel, 1 thread, canceller + worker", "ns", 1, false),
        new Figure("cancel-2p", "cpu_ns_per_op", "CPU per cancel, 2 threads, process", "ns", 1,
                   false),
        new Figure("cancel-2p", "cpu_ns_per_op_threads",
                   "CPU per cancel, 2 threads, cancellers + worker", "ns", 1, false),
        new Figure("rearm-1p", "cpu_ns_per_op", "CPU per re-arm, 1 thread, process", "ns", 1,
                   false),
        new Figure("rearm-1p", "cpu_ns_per_op_threads", "CPU per re-arm, 1 thread, thread + worker",
                   "ns", 1, false),
        new Figure("memory", "bytes_per_timer", "bytes per pending timer", "B", 1, false),
        new Figure("lateness", "late_p50_us", "lateness p50", "ms", 1e-3, false),
        new Figure("lateness", "late_p99_us", "lateness p99", "ms", 1e-3, false),
        new Figure("lateness", "late_max_us", "lateness max", "ms", 1e-3, false),
        new Figure("lateness", "probes_not_run", "probes not run 10 s after the stream", "",
                   1, false),
        new Figure("schedule-1p", "refused", "schedules refused (-EAGAIN, retried), 1 producer",
                   "", 1, false),
        new Figure("schedule-2p", "refused", "schedules refused (-EAGAIN, retried), 2 producers",
                   "", 1, false),
        new Figure("lateness", "refused", "schedules refused (-EAGAIN, retried), lateness", "", 1,
                   false),
        new Figure("wakeups", "wakeups_per_s", "idle wake-ups per second (sleeps ended; 0 with CPU busy: never slept)", "1/s", 1, false),
        new Figure("wakeups", "worker_cpu_us_per_s", "idle worker CPU", "us/s", 1, false),
        new Figure("fire", "worker_cpu_ns_per_fire", "worker CPU per timer run (N due in 1 s)",
                   "ns", 1, false),
        new Figure("fire", "last_after_window_ms", "last run after the 1 s window closed", "ms",
                   1, false),
        new Figure("fire", "overran", "timers due before they were scheduled (fire)", "", 1,
                   false),
    };

    /** The RPC pattern's cells (bench/service/rpc.c, RpcFigures.java): workload, label. */
    private static final String[][] RPC_CELLS = {
        {"rpc-1p-1e4", "1 thread, 10^4 outstanding"},
        {"rpc-1p-1e5", "1 thread, 10^5 outstanding"},
        {"rpc-2p-1e4", "2 threads, 10^4 outstanding"},
        {"rpc-2p-1e5", "2 threads, 10^5 outstanding"},
    };

    /** The rows of each RPC cell, in this order: the cell's label goes after "RPC pattern, ". */
    private static final Figure[] RPC_ROWS = {
        new Figure("", "pairs_per_s", "pairs/s", "M/s", 1e-6, true),
        new Figure("", "cpu_ns_per_pair", "CPU per pair, process", "ns", 1, false),
        new Figure("", "rss_bytes_per_req_mean", "RSS per request, mean", "B", 1, false),
        new Figure("", "rss_bytes_per_req_max", "RSS per request, max", "B", 1, false),
        new Figure("", "rss_static_bytes_per_req", "RSS per request, static", "B", 1, false),
        new Figure("", "rss_max_over_static", "RSS max / static (target <= 2)", "x", 1, false),
        new Figure("", "alloc_bytes_per_req_max",
                   "allocated (heap in use) per request, max", "B", 1, false),
    };

    /** The table's rows: TABLE, the RPC cells' rows, then those of Fresh.java. */
    static List<Figure> figures() {
        List<Figure> all = new ArrayList<>(Arrays.asList(TABLE));
        for (String[] cell : RPC_CELLS)
            for (Figure r : RPC_ROWS)
                all.add(new Figure(cell[0], r.metric(),
                                   "RPC pattern, " + cell[1] + ": " + r.label(), r.unit(),
                                   r.scale(), r.higherBetter()));
        all.addAll(Arrays.asList(Fresh.TABLE));
        return all;
    }

    /** Median, min, max of one figure of one implementation. */
    record Stat(double median, double min, double max, int count) {
        static Stat of(List<Double> v) {
            double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            int k = a.length;
            double med = k % 2 == 1 ? a[k / 2] : (a[k / 2 - 1] + a[k / 2]) / 2;
            return new Stat(med, a[0], a[k - 1], k);
        }
    }

    static void write(Path out, List<String[]> raw, Run run) throws IOException {
        List<String> lines = new ArrayList<>(List.of("round,workload,impl,n,metric,value,unit"));
        for (String[] r : raw)
            lines.add(String.join(",", r));
        Files.write(out.resolve("raw.csv"), lines);

        Map<String, Map<String, List<Double>>> by = new LinkedHashMap<>();
        Map<String, String> units = new TreeMap<>();
        for (String[] r : raw) {
            String key = r[1] + "," + r[4];
            by.computeIfAbsent(key, k -> new LinkedHashMap<>())
                .computeIfAbsent(r[2], k -> new ArrayList<>()).add(Double.parseDouble(r[5]));
            units.put(key, r[6]);
        }
        Files.write(out.resolve("results.csv"), resultsCsv(by, units));
        String table = table(by, run);
        System.out.println();
        System.out.print(table);
        Files.writeString(out.resolve("report.md"), report(table, run));
        System.out.println("netty: wrote " + out.resolve("report.md") + ", results.csv, raw.csv");
    }

    private static List<String> resultsCsv(Map<String, Map<String, List<Double>>> by,
                                           Map<String, String> units) {
        List<String> lines = new ArrayList<>();
        StringBuilder h = new StringBuilder("workload,metric,unit");
        for (String impl : IMPLS)
            h.append(',').append(impl).append("_median,").append(impl).append("_min,")
                .append(impl).append("_max,").append(impl).append("_runs");
        h.append(",hier_over_netty,hashed_over_netty");
        lines.add(h.toString());
        for (var e : by.entrySet()) {
            StringBuilder b = new StringBuilder(e.getKey()).append(',').append(units.get(e.getKey()));
            Stat nettyStat = null;
            double[] med = new double[IMPLS.length];
            for (int i = 0; i < IMPLS.length; i++) {
                List<Double> v = e.getValue().get(IMPLS[i]);
                if (v == null) {
                    b.append(",,,,0");
                    med[i] = Double.NaN;
                    continue;
                }
                Stat s = Stat.of(v);
                if (i == 0)
                    nettyStat = s;
                med[i] = s.median;
                b.append(',').append(s.median).append(',').append(s.min).append(',')
                    .append(s.max).append(',').append(s.count);
            }
            for (int i = 1; i < IMPLS.length; i++)
                b.append(',').append(nettyStat != null && nettyStat.median != 0
                                         && !Double.isNaN(med[i])
                                     ? String.format("%.4f", med[i] / nettyStat.median) : "");
            lines.add(b.toString());
        }
        return lines;
    }

    private static String cell(Stat s, Figure f) {
        if (s == null)
            return "-";
        return fmt(s.median * f.scale) + " (" + fmt(s.min * f.scale) + "-" + fmt(s.max * f.scale)
            + ")";
    }

    private static String fmt(double v) {
        double a = Math.abs(v);
        if (a == 0)
            return "0";
        if (a >= 100)
            return String.format("%.0f", v);
        if (a >= 10)
            return String.format("%.1f", v);
        return String.format("%.2f", v);
    }

    private static String ratio(Stat tw, Stat netty) {
        if (tw == null || netty == null || netty.median == 0)
            return "-";
        return String.format("%.2f", tw.median / netty.median);
    }

    private static String table(Map<String, Map<String, List<Double>>> by, Run run) {
        StringBuilder b = new StringBuilder();
        b.append("| figure (N = ").append(run.n).append(", median (min-max) of ")
            .append(run.rounds).append(" rounds) | unit | Netty | hier | hier/Netty | hashed | "
                                       + "hashed/Netty | better |\n");
        b.append("|---|---|---:|---:|---:|---:|---:|---|\n");
        for (Figure f : figures()) {
            Map<String, List<Double>> m = by.get(f.workload + "," + f.metric);
            if (m == null)
                continue;
            Stat[] s = new Stat[IMPLS.length];
            for (int i = 0; i < IMPLS.length; i++)
                s[i] = m.containsKey(IMPLS[i]) ? Stat.of(m.get(IMPLS[i])) : null;
            b.append("| ").append(f.label).append(" | ").append(f.unit).append(" | ")
                .append(cell(s[0], f)).append(" | ").append(cell(s[1], f)).append(" | ")
                .append(ratio(s[1], s[0])).append(" | ").append(cell(s[2], f)).append(" | ")
                .append(ratio(s[2], s[0])).append(" | ")
                .append(f.higherBetter ? "higher" : "lower").append(" |\n");
        }
        return b.toString();
    }

    private static String report(String table, Run run) {
        StringBuilder b = new StringBuilder("# Netty's HashedWheelTimer beside the timewheel service\n\n");
        b.append("Started ").append(run.started).append(", ").append(String.format("%.0f", run.seconds))
            .append(" s; ").append(Runtime.getRuntime().availableProcessors())
            .append(" CPUs (").append(cpuModel()).append("); load average at start ")
            .append(run.loadStart).append(", at end ").append(load()).append(".\n\n");
        b.append("- Command: `").append(run.command).append("`.\n");
        b.append("- Netty ").append(nettyVersion()).append(" (Debian libnetty-java), ")
            .append(System.getProperty("java.vm.name")).append(' ')
            .append(System.getProperty("java.vm.version")).append(", JVM options ")
            .append(String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()))
            .append("; HashedWheelTimer with a 1 ms tick and its default 512 buckets.\n");
        b.append("- timewheel: `").append(run.svcCommand == null ? "svcbench" : run.svcCommand)
            .append("` per workload and round (")
            .append(run.impl == null ? "hier, then hashed" : run.impl + " only")
            .append("; the default service configuration, 1 ms tick).\n");
        b.append("- ").append(run.rounds).append(" rounds, interleaved per workload (which side "
                + "goes first alternates); ").append(run.warmup)
            .append(" unrecorded warm-up rounds of Netty (every workload at N/10) before the "
                    + "first; ")
            .append(run.svcWarmup).append(" unrecorded warm-up run of each service workload.\n");
        b.append("- N = ").append(run.n).append(" timers due 1 ms..1 h out (wake-ups: 1..2 h); "
                + "lateness: 10^5 probes/s due 1..50 ms out for ")
            .append(run.lateNs / Figures.MS).append(" ms with the N timers behind; idle window ")
            .append(run.idleNs / Figures.MS).append(" ms; fire: the N timers due in a 1 s window "
                    + "that opens 1 s + 2 us x N after the first schedule.\n");
        b.append("- RPC pattern (rpc-Pp-1eK): 10^K requests outstanding, each a 3 s timeout "
                 + "cancelled 0.1-1 ms after it was set, P threads, 2 s a cell; bytes per request "
                 + "from RSS sampled every 10 ms (less RSS before the requests) and the static "
                 + "figure with the requests only pending: bench/service/rpc.c, RpcFigures.java.\n");
        b.append("- Ratios are timewheel/Netty of the medians: above 1 is better for rates, "
                 + "below 1 for costs. What each figure measures: bench/service/figures.c.\n\n");
        b.append(table);
        return b.toString();
    }

    static String stamp() {
        return DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'").withZone(ZoneOffset.UTC)
            .format(Instant.now());
    }

    static String load() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return String.join(" ", Arrays.copyOf(f, 3));
        } catch (IOException e) {
            return "?";
        }
    }

    private static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo")))
                if (line.startsWith("model name"))
                    return line.substring(line.indexOf(':') + 1).trim();
        } catch (IOException e) {
            return "?";
        }
        return "?";
    }

    private static String nettyVersion() {
        var v = io.netty.util.Version.identify().get("netty-common");
        return v != null ? v.artifactVersion() : "4.1";
    }
}
