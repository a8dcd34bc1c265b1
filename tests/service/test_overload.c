/*
 * Overload and the counters of the service: the defaults bound a
 * flood (back-pressure with -EAGAIN once the worker is more than max_lag
 * behind, at most max_pending timers held), a hashed tick under 1 ms is
 * raised to 1 ms, and tw_service_stats() keeps its identity in every
 * snapshot taken while producers, cancellers and the worker all run.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "timewheel.h"
#include "util.h"

#define HOUR (UINT64_C(3600) * 1000 * MS)

static void nop_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

Test(service_overload, defaults_bound_a_flood)
{
    struct tw_service_config cfg;

    tw_service_config_init(&cfg, TW_HIER);
    cr_assert_eq(cfg.max_pending, TW_SERVICE_DEFAULT_MAX_PENDING);
    cr_assert_eq(cfg.max_lag_ns, TW_SERVICE_DEFAULT_MAX_LAG_NS);
    cr_assert_eq(cfg.max_pending, (size_t)1 << 22);
    cr_assert_eq(cfg.max_lag_ns, 1000 * MS);
}

/* The callback holds the worker until told to go, then max_lag more. */
struct stall {
    atomic_int in;
    atomic_int go;
};

static void stall_cb(struct tw_handle *h, void *arg)
{
    struct stall *st = arg;

    (void)h;
    atomic_store(&st->in, 1);
    while (!atomic_load(&st->go))
        sleep_ns(MS);
    sleep_ns(30 * MS);
}

/*
 * With the worker held up in a callback, a producer queues more than one
 * turn's admission (10^5) of timers; once the worker is back and finds it
 * has not emptied the queue for longer than max_lag (20 ms here), schedules
 * are refused with -EAGAIN until it has. Repeated up to 5 times in case the
 * producer was descheduled through the whole window.
 */
Test(service_overload, lagging_worker_refuses_with_eagain)
{
    struct tw_service_config cfg;
    struct tw_service_stats st;
    struct tw_service *s;
    int err, refused = 0;

    tw_service_config_init(&cfg, TW_HIER);
    cfg.max_lag_ns = 20 * MS;
    cfg.max_pending = 0;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s);
    for (int round = 0; round < 5 && !refused; round++) {
        static struct stall sl;
        uint64_t end;

        sl = (struct stall){0};
        cr_assert_eq(tw_service_schedule(s, 0, stall_cb, &sl, NULL), 0);
        while (!atomic_load(&sl.in))
            sleep_ns(MS);
        for (int i = 0; i < 150000; i++)
            cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, NULL), 0);
        atomic_store(&sl.go, 1);
        end = now_ns() + 2000 * MS;
        while (!refused && now_ns() < end) {
            int rc = tw_service_schedule(s, HOUR, nop_cb, NULL, NULL);

            cr_assert(rc == 0 || rc == -EAGAIN, "rc %d", rc);
            refused = rc == -EAGAIN;
        }
    }
    cr_assert(refused, "never refused while the worker lagged");
    /* Once the worker has caught up, schedules are accepted again. */
    for (int i = 0; i < 5000; i++) {
        if (tw_service_schedule(s, HOUR, nop_cb, NULL, NULL) == 0)
            break;
        sleep_ns(MS);
    }
    cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, NULL), 0);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_geq(st.rejected, 1);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(st.scheduled, st.completed + st.cancelled + st.returned);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* The lag counts from when the worker last had an empty queue or woke: a
 * burst of more than a turn's admission after an idle second is not
 * refused for the second of idleness. */
Test(service_overload, burst_after_idle_is_not_refused)
{
    struct tw_service_config cfg;
    struct tw_service_stats st;
    struct tw_service *s;
    int err;

    tw_service_config_init(&cfg, TW_HIER);
    cfg.max_lag_ns = 500 * MS;
    cfg.max_pending = 0;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s);
    cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, NULL), 0);
    sleep_ns(1000 * MS);
    /* An hour out, these do not wake the sleeping worker: they pile up */
    for (int i = 0; i < 120000; i++)
        cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, NULL), 0,
                     "refused at %d", i);
    /* This one does; the worker then admits a turn's worth and finds more
     * waiting, which came in after it fell asleep a second ago. */
    cr_assert_eq(tw_service_schedule(s, 0, nop_cb, NULL, NULL), 0);
    for (int i = 0; i < 50000; i++)
        cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, NULL), 0,
                     "refused at %d after the wake-up", i);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.rejected, 0);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* max_pending is never exceeded, from two threads at once, and a slot
 * comes back when the service lets go of a timer. */
struct filler {
    struct tw_service *s;
    int accepted;
};

static void *fill(void *arg)
{
    struct filler *f = arg;

    for (int i = 0; i < 3000; i++)
        if (tw_service_schedule(f->s, HOUR, nop_cb, NULL, NULL) == 0)
            f->accepted++;
    return NULL;
}

Test(service_overload, max_pending_is_never_exceeded)
{
    struct tw_service_config cfg;
    struct tw_service_stats st;
    struct filler f[2];
    pthread_t t[2];
    struct tw_service *s;
    struct tw_handle *h;
    int err;

    tw_service_config_init(&cfg, TW_HIER);
    cfg.max_pending = 2000;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s);
    for (int i = 0; i < 2; i++) {
        f[i] = (struct filler){.s = s};
        pthread_create(&t[i], NULL, fill, &f[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_leq(f[0].accepted + f[1].accepted, 2000);
    /* slots stranded in the two threads' credit: at most 2 * 64 */
    cr_assert_geq(f[0].accepted + f[1].accepted, 2000 - 2 * 64);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.pending, (uint64_t)(f[0].accepted + f[1].accepted));
    cr_assert_eq(st.rejected, (uint64_t)(6000 - st.pending));
    if (st.pending == 2000) {
        cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, &h), -EAGAIN);
    }
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* A cancel counts at once and gives its slot back at once: with
 * max_pending 1, the next schedule after a cancel that said 1 succeeds. */
