/*
 * lib/loop/sleep.c: the epoll_wait() timeout and the timerfd setting, bad
 * input included.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const enum tw_mode modes[] = {TW_HIER, TW_HASHED};

static void nop(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
}

/* A wheel of mode with the given tick and start; huge ticks (beyond a day)
 * get one level of two slots, since the default layouts' coarse levels
 * would not fit in 64-bit ns. */
static struct tw_wheel *wheel_with(enum tw_mode mode, uint64_t tick,
                                   uint64_t start)
{
    static const uint32_t two[] = {2};
    struct tw_config cfg;
    struct tw_wheel *w;

    tw_config_init(&cfg, mode);
    if (tick > 24 * 3600 * SEC) {
        cfg.slots = two;
        cfg.levels = 1;
    }
    cfg.tick_ns = tick;
    cfg.start_ns = start;
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    return w;
}

/* ---- tw_loop_timeout_ms ------------------------------------------------ */

Test(loop_sleep, timeout_nothing_pending_is_minus_one)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_with(modes[m], MS, 0);
        struct tw_timer t;

        cr_assert_eq(tw_loop_timeout_ms(NULL, 0), -1);
        cr_assert_eq(tw_loop_timeout_ms(w, 0), -1);
        cr_assert_eq(tw_loop_timeout_ms(w, UINT64_MAX), -1);
        tw_timer_init(&t, nop, NULL);
        cr_assert_eq(tw_schedule(w, &t, 3 * MS), 0);
        cr_assert_eq(tw_cancel(w, &t), 1);
        cr_assert_eq(tw_loop_timeout_ms(w, 0), -1);
        tw_destroy(w);
    }
}

Test(loop_sleep, timeout_rounds_up_and_is_zero_when_due)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_with(modes[m], 5 * MS, 0);
        struct tw_timer t;

        tw_timer_init(&t, nop, NULL);
        cr_assert_eq(tw_schedule(w, &t, 5 * MS), 0);
        cr_assert_eq(tw_next_deadline(w), 5 * MS);
        cr_assert_eq(tw_loop_timeout_ms(w, 0), 5);
        cr_assert_eq(tw_loop_timeout_ms(w, 1), 5, "4.999999 ms is 5");
        cr_assert_eq(tw_loop_timeout_ms(w, 4 * MS - 1), 2);
        cr_assert_eq(tw_loop_timeout_ms(w, 4 * MS), 1);
        cr_assert_eq(tw_loop_timeout_ms(w, 5 * MS - 1), 1, "1 ns is 1 ms");
        cr_assert_eq(tw_loop_timeout_ms(w, 5 * MS), 0);
        cr_assert_eq(tw_loop_timeout_ms(w, UINT64_MAX), 0);
        cr_assert_eq(tw_advance(w, 5 * MS), 1);
        cr_assert_eq(tw_loop_timeout_ms(w, 5 * MS), -1);
        tw_destroy(w);
    }
}

Test(loop_sleep, timeout_is_zero_while_work_is_left_over)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_with(modes[m], MS, 0);
        struct tw_timer t[3];

        for (int i = 0; i < 3; i++) {
            tw_timer_init(&t[i], nop, NULL);
            cr_assert_eq(tw_schedule(w, &t[i], 2 * MS), 0);
        }
        cr_assert_eq(tw_advance_bounded(w, 2 * MS, 1), 1);
        /* Two timers are due and not run: the loop must not sleep, even
         * with a reading older than the wheel's time. */
        cr_assert_eq(tw_loop_timeout_ms(w, 2 * MS), 0);
        cr_assert_eq(tw_loop_timeout_ms(w, 0), 0);
        cr_assert_eq(tw_advance(w, 2 * MS), 2);
        tw_destroy(w);
    }
}

Test(loop_sleep, timeout_clamps_to_int_max)
{
    /* One tick of exactly INT_MAX ms, of one ns more, of (INT_MAX - 1) ms
     * and one ns: the timer at the first boundary is that far away. */
    const struct {
        uint64_t tick;
        int want;
    } cases[] = {
        {(uint64_t)INT_MAX * MS, INT_MAX},
        {(uint64_t)INT_MAX * MS + 1, INT_MAX},
        {((uint64_t)INT_MAX - 1) * MS + 1, INT_MAX},
        {((uint64_t)INT_MAX - 1) * MS, INT_MAX - 1},
    };

    for (int m = 0; m < 2; m++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            struct tw_wheel *w = wheel_with(modes[m], cases[i].tick, 0);
            struct tw_timer t;

            tw_timer_init(&t, nop, NULL);
            cr_assert_eq(tw_schedule(w, &t, cases[i].tick), 0);
            cr_assert_eq(tw_loop_timeout_ms(w, 0), cases[i].want, "tick %llu",
                         (unsigned long long)cases[i].tick);
            tw_destroy(w);
        }
    }
    /* A timer at the end of time, from the origin. */
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_with(modes[m], MS, 0);
        struct tw_timer t;

        tw_timer_init(&t, nop, NULL);
        cr_assert_eq(tw_schedule(w, &t, UINT64_MAX), 0);
        cr_assert_eq(tw_loop_timeout_ms(w, 0),
                     modes[m] == TW_HASHED ? 1 : INT_MAX);
        tw_destroy(w);
    }
}

/* Against random wheels and readings: the timeout is the least whole number
 * of ms that reaches tw_next_deadline(), so the loop never wakes early and
 * never sleeps a ms longer than it must. */
