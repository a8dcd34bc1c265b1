/*
 * svcbench: benchmarks of the threaded timer service.
 *
 *   throughput  schedules per second from 1 and 2 producer threads
 *               (fire-and-forget timers due 1..100 ms out, so the worker
 *               admits and fires them meanwhile)
 *   latency     how late callbacks run (p50/p99/max) at a 1 ms tick while
 *               10^5 timers per second are scheduled
 *   idle        worker wake-ups per second with 10^5 timers pending an
 *               hour out
 *   schedule, cancel, rearm, memory, lateness, wakeups
 *               the figures measured beside Netty's HashedWheelTimer, N
 *               timers due 1 ms..1 h out (figures.c; bench/netty/ runs the
 *               same workloads in Java)
 *   fresh       a producer thread new to the service against a warm one
 *               (fresh.c)
 *   stress      not a benchmark: producers schedule and cancel while
 *               timers fire, then stop; exits 1 unless
 *               scheduled == ran + cancelled + handed back exactly
 *               (meant for ThreadSanitizer builds)
 *
 * Every workload runs through the same table of implementations (`impls`),
 * so hier and hashed see the identical operation sequence. Results are
 * printed as a table and, with --csv FILE, appended to FILE as rows of
 * workload,impl,n,metric,value,unit.
 *
 * usage: svcbench [--quick] [--csv FILE] [--n N] [--warmup K] [--impl NAME]
 *                 [WORKLOAD...]
 *        (default: throughput latency idle schedule cancel rearm memory)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svcbench.h"

static const struct impl impls[] = {
    {"hier", TW_HIER},
    {"hashed", TW_HASHED},
};
#define NIMPLS (sizeof(impls) / sizeof(impls[0]))

static const struct sizes full = {2000000, 5 * SEC, 10 * SEC, 2 * SEC,
                                  1000000, 3 * SEC, 3 * SEC};
static const struct sizes quick = {200000, 1 * SEC, 1500 * MS, 500 * MS,
                                   100000, 1 * SEC, 1 * SEC};

/* ---- service-throughput -------------------------------------------------- */

struct producer {
    struct tw_service *s;
    uint64_t count;
    uint64_t seed;
    atomic_int *go;
};

static void *produce(void *arg)
{
    struct producer *p = arg;

    while (!atomic_load(p->go))
        ;
    for (uint64_t i = 0; i < p->count; i++) {
        uint64_t delay = MS + next_rand(&p->seed) % (99 * MS);

        put(p->s, delay, nop_cb, NULL, NULL);
    }
    return NULL;
}

static void throughput(const struct impl *im, unsigned nprod, uint64_t total)
{
    struct tw_service *s = make(im->mode, 0);
    struct producer p[2];
    pthread_t tid[2];
    atomic_int go = 0;
    uint64_t t0, t1;

    for (unsigned i = 0; i < nprod; i++) {
        p[i] = (struct producer){s, total / nprod, 0x9e3779b9u + i, &go};
        pthread_create(&tid[i], NULL, produce, &p[i]);
    }
    t0 = now_ns();
    atomic_store(&go, 1);
    for (unsigned i = 0; i < nprod; i++)
        pthread_join(tid[i], NULL);
    t1 = now_ns();
    must(tw_service_destroy(s), "destroy");
    emit("service-throughput", im->name, nprod, "schedules_per_s",
         (double)(total / nprod * nprod) * 1e9 / (double)(t1 - t0), "1/s");
}

/* ---- service-latency ----------------------------------------------------- */

#define LAT_RATE 100000 /* schedules per second */

struct lateness {
    uint64_t *ns;
    uint64_t cap;
    atomic_uint_fast64_t n;
};

static void late_cb(struct tw_handle *h, void *arg)
{
    struct lateness *l = arg;
    uint64_t late = now_ns() - tw_handle_deadline(h);
    uint64_t k = atomic_fetch_add(&l->n, 1);

    if (k < l->cap)
        l->ns[k] = late;
}

/* Schedule LAT_RATE / 1000 timers (due 1..50 ms out) at every millisecond
 * for `length`, then let the last ones fire. */
