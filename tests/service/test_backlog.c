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
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

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

struct streamer {
    struct tw_service *s;
    atomic_int started;
    int last; /* the schedule's answer that ended the stream */
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
        cr_assert_eq(tw_handle_cancel_release(h), 1);
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
    }
    cr_assert_eq(tw_service_destroy(st[0].s), 0);
}
