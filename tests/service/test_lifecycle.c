/*
 * The handle lifecycle of the service: re-arm from any thread and
 * from the handle's own callback, cancel-and-wait, the release hook,
 * absolute deadlines and the service's clock. Never-early and exact counts
 * are asserted strictly; lateness is not asserted (CI runs these on a
 * loaded two-core machine under the sanitizers), only bounded waits.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "timewheel.h"
#include "util.h"

#define HOUR (UINT64_C(3600) * 1000 * MS)

static bool wait_count(atomic_int *flag, int want)
{
    uint64_t end = now_ns() + 5000 * MS;

    while (atomic_load(flag) < want && now_ns() < end)
        sleep_ns(MS);
    return atomic_load(flag) >= want;
}

struct fire {
    atomic_int n;
    atomic_uint_fast64_t at;       /* tw_service_now() at the last run */
    atomic_uint_fast64_t deadline; /* the handle's deadline then */
    int again;                     /* re-arm itself this many times */
    uint64_t again_delay;
    int rearm_rc;
};

static void fire_cb(struct tw_handle *h, void *arg)
{
    struct fire *f = arg;

    atomic_store(&f->deadline, tw_handle_deadline(h));
    atomic_store(&f->at, now_ns()); /* the service's clock */
    if (f->again > 0) {
        f->again--;
        f->rearm_rc = tw_handle_rearm(h, f->again_delay);
    }
    atomic_fetch_add(&f->n, 1);
}

/* ---- absolute time ------------------------------------------------------- */

Test(service_lifecycle, clock_and_absolute_deadlines)
{
    struct tw_service *s = service_pool(TW_HIER, 0);
    static struct fire f1, f2;
    struct tw_handle *h;
    uint64_t t0 = tw_service_now(s);
    uint64_t mine = now_ns();

    cr_assert_eq(tw_service_now(NULL), 0);
    /* The same clock as CLOCK_MONOTONIC (read just before and after). */
    cr_assert_leq(t0, mine);
    cr_assert_geq(tw_service_now(s), mine);
    f1 = (struct fire){0};
    f2 = (struct fire){0};
    cr_assert_eq(tw_service_schedule_at(s, t0 + 30 * MS, fire_cb, &f1, &h), 0);
    cr_assert_eq(tw_handle_deadline(h), t0 + 30 * MS);
    /* A deadline in the past runs at once. */
    cr_assert_eq(tw_service_schedule_at(s, 0, fire_cb, &f2, NULL), 0);
    cr_assert(wait_count(&f1.n, 1));
    cr_assert(wait_count(&f2.n, 1));
    cr_assert_geq(atomic_load(&f1.at), t0 + 30 * MS, "never early");
    tw_handle_release(h);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_geq(tw_service_now(s), t0 + 30 * MS, "readable after stop");
    cr_assert_eq(tw_service_destroy(s), 0);
}

static void never_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

