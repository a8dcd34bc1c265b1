/*
 * A wheel's expiry function (tw_set_expiry()) and the fields of a timer an
 * embedder may own: cb and arg on a wheel with an expiry function, and the
 * deadline while the timer is not pending (timewheel/core.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util.h"

/* A timer whose own callback must never run on a wheel with an expiry
 * function; its owner's fields are filled with garbage to prove it. */
struct owned {
    struct tw_timer t;
    int expired;
    int seq;
};

struct expiry {
    struct tw_wheel *w;
    int calls;
    int bad_rc;    /* tw_set_expiry() from inside fn */
    bool rearm;    /* fn re-arms each timer to now, once */
    bool scribble; /* fn writes over the deadline of its timer */
};

static void must_not_run(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    cr_assert_fail("a timer's own callback ran on a wheel with an expiry "
                   "function");
}

static void on_expiry(struct tw_timer *t, void *ctx)
{
    struct expiry *e = ctx;
    struct owned *o = TW_CONTAINER_OF(t, struct owned, t);

    cr_assert(!tw_timer_pending(t), "pending in the expiry function");
    o->expired++;
    o->seq = ++e->calls;
    e->bad_rc = tw_set_expiry(e->w, on_expiry, e);
    if (e->scribble)
        memset(&t->deadline, 0x5a, sizeof(t->deadline));
    if (e->rearm && o->expired == 1)
        cr_assert_eq(tw_rearm(e->w, t, tw_now(e->w)), 0);
}

static void other_expiry(struct tw_timer *t, void *ctx)
{
    (void)t;
    ++*(int *)ctx;
}

/* Timers with no callback, or one that must not run, and garbage in arg:
 * the expiry function runs for each in order of due tick, with its own
 * ctx, and the timer is no longer pending when it does. */
Test(core_expiry, runs_instead_of_the_timers_callbacks)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct expiry e = {.w = w};
        struct owned o[6];

        cr_assert_eq(tw_set_expiry(w, on_expiry, &e), 0);
        for (int i = 0; i < 6; i++) {
            memset(&o[i], 0, sizeof(o[i]));
            tw_timer_init(&o[i].t, i % 2 ? must_not_run : NULL,
                          (void *)(uintptr_t)0xdead);
            cr_assert_eq(tw_schedule(w, &o[i].t, (uint64_t)(6 - i) * 3 * MS),
                         0);
        }
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, 20 * MS), 6);
        for (int i = 0; i < 6; i++) {
            cr_assert_eq(o[i].expired, 1);
            cr_assert_eq(o[i].seq, 6 - i, "timer %d ran %d-th", i, o[i].seq);
        }
        cr_assert_eq(e.bad_rc, -EBUSY, "set from inside the advance");
        cr_assert_eq(tw_pending(w), 0);
        wheel_ok(w);
        tw_destroy(w);
    }
}

/* A timer re-armed by the expiry function to a time the advance has
 * reached runs on the next advance, as a callback's would. */
Test(core_expiry, rearm_from_the_expiry_function_waits_for_the_next_advance)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct expiry e = {.w = w, .rearm = true};
        struct owned o = {0};

        cr_assert_eq(tw_set_expiry(w, on_expiry, &e), 0);
        tw_timer_init(&o.t, NULL, NULL);
        cr_assert_eq(tw_schedule(w, &o.t, 2 * MS), 0);
        cr_assert_eq(tw_advance(w, 5 * MS), 1);
        cr_assert(tw_timer_pending(&o.t));
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, 5 * MS), 1);
        cr_assert_eq(o.expired, 2);
        tw_destroy(w);
    }
}

