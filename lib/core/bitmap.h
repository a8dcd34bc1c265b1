/*
 * Two-word-deep occupancy bitmap for one level of the hierarchical wheel.
 *
 * words[i] has bit b set when slot 64 * i + b holds at least one timer, and
 * summary has bit i set when words[i] is not zero. With at most 64 words
 * (4096 slots, TW_MAX_LEVEL_SLOTS) finding the first occupied slot at or after
 * a position takes two count-trailing-zeros, whatever the number of empty
 * slots in between: that is what lets one advance cross days of empty time.
 */
#ifndef TW_BITMAP_H
#define TW_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

#define TW__BITMAP_NONE UINT32_MAX

struct tw__bitmap {
    uint64_t summary;
    uint64_t *words; /* ceil(slots / 64) words, owned by the wheel */
};

static inline void tw__bitmap_set(struct tw__bitmap *b, uint32_t slot)
{
    b->words[slot >> 6] |= UINT64_C(1) << (slot & 63);
    b->summary |= UINT64_C(1) << (slot >> 6);
}

static inline void tw__bitmap_clear(struct tw__bitmap *b, uint32_t slot)
{
    uint64_t *word = &b->words[slot >> 6];

    *word &= ~(UINT64_C(1) << (slot & 63));
    if (*word == 0)
        b->summary &= ~(UINT64_C(1) << (slot >> 6));
}

static inline bool tw__bitmap_test(const struct tw__bitmap *b, uint32_t slot)
{
    return (b->words[slot >> 6] >> (slot & 63)) & 1;
}

/* First set slot at or after from, or TW__BITMAP_NONE. from may be one past the
 * last slot (then the answer is TW__BITMAP_NONE). A word is read only when its
 * summary bit says it is not zero: when the slot count is a multiple of 64,
 * the word "one past the last slot" would be past the end of the array. */
static inline uint32_t tw__bitmap_next(const struct tw__bitmap *b,
                                       uint32_t from)
{
    uint32_t wi = from >> 6;
    uint64_t above, w = 0;

    if (wi >= 64)
        return TW__BITMAP_NONE;
    if ((b->summary >> wi) & 1)
        w = b->words[wi] & (~UINT64_C(0) << (from & 63));
    if (w)
        return (wi << 6) | (uint32_t)__builtin_ctzll(w);
    above = wi == 63 ? 0 : b->summary & (~UINT64_C(0) << (wi + 1));
    if (!above)
        return TW__BITMAP_NONE;
    wi = (uint32_t)__builtin_ctzll(above);
    return (wi << 6) | (uint32_t)__builtin_ctzll(b->words[wi]);
}

#endif /* TW_BITMAP_H */
