/*
 * The rows of the bad-input table (docs/api.md) that no other test checks:
 * each test names the function and the kind of bad argument, and asserts the
 * documented answer and that the wheel is unharmed afterwards.
 *
 *   core_badinput     the core, one wheel at a time
 *   core_badinput_oom a wheel too large for the machine, made real with an
 *                     address-space limit on the test's own process
 *                     (limit_address_space() in tests/util.c)
 *
 * The service's rows are in tests/service/test_badinput.c; every single
 * allocation failing in turn is in test_alloc.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wheel.h"

static const enum tw_mode modes[] = {TW_HIER, TW_HASHED};

static void nop(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
}

/* ---- tw_create ----------------------------------------------------------- */

Test(core_badinput, create_ignores_levels_without_slots)
{
    for (int i = 0; i < 2; i++) {
        struct tw_config cfg;
        struct tw_wheel *w;
        int err = 1;

        tw_config_init(&cfg, modes[i]);
        cfg.levels = 99; /* ignored: slots is NULL */
        w = tw_create(&cfg, &err);
        cr_assert_not_null(w);
        cr_assert_eq(err, 0);
        wheel_ok(w);
        cr_assert_eq(tw_destroy(w), 0);
    }
}

static int create_err(const struct tw_config *cfg)
{
    int err = 1;
    struct tw_wheel *w = tw_create(cfg, &err);

    cr_assert_eq(w != NULL, err == 0, "wheel %p with err %d", (void *)w, err);
    cr_assert(!w || tw_destroy(w) == 0);
    return err;
}

Test(core_badinput, create_limits_are_inclusive)
{
    static uint32_t two[TW_MAX_LEVELS + 1];
    static const uint32_t widest[] = {TW_MAX_LEVEL_SLOTS},
                          over[] = {TW_MAX_HASHED_SLOTS + 1u};
    struct tw_config cfg;

    for (unsigned i = 0; i <= TW_MAX_LEVELS; i++)
        two[i] = 2;
    tw_config_init(&cfg, TW_HIER);
    cfg.slots = two;
    cfg.levels = TW_MAX_LEVELS; /* 64 levels of 2 slots: 2^64 ticks */
    cfg.tick_ns = 1;
    cr_assert_eq(create_err(&cfg), 0, "TW_MAX_LEVELS levels");
    cfg.levels = TW_MAX_LEVELS + 1;
    cr_assert_eq(create_err(&cfg), -EINVAL, "TW_MAX_LEVELS + 1 levels");
    cfg.slots = widest;
    cfg.levels = 1;
    cr_assert_eq(create_err(&cfg), 0, "a level of TW_MAX_LEVEL_SLOTS");
    tw_config_init(&cfg, TW_HASHED);
    cfg.slots = over;
    cfg.levels = 1;
    cr_assert_eq(create_err(&cfg), -EINVAL, "2^30 + 1 hashed slots");
}

Test(core_badinput, create_refuses_ticks_as_wide_as_time)
{
    static const uint32_t two[] = {2}, one[] = {1};
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    cfg.slots = two;
    cfg.levels = 1;
    cfg.tick_ns = UINT64_MAX; /* one slot would span all of time */
    cr_assert_eq(create_err(&cfg), -EINVAL);
    cfg.tick_ns = UINT64_MAX / 2;
    cr_assert_eq(create_err(&cfg), 0);
    tw_config_init(&cfg, TW_HASHED);
    cfg.slots = one;
    cfg.levels = 1;
    cfg.tick_ns = UINT64_MAX; /* beyond Netty's signed 64-bit limit */
    cr_assert_eq(create_err(&cfg), -EINVAL);
    cfg.tick_ns = INT64_MAX;
    cr_assert_eq(create_err(&cfg), 0);
}

Test(core_badinput, create_without_err_pointer)
{
    struct tw_config cfg;
    struct tw_wheel *w;

    tw_config_init(&cfg, TW_HASHED);
    cfg.tick_ns = 0;
    cr_assert_null(tw_create(&cfg, NULL));
    cfg.tick_ns = 1;
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    cr_assert_eq(tw_destroy(w), 0);
}