Test(core_expiry, bad_input)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct expiry e = {.w = w};
        struct owned o = {0};
        struct rec r;
        int other = 0;

        cr_assert_eq(tw_set_expiry(NULL, on_expiry, &e), -EINVAL);
        cr_assert_eq(tw_set_expiry(NULL, NULL, NULL), -EINVAL);
        /* Without an expiry function a timer needs a callback. */
        tw_timer_init(&o.t, NULL, NULL);
        cr_assert_eq(tw_schedule(w, &o.t, MS), -EINVAL);
        cr_assert_eq(tw_rearm(w, &o.t, MS), -EINVAL);
        cr_assert(!tw_timer_pending(&o.t));
        /* With one, it needs none. */
        cr_assert_eq(tw_set_expiry(w, on_expiry, &e), 0);
        cr_assert_eq(tw_rearm(w, &o.t, MS), 0);
        cr_assert_eq(tw_schedule(w, &o.t, MS), -EBUSY);
        /* Dropping it while timers are pending would leave o without a
         * callback: refused, and the function stays. */
        cr_assert_eq(tw_set_expiry(w, NULL, NULL), -EBUSY);
        wheel_ok(w);
        /* Replacing it is allowed; the new one runs with its own ctx. */
        cr_assert_eq(tw_set_expiry(w, other_expiry, &other), 0);
        cr_assert_eq(tw_advance(w, 3 * MS), 1);
        cr_assert_eq(other, 1);
        cr_assert_eq(o.expired, 0);
        /* Nothing pending: callbacks come back. */
        cr_assert_eq(tw_set_expiry(w, NULL, NULL), 0);
        cr_assert_eq(tw_schedule(w, &o.t, 4 * MS), -EINVAL);
        rec_init(&r, w);
        cr_assert_eq(tw_schedule(w, &r.t, 4 * MS), 0);
        cr_assert_eq(tw_advance(w, 6 * MS), 1);
        cr_assert_eq(r.fired, 1);
        cr_assert_eq(other, 1);
        wheel_ok(w);
        tw_destroy(w);
    }
}

static int set_from_visitor(struct tw_timer *t, void *ctx)
{
    (void)t;
    cr_assert_eq(tw_set_expiry(ctx, other_expiry, NULL), -EBUSY);
    cr_assert_eq(tw_set_expiry(ctx, NULL, NULL), -EBUSY);
    return 0;
}

Test(core_expiry, refused_from_a_visitor)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, MS), 0);
    cr_assert_eq(tw_visit(w, set_from_visitor, w), 0);
    cr_assert_eq(tw_advance(w, 2 * MS), 1);
    cr_assert_eq(r.fired, 1, "the timer's callback still runs");
    tw_destroy(w);
}

/* The deadline of a timer that is not pending is its owner's: whatever is
 * written there, cancel answers 0, the timer is not pending, and schedule
 * and re-arm take it as any idle timer. The expiry function writes over it
 * too, on the way out of the wheel. */
Test(core_expiry, deadline_is_the_owners_while_not_pending)
{
    static const uint64_t junk[] = {0, 1, UINT64_MAX,
                                    UINT64_C(0x5a5a5a5a5a5a5a5a)};

    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct expiry e = {.w = w, .scribble = true};
        struct owned o[4];

        cr_assert_eq(tw_set_expiry(w, on_expiry, &e), 0);
        for (int i = 0; i < 4; i++) {
            memset(&o[i], 0, sizeof(o[i]));
            tw_timer_init(&o[i].t, NULL, NULL);
            o[i].t.deadline = junk[i];
            cr_assert_eq(tw_cancel(w, &o[i].t), 0);
            cr_assert(!tw_timer_pending(&o[i].t));
            cr_assert_eq(i % 2
                             ? tw_rearm(w, &o[i].t, (uint64_t)(i + 1) * MS)
                             : tw_schedule(w, &o[i].t, (uint64_t)(i + 1) * MS),
                         0);
            cr_assert_eq(tw_timer_deadline(&o[i].t), (uint64_t)(i + 1) * MS);
        }
        wheel_ok(w);
        /* Cancelled, then written over: still not pending, and again. */
        cr_assert_eq(tw_cancel(w, &o[0].t), 1);
        o[0].t.deadline = junk[3];
        cr_assert_eq(tw_cancel(w, &o[0].t), 0);
        cr_assert_eq(tw_pending(w), 3);
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, 10 * MS), 3);
        for (int i = 1; i < 4; i++) {
            cr_assert_eq(o[i].expired, 1);
            cr_assert_eq(tw_cancel(w, &o[i].t), 0);
            cr_assert_eq(tw_schedule(w, &o[i].t, 20 * MS), 0);
        }
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, 30 * MS), 3);
        cr_assert_eq(o[0].expired, 0);
        tw_destroy(w);
    }
}
