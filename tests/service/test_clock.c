/*
 * The producers' clock (lib/service/clock.c): the reading schedule and
 * re-arm add a delay to. It is never below CLOCK_MONOTONIC read just
 * before it (on the same thread, or published by another thread), never
 * more than tw__clock_max_ahead() above a reading just after it, never
 * goes backwards on a thread, and all of that also while threads migrate
 * between CPUs; disabled, it is the plain clock. Through the service:
 * deadlines are the call's time plus the delay within that bound, and
 * timers never run before it. No timing is asserted: the bounds hold
 * however loaded the machine is.
 */
#define _GNU_SOURCE 1 /* sched_setaffinity */

#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../../lib/service/clock.h"
#include "timewheel.h"
#include "util.h"

#define ROUNDS 200000
#define MIGRATE_EVERY 500 /* readings between two moves to another CPU */
#define THREADS 4

/* Read until the rate is calibrated (or the clock is the plain one). */
static void calibrated(void)
{
    uint64_t end = now_ns() + 5 * SEC;

    while (tw__clock_mode() == TW__CLOCK_CALIBRATING && now_ns() < end) {
        (void)tw__svc_clock_upper();
        sleep_ns(MS / 10);
    }
    cr_assert_neq(tw__clock_mode(), TW__CLOCK_CALIBRATING,
                  "still calibrating after 5 s of readings");
    cr_assert_leq(tw__clock_max_ahead(), TW_SERVICE_CLOCK_AHEAD_NS);
    cr_log_info("producers' clock: %s, at most %llu ns ahead",
                tw__clock_mode() == TW__CLOCK_ON ? "TSC" : "clock_gettime",
                (unsigned long long)tw__clock_max_ahead());
}

/* Move the calling thread to the k-th CPU it may run on. */
static void move_to(const cpu_set_t *allowed, int k)
{
    int n = CPU_COUNT(allowed), seen = 0;
    cpu_set_t one;

    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, allowed) || seen++ != k % n)
            continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        (void)sched_setaffinity(0, sizeof(one), &one);
        return;
    }
}

struct tally {
    atomic_ulong below;     /* readings below CLOCK_MONOTONIC before */
    atomic_ulong too_far;   /* more than max_ahead above a reading after */
    atomic_ulong backwards; /* below the thread's previous reading */
};

/* ROUNDS readings, each between two of CLOCK_MONOTONIC, moving between
 * CPUs every MIGRATE_EVERY if migrate. */
static void bracket(struct tally *t, bool migrate, int seed)
{
    uint64_t ahead = tw__clock_max_ahead(), prev = 0;
    cpu_set_t allowed;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        CPU_ZERO(&allowed);
    migrate = migrate && CPU_COUNT(&allowed) > 0;
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t before, r, after;

        if (migrate && i % MIGRATE_EVERY == 0)
            move_to(&allowed, seed + i / MIGRATE_EVERY);
        before = now_ns();
        r = tw__svc_clock_upper();
        after = now_ns();
        if (r < before)
            atomic_fetch_add(&t->below, 1);
        if (r > after + ahead)
            atomic_fetch_add(&t->too_far, 1);
        if (r < prev)
            atomic_fetch_add(&t->backwards, 1);
        prev = r;
    }
    if (migrate)
        (void)sched_setaffinity(0, sizeof(allowed), &allowed);
}

static void tally_ok(struct tally *t)
{
    cr_assert_eq(atomic_load(&t->below), 0, "%lu readings below the clock",
                 atomic_load(&t->below));
    cr_assert_eq(
        atomic_load(&t->too_far), 0, "%lu readings more than %llu ns ahead",
        atomic_load(&t->too_far), (unsigned long long)tw__clock_max_ahead());
    cr_assert_eq(atomic_load(&t->backwards), 0, "%lu readings went back",
                 atomic_load(&t->backwards));
}

Test(service_clock, never_below_nor_far_above_the_clock)
{
    struct tally t = {0};

    calibrated();
    bracket(&t, false, 0);
    tally_ok(&t);
}

