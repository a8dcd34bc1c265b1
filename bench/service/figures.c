/*
 * figures.c: the service's side of the comparison with Netty's
 * HashedWheelTimer. bench/netty/NettyBench.java runs the same five
 * workloads through Netty, with the same random delays (xorshift64, the same
 * seeds), the same thread layout and the same readings, so that one row of
 * each side can be divided by the other:
 *
 *   schedule-Pp  P producer threads (1 or 2) schedule N fire-and-forget
 *                timers due 1 ms..1 h out. schedules/s over the producers'
 *                window; CPU ns per schedule from the first schedule until
 *                the worker has taken in the last one (a sentinel timer due
 *                at once, scheduled after them, has run): the whole process
 *                (getrusage) and the producers plus the worker (their own
 *                clocks), which leaves out a JVM's collector and compiler.
 *   cancel-Pp    the same N timers with handles, all taken in; then the P
 *                threads cancel their own and let go of them, with
 *                tw_handle_cancel_release() (Netty's cancel() also means
 *                "cancel and forget": its collector frees the timeout
 *                later). cancels/s over the
 *                cancelling window; CPU ns per cancel up to a sentinel
 *                scheduled after the last cancel.
 *   rearm-1p     the same with one thread, which re-arms each handle to a
 *                new delay of 1 ms..1 h (tw_handle_rearm; Netty has no
 *                re-arm, so its side cancels and schedules anew, as Dubbo's
 *                heartbeat does).
 *   memory       bytes the allocator holds per pending timer: jemalloc's
 *                stats.allocated (glibc's mallinfo2 with ALLOC=libc) with N
 *                fire-and-forget timers taken in, less before them.
 *   lateness     N timers due 1 ms..1 h behind, then 10^5 probes per second
 *                due 1..50 ms out; a probe's lateness is when its callback
 *                starts less (the time read before scheduling it + delay).
 *                It waits for every probe (10 s at most after the stream),
 *                so a worker that falls behind shows in the percentiles.
 *   wakeups      N timers due 1..2 h out, nothing else: the worker thread's
 *                voluntary context switches per second and its CPU time
 *                (/proc/self/task/TID, TID read by a callback on it).
 *   flood        (timewheel only) two threads schedule as fast as the
 *                service accepts for 3 s while a probe due 10 ms out is
 *                scheduled every millisecond: the probes' lateness, and
 *                how many schedules the default bounds refused.
 *   fire         N timers due at random instants of a one-second window
 *                that opens after all are taken in: the worker's CPU ns
 *                per timer run, from just before the window opens until
 *                the last callback has run, and how long after the window
 *                the last one ran.
 *
 * Each runs on a fresh service with the default configuration of the mode
 * (1 ms tick) and callbacks on the worker, as Netty runs its tasks. The
 * default service refuses schedules with -EAGAIN while its worker lags too
 * far (Netty's default accepts everything): a refused schedule is retried
 * after 100 us, inside the measured window, and the row `refused` counts
 * the refusals.
 * --warmup K repeats schedule, cancel, rearm and memory K times unrecorded
 * first.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "svcbench.h"

#define PROBE_RATE 100000 /* lateness probes per second, as in latency */
#define SEED UINT64_C(0x9e3779b97f4a7c15)

/* A delay of 1 ms..1 h, uniform: the spread of RPC and session timeouts. */
static uint64_t delay_1ms_1h(uint64_t *seed)
{
    return MS + next_rand(seed) % (HOUR - MS + 1);
}

/* ---- refusals ---------------------------------------------------------------
 */

static void emit_refused(const char *workload, const struct impl *im,
                         uint64_t n)
{
    emit(workload, im->name, n, "refused", (double)refusals(), "1");
}

/* The rows of a producer workload: n operations over wall_ns, the process's
 * CPU time over them, the CPU time of the producers and the worker, and the
 * refusals. */
static void emit_rates(const char *name, const struct impl *im, uint64_t n,
                       uint64_t wall_ns, uint64_t cpu_ns, uint64_t threads_ns)
{
    emit(name, im->name, n, "ops_per_s", (double)n * 1e9 / (double)wall_ns,
         "1/s");
    emit(name, im->name, n, "cpu_ns_per_op", (double)cpu_ns / (double)n, "ns");
    emit(name, im->name, n, "cpu_ns_per_op_threads",
         (double)threads_ns / (double)n, "ns");
    emit_refused(name, im, n);
}

/* ---- sentinel: has the worker caught up? --------------------------------- */

