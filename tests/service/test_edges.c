/*
 * Paths of the threaded service that its behaviour tests do not reach
 * (found by `make coverage`): what stop does with timers still waiting in
 * the executor's queue, and the state a callback sees for its own handle.
 * Waits are generous: CI runs these under the sanitizers on two cores.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <time.h>

#include "timewheel.h"
#include "util.h"

#define MS UINT64_C(1000000)

/* Poll until *flag reaches want, for at most 5 s. */
static bool wait_count(atomic_int *flag, int want)
{
    for (int i = 0; i < 5000 && atomic_load(flag) < want; i++)
        sleep_ns(MS);
    return atomic_load(flag) >= want;
}

struct slow {
    atomic_int go; /* the callback holds its thread until this is set */
    atomic_int started;
    atomic_int ran;
    int state; /* what the callback saw for its own handle */
};

/* Holds its thread until told to go, then 300 ms more: long enough for a
 * tw_service_stop() begun at the same time to tell the executor to stop, so
 * that nothing queued behind this callback runs. */
static void slow_cb(struct tw_handle *h, void *arg)
{
    struct slow *sl = arg;

    sl->state = tw_handle_query(h);
    atomic_fetch_add(&sl->started, 1);
    wait_count(&sl->go, 1);
    sleep_ns(300 * MS);
    atomic_fetch_add(&sl->ran, 1);
}

static void count_back(const struct tw_handback *t, void *ctx)
{
    (void)t;
    ++*(int *)ctx;
}

/*
 * Three timers due in the same tick, one executor thread: the first runs
 * (slowly), the other two wait in the executor's queue. One of those is
 * cancelled there; then stop lets the running callback finish, hands back
 * the one still queued and counts the cancelled one as cancelled.
 */
Test(service_edges, stop_sorts_out_the_executor_queue, .timeout = 30)
{
    static struct slow sl;
    struct tw_service_config cfg;
    struct tw_service_stats st;
    struct tw_service *s;
    struct tw_handle *h[3];
    int back = 0;

    tw_service_config_init(&cfg, TW_HIER);
    cfg.executor_threads = 1;
    cfg.tick_ns = 50 * MS; /* three schedules in a row share a tick */
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tw_service_schedule(s, 10 * MS, slow_cb, &sl, &h[i]), 0);
    cr_assert(wait_count(&sl.started, 1), "no callback started");
    sleep_ns(100 * MS); /* the worker has dispatched the whole tick */
    cr_assert_eq(sl.state, TW_HANDLE_RUNNING, "its own handle, running");
    cr_assert_eq(tw_handle_query(h[1]), TW_HANDLE_PENDING, "queued");
    cr_assert_eq(tw_handle_cancel(h[1]), 1, "cancel a dispatched timer");
    atomic_store(&sl.go, 1);
    cr_assert_eq(tw_service_stop(s, count_back, &back), 0);
    cr_assert_eq(atomic_load(&sl.ran), 1, "stop waited for the running one");
    cr_assert_eq(atomic_load(&sl.started), 1, "a queued timer ran");
    cr_assert_eq(back, 1);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.scheduled, 3);
    cr_assert_eq(st.completed, 1);
    cr_assert_eq(st.cancelled, 1);
    cr_assert_eq(st.returned, 1);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(tw_handle_query(h[0]), TW_HANDLE_DONE);
    cr_assert_eq(tw_handle_query(h[1]), TW_HANDLE_CANCELLED);
    cr_assert_eq(tw_handle_query(h[2]), TW_HANDLE_RETURNED);
    cr_assert_eq(tw_service_destroy(s), 0);
    for (int i = 0; i < 3; i++)
        tw_handle_release(h[i]);
}

/* On the worker thread too, a callback sees its handle running. */
Test(service_edges, callback_sees_its_handle_running)
{
    static struct slow sl;
    struct tw_service_config cfg;
    struct tw_service *s;

    tw_service_config_init(&cfg, TW_HASHED);
    s = tw_service_create(&cfg, NULL);
    cr_assert_not_null(s);
    sl.state = -1;
    atomic_store(&sl.go, 1);
    cr_assert_eq(tw_service_schedule(s, MS, slow_cb, &sl, NULL), 0);
    cr_assert(wait_count(&sl.ran, 1));
    cr_assert_eq(sl.state, TW_HANDLE_RUNNING);
    cr_assert_eq(tw_service_destroy(s), 0);
}
