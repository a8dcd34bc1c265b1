/*
 * The two-level occupancy bitmap against a plain array of booleans.
 */
#include <criterion/criterion.h>
#include <stdbool.h>

#include "bitmap.h"

static uint32_t slow_next(const bool *set, uint32_t n, uint32_t from)
{
    for (uint32_t i = from; i < n; i++)
        if (set[i])
            return i;
    return TW__BITMAP_NONE;
}

Test(core_bitmap, matches_a_boolean_array)
{
    static uint64_t words[64];
    static bool set[4096];
    struct tw__bitmap b = {0, words};
    uint64_t rng = 12345;

    for (int step = 0; step < 20000; step++) {
        uint32_t slot, from;

        rng = rng * 6364136223846793005u + 1442695040888963407u;
        slot = (uint32_t)(rng >> 33) % 4096;
        from = (uint32_t)(rng >> 17) % 4097;
        if (set[slot])
            tw__bitmap_clear(&b, slot);
        else
            tw__bitmap_set(&b, slot);
        set[slot] = !set[slot];
        cr_assert_eq(tw__bitmap_test(&b, slot), set[slot]);
        cr_assert_eq(tw__bitmap_next(&b, from), slow_next(set, 4096, from),
                     "from %u", from);
    }
}

Test(core_bitmap, edges)
{
    static uint64_t words[64];
    struct tw__bitmap b = {0, words};

    cr_assert_eq(tw__bitmap_next(&b, 0), TW__BITMAP_NONE);
    tw__bitmap_set(&b, 4095);
    cr_assert_eq(tw__bitmap_next(&b, 0), 4095);
    cr_assert_eq(tw__bitmap_next(&b, 4095), 4095);
    cr_assert_eq(tw__bitmap_next(&b, 4096), TW__BITMAP_NONE);
    tw__bitmap_set(&b, 63);
    tw__bitmap_set(&b, 64);
    cr_assert_eq(tw__bitmap_next(&b, 63), 63);
    cr_assert_eq(tw__bitmap_next(&b, 64), 64);
    tw__bitmap_clear(&b, 64);
    cr_assert_eq(tw__bitmap_next(&b, 64), 4095);
    tw__bitmap_clear(&b, 4095);
    tw__bitmap_clear(&b, 63);
    cr_assert_eq(b.summary, 0);
}
