/*
 * RpcFigures.java: the RPC pattern of bench/service/rpc.c through Netty's
 * HashedWheelTimer: N requests outstanding, each a 3 s timeout cancelled
 * 0.1-1 ms after it was set (Timeout.cancel()), by 1 and 2 threads, N =
 * 10^4 and 10^5, RUN_NS a cell. The comment at the top of rpc.c says what
 * each row measures; the same random answer times (xorshift64, the same
 * seeds), the same FIFO per thread, the same readings, with two
 * differences a JVM imposes:
 *   - rss_*: the JVM's resident memory (VmRSS of /proc/self/status), which
 *     grows as the collector touches pages of its heap, not only with what
 *     the timer holds;
 *   - alloc_*: the heap in use (MemoryMXBean), garbage not yet collected
 *     included, as the service's figure counts dead handles not yet freed;
 *     the static figure is the heap in use after full collections.
 */
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

final class RpcFigures {
    static final long US = 1000, TIMEOUT = 3 * Figures.SEC, MIN = 100 * US, SPAN = 900 * US;
    static final long RUN_NS = 2 * Figures.SEC, SAMPLE_NS = 10 * Figures.MS;
    static final long SEED = 0x2545f4914f6cdd1dL;

    private static final TimerTask NOP = t -> { };
    private static final AtomicInteger SEEN = new AtomicInteger();
    private static final TimerTask SENTINEL = t -> SEEN.incrementAndGet();

    private final Figures out;
    private volatile int phase; /* 0 fill, 1 go, 2 stop */

    private RpcFigures(Figures out) {
        this.out = out;
    }

    /** Every cell, its rows into out.rows (unless warm is set). */
    static void run(Figures out, boolean record) {
        for (int np = 1; np <= 2; np++)
            for (long n = 10_000; n <= 100_000; n *= 10)
                new RpcFigures(out).cell(np, n, record);
    }

    /** One producer thread's requests, oldest first. */
    private final class Producer extends Thread {
        final HashedWheelTimer timer;
        final Timeout[] q;
        final long[] answerAt;
        final long[] seed;
        long pairs, fired;
        volatile boolean filled;

        Producer(HashedWheelTimer timer, int n, int id) {
            this.timer = timer;
            q = new Timeout[n];
            answerAt = new long[n];
            seed = new long[] {SEED + id};
        }

        private void send(int k, long now) {
            q[k] = timer.newTimeout(NOP, TIMEOUT, TimeUnit.NANOSECONDS);
            answerAt[k] = now + MIN + Long.remainderUnsigned(Figures.next(seed), SPAN + 1);
        }

        private void answer(int k) {
            long now = System.nanoTime();
            while (now < answerAt[k])
                now = System.nanoTime();
            if (!q[k].cancel())
                fired++;
            send(k, now);
            pairs++;
        }

        @Override
        public void run() {
            for (int k = 0; k < q.length; k++)
                send(k, System.nanoTime());
            filled = true;
            while (phase == 0)
                Thread.onSpinWait();
            for (int i = 0; phase == 1;) {
                for (int k = 0; k < 256; k++) {
                    answer(i);
                    i = i + 1 == q.length ? 0 : i + 1;
                }
            }
        }
    }

    private static void caughtUp(HashedWheelTimer timer) {
        int before = SEEN.get();
        timer.newTimeout(SENTINEL, 0, TimeUnit.NANOSECONDS);
        while (SEEN.get() == before)
            LockSupport.parkNanos(100 * US);
    }

    static long rssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status")))
                if (line.startsWith("VmRSS:"))
                    return 1024 * Long.parseLong(line.replaceAll("[^0-9]", ""));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return 0;
    }

    static long heapUsed() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private void cell(int np, long n, boolean record) {
        long h0 = Figures.heapAfterGc(), rss0 = rssBytes();
        HashedWheelTimer timer = new HashedWheelTimer(r -> new Thread(r, "netty-wheel"), 1,
                                                      TimeUnit.MILLISECONDS);
        Producer[] p = new Producer[np];
        for (int t = 0; t < np; t++) {
            p[t] = new Producer(timer, (int) (n / np), t);
            p[t].start();
        }
        for (Producer pr : p)
            while (!pr.filled)
                LockSupport.parkNanos(Figures.MS);
        caughtUp(timer);
        double statRss = (double) (rssBytes() - rss0) / n;
        double statHeap = (double) (Figures.heapAfterGc() - h0) / n;
        double rssSum = 0, rssMax = 0, heapSum = 0, heapMax = 0;
        int k = 0;
        long t0 = System.nanoTime(), c0 = Figures.processCpuNs();
        phase = 1;
        for (long end = t0 + RUN_NS; System.nanoTime() < end; k++) {
            LockSupport.parkNanos(SAMPLE_NS);
            double rss = (double) (rssBytes() - rss0) / n, heap = (double) (heapUsed() - h0) / n;
            rssSum += rss;
            heapSum += heap;
            rssMax = k == 0 ? rss : Math.max(rssMax, rss);
            heapMax = k == 0 ? heap : Math.max(heapMax, heap);
        }
        /* Read before the producers stop: the CPU time of an exited thread
         * is gone from /proc/self/task (Figures.processCpuNs()). */
        long wall = System.nanoTime() - t0, cpu = Figures.processCpuNs() - c0;
        phase = 2;
        for (Producer pr : p)
            join(pr);
        timer.stop();
        if (!record)
            return;
        long pairs = 0, fired = 0;
        for (Producer pr : p) {
            pairs += pr.pairs;
            fired += pr.fired;
        }
        String name = "rpc-" + np + "p-1e" + (n == 10_000 ? 4 : 5);
        emit(name, n, "pairs_per_s", pairs * 1e9 / wall, "1/s");
        emit(name, n, "cpu_ns_per_pair", (double) cpu / pairs, "ns");
        emit(name, n, "rss_bytes_per_req_mean", rssSum / k, "B");
        emit(name, n, "rss_bytes_per_req_max", rssMax, "B");
        emit(name, n, "rss_static_bytes_per_req", statRss, "B");
        emit(name, n, "rss_max_over_static", statRss > 0 ? rssMax / statRss : 0, "x");
        emit(name, n, "alloc_bytes_per_req_mean", heapSum / k, "B");
        emit(name, n, "alloc_bytes_per_req_max", heapMax, "B");
        emit(name, n, "alloc_static_bytes_per_req", statHeap, "B");
        emit(name, n, "fired", fired, "1");
    }

    private static void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private void emit(String workload, long n, String metric, double value, String unit) {
        out.rows.add(new Figures.Row(workload, "netty", n, metric, value, unit));
        System.out.printf("%-20s %-7s %10d  %-20s %14.3f %s%n", workload, "netty", n, metric,
                          value, unit);
    }
}