static void latency(const struct impl *im, uint64_t length)
{
    struct tw_service *s = make(im->mode, 0);
    uint64_t per_ms = LAT_RATE / 1000, ms = length / MS, seed = 42;
    struct lateness l = {.cap = per_ms * ms};
    uint64_t t = now_ns(), n;

    l.ns = calloc(l.cap, sizeof(*l.ns));
    for (uint64_t i = 0; i < ms; i++) {
        for (uint64_t j = 0; j < per_ms; j++)
            put(s, MS + next_rand(&seed) % (49 * MS), late_cb, &l, NULL);
        t += MS;
        sleep_until(t);
    }
    sleep_until(t + 100 * MS);
    must(tw_service_destroy(s), "destroy");
    n = atomic_load(&l.n) < l.cap ? atomic_load(&l.n) : l.cap;
    qsort(l.ns, n, sizeof(*l.ns), cmp_u64);
    emit("service-latency", im->name, LAT_RATE, "late_p50",
         n ? (double)l.ns[n / 2] / 1e3 : 0, "us");
    emit("service-latency", im->name, LAT_RATE, "late_p99",
         n ? (double)l.ns[n * 99 / 100] / 1e3 : 0, "us");
    emit("service-latency", im->name, LAT_RATE, "late_max",
         n ? (double)l.ns[n - 1] / 1e3 : 0, "us");
    free(l.ns);
}

/* ---- service-idle -------------------------------------------------------- */

#define IDLE_TIMERS 100000

static uint64_t wakeups(struct tw_service *s)
{
    struct tw_service_stats st;

    must(tw_service_stats(s, &st), "stats");
    return st.wakeups;
}

static void idle(const struct impl *im, uint64_t length)
{
    struct tw_service *s = make(im->mode, 0);
    uint64_t w0, t0, w1, t1;

    for (uint64_t i = 0; i < IDLE_TIMERS; i++)
        put(s, 3600 * SEC + i * 1000, nop_cb, NULL, NULL);
    sleep_until(now_ns() + 500 * MS); /* let the worker admit them */
    w0 = wakeups(s);
    t0 = now_ns();
    sleep_until(t0 + length);
    w1 = wakeups(s);
    t1 = now_ns();
    must(tw_service_destroy(s), "destroy");
    emit("service-idle", im->name, IDLE_TIMERS, "wakeups_per_s",
         (double)(w1 - w0) * 1e9 / (double)(t1 - t0), "1/s");
}

/* ---- stress (accounting check) ------------------------------------------- */

#define STRESS_PROD 3
#define STRESS_CAP 200000

struct srec {
    atomic_int ran;
    atomic_int back;
    int cancelled;
};

struct sprod {
    struct tw_service *s;
    struct srec *recs;
    uint64_t seed;
    int n;
};

static void srec_ran(struct tw_handle *h, void *arg)
{
    (void)h;
    atomic_fetch_add(&((struct srec *)arg)->ran, 1);
}

static void srec_back(const struct tw_handback *t, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&((struct srec *)t->arg)->back, 1);
}

/* Schedule until stop refuses; cancel every other timer, half of them
 * eight schedules later so that the cancel races the firing (those with
 * tw_handle_cancel_release(), the others with cancel then release). */
static void *stress_produce(void *arg)
{
    struct sprod *p = arg;
    struct tw_handle *lag[8] = {0};
    int lag_id[8] = {0};

    for (; p->n < STRESS_CAP; p->n++) {
        uint64_t x = next_rand(&p->seed);
        struct tw_handle *h;
        int k = p->n % 8;

        if (tw_service_schedule(p->s, x % (2 * MS), srec_ran, &p->recs[p->n],
                                &h))
            break;
        if (lag[k]) { /* the one-call form, racing the firing */
            p->recs[lag_id[k]].cancelled = tw_handle_cancel_release(lag[k]);
            lag[k] = NULL;
        }
        if (x >> 62 == 0) {
            p->recs[p->n].cancelled = tw_handle_cancel(h);
            tw_handle_release(h);
        } else if (x >> 62 == 1) {
            lag[k] = h;
            lag_id[k] = p->n;
        } else {
            tw_handle_release(h);
        }
    }
    for (int k = 0; k < 8; k++)
        if (lag[k]) {
            p->recs[lag_id[k]].cancelled = tw_handle_cancel(lag[k]);
            tw_handle_release(lag[k]);
        }
    return NULL;
}

