/*
 * The registry of live services (lib/service/registry.c): a handle names
 * its service by a slot instead of a pointer. Handles of two services
 * reach their own; a slot given again after a destroy does not lead an old
 * handle into the new service; threads creating and destroying services at
 * once keep each one's accounting its own; and a full registry makes
 * tw_service_create() answer -EAGAIN, taking nothing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>

#include "../../lib/service/service.h"
#include "timewheel.h"
#include "util.h"

static void nop(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

static uint64_t cancelled(struct tw_service *s)
{
    struct tw_service_stats st;

    cr_assert_eq(tw_service_stats(s, &st), 0);
    return st.cancelled;
}

static struct tw_handle *hour_out(struct tw_service *s)
{
    struct tw_handle *h;

    cr_assert_eq(tw_service_schedule(s, 3600 * SEC, nop, NULL, &h), 0);
    return h;
}

Test(service_registry, handles_reach_their_own_service)
{
    struct tw_service *a = default_service(TW_HIER),
                      *b = default_service(TW_HIER);
    struct tw_handle *ha = hour_out(a), *hb = hour_out(b);

    cr_assert_eq(tw_handle_cancel(hb), 1);
    cr_assert_eq(cancelled(a), 0);
    cr_assert_eq(cancelled(b), 1);
    cr_assert_eq(tw_handle_cancel(ha), 1);
    cr_assert_eq(cancelled(a), 1);
    cr_assert_eq(cancelled(b), 1);
    tw_handle_release(ha);
    tw_handle_release(hb);
    cr_assert_eq(tw_service_destroy(a), 0);
    cr_assert_eq(tw_service_destroy(b), 0);
}

/* a's slot is the lowest free one when c is created, so c takes it; a's
 * handle, handed back by the destroy, must not reach c. */
Test(service_registry, old_handle_never_reaches_the_slots_next_service)
{
    struct tw_service *a = default_service(TW_HIER), *c;
    struct tw_handle *h = hour_out(a);

    cr_assert_eq(tw_service_destroy(a), 0);
    c = default_service(TW_HIER);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RETURNED);
    cr_assert_eq(tw_handle_cancel(h), 0);
    cr_assert_eq(tw_handle_rearm(h, SEC), 0);
    cr_assert_eq(tw_handle_cancel_wait(h), 0);
    cr_assert_eq(cancelled(c), 0);
    tw_handle_release(h);
    cr_assert_eq(tw_service_destroy(c), 0);
}

/* Every slot taken by a stand-in: create answers -EAGAIN and holds
 * nothing; once one slot is free again, create works. */
Test(service_registry, create_reports_eagain_when_full)
{
    static struct tw_service fake;
    struct tw_service_config cfg;
    struct tw_service *s;
    unsigned taken = 0;
    int err = 0;

    alloc_install(false);
    while (tw__registry_add(&fake) == 0)
        taken++;
    cr_assert_eq(taken, TW__SLOTS - 1);
    tw_service_config_init(&cfg, TW_HIER);
    cfg.tick_ns = 0;
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL, "a bad config is still -EINVAL: %d", err);
    cfg.tick_ns = TW_DEFAULT_TICK_NS;
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -EAGAIN);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
    fake.slot = TW__SLOTS / 2;
    tw__registry_remove(&fake);
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s, "err %d", err);
    cr_assert_eq(s->slot, TW__SLOTS / 2);
    cr_assert_eq(tw_service_destroy(s), 0);
    for (unsigned i = 1; i < TW__SLOTS; i++) {
        fake.slot = i;
        tw__registry_remove(&fake);
    }
    cr_assert_eq(alloc_live(), 0);
}

/* Threads creating and destroying services while their handles cancel
 * through the registry: each service's counts are its own. */
#define CHURN_THREADS 4
#define CHURN_ROUNDS 25
#define CHURN_TIMERS 8

static void *churn(void *arg)
{
    int *bad = arg;

    struct tw_service_config cfg;

    /* No Criterion asserts here: they belong to the main thread. */
    tw_service_config_init(&cfg, TW_HIER);
    for (int r = 0; r < CHURN_ROUNDS; r++) {
        struct tw_service *s = tw_service_create(&cfg, NULL);
        struct tw_handle *h[CHURN_TIMERS] = {0};
        struct tw_service_stats st;

        if (!s) {
            ++*bad;
            continue;
        }
        for (int i = 0; i < CHURN_TIMERS; i++)
            if (tw_service_schedule(s, 3600 * SEC, nop, NULL, &h[i]) != 0)
                ++*bad;
        for (int i = 0; i < CHURN_TIMERS / 2; i++)
            if (tw_handle_cancel(h[i]) != 1)
                ++*bad;
        if (tw_service_stop(s, NULL, NULL) != 0 ||
            tw_service_stats(s, &st) != 0 || st.cancelled != CHURN_TIMERS / 2 ||
            st.returned != CHURN_TIMERS - CHURN_TIMERS / 2)
            ++*bad;
        if (tw_service_destroy(s) != 0)
            ++*bad;
        for (int i = 0; i < CHURN_TIMERS; i++)
            tw_handle_release(h[i]);
    }
    return NULL;
}

Test(service_registry, services_come_and_go_on_threads)
{
    pthread_t tid[CHURN_THREADS];
    int bad[CHURN_THREADS] = {0};

    for (int t = 0; t < CHURN_THREADS; t++)
        cr_assert_eq(pthread_create(&tid[t], NULL, churn, &bad[t]), 0);
    for (int t = 0; t < CHURN_THREADS; t++) {
        pthread_join(tid[t], NULL);
        cr_assert_eq(bad[t], 0, "thread %d: %d wrong answers", t, bad[t]);
    }
}
