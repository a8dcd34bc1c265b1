/*
 * lib/loop/relative.c: relative timers counted from the loop's clock
 * reading, bad input included.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>

#include "util.h"

static const enum tw_mode modes[] = {TW_HIER, TW_HASHED};

static void nop(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
}

static struct tw_wheel *wheel_at(enum tw_mode mode, uint64_t start)
{
    struct tw_config cfg;
    struct tw_wheel *w;

    tw_config_init(&cfg, mode);
    cfg.start_ns = start;
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    return w;
}

Test(loop_relative, counts_from_the_reading_not_the_last_advance)
{
    for (int m = 0; m < 2; m++) {
        const uint64_t start = 1558 * SEC;
        struct tw_wheel *w = wheel_at(modes[m], start);
        struct tw_timer a, b;

        tw_timer_init(&a, nop, NULL);
        tw_timer_init(&b, nop, NULL);
        /* The loop slept 1.2 s since the wheel's last advance. */
        cr_assert_eq(tw_loop_schedule_after(w, &a, start + 1200 * MS, 2 * SEC),
                     0);
        cr_assert_eq(tw_timer_deadline(&a), start + 3200 * MS);
        cr_assert_eq(tw_loop_rearm_after(w, &b, start + 1200 * MS, 2 * SEC), 0);
        cr_assert_eq(tw_loop_rearm_after(w, &b, start + 1500 * MS, 2 * SEC), 1);
        cr_assert_eq(tw_timer_deadline(&b), start + 3500 * MS);
        cr_assert_eq(tw_now(w), start, "the wheel's time is not moved");
        cr_assert_eq(tw_advance(w, start + 3199 * MS), 0);
        cr_assert_eq(tw_advance(w, start + 3200 * MS), 1);
        cr_assert_eq(tw_advance(w, start + 3500 * MS), 1);
        wheel_ok(w);
        tw_destroy(w);
    }
}

Test(loop_relative, stale_reading_counts_from_the_wheel)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_at(modes[m], 0);
        struct tw_timer a, b;

        tw_timer_init(&a, nop, NULL);
        tw_timer_init(&b, nop, NULL);
        cr_assert_eq(tw_advance(w, 10 * SEC), 0);
        /* A reading older than the wheel's time: counted from 10 s. */
        cr_assert_eq(tw_loop_schedule_after(w, &a, 4 * SEC, 2 * SEC), 0);
        cr_assert_eq(tw_timer_deadline(&a), 12 * SEC);
        cr_assert_eq(tw_loop_rearm_after(w, &b, 0, 1 * SEC), 0);
        cr_assert_eq(tw_timer_deadline(&b), 11 * SEC);
        wheel_ok(w);
        tw_destroy(w);
    }
}

Test(loop_relative, deadlines_saturate)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_at(modes[m], 0);
        struct tw_timer a, b;

        tw_timer_init(&a, nop, NULL);
        tw_timer_init(&b, nop, NULL);
        cr_assert_eq(tw_loop_schedule_after(w, &a, UINT64_MAX - 5, 10), 0);
        cr_assert_eq(tw_timer_deadline(&a), UINT64_MAX);
        cr_assert_eq(tw_loop_rearm_after(w, &b, 1, UINT64_MAX), 0);
        cr_assert_eq(tw_timer_deadline(&b), UINT64_MAX);
        cr_assert_eq(tw_loop_rearm_after(w, &b, 7, 0), 1);
        cr_assert_eq(tw_timer_deadline(&b), 7);
        cr_assert_eq(tw_advance(w, 7), 0, "due at the first tick boundary");
        cr_assert_eq(tw_advance(w, MS), 1);
        wheel_ok(w);
        tw_destroy(w);
    }
}

Test(loop_relative, bad_input_changes_nothing)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_at(modes[m], 0);
        struct tw_timer t, nocb;

        tw_timer_init(&t, nop, NULL);
        tw_timer_init(&nocb, NULL, NULL);
        cr_assert_eq(tw_loop_schedule_after(NULL, &t, 5, 5), -EINVAL);
        cr_assert_eq(tw_loop_schedule_after(w, NULL, 5, 5), -EINVAL);
        cr_assert_eq(tw_loop_schedule_after(w, &nocb, 5, 5), -EINVAL);
        cr_assert_eq(tw_loop_rearm_after(NULL, &t, 5, 5), -EINVAL);
        cr_assert_eq(tw_loop_rearm_after(w, NULL, 5, 5), -EINVAL);
        cr_assert_eq(tw_loop_rearm_after(w, &nocb, 5, 5), -EINVAL);
        cr_assert_eq(tw_pending(w), 0);
        cr_assert_not(tw_timer_pending(&nocb));
        /* Pending: schedule is -EBUSY and keeps the first deadline. */
        cr_assert_eq(tw_loop_schedule_after(w, &t, 5 * MS, 5 * MS), 0);
        cr_assert_eq(tw_loop_schedule_after(w, &t, 9 * MS, 5 * MS), -EBUSY);
        cr_assert_eq(tw_timer_deadline(&t), 10 * MS);
        cr_assert_eq(tw_pending(w), 1);
        wheel_ok(w);
        tw_destroy(w);
    }
}
