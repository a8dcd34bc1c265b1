/*
 * The soak (`make soak`, not in CI): millions of timers through both core
 * designs and three configurations of the threaded service, for a bounded
 * time, with exact accounting and memory back to its baseline.
 *
 *   core    a virtual clock; a million timers scheduled, re-armed and
 *           cancelled at random, advances small and large, bounded and not;
 *           callbacks that re-arm themselves or cancel others. Every
 *           callback checks that its timer was pending (never twice), is
 *           not early, and is not late (it was not due at the previous
 *           complete advance). At the end the timers still pending are
 *           handed back (visited, then detached by tw_destroy()), and
 *               scheduled == ran + cancelled + handed back.
 *   service producer threads schedule one-shot and periodic timers on the
 *           real clock, keep some handles and cancel some of them;
 *           callbacks check they are not early. Stop hands back the rest,
 *           and the service's counters must match the soak's own, one for
 *           one:   scheduled == completed + cancelled + returned.
 *
 * After each phase every byte is freed and jemalloc's stats.allocated
 * (after flushing this thread's cache and refreshing the statistics) must
 * equal what it was before the phase: no growth, no leak.
 *
 *   usage: soak [SECONDS [SEED]]      (default 180 s)
 */
#include <errno.h>
#include <inttypes.h>
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"
#include "timewheel.h"

__extension__ typedef unsigned __int128 u128;

#define MS UINT64_C(1000000)
#define SEC (1000 * MS)

/* Timers of a core phase: enough that most are pending at once. */
#define CORE_TIMERS (1u << 20)
/* Operations between two advances of the virtual clock. */
#define OPS_PER_ADVANCE 64
/* Producer threads of a service phase, and the handles each keeps. */
#define PRODUCERS 2
#define KEPT 1024
/* Producers pause while the service holds this many timers, so that a
 * worker slower than the producers cannot run the machine out of memory. */
#define SERVICE_BACKLOG 400000

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static uint64_t seed;

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "soak: FAILED: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (seed %" PRIu64 ")\n", seed);
    va_end(ap);
    exit(1);
}

static uint64_t clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / SEC), (long)(ns % SEC)};

    nanosleep(&ts, NULL);
}

/* splitmix64 */
static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n)
{
    return n ? rnd(s) % n : 0;
}

typedef int ctl_fn(const char *, void *, size_t *, void *, size_t);

/* The library's private jemalloc (lib/core/jemalloc.c): hidden in the
 * shared library, reached by its prefixed name in this static link. */
int tw_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                  size_t newlen);

static size_t allocated_by(ctl_fn *ctl)
{
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch), bytes = 0;

    if (ctl("thread.tcache.flush", NULL, NULL, NULL, 0) ||
        ctl("epoch", &epoch, &sz, &epoch, sz))
        die("jemalloc statistics unavailable");
    sz = sizeof(bytes);
    if (ctl("stats.allocated", &bytes, &sz, NULL, 0))
        die("jemalloc statistics unavailable");
    return bytes;
}

/* Bytes the program has allocated, as jemalloc counts them: the program's
 * own jemalloc (-ljemalloc) and the library's. */
static size_t allocated(void)
{
    return allocated_by(mallctl) + allocated_by(tw_je_mallctl);
}

static void memory_back(const char *phase, size_t baseline, size_t peak)
{
    size_t now = allocated();

    if (now != baseline)
        die("%s: %zu bytes allocated after the phase, %zu before", phase, now,
            baseline);
    printf("  memory: %zu bytes at the peak, back to the baseline of %zu\n",
           peak, baseline);
}

/* ---- core -----------------------------------------------------------------
 */

struct ctimer {
    struct tw_timer t;
    struct core *c;
    uint64_t due_at; /* the tick boundary it is due at */
    uint64_t stamp;  /* core.stamp when it was last scheduled */
    bool pending;    /* the soak's view */
};

struct core {
    struct tw_wheel *w;
    struct tw_config cfg;
    struct ctimer *timers;
    uint64_t rng;
    uint64_t epoch;     /* advances started */
    uint64_t stamp;     /* goes up as each advance starts and ends */
    uint64_t prev_now;  /* time of the previous advance */
    bool prev_complete; /* it ran everything due */
    uint64_t now;       /* time of the running advance */
    uint64_t max_delay; /* in ticks, for the common long delays */
    uint64_t scheduled, ran, cancelled, rearmed, handed_back, pending;
};

