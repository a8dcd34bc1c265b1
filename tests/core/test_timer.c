/*
 * Timer operations and their answers to bad input: schedule, re-arm,
 * cancel, the queries, on NULLs, zeroed timers, NULL callbacks, pending and
 * idle timers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util.h"

static void nop(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
}

/* Two links, the deadline, the callback and its argument; nothing else
 * (core.h also asserts it at compile time on 64-bit targets). */
Test(core_timer, size_fits_40_bytes)
{
    cr_assert_leq(sizeof(struct tw_timer),
                  5 * sizeof(void *) > 40 ? 5 * sizeof(void *) : 40);
    if (sizeof(void *) == 8)
        cr_assert_eq(sizeof(struct tw_timer), 40);
}

Test(core_timer, init_makes_idle_timer)
{
    struct tw_timer t;
    int arg;

    memset(&t, 0xa5, sizeof(t));
    tw_timer_init(&t, nop, &arg);
    cr_assert(!tw_timer_pending(&t));
    cr_assert_eq(t.arg, &arg);
    tw_timer_init(NULL, nop, NULL); /* no-op */
}

Test(core_timer, null_arguments)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_timer t;

    tw_timer_init(&t, nop, NULL);
    cr_assert_eq(tw_schedule(NULL, &t, 1), -EINVAL);
    cr_assert_eq(tw_schedule(w, NULL, 1), -EINVAL);
    cr_assert_eq(tw_schedule_after(NULL, &t, 1), -EINVAL);
    cr_assert_eq(tw_schedule_after(w, NULL, 1), -EINVAL);
    cr_assert_eq(tw_rearm(NULL, &t, 1), -EINVAL);
    cr_assert_eq(tw_rearm(w, NULL, 1), -EINVAL);
    cr_assert_eq(tw_rearm_after(NULL, &t, 1), -EINVAL);
    cr_assert_eq(tw_cancel(NULL, &t), -EINVAL);
    cr_assert_eq(tw_cancel(w, NULL), -EINVAL);
    cr_assert(!tw_timer_pending(NULL));
    cr_assert_eq(tw_timer_deadline(NULL), 0);
    cr_assert_eq(tw_pending(w), 0);
    tw_destroy(w);
}

Test(core_timer, zeroed_timer_and_null_callback_refused)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct tw_timer zero, nocb;

    memset(&zero, 0, sizeof(zero));
    tw_timer_init(&nocb, NULL, NULL);
    cr_assert(!tw_timer_pending(&zero));
    cr_assert_eq(tw_schedule(w, &zero, 5 * MS), -EINVAL);
    cr_assert_eq(tw_rearm(w, &zero, 5 * MS), -EINVAL);
    cr_assert_eq(tw_schedule(w, &nocb, 5 * MS), -EINVAL);
    cr_assert_eq(tw_rearm_after(w, &nocb, 5 * MS), -EINVAL);
    cr_assert_eq(tw_cancel(w, &zero), 0);
    cr_assert_eq(tw_pending(w), 0);
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_timer, schedule_twice_is_busy_and_keeps_first)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 5 * MS), 0);
    cr_assert_eq(tw_schedule(w, &r.t, 9 * MS), -EBUSY);
    cr_assert_eq(tw_timer_deadline(&r.t), 5 * MS);
    cr_assert_eq(tw_pending(w), 1);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 5 * MS), 1);
    tw_destroy(w);
}

Test(core_timer, rearm_moves_and_reports_pending)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_rearm(w, &r.t, 5 * MS), 0);
    cr_assert_eq(tw_rearm(w, &r.t, 50 * SEC), 1);
    cr_assert_eq(tw_rearm_after(w, &r.t, 3 * MS), 1);
    cr_assert_eq(tw_pending(w), 1);
    cr_assert_eq(tw_timer_deadline(&r.t), 3 * MS);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 60 * SEC), 1);
    cr_assert_eq(r.at, 60 * SEC);
    tw_destroy(w);
}

