/*
 * The service's rows of the bad-input table (docs/api.md) that no other
 * test checks: each test names the function and the kind of bad argument,
 * and asserts the documented answer and that the service is unharmed.
 *
 *   service_badinput      the threaded service's arguments
 *   service_badinput_oom  out of memory and out of threads, made real with
 *                         an address-space limit on the test's own process
 *                         (limit_address_space() in tests/util.c)
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "timewheel.h"
#include "util.h"

static void count_cb(struct tw_handle *h, void *arg)
{
    (void)h;
    (void)arg;
}

Test(service_badinput, create_refuses_what_tw_create_refuses)
{
    static const uint32_t one[] = {1}, two[] = {64, 64};
    struct tw_service_config cfg;
    int err = 0;

    tw_service_config_init(&cfg, TW_HIER);
    cfg.slots = one;
    cfg.levels = 1;
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL, "a level of one slot");
    tw_service_config_init(&cfg, TW_HASHED);
    cfg.slots = two;
    cfg.levels = 2;
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL, "a hashed wheel with two levels");
    tw_service_config_init(&cfg, TW_HASHED);
    cfg.tick_ns = UINT64_C(1) << 60; /* x 512 slots overflows int64 */
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL, "hashed tick x slots");
    cr_assert_null(tw_service_create(&cfg, NULL), "no err pointer");
}

Test(service_badinput, periodic_refusals)
{
    struct tw_service *s = default_service(TW_HIER);
    struct tw_handle *h = (struct tw_handle *)&s;

    cr_assert_eq(tw_service_schedule_periodic(NULL, MS, MS, TW_FIXED_RATE,
                                              count_cb, NULL, &h),
                 -EINVAL);
    cr_assert_null(h);
    h = (struct tw_handle *)&s;
    cr_assert_eq(
        tw_service_schedule_periodic(s, MS, MS, TW_FIXED_DELAY, NULL, NULL, &h),
        -EINVAL);
    cr_assert_null(h);
    h = (struct tw_handle *)&s;
    cr_assert_eq(tw_service_schedule_periodic(s, MS, 0, TW_FIXED_RATE, count_cb,
                                              NULL, &h),
                 -EINVAL);
    cr_assert_null(h, "period 0 clears *out too");
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    h = (struct tw_handle *)&s;
    cr_assert_eq(tw_service_schedule_periodic(s, MS, MS, TW_FIXED_RATE,
                                              count_cb, NULL, &h),
                 -ESHUTDOWN);
    cr_assert_null(h);
    cr_assert_eq(tw_service_schedule(s, MS, count_cb, NULL, NULL), -ESHUTDOWN);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* Stop with no function drops what it would hand back, and counts it. */
Test(service_badinput, stop_without_handback_function)
{
    struct tw_service *s = default_service(TW_HASHED);
    struct tw_service_stats st;
    struct tw_handle *h;

    cr_assert_eq(tw_service_schedule(s, 3600 * SEC, count_cb, NULL, &h), 0);
    cr_assert_eq(tw_service_schedule_periodic(
                     s, 3600 * SEC, SEC, TW_FIXED_DELAY, count_cb, NULL, NULL),
                 0);
    cr_assert_eq(tw_service_stop(s, NULL, NULL), 0);
    cr_assert_eq(tw_service_stats(s, &st), 0);
    cr_assert_eq(st.scheduled, 2);
    cr_assert_eq(st.returned, 2);
    cr_assert_eq(st.pending, 0);
    cr_assert_eq(tw_handle_query(h), TW_HANDLE_RETURNED);
    cr_assert_eq(tw_handle_cancel(h), 0, "a returned timer");
    cr_assert_eq(tw_service_destroy(s), 0);
    tw_handle_release(h);
}

static void destroy_in_fn(const struct tw_handback *t, void *ctx)
{
    (void)t;
    *(int *)ctx = tw_service_destroy(*(struct tw_service **)t->arg);
}

Test(service_badinput, destroy_from_handback_is_refused)
{
    struct tw_service *s = default_service(TW_HIER);
    int rc = 1;

    cr_assert_eq(tw_service_schedule(s, 3600 * SEC, count_cb, &s, NULL), 0);
    cr_assert_eq(tw_service_stop(s, destroy_in_fn, &rc), 0);
    cr_assert_eq(rc, -EDEADLK);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* ---- out of memory and out of threads ------------------------------------ */

Test(service_badinput_oom, service_create_reports_enomem)
{
    static const uint32_t most[] = {TW_MAX_HASHED_SLOTS};
    struct tw_service_config cfg;
    int err = 1;

    limit_address_space(256u << 20);
    tw_service_config_init(&cfg, TW_HASHED);
    cfg.slots = most;
    cfg.levels = 1;
    cfg.tick_ns = 1;
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -ENOMEM);
}

/* Each executor thread needs a stack (8 MiB by default): a pool of 1024
 * cannot start within 64 MiB, and create reports pthread_create's error
 * after joining the threads it did start. */
Test(service_badinput_oom, service_create_reports_thread_failure)
{
    struct tw_service_config cfg;
    struct tw_service *s;
    int err = 1;

    limit_address_space(64u << 20);
    tw_service_config_init(&cfg, TW_HIER);
    cfg.executor_threads = 1024;
    cr_assert_null(tw_service_create(&cfg, &err));
    cr_assert_eq(err, -EAGAIN, "err %d", err);
    cfg.executor_threads = 0;
    s = tw_service_create(&cfg, &err);
    cr_assert_not_null(s, "a service without a pool: err %d", err);
    cr_assert_eq(tw_service_destroy(s), 0);
}