/* The tick boundary a deadline is due at (the contract's arithmetic). */
static uint64_t due_at(const struct tw_config *cfg, uint64_t deadline)
{
    u128 ticks, at;

    if (deadline <= cfg->start_ns)
        return cfg->start_ns;
    ticks = ((u128)deadline - cfg->start_ns + cfg->tick_ns - 1) / cfg->tick_ns;
    at = cfg->start_ns + ticks * cfg->tick_ns;
    return at > UINT64_MAX ? UINT64_MAX : (uint64_t)at;
}

/* A delay in ns: mostly within a few hundred ticks, some long, a few in the
 * past or far away. */
static uint64_t random_deadline(struct core *c)
{
    uint64_t tick = c->cfg.tick_ns, now = tw_now(c->w), r = below(&c->rng, 100);
    uint64_t ticks;

    if (r < 4)
        return now - below(&c->rng, now < 5 * tick ? now + 1 : 5 * tick);
    if (r < 54)
        ticks = below(&c->rng, 64);
    else if (r < 84)
        ticks = below(&c->rng, 4096);
    else if (r < 99)
        ticks = below(&c->rng, c->max_delay);
    else
        ticks = below(&c->rng, c->max_delay << 6);
    return sat_add(now, ticks * tick + below(&c->rng, tick));
}

static void core_schedule(struct core *c, struct ctimer *ct)
{
    uint64_t d = random_deadline(c);
    int rc = tw_rearm(c->w, &ct->t, d);

    if (rc != (int)ct->pending)
        die("rearm returned %d for a timer %spending", rc,
            ct->pending ? "" : "not ");
    if (ct->pending) {
        c->rearmed++;
    } else {
        c->scheduled++;
        c->pending++;
    }
    ct->pending = true;
    ct->due_at = due_at(&c->cfg, d);
    ct->stamp = c->stamp;
}

static void core_cancel(struct core *c, struct ctimer *ct)
{
    int rc = tw_cancel(c->w, &ct->t);

    if (rc != (int)ct->pending)
        die("cancel returned %d for a timer %spending", rc,
            ct->pending ? "" : "not ");
    if (ct->pending) {
        c->cancelled++;
        c->pending--;
    }
    ct->pending = false;
}

static struct ctimer *any_timer(struct core *c)
{
    return &c->timers[below(&c->rng, CORE_TIMERS)];
}

static void core_fire(struct tw_timer *t, void *arg)
{
    struct ctimer *ct = arg;
    struct core *c = ct->c;
    uint64_t r;

    (void)t;
    if (!ct->pending)
        die("a timer ran that was not pending");
    if (c->now < ct->due_at)
        die("a timer ran early: at %" PRIu64 ", due at %" PRIu64, c->now,
            ct->due_at);
    /* Pending all through the previous advance (its stamp is below the
     * one that advance had while running), which ran all that was due. */
    if (ct->stamp + 3 <= c->stamp && c->prev_complete &&
        ct->due_at <= c->prev_now)
        die("a timer ran late: due at %" PRIu64 ", the advance to %" PRIu64
            " left it",
            ct->due_at, c->prev_now);
    ct->pending = false;
    c->ran++;
    c->pending--;
    r = below(&c->rng, 100);
    if (r < 10)
        core_schedule(c, ct); /* periodic */
    else if (r < 15)
        core_cancel(c, any_timer(c));
}

static void core_advance(struct core *c)
{
    uint64_t tick = c->cfg.tick_ns, r = below(&c->rng, 1000), step, budget;
    int64_t ran;

    if (r < 2 && c->cfg.mode == TW_HIER)
        step = below(&c->rng, 86400 * SEC); /* up to a day at once */
    else if (r < 20)
        step = below(&c->rng, 1000) * tick;
    else
        step = below(&c->rng, 8) * tick + below(&c->rng, tick);
    budget = below(&c->rng, 10) == 0 ? 1 + below(&c->rng, 64) : 0;
    c->epoch++;
    c->stamp++;
    c->now = sat_add(tw_now(c->w), step);
    ran = budget ? tw_advance_bounded(c->w, c->now, budget)
                 : tw_advance(c->w, c->now);
    c->stamp++;
    if (ran < 0)
        die("advance returned %" PRId64, ran);
    c->prev_now = c->now;
    c->prev_complete = !budget || (uint64_t)ran < budget;
    if (tw_pending(c->w) != c->pending)
        die("tw_pending() %zu, soak %" PRIu64, tw_pending(c->w), c->pending);
}