Test(loop_sleep, timeout_is_the_least_ms_that_reaches_the_deadline)
{
    uint64_t seed = 20261123, x = seed;

    printf("loop_sleep/timeout_is_the_least...: seed %llu\n",
           (unsigned long long)seed);
    for (int round = 0; round < 600; round++) {
        struct tw_wheel *w;
        struct tw_timer t;
        uint64_t next, now, span;
        int ms;

        x = x * 6364136223846793005u + 1442695040888963407u;
        w = wheel_with(modes[round & 1], 1 + (x >> 40) % (3 * MS), x >> 20);
        tw_timer_init(&t, nop, NULL);
        span = UINT64_C(1) << ((x >> 8) % 50);
        cr_assert_eq(tw_schedule(w, &t, tw_now(w) + (x >> 3) % span), 0);
        next = tw_next_deadline(w);
        now = tw_now(w) + (x >> 17) % (next - tw_now(w) + 2 * MS);
        ms = tw_loop_timeout_ms(w, now);
        if (next <= now) {
            cr_assert_eq(ms, 0);
        } else {
            cr_assert_gt(ms, 0);
            if (ms < INT_MAX)
                cr_assert_geq(now + (uint64_t)ms * MS, next, "wakes early");
            cr_assert_lt(now + (uint64_t)(ms - 1) * MS, next, "sleeps long");
        }
        tw_destroy(w);
    }
}

/* ---- tw_loop_timerfd ---------------------------------------------------- */

static uint64_t ns_of(struct timespec ts)
{
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

Test(loop_sleep, timerfd_bad_input_writes_nothing)
{
    struct tw_wheel *w = wheel_with(TW_HIER, MS, 0);
    struct itimerspec its;

    memset(&its, 0xab, sizeof(its));
    cr_assert_eq(tw_loop_timerfd(NULL, &its), -EINVAL);
    cr_assert_eq(tw_loop_timerfd(w, NULL), -EINVAL);
    for (size_t i = 0; i < sizeof(its); i++)
        cr_assert_eq(((unsigned char *)&its)[i], 0xab);
    tw_destroy(w);
}

Test(loop_sleep, timerfd_setting_is_the_absolute_next_deadline)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_with(modes[m], MS, 1558 * SEC);
        struct tw_timer t;
        struct itimerspec its;

        memset(&its, 0xab, sizeof(its));
        cr_assert_eq(tw_loop_timerfd(w, &its), 0, "nothing pending");
        cr_assert_eq(ns_of(its.it_value), 0, "a zero setting disarms");
        cr_assert_eq(ns_of(its.it_interval), 0);
        tw_timer_init(&t, nop, NULL);
        cr_assert_eq(tw_schedule(w, &t, 1558 * SEC + 2500 * MS + 1), 0);
        memset(&its, 0xab, sizeof(its));
        cr_assert_eq(tw_loop_timerfd(w, &its), 1);
        cr_assert_eq(ns_of(its.it_value), tw_next_deadline(w));
        cr_assert_lt(its.it_value.tv_nsec, 1000000000);
        cr_assert_eq(ns_of(its.it_interval), 0);
        tw_destroy(w);
    }
}

Test(loop_sleep, timerfd_deadline_at_zero_is_not_a_disarm)
{
    for (int m = 0; m < 2; m++) {
        struct tw_wheel *w = wheel_with(modes[m], MS, 0);
        struct tw_timer t;
        struct itimerspec its;

        tw_timer_init(&t, nop, NULL);
        cr_assert_eq(tw_schedule(w, &t, 0), 0);
        cr_assert_eq(tw_next_deadline(w), 0);
        cr_assert_eq(tw_loop_timerfd(w, &its), 1);
        cr_assert_eq(its.it_value.tv_sec, 0);
        cr_assert_eq(its.it_value.tv_nsec, 1);
        tw_destroy(w);
    }
}

/* A real timerfd on CLOCK_MONOTONIC takes every setting (the end of time
 * included) and, armed as the loop would arm it for a timer 20 ms out,
 * wakes no earlier than each setting; the timer runs on one of the
 * wake-ups (a hierarchical wheel may first ask to be woken to move it down
 * a level), and not before its deadline. */
Test(loop_sleep, timerfd_wakes_a_real_loop_when_due)
{
    struct tw_config cfg;
    struct tw_wheel *w;
    struct tw_timer t, far;
    struct itimerspec its;
    uint64_t now = 0, expirations;
    int64_t ran = 0;
    int fd, wakes = 0;

    tw_config_init(&cfg, TW_HIER);
    cr_assert_eq(tw_loop_config(&cfg, CLOCK_MONOTONIC), 0);
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    cr_assert_geq(fd, 0);
    tw_timer_init(&far, nop, NULL);
    cr_assert_eq(tw_schedule(w, &far, UINT64_MAX), 0);
    cr_assert_eq(tw_loop_timerfd(w, &its), 1);
    cr_assert_eq(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL), 0);
    tw_timer_init(&t, nop, NULL);
    cr_assert_eq(tw_loop_clock(CLOCK_MONOTONIC, &now), 0);
    cr_assert_eq(tw_loop_schedule_after(w, &t, now, 20 * MS), 0);
    while (ran == 0 && wakes++ < 100) {
        cr_assert_eq(tw_loop_timerfd(w, &its), 1);
        cr_assert_eq(timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL), 0);
        cr_assert_eq(read(fd, &expirations, sizeof(expirations)), 8);
        cr_assert_eq(tw_loop_clock(CLOCK_MONOTONIC, &now), 0);
        cr_assert_geq(now, ns_of(its.it_value), "the timerfd woke early");
        ran = tw_advance(w, now);
        cr_assert_geq(ran, 0);
    }
    cr_assert_eq(ran, 1, "%d wake-ups", wakes);
    cr_assert_geq(now, tw_timer_deadline(&t));
    cr_assert(tw_timer_pending(&far));
    close(fd);
    tw_destroy(w);
}