static atomic_int sentinels;  /* sentinel callbacks run */
static atomic_int worker_tid; /* the thread they ran on */

static int current_tid(void)
{
    char buf[64];
    ssize_t len = readlink("/proc/thread-self", buf, sizeof(buf) - 1);
    const char *slash;

    if (len <= 0)
        return 0;
    buf[len] = '\0';
    slash = strrchr(buf, '/');
    return slash ? atoi(slash + 1) : 0;
}

static void sentinel_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_store(&worker_tid, current_tid());
    atomic_fetch_add(&sentinels, 1);
}

static void post_sentinel(struct tw_service *s)
{
    put(s, 0, sentinel_cb, NULL, NULL);
}

/* Wait until `count` sentinels have run since the counter was cleared. */
static void await_sentinels(int count)
{
    while (atomic_load(&sentinels) < count)
        sleep_until(now_ns() + 20000);
}

/* A fresh service whose worker has run one callback (so its tid is known
 * and it is out of its start-up). */
static struct tw_service *fresh(const struct impl *im)
{
    struct tw_service *s = make(im->mode, 0);

    refusals_reset();
    atomic_store(&sentinels, 0);
    post_sentinel(s);
    await_sentinels(1);
    atomic_store(&sentinels, 0);
    return s;
}

/* ---- the worker thread, from /proc ----------------------------------------
 */

static uint64_t task_cpu_ns(int tid)
{
    char path[64];
    unsigned long long ns = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
    f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%llu", &ns) != 1)
            ns = 0;
        fclose(f);
    }
    return ns;
}

