/*
 * Saturating arithmetic on uint64_t, for every layer (lib/common/, never
 * installed). Times in this library are nanoseconds or ticks in a uint64_t,
 * and a deadline that would wrap past UINT64_MAX is held there instead:
 * "never", which no clock reaches, rather than a time in the past that
 * would fire at once (the core's contract, timewheel/core.h).
 */
#ifndef TW_COMMON_SAT_H
#define TW_COMMON_SAT_H

#include <stdint.h>

/* a + b, or UINT64_MAX if that overflows. */
static inline uint64_t tw__add_sat(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* a * b, or UINT64_MAX if that overflows. */
static inline uint64_t tw__mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

#endif /* TW_COMMON_SAT_H */
