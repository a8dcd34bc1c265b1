/*
 * The reaping backlog (lib/service/backlog.c): cancelled handles waiting
 * for the worker are bounded by what is outstanding, not by time.
 *
 * The test allocator (tests/util.c) counts the blocks the library holds, so
 * the dead handles a stream of cancels leaves are counted exactly, without
 * looking at the clock: a fixed set of timers stays outstanding while this
 * thread schedules and cancels one timer after another as fast as it can
 * (the RPC pattern with answers that come at once). Before the bound, the
 * worker reaped every TW__REAP_NS (100 ms) only, and at a few million
 * pairs a second the dead handles reached hundreds of thousands; with it,
 * a few thousand (a sixteenth of the outstanding, at least 512, twice that
 * before a canceller waits for the worker, checked once per 511). The
 * limit asserted is far
 * above that, for a worker that a loaded machine holds off the processor
 * for tens of milliseconds, and far below what the timer alone left.
 *
 * And what must not change: a slow stream of cancels costs no wake-up per
 * cancel, nor does a burst of cancels alone; a callback that cancels a
 * stream on the worker does not wait for itself; stop ends a stream of
 * cancels that are waiting for the worker.
 */
#define _GNU_SOURCE 1 /* RUSAGE_THREAD */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "timewheel.h"
#include "util.h"

#define HOUR (UINT64_C(3600) * SEC)
/* Timers outstanding meanwhile: the wheel the bound is a sixteenth of. */
#define OUTSTANDING 4096
/* Schedule-and-cancel pairs of the stream. */
#define PAIRS 1000000
/* How often the stream counts the blocks held. */
#define EVERY 256
/* Most dead handles (and ring blocks) the stream may leave at any count.
 * With the bound: 2,900 to 6,000 here, up to 20,000 while other jobs
 * loaded the machine (load average 7-10: each 2 ms the worker does not
 * come, a canceller goes on for one more block; 60,000 seen with an
 * earlier bound four times as high). Without it (the worker reaping every
 * 100 ms): hier 257,538 to 647,602 here, hashed 49,339 to 257,538 (its
 * worker wakes every tick, so how far it falls behind depends on the
 * processors it gets: the hashed case does not fail every time without
 * the bound). */
#define MOST_DEAD 131072

static void counted(void)
{
    alloc_install(false);
}

/* Schedule one timer an hour out and cancel it at once, n times; the most
 * blocks held beyond `base` at any count. */
static unsigned long stream(struct tw_service *s, unsigned long n,
                            unsigned long base)
{
    unsigned long most = 0;

    for (unsigned long i = 0; i < n; i++) {
        struct tw_handle *h;

        cr_assert_eq(tw_service_schedule(s, HOUR, count_run, NULL, &h), 0);
        cr_assert_eq(tw_handle_cancel_release(h), 1);
        unsigned long live = alloc_live(); /* base: the ring blocks of the
                                            * outstanding go back too */

        if (i % EVERY == 0 && live > base && live - base > most)
            most = live - base;
    }
    return most;
}

static void outstanding(struct tw_service *s, struct tw_handle **h)
{
    for (int i = 0; i < OUTSTANDING; i++)
        cr_assert_eq(tw_service_schedule(s, HOUR, count_run, NULL, &h[i]), 0);
}

static void let_go(struct tw_handle **h)
{
    for (int i = 0; i < OUTSTANDING; i++)
        cr_assert_eq(tw_handle_cancel_release(h[i]), 1);
}

static void dead_stay_bounded(enum tw_mode mode)
{
    static struct tw_handle *h[OUTSTANDING];
    struct tw_service *s = default_service(mode);
    unsigned long base, most;

    outstanding(s, h);
    base = alloc_live();
    most = stream(s, PAIRS, base);
    cr_assert_leq(most, MOST_DEAD,
                  "%lu blocks held beyond the %d outstanding timers during "
                  "a stream of %d cancels",
                  most, OUTSTANDING, PAIRS);
    let_go(h);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(atomic_load(&runs), 0);
}

