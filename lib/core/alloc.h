/*
 * Zeroed blocks from the allocator seam (alloc.c), for the core's files,
 * and the seam's default, jemalloc (jemalloc.c).
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

#ifndef TW_ALLOC_LIBC
/* The default allocator: jemalloc, with an arena of the library's own for
 * the size classes that need it (jemalloc.c). */
void *tw__je_alloc(size_t size);
void tw__je_free(void *p, size_t size);

/* The private jemalloc's mallctl() (lib/core/jemalloc.sh): hidden in the
 * shared library, reachable from a program linked with libtimewheel.a, as
 * the tests and benchmarks are, to read the library's arenas. */
int tw_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                  size_t newlen);
#endif

#endif /* TW_ALLOC_H */