static uint64_t task_switches(int tid)
{
    char path[64], line[128];
    unsigned long long v = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* ---- schedule -------------------------------------------------------------
 */

struct prod {
    struct tw_service *s;
    struct tw_handle **h; /* cancel: this thread's handles */
    uint64_t count, seed, cpu;
    bool rearm; /* cancel_thread re-arms instead */
    pthread_barrier_t *bar;
    atomic_int *go;
};

static void *sched_thread(void *arg)
{
    struct prod *p = arg;
    uint64_t c0;

    while (!atomic_load(p->go))
        ;
    c0 = thread_cpu_ns();
    for (uint64_t i = 0; i < p->count; i++)
        put(p->s, delay_1ms_1h(&p->seed), nop_cb, NULL, NULL);
    post_sentinel(p->s);
    p->cpu = thread_cpu_ns() - c0;
    return NULL;
}

static void run_schedule(const struct impl *im, uint64_t n, unsigned np,
                         bool record)
{
    struct tw_service *s = fresh(im);
    struct prod p[2];
    pthread_t tid[2];
    atomic_int go = 0;
    uint64_t t0, t1, c0, c1, w0, w1, threads = 0;
    int wt = atomic_load(&worker_tid);
    char name[32];

    for (unsigned i = 0; i < np; i++) {
        p[i] =
            (struct prod){.s = s, .count = n / np, .seed = SEED + i, .go = &go};
        pthread_create(&tid[i], NULL, sched_thread, &p[i]);
    }
    w0 = task_cpu_ns(wt);
    c0 = cpu_ns();
    t0 = now_ns();
    atomic_store(&go, 1);
    for (unsigned i = 0; i < np; i++)
        pthread_join(tid[i], NULL);
    t1 = now_ns();
    await_sentinels((int)np);
    c1 = cpu_ns();
    w1 = task_cpu_ns(wt);
    must(tw_service_destroy(s), "destroy");
    for (unsigned i = 0; i < np; i++)
        threads += p[i].cpu;
    if (!record)
        return;
    n = n / np * np;
    snprintf(name, sizeof(name), "schedule-%up", np);
    emit_rates(name, im, n, t1 - t0, c1 - c0, threads + w1 - w0);
}

void fig_schedule(const struct impl *im, const struct sizes *sz, int warmup)
{
    for (unsigned np = 1; np <= 2; np++)
        for (int k = 0; k <= warmup; k++)
            run_schedule(im, sz->timers, np, k == warmup);
}

/* ---- cancel -----------------------------------------------------------------
 */

static void *cancel_thread(void *arg)
{
    struct prod *p = arg;
    uint64_t c0;

    for (uint64_t i = 0; i < p->count; i++)
        put(p->s, delay_1ms_1h(&p->seed), nop_cb, NULL, &p->h[i]);
    post_sentinel(p->s);
    pthread_barrier_wait(p->bar); /* all scheduled */
    pthread_barrier_wait(p->bar); /* main has read its clocks: go */
    c0 = thread_cpu_ns();
    if (p->rearm) {
        for (uint64_t i = 0; i < p->count; i++)
            tw_handle_rearm(p->h[i], delay_1ms_1h(&p->seed));
    } else {
        for (uint64_t i = 0; i < p->count; i++)
            tw_handle_cancel_release(p->h[i]);
    }
    p->cpu = thread_cpu_ns() - c0;
    return NULL;
}

static void run_cancel(const struct impl *im, uint64_t n, unsigned np,
                       bool rearm, bool record)
{
    struct tw_service *s = fresh(im);
    struct tw_handle **h = calloc(n, sizeof(*h));
    struct prod p[2];
    pthread_t tid[2];
    pthread_barrier_t bar;
    uint64_t t0, t1, c0, c1, w0, w1, threads = 0;
    int wt = atomic_load(&worker_tid);
    char name[32];

    pthread_barrier_init(&bar, NULL, np + 1);
    for (unsigned i = 0; i < np; i++) {
        p[i] = (struct prod){.s = s,
                             .h = h + i * (n / np),
                             .count = n / np,
                             .seed = SEED + i,
                             .bar = &bar,
                             .rearm = rearm};
        pthread_create(&tid[i], NULL, cancel_thread, &p[i]);
    }
    pthread_barrier_wait(&bar);
    await_sentinels((int)np);
    atomic_store(&sentinels, 0);
    w0 = task_cpu_ns(wt);
    c0 = cpu_ns();
    t0 = now_ns();
    pthread_barrier_wait(&bar);
    for (unsigned i = 0; i < np; i++)
        pthread_join(tid[i], NULL);
    t1 = now_ns();
    post_sentinel(s);
    await_sentinels(1);
    c1 = cpu_ns();
    w1 = task_cpu_ns(wt);
    must(tw_service_destroy(s), "destroy");
    for (uint64_t i = 0; rearm && i < n / np * np; i++)
        tw_handle_release(h[i]);
    pthread_barrier_destroy(&bar);
    free(h);
    for (unsigned i = 0; i < np; i++)
        threads += p[i].cpu;
    if (!record)
        return;
    n = n / np * np;
    snprintf(name, sizeof(name), "%s-%up", rearm ? "rearm" : "cancel", np);
    emit_rates(name, im, n, t1 - t0, c1 - c0, threads + w1 - w0);
}

void fig_cancel(const struct impl *im, const struct sizes *sz, int warmup)
{
    for (unsigned np = 1; np <= 2; np++)
        for (int k = 0; k <= warmup; k++)
            run_cancel(im, sz->timers, np, false, k == warmup);
}

void fig_rearm(const struct impl *im, const struct sizes *sz, int warmup)
{
    for (int k = 0; k <= warmup; k++)
        run_cancel(im, sz->timers, 1, true, k == warmup);
}

/* ---- memory
 * ------------------------------------------------------------------ */

static void run_memory(const struct impl *im, uint64_t n, bool record)
{
    struct tw_service *s = fresh(im);
    uint64_t seed = SEED, b0, b1;

    b0 = allocated_bytes();
    for (uint64_t i = 0; i < n; i++)
        put(s, delay_1ms_1h(&seed), nop_cb, NULL, NULL);
    post_sentinel(s);
    await_sentinels(1);
    b1 = allocated_bytes();
    must(tw_service_destroy(s), "destroy");
    if (!record)
        return;
    emit("memory", im->name, n, "bytes_per_timer",
         ((double)b1 - (double)b0) / (double)n, "B");
    emit_refused("memory", im, n);
}

void fig_memory(const struct impl *im, const struct sizes *sz, int warmup)
{
    for (int k = 0; k <= warmup; k++)
        run_memory(im, sz->timers, k == warmup);
}

/* ---- lateness
 * ---------------------------------------------------------------- */

#define LATE_WAIT (10 * SEC) /* longest wait for the last probes */

struct probe {
    uint64_t deadline; /* read before scheduling, plus the delay */
    uint64_t ran;      /* when the callback started; 0 if it did not */
};

static atomic_uint_fast64_t probes_run;

static void probe_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    ((struct probe *)arg)->ran = now_ns();
    atomic_fetch_add_explicit(&probes_run, 1, memory_order_release);
}

/* Wait until every probe has run, or LATE_WAIT after the stream: a worker
 * that fell behind shows as lateness, not as probes left out. */