Test(service_overload, cancel_counts_and_frees_its_slot_at_once)
{
    struct tw_service_config cfg;
    struct tw_service_stats st;
    struct tw_service *s;
    struct tw_handle *h;
    int err;

    tw_service_config_init(&cfg, TW_HIER);
    cfg.max_pending = 1;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s);
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, &h), 0, "%d",
                     i);
        cr_assert_eq(tw_service_schedule(s, HOUR, nop_cb, NULL, NULL), -EAGAIN);
        cr_assert_eq(tw_handle_cancel(h), 1);
        cr_assert_eq(tw_service_stats(s, &st), 0);
        cr_assert_eq(st.cancelled, (uint64_t)i + 1);
        cr_assert_eq(st.pending, 0);
        tw_handle_release(h);
    }
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* A 1 ns hashed tick is raised to 1 ms: the idle worker wakes about once a
 * millisecond, not a million times a second, and timers still never fire
 * early. */
static atomic_uint_fast64_t fired_at;

static void stamp_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
    atomic_store(&fired_at, now_ns());
}

Test(service_overload, hashed_tick_is_raised_to_1ms)
{
    struct tw_service_config cfg;
    struct tw_service_stats a, b;
    struct tw_service *s;
    uint64_t t0, t1, due;
    int err;

    tw_service_config_init(&cfg, TW_HASHED);
    cfg.tick_ns = 1;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s, "%s", tw_strerror(err));
    cr_assert_eq(tw_service_stats(s, &a), 0);
    t0 = now_ns();
    sleep_ns(100 * MS);
    t1 = now_ns();
    cr_assert_eq(tw_service_stats(s, &b), 0);
    /* at most one wake-up per 1 ms tick, with room for spurious ones */
    cr_assert_leq(b.wakeups - a.wakeups, 2 * (t1 - t0) / MS + 10,
                  "%llu wake-ups in %llu ms",
                  (unsigned long long)(b.wakeups - a.wakeups),
                  (unsigned long long)((t1 - t0) / MS));
    atomic_store(&fired_at, 0);
    due = tw_service_now(s) + 5 * MS;
    cr_assert_eq(tw_service_schedule_at(s, due, stamp_cb, NULL, NULL), 0);
    for (int i = 0; i < 5000 && !atomic_load(&fired_at); i++)
        sleep_ns(MS);
    cr_assert_geq(atomic_load(&fired_at), due);
    cr_assert_eq(tw_service_destroy(s), 0);
    /* tick 0 is still refused */
    cfg.tick_ns = 0;
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL);
}

/* ---- stats under load -------------------------------------------------------
 */

struct churner {
    struct tw_service *s;
    atomic_int *stop;
};

static void *churn(void *arg)
{
    struct churner *c = arg;
    uint64_t x = (uint64_t)(uintptr_t)c | 1;

    while (!atomic_load(c->stop)) {
        struct tw_handle *h;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (tw_service_schedule(c->s, x % (3 * MS), nop_cb, NULL, &h))
            continue;
        if (x % 3 == 0)
            tw_handle_cancel(h);
        else if (x % 3 == 1)
            tw_handle_rearm(h, x % (2 * MS));
        tw_handle_release(h);
    }
    return NULL;
}

static void stats_under_load(enum tw_mode mode, unsigned threads)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    struct churner c[2];
    pthread_t t[2];
    atomic_int stop = 0;
    struct tw_service_stats prev = {0}, st;
    int err, samples = 0;
    uint64_t end;

    tw_service_config_init(&cfg, mode);
    cfg.executor_threads = threads;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s);
    for (int i = 0; i < 2; i++) {
        c[i] = (struct churner){.s = s, .stop = &stop};
        pthread_create(&t[i], NULL, churn, &c[i]);
    }
    end = now_ns() + 300 * MS;
    while (now_ns() < end) {
        cr_assert_eq(tw_service_stats(s, &st), 0);
        samples++;
        cr_assert_eq(st.scheduled,
                     st.completed + st.cancelled + st.returned + st.pending,
                     "sample %d", samples);
        cr_assert_leq(st.pending, st.scheduled, "pending went negative");
        cr_assert_geq(st.scheduled, prev.scheduled);
        cr_assert_geq(st.completed, prev.completed);
        cr_assert_geq(st.cancelled, prev.cancelled);
        cr_assert_geq(st.runs, st.completed);
        prev = st;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_gt(prev.scheduled, 0);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(st.scheduled, st.completed + st.cancelled + st.returned);
    cr_log_info("%d samples, %llu timers", samples,
                (unsigned long long)st.scheduled);
    cr_assert_eq(tw_service_destroy(s), 0);
}

Test(service_overload, stats_identity_in_every_sample_hier)
{
    stats_under_load(TW_HIER, 0);
}
Test(service_overload, stats_identity_in_every_sample_hashed_executor)
{
    stats_under_load(TW_HASHED, 2);
}