static int count_back(struct tw_timer *t, void *ctx)
{
    struct ctimer *ct = t->arg;

    if (!ct->pending)
        die("visit found a timer that is not pending");
    ++*(uint64_t *)ctx;
    return 0;
}

/* Hand back what is still pending, check the accounting, free it all. */
static void core_finish(struct core *c, const char *name)
{
    char why[256];

    if (tw_check(c->w, why, sizeof(why)))
        die("%s: invariant: %s", name, why);
    if (tw_visit(c->w, count_back, &c->handed_back))
        die("%s: visit failed", name);
    if (tw_destroy(c->w))
        die("%s: destroy failed", name);
    for (size_t i = 0; i < CORE_TIMERS; i++)
        if (tw_timer_pending(&c->timers[i].t))
            die("%s: a timer is still pending after destroy", name);
    if (c->scheduled != c->ran + c->cancelled + c->handed_back)
        die("%s: %" PRIu64 " scheduled != %" PRIu64 " ran + %" PRIu64
            " cancelled + %" PRIu64 " handed back",
            name, c->scheduled, c->ran, c->cancelled, c->handed_back);
    printf("  %" PRIu64 " scheduled = %" PRIu64 " ran + %" PRIu64
           " cancelled + %" PRIu64 " handed back (and %" PRIu64
           " re-arms, %" PRIu64 " advances)\n",
           c->scheduled, c->ran, c->cancelled, c->handed_back, c->rearmed,
           c->epoch);
    free(c->timers);
}

static void core_phase(const char *name, enum tw_mode mode, uint64_t seconds)
{
    struct core c = {0};
    size_t baseline = allocated(), peak = 0;
    uint64_t end = clock_ns() + seconds * SEC, next_check = 0;
    char why[256];

    printf("%s, %" PRIu64 " s\n", name, seconds);
    tw_config_init(&c.cfg, mode);
    /* The hashed wheel walks a bucket per tick: keep its timers nearer. */
    c.max_delay = mode == TW_HIER ? UINT64_C(1) << 30 : UINT64_C(1) << 13;
    c.rng = seed ^ mode;
    c.cfg.start_ns = rnd(&c.rng) >> 8;
    c.w = tw_create(&c.cfg, NULL);
    c.timers = calloc(CORE_TIMERS, sizeof(*c.timers));
    if (!c.w || !c.timers)
        die("%s: out of memory", name);
    for (size_t i = 0; i < CORE_TIMERS; i++) {
        c.timers[i].c = &c;
        tw_timer_init(&c.timers[i].t, core_fire, &c.timers[i]);
    }
    while (clock_ns() < end) {
        for (int i = 0; i < OPS_PER_ADVANCE; i++) {
            if (below(&c.rng, 100) < 80)
                core_schedule(&c, any_timer(&c));
            else
                core_cancel(&c, any_timer(&c));
        }
        core_advance(&c);
        if (clock_ns() >= next_check) { /* the checker is O(timers) */
            if (tw_check(c.w, why, sizeof(why)))
                die("%s: invariant: %s", name, why);
            if (allocated() > peak)
                peak = allocated();
            next_check = clock_ns() + 2 * SEC;
        }
    }
    core_finish(&c, name);
    memory_back(name, baseline, peak);
}

/* ---- service --------------------------------------------------------------
 */

struct svc {
    struct tw_service *s;
    atomic_bool stop;
    atomic_uint_fast64_t accepted, rejected, cancel_won, oneshot_runs;
    atomic_uint_fast64_t periodic_runs, early, handed_back;
    size_t peak;
};

struct producer {
    struct svc *v;
    uint64_t rng;
    struct tw_handle *kept[KEPT];
};

static void check_not_early(struct svc *v, struct tw_handle *h)
{
    if (clock_ns() < tw_handle_deadline(h))
        atomic_fetch_add(&v->early, 1);
}

static void oneshot_cb(struct tw_handle *h, void *arg)
{
    struct svc *v = arg;

    check_not_early(v, h);
    atomic_fetch_add(&v->oneshot_runs, 1);
}

