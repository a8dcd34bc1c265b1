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

#include "clockns.h"
#include "loop.h"
#include "timewheel/loop.h"

/* The API passes clock ids as int so that loop.h needs no POSIX types. */
_Static_assert(sizeof(clockid_t) == sizeof(int), "clockid_t must be an int");

TW_PUBLIC int tw_loop_clock(int clock_id, uint64_t *now)
{
    /* A clock that reads negative is held at 0, one past UINT64_MAX ns at
     * UINT64_MAX (lib/common/clock.h). */
    if (!now || tw__clock_ns((clockid_t)clock_id, now) != 0)
        return -EINVAL;
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
