/*
 * The allocator seam: every byte the library allocates for itself (never a
 * timer: those belong to the caller) goes through these two functions.
 *
 * The default build uses jemalloc's non-standard API: mallocx() can zero the
 * block, and sdallocx() passes the size back so jemalloc skips its size
 * lookup on free. `make ALLOC=libc` defines TW_ALLOC_LIBC and builds the same
 * library on the system allocator, so that the two can be compared.
 */
#ifndef TW_ALLOC_H
#define TW_ALLOC_H

#include <stddef.h>

#ifdef TW_ALLOC_LIBC
#include <stdlib.h>

static inline void *tw__zalloc(size_t size)
{
    return calloc(1, size);
}

static inline void tw__free(void *p, size_t size)
{
    (void)size;
    free(p);
}
#else
#include <jemalloc/jemalloc.h>

static inline void *tw__zalloc(size_t size)
{
    return mallocx(size, MALLOCX_ZERO);
}

static inline void tw__free(void *p, size_t size)
{
    if (p)
        sdallocx(p, size, 0);
}
#endif

#endif /* TW_ALLOC_H */