/* Periodic timers cancel themselves now and then, from their callback. */
static void periodic_cb(struct tw_handle *h, void *arg)
{
    struct svc *v = arg;

    check_not_early(v, h);
    atomic_fetch_add(&v->periodic_runs, 1);
    if (clock_ns() % 64 == 0 && tw_handle_cancel(h) == 1)
        atomic_fetch_add(&v->cancel_won, 1);
}

static void handed_back(const struct tw_handback *t, void *ctx)
{
    struct svc *v = ctx;

    if (t->arg != v)
        die("handed back a timer that is not ours");
    atomic_fetch_add(&v->handed_back, 1);
}

static void keep(struct producer *p, struct tw_handle *h)
{
    struct tw_handle **slot = &p->kept[below(&p->rng, KEPT)];

    if (*slot) {
        if (below(&p->rng, 2)) {
            int rc = tw_handle_cancel(*slot);

            if (rc < 0)
                die("cancel returned %d", rc);
            atomic_fetch_add(&p->v->cancel_won, (unsigned)rc);
        }
        tw_handle_release(*slot);
    }
    *slot = h;
}

/* One schedule: mostly short one-shot timers (some never kept, some kept
 * and perhaps cancelled), a few far away (handed back at stop), a few
 * periodic ones. False when the service refused it as full. */
static bool produce_one(struct producer *p)
{
    uint64_t r = below(&p->rng, 1000), delay;
    struct tw_handle *h = NULL;
    bool want = below(&p->rng, 4) == 0;
    int rc;

    if (r < 2) {
        rc = tw_service_schedule_periodic(
            p->v->s, below(&p->rng, 5 * MS), MS + below(&p->rng, 4 * MS),
            below(&p->rng, 2) ? TW_FIXED_RATE : TW_FIXED_DELAY, periodic_cb,
            p->v, &h);
        want = true;
    } else {
        delay = r < 700   ? below(&p->rng, 20 * MS)
                : r < 950 ? 20 * MS + below(&p->rng, 180 * MS)
                          : 10 * SEC;
        rc = tw_service_schedule(p->v->s, delay, oneshot_cb, p->v,
                                 want ? &h : NULL);
    }
    if (rc == -EAGAIN) {
        atomic_fetch_add(&p->v->rejected, 1);
        return false;
    }
    if (rc)
        die("schedule returned %d", rc);
    atomic_fetch_add(&p->v->accepted, 1);
    if (want)
        keep(p, h);
    return true;
}

static void *producer_main(void *arg)
{
    struct producer *p = arg;
    struct tw_service_stats st;

    while (!atomic_load(&p->v->stop)) {
        bool full = false;

        for (int i = 0; i < 256 && !full; i++)
            full = !produce_one(p);
        tw_service_stats(p->v->s, &st);
        if (full)
            sleep_ns(MS / 10); /* back off, as a caller of -EAGAIN would */
        else if (st.pending > SERVICE_BACKLOG)
            sleep_ns(MS);
    }
    return NULL;
}

static void service_check(const char *name, struct svc *v)
{
    struct tw_service_stats st;
    uint64_t runs = v->oneshot_runs + v->periodic_runs;

    tw_service_stats(v->s, &st);
    if (v->early)
        die("%s: %" PRIu64 " callbacks ran early", name, (uint64_t)v->early);
    if (st.scheduled != v->accepted || st.rejected != v->rejected)
        die("%s: service counted %" PRIu64 " scheduled, %" PRIu64
            " rejected; producers %" PRIu64 ", %" PRIu64,
            name, st.scheduled, st.rejected, (uint64_t)v->accepted,
            (uint64_t)v->rejected);
    if (st.completed != v->oneshot_runs || st.runs != runs)
        die("%s: service counted %" PRIu64 " completed, %" PRIu64
            " runs; callbacks %" PRIu64 " one-shot, %" PRIu64 " in all",
            name, st.completed, st.runs, (uint64_t)v->oneshot_runs, runs);
    if (st.cancelled != v->cancel_won || st.returned != v->handed_back)
        die("%s: service counted %" PRIu64 " cancelled, %" PRIu64
            " returned; cancels won %" PRIu64 ", handed back %" PRIu64,
            name, st.cancelled, st.returned, (uint64_t)v->cancel_won,
            (uint64_t)v->handed_back);
    if (st.pending != 0 ||
        st.scheduled != st.completed + st.cancelled + st.returned)
        die("%s: %" PRIu64 " scheduled != %" PRIu64 " completed + %" PRIu64
            " cancelled + %" PRIu64 " returned (%" PRIu64 " pending)",
            name, st.scheduled, st.completed, st.cancelled, st.returned,
            st.pending);
    printf("  %" PRIu64 " scheduled = %" PRIu64 " completed + %" PRIu64
           " cancelled + %" PRIu64 " returned (%" PRIu64 " runs, %" PRIu64
           " rejected, %" PRIu64 " wake-ups)\n",
           st.scheduled, st.completed, st.cancelled, st.returned, st.runs,
           st.rejected, st.wakeups);
}

