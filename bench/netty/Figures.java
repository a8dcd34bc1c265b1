/*
 * Figures.java: the workloads of bench/service/figures.c, run through
 * Netty's HashedWheelTimer (io.netty.util, netty-common). Same random
 * delays (xorshift64 with the same seeds), same thread layout, same
 * readings; the comment at the top of figures.c says what each measures.
 *
 * Netty is used as its users use it: new HashedWheelTimer(factory, 1 ms)
 * (512 buckets, the default), newTimeout(task, delay, NANOSECONDS), tasks
 * on the worker thread, Timeout.cancel(), stop(). The process CPU time
 * (every thread's /proc/self/task/TID/schedstat, summed, as getrusage sums
 * them for svcbench) includes the JVM's collector and compiler threads; the "threads" figure is the producers' own clocks
 * (ThreadMXBean) plus the worker's (/proc/self/task/TID/schedstat).
 * Bytes per timer are the heap in use after a full collection with N timers
 * taken in, less before them.
 */
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.Timer;
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
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

final class Figures {
    static final long MS = 1_000_000L, SEC = 1000 * MS, HOUR = 3600 * SEC;
    static final long SEED = 0x9e3779b97f4a7c15L;
    static final int PROBE_RATE = 100_000; /* lateness probes per second */

    /** One result row: workload,impl,n,metric,value,unit. */
    record Row(String workload, String impl, long n, String metric, double value,
               String unit) {
        String csv() {
            return workload + "," + impl + "," + n + "," + metric + "," + value + "," + unit;
        }
    }

    final List<Row> rows = new ArrayList<>();
    private boolean record = true;

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /* ---- the operation sequence, as in figures.c ---- */

    static long next(long[] x) {
        long v = x[0];
        v ^= v << 13;
        v ^= v >>> 7;
        v ^= v << 17;
        x[0] = v;
        return v;
    }

    static long delay1ms1h(long[] seed) {
        return MS + Long.remainderUnsigned(next(seed), HOUR - MS + 1);
    }

    /* The rows of a producer workload, as svcbench's emit_rates(): done
     * operations over wallNs, the process's CPU time, and the CPU time of
     * the producers and the worker. */
    private void emitRates(String name, long done, long wallNs, long cpuNs, long threadsNs) {
        emit(name, done, "ops_per_s", done * 1e9 / wallNs, "1/s");
        emit(name, done, "cpu_ns_per_op", (double) cpuNs / done, "ns");
        emit(name, done, "cpu_ns_per_op_threads", (double) threadsNs / done, "ns");
    }

    private void emit(String workload, long n, String metric, double value, String unit) {
        if (!record)
            return;
        Row r = new Row(workload, "netty", n, metric, value, unit);
        rows.add(r);
        System.out.printf("%-20s %-7s %10d  %-20s %14.3f %s%n", workload, "netty", n, metric,
                          value, unit);
    }

    /* ---- sentinel: has the worker caught up? ---- */

    private final AtomicInteger sentinels = new AtomicInteger();
    private volatile int workerTid;

