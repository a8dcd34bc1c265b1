/*
 * Fresh.java: the workload of bench/service/fresh.c, "a producer thread new
 * to the timer against a warm one", run through Netty's HashedWheelTimer
 * (issue 21 part 5). The comment at the top of fresh.c says what it
 * measures; here the same on Netty's side:
 *
 *   fresh-thread  On one timer, a warm thread (kept for the whole run, which
 *                 has already scheduled and cancelled a round of N timeouts)
 *                 and a new Thread each schedule N timeouts due 1..60 s out
 *                 and cancel them; the next burst starts once the timer has
 *                 taken the cancels (pendingTimeouts() is 0) and 250 ms more.
 *                 Over the N newTimeout() calls: thread CPU ns and wall ns
 *                 per schedule, and the thread's minor page faults per 1,000
 *                 (/proc/thread-self/stat); the ratios fresh/warm. PAIRS
 *                 pairs in turn; the new threads stay parked until the run
 *                 ends, as in fresh.c. The rows are the medians.
 *   fresh-burst   BURSTS bursts of N / BURSTS from new threads (which end
 *                 with their burst) and as many from the warm thread, in
 *                 turn: schedules/s over the scheduling windows, the ratio,
 *                 CPU ns and faults per 1,000 schedules.
 *
 * Same random delays as fresh.c (xorshift64, the same seeds).
 */
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

final class Fresh {
    static final int PAIRS = 5, BURSTS = 10;
    static final long SEED = 0x2545f4914f6cdd1dL;
    static final long REAP_NS = 250 * Figures.MS;

    /** The rows of the report's table that this workload adds. */
    static final Summary.Figure[] TABLE = {
        new Summary.Figure("fresh-thread", "fresh_cpu_ns_per_op",
                           "CPU per schedule, a new thread's first N", "ns", 1, false),
        new Summary.Figure("fresh-thread", "warm_cpu_ns_per_op",
                           "CPU per schedule, a warm thread's N", "ns", 1, false),
        new Summary.Figure("fresh-thread", "ratio_cpu", "CPU per schedule, new/warm thread",
                           "x", 1, false),
        new Summary.Figure("fresh-thread", "fresh_wall_ns_per_op",
                           "wall per schedule, a new thread's first N", "ns", 1, false),
        new Summary.Figure("fresh-thread", "warm_wall_ns_per_op",
                           "wall per schedule, a warm thread's N", "ns", 1, false),
        new Summary.Figure("fresh-thread", "ratio_wall", "wall per schedule, new/warm thread",
                           "x", 1, false),
        new Summary.Figure("fresh-thread", "fresh_faults_per_1k",
                           "page faults per 1,000 schedules, new thread", "", 1, false),
        new Summary.Figure("fresh-thread", "warm_faults_per_1k",
                           "page faults per 1,000 schedules, warm thread", "", 1, false),
        new Summary.Figure("fresh-burst", "fresh_ops_per_s",
                           "schedules/s, a new thread per burst of N/10", "M/s", 1e-6, true),
        new Summary.Figure("fresh-burst", "warm_ops_per_s",
                           "schedules/s, bursts of N/10 from a warm thread", "M/s", 1e-6, true),
        new Summary.Figure("fresh-burst", "ratio", "schedules/s, new thread per burst/warm",
                           "x", 1, true),
    };

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final TimerTask NOP = t -> { };

    private final List<Figures.Row> rows;
    private final boolean record;

    Fresh(List<Figures.Row> rows, boolean record) {
        this.rows = rows;
        this.record = record;
    }

    private void emit(String workload, long n, String metric, double value, String unit) {
        if (!record)
            return;
        rows.add(new Figures.Row(workload, "netty", n, metric, value, unit));
        System.out.printf("%-20s %-7s %10d  %-20s %14.3f %s%n", workload, "netty", n, metric,
                          value, unit);
    }

