/*
 * The hashed design's Netty arithmetic: slots rounded up to a power of two,
 * rounds = (due - next) / slots, the bucket walk that decrements them, and
 * the next deadline being the next tick while anything is pending.
 */
#include <criterion/criterion.h>

#include "util.h"
#include "wheel.h"

static struct tw_wheel *hashed(uint32_t slots)
{
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HASHED);
    cfg.slots = &slots;
    cfg.levels = 1;
    return tw_create(&cfg, NULL);
}

Test(core_hashed, slots_round_up_to_power_of_two)
{
    const uint32_t ask[] = {1, 2, 3, 500, 512, 513, 1u << 20};
    const uint64_t get[] = {1, 2, 4, 512, 512, 1024, 1u << 20};

    for (int i = 0; i < 7; i++) {
        struct tw_wheel *w = hashed(ask[i]);

        cr_assert_not_null(w);
        cr_assert_eq(w->mask + 1, get[i]);
        tw_destroy(w);
    }
}

/* The bucket of t: its list head, found by walking to it. */
static struct tw_link *bucket_of(struct tw_wheel *w, struct tw_timer *t)
{
    struct tw_link *n = t->link.next;

    while (n < w->slots || n >= w->slots + w->nslots)
        n = n->next;
    return n;
}

Test(core_hashed, timer_waits_in_its_bucket_for_its_rounds)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;
    const uint64_t due = 3 * 512 + 10; /* ticks */

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, due * MS), 0);
    /* next = 1: rounds = (1546 - 1) / 512 = 3, bucket 1546 & 511 = 10.
     * Each revolution visits it and leaves it there, until the fourth. */
    cr_assert_eq(bucket_of(w, &r.t), &w->slots[10]);
    for (uint64_t rev = 0; rev < 3; rev++) {
        cr_assert_eq(tw_advance(w, (rev * 512 + 10) * MS), 0);
        cr_assert_eq(bucket_of(w, &r.t), &w->slots[10]);
        cr_assert_eq(tw_advance(w, (rev * 512 + 11) * MS), 0);
        wheel_ok(w);
    }
    cr_assert_eq(tw_advance(w, (due - 1) * MS), 0);
    cr_assert_eq(r.fired, 0);
    cr_assert_eq(tw_advance(w, due * MS), 1);
    cr_assert_eq(r.fired, 1);
    tw_destroy(w);
}

/* A deadline between two boundaries is due at the later one, in the
 * revolution of its due tick, not at an earlier visit of its bucket. */
Test(core_hashed, deadline_inside_a_tick_fires_at_its_boundary)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 512 * MS + 1), 0); /* due tick 513 */
    cr_assert_eq(bucket_of(w, &r.t), &w->slots[1]);
    cr_assert_eq(tw_advance(w, 1 * MS), 0);
    cr_assert_eq(tw_advance(w, 512 * MS), 0);
    cr_assert_eq(tw_advance(w, 513 * MS), 1);
    tw_destroy(w);
}

Test(core_hashed, rearm_recomputes_rounds)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 5000 * MS), 0);
    cr_assert_eq(tw_advance(w, 100 * MS), 0);
    cr_assert_eq(tw_rearm(w, &r.t, 120 * MS), 1);
    cr_assert_eq(bucket_of(w, &r.t), &w->slots[120]);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 120 * MS), 1);
    tw_destroy(w);
}

Test(core_hashed, one_slot_wheel_counts_every_tick)
{
    struct tw_wheel *w = hashed(1);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 40 * MS), 0);
    for (uint64_t ms = 1; ms < 40; ms++)
        cr_assert_eq(tw_advance(w, ms * MS), 0);
    cr_assert_eq(tw_advance(w, 40 * MS), 1);
    tw_destroy(w);
}

Test(core_hashed, next_deadline_is_next_tick)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 3600 * SEC), 0);
    cr_assert_eq(tw_advance(w, 7 * MS + 3), 0);
    cr_assert_eq(tw_next_deadline(w), 8 * MS);
    tw_destroy(w);
}

/* With nothing pending no tick needs walking: an advance across years of
 * empty time returns at once (it walked every tick, about 2 ns each: hours
 * of them, which the 10 s timeout turns into a failure), and a timer
 * scheduled after it still fires on its tick. */
Test(core_hashed, empty_wheel_jumps_to_the_target, .timeout = 10)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;
    uint64_t far = UINT64_MAX - 10 * SEC;

    rec_init(&r, w);
    cr_assert_eq(tw_advance(w, far), 0);
    cr_assert_eq(tw_now(w), far);
    wheel_ok(w);
    cr_assert_eq(tw_schedule(w, &r.t, far + 5 * MS), 0);
    /* far is not on a tick boundary: the timer runs at the first boundary
     * at or after its deadline, within a tick. */
    cr_assert_eq(tw_advance(w, far + 4 * MS), 0);
    cr_assert_eq(tw_advance(w, far + 6 * MS), 1);
    cr_assert_eq(r.fired, 1);
    wheel_ok(w);
    tw_destroy(w);
}
