/*
 * The unit helpers of timewheel/core.h: every time in the library is in
 * nanoseconds, and the helpers give the counts a caller means.
 */
#include <criterion/criterion.h>

#include "util.h"

Test(core_units, constants_are_the_kernels)
{
    cr_assert_eq(TW_NSEC_PER_USEC, 1000);
    cr_assert_eq(TW_NSEC_PER_MSEC, 1000 * 1000);
    cr_assert_eq(TW_NSEC_PER_SEC, 1000 * 1000 * 1000);
    /* Usable where a constant expression is needed. */
    static const uint64_t idle = 2 * TW_NSEC_PER_SEC;
    cr_assert_eq(idle, tw_sec(2));
}

Test(core_units, conversions)
{
    cr_assert_eq(tw_usec(0), 0);
    cr_assert_eq(tw_usec(3), 3000);
    cr_assert_eq(tw_msec(200), 200 * MS);
    cr_assert_eq(tw_sec(2), 2 * SEC);
    cr_assert_eq(tw_sec(86400), UINT64_C(86400000000000));
}

Test(core_units, saturate_at_never)
{
    uint64_t s_max = UINT64_MAX / TW_NSEC_PER_SEC;

    cr_assert_eq(tw_sec(s_max), s_max * TW_NSEC_PER_SEC);
    cr_assert_eq(tw_sec(s_max + 1), UINT64_MAX);
    cr_assert_eq(tw_msec(UINT64_MAX), UINT64_MAX);
    cr_assert_eq(tw_usec(UINT64_MAX / 1000 + 1), UINT64_MAX);
}

/* A wheel takes them as they are: a timer 2 s away runs at 2 s. */
Test(core_units, a_timer_two_seconds_away)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule_after(w, &r.t, tw_sec(2)), 0);
    cr_assert_eq(tw_advance(w, tw_msec(1999)), 0);
    cr_assert_eq(tw_advance(w, tw_sec(2)), 1);
    tw_destroy(w);
}
