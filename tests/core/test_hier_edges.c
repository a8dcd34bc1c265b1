/*
 * Hierarchical layouts whose own levels cover all of 64-bit time, so that
 * no coarser level is added above them: for a single level, that level is
 * both the finest and the top one. When its slot count is a multiple of 64,
 * its bitmap ends exactly on a word, and collecting its last slot once read
 * the word after the bitmap (tw__bitmap_next() from nslots, inside
 * flush_ticks()). `make fuzz` found it in seconds once the fuzz driver
 * built such layouts (docs/testing.md); these are the two reproducers of
 * the report, and the fuzzer's own input is kept in the corpus.
 *
 * Every block of the wheel here ends where an inaccessible page begins
 * (alloc_install(true)), so that a read past the bitmap faults in every
 * build, not only under ASan or valgrind.
 */
#include <criterion/criterion.h>

#include "util.h"
#include "wheel.h"

static void guarded(void)
{
    alloc_install(true);
}

static struct tw_wheel *one_level(uint32_t nslots, uint64_t tick,
                                  uint64_t start)
{
    static uint32_t slots[1];
    struct tw_config cfg;
    struct tw_wheel *w;
    int err = 1;

    slots[0] = nslots;
    tw_config_init(&cfg, TW_HIER);
    cfg.slots = slots;
    cfg.levels = 1;
    cfg.tick_ns = tick;
    cfg.start_ns = start;
    w = tw_create(&cfg, &err);
    cr_assert(w && err == 0, "create: %d", err);
    cr_assert_eq(w->nlevels, 1, "a level was added above: not the edge case");
    cr_assert_eq(w->max_tick, nslots - 1, "the last slot is the end of time");
    return w;
}

/* A timer in the last slot and one in the slot before, collected by one
 * advance to the end of time or, bounded, one tick at a time. */
static void collect_last_slot(uint32_t nslots, uint64_t tick, uint64_t start)
{
    for (int bounded = 0; bounded < 2; bounded++) {
        struct tw_wheel *w = one_level(nslots, tick, start);
        struct rec last, before;

        rec_init(&last, w);
        rec_init(&before, w);
        cr_assert_eq(tw_schedule(w, &last.t, UINT64_MAX), 0);
        cr_assert_eq(tw_schedule(w, &before.t, UINT64_MAX - tick), 0);
        wheel_ok(w);
        if (bounded) {
            cr_assert_eq(tw_advance_bounded(w, UINT64_MAX, 1), 1);
            cr_assert_eq(before.fired, 1, "the earlier tick first");
            cr_assert_eq(tw_advance_bounded(w, UINT64_MAX, 1), 1);
        } else {
            cr_assert_eq(tw_advance(w, UINT64_MAX), 2);
        }
        cr_assert(last.fired == 1 && before.fired == 1);
        cr_assert_eq(tw_pending(w), 0);
        wheel_ok(w);
        cr_assert_eq(tw_destroy(w), 0);
    }
    cr_assert_eq(alloc_live(), 0, "every block given back");
}

Test(core_hier_edges, one_level_of_64_slots_covers_all_time, .init = guarded)
{
    collect_last_slot(64, UINT64_MAX / 63 + 1, 0);
}

Test(core_hier_edges, one_level_of_1024_ms_slots_near_end_of_time,
     .init = guarded)
{
    collect_last_slot(1024, MS, UINT64_MAX - 1023 * MS);
}