Test(service_backlog, dead_handles_bounded_by_outstanding_hier, .init = counted)
{
    dead_stay_bounded(TW_HIER);
}

Test(service_backlog, dead_handles_bounded_by_outstanding_hashed,
     .init = counted)
{
    dead_stay_bounded(TW_HASHED);
}

/* The same when one thread schedules and another cancels (a client's
 * caller sets the timeout, its I/O thread cancels it on the answer): the
 * window between them holds OUTSTANDING timers. */
/* With the bound: 1,500 to 3,200 here; without it: 111,910 to 152,049
 * (the handing over between the threads slows the stream). */
#define MOST_DEAD_HANDOFF 32768

struct handoff {
    struct tw_service *s;
    struct tw_handle *h[OUTSTANDING];
    atomic_ulong sent, taken; /* handles put into h and taken out */
};

static void *send_all(void *arg)
{
    struct handoff *x = arg;

    for (unsigned long i = 0; i < PAIRS + OUTSTANDING; i++) {
        while (i - atomic_load(&x->taken) >= OUTSTANDING)
            sched_yield(); /* the window is full: wait for the canceller */
        cr_assert_eq(tw_service_schedule(x->s, HOUR, count_run, NULL,
                                         &x->h[i % OUTSTANDING]),
                     0);
        atomic_store(&x->sent, i + 1);
    }
    return NULL;
}

Test(service_backlog, dead_handles_bounded_when_another_thread_cancels,
     .init = counted)
{
    static struct handoff x;
    unsigned long base = alloc_live(), most = 0;
    pthread_t t;

    x.s = default_service(TW_HIER);
    cr_assert_eq(pthread_create(&t, NULL, send_all, &x), 0);
    for (unsigned long i = 0; i < PAIRS; i++) {
        unsigned long live;

        while (atomic_load(&x.sent) < i + OUTSTANDING)
            sched_yield(); /* keep OUTSTANDING in the window */
        cr_assert_eq(tw_handle_cancel_release(x.h[i % OUTSTANDING]), 1);
        atomic_store(&x.taken, i + 1);
        live = alloc_live();
        if (i % EVERY == 0 && live > base + OUTSTANDING &&
            live - base - OUTSTANDING > most)
            most = live - base - OUTSTANDING;
    }
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_leq(most, MOST_DEAD_HANDOFF,
                  "%lu blocks held beyond the %d outstanding timers during "
                  "a stream of %d cancels from another thread",
                  most, OUTSTANDING, PAIRS);
    for (unsigned long i = PAIRS; i < PAIRS + OUTSTANDING; i++)
        cr_assert_eq(tw_handle_cancel_release(x.h[i % OUTSTANDING]), 1);
    cr_assert_eq(tw_service_destroy(x.s), 0);
}

/* A short stream of cancels is reaped by the worker's timer as before, and
 * by count at most once per 512: a thousand cancels (two blocks of the
 * ring, so the backlog is looked at) wake the worker a few times at most,
 * not a thousand. */
Test(service_backlog, slow_stream_costs_no_wakeup_per_cancel, .init = counted)
{
    struct tw_service *s = default_service(TW_HIER);
    uint64_t before;

    cr_assert_eq(tw_service_schedule(s, HOUR, count_run, NULL, NULL), 0);
    sleep_ns(20 * MS); /* the worker asleep until the hour */
    before = service_stats(s).wakeups;
    stream(s, 1000, alloc_live());
    sleep_ns(20 * MS);
    cr_assert_leq(service_stats(s).wakeups - before, 20,
                  "%llu wake-ups for 1000 cancels",
                  (unsigned long long)(service_stats(s).wakeups - before));
    cr_assert_eq(tw_service_destroy(s), 0);
}

#ifndef BURST_WAKEUPS
/* The first cancel wakes the worker (asleep until the hour), and its timer
 * may once more: 1 here. (A wake-up is a sleep that ended, so this does
 * not see kicks that reach a worker already awake and reaping.) */