static int stress_check(const struct impl *im, struct sprod *p)
{
    int bad = 0;

    for (int i = 0; i < STRESS_PROD; i++)
        for (int j = 0; j < p[i].n; j++) {
            struct srec *r = &p[i].recs[j];
            int sum =
                atomic_load(&r->ran) + r->cancelled + atomic_load(&r->back);

            if (sum != 1 && bad++ < 10)
                fprintf(stderr,
                        "stress %s: producer %d timer %d: ran %d, "
                        "cancelled %d, handed back %d\n",
                        im->name, i, j, atomic_load(&r->ran), r->cancelled,
                        atomic_load(&r->back));
        }
    return bad;
}

static int stress(const struct impl *im, unsigned threads, uint64_t length)
{
    struct tw_service *s = make(im->mode, threads);
    struct sprod p[STRESS_PROD];
    pthread_t tid[STRESS_PROD];
    uint64_t total = 0;
    int bad;

    for (int i = 0; i < STRESS_PROD; i++) {
        p[i] = (struct sprod){s, calloc(STRESS_CAP, sizeof(struct srec)),
                              0x1234567u + (uint64_t)i, 0};
        pthread_create(&tid[i], NULL, stress_produce, &p[i]);
    }
    sleep_until(now_ns() + length);
    must(tw_service_stop(s, srec_back, NULL), "stop");
    for (int i = 0; i < STRESS_PROD; i++) {
        pthread_join(tid[i], NULL);
        total += (uint64_t)p[i].n;
    }
    bad = stress_check(im, p);
    must(tw_service_destroy(s), "destroy");
    for (int i = 0; i < STRESS_PROD; i++)
        free(p[i].recs);
    emit("stress", im->name, threads, "timers", (double)total, "1");
    emit("stress", im->name, threads, "accounting_errors", bad, "1");
    return bad;
}

/* ---- cancel-and-wait --------------------------------------------------- */

#define CW_HANDLES 1000        /* periodic timers cancelled and waited for */
#define CW_BUSY_NS (20 * 1000) /* each run's length: a short callback */

/* A callback that keeps the worker busy for CW_BUSY_NS, so that some of the
 * cancel-and-waits meet their timer running and must wait for it. */
static void busy_cb(struct tw_handle *h, void *arg)
{
    uint64_t until = now_ns() + CW_BUSY_NS;

    (void)h;
    (void)arg;
    while (now_ns() < until)
        ;
}

static void emit_percentiles(const char *name, const struct impl *im,
                             uint64_t *v, uint64_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    emit(name, im->name, n, "p50_us", (double)v[n / 2] / 1e3, "us");
    emit(name, im->name, n, "p99_us", (double)v[n * 99 / 100] / 1e3, "us");
    emit(name, im->name, n, "max_us", (double)v[n - 1] / 1e3, "us");
}

/* Cancel-and-wait and release each handle, timing each call. */
static void cancel_wait_all(struct tw_handle **h, uint64_t *lat)
{
    for (int i = 0; i < CW_HANDLES; i++) {
        uint64_t t0 = now_ns();
        int rc = tw_handle_cancel_wait(h[i]);

        lat[i] = now_ns() - t0;
        must(rc < 0 ? rc : 0, "cancel_wait");
        tw_handle_release(h[i]);
    }
}

/* How long tw_handle_cancel_wait() takes: on timers far from due (the
 * common case: an answer came before the timeout), then on 1 ms periodic
 * timers with 20 us callbacks, where a cancel may meet its timer running
 * on the worker and wait for the run to finish. */
static void cancelwait(const struct impl *im)
{
    struct tw_service *s = make(im->mode, 0);
    struct tw_handle *h[CW_HANDLES];
    uint64_t lat[CW_HANDLES], seed = 42;

    for (int i = 0; i < CW_HANDLES; i++)
        put(s, SEC + next_rand(&seed) % HOUR, nop_cb, NULL, &h[i]);
    cancel_wait_all(h, lat);
    emit_percentiles("cancelwait-pending", im, lat, CW_HANDLES);
    for (int i = 0; i < CW_HANDLES; i++)
        must(tw_service_schedule_periodic(s, MS, MS, TW_FIXED_RATE, busy_cb,
                                          NULL, &h[i]),
             "schedule_periodic");
    sleep_until(now_ns() + 50 * MS);
    cancel_wait_all(h, lat);
    emit_percentiles("cancelwait-periodic", im, lat, CW_HANDLES);
    must(tw_service_destroy(s), "destroy");
}

/* ---- driver -------------------------------------------------------------- */

