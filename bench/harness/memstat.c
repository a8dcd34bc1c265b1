/*
 * jemalloc's counters are snapshots refreshed by writing "epoch"; the
 * calling thread's cache is flushed first so that blocks it holds back for
 * reuse do not count as allocated. Two jemallocs count: the process's
 * (Debian's, linked by twbench, which the other implementations allocate
 * from) and the library's private one (lib/core/jemalloc.c), reached by its
 * prefixed name in this static link.
 */
#include <jemalloc/jemalloc.h>
#include <stddef.h>

#include "memstat.h"

typedef int ctl_fn(const char *, void *, size_t *, void *, size_t);

/* The library's jemalloc: hidden in libtimewheel.so, linked from .a here. */
int tw_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                  size_t newlen);

static bool allocated_by(ctl_fn *ctl, size_t *bytes)
{
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);

    ctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    if (ctl("epoch", &epoch, &len, &epoch, sizeof(epoch)))
        return false;
    len = sizeof(*bytes);
    return ctl("stats.allocated", bytes, &len, NULL, 0) == 0;
}

bool memstat_allocated(uint64_t *bytes)
{
    size_t process, library;

    if (!allocated_by(mallctl, &process) ||
        !allocated_by(tw_je_mallctl, &library))
        return false;
    *bytes = (uint64_t)process + library;
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