#define BURST_WAKEUPS 4
#endif

/* A burst of cancels alone (a wheel being emptied) frees as many live
 * timers as it makes dead ones: memory does not grow, and the burst is
 * neither held up nor made to wake the worker per block of its ring (100
 * blocks here): the worker reaps it on its timer, as before the bound. */
Test(service_backlog, cancel_burst_alone_wakes_no_worker, .init = counted)
{
    static struct tw_handle *h[51100];
    struct tw_service *s = default_service(TW_HIER);
    uint64_t before;

    for (int i = 0; i < 51100; i++)
        cr_assert_eq(tw_service_schedule(s, HOUR, count_run, NULL, &h[i]), 0);
    sleep_ns(20 * MS); /* taken in; the worker asleep until the hour */
    before = service_stats(s).wakeups;
    for (int i = 0; i < 51100; i++)
        cr_assert_eq(tw_handle_cancel_release(h[i]), 1);
    sleep_ns(20 * MS);
    cr_assert_leq(service_stats(s).wakeups - before, BURST_WAKEUPS,
                  "%llu wake-ups for a burst of 51100 cancels",
                  (unsigned long long)(service_stats(s).wakeups - before));
    cr_assert_eq(tw_service_destroy(s), 0);
}

static atomic_int streamed;

/* On the worker: a stream far past the bound, which must not wait for the
 * worker it runs on. */
static void stream_cb(struct tw_handle *h, void *arg)
{
    struct tw_service *s = arg;

    (void)h;
    for (int i = 0; i < 20000; i++) {
        struct tw_handle *t;

        if (tw_service_schedule(s, HOUR, count_run, NULL, &t) ||
            tw_handle_cancel_release(t) != 1)
            return;
    }
    atomic_store(&streamed, 1);
}

Test(service_backlog, callback_on_the_worker_does_not_wait_for_it,
     .init = counted)
{
    struct tw_service *s = default_service(TW_HIER);
    unsigned long base = alloc_live();

    cr_assert_eq(tw_service_schedule(s, 0, stream_cb, s, NULL), 0);
    wait_for(&streamed, 1, "the callback's 20000 cancels");
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_leq(alloc_live(), base);
}

/*
 * A callback of service A that schedules and cancels service B's timers in
 * the RPC pattern while B's worker is held up (in a long callback) must not
 * wait for B on A's worker, which would hold up every timer of A: the
 * backlog's waits are never on a thread of any service (issue 28, item 7).
 * Before, only A waiting for A was excepted: 200,000 pairs past the bound
 * slept 2 ms once per 511, some 390 sleeps. Counted as the thread's
 * voluntary context switches (each timed sleep is one), not as time, which
 * a loaded machine stretches either way.
 */
#define CROSS_PAIRS 200000

struct cross {
    struct tw_service *b;
    atomic_int done;
    long switches; /* voluntary, during the pairs */
    int wrong;
};

static void pairs_on_other(struct tw_handle *h, void *arg)
{
    struct cross *x = arg;
    struct rusage before, after;

    (void)h;
    getrusage(RUSAGE_THREAD, &before);
    for (int i = 0; i < CROSS_PAIRS && !x->wrong; i++) {
        struct tw_handle *t;

        if (tw_service_schedule(x->b, HOUR, count_run, NULL, &t) ||
            tw_handle_cancel_release(t) != 1)
            x->wrong = 1;
    }
    getrusage(RUSAGE_THREAD, &after);
    x->switches = after.ru_nvcsw - before.ru_nvcsw;
    atomic_store(&x->done, 1);
}