/* A wheel that starts at the end of time: every deadline is at or before
 * its start, so each is due at once and runs on the next advance. */
Test(core_badinput, start_at_end_of_time)
{
    for (int i = 0; i < 2; i++) {
        struct tw_wheel *w = wheel_new_at(modes[i], UINT64_MAX);
        struct rec a, b;

        rec_init(&a, w);
        rec_init(&b, w);
        cr_assert_eq(tw_now(w), UINT64_MAX);
        cr_assert_eq(tw_schedule(w, &a.t, 5), 0);
        cr_assert_eq(tw_schedule_after(w, &b.t, UINT64_MAX), 0);
        cr_assert_eq(tw_timer_deadline(&b.t), UINT64_MAX);
        cr_assert_eq(tw_next_deadline(w), UINT64_MAX);
        cr_assert_eq(tw_pending(w), 2);
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, UINT64_MAX - 1), -ERANGE);
        cr_assert_eq(tw_advance(w, UINT64_MAX), 2);
        cr_assert_eq(tw_pending(w), 0);
        wheel_ok(w);
        cr_assert_eq(tw_destroy(w), 0);
    }
}

/* ---- tw_schedule and friends --------------------------------------------- */

Test(core_badinput, deadline_before_start_runs_on_next_advance)
{
    for (int i = 0; i < 2; i++) {
        struct tw_wheel *w = wheel_new_at(modes[i], 10 * SEC);
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_schedule(w, &r.t, SEC), 0);
        cr_assert_eq(tw_next_deadline(w), 10 * SEC);
        cr_assert_eq(tw_advance(w, 10 * SEC), 1);
        cr_assert_eq(r.at, 10 * SEC);
        cr_assert_eq(tw_destroy(w), 0);
    }
}

Test(core_badinput, schedule_after_refusals)
{
    for (int i = 0; i < 2; i++) {
        struct tw_wheel *w = wheel_new(modes[i]);
        struct tw_timer nocb, t;

        tw_timer_init(&nocb, NULL, NULL);
        tw_timer_init(&t, nop, NULL);
        cr_assert_eq(tw_schedule_after(w, &nocb, MS), -EINVAL);
        cr_assert_eq(tw_rearm_after(w, NULL, MS), -EINVAL);
        cr_assert_eq(tw_schedule_after(w, &t, 5 * MS), 0);
        cr_assert_eq(tw_schedule_after(w, &t, 9 * MS), -EBUSY);
        cr_assert_eq(tw_timer_deadline(&t), 5 * MS, "refusal changed it");
        cr_assert_eq(tw_rearm_after(w, &t, UINT64_MAX), 1);
        cr_assert_eq(tw_timer_deadline(&t), UINT64_MAX, "saturates");
        cr_assert_eq(tw_pending(w), 1);
        wheel_ok(w);
        cr_assert_eq(tw_destroy(w), 0);
        cr_assert_not(tw_timer_pending(&t));
    }
}

Test(core_badinput, never_scheduled_timer_has_deadline_zero)
{
    struct tw_timer t, zero;

    memset(&zero, 0, sizeof(zero));
    tw_timer_init(&t, nop, NULL);
    cr_assert_eq(tw_timer_deadline(&t), 0);
    cr_assert_eq(tw_timer_deadline(&zero), 0);
    cr_assert_not(tw_timer_pending(&zero));
}

/* Re-initialising a timer that is not pending is allowed: it takes the new
 * callback. A timer may move to another wheel once it is not pending. */