static void await_probes(uint64_t count, uint64_t end)
{
    while (atomic_load_explicit(&probes_run, memory_order_acquire) < count &&
           now_ns() < end + LATE_WAIT)
        sleep_until(now_ns() + MS);
}

static void late_rows(const char *name, const struct impl *im, uint64_t n,
                      struct probe *pr, uint64_t count)
{
    uint64_t *late = calloc(count, sizeof(*late)), k = 0;

    for (uint64_t i = 0; i < count; i++)
        if (pr[i].ran)
            late[k++] =
                pr[i].ran > pr[i].deadline ? pr[i].ran - pr[i].deadline : 0;
    qsort(late, k, sizeof(*late), cmp_u64);
    emit(name, im->name, n, "late_p50_us", k ? (double)late[k / 2] / 1e3 : 0,
         "us");
    emit(name, im->name, n, "late_p99_us",
         k ? (double)late[k * 99 / 100] / 1e3 : 0, "us");
    emit(name, im->name, n, "late_max_us", k ? (double)late[k - 1] / 1e3 : 0,
         "us");
    emit(name, im->name, n, "probes_not_run", (double)(count - k), "1");
    free(late);
}

void fig_lateness(const struct impl *im, const struct sizes *sz)
{
    struct tw_service *s = fresh(im);
    uint64_t per_ms = PROBE_RATE / 1000, ms = sz->lateness_ns / MS;
    uint64_t seed = SEED, count = per_ms * ms, k = 0, t;
    struct probe *pr = calloc(count, sizeof(*pr));

    for (uint64_t i = 0; i < sz->timers; i++)
        put(s, delay_1ms_1h(&seed), nop_cb, NULL, NULL);
    post_sentinel(s);
    await_sentinels(1);
    atomic_store(&probes_run, 0);
    t = now_ns();
    for (uint64_t i = 0; i < ms; i++) {
        for (uint64_t j = 0; j < per_ms; j++, k++) {
            uint64_t delay = MS + next_rand(&seed) % (49 * MS);

            pr[k].deadline = now_ns() + delay;
            put(s, delay, probe_cb, &pr[k], NULL);
        }
        t += MS;
        sleep_until(t);
    }
    await_probes(count, t);
    must(tw_service_destroy(s), "destroy"); /* joins the worker */
    late_rows("lateness", im, sz->timers, pr, count);
    emit_refused("lateness", im, sz->timers);
    free(pr);
}

/* ---- flood
 * ------------------------------------------------------------------- */

#define FLOOD_NS (3 * SEC) /* how long two producers flood */
#define FLOOD_PROBE_DELAY (10 * MS)

struct flooder {
    struct tw_service *s;
    atomic_bool *stop;
    uint64_t seed, scheduled, refused;
};

/* Schedule timers due 1..100 ms out as fast as the service takes them; a
 * refusal is counted and retried after a yield, as a producer that must not
 * drop work would. */
static void *flood_thread(void *arg)
{
    struct flooder *f = arg;

    while (!atomic_load_explicit(f->stop, memory_order_relaxed)) {
        uint64_t delay = MS + next_rand(&f->seed) % (99 * MS);
        int rc = tw_service_schedule(f->s, delay, nop_cb, NULL, NULL);

        if (rc == -EAGAIN) {
            f->refused++;
            sched_yield();
        } else {
            must(rc, "schedule");
            f->scheduled++;
        }
    }
    return NULL;
}

/* Lateness under overload with the default configuration: two threads
 * flood the service for FLOOD_NS while this thread schedules a probe due
 * 10 ms out every millisecond. A probe's deadline counts from its first
 * attempt, so a refusal shows as lateness. */
