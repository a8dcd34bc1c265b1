/*
 * The end of a purgatory (suite purgatory_stop): a second stop waits for
 * the first, destroy is refused from inside a hand-back and waits for a
 * stop running on another thread, and stop returns in bounded time however
 * many threads keep calling watch (issue 22, defects 3 and 4). Each test
 * failed on 103bd1b: the nested destroys were a heap-use-after-free (under
 * ASan; without it the nested destroy answered 0), the second stop and the
 * other thread's destroy returned before the first stop had handed
 * everything back, and stop waited for as long as 100 threads called.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "preq.h"
#include "util.h"

#define NOPS 3

/* Watch NOPS operations that never complete, each on a key of its own. */
static void watch_all(struct tw_purgatory *p, struct preq *r)
{
    static const char *const names[NOPS] = {"a", "b", "c"};

    for (int i = 0; i < NOPS; i++) {
        struct tw_key k = pkey(names[i]);

        preq_init(&r[i], p);
        cr_assert_eq(tw_purgatory_watch(p, &r[i].op, &k, 1, 100 * SEC), 0);
    }
}

/* A hand-back function that tries to end the purgatory from inside. */
struct nested {
    struct tw_purgatory *p;
    int calls;
    int destroy_rc; /* the last answers */
    int64_t stop_rc;
};

static void handback_ends_it(struct tw_delayed *op, void *ctx)
{
    struct nested *n = ctx;

    preq_handback(op, NULL);
    n->calls++;
    n->destroy_rc = tw_purgatory_destroy(n->p);
    n->stop_rc = tw_purgatory_stop(n->p, NULL, NULL);
}

Test(purgatory_stop, destroy_from_a_stop_handback_is_refused)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_purgatory *p = purgatory_on_wheel(w);
    struct nested n = {.p = p, .destroy_rc = 1, .stop_rc = 1};
    struct preq r[NOPS];

    watch_all(p, r);
    cr_assert_eq(tw_purgatory_stop(p, handback_ends_it, &n), NOPS);
    cr_assert_eq(n.calls, NOPS);
    cr_assert_eq(n.destroy_rc, -EDEADLK, "destroy inside stop's hand-back");
    cr_assert_eq(n.stop_rc, -EDEADLK, "stop inside stop's own hand-back");
    for (int i = 0; i < NOPS; i++)
        cr_assert_eq(r[i].handed_back, 1);
    stats_are(p, NOPS, 0, 0, 0, NOPS, 0, 0);
    cr_assert_eq(tw_purgatory_stop(p, NULL, NULL), 0, "after: stopped");
    cr_assert_eq(tw_purgatory_destroy(p), 0, "after stop: allowed");
    cr_assert_eq(tw_pending(w), 0);
    cr_assert_eq(tw_destroy(w), 0);
}

Test(purgatory_stop, destroy_from_a_cancel_key_handback_is_refused)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_purgatory *p = purgatory_on_wheel(w);
    struct nested n = {.p = p, .destroy_rc = 1, .stop_rc = 1};
    struct tw_key k[2] = {pkey("k"), pkey("other")};
    struct preq r[NOPS + 1];

    for (int i = 0; i < NOPS; i++) {
        preq_init(&r[i], p);
        cr_assert_eq(tw_purgatory_watch(p, &r[i].op, k, 1, 100 * SEC), 0);
    }
    preq_init(&r[NOPS], p);
    cr_assert_eq(tw_purgatory_watch(p, &r[NOPS].op, &k[1], 1, 100 * SEC), 0);
    /* The first hand-back's stop takes the other key's operation; the
     * cancel goes on with what it had claimed, on a live purgatory. */
    cr_assert_eq(tw_purgatory_cancel_key(p, "k", 1, handback_ends_it, &n),
                 NOPS);
    cr_assert_eq(n.calls, NOPS);
    cr_assert_eq(n.destroy_rc, -EDEADLK, "destroy inside a cancel's hand-back");
    cr_assert_eq(n.stop_rc, 0, "stop is allowed there (a second one: 0)");
    cr_assert_eq(r[NOPS].handed_back, 0, "stop with a NULL fn detaches");
    cr_assert_eq(tw_delayed_state(&r[NOPS].op), TW_DELAYED_CANCELLED);
    for (int i = 0; i < NOPS; i++)
        cr_assert_eq(r[i].handed_back, 1);
    stats_are(p, NOPS + 1, 0, 0, NOPS, 1, 0, 0);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(tw_pending(w), 0);
    cr_assert_eq(tw_destroy(w), 0);
}

/* A hand-back function that takes its time, so that a stop is still
 * running when another thread calls stop or destroy. */
struct slow {
    atomic_int started;
    atomic_int done;
};

static void handback_slowly(struct tw_delayed *op, void *ctx)
{
    struct slow *sl = ctx;

    preq_handback(op, NULL);
    atomic_fetch_add(&sl->started, 1);
    sleep_ns(50 * MS);
    atomic_fetch_add(&sl->done, 1);
}

struct stopper {
    struct tw_purgatory *p;
    struct slow sl;
    int64_t rc;
};

static void *stop_thread(void *arg)
{
    struct stopper *st = arg;

    st->rc = tw_purgatory_stop(st->p, handback_slowly, &st->sl);
    return NULL;
}

/* Start a slow stop on another thread and wait until it is handing back. */
static pthread_t slow_stop_begins(struct stopper *st)
{
    uint64_t give_up = now_ns() + 10 * SEC;
    pthread_t t;

    cr_assert_eq(pthread_create(&t, NULL, stop_thread, st), 0);
    while (atomic_load(&st->sl.started) == 0) {
        cr_assert_lt(now_ns(), give_up, "the first stop never began");
        sleep_ns(MS);
    }
    return t;
}

