/*
 * The reserved tail of the structs a caller fills (TW_RESERVED_WORDS,
 * include/timewheel/core.h): every function that reads such a struct
 * refuses one whose tail is not zero, so that a field a later version adds
 * there is never silently ignored by an older library.
 */
#ifndef TW_RESERVED_H
#define TW_RESERVED_H

#include <stdbool.h>
#include <stdint.h>

#include "timewheel/core.h"

/* Whether the TW_RESERVED_WORDS words at r are all zero. */
static inline bool tw__reserved_zero(const uint64_t *r)
{
    uint64_t any = 0;

    for (unsigned i = 0; i < TW_RESERVED_WORDS; i++)
        any |= r[i];
    return any == 0;
}

#endif /* TW_RESERVED_H */