Test(core_badinput, idle_timer_reinit_and_other_wheel)
{
    struct tw_wheel *a = wheel_new(TW_HIER), *b = wheel_new(TW_HASHED);
    struct rec r;
    tw_callback *record;

    rec_init(&r, b);
    record = r.t.cb;
    tw_timer_init(&r.t, nop, NULL);
    cr_assert_eq(tw_schedule(a, &r.t, 5 * MS), 0);
    cr_assert_eq(tw_advance(a, 5 * MS), 1);
    cr_assert_eq(r.fired, 0);
    tw_timer_init(&r.t, record, &r); /* from now on it records into r */
    cr_assert_eq(tw_schedule(b, &r.t, 3 * MS), 0);
    cr_assert_eq(tw_cancel(b, &r.t), 1);
    cr_assert_eq(tw_schedule(b, &r.t, 4 * MS), 0);
    cr_assert_eq(tw_pending(a), 0);
    cr_assert_eq(tw_advance(b, 4 * MS), 1);
    cr_assert_eq(r.fired, 1);
    wheel_ok(a);
    wheel_ok(b);
    tw_destroy(a);
    tw_destroy(b);
}

Test(core_badinput, destroyed_wheels_timers_are_reusable)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 7 * SEC), 0);
    cr_assert_eq(tw_destroy(w), 0);
    cr_assert_not(tw_timer_pending(&r.t));
    w = wheel_new(TW_HASHED);
    r.w = w;
    cr_assert_eq(tw_schedule(w, &r.t, 2 * MS), 0);
    cr_assert_eq(tw_advance(w, 2 * MS), 1);
    cr_assert_eq(r.fired, 1);
    tw_destroy(w);
}

/* ---- tw_cancel ----------------------------------------------------------- */

struct self {
    struct tw_timer t;
    struct tw_wheel *w;
    int cancel_rc;
    int visit_rc;
    size_t seen;
};

static void cancel_self(struct tw_timer *t, void *arg)
{
    struct self *s = arg;

    s->cancel_rc = tw_cancel(s->w, t);
}

Test(core_badinput, cancel_self_in_own_callback_is_zero)
{
    for (int i = 0; i < 2; i++) {
        struct self s = {.w = wheel_new(modes[i]), .cancel_rc = 9};

        tw_timer_init(&s.t, cancel_self, &s);
        cr_assert_eq(tw_schedule(s.w, &s.t, MS), 0);
        cr_assert_eq(tw_advance(s.w, MS), 1);
        cr_assert_eq(s.cancel_rc, 0, "it is no longer pending");
        cr_assert_eq(tw_pending(s.w), 0);
        wheel_ok(s.w);
        tw_destroy(s.w);
    }
}

Test(core_badinput, cancel_leftover_of_bounded_advance)
{
    for (int i = 0; i < 2; i++) {
        struct tw_wheel *w = wheel_new(modes[i]);
        struct rec r[3];

        for (int k = 0; k < 3; k++) {
            rec_init(&r[k], w);
            cr_assert_eq(tw_schedule(w, &r[k].t, 4 * MS), 0);
        }
        cr_assert_eq(tw_advance_bounded(w, 5 * MS, 1), 1);
        cr_assert_eq(r[0].fired, 1, "FIFO within a tick here");
        cr_assert_eq(tw_cancel(w, &r[1].t), 1, "a due, not yet run timer");
        cr_assert_eq(tw_cancel(w, &r[1].t), 0);
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, 5 * MS), 1);
        cr_assert_eq(r[1].fired, 0, "a cancelled timer ran");
        cr_assert_eq(r[2].fired, 1);
        tw_destroy(w);
    }
}

/* ---- tw_advance and tw_advance_bounded ----------------------------------- */

static int visit_advances(struct tw_timer *t, void *ctx)
{
    struct tw_wheel *w = ctx;

    (void)t;
    cr_assert_eq(tw_advance_bounded(w, tw_now(w) + SEC, 1), -EBUSY);
    cr_assert_eq(tw_rearm_after(w, t, MS), -EBUSY);
    cr_assert_eq(tw_schedule_after(w, t, MS), -EBUSY);
    return 0;
}

static void bounded_in_callback(struct tw_timer *t, void *arg)
{
    struct self *s = arg;

    (void)t;
    s->cancel_rc = (int)tw_advance_bounded(s->w, tw_now(s->w), 1);
}

