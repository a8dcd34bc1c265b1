/*
 * lib/loop/clock.c: tw_loop_clock() and tw_loop_config(), bad input
 * included.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <time.h>

#include "util.h"

static uint64_t read_raw(clockid_t id)
{
    struct timespec ts;

    cr_assert_eq(clock_gettime(id, &ts), 0);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Clock ids no Linux system has (positive and past the defined ones). */
static const int bad_clocks[] = {4096, INT_MAX};

Test(loop_clock, reads_the_clock_in_ns)
{
    const clockid_t ids[] = {CLOCK_MONOTONIC, CLOCK_REALTIME,
                             CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME};

    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        uint64_t before, now = 0, after;

        /* A coarse clock may read up to one of its ticks behind a fine
         * one, so each clock is compared with itself. */
        before = read_raw(ids[i]);
        cr_assert_eq(tw_loop_clock(ids[i], &now), 0);
        after = read_raw(ids[i]);
        cr_assert(before <= now && now <= after,
                  "clock %d: %llu not in [%llu, %llu]", (int)ids[i],
                  (unsigned long long)now, (unsigned long long)before,
                  (unsigned long long)after);
    }
}

Test(loop_clock, bad_input_changes_nothing)
{
    uint64_t now = 77;

    cr_assert_eq(tw_loop_clock(CLOCK_MONOTONIC, NULL), -EINVAL);
    for (size_t i = 0; i < sizeof(bad_clocks) / sizeof(bad_clocks[0]); i++) {
        cr_assert_eq(tw_loop_clock(bad_clocks[i], &now), -EINVAL);
        cr_assert_eq(now, 77);
    }
}

Test(loop_clock, config_starts_the_wheel_at_the_clock)
{
    const enum tw_mode modes[] = {TW_HIER, TW_HASHED};

    for (int m = 0; m < 2; m++) {
        struct tw_config cfg;
        struct tw_wheel *w;
        uint64_t before, after;

        tw_config_init(&cfg, modes[m]);
        before = read_raw(CLOCK_MONOTONIC);
        cr_assert_eq(tw_loop_config(&cfg, CLOCK_MONOTONIC), 0);
        after = read_raw(CLOCK_MONOTONIC);
        cr_assert(before <= cfg.start_ns && cfg.start_ns <= after);
        cr_assert_eq(cfg.mode, modes[m], "only start_ns is changed");
        cr_assert_eq(cfg.tick_ns, TW_DEFAULT_TICK_NS);
        w = tw_create(&cfg, NULL);
        cr_assert_not_null(w);
        cr_assert_eq(tw_now(w), cfg.start_ns);
        wheel_ok(w);
        tw_destroy(w);
    }
}

Test(loop_clock, config_bad_input_changes_nothing)
{
    struct tw_config cfg;

    cr_assert_eq(tw_loop_config(NULL, CLOCK_MONOTONIC), -EINVAL);
    tw_config_init(&cfg, TW_HIER);
    cfg.start_ns = 123;
    for (size_t i = 0; i < sizeof(bad_clocks) / sizeof(bad_clocks[0]); i++) {
        cr_assert_eq(tw_loop_config(&cfg, bad_clocks[i]), -EINVAL);
        cr_assert_eq(cfg.start_ns, 123);
    }
    /* Twice: the later reading wins. */
    cr_assert_eq(tw_loop_config(&cfg, CLOCK_MONOTONIC), 0);
    {
        uint64_t first = cfg.start_ns;

        cr_assert_eq(tw_loop_config(&cfg, CLOCK_MONOTONIC), 0);
        cr_assert_geq(cfg.start_ns, first);
    }
}