/* Workloads run when none is named; stress and the longer figures
 * (lateness with N timers behind, wakeups) only when named. */
static const char *const defaults[] = {
    "throughput", "latency", "idle", "schedule", "cancel", "rearm", "memory"};

static bool wanted(int argc, char **argv, int first, const char *name)
{
    if (first < argc) {
        for (int i = first; i < argc; i++)
            if (!strcmp(argv[i], name))
                return true;
        return false;
    }
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        if (!strcmp(defaults[i], name))
            return true;
    return false;
}

static const char *const workloads[] = {
    "throughput", "latency", "idle",     "schedule", "cancel",
    "rearm",      "memory",  "lateness", "wakeups",  "stress",
    "cancelwait", "flood",   "fire",     "fresh",    "rpc"};

static int usage(void)
{
    fprintf(stderr,
            "usage: svcbench [--quick] [--csv FILE] [--n N] [--warmup K] "
            "[--impl hier|hashed] [WORKLOAD...]\n"
            "WORKLOAD: throughput latency idle schedule cancel rearm "
            "memory lateness wakeups stress cancelwait flood fire fresh rpc\n");
    return 2;
}

static bool known(const char *name)
{
    for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
        if (!strcmp(workloads[i], name))
            return true;
    return false;
}

static int run_impl(const struct impl *im, int argc, char **argv, int first,
                    const struct sizes *sz, int warmup)
{
    int bad = 0;

    if (wanted(argc, argv, first, "throughput")) {
        throughput(im, 1, sz->throughput_total);
        throughput(im, 2, sz->throughput_total);
    }
    if (wanted(argc, argv, first, "latency"))
        latency(im, sz->latency_ns);
    if (wanted(argc, argv, first, "idle"))
        idle(im, sz->idle_ns);
    if (wanted(argc, argv, first, "schedule"))
        fig_schedule(im, sz, warmup);
    if (wanted(argc, argv, first, "cancel"))
        fig_cancel(im, sz, warmup);
    if (wanted(argc, argv, first, "rearm"))
        fig_rearm(im, sz, warmup);
    if (wanted(argc, argv, first, "memory"))
        fig_memory(im, sz, warmup);
    if (wanted(argc, argv, first, "lateness"))
        fig_lateness(im, sz);
    if (wanted(argc, argv, first, "wakeups"))
        fig_wakeups(im, sz);
    if (wanted(argc, argv, first, "flood"))
        fig_flood(im, sz);
    if (wanted(argc, argv, first, "fire"))
        fig_fire(im, sz);
    if (wanted(argc, argv, first, "rpc"))
        fig_rpc(im);
    if (wanted(argc, argv, first, "cancelwait"))
        cancelwait(im);
    if (wanted(argc, argv, first, "fresh"))
        fig_fresh(im, sz, warmup);
    if (wanted(argc, argv, first, "stress")) {
        bad += stress(im, 0, sz->stress_ns);
        bad += stress(im, 2, sz->stress_ns);
    }
    return bad;
}

int main(int argc, char **argv)
{
    struct sizes sz = full;
    const char *only = NULL;
    int first = 1, bad = 0, warmup = 0;
    uint64_t n = 0;

    for (; first < argc && argv[first][0] == '-'; first++) {
        const char *opt = argv[first];
        const char *val = first + 1 < argc ? argv[first + 1] : NULL;

        if (!strcmp(opt, "--quick")) {
            sz = quick;
            continue;
        }
        if (!val)
            return usage();
        first++;
        if (!strcmp(opt, "--csv"))
            emit_open_csv(val);
        else if (!strcmp(opt, "--n") && strtoull(val, NULL, 10) >= 10)
            n = strtoull(val, NULL, 10);
        else if (!strcmp(opt, "--warmup"))
            warmup = atoi(val);
        else if (!strcmp(opt, "--impl"))
            only = val;
        else
            return usage();
    }
    if (n)
        sz.timers = n;
    make_bound(sz.timers);
    for (int i = first; i < argc; i++)
        if (!known(argv[i]))
            return usage();
    printf("%-20s %-7s %10s  %-20s %14s %s\n", "workload", "impl", "n",
           "metric", "value", "unit");
    for (size_t i = 0; i < NIMPLS; i++)
        if (!only || !strcmp(only, impls[i].name))
            bad += run_impl(&impls[i], argc, argv, first, &sz, warmup);
    emit_close_csv();
    return bad ? 1 : 0;
}
