/*
 * Zeroed blocks from the allocator seam (alloc.c), for the core's files.
 */
#ifndef TW_ALLOC_H
#define TW_ALLOC_H

#include <stddef.h>
#include <string.h>

#include "timewheel/core.h"

static inline void *tw__zalloc(size_t size)
{
    void *p = tw_alloc(size);

    return p ? memset(p, 0, size) : NULL;
}

#define tw__free tw_free

#endif /* TW_ALLOC_H */