Test(service_backlog, callback_of_one_service_does_not_wait_for_another,
     .init = counted, .timeout = 60)
{
    struct tw_service *a = default_service(TW_HIER);
    static struct cross x;
    static struct hold hd;

    x.b = default_service(TW_HIER);
    cr_assert_eq(tw_service_schedule(x.b, 0, hold_cb, &hd, NULL), 0);
    wait_for(&hd.in, 1, "B's worker held up");
    cr_assert_eq(tw_service_schedule(a, 0, pairs_on_other, &x, NULL), 0);
    while (!atomic_load(&x.done))
        sleep_ns(MS);
    atomic_store(&hd.go, 1);
    cr_assert_eq(x.wrong, 0);
    cr_assert_lt(x.switches, 40,
                 "A's worker slept %ld times for B's while it scheduled and "
                 "cancelled %d of B's timers",
                 x.switches, CROSS_PAIRS);
    cr_assert_eq(tw_service_destroy(a), 0);
    cr_assert_eq(tw_service_destroy(x.b), 0);
}

struct streamer {
    struct tw_service *s;
    atomic_int started;
    int last;    /* the schedule's answer that ended the stream */
    int handed;  /* cancels that answered 0: stop handed the timer back */
    int strange; /* a cancel's answer other than 0 or 1, or 0 when none */
};

static void *stream_until_stop(void *arg)
{
    struct streamer *st = arg;
    struct tw_handle *h;

    for (;;) {
        int rc = tw_service_schedule(st->s, HOUR, count_run, NULL, &h);

        if (rc == -EAGAIN)
            continue;
        if (rc) {
            st->last = rc;
            return NULL;
        }
        /* 1, or 0 when stop handed the timer back between the two calls
         * (service.h); asserted by the test's thread, not this one. */
        rc = tw_handle_cancel_release(h);
        if (rc == 0)
            st->handed++;
        else if (rc != 1)
            st->strange = rc;
        atomic_store(&st->started, 1);
    }
}

/* Stop ends a stream of cancels however far behind the worker is: the
 * cancellers see the service closing and stop yielding to it. */
Test(service_backlog, stop_ends_a_stream_of_cancels, .init = counted)
{
    struct streamer st[2] = {{.s = default_service(TW_HIER)}};
    pthread_t t[2];

    st[1].s = st[0].s;
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, stream_until_stop, &st[i]), 0);
    for (int i = 0; i < 2; i++)
        while (!atomic_load(&st[i].started))
            sleep_ns(MS);
    sleep_ns(50 * MS);
    cr_assert_eq(tw_service_stop(st[0].s, NULL, NULL), 0);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_join(t[i], NULL), 0);
        cr_assert_eq(st[i].last, -ESHUTDOWN);
        cr_assert_eq(st[i].strange, 0);
        cr_assert_leq(st[i].handed, 1,
                      "stop handed back %d timers of one "
                      "thread, which waits for each cancel",
                      st[i].handed);
    }
    cr_assert_eq(tw_service_destroy(st[0].s), 0);
}

/*
 * Many producers in the RPC pattern (issue 28, item 6): each of `threads`
 * threads schedules a 50 ms one-shot with a release hook and cancels it at
 * once, in a loop, so at most one timer per thread is outstanding. The
 * cancel's message is taken at once, but the dead handle itself waits in
 * its producer's new-timer ring (or, beyond the 64 stripes, in the new
 * queue) until the worker admits it; with more producers than cores the
 * worker gets a small share of them, and before the backlog counted those
 * unadmitted handles the cancellers never waited for it. Measured here on
 * 2 cores before the fix: see the figures at RPC_MOST_PER_THREAD and
 * RPC_LATE_SHARE.
 */
/* How long the producers run. */
#define RPC_RUN (3000 * MS)
/* The promise (timewheel/service.h, tw_handle_cancel): let go of within
 * 100 ms of the cancel. */
#define RPC_LET_GO (100 * MS)
/* What is asserted, with room for a loaded 2-core machine (other jobs
 * and other tests beside these 100 threads): the share of releases later
 * than RPC_LET_GO, and of those later than RPC_VERY_LATE, both timed from
 * the cancel. Before the rings' backlog counted the unadmitted handles
 * 97-99.5 % were later than 100 ms and most later than 1 s (the backlog
 * grew for the whole run); with it, 0.004-24 % and almost none (the
 * longest 0.15-2.2 s at load averages of 12-58). Before every thread
 * without a ring looked at the new queue (backlog.c), 100 producers under
 * ASan left 57 % of the ring-less ones' timers for more than 1 s in 1 run
 * of 4, and 6 % of all in 1 plain run of 3 (load average 9-10); since,
 * under ASan 0-20 % later than 100 ms and none later than 1 s, plain 0-3 %
 * and none (load average 10-16, longest 0.09-0.56 s). */