Test(core_badinput, advance_refusals)
{
    for (int i = 0; i < 2; i++) {
        struct self s = {.w = wheel_new(modes[i])};

        cr_assert_eq(tw_advance(NULL, MS), -EINVAL);
        cr_assert_eq(tw_advance_bounded(NULL, MS, 1), -EINVAL);
        cr_assert_eq(tw_advance(s.w, 10 * MS), 0);
        cr_assert_eq(tw_advance_bounded(s.w, 9 * MS, 1), -ERANGE);
        cr_assert_eq(tw_now(s.w), 10 * MS);
        tw_timer_init(&s.t, bounded_in_callback, &s);
        cr_assert_eq(tw_schedule(s.w, &s.t, 20 * MS), 0);
        cr_assert_eq(tw_visit(s.w, visit_advances, s.w), 0);
        cr_assert_eq(tw_advance(s.w, 20 * MS), 1);
        cr_assert_eq(s.cancel_rc, -EBUSY, "bounded advance in a callback");
        /* The same time twice: nothing to do, nothing changes. */
        cr_assert_eq(tw_advance(s.w, 20 * MS), 0);
        cr_assert_eq(tw_advance_bounded(s.w, 20 * MS, 1), 0);
        cr_assert_eq(tw_now(s.w), 20 * MS);
        wheel_ok(s.w);
        tw_destroy(s.w);
    }
}

Test(core_badinput, bounded_with_budget_past_int64_is_unbounded)
{
    for (int i = 0; i < 2; i++) {
        struct tw_wheel *w = wheel_new(modes[i]);
        struct rec r[20];

        for (int k = 0; k < 20; k++) {
            rec_init(&r[k], w);
            cr_assert_eq(tw_schedule(w, &r[k].t, (uint64_t)(k % 4 + 1) * MS),
                         0);
        }
        cr_assert_eq(tw_advance_bounded(w, 4 * MS, (uint64_t)INT64_MAX + 5),
                     20);
        cr_assert_eq(tw_pending(w), 0);
        wheel_ok(w);
        tw_destroy(w);
    }
}

/* ---- tw_next_deadline ---------------------------------------------------- */

/* A timer due at the end of time: tw_next_deadline() says UINT64_MAX, as it
 * does with nothing pending; tw_pending() tells the two apart. */
Test(core_badinput, next_deadline_of_timer_due_at_end_of_time)
{
    for (int i = 0; i < 2; i++) {
        struct tw_wheel *w = wheel_new_at(modes[i], UINT64_MAX - 3 * MS);
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_schedule(w, &r.t, UINT64_MAX), 0);
        cr_assert_eq(tw_advance(w, UINT64_MAX - 1), 0);
        cr_assert_eq(tw_next_deadline(w), UINT64_MAX);
        cr_assert_eq(tw_pending(w), 1);
        cr_assert_eq(tw_advance(w, UINT64_MAX), 1);
        cr_assert_eq(tw_next_deadline(w), UINT64_MAX);
        cr_assert_eq(tw_pending(w), 0);
        tw_destroy(w);
    }
}

/* ---- tw_visit ------------------------------------------------------------ */

static int count(struct tw_timer *t, void *ctx)
{
    (void)t;
    ++*(size_t *)ctx;
    return 0;
}

static int nested(struct tw_timer *t, void *ctx)
{
    struct self *s = ctx;
    size_t inner = 0;

    cr_assert_eq(tw_visit(s->w, count, &inner), 0, "a visit in a visit");
    cr_assert_eq(inner, tw_pending(s->w));
    cr_assert_eq(tw_cancel(s->w, t), -EBUSY, "still visiting afterwards");
    s->seen++;
    return 0;
}

static void visit_in_callback(struct tw_timer *t, void *arg)
{
    struct self *s = arg;

    (void)t;
    s->seen = 0;
    s->visit_rc = tw_visit(s->w, count, &s->seen);
}