    /** Minor faults of the calling thread (field 10 of its stat). */
    static long threadFaults() {
        try {
            String s = Files.readString(Path.of("/proc/thread-self/stat"));
            String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[7]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    static long delay1s60s(long[] seed) {
        return Figures.SEC + Long.remainderUnsigned(Figures.next(seed), 59 * Figures.SEC + 1);
    }

    /** One burst: its input and what it measured over the schedules. */
    static final class Burst {
        final HashedWheelTimer timer;
        final Timeout[] h;
        final int count;
        final long[] seed;
        long cpu, wall, faults;

        Burst(HashedWheelTimer timer, Timeout[] h, int count, long seed) {
            this.timer = timer;
            this.h = h;
            this.count = count;
            this.seed = new long[] {seed};
        }

        void run() {
            long f0 = threadFaults(), c0 = THREADS.getCurrentThreadCpuTime(),
                 t0 = System.nanoTime();
            for (int i = 0; i < count; i++)
                h[i] = timer.newTimeout(NOP, delay1s60s(seed), TimeUnit.NANOSECONDS);
            wall = System.nanoTime() - t0;
            cpu = THREADS.getCurrentThreadCpuTime() - c0;
            faults = threadFaults() - f0;
            for (int i = 0; i < count; i++) {
                h[i].cancel();
                h[i] = null;
            }
        }
    }

    /* ---- the threads ---- */

    private final SynchronousQueue<Burst> warmJobs = new SynchronousQueue<>();
    private final SynchronousQueue<Burst> warmDone = new SynchronousQueue<>();
    private final CountDownLatch unpark = new CountDownLatch(1);
    private final List<Thread> parked = new ArrayList<>();

    private Thread startWarm() {
        Thread t = new Thread(() -> {
            try {
                for (Burst b; (b = warmJobs.take()).count >= 0;) {
                    b.run();
                    warmDone.put(b);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "fresh-warm");
        t.start();
        return t;
    }

    private void onWarm(Burst b) throws InterruptedException {
        warmJobs.put(b);
        warmDone.take();
    }

    private void onNew(Burst b, boolean stay) throws InterruptedException {
        CountDownLatch done = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            b.run();
            done.countDown();
            if (stay) {
                try {
                    unpark.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }, "fresh-new");
        t.start();
        done.await();
        if (stay)
            parked.add(t);
        else
            t.join();
    }

    private static void awaitFreed(HashedWheelTimer timer) {
        do
            LockSupport.parkNanos(Figures.MS);
        while (timer.pendingTimeouts() > 0);
        LockSupport.parkNanos(REAP_NS);
    }

    private Burst burst(HashedWheelTimer timer, boolean warm, boolean stay, Timeout[] h, int n,
                        long seed) throws InterruptedException {
        Burst b = new Burst(timer, h, n, seed);
        if (warm)
            onWarm(b);
        else
            onNew(b, stay);
        awaitFreed(timer);
        return b;
    }

    /* ---- the figures ---- */

    private static double median(double[] v) {
        double[] a = v.clone();
        Arrays.sort(a);
        int k = a.length;
        return k % 2 == 1 ? a[k / 2] : (a[k / 2 - 1] + a[k / 2]) / 2;
    }

    private void freshThread(HashedWheelTimer timer, Timeout[] h, int n)
        throws InterruptedException {
        double[][][] v = new double[2][3][PAIRS]; /* [fresh, warm][cpu, wall, faults] */
        for (int k = 0; k < PAIRS; k++) {
            boolean freshFirst = k % 2 == 0;
            Burst a = burst(timer, !freshFirst, true, h, n, SEED + k);
            Burst b = burst(timer, freshFirst, true, h, n, SEED + k);
            record(v[freshFirst ? 0 : 1], k, a);
            record(v[freshFirst ? 1 : 0], k, b);
        }
        String[] side = {"fresh", "warm"}, what = {"cpu_ns_per_op", "wall_ns_per_op",
                                                   "faults_per_1k"};
        String[] unit = {"ns", "ns", "1"};
        double[][] m = new double[2][3];
        for (int s = 0; s < 2; s++)
            for (int q = 0; q < 3; q++) {
                m[s][q] = median(v[s][q]);
                emit("fresh-thread", n, side[s] + "_" + what[q], m[s][q], unit[q]);
            }
        emit("fresh-thread", n, "ratio_cpu", m[0][0] / m[1][0], "x");
        emit("fresh-thread", n, "ratio_wall", m[0][1] / m[1][1], "x");
        unpark.countDown();
        for (Thread t : parked)
            t.join();
    }

    private static void record(double[][] v, int k, Burst b) {
        v[0][k] = (double) b.cpu / b.count;
        v[1][k] = (double) b.wall / b.count;
        v[2][k] = b.faults * 1000.0 / b.count;
    }

    private void freshBurst(HashedWheelTimer timer, Timeout[] h, int n)
        throws InterruptedException {
        int each = n / BURSTS;
        double[] f = new double[4], m = new double[4]; /* count, wall, cpu, faults */
        for (int k = 0; k < BURSTS; k++) {
            boolean freshFirst = k % 2 == 0;
            Burst a = burst(timer, !freshFirst, false, h, each, SEED + 100 + k);
            Burst b = burst(timer, freshFirst, false, h, each, SEED + 100 + k);
            add(freshFirst ? f : m, a);
            add(freshFirst ? m : f, b);
        }
        double fr = f[0] * 1e9 / f[1], wr = m[0] * 1e9 / m[1];
        emit("fresh-burst", n, "fresh_ops_per_s", fr, "1/s");
        emit("fresh-burst", n, "warm_ops_per_s", wr, "1/s");
        emit("fresh-burst", n, "ratio", fr / wr, "x");
        emit("fresh-burst", n, "fresh_cpu_ns_per_op", f[2] / f[0], "ns");
        emit("fresh-burst", n, "warm_cpu_ns_per_op", m[2] / m[0], "ns");
        emit("fresh-burst", n, "fresh_faults_per_1k", f[3] * 1000 / f[0], "1");
        emit("fresh-burst", n, "warm_faults_per_1k", m[3] * 1000 / m[0], "1");
    }

    private static void add(double[] sum, Burst b) {
        sum[0] += b.count;
        sum[1] += b.wall;
        sum[2] += b.cpu;
        sum[3] += b.faults;
    }

    /** The whole workload on a fresh timer (1 ms tick), warm-up included. */
    void run(long n, int warmup) {
        HashedWheelTimer timer = new HashedWheelTimer(r -> new Thread(r, "netty-wheel"), 1,
                                                      TimeUnit.MILLISECONDS);
        Timeout[] h = new Timeout[(int) n];
        Thread warm = startWarm();
        try {
            for (int k = 0; k <= warmup; k++)
                burst(timer, true, false, h, (int) n, SEED - 1 - k);
            freshThread(timer, h, (int) n);
            freshBurst(timer, h, (int) n);
            warmJobs.put(new Burst(timer, h, -1, 0));
            warm.join();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        } finally {
            timer.stop();
        }
    }
}