#define RPC_LATE_SHARE 0.5
#define RPC_VERY_LATE (1000 * MS)
#define RPC_VERY_LATE_SHARE 0.05
/* Most blocks the library holds per producer thread beyond the start (its
 * rings' blocks, its timers waiting for the worker, cancel messages on the
 * queue): the bound of backlog.c is a few hundred handles per ring, twice
 * that before a producer waits, plus the blocks of two rings. Measured in
 * 3 s runs at load averages of 12-58: 525-5,099 a thread with the fix,
 * 17,649-67,431 without (the backlog grew for the whole run). */
#define RPC_MOST_PER_THREAD 12288

struct rpc_run {
    struct tw_service *s;
    uint64_t until;
    bool hook;
    atomic_uint started; /* producers so far, to tell the later ones */
    atomic_ulong pairs;
    atomic_ulong wrong; /* a schedule's error, or 1000: a cancel's */
    unsigned long base; /* blocks held before the producers started */
    atomic_ulong most;  /* most held beyond base, as the producers saw */
};

/* The producers count the blocks held themselves, every 64 pairs: a
 * thread of the test's own could be held off the processor by them for
 * the whole run. */
static void rpc_count(struct rpc_run *r)
{
    /* alloc_live() reads two counters one after the other: while others
     * allocate and free it may read a few below the truth, even below 0 */
    long held = (long)(alloc_live() - r->base);
    unsigned long m = atomic_load(&r->most);

    while (held > 0 && (unsigned long)held > m &&
           !atomic_compare_exchange_weak(&r->most, &m, (unsigned long)held))
        ;
}

static atomic_ulong rpc_released, rpc_late, rpc_very_late, rpc_reused;
static _Atomic uint64_t rpc_longest;

/* The release times, in decades of milliseconds (up to 1, 10, 100, 1000,
 * more), of the first RPC_RINGED producers started (which most likely
 * claimed a stripe and a ring) and of the others (the later ones, which
 * most likely push onto the shared queues): printed, so that a run says
 * where the late ones came from. */
#define RPC_DECADES 5
#define RPC_RINGED 60
static atomic_ulong rpc_hist[2][RPC_DECADES];

/* When each producer cancelled each of its timers: the release hook's arg
 * names a producer and its timer's sequence number, whose slot holds the
 * clock read just before the cancel (the schedule's before that). Timed
 * from the cancel, as service.h's promise is, not from the schedule: with
 * 100 threads on 2 cores a producer may lose the processor between the
 * two for longer than the promise, which says nothing of the library. A
 * slot is used again after RPC_SLOTS more timers of its producer (a few
 * times the most a producer may hold waiting): a release that finds it
 * used again counts as later than 1 s, conservatively. */
#define RPC_MAX_THREADS 100
#define RPC_SLOTS 4096
#define RPC_SEQ_BITS 48
static struct rpc_slot {
    _Atomic uint64_t seq, at;
} rpc_slots[RPC_MAX_THREADS][RPC_SLOTS];

static void rpc_bucket(uint64_t d, bool later)
{
    unsigned b = 0;

    for (uint64_t top = MS; b + 1 < RPC_DECADES && d > top; top *= 10)
        b++;
    atomic_fetch_add_explicit(&rpc_hist[later][b], 1, memory_order_relaxed);
}

/* The release hook: arg is the producer << RPC_SEQ_BITS | its timer's
 * sequence number. */
