/*
 * NettyBench: Netty's HashedWheelTimer beside the timewheel service, on the
 * same figures, interleaved. Run by `make bench-netty`
 * (bench/netty/netty.mk); docs/benchmarks.md, "Against Netty", shows a run.
 *
 * One JVM runs the whole comparison. It first warms Netty up (--warmup
 * rounds of every workload, unrecorded, so the JIT has compiled the timer's
 * paths), then for each round and each workload runs Netty in this JVM and
 * the service in a child `svcbench --n N --warmup K WORKLOAD` (hier and
 * hashed, each on a fresh service), alternating which goes first. Nothing
 * else runs meanwhile: the Netty timer of a workload is stopped before
 * svcbench starts, and svcbench has exited before Netty's next workload.
 * Netty's side of each workload is in Figures.java, but for "fresh" (a new
 * thread against a warm one), which is in Fresh.java.
 *
 * Writes, in --out DIR: raw.csv (every row of every round), results.csv
 * (median, min and max per implementation and the ratios timewheel/Netty of
 * the medians) and report.md (the same as a table, with the run's
 * parameters). Summary.java computes and formats them. The RPC pattern
 * (workload rpc) is RpcFigures.java beside bench/service/rpc.c, at its own
 * sizes (10^4 and 10^5 requests outstanding), whatever --n says.
 *
 * usage: NettyBench --svcbench PATH --out DIR [--rounds R] [--warmup W]
 *                   [--svc-warmup K] [--n N] [--late-ms L] [--idle-ms I]
 *                   [--impl hier|hashed] [--workloads W1,W2,...]
 *
 * --impl runs one of the service's modes instead of both: at N = 10^7 the
 * hashed mode walks about 20,000 timers a tick and one round takes hours.
 * --workloads runs a subset of WORKLOADS, in their order.
 */
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class NettyBench {
    static final String[] WORKLOADS = {"schedule", "cancel", "rearm", "memory", "lateness",
                                       "wakeups", "fire", "fresh", "rpc"};

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = options(args);
        Path svcbench = Path.of(opt.getOrDefault("--svcbench", "build/bench/svcbench"));
        Path out = Path.of(opt.getOrDefault("--out", "build/bench/netty"));
        int rounds = Integer.parseInt(opt.getOrDefault("--rounds", "3"));
        int warmup = Integer.parseInt(opt.getOrDefault("--warmup", "5"));
        int svcWarmup = Integer.parseInt(opt.getOrDefault("--svc-warmup", "1"));
        long n = Long.parseLong(opt.getOrDefault("--n", "1000000"));
        long lateNs = Long.parseLong(opt.getOrDefault("--late-ms", "3000")) * Figures.MS;
        long idleNs = Long.parseLong(opt.getOrDefault("--idle-ms", "3000")) * Figures.MS;
        String impl = opt.get("--impl");
        List<String> workloads = chosen(opt.get("--workloads"));
        Files.createDirectories(out);

        Summary.Run run = new Summary.Run(rounds, warmup, svcWarmup, n, lateNs, idleNs);
        run.command = opt.getOrDefault("--command", "make bench-netty");
        run.impl = impl;
        Figures netty = new Figures();
        List<String[]> raw = new ArrayList<>();
        long start = System.currentTimeMillis();
        /* The JIT compiles a method after some 10^4 calls: warming up on N/10
         * timers compiles the same code as N would, in a tenth of the time
         * (stopping a HashedWheelTimer that holds 10^6 timers takes seconds). */
        long warmN = Math.max(10_000, n / 10);
        System.out.printf("netty: %d warm-up rounds of Netty (n=%d)%n", warmup, warmN);
        for (int w = 0; w < warmup; w++)
            netty.warmUp(warmN, 500 * Figures.MS);
        if (warmup > 0) /* the RPC pattern once (RpcFigures: 4 cells of 2 s) */
            RpcFigures.run(netty, false);
        for (int r = 1; r <= rounds; r++) {
            for (int wi = 0; wi < workloads.size(); wi++) {
                String w = workloads.get(wi);
                long len = w.equals("lateness") ? lateNs : idleNs;
                boolean nettyFirst = (r + wi) % 2 == 0;
                System.out.printf("-- round %d/%d: %s (%s first)%n", r, rounds, w,
                                  nettyFirst ? "netty" : "timewheel");
                for (int side = 0; side < 2; side++) {
                    if ((side == 0) == nettyFirst)
                        runNetty(netty, w, n, len, r, raw);
                    else
                        runService(svcbench, out, w, n, svcWarmup, impl, run, r, raw);
                }
            }
        }
        run.seconds = (System.currentTimeMillis() - start) / 1000.0;
        Summary.write(out, raw, run);
    }

    private static void runNetty(Figures netty, String w, long n, long len, int round,
                                 List<String[]> raw) {
        int from = netty.rows.size();
        if (w.equals("fresh")) /* Fresh.java: a new thread against a warm one */
            new Fresh(netty.rows, true).run(n, 1);
        else if (w.equals("rpc"))
            RpcFigures.run(netty, true); /* its own sizes: 10^4 and 10^5 */
        else
            netty.run(w, n, len);
        for (Figures.Row row : netty.rows.subList(from, netty.rows.size()))
            raw.add(tagged(round, row.csv()));
    }

    private static void runService(Path svcbench, Path out, String w, long n, int warmup,
                                   String impl, Summary.Run run, int round, List<String[]> raw)
        throws IOException, InterruptedException {
        Path csv = out.resolve("svcbench-part.csv");
        Files.deleteIfExists(csv);
        List<String> cmd = new ArrayList<>(List.of(svcbench.toString(), "--n", Long.toString(n),
                                                   "--warmup", Integer.toString(warmup), "--csv",
                                                   csv.toString()));
        if (impl != null)
            cmd.addAll(List.of("--impl", impl));
        cmd.add(w);
        if (run.svcCommand == null)
            run.svcCommand = String.join(" ", cmd);
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        int rc = p.waitFor();
        if (rc != 0)
            throw new IllegalStateException(svcbench + " " + w + " exited with " + rc);
        List<String> lines = Files.readAllLines(csv);
        for (String line : lines.subList(1, lines.size()))
            raw.add(tagged(round, line));
        Files.deleteIfExists(csv);
    }

    /* The workloads of a comma-separated list, checked against WORKLOADS and
     * kept in its order; all of them when the list is null. */
    private static List<String> chosen(String list) {
        if (list == null)
            return List.of(WORKLOADS);
        List<String> want = List.of(list.split(","));
        for (String w : want)
            if (!List.of(WORKLOADS).contains(w))
                throw new IllegalArgumentException("unknown workload: " + w);
        List<String> in = new ArrayList<>();
        for (String w : WORKLOADS)
            if (want.contains(w))
                in.add(w);
        return in;
    }

    private static String[] tagged(int round, String csvLine) {
        String[] f = csvLine.split(",");
        String[] t = new String[f.length + 1];
        t[0] = Integer.toString(round);
        System.arraycopy(f, 0, t, 1, f.length);
        return t;
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> opt = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--"))
                throw new IllegalArgumentException("usage: see NettyBench.java: " + args[i]);
            opt.put(args[i], args[i + 1]);
        }
        if (args.length % 2 != 0)
            throw new IllegalArgumentException("option without a value: " + args[args.length - 1]);
        return opt;
    }
}
