/*
 * The invariant checker, continued: every reason tw_check() can give that
 * tests/test_check.c does not provoke (found by `make coverage`). Each case
 * breaks one structure by hand, expects -EPROTO with that reason, repairs
 * the structure and expects the wheel to pass again.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util.h"
#include "wheel.h"

static void expect_reason(const struct tw_wheel *w, const char *reason)
{
    char why[200] = "";

    cr_assert_eq(tw_check(w, why, sizeof(why)), -EPROTO, "unnoticed: %s",
                 reason);
    cr_assert_not_null(strstr(why, reason), "said \"%s\", not \"%s\"", why,
                       reason);
}

/* Give t a new deadline without moving it, so that only its place in the
 * wheel is wrong. */
static void move_deadline(struct tw_wheel *w, struct tw_timer *t, uint64_t d)
{
    (void)w;
    t->deadline = d;
}

Test(core_check_reasons, hier_timer_in_a_level_too_coarse)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 5 * SEC), 0); /* level 1, slot 5 */
    move_deadline(w, &r.t, 500 * MS);               /* belongs to level 0 */
    expect_reason(w, "outside its range");
    move_deadline(w, &r.t, 5 * SEC);
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, hier_timer_in_the_wrong_slot)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 7 * MS), 0);
    move_deadline(w, &r.t, 8 * MS);
    expect_reason(w, "in slot 7");
    move_deadline(w, &r.t, 7 * MS);
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, hier_summary_word_bit)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 7 * MS), 0);
    w->levels[0].bits.summary ^= 1;
    expect_reason(w, "summary bit 0 wrong");
    w->levels[0].bits.summary ^= 1;
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, hier_top_level_short_of_the_end_of_time)
{
    struct tw_wheel *w = wheel_new(TW_HIER);

    w->nlevels--;
    expect_reason(w, "top level does not cover max tick");
    w->nlevels++;
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, more_timers_in_lists_than_counted)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_schedule(w, &r.t, 3 * MS), 0);
        w->count = 0;
        expect_reason(w, "more timers in lists than pending");
        w->count = 1;
        wheel_ok(w);
        tw_destroy(w);
    }
}

Test(core_check_reasons, list_tail)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct tw_link *head;
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_schedule(w, &r.t, 3 * MS), 0);
        head = r.t.link.next; /* the only timer: next is its slot's head */
        head->prev = head;
        expect_reason(w, "list tail does not match");
        head->prev = &r.t.link;
        wheel_ok(w);
        tw_destroy(w);
    }
}

/* A timer left on the expired list by a bounded advance must be due by the
 * wheel's tick. */
Test(core_check_reasons, expired_timer_due_after_cur)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct rec r[2];

        for (int i = 0; i < 2; i++) {
            rec_init(&r[i], w);
            cr_assert_eq(tw_schedule(w, &r[i].t, 4 * MS), 0);
        }
        cr_assert_eq(tw_advance_bounded(w, 9 * MS, 1), 1);
        cr_assert(tw_timer_pending(&r[1].t));
        wheel_ok(w);
        move_deadline(w, &r[1].t, 20 * MS);
        expect_reason(w, "expired timer due after cur");
        move_deadline(w, &r[1].t, 4 * MS);
        wheel_ok(w);
        tw_destroy(w);
    }
}

Test(core_check_reasons, hashed_timer_already_due_in_a_bucket)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_advance(w, 10 * MS), 0);
    cr_assert_eq(tw_schedule(w, &r.t, 522 * MS), 0); /* bucket 10 */
    r.t.deadline = 10 * MS; /* same bucket, but cur has reached it */
    expect_reason(w, "bucket 10: due tick 10, cur 10");
    r.t.deadline = 522 * MS;
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, hier_slot_with_timers_but_no_bit)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec a, b;

    rec_init(&a, w);
    rec_init(&b, w);
    cr_assert_eq(tw_schedule(w, &a.t, 7 * MS), 0);
    cr_assert_eq(tw_schedule(w, &b.t, 8 * MS), 0); /* keeps the word set */
    w->levels[0].bits.words[0] &= ~(UINT64_C(1) << 7);
    expect_reason(w, "level 0 slot 7: bit 0, list not empty");
    w->levels[0].bits.words[0] |= UINT64_C(1) << 7;
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, hier_slot_holds_a_due_timer)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 7 * MS), 0);
    move_deadline(w, &r.t, 0); /* due tick 0: the wheel's tick */
    expect_reason(w, "level 0 slot 7: due tick 0, cur 0");
    move_deadline(w, &r.t, 7 * MS);
    move_deadline(w, &r.t, 1007 * MS); /* past level 0's revolution */
    expect_reason(w, "level 0: due tick 1007 outside its range");
    move_deadline(w, &r.t, 7 * MS);
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, list_link_to_nowhere)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct tw_link *next;
    struct rec a, b;

    rec_init(&a, w);
    rec_init(&b, w);
    cr_assert_eq(tw_schedule(w, &a.t, 3 * MS), 0);
    cr_assert_eq(tw_schedule(w, &b.t, 3 * MS), 0);
    next = a.t.link.next;
    a.t.link.next = NULL;
    expect_reason(w, "broken list links");
    a.t.link.next = next;
    wheel_ok(w);
    tw_destroy(w);
}