static void service_phase(const char *name, enum tw_mode mode, unsigned threads,
                          size_t max_pending, uint64_t seconds)
{
    static struct producer prod[PRODUCERS];
    struct tw_service_config cfg;
    pthread_t tid[PRODUCERS];
    size_t baseline = allocated();
    struct svc v = {0};
    int err = 0;

    printf("%s, %" PRIu64 " s\n", name, seconds);
    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = threads;
    cfg.max_pending = max_pending;
    v.s = tw_service_create(&cfg, &err);
    if (!v.s)
        die("%s: create: %s", name, tw_strerror(err));
    for (int i = 0; i < PRODUCERS; i++) {
        memset(&prod[i], 0, sizeof(prod[i]));
        prod[i].v = &v;
        prod[i].rng = seed + (uint64_t)i * 7919 + mode;
        if (pthread_create(&tid[i], NULL, producer_main, &prod[i]))
            die("%s: cannot start a producer", name);
    }
    sleep_ns(seconds * SEC / 2);
    v.peak = allocated();
    sleep_ns(seconds * SEC - seconds * SEC / 2);
    atomic_store(&v.stop, true);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(tid[i], NULL);
    if (tw_service_stop(v.s, handed_back, &v))
        die("%s: stop failed", name);
    service_check(name, &v);
    if (tw_service_destroy(v.s))
        die("%s: destroy failed", name);
    for (int i = 0; i < PRODUCERS; i++)
        for (int k = 0; k < KEPT; k++)
            tw_handle_release(prod[i].kept[k]);
    memory_back(name, baseline, v.peak);
}

static void *warm(void *arg)
{
    free(malloc(64));
    sleep_ns(10 * MS);
    return arg;
}

/*
 * glibc keeps the stacks of joined threads for reuse, and with each one the
 * thread's TLS vector, which it allocated with malloc (so jemalloc counts
 * it). Starting and joining, once, more threads at a time than any phase
 * runs fills that cache before the first baseline is taken; the phases'
 * threads then reuse it and the baseline holds exactly.
 */
static void warm_thread_cache(void)
{
    pthread_t t[2 * (PRODUCERS + 3)];
    size_t n = sizeof(t) / sizeof(t[0]);

    for (size_t i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, warm, NULL))
            die("cannot start a thread");
    for (size_t i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    uint64_t seconds = argc > 1 ? strtoull(argv[1], NULL, 0) : 180;
    uint64_t core_s, svc_s, t0 = clock_ns();

    seed = argc > 2 ? strtoull(argv[2], NULL, 0) : UINT64_C(20261122);
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows in a log file too */
    if (seconds < 10)
        seconds = 10;
    core_s = seconds / 4;
    svc_s = (seconds - 2 * core_s) / 3;
    printf("soak: %" PRIu64 " s, seed %" PRIu64 " (rerun: soak %" PRIu64
           " %" PRIu64 ")\n",
           seconds, seed, seconds, seed);
    fflush(stdout);
    warm_thread_cache();
    core_phase("core, hierarchical", TW_HIER, core_s);
    core_phase("core, hashed", TW_HASHED, core_s);
    service_phase("service, hierarchical, callbacks on the worker", TW_HIER, 0,
                  0, svc_s);
    service_phase("service, hierarchical, 2 executor threads, at most "
                  "100000 pending",
                  TW_HIER, 2, 100000, svc_s);
    service_phase("service, hashed, 1 executor thread", TW_HASHED, 1, 0, svc_s);
    printf("soak: passed in %.0f s\n", (double)(clock_ns() - t0) / 1e9);
    return 0;
}