    private static int currentTid() {
        try {
            String link = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
            return Integer.parseInt(link.substring(link.lastIndexOf('/') + 1));
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private final TimerTask sentinel = t -> {
        workerTid = currentTid();
        sentinels.incrementAndGet();
    };

    private void postSentinel(Timer timer) {
        timer.newTimeout(sentinel, 0, TimeUnit.NANOSECONDS);
    }

    private void awaitSentinels(int count) {
        while (sentinels.get() < count)
            LockSupport.parkNanos(20_000);
    }

    private static final ThreadFactory FACTORY = r -> {
        Thread t = new Thread(r, "netty-wheel");
        return t;
    };

    /** A fresh timer whose worker has run one task (its tid is known), on a
     * heap cleared of what earlier workloads left (as svcbench starts each
     * workload in a fresh process). */
    private HashedWheelTimer fresh() {
        heapAfterGc();
        HashedWheelTimer timer = new HashedWheelTimer(FACTORY, 1, TimeUnit.MILLISECONDS);
        sentinels.set(0);
        postSentinel(timer);
        awaitSentinels(1);
        sentinels.set(0);
        return timer;
    }

    private static final TimerTask NOP = t -> { };

    /* ---- the worker thread, from /proc ---- */

    private static long taskCpuNs(int tid) {
        try {
            String s = Files.readString(Path.of("/proc/self/task/" + tid + "/schedstat"));
            return Long.parseLong(s.trim().split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** CPU time of the whole process, ns: the sum over its threads (the JVM's
     * getProcessCpuTime counts in 10 ms steps here). Threads that exit in
     * between are lost, so the producers outlive the second reading. */
    static long processCpuNs() {
        long sum = 0;
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator)
                sum += taskCpuNs(Integer.parseInt(t.getFileName().toString()));
        } catch (IOException | RuntimeException e) {
            return sum;
        }
        return sum;
    }

    private static long taskSwitches(int tid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/task/" + tid + "/status")))
                if (line.startsWith("voluntary_ctxt_switches:"))
                    return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return 0;
    }

    private static void join(Thread[] ts) {
        for (Thread t : ts) {
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private static void await(CountDownLatch l) {
        try {
            l.await();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void await(CyclicBarrier b) {
        try {
            b.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /* ---- schedule ---- */

    private void runSchedule(long n, int np) {
        HashedWheelTimer timer = fresh();
        long each = n / np;
        long[] cpu = new long[np];
        Thread[] ts = new Thread[np];
        CyclicBarrier go = new CyclicBarrier(np + 1), hold = new CyclicBarrier(np + 1);
        CountDownLatch finished = new CountDownLatch(np);
        int wt = workerTid;

        for (int i = 0; i < np; i++) {
            final int id = i;
            ts[i] = new Thread(() -> {
                long[] seed = {SEED + id};
                await(go);
                long c0 = THREADS.getCurrentThreadCpuTime();
                for (long k = 0; k < each; k++)
                    timer.newTimeout(NOP, delay1ms1h(seed), TimeUnit.NANOSECONDS);
                postSentinel(timer);
                cpu[id] = THREADS.getCurrentThreadCpuTime() - c0;
                finished.countDown();
                await(hold);
            });
            ts[i].start();
        }
        long w0 = taskCpuNs(wt), c0 = processCpuNs(), t0 = System.nanoTime();
        await(go);
        await(finished);
        long t1 = System.nanoTime();
        awaitSentinels(np);
        long c1 = processCpuNs(), w1 = taskCpuNs(wt);
        await(hold);
        join(ts);
        timer.stop();
        long done = each * np, threads = Arrays.stream(cpu).sum() + w1 - w0;
        String name = "schedule-" + np + "p";
        emitRates(name, done, t1 - t0, c1 - c0, threads);
    }

    /* ---- cancel ---- */

    private void runCancel(long n, int np, boolean rearm) {
        HashedWheelTimer timer = fresh();
        int each = (int) (n / np);
        long[] cpu = new long[np];
        Thread[] ts = new Thread[np];
        CyclicBarrier bar = new CyclicBarrier(np + 1);
        CountDownLatch finished = new CountDownLatch(np);
        int wt = workerTid;

        for (int i = 0; i < np; i++) {
            final int id = i;
            ts[i] = new Thread(() -> {
                long[] seed = {SEED + id};
                Timeout[] h = new Timeout[each];
                for (int k = 0; k < each; k++)
                    h[k] = timer.newTimeout(NOP, delay1ms1h(seed), TimeUnit.NANOSECONDS);
                postSentinel(timer);
                await(bar); /* all scheduled */
                await(bar); /* main has read its clocks: go */
                long c0 = THREADS.getCurrentThreadCpuTime();
                if (rearm) {
                    /* Netty has no re-arm: cancel and schedule anew. */
                    for (int k = 0; k < each; k++) {
                        h[k].cancel();
                        h[k] = timer.newTimeout(NOP, delay1ms1h(seed), TimeUnit.NANOSECONDS);
                    }
                } else {
                    for (int k = 0; k < each; k++)
                        h[k].cancel();
                }
                cpu[id] = THREADS.getCurrentThreadCpuTime() - c0;
                finished.countDown();
                await(bar); /* main has read its clocks again */
            });
            ts[i].start();
        }
        await(bar);
        awaitSentinels(np);
        sentinels.set(0);
        long w0 = taskCpuNs(wt), c0 = processCpuNs(), t0 = System.nanoTime();
        await(bar);
        await(finished);
        long t1 = System.nanoTime();
        postSentinel(timer);
        awaitSentinels(1);
        long c1 = processCpuNs(), w1 = taskCpuNs(wt);
        await(bar);
        join(ts);
        timer.stop();
        long done = (long) each * np, threads = Arrays.stream(cpu).sum() + w1 - w0;
        String name = (rearm ? "rearm-" : "cancel-") + np + "p";
        emitRates(name, done, t1 - t0, c1 - c0, threads);
    }

    /* ---- memory ---- */

    /** The heap in use once collections stop finding garbage. A stopped
     * HashedWheelTimer has a finalizer, so what it still holds (cancelled
     * timeouts not yet taken out) outlives the first collection: collect,
     * run the finalizers, and again, until the heap stops shrinking. */
    static long heapAfterGc() {
        long last = Long.MAX_VALUE;
        for (int i = 0, stable = 0; i < 12 && stable < 2; i++) {
            System.gc();
            System.runFinalization();
            long used = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
            stable = used >= last - (1 << 16) ? stable + 1 : 0;
            last = Math.min(last, used);
            LockSupport.parkNanos(20 * MS); /* lets the reference handler queue them */
        }
        return last;
    }

    private void runMemory(long n) {
        HashedWheelTimer timer = fresh();
        long[] seed = {SEED};
        long b0 = heapAfterGc();
        for (long i = 0; i < n; i++)
            timer.newTimeout(NOP, delay1ms1h(seed), TimeUnit.NANOSECONDS);
        postSentinel(timer);
        awaitSentinels(1);
        long b1 = heapAfterGc();
        timer.stop();
        emit("memory", n, "bytes_per_timer", (double) (b1 - b0) / n, "B");
    }

    /* ---- lateness ---- */

    static final long LATE_WAIT = 10 * SEC; /* longest wait for the last probes */
    static final AtomicInteger PROBES_RUN = new AtomicInteger();

    static final class Probe implements TimerTask {
        long deadline, ran;

        @Override
        public void run(Timeout t) {
            ran = System.nanoTime();
            PROBES_RUN.incrementAndGet();
        }
    }

    private void runLateness(long n, long lengthNs) {
        HashedWheelTimer timer = fresh();
        long[] seed = {SEED};
        int perMs = PROBE_RATE / 1000, ms = (int) (lengthNs / MS), count = perMs * ms;
        Probe[] pr = new Probe[count];
        for (int i = 0; i < count; i++)
            pr[i] = new Probe();
        for (long i = 0; i < n; i++)
            timer.newTimeout(NOP, delay1ms1h(seed), TimeUnit.NANOSECONDS);
        postSentinel(timer);
        awaitSentinels(1);
        PROBES_RUN.set(0);
        long t = System.nanoTime();
        int k = 0;
        for (int i = 0; i < ms; i++) {
            for (int j = 0; j < perMs; j++, k++) {
                long delay = MS + Long.remainderUnsigned(next(seed), 49 * MS);
                pr[k].deadline = System.nanoTime() + delay;
                timer.newTimeout(pr[k], delay, TimeUnit.NANOSECONDS);
            }
            t += MS;
            sleepUntil(t);
        }
        while (PROBES_RUN.get() < count && System.nanoTime() < t + LATE_WAIT)
            LockSupport.parkNanos(MS);
        timer.stop(); /* joins the worker */
        long[] late = new long[count];
        int ran = 0;
        for (Probe p : pr)
            if (p.ran != 0)
                late[ran++] = Math.max(0, p.ran - p.deadline);
        Arrays.sort(late, 0, ran);
        emit("lateness", n, "late_p50_us", ran > 0 ? late[ran / 2] / 1e3 : 0, "us");
        emit("lateness", n, "late_p99_us", ran > 0 ? late[(int) ((long) ran * 99 / 100)] / 1e3 : 0,
             "us");
        emit("lateness", n, "late_max_us", ran > 0 ? late[ran - 1] / 1e3 : 0, "us");
        emit("lateness", n, "probes_not_run", count - ran, "1");
    }

    private static void sleepUntil(long t) {
        for (long left; (left = t - System.nanoTime()) > 0;)
            LockSupport.parkNanos(left);
    }

    /* ---- wakeups ---- */

    private void runWakeups(long n, long lengthNs) {
        HashedWheelTimer timer = fresh();
        long[] seed = {SEED};
        int wt = workerTid;
        for (long i = 0; i < n; i++)
            timer.newTimeout(NOP, HOUR + Long.remainderUnsigned(next(seed), HOUR),
                             TimeUnit.NANOSECONDS);
        postSentinel(timer);
        awaitSentinels(1);
        sleepUntil(System.nanoTime() + 200 * MS);
        long v0 = taskSwitches(wt), c0 = taskCpuNs(wt), t0 = System.nanoTime();
        sleepUntil(t0 + lengthNs);
        long v1 = taskSwitches(wt), c1 = taskCpuNs(wt), t1 = System.nanoTime();
        timer.stop();
        emit("wakeups", n, "wakeups_per_s", (v1 - v0) * 1e9 / (t1 - t0), "1/s");
        emit("wakeups", n, "worker_cpu_us_per_s", (c1 - c0) * 1e6 / (t1 - t0), "us/s");
    }

    /* ---- fire: the cost of running due timers, as figures.c's fig_fire ---- */

    static final long FIRE_LEAD = SEC, FIRE_PER_TIMER = 2000, FIRE_WINDOW = SEC;
    private final java.util.concurrent.atomic.AtomicLong fired =
        new java.util.concurrent.atomic.AtomicLong();
    private final TimerTask fireTask = t -> fired.incrementAndGet();

    private void runFire(long n) {
        HashedWheelTimer timer = fresh();
        long[] seed = {SEED};
        int wt = workerTid;
        long overran = 0, t0 = System.nanoTime();
        long open = t0 + FIRE_LEAD + n * FIRE_PER_TIMER;
        fired.set(0);
        for (long i = 0; i < n; i++) {
            long at = open + Long.remainderUnsigned(next(seed), FIRE_WINDOW);
            long now = System.nanoTime();
            if (at <= now)
                overran++;
            timer.newTimeout(fireTask, at > now ? at - now : 0, TimeUnit.NANOSECONDS);
        }
        postSentinel(timer);
        awaitSentinels(1);
        sleepUntil(open - 20 * MS);
        long c0 = taskCpuNs(wt);
        while (fired.get() < n)
            sleepUntil(System.nanoTime() + MS);
        long t1 = System.nanoTime(), c1 = taskCpuNs(wt);
        timer.stop();
        emit("fire", n, "worker_cpu_ns_per_fire", (double) (c1 - c0) / n, "ns");
        emit("fire", n, "last_after_window_ms",
             t1 > open + FIRE_WINDOW ? (t1 - open - FIRE_WINDOW) / 1e6 : 0, "ms");
        emit("fire", n, "overran", overran, "1");
    }

    /* ---- entry points, by workload name as svcbench takes them ---- */

    void run(String workload, long n, long lengthNs) {
        switch (workload) {
            case "schedule" -> { runSchedule(n, 1); runSchedule(n, 2); }
            case "cancel" -> { runCancel(n, 1, false); runCancel(n, 2, false); }
            case "rearm" -> runCancel(n, 1, true);
            case "memory" -> runMemory(n);
            case "lateness" -> runLateness(n, lengthNs);
            case "wakeups" -> runWakeups(n, lengthNs);
            case "fire" -> runFire(n);
            default -> throw new IllegalArgumentException("unknown workload " + workload);
        }
    }

    /** Run workloads unrecorded, to let the JIT compile Netty's paths. */
    void warmUp(long n, long lateNs) {
        record = false;
        run("schedule", n, 0);
        run("cancel", n, 0);
        run("rearm", n, 0);
        run("memory", n, 0);
        run("lateness", n, lateNs);
        run("fire", n, 0);
        record = true;
    }
}
