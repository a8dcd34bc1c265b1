/*
 * Reading a POSIX clock as nanoseconds in a uint64_t, for every layer
 * (lib/common/, never installed): the one place that turns a struct
 * timespec into the library's unit of time, as haproxy's ticks.h and
 * libuv's uv-common.h keep theirs. A reading never wraps: a clock that
 * reads negative (none on Linux does) is held at 0, one beyond UINT64_MAX
 * ns (year 2554) at UINT64_MAX.
 */
#ifndef TW_COMMON_CLOCKNS_H
#define TW_COMMON_CLOCKNS_H

#include <stdint.h>
#include <time.h>

#include "sat.h"

/* A timespec as ns, saturating at both ends (above). */
static inline uint64_t tw__timespec_ns(const struct timespec *ts)
{
    if (ts->tv_sec < 0)
        return 0;
    return tw__add_sat(tw__mul_sat((uint64_t)ts->tv_sec, UINT64_C(1000000000)),
                       (uint64_t)ts->tv_nsec);
}

/* Clock `id` in ns into *ns: 0, or -1 when the clock cannot be read (an
 * id the system does not know). */
static inline int tw__clock_ns(clockid_t id, uint64_t *ns)
{
    struct timespec ts;

    if (clock_gettime(id, &ts) != 0)
        return -1;
    *ns = tw__timespec_ns(&ts);
    return 0;
}

/* CLOCK_MONOTONIC in ns: the clock of every deadline in the library, read
 * on hot paths (the service's schedule, the store's batches), so without
 * the checks above: it counts from boot, never negative and centuries from
 * UINT64_MAX ns, and cannot fail on Linux for a valid id. */
static inline uint64_t tw__mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME in ns, saturating: the store's deadlines are wall-clock
 * times, since they outlive the process and the boot. */
static inline uint64_t tw__real_ns(void)
{
    uint64_t ns = 0;

    (void)tw__clock_ns(CLOCK_REALTIME, &ns);
    return ns;
}

#endif /* TW_COMMON_CLOCKNS_H */