static void rpc_release(void *arg)
{
    uint64_t a = (uint64_t)(uintptr_t)arg;
    uint64_t seq = a & ((UINT64_C(1) << RPC_SEQ_BITS) - 1);
    unsigned p = (unsigned)(a >> RPC_SEQ_BITS);
    struct rpc_slot *sl = &rpc_slots[p][seq % RPC_SLOTS];
    uint64_t at = atomic_load_explicit(&sl->at, memory_order_relaxed);
    uint64_t d = now_ns() - at;
    uint64_t m = atomic_load(&rpc_longest);

    if (atomic_load_explicit(&sl->seq, memory_order_relaxed) != seq) {
        atomic_fetch_add(&rpc_reused, 1);
        d = RPC_VERY_LATE + 1; /* its slot used again: later than 1 s */
    }

    rpc_bucket(d, p >= RPC_RINGED);
    atomic_fetch_add(&rpc_released, 1);
    if (d > RPC_LET_GO)
        atomic_fetch_add(&rpc_late, 1);
    if (d > RPC_VERY_LATE)
        atomic_fetch_add(&rpc_very_late, 1);
    while (d > m && !atomic_compare_exchange_weak(&rpc_longest, &m, d))
        ;
}

static void *rpc_producer(void *arg)
{
    struct rpc_run *r = arg;
    unsigned long n = 0;
    uint64_t p = atomic_fetch_add(&r->started, 1), seq = 0;

    while (now_ns() < r->until) {
        for (int i = 0; i < 64; i++, seq++) {
            struct rpc_slot *sl = &rpc_slots[p][seq % RPC_SLOTS];
            struct tw_timer_spec spec = {
                .deadline = tw_service_now(r->s) + 50 * MS,
                .cb = count_run,
                .arg = (void *)(uintptr_t)(p << RPC_SEQ_BITS | seq),
                .release = r->hook ? rpc_release : NULL,
            };
            struct tw_handle *h;
            int rc;

            atomic_store_explicit(&sl->at, now_ns(), memory_order_relaxed);
            atomic_store_explicit(&sl->seq, seq, memory_order_relaxed);
            rc = tw_service_submit(r->s, &spec, &h);
            if (!rc) /* before the cancel: a release may follow it at once */
                atomic_store_explicit(&sl->at, now_ns(), memory_order_relaxed);

            if (rc == -EAGAIN)
                continue; /* back-pressure: try again */
            /* No cr_assert here: Criterion's reporting is not made for 100
             * threads at once (it smashed its own stack); the main thread
             * asserts what these count. */
            /* 0: it ran first, its producer held off the processor for
             * 50 ms (the machine is loaded); it is let go of all the same. */
            if (!rc && tw_handle_cancel_release(h) < 0)
                rc = -1000;
            if (rc) {
                atomic_store(&r->wrong, (unsigned long)-rc);
                break;
            }
            n++;
        }
        rpc_count(r);
    }
    atomic_fetch_add(&r->pairs, n);
    return NULL;
}

#if defined(__SANITIZE_THREAD__)
#define RPC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RPC_TSAN 1
#endif
#endif
/* make coverage's build: -O0 with atomic counters on every branch of lib/,
 * a worker several times slower than the plain build's (hundreds of
 * thousands of releases later than 1 s in each run of 2026-11-29): it
 * measures which branches run, not how fast, so the times are printed. */
#if defined(TW_COVERAGE)
#define RPC_SLOW_BUILD "make coverage's -O0 build"
#elif defined(RPC_TSAN)
#define RPC_SLOW_BUILD "ThreadSanitizer"
#elif defined(__SANITIZE_ADDRESS__)
/* ASan: a fresh-clone CI run on an otherwise idle machine (2026-11-29,
 * 02:40 UTC) let 39,056 of 506,134 cancelled timers go after more than 1 s
 * (7.7 %, longest 1.3 s) with 100 producers beyond the stripes, where the
 * helper's runs had none: still an open finding of issue 28. */
#define RPC_SLOW_BUILD "AddressSanitizer"
#endif

