/*
 * jemalloc's counters are snapshots refreshed by writing "epoch"; the
 * calling thread's cache is flushed first so that blocks it holds back for
 * reuse do not count as allocated.
 */
#include <jemalloc/jemalloc.h>
#include <stddef.h>

#include "memstat.h"

bool memstat_allocated(uint64_t *bytes)
{
    uint64_t epoch = 1;
    size_t allocated, len = sizeof(epoch);

    mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    if (mallctl("epoch", &epoch, &len, &epoch, sizeof(epoch)))
        return false;
    len = sizeof(allocated);
    if (mallctl("stats.allocated", &allocated, &len, NULL, 0))
        return false;
    *bytes = allocated;
    return true;
}

uint64_t memstat_usable(uint64_t size)
{
    return size ? nallocx((size_t)size, 0) : 0;
}

const char *memstat_version(void)
{
    const char *v;
    size_t len = sizeof(v);

    return mallctl("version", &v, &len, NULL, 0) ? "unknown" : v;
}
