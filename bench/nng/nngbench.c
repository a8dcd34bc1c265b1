/*
 * nngbench: nng's aio timers under load, one configuration per process
 * (issue 31; docs/brokers.md, "nng"). bench/nng/bench.sh builds it against
 * the stock and the patched nng and runs the two in turn, so every figure
 * comes from the same program and the same operation sequence.
 *
 *   nngbench N QUEUES SECONDS [SEED]
 *
 * N long timeouts are pending throughout (nng_sleep_aio() of 1000-2000 s,
 * armed in random order of deadline, as after churn), on QUEUES expire
 * queues (0: nng's default, one per CPU up to 8). Then, in turn:
 *  - a 1 ms sleep re-armed from its own callback for SECONDS: its lateness
 *    (callback time minus arm time minus 1 ms: nng's millisecond clock
 *    makes up to 1 ms of it unavoidable), and the expire threads' CPU time
 *    per wake-up (their run time from /proc/self/task/TID/schedstat over
 *    their voluntary context switches, each a return from a wait);
 *  - arm + cancel: nng_sleep_aio() of 10 s, nng_aio_cancel(), nng_aio_wait()
 *    on an aio without a callback, wall ns per cycle;
 *  - BURSTS bursts of BURST sleeps of 50 ms armed back to back, so that
 *    they fall due together: the lateness of each, and of the last of
 *    each burst;
 *  - bytes per aio: the heap an nng_aio_alloc() takes (glibc's mallinfo2()
 *    before and after the N allocations, divided by N).
 * One line of key=value goes to stdout.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>

#include "expire.h"

#define LONG_MIN_MS 1000000u  /* the pending timeouts: 1000 s ... */
#define LONG_SPAN_MS 1000000u /* ... to 2000 s */
#define SLEEP_MS 1            /* the re-armed sleep */
#define MAX_SAMPLES 200000u   /* of the re-armed sleep, ample for 60 s */
#define ARM_CANCEL_CYCLES 200000u
#define BURST 1000u
#define BURSTS 3u
#define BURST_MS 50
#define MAX_THREADS 64

static void die(const char *what, int rv)
{
    fprintf(stderr, "nngbench: %s: %s\n", what, nng_strerror(rv));
    exit(1);
}

/* ---- lateness samples ---------------------------------------------------- */

/* The p-th percentile (0..100) of n sorted samples, in ms. */
static double pct_ms(const uint64_t *v, size_t n, double p)
{
    size_t i;

    if (n == 0)
        return -1;
    i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return (double)v[i] / 1e6;
}

/* ---- the re-armed 1 ms sleep ----------------------------------------------
 */

static struct {
    nng_aio *aio;
    uint64_t armed;
    atomic_bool stop;
    atomic_bool done;
    size_t n;
    uint64_t late[MAX_SAMPLES];
} tick;

static void tick_cb(void *arg)
{
    uint64_t t = now_ns(), due = tick.armed + SLEEP_MS * 1000000u;

    (void)arg;
    if (tick.n < MAX_SAMPLES)
        tick.late[tick.n++] = t > due ? t - due : 0;
    if (atomic_load(&tick.stop) || nng_aio_result(tick.aio) != 0) {
        atomic_store(&tick.done, true);
        return;
    }
    tick.armed = now_ns();
    nng_sleep_aio(SLEEP_MS, tick.aio);
}

static void run_tick(unsigned seconds, double *cpu_us, uint64_t *wakes)
{
    struct threads a, b;
    int rv;

    if ((rv = nng_aio_alloc(&tick.aio, tick_cb, NULL)) != 0)
        die("nng_aio_alloc", rv);
    a = expire_threads();
    tick.armed = now_ns();
    nng_sleep_aio(SLEEP_MS, tick.aio);
    nng_msleep((nng_duration)(seconds * 1000u));
    atomic_store(&tick.stop, true);
    while (!atomic_load(&tick.done))
        nng_msleep(1);
    b = expire_threads();
    nng_aio_free(tick.aio);
    *wakes = b.wakes - a.wakes;
    *cpu_us =
        *wakes ? (double)(b.run_ns - a.run_ns) / 1e3 / (double)*wakes : -1;
    qsort(tick.late, tick.n, sizeof(tick.late[0]), cmp_u64);
}

/* ---- the burst --------------------------------------------------------------
 */

struct burst_aio {
    nng_aio *aio;
    uint64_t armed;
    uint64_t fired;
};

static atomic_uint burst_left;

static void burst_cb(void *arg)
{
    struct burst_aio *b = arg;

    b->fired = now_ns();
    atomic_fetch_sub(&burst_left, 1);
}

/* Lateness of every sleep of every burst into late (BURST x BURSTS),
 * sorted: the last is the last timer of the latest burst. */
