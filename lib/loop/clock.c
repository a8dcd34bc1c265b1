/*
 * Reading a clock in nanoseconds, and a wheel that starts at the clock's
 * current time.
 *
 * A wheel's tick boundaries are counted from its start time, and its time
 * only moves by advancing. A wheel created at start 0 and then driven by
 * CLOCK_MONOTONIC (which counts from boot: minutes to months) has every
 * relative timer scheduled before its first advance due at once, and a
 * hashed wheel walks every tick of the uptime on that advance.
 * tw_loop_config() puts the start where the clock is.
 */
#include <errno.h>
#include <time.h>

#include "loop.h"
#include "sat.h"
#include "timewheel/loop.h"

/* The API passes clock ids as int so that loop.h needs no POSIX types. */
_Static_assert(sizeof(clockid_t) == sizeof(int), "clockid_t must be an int");

TW_PUBLIC int tw_loop_clock(int clock_id, uint64_t *now)
{
    struct timespec ts;

    if (!now || clock_gettime((clockid_t)clock_id, &ts) != 0)
        return -EINVAL;
    /* Clocks never read negative; a broken one is held at 0. */
    if (ts.tv_sec < 0)
        ts.tv_sec = 0, ts.tv_nsec = 0;
    if ((uint64_t)ts.tv_sec > UINT64_MAX / TW__NS_PER_SEC)
        *now = UINT64_MAX;
    else
        *now = tw__add_sat((uint64_t)ts.tv_sec * TW__NS_PER_SEC,
                           (uint64_t)ts.tv_nsec);
    return 0;
}

TW_PUBLIC int tw_loop_config(struct tw_config *cfg, int clock_id)
{
    uint64_t now;
    int rc;

    if (!cfg)
        return -EINVAL;
    rc = tw_loop_clock(clock_id, &now);
    if (rc == 0)
        cfg->start_ns = now;
    return rc;
}
