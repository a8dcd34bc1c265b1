/*
 * tw_handle_cancel_release(): the same answers as tw_handle_cancel() then
 * tw_handle_release(), in every state a cancel meets, with the caller's
 * reference gone either way: every block comes back (the counting
 * allocator of tests/util.c, guarded, so a touch of a freed handle
 * faults), each release hook runs once, and the stats identity holds.
 * Racing the timer's own firing, exactly one of "the cancel said 1" and
 * "it ran" happens.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "timewheel.h"
#include "util.h"

#define HOUR (3600 * SEC)

static void guarded(void)
{
    alloc_install(true);
}

static struct tw_handle *with_hook(struct tw_service *s, uint64_t delay,
                                   uint64_t period)
{
    struct tw_timer_spec spec = {.deadline = tw_service_now(s) + delay,
                                 .period = period,
                                 .kind = TW_FIXED_DELAY,
                                 .cb = count_run,
                                 .release = count_release};
    struct tw_handle *h = NULL;

    cr_assert_eq(tw_service_submit(s, &spec, &h), 0);
    return h;
}

/* Stop and destroy; every block back, nothing freed twice, the identity. */
static void finish(struct tw_service *s)
{
    struct tw_service_stats st;

    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.scheduled,
                 st.completed + st.cancelled + st.returned + st.pending);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
    cr_assert_eq(atomic_load(&alloc_log.bad_frees), 0);
}

Test(service_cancel_release, null_is_einval)
{
    cr_assert_eq(tw_handle_cancel_release(NULL), -EINVAL);
}

static void pending_one(enum tw_mode mode)
{
    struct tw_service *s = service_pool(mode, 0);
    struct tw_handle *h = with_hook(s, HOUR, 0);
    struct tw_service_stats st;

    cr_assert_eq(tw_handle_cancel_release(h), 1);
    wait_for(&releases, 1, "release hooks"); /* the worker lets go of it */
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.cancelled, 1);
    cr_assert_eq(atomic_load(&runs), 0);
    finish(s);
    cr_assert_eq(atomic_load(&releases), 1);
}

Test(service_cancel_release, pending_hier, .init = guarded)
{
    pending_one(TW_HIER);
}

Test(service_cancel_release, pending_hashed, .init = guarded)
{
    pending_one(TW_HASHED);
}

/* A one-shot that has run: 0, and the reference is still given back. */
Test(service_cancel_release, after_it_ran_is_zero_and_releases, .init = guarded)
{
    struct tw_service *s = service_pool(TW_HIER, 0);
    struct tw_handle *h = with_hook(s, 0, 0);

    wait_for(&runs, 1, "runs");
    wait_for(&releases, 1, "release hooks");
    cr_assert_eq(tw_handle_cancel_release(h), 0);
    finish(s);
}

/* After the service is gone: 0, and the handle is freed. */
Test(service_cancel_release, after_destroy_is_zero_and_releases,
     .init = guarded)
{
    struct tw_service *s = service_pool(TW_HIER, 0);
    struct tw_handle *h = with_hook(s, HOUR, 0);

    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(alloc_live(), 1);
    cr_assert_eq(tw_handle_cancel_release(h), 0);
    cr_assert_eq(alloc_live(), 0);
    cr_assert_eq(atomic_load(&releases), 1);
}

/* A periodic timer, cancelled while it runs on an executor or waits for
 * its next period: 1, no run after the one in progress. */
Test(service_cancel_release, periodic_on_executor, .init = guarded)
{
    struct tw_service *s = service_pool(TW_HIER, 2);
    struct tw_handle *h = with_hook(s, 0, MS);
    int seen;

    wait_for(&runs, 3, "runs");
    cr_assert_eq(tw_handle_cancel_release(h), 1);
    sleep_ns(20 * MS); /* a run in progress may finish */
    seen = atomic_load(&runs);
    sleep_ns(20 * MS);
    cr_assert_eq(atomic_load(&runs), seen, "it ran after the cancel");
    wait_for(&releases, 1, "release hooks");
    finish(s);
    cr_assert_eq(atomic_load(&releases), 1);
}

/* Racing its firing: threads cancel-and-release timers due about now;
 * each timer either ran or was cancelled (answer 1), never both, never
 * neither, and every handle is freed. */
#define RACERS 2
#define EACH 2000

struct racer {
    struct tw_service *s;
    int won;
};

static void *race(void *arg)
{
    struct racer *r = arg;

    for (int i = 0; i < EACH; i++) {
        struct tw_handle *h = NULL;

        cr_assert_eq(tw_service_schedule(r->s, (uint64_t)(i % 3) * 100000,
                                         count_run, NULL, &h),
                     0);
        if (i % 7)
            sleep_ns((uint64_t)(i % 5) * 50000);
        r->won += tw_handle_cancel_release(h);
    }
    return NULL;
}

static void racing(unsigned executors)
{
    struct tw_service *s = service_pool(TW_HIER, executors);
    struct racer r[RACERS];
    pthread_t t[RACERS];
    struct tw_service_stats st;
    int won = 0;

    for (int i = 0; i < RACERS; i++) {
        r[i] = (struct racer){s, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < RACERS; i++) {
        pthread_join(t[i], NULL);
        won += r[i].won;
    }
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(atomic_load(&runs) + won, RACERS * EACH,
                 "%d ran, %d cancelled", atomic_load(&runs), won);
    cr_assert_eq(st.cancelled, (uint64_t)won);
    cr_assert_eq(st.completed, (uint64_t)atomic_load(&runs));
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
}

Test(service_cancel_release, racing_firing_on_worker, .init = guarded,
     .timeout = 60)
{
    racing(0);
}

Test(service_cancel_release, racing_firing_on_executor, .init = guarded,
     .timeout = 60)
{
    racing(2);
}