Test(service_lifecycle, submit_refuses_bad_input)
{
    struct tw_service *s = service_pool(TW_HIER, 0);
    struct tw_timer_spec spec = {.deadline = HOUR, .cb = never_cb};
    struct tw_handle *h = (struct tw_handle *)&spec;

    cr_assert_eq(tw_service_submit(NULL, &spec, &h), -EINVAL);
    cr_assert_null(h);
    cr_assert_eq(tw_service_submit(s, NULL, NULL), -EINVAL);
    spec.cb = NULL;
    cr_assert_eq(tw_service_submit(s, &spec, NULL), -EINVAL);
    spec.cb = never_cb;
    spec.period = MS;
    spec.kind = (enum tw_period)9;
    cr_assert_eq(tw_service_submit(s, &spec, NULL), -EINVAL);
    spec.period = 0; /* one-shot: kind is not looked at */
    cr_assert_eq(tw_service_submit(s, &spec, NULL), 0);
    cr_assert_eq(tw_service_schedule_at(s, HOUR, NULL, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_service_schedule_at(NULL, HOUR, never_cb, NULL, NULL),
                 -EINVAL);
    cr_assert_eq(service_stats(s).scheduled, 1);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_submit(s, &spec, &h), -ESHUTDOWN);
    cr_assert_null(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* ---- re-arm ----------------------------------------------------------------
 */

static void rearm_later(enum tw_mode mode, unsigned threads)
{
    struct tw_service *s = service_pool(mode, threads);
    static struct fire f;
    struct tw_handle *h;
    uint64_t want;

    f = (struct fire){0};
    cr_assert_eq(tw_service_schedule(s, 20 * MS, fire_cb, &f, &h), 0);
    want = tw_service_now(s) + 120 * MS;
    cr_assert_eq(tw_handle_rearm_at(h, want), 1);
    cr_assert_eq(tw_handle_deadline(h), want);
    cr_assert(wait_count(&f.n, 1));
    cr_assert_geq(atomic_load(&f.at), want, "ran at the old deadline");
    sleep_ns(30 * MS);
    cr_assert_eq(atomic_load(&f.n), 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_DONE);
    cr_assert_eq(tw_handle_rearm(h, MS), 0, "too late once done");
    cr_assert_eq(service_stats(s).completed, 1);
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_lifecycle, rearm_later_hier)
{
    rearm_later(TW_HIER, 0);
}
Test(service_lifecycle, rearm_later_hashed_executor)
{
    rearm_later(TW_HASHED, 2);
}

/* An hour-long timer re-armed to 20 ms runs then: the worker, asleep until
 * the hour, is woken and moves it. */
static void rearm_earlier(enum tw_mode mode, unsigned threads)
{
    struct tw_service *s = service_pool(mode, threads);
    static struct fire f;
    struct tw_handle *h;
    uint64_t want;

    f = (struct fire){0};
    cr_assert_eq(tw_service_schedule(s, HOUR, fire_cb, &f, &h), 0);
    sleep_ns(20 * MS); /* let the worker admit it and go to sleep */
    want = tw_service_now(s) + 20 * MS;
    cr_assert_eq(tw_handle_rearm_at(h, want), 1);
    cr_assert(wait_count(&f.n, 1));
    cr_assert_geq(atomic_load(&f.at), want);
    cr_assert_eq(atomic_load(&f.deadline), want);
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_lifecycle, rearm_earlier_hier)
{
    rearm_earlier(TW_HIER, 0);
}
Test(service_lifecycle, rearm_earlier_hashed)
{
    rearm_earlier(TW_HASHED, 0);
}
Test(service_lifecycle, rearm_earlier_executor)
{
    rearm_earlier(TW_HIER, 2);
}

/* A one-shot callback re-arms its own handle: it runs again, each time not
 * before its new deadline, and the timer completes once. */
static void rearm_self(unsigned threads)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    static struct fire f;
    struct tw_service_stats st;

    f = (struct fire){.again = 4, .again_delay = 3 * MS};
    cr_assert_eq(tw_service_schedule(s, MS, fire_cb, &f, NULL), 0);
    cr_assert(wait_count(&f.n, 5));
    sleep_ns(30 * MS);
    cr_assert_eq(atomic_load(&f.n), 5);
    cr_assert_eq(f.rearm_rc, 1);
    st = service_stats(s);
    cr_assert_eq(st.runs, 5);
    cr_assert_eq(st.completed, 1);
    cr_assert_eq(st.scheduled, 1);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_lifecycle, rearm_from_own_callback)
{
    rearm_self(0);
}
Test(service_lifecycle, rearm_from_own_callback_executor)
{
    rearm_self(2);
}

/* A periodic timer re-armed an hour out, then back to 10 ms: its next run
 * is there, and the grid continues from it. */
Test(service_lifecycle, rearm_periodic_moves_the_grid)
{
    struct tw_service *s = service_pool(TW_HIER, 0);
    static struct fire f;
    struct tw_handle *h;
    uint64_t want;

    f = (struct fire){0};
    cr_assert_eq(tw_service_schedule_periodic(s, HOUR, HOUR, TW_FIXED_RATE,
                                              fire_cb, &f, &h),
                 0);
    want = tw_service_now(s) + 10 * MS;
    cr_assert_eq(tw_handle_rearm_at(h, want), 1);
    cr_assert(wait_count(&f.n, 1));
    cr_assert_geq(atomic_load(&f.at), want);
    sleep_ns(5 * MS);
    cr_assert_eq(tw_handle_deadline(h), want + HOUR);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_PENDING);
    cr_assert_eq(tw_handle_cancel(h), 1);
    cr_assert_eq(tw_handle_rearm(h, MS), 0, "cancelled: too late");
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_lifecycle, rearm_bad_input_and_after_destroy)
{
    struct tw_service *s = service_pool(TW_HIER, 0);
    struct tw_handle *h;

    cr_assert_eq(tw_handle_rearm(NULL, MS), -EINVAL);
    cr_assert_eq(tw_handle_rearm_at(NULL, MS), -EINVAL);
    cr_assert_eq(tw_service_schedule(s, HOUR, never_cb, NULL, &h), 0);
    cr_assert_eq(tw_handle_rearm(h, UINT64_MAX), 1, "saturates");
    cr_assert_eq(tw_handle_deadline(h), UINT64_MAX);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RETURNED);
    cr_assert_eq(tw_handle_rearm(h, MS), 0, "handed back: too late");
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(tw_handle_rearm(h, MS), 0, "after destroy");
    cr_assert_eq(tw_handle_cancel_wait(h), 0);
    tw_handle_release(h);
}