Test(core_badinput, visit_nested_and_from_callback)
{
    for (int i = 0; i < 2; i++) {
        struct self s = {.w = wheel_new(modes[i]), .visit_rc = 9};
        struct rec others[3];

        for (int k = 0; k < 3; k++) {
            rec_init(&others[k], s.w);
            cr_assert_eq(tw_schedule(s.w, &others[k].t, SEC), 0);
        }
        cr_assert_eq(tw_visit(s.w, nested, &s), 0);
        cr_assert_eq(s.seen, 3);
        tw_timer_init(&s.t, visit_in_callback, &s);
        cr_assert_eq(tw_schedule(s.w, &s.t, MS), 0);
        cr_assert_eq(tw_advance(s.w, MS), 1);
        cr_assert_eq(s.visit_rc, 0);
        cr_assert_eq(s.seen, 3, "the visit in a callback saw the others");
        /* After the visits the wheel takes changes again. */
        cr_assert_eq(tw_cancel(s.w, &others[0].t), 1);
        wheel_ok(s.w);
        tw_destroy(s.w);
    }
}

/* ---- tw_check and tw_strerror -------------------------------------------- */

Test(core_badinput, check_reason_is_truncated_to_len)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    char why[8];

    w->count++; /* a wrong pending count: the checker must say so */
    memset(why, 'x', sizeof(why));
    cr_assert_eq(tw_check(w, why, 0), -EPROTO);
    cr_assert_eq(why[0], 'x', "len 0: why untouched");
    cr_assert_eq(tw_check(w, NULL, 5), -EPROTO);
    cr_assert_eq(tw_check(w, why, 4), -EPROTO);
    cr_assert_eq(strlen(why), 3, "cut to len - 1 and terminated");
    w->count--;
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_badinput, strerror_of_any_int)
{
    const int codes[] = {INT_MIN, INT_MAX, -1, 1, -EPERM, EINVAL};

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *msg = tw_strerror(codes[i]);

        cr_assert_not_null(msg);
        cr_assert_str_eq(msg, "unknown error", "code %d", codes[i]);
    }
}

/* ---- out of memory ------------------------------------------------------- */

/* 2^30 hashed slots need 16 GiB of slot heads. */
Test(core_badinput_oom, create_reports_enomem)
{
    static const uint32_t most[] = {TW_MAX_HASHED_SLOTS};
    struct tw_config cfg;
    int err = 1;

    limit_address_space(256u << 20);
    tw_config_init(&cfg, TW_HASHED);
    cfg.slots = most;
    cfg.levels = 1;
    cfg.tick_ns = 1;
    cr_assert_null(tw_create(&cfg, &err));
    cr_assert_eq(err, -ENOMEM);
    /* The failure left nothing behind: a small wheel still works. */
    cfg.slots = NULL;
    cr_assert_eq(create_err(&cfg), 0);
}

/* A level whose slot would be wider than 2^64 ticks (seven levels of 4096
 * slots: the seventh's slot is 4096^6 ticks) is refused, as a level whose
 * slot in ns would pass 2^64; a slot of 2^63 ns and more still works (its
 * level places by due tick: no reciprocal fits). */
Test(core_badinput, create_refuses_slots_wider_than_time)
{
    static const uint32_t wide[] = {4096, 4096, 4096, 4096, 4096, 4096, 4096},
                          two[] = {2, 2};
    struct tw_config cfg;
    struct tw_wheel *w;
    struct rec r;
    int err = 0;

    tw_config_init(&cfg, TW_HIER);
    cfg.slots = wide;
    cfg.levels = 7;
    cfg.tick_ns = 1;
    cr_assert_eq(create_err(&cfg), -EINVAL);
    cfg.levels = 6;
    cr_assert_eq(create_err(&cfg), 0);
    cfg.slots = two;
    cfg.levels = 2;
    cfg.tick_ns = UINT64_C(1) << 62; /* level 1's slot: 2^63 ns */
    w = tw_create(&cfg, &err);
    cr_assert_not_null(w, "%d", err);
    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, UINT64_C(3) << 62), 0);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, UINT64_MAX), 1);
    cr_assert_eq(r.fired, 1);
    tw_destroy(w);
}
