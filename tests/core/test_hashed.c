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

Test(hashed, slots_round_up_to_power_of_two)
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

Test(hashed, rounds_count_down_once_per_revolution)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;
    const uint64_t due = 3 * 512 + 10; /* ticks */

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, due * MS), 0);
    /* next = 1: rounds = (1546 - 1) / 512 = 3, bucket 1546 & 511 = 10. */
    cr_assert_eq(r.t.aux, 3);
    cr_assert_eq(r.t.link.prev, &w->slots[10]);
    cr_assert_eq(tw_advance(w, 10 * MS), 0);
    cr_assert_eq(r.t.aux, 2);
    cr_assert_eq(tw_advance(w, (512 + 10) * MS), 0);
    cr_assert_eq(r.t.aux, 1);
    cr_assert_eq(tw_advance(w, (1024 + 9) * MS), 0);
    cr_assert_eq(r.t.aux, 1);
    cr_assert_eq(tw_advance(w, (1024 + 10) * MS), 0);
    cr_assert_eq(r.t.aux, 0);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, (due - 1) * MS), 0);
    cr_assert_eq(tw_advance(w, due * MS), 1);
    tw_destroy(w);
}

Test(hashed, rearm_recomputes_rounds)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 5000 * MS), 0);
    cr_assert_eq(tw_advance(w, 100 * MS), 0);
    cr_assert_eq(tw_rearm(w, &r.t, 120 * MS), 1);
    cr_assert_eq(r.t.aux, 0);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 120 * MS), 1);
    tw_destroy(w);
}

Test(hashed, one_slot_wheel_counts_every_tick)
{
    struct tw_wheel *w = hashed(1);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 40 * MS), 0);
    cr_assert_eq(r.t.aux, 39);
    cr_assert_eq(tw_advance(w, 39 * MS), 0);
    cr_assert_eq(tw_advance(w, 40 * MS), 1);
    tw_destroy(w);
}

Test(hashed, next_deadline_is_next_tick)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 3600 * SEC), 0);
    cr_assert_eq(tw_advance(w, 7 * MS + 3), 0);
    cr_assert_eq(tw_next_deadline(w), 8 * MS);
    tw_destroy(w);
}