Test(purgatory_stop, second_stop_waits_for_the_first)
{
    struct tw_service *s = default_service(TW_HIER);
    struct stopper st = {.p = purgatory_on(s)};
    struct preq r[NOPS];
    pthread_t t;

    watch_all(st.p, r);
    t = slow_stop_begins(&st);
    cr_assert_eq(tw_purgatory_stop(st.p, preq_handback, NULL), 0);
    cr_assert_eq(atomic_load(&st.sl.done), NOPS,
                 "the second stop returned while the first was handing "
                 "back (%d of %d done)",
                 atomic_load(&st.sl.done), NOPS);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(st.rc, NOPS);
    for (int i = 0; i < NOPS; i++)
        cr_assert_eq(r[i].handed_back, 1, "handed back once, by the first");
    cr_assert_eq(tw_purgatory_destroy(st.p), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(purgatory_stop, destroy_on_another_thread_waits_for_a_running_stop)
{
    struct tw_service *s = default_service(TW_HIER);
    struct stopper st = {.p = purgatory_on(s)};
    struct preq r[NOPS];
    pthread_t t;

    watch_all(st.p, r);
    t = slow_stop_begins(&st);
    cr_assert_eq(tw_purgatory_destroy(st.p), 0);
    cr_assert_eq(atomic_load(&st.sl.done), NOPS,
                 "destroy freed the purgatory under a running stop "
                 "(%d of %d handed back)",
                 atomic_load(&st.sl.done), NOPS);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(st.rc, NOPS);
    for (int i = 0; i < NOPS; i++)
        cr_assert_eq(r[i].handed_back, 1);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* ---- stop against a crowd of refused watches ---- */

/* 100 callers, as the issue measured. */
#define CROWD 100
#define CROWD_RUN (8 * SEC)
#define CROWD_CAP (30 * SEC)
/* Generous for a loaded 2-core machine: the callers complete at once,
 * outside the gate, and stop waits for none of them (0.0 ms measured);
 * 103bd1b took as long as the callers ran (7.3 s of 8). */
#define STOP_BOUND (1 * SEC)

struct crowd {
    struct tw_purgatory *p;
    atomic_bool quit;
    atomic_int running;
    atomic_long accepted; /* by all, counted once a caller has 64 */
    _Atomic uint64_t until;
};

/* One caller's own counts (shared counters would be a contention point of
 * the test's own, under TSan much slower than the gate). */
struct caller_arg {
    struct crowd *c;
    long accepted, refused;
};

static bool always(struct tw_delayed *op, void *arg)
{
    (void)op;
    (void)arg;
    return true;
}

static void nothing(struct tw_delayed *op, void *arg)
{
    (void)op;
    (void)arg;
}

/* Watch without pause: each completes at once until stop, then each is
 * refused with -ESHUTDOWN; every answer is one of those two. */
static void *caller(void *arg)
{
    struct caller_arg *a = arg;
    struct crowd *c = a->c;
    struct tw_key k = pkey("k");
    struct tw_delayed op;
    long n = 0;

    atomic_fetch_add(&c->running, 1);
    while (!atomic_load_explicit(&c->quit, memory_order_relaxed) &&
           ((++n & 63) != 0 || now_ns() < atomic_load(&c->until))) {
        int rc;

        tw_delayed_init(&op, always, nothing, NULL, NULL);
        rc = tw_purgatory_watch(c->p, &op, &k, 1, SEC);
        if (rc == 1) {
            if ((++a->accepted & 63) == 0)
                atomic_fetch_add(&c->accepted, 64);
        } else if (rc == -ESHUTDOWN) {
            a->refused++;
        } else {
            cr_assert_fail("watch answered %d", rc);
        }
    }
    return NULL;
}

Test(purgatory_stop, stop_is_not_starved_by_refused_watches, .timeout = 60)
{
    struct tw_service *s = default_service(TW_HIER);
    struct crowd c = {.p = purgatory_on(s)};
    struct caller_arg a[CROWD];
    pthread_t t[CROWD];
    long accepted = 0, refused = 0;
    uint64_t t0, took;

    atomic_store(&c.until, now_ns() + CROWD_CAP);
    for (int i = 0; i < CROWD; i++) {
        a[i] = (struct caller_arg){.c = &c};
        cr_assert_eq(pthread_create(&t[i], NULL, caller, &a[i]), 0);
    }
    /* Every caller running, for a while: then stop. */
    while (atomic_load(&c.running) < CROWD ||
           atomic_load(&c.accepted) < 100 * CROWD)
        sleep_ns(MS);
    sleep_ns(100 * MS);
    t0 = now_ns();
    atomic_store(&c.until, t0 + CROWD_RUN);
    cr_assert_eq(tw_purgatory_stop(c.p, NULL, NULL), 0);
    took = now_ns() - t0;
    sleep_ns(50 * MS); /* the callers meet the closed gate */
    atomic_store(&c.quit, true);
    for (int i = 0; i < CROWD; i++) {
        cr_assert_eq(pthread_join(t[i], NULL), 0);
        accepted += a[i].accepted;
        refused += a[i].refused;
    }
    printf("purgatory_stop: stop took %.1f ms with %d threads calling "
           "(%ld accepted, %ld refused)\n",
           (double)took / (double)MS, CROWD, accepted, refused);
    cr_assert_gt(refused, 0, "stop ran while the callers were calling");
    cr_assert_lt(took, STOP_BOUND, "stop took %.1f ms",
                 (double)took / (double)MS);
    cr_assert_eq(tw_purgatory_destroy(c.p), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}