Test(core_timer, cancel_twice_and_cancel_idle)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_cancel(w, &r.t), 0);
    cr_assert_eq(tw_schedule(w, &r.t, 5 * MS), 0);
    cr_assert_eq(tw_cancel(w, &r.t), 1);
    cr_assert_eq(tw_cancel(w, &r.t), 0);
    cr_assert_eq(tw_pending(w), 0);
    cr_assert_eq(tw_advance(w, SEC), 0);
    cr_assert_eq(r.fired, 0);
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_timer, cancel_of_due_timer_before_it_runs)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_advance(w, 10 * MS), 0);
    cr_assert_eq(tw_schedule(w, &r.t, MS), 0); /* due: deferred */
    cr_assert_eq(tw_cancel(w, &r.t), 1);
    cr_assert_eq(tw_advance(w, 10 * MS), 0);
    tw_destroy(w);
}

Test(core_timer, schedule_after_uses_wheel_time)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct tw_timer t;

    tw_timer_init(&t, nop, NULL);
    cr_assert_eq(tw_advance(w, 40 * MS), 0);
    cr_assert_eq(tw_schedule_after(w, &t, 2 * MS), 0);
    cr_assert_eq(tw_timer_deadline(&t), 42 * MS);
    cr_assert_eq(tw_advance(w, 41 * MS), 0);
    cr_assert_eq(tw_advance(w, 42 * MS), 1);
    tw_destroy(w);
}

/*
 * Issue 22, defect 6: a timer already due but not yet run (left on the
 * expired list by a bounded advance) re-armed to the end of time must wait
 * for it. The re-arm's same-slot shortcut compared the old deadline with
 * the new slot's range modulo 2^64: the slot that holds UINT64_MAX may
 * reach past 2^64, and an old deadline far in the past (0 here: scheduled
 * already due) then fell in its range, so the timer stayed on the expired
 * list and ran at the next advance with its deadline UINT64_MAX. Wheels
 * started near the end of time, at 0 with the clock moved there, and at
 * 0 with the clock still there.
 */
static void due_timer_rearmed_to_end(enum tw_mode mode, uint64_t start,
                                     uint64_t first, int which)
{
    uint64_t old;

    struct tw_wheel *w = wheel_new_at(mode, start);
    struct rec a, b;

    cr_assert(w);
    rec_init(&a, w);
    rec_init(&b, w);
    if (first)
        cr_assert_eq(tw_advance(w, first), 0);
    /* 0; halfway to the wheel's time (long past); 5 ms from it. */
    old = which == 0 ? 0 : which == 1 ? tw_now(w) / 2 : tw_now(w) + 5 * MS;
    cr_assert_eq(tw_schedule(w, &a.t, old), 0);
    cr_assert_eq(tw_schedule(w, &b.t, old), 0);
    /* One runs, the other is left due on the expired list. */
    cr_assert_eq(tw_advance_bounded(w, tw_now(w) + 6 * MS, 1), 1);
    cr_assert_eq(a.fired + b.fired, 1);
    struct rec *left = a.fired ? &b : &a;
    cr_assert_eq(tw_rearm(w, &left->t, UINT64_MAX), 1);
    cr_assert_eq(tw_timer_deadline(&left->t), UINT64_MAX);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, tw_now(w) + MS), 0,
                 "a timer re-armed to the end of time ran before it");
    cr_assert_eq(left->fired, 0);
    cr_assert_eq(tw_pending(w), 1);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, UINT64_MAX), 1, "it runs at the end of time");
    cr_assert_eq(left->fired, 1);
    tw_destroy(w);
}

Test(core_timer, due_timer_rearmed_to_end_of_time_waits)
{
    for (int m = 0; m < 2; m++) {
        enum tw_mode mode = m ? TW_HASHED : TW_HIER;

        for (int i = 0; i < 3; i++) {
            due_timer_rearmed_to_end(mode, UINT64_MAX - 10 * SEC, 0, i);
            /* The hashed wheel walks every tick of the way to the end. */
            if (mode == TW_HASHED)
                continue;
            due_timer_rearmed_to_end(mode, 0, 0, i);
            due_timer_rearmed_to_end(mode, 0, UINT64_MAX - 10 * SEC, i);
            due_timer_rearmed_to_end(mode, 0, UINT64_MAX - 3 * SEC / 2, i);
        }
    }
}