static void run_bursts(uint64_t *late)
{
    static struct burst_aio b[BURST];
    int rv;

    for (unsigned i = 0; i < BURST; i++)
        if ((rv = nng_aio_alloc(&b[i].aio, burst_cb, &b[i])) != 0)
            die("nng_aio_alloc", rv);
    for (unsigned r = 0; r < BURSTS; r++) {
        atomic_store(&burst_left, BURST);
        for (unsigned i = 0; i < BURST; i++) {
            b[i].armed = now_ns();
            nng_sleep_aio(BURST_MS, b[i].aio);
        }
        while (atomic_load(&burst_left) != 0)
            nng_msleep(5);
        for (unsigned i = 0; i < BURST; i++) {
            uint64_t due = b[i].armed + BURST_MS * 1000000u;
            uint64_t l = b[i].fired > due ? b[i].fired - due : 0;

            late[r * BURST + i] = l;
        }
        nng_msleep(100);
    }
    for (unsigned i = 0; i < BURST; i++)
        nng_aio_free(b[i].aio);
    qsort(late, BURST * BURSTS, sizeof(late[0]), cmp_u64);
}

/* ---- arm + cancel
 * ------------------------------------------------------------ */

static double run_arm_cancel(void)
{
    nng_aio *aio;
    uint64_t t0;
    int rv;

    if ((rv = nng_aio_alloc(&aio, NULL, NULL)) != 0)
        die("nng_aio_alloc", rv);
    t0 = now_ns();
    for (unsigned i = 0; i < ARM_CANCEL_CYCLES; i++) {
        nng_sleep_aio(10000, aio);
        nng_aio_cancel(aio);
        nng_aio_wait(aio);
    }
    t0 = now_ns() - t0;
    nng_aio_free(aio);
    return (double)t0 / ARM_CANCEL_CYCLES;
}

/* ---- the pending timeouts
 * ------------------------------------------------------ */

/* N aios armed in random order of deadline; the heap each took. */
static nng_aio **arm_pending(size_t n, unsigned seed, double *bytes)
{
    nng_aio **v = calloc(n ? n : 1, sizeof(*v));
    struct mallinfo2 a, b;
    int rv;

    if (v == NULL)
        die("calloc", NNG_ENOMEM);
    srand(seed);
    a = mallinfo2();
    for (size_t i = 0; i < n; i++)
        if ((rv = nng_aio_alloc(&v[i], NULL, NULL)) != 0)
            die("nng_aio_alloc", rv);
    b = mallinfo2();
    *bytes = n ? (double)(b.uordblks - a.uordblks) / (double)n : 0;
    for (size_t i = 0; i < n; i++) {
        unsigned r = ((unsigned)rand() << 15 ^ (unsigned)rand());

        nng_sleep_aio((nng_duration)(LONG_MIN_MS + r % LONG_SPAN_MS), v[i]);
    }
    return v;
}

int main(int argc, char **argv)
{
    static uint64_t burst_late[BURST * BURSTS];
    size_t n;
    unsigned queues, seconds, seed;
    nng_aio **pending, *warm;
    double bytes, cpu_us, arm_ns;
    uint64_t wakes;
    struct threads th;
    int rv;

    if (argc < 4) {
        fprintf(stderr, "usage: nngbench N QUEUES SECONDS [SEED]\n");
        return 2;
    }
    n = strtoul(argv[1], NULL, 10);
    queues = (unsigned)strtoul(argv[2], NULL, 10);
    seconds = (unsigned)strtoul(argv[3], NULL, 10);
    seed = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 1;
    if (queues > 0)
        nng_init_set_parameter(NNG_INIT_NUM_EXPIRE_THREADS, queues);
    /* The first aio starts nng (its threads and queues), off the count. */
    if ((rv = nng_aio_alloc(&warm, NULL, NULL)) != 0)
        die("nng_aio_alloc", rv);

    pending = arm_pending(n, seed, &bytes);
    run_tick(seconds, &cpu_us, &wakes);
    arm_ns = run_arm_cancel();
    run_bursts(burst_late);
    th = expire_threads();

    printf("n=%zu queues=%u threads=%u seconds=%u bytes_per_aio=%.1f "
           "wakes=%llu cpu_per_wake_us=%.1f samples=%zu "
           "sleep_p50_ms=%.3f sleep_p99_ms=%.3f sleep_max_ms=%.3f "
           "arm_cancel_ns=%.1f burst_p50_ms=%.3f burst_p99_ms=%.3f "
           "burst_max_ms=%.3f\n",
           n, queues, th.count, seconds, bytes, (unsigned long long)wakes,
           cpu_us, tick.n, pct_ms(tick.late, tick.n, 50),
           pct_ms(tick.late, tick.n, 99), pct_ms(tick.late, tick.n, 100),
           arm_ns, pct_ms(burst_late, BURST * BURSTS, 50),
           pct_ms(burst_late, BURST * BURSTS, 99),
           pct_ms(burst_late, BURST * BURSTS, 100));
    fflush(stdout);
    for (size_t i = 0; i < n; i++)
        nng_aio_free(pending[i]);
    free(pending);
    nng_aio_free(warm);
    return 0;
}
