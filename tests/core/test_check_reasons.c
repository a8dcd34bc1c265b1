/*
 * The invariant checker, continued: every reason tw_check() can give that
 * tests/test_check.c does not provoke (found by `make coverage`). Each case
 * breaks one structure by hand, expects -EPROTO with that reason, repairs
 * the structure and expects the wheel to pass again.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "list.h"
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

Test(core_check_reasons, fast_path_bound)
{
    struct tw_wheel *w = wheel_new(TW_HIER);

    w->fast_ns ^= 1;
    expect_reason(w, "fast-path bound does not match");
    w->fast_ns ^= 1;
    wheel_ok(w);
    tw_destroy(w);
}

/* Each field of level 0's ns bounds, wrong in turn. */
Test(core_check_reasons, hier_level_ns_bounds_each_field)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw__place *p = &w->place[0], keep = *p;

    p->last_ns ^= 1;
    expect_reason(w, "level 0: ns bounds do not match");
    *p = keep;
    p->org_ns ^= 1;
    expect_reason(w, "level 0: ns bounds do not match");
    *p = keep;
    p->org2_ns ^= 2;
    expect_reason(w, "level 0: ns bounds do not match");
    *p = keep;
    p->slot0 = &w->slots[w->levels[1].first];
    expect_reason(w, "level 0: ns bounds do not match");
    *p = keep;
    p->mult = p->mult ? 0 : 1;
    expect_reason(w, "level 0: ns bounds do not match");
    *p = keep;
    p->width_ns = p->width_ns ? 0 : 1;
    expect_reason(w, "level 0: ns bounds do not match");
    *p = keep;
    wheel_ok(w);
    tw_destroy(w);
}

/* A level's revolution that does not hold cur: cur below its base, past
 * its last tick, or a base off its span's multiple. */
Test(core_check_reasons, hier_level_revolution_each_bound)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw__level *lv = &w->levels[0], keep;
    struct rec r;

    rec_init(&r, w); /* a timer to fire, so that the advance moves cur */
    cr_assert_eq(tw_schedule(w, &r.t, 4 * MS), 0);
    cr_assert_eq(tw_advance(w, 5 * MS), 1);
    cr_assert_eq(w->cur, 5);
    keep = *lv;
    lv->base = w->cur + 1;
    expect_reason(w, "level 0: revolution does not hold cur");
    *lv = keep;
    lv->last = w->cur - 1;
    expect_reason(w, "level 0: revolution does not hold cur");
    *lv = keep;
    lv = &w->levels[1];
    keep = *lv;
    cr_assert_neq(lv->span, UINT64_MAX);
    lv->base += 1; /* cur still inside, slot pos too: off the multiple */
    expect_reason(w, "level 1: revolution does not hold cur");
    *lv = keep;
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_check_reasons, hier_bit_set_on_an_empty_slot)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 3 * MS), 0); /* the word and level set */
    w->levels[0].bits.words[0] |= UINT64_C(1) << 9;
    expect_reason(w, "level 0 slot 9: bit 1, list empty");
    w->levels[0].bits.words[0] &= ~(UINT64_C(1) << 9);
    wheel_ok(w);
    tw_destroy(w);
}

/* The idle bound open while work is due: a busy wheel, a timer left on
 * the expired list, one on the deferred list, one on the demoting list
 * (moved there from its slot by hand, and back). */
Test(core_check_reasons, idle_bound_open_with_work_due)
{
    for (int list = 0; list < 4; list++) {
        struct tw_wheel *w = wheel_new(list == 0 ? TW_HASHED : TW_HIER);
        struct tw_link *slot;
        struct rec r[2];
        uint64_t idle;

        for (int i = 0; i < 2; i++) {
            rec_init(&r[i], w);
            cr_assert_eq(tw_schedule(w, &r[i].t, 4 * MS), 0);
        }
        slot = r[1].t.link.next; /* the last in its slot: next is the head */
        if (list == 1)
            cr_assert_eq(tw_advance_bounded(w, 9 * MS, 1), 1);
        if (list >= 2) {
            tw__list_unlink(&r[1].t.link);
            tw__list_push_back(list == 2 ? &w->deferred : &w->demoting,
                               &r[1].t.link);
        }
        idle = w->head.idle_ns;
        w->head.idle_ns = 1;
        if (list == 0)
            w->busy = TW__VISITING;
        expect_reason(w, "idle bound open with work due");
        w->busy = 0;
        w->head.idle_ns = idle;
        if (list >= 2) {
            tw__list_unlink(&r[1].t.link);
            tw__list_push_back(slot, &r[1].t.link);
        }
        wheel_ok(w);
        tw_destroy(w);
    }
}

/* The demoting list: used by a hashed wheel; in a hierarchical one, with
 * no level spanning [cur, demote_last], or holding a timer due outside. */
Test(core_check_reasons, demoting_list_misused)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct tw_link *slot;
        struct rec r[2];

        for (int i = 0; i < 2; i++) {
            rec_init(&r[i], w);
            cr_assert_eq(tw_schedule(w, &r[i].t, 5 * SEC), 0);
        }
        slot = r[1].t.link.next;
        tw__list_unlink(&r[1].t.link);
        tw__list_push_back(&w->demoting, &r[1].t.link);
        if (mode == TW_HASHED) {
            expect_reason(w, "demoting list used by a hashed wheel");
        } else {
            uint64_t keep = w->demote_last, idle = w->head.idle_ns;

            w->head.idle_ns = 0; /* else "open with work due" comes first */
            w->demote_last = w->levels[0].last + 1;
            expect_reason(w, "demoting: no level spans");
            w->demote_last = w->levels[0].last; /* level 0 spans it */
            expect_reason(w, "demoting: due tick 5000 outside");
            w->demote_last = keep;
            w->head.idle_ns = idle;
        }
        tw__list_unlink(&r[1].t.link);
        tw__list_push_back(slot, &r[1].t.link);
        wheel_ok(w);
        tw_destroy(w);
    }
}

/* A broken list among the due lists (expired, deferred): the walk of the
 * counts says so before anything else. */
Test(core_check_reasons, broken_due_lists)
{
    for (int list = 0; list < 2; list++) {
        struct tw_wheel *w = wheel_new(TW_HIER);
        struct tw_link *head = list == 0 ? &w->expired : &w->deferred, *slot;
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_schedule(w, &r.t, 4 * SEC), 0);
        slot = r.t.link.next;
        tw__list_unlink(&r.t.link);
        tw__list_push_back(head, &r.t.link);
        head->prev = head;
        expect_reason(w, "list tail does not match");
        head->prev = &r.t.link;
        tw__list_unlink(&r.t.link);
        tw__list_push_back(slot, &r.t.link);
        wheel_ok(w);
        tw_destroy(w);
    }
}