static void rpc_producers(unsigned threads, bool hook)
{
    struct rpc_run r = {.s = default_service(TW_HIER), .hook = hook};
    pthread_t *t = calloc(threads, sizeof(*t));
    unsigned long most, released, late;
    uint64_t longest;

    cr_assert_leq(threads, RPC_MAX_THREADS);
    cr_assert(t);
    r.base = alloc_live();
    r.until = now_ns() + RPC_RUN;
    for (unsigned i = 0; i < threads; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, rpc_producer, &r), 0);
    for (unsigned i = 0; i < threads; i++)
        cr_assert_eq(pthread_join(t[i], NULL), 0);
    free(t);
    cr_assert_eq(atomic_load(&r.wrong), 0, "a producer's schedule said -%lu",
                 atomic_load(&r.wrong));
    cr_assert_eq(tw_service_destroy(r.s), 0);
    most = atomic_load(&r.most);
    released = atomic_load(&rpc_released);
    late = atomic_load(&rpc_late);
    longest = atomic_load(&rpc_longest);
    cr_log_info("%u producers%s: %lu pairs, most blocks held %lu (%lu a "
                "thread), released %lu, later than 100 ms %lu, than 1 s "
                "%lu (%lu of them slots used again), longest %.1f ms",
                threads, hook ? "" : " (no release hook)",
                atomic_load(&r.pairs), most, most / threads, released, late,
                atomic_load(&rpc_very_late), atomic_load(&rpc_reused),
                (double)longest / 1e6);
    for (int g = 0; g < 2; g++)
        cr_log_info("release times of the %s producers started: up to 1 ms "
                    "%lu, 10 ms %lu, 100 ms %lu, 1 s %lu, more %lu",
                    g ? "later" : "first 60", atomic_load(&rpc_hist[g][0]),
                    atomic_load(&rpc_hist[g][1]), atomic_load(&rpc_hist[g][2]),
                    atomic_load(&rpc_hist[g][3]), atomic_load(&rpc_hist[g][4]));
    cr_assert_leq(most / threads, RPC_MOST_PER_THREAD,
                  "%lu blocks held per producer (%lu in all, %u producers, "
                  "one timer each outstanding at most)",
                  most / threads, most, threads);
    if (!hook)
        return;
    cr_assert_eq(released, atomic_load(&r.pairs));
#ifdef RPC_SLOW_BUILD
    /* Under ThreadSanitizer the worker lets go of some 10^5 timers a
     * second, a fifth of what it does under ASan, and 60 or 100 producers
     * each a block of its ring ahead keep it 100 ms and more behind:
     * 69-83 % of the releases later than 100 ms, 2.8-37 % later than 1 s
     * (3 runs of the service_backlog suite, load average 7-16). Memory (above)
     * and the count of releases are asserted, the time is printed: an open
     * finding of issue 28, not hidden here; under ASan likewise (above). */
    cr_log_info("%s: release times not asserted", RPC_SLOW_BUILD);
    return;
#endif
    cr_assert_leq((double)atomic_load(&rpc_very_late),
                  RPC_VERY_LATE_SHARE * (double)released,
                  "%lu of %lu cancelled timers let go of more than 1 s "
                  "after their cancel (longest %.1f ms)",
                  atomic_load(&rpc_very_late), released, (double)longest / 1e6);
    cr_assert_leq((double)late, RPC_LATE_SHARE * (double)released,
                  "%lu of %lu cancelled timers let go of more than 100 ms "
                  "after their cancel (longest %.1f ms)",
                  late, released, (double)longest / 1e6);
}

Test(service_backlog, rpc_60_producers_let_go_in_time, .init = counted,
     .timeout = 60)
{
    rpc_producers(60, true);
}

Test(service_backlog, rpc_100_producers_beyond_the_stripes_let_go_in_time,
     .init = counted, .timeout = 60)
{
    rpc_producers(100, true);
}

Test(service_backlog, rpc_100_producers_without_hook_bounded, .init = counted,
     .timeout = 60)
{
    rpc_producers(100, false);
}