/* Re-arm racing cancel from two threads: the timer is an hour out, so it
 * can run only because of the re-arm. Exactly one of "it ran" and "cancel
 * said 1" holds, and a re-arm that said 0 lost to the cancel. */
struct duel {
    struct tw_handle *h;
    atomic_int go;
    int rc;
};

static void *rearm_thread(void *arg)
{
    struct duel *d = arg;

    while (!atomic_load(&d->go))
        ;
    d->rc = tw_handle_rearm(d->h, 0);
    return NULL;
}

static void race_rearm_cancel(unsigned threads)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    enum { N = 300 };
    static struct fire f[N];
    static int cancel_rc[N], rearm_rc[N];
    struct tw_handle *hs[N];

    for (int i = 0; i < N; i++) {
        struct duel d = {0};
        pthread_t t;

        f[i] = (struct fire){0};
        cr_assert_eq(tw_service_schedule(s, HOUR, fire_cb, &f[i], &hs[i]), 0);
        d.h = hs[i];
        cr_assert_eq(pthread_create(&t, NULL, rearm_thread, &d), 0);
        atomic_store(&d.go, 1);
        cancel_rc[i] = tw_handle_cancel_wait(hs[i]);
        pthread_join(t, NULL);
        rearm_rc[i] = d.rc;
    }
    sleep_ns(50 * MS);
    for (int i = 0; i < N; i++) {
        int ran = atomic_load(&f[i].n);

        cr_assert_eq(ran + cancel_rc[i], 1, "timer %d: ran %d, cancel %d", i,
                     ran, cancel_rc[i]);
        if (rearm_rc[i] == 0)
            cr_assert_eq(cancel_rc[i], 1);
        tw_handle_release(hs[i]);
    }
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_lifecycle, rearm_racing_cancel_is_definite, .timeout = 60)
{
    race_rearm_cancel(0);
}
Test(service_lifecycle, rearm_racing_cancel_is_definite_executor, .timeout = 60)
{
    race_rearm_cancel(2);
}

/* ---- cancel-and-wait -------------------------------------------------------
 */

struct slow {
    atomic_int started;
    atomic_int inside;
    atomic_int finished;
    int self_rc;
};

static void slow_cb(struct tw_handle *h, void *arg)
{
    struct slow *sl = arg;

    atomic_fetch_add(&sl->inside, 1);
    atomic_fetch_add(&sl->started, 1);
    sl->self_rc = tw_handle_cancel_wait(h);
    sleep_ns(40 * MS);
    atomic_fetch_sub(&sl->inside, 1);
    atomic_fetch_add(&sl->finished, 1);
}

/* Called while the callback runs, cancel-and-wait returns only after it
 * returned, and nothing runs afterwards; from the callback itself it is
 * -EDEADLK and changes nothing. */