struct mover {
    struct tally *t;
    int seed;
};

static void *mover_main(void *arg)
{
    struct mover *m = arg;

    bracket(m->t, true, m->seed);
    return NULL;
}

Test(service_clock, holds_on_threads_that_migrate_between_cpus)
{
    struct tally t = {0};
    struct mover m[THREADS];
    pthread_t th[THREADS];

    calibrated();
    for (int i = 0; i < THREADS; i++) {
        m[i] = (struct mover){&t, i};
        cr_assert_eq(pthread_create(&th[i], NULL, mover_main, &m[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    tally_ok(&t);
}

/* One thread publishes CLOCK_MONOTONIC readings; another, having seen
 * one, reads the producers' clock: never below what it saw. */
struct relay {
    atomic_uint_fast64_t seen;
    atomic_bool stop;
    atomic_ulong below;
};

static void *publisher(void *arg)
{
    struct relay *r = arg;

    while (!atomic_load(&r->stop))
        atomic_store_explicit(&r->seen, now_ns(), memory_order_release);
    return NULL;
}

Test(service_clock, never_below_a_reading_another_thread_published)
{
    static struct relay r;
    pthread_t th;

    calibrated();
    cr_assert_eq(pthread_create(&th, NULL, publisher, &r), 0);
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t seen = atomic_load_explicit(&r.seen, memory_order_acquire);

        if (tw__svc_clock_upper() < seen)
            atomic_fetch_add(&r.below, 1);
    }
    atomic_store(&r.stop, true);
    pthread_join(th, NULL);
    cr_assert_eq(atomic_load(&r.below), 0, "%lu readings below",
                 atomic_load(&r.below));
}

/* A thread that reads rarely gets plain readings (no base: the TSC would
 * not pay for one), one that reads often gets them from a base. */
Test(service_clock, rare_readers_read_the_plain_clock)
{
    struct tw__clock_base *b = &tw__clock_mine;

    calibrated();
    if (tw__clock_mode() != TW__CLOCK_ON)
        return;
    for (int i = 0; i < 100; i++) {
        uint64_t before = now_ns(), r = tw__svc_clock_upper();

        cr_assert_geq(r, before);
        sleep_ns(MS / 10);
    }
    cr_assert_eq(b->span, 0, "a base kept for readings 100 us apart");
    for (int i = 0; i < 1000000 && !b->span; i++)
        (void)tw__svc_clock_upper();
    cr_assert_neq(b->span, 0, "no base in 10^6 readings in a row");
}

Test(service_clock, disabled_it_is_the_plain_clock)
{
    calibrated();
    tw__clock_disable();
    cr_assert_eq(tw__clock_mode(), TW__CLOCK_REAL);
    cr_assert_eq(tw__clock_max_ahead(), 0);
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t before = now_ns(), r = tw__svc_clock_upper();

        cr_assert_geq(r, before);
        cr_assert_leq(r, now_ns(), "a reading after the plain clock's");
    }
}

Test(service_clock, the_environment_can_turn_it_off)
{
    cr_assert_eq(setenv("TW_SERVICE_CLOCK", "monotonic", 1), 0);
    cr_assert_eq(tw__clock_mode(), TW__CLOCK_REAL);
    for (int i = 0; i < 1000; i++) {
        uint64_t before = now_ns(), r = tw__svc_clock_upper();

        cr_assert_geq(r, before);
        cr_assert_leq(r, now_ns());
    }
}

/* ---- through the service --------------------------------------------------
 */

#define TIMERS 1000

struct probe {
    uint64_t due;             /* CLOCK_MONOTONIC before the call + delay */
    atomic_uint_fast64_t ran; /* CLOCK_MONOTONIC in the callback */
};

static atomic_int ran;

static void probe_cb(struct tw_handle *h, void *arg)
{
    struct probe *p = arg;

    (void)h;
    atomic_store(&p->ran, now_ns());
    atomic_fetch_add(&ran, 1);
}

struct producer {
    struct tw_service *s;
    struct probe *p;
    int first, n;
    atomic_ulong bad; /* failed calls, deadlines out of their bounds */
};

/* The deadline of h, given for `delay` by a call between before and
 * after, is within the clock's bound of the call's time + delay. */
static bool deadline_ok(struct tw_handle *h, uint64_t before, uint64_t after,
                        uint64_t delay)
{
    uint64_t d = tw_handle_deadline(h);

    return d >= before + delay && d <= after + delay + tw__clock_max_ahead();
}

static void *producer_main(void *arg)
{
    struct producer *pr = arg;
    cpu_set_t allowed;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        CPU_ZERO(&allowed);
    for (int i = pr->first; i < pr->first + pr->n; i++) {
        uint64_t delay = (uint64_t)(i % 20 + 1) * MS, before, after;
        struct tw_handle *h;

        if (i % 50 == 0 && CPU_COUNT(&allowed))
            move_to(&allowed, i / 50);
        before = now_ns();
        if (tw_service_schedule(pr->s, 3600 * SEC, probe_cb, &pr->p[i], &h)) {
            atomic_fetch_add(&pr->bad, 1);
            continue;
        }
        after = now_ns();
        if (!deadline_ok(h, before, after, 3600 * SEC))
            atomic_fetch_add(&pr->bad, 1);
        /* Re-armed to its real delay: the deadline that counts. */
        before = now_ns();
        pr->p[i].due = before + delay;
        if (tw_handle_rearm(h, delay) != 1)
            atomic_fetch_add(&pr->bad, 1);
        after = now_ns();
        if (!deadline_ok(h, before, after, delay))
            atomic_fetch_add(&pr->bad, 1);
        tw_handle_release(h);
    }
    if (CPU_COUNT(&allowed))
        (void)sched_setaffinity(0, sizeof(allowed), &allowed);
    return NULL;
}

static void never_early(enum tw_mode mode)
{
    struct tw_service *s = default_service(mode);
    static struct probe p[TIMERS];
    struct producer pr[2];
    pthread_t th[2];
    uint64_t end;

    calibrated();
    atomic_store(&ran, 0);
    for (int k = 0; k < 2; k++) {
        pr[k] = (struct producer){
            .s = s, .p = p, .first = k * TIMERS / 2, .n = TIMERS / 2};
        cr_assert_eq(pthread_create(&th[k], NULL, producer_main, &pr[k]), 0);
    }
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    end = now_ns() + 10 * SEC;
    while (atomic_load(&ran) < TIMERS && now_ns() < end)
        sleep_ns(MS);
    cr_assert_eq(atomic_load(&ran), TIMERS);
    for (int k = 0; k < 2; k++)
        cr_assert_eq(atomic_load(&pr[k].bad), 0,
                     "%lu calls failed or gave a deadline out of bounds",
                     atomic_load(&pr[k].bad));
    for (int i = 0; i < TIMERS; i++)
        cr_assert_geq(atomic_load(&p[i].ran), p[i].due,
                      "timer %d ran %llu ns before the call's time + delay", i,
                      (unsigned long long)(p[i].due - atomic_load(&p[i].ran)));
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_clock, timers_never_run_before_the_call_plus_delay_hier)
{
    never_early(TW_HIER);
}

Test(service_clock, timers_never_run_before_the_call_plus_delay_hashed)
{
    never_early(TW_HASHED);
}

/* A periodic timer's first deadline comes from the same clock. */
Test(service_clock, periodic_first_deadline)
{
    struct tw_service *s = default_service(TW_HIER);
    static struct probe p;
    struct tw_handle *h;
    uint64_t before, after;

    calibrated();
    before = now_ns();
    cr_assert_eq(tw_service_schedule_periodic(s, SEC, SEC, TW_FIXED_RATE,
                                              probe_cb, &p, &h),
                 0);
    after = now_ns();
    cr_assert(deadline_ok(h, before, after, SEC));
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}