void fig_flood(const struct impl *im, const struct sizes *sz)
{
    struct tw_service *s = make(im->mode, 0);
    atomic_bool stop = false;
    struct flooder f[2];
    pthread_t tid[2];
    uint64_t count = FLOOD_NS / MS, t = now_ns();
    struct probe *pr = calloc(count, sizeof(*pr));

    (void)sz;
    atomic_store(&probes_run, 0);
    refusals_reset();
    for (int i = 0; i < 2; i++) {
        f[i] = (struct flooder){.s = s, .stop = &stop, .seed = SEED + 7 * i};
        pthread_create(&tid[i], NULL, flood_thread, &f[i]);
    }
    for (uint64_t k = 0; k < count; k++) {
        pr[k].deadline = now_ns() + FLOOD_PROBE_DELAY;
        put(s, FLOOD_PROBE_DELAY, probe_cb, &pr[k], NULL);
        t += MS;
        sleep_until(t);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(tid[i], NULL);
    await_probes(count, t);
    must(tw_service_destroy(s), "destroy");
    late_rows("flood", im, count, pr, count);
    emit("flood", im->name, count, "flood_scheduled",
         (double)(f[0].scheduled + f[1].scheduled), "1");
    emit("flood", im->name, count, "flood_refused",
         (double)(f[0].refused + f[1].refused), "1");
    emit_refused("flood", im, count);
    free(pr);
}

/* ---- wakeups
 * ------------------------------------------------------------------ */

void fig_wakeups(const struct impl *im, const struct sizes *sz)
{
    struct tw_service *s = fresh(im);
    struct tw_service_stats st0, st1;
    uint64_t seed = SEED, v0, v1, c0, c1, t0, t1;
    int wt = atomic_load(&worker_tid);

    for (uint64_t i = 0; i < sz->timers; i++)
        put(s, HOUR + next_rand(&seed) % HOUR, nop_cb, NULL, NULL);
    post_sentinel(s);
    await_sentinels(1);
    sleep_until(now_ns() + 200 * MS);
    must(tw_service_stats(s, &st0), "stats");
    v0 = task_switches(wt);
    c0 = task_cpu_ns(wt);
    t0 = now_ns();
    sleep_until(t0 + sz->wakeups_ns);
    must(tw_service_stats(s, &st1), "stats");
    v1 = task_switches(wt);
    c1 = task_cpu_ns(wt);
    t1 = now_ns();
    must(tw_service_destroy(s), "destroy");
    emit("wakeups", im->name, sz->timers, "wakeups_per_s",
         (double)(v1 - v0) * 1e9 / (double)(t1 - t0), "1/s");
    emit("wakeups", im->name, sz->timers, "worker_cpu_us_per_s",
         (double)(c1 - c0) * 1e6 / (double)(t1 - t0), "us/s");
    emit("wakeups", im->name, sz->timers, "stats_wakeups_per_s",
         (double)(st1.wakeups - st0.wakeups) * 1e9 / (double)(t1 - t0), "1/s");
    emit_refused("wakeups", im, sz->timers);
}

/* ---- fire
 * --------------------------------------------------------------------- */

/* The window opens FIRE_LEAD plus FIRE_PER_TIMER per timer after the first
 * schedule, so that the slower side has taken every timer in before the
 * first falls due (Netty at 10^7, with its collector, took more than
 * 0.5 us a timer in some rounds). */
#define FIRE_LEAD SEC
#define FIRE_PER_TIMER 2000 /* ns */
#define FIRE_WINDOW SEC

static atomic_uint_fast64_t fired;

static void fire_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_fetch_add_explicit(&fired, 1, memory_order_relaxed);
}

/* The cost of running due timers: N timers due at random instants of a
 * one-second window, scheduled ahead of it; the worker's CPU time from
 * just before the window opens until the last callback has run, per timer
 * (the wheel's own turns in the window included), and how long after the
 * window closed the last one ran. A timer whose instant had passed when it
 * was scheduled (the producer too slow) counts in `overran`. */
void fig_fire(const struct impl *im, const struct sizes *sz)
{
    struct tw_service *s = fresh(im);
    uint64_t seed = SEED, n = sz->timers, overran = 0, c0, c1, t1;
    uint64_t t0 = now_ns();
    uint64_t open = t0 + FIRE_LEAD + n * FIRE_PER_TIMER;
    int wt = atomic_load(&worker_tid);

    atomic_store(&fired, 0);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t at = open + next_rand(&seed) % FIRE_WINDOW, now = now_ns();

        overran += at <= now;
        put(s, at > now ? at - now : 0, fire_cb, NULL, NULL);
    }
    post_sentinel(s);
    await_sentinels(1);
    sleep_until(open - 20 * MS);
    c0 = task_cpu_ns(wt);
    while (atomic_load(&fired) < n)
        sleep_until(now_ns() + MS);
    t1 = now_ns();
    c1 = task_cpu_ns(wt);
    must(tw_service_destroy(s), "destroy");
    emit("fire", im->name, n, "worker_cpu_ns_per_fire",
         (double)(c1 - c0) / (double)n, "ns");
    emit("fire", im->name, n, "last_after_window_ms",
         t1 > open + FIRE_WINDOW ? (double)(t1 - open - FIRE_WINDOW) / 1e6 : 0,
         "ms");
    emit("fire", im->name, n, "overran", (double)overran, "1");
    emit_refused("fire", im, n);
}
