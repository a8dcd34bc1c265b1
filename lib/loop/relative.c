/*
 * Relative timers counted from the loop's clock reading.
 *
 * The core's tw_schedule_after() and tw_rearm_after() count from tw_now(w),
 * the time of the wheel's last advance. A loop that sleeps, wakes on I/O and
 * handles it before advancing would then count an idle timeout from the
 * moment it went to sleep: after a 1.2 s sleep, a 2 s timeout re-armed on a
 * read closes the connection 0.8 s later. These take the clock reading the
 * loop made on waking and count from the later of it and tw_now(w), so the
 * deadline is never earlier than the time the event was seen plus delay.
 */
#include "loop.h"
#include "sat.h"
#include "timewheel/loop.h"

static uint64_t deadline_after(const struct tw_wheel *w, uint64_t now,
                               uint64_t delay)
{
    uint64_t wheel_now = tw_now(w);

    return tw__add_sat(now > wheel_now ? now : wheel_now, delay);
}

TW_PUBLIC int tw_loop_schedule_after(struct tw_wheel *w, struct tw_timer *t,
                                     uint64_t now, uint64_t delay)
{
    return tw_schedule(w, t, deadline_after(w, now, delay));
}

TW_PUBLIC int tw_loop_rearm_after(struct tw_wheel *w, struct tw_timer *t,
                                  uint64_t now, uint64_t delay)
{
    return tw_rearm(w, t, deadline_after(w, now, delay));
}