static void cancel_wait_running(unsigned threads, uint64_t period)
{
    struct tw_service *s = service_pool(TW_HIER, threads);
    static struct slow sl;
    struct tw_handle *h;

    sl = (struct slow){0};
    if (period)
        cr_assert_eq(tw_service_schedule_periodic(s, MS, period, TW_FIXED_RATE,
                                                  slow_cb, &sl, &h),
                     0);
    else
        cr_assert_eq(tw_service_schedule(s, MS, slow_cb, &sl, &h), 0);
    cr_assert(wait_count(&sl.started, 1));
    cr_assert_eq(tw_handle_cancel_wait(h), period ? 1 : 0);
    cr_assert_eq(atomic_load(&sl.inside), 0, "returned while running");
    cr_assert_eq(sl.self_rc, -EDEADLK);
    int fin = atomic_load(&sl.finished);
    sleep_ns(20 * MS);
    cr_assert_eq(atomic_load(&sl.started), fin, "ran after cancel-and-wait");
    cr_assert_eq(tw_handle_query(h),
                 period ? TW_HANDLE_CANCELLED : TW_HANDLE_DONE);
    cr_assert_eq(tw_handle_cancel_wait(h), 0, "second time");
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_lifecycle, cancel_wait_one_shot_on_worker)
{
    cancel_wait_running(0, 0);
}
Test(service_lifecycle, cancel_wait_periodic_on_executor)
{
    cancel_wait_running(2, MS);
}

Test(service_lifecycle, cancel_wait_bad_input_and_pending)
{
    struct tw_service *s = service_pool(TW_HASHED, 0);
    struct tw_handle *h;

    cr_assert_eq(tw_handle_cancel_wait(NULL), -EINVAL);
    cr_assert_eq(tw_service_schedule(s, HOUR, never_cb, NULL, &h), 0);
    cr_assert_eq(tw_handle_cancel_wait(h), 1);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_CANCELLED);
    cr_assert_eq(tw_handle_cancel_wait(h), 0);
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* ---- the release hook ------------------------------------------------------
 */

struct relrec {
    atomic_int released;
    atomic_int ran;
    atomic_int back;
    int back_when_released; /* `back` seen by the hook */
};

static void rel_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    atomic_fetch_add(&((struct relrec *)arg)->ran, 1);
}

static void rel_hook(void *arg)
{
    struct relrec *r = arg;

    r->back_when_released = atomic_load(&r->back);
    atomic_fetch_add(&r->released, 1);
}

static void rel_back(const struct tw_handback *t, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&((struct relrec *)t->arg)->back, 1);
}

/* One timer per way a service lets go: ran, cancelled, handed back,
 * periodic cancelled while running, fire-and-forget; each hook once. */
Test(service_lifecycle, release_hook_once_per_outcome)
{
    struct tw_service *s = service_pool(TW_HIER, 1);
    static struct relrec r[4];
    struct tw_handle *h[4];
    struct tw_timer_spec spec = {.cb = rel_cb, .release = rel_hook};
    uint64_t now = tw_service_now(s);

    for (int i = 0; i < 4; i++) {
        r[i] = (struct relrec){0};
        spec.arg = &r[i];
        spec.deadline = i == 0 || i == 3 ? now + MS : now + HOUR;
        spec.period = i == 3 ? MS : 0;
        cr_assert_eq(tw_service_submit(s, &spec, &h[i]), 0);
    }
    cr_assert(wait_count(&r[0].released, 1));
    cr_assert_eq(atomic_load(&r[0].ran), 1, "released before it ran");
    cr_assert_eq(tw_handle_cancel(h[1]), 1);
    cr_assert(wait_count(&r[3].ran, 2));
    cr_assert_eq(tw_handle_cancel_wait(h[3]), 1);
    cr_assert(wait_count(&r[1].released, 1), "reaped within 100 ms");
    cr_assert(wait_count(&r[3].released, 1));
    cr_assert_eq(atomic_load(&r[2].released), 0);
    cr_assert_eq(tw_service_stop(s, rel_back, NULL), 0);
    cr_assert_eq(atomic_load(&r[2].back), 1);
    cr_assert_eq(r[2].back_when_released, 1, "released before handed back");
    cr_assert_eq(tw_service_destroy(s), 0);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(atomic_load(&r[i].released), 1, "timer %d", i);
        tw_handle_release(h[i]);
    }
}

/* Destroy without stop: what it drops is released too. */
Test(service_lifecycle, release_hook_on_destroy)
{
    struct tw_service *s = service_pool(TW_HASHED, 0);
    static struct relrec r;
    struct tw_timer_spec spec = {
        .deadline = HOUR, .cb = rel_cb, .arg = &r, .release = rel_hook};

    r = (struct relrec){0};
    spec.deadline += tw_service_now(s);
    cr_assert_eq(tw_service_submit(s, &spec, NULL), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(atomic_load(&r.released), 1);
    cr_assert_eq(atomic_load(&r.ran), 0);
}
