/*
 * The invariant checker must notice corruption: each case breaks one
 * structure by hand and expects -EPROTO with a reason.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "list.h"
#include "util.h"
#include "wheel.h"

static void expect_broken(const struct tw_wheel *w, const char *what)
{
    char why[200] = "";

    cr_assert_eq(tw_check(w, why, sizeof(why)), -EPROTO, "%s unnoticed", what);
    cr_assert_neq(why[0], '\0');
}

Test(core_check, healthy_wheels_pass)
{
    cr_assert_eq(tw_check(NULL, NULL, 0), -EINVAL);
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);

        cr_assert_eq(tw_check(w, NULL, 0), 0);
        tw_destroy(w);
    }
}

Test(core_check, hier_corruptions)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec a, b;
    uint64_t saved;

    rec_init(&a, w);
    rec_init(&b, w);
    cr_assert_eq(tw_schedule(w, &a.t, 5 * SEC), 0);
    cr_assert_eq(tw_schedule(w, &b.t, 7 * MS), 0);
    wheel_ok(w);

    w->count++;
    expect_broken(w, "wrong count");
    w->count--;

    /* Still in level 1 (under 1 min), but slot 7 rather than 5. */
    saved = a.t.deadline;
    a.t.deadline = 7 * SEC;
    expect_broken(w, "wrong slot within the level");
    a.t.deadline = saved;

    w->place[1].last_ns -= 1;
    expect_broken(w, "level bound in ns");
    w->place[1].last_ns += 1;

    w->place[2].org_ns += 1;
    expect_broken(w, "level origin in ns");
    w->place[2].org_ns -= 1;

    w->defer_ns += 1;
    expect_broken(w, "deferral bound");
    w->defer_ns -= 1;

    a.t.deadline += 3 * SEC;
    expect_broken(w, "timer in the wrong slot");
    a.t.deadline -= 3 * SEC;

    w->levels[0].bits.words[0] ^= UINT64_C(1) << 3;
    expect_broken(w, "bit of an empty slot");
    w->levels[0].bits.words[0] ^= UINT64_C(1) << 3;

    w->occupied ^= 1;
    expect_broken(w, "level occupancy");
    w->occupied ^= 1;

    w->levels[1].bits.summary ^= 2;
    expect_broken(w, "summary word");
    w->levels[1].bits.summary ^= 2;

    w->levels[0].pos++;
    expect_broken(w, "level digit");
    w->levels[0].pos--;

    b.t.link.prev = &a.t.link;
    expect_broken(w, "broken links");
    b.t.link.prev = b.t.link.next;

    b.t.cb = NULL;
    expect_broken(w, "pending timer without callback");
    tw_timer_init(&b.t, a.t.cb, &b);
    w->count--; /* b's links are gone: forget it */
    w->slots[7].next = w->slots[7].prev = &w->slots[7];
    w->levels[0].bits.words[0] = 0;
    w->levels[0].bits.summary = 0;
    w->occupied &= ~UINT64_C(1);
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check, hashed_corruptions)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec a;

    rec_init(&a, w);
    cr_assert_eq(tw_schedule(w, &a.t, 3 * SEC), 0);
    wheel_ok(w);
    a.t.deadline += MS;
    expect_broken(w, "wrong bucket");
    a.t.deadline -= MS;
    w->cur = 5;
    expect_broken(w, "cur ahead of time");
    w->cur = 0;
    wheel_ok(w);
    tw_destroy(w);
}

/* A timer on the expired list must have reached its due tick. */
static void move_to_expired(struct tw_timer *t, void *arg)
{
    struct tw_wheel *w = arg;
    struct tw_timer *other;

    (void)t;
    wheel_ok(w);
    if (tw__list_empty(&w->expired))
        return;
    other = TW_CONTAINER_OF(w->expired.next, struct tw_timer, link);
    other->deadline = 2 * SEC;
    expect_broken(w, "expired timer due after cur");
    other->deadline = SEC;
    wheel_ok(w);
}

Test(core_check, due_lists)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_timer a, b;

    tw_timer_init(&a, move_to_expired, w);
    tw_timer_init(&b, move_to_expired, w);
    cr_assert_eq(tw_schedule(w, &a, SEC), 0);
    cr_assert_eq(tw_schedule(w, &b, SEC), 0);
    /* The first callback finds the other timer on the expired list. */
    cr_assert_eq(tw_advance_bounded(w, SEC, 1), 1);
    cr_assert_eq(tw_advance(w, SEC), 1);
    tw_destroy(w);
}
