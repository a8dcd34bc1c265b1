/*
 * How long a loop sleeps: an epoll_wait() timeout, or a timerfd setting.
 *
 * Both come from tw_next_deadline(w), the time by which tw_advance() must
 * next be called. The epoll timeout is that time minus the loop's clock
 * reading, rounded UP to whole milliseconds: rounded down, a loop would wake
 * before the tick is due, find nothing to run, compute a timeout of 0 ms and
 * spin until the clock catches up. The timerfd setting is absolute
 * (TFD_TIMER_ABSTIME), so time spent between computing it and sleeping is
 * not lost, and needs no clock reading at all.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include "loop.h"
#include "timewheel/loop.h"

TW_PUBLIC int tw_loop_timeout_ms(const struct tw_wheel *w, uint64_t now)
{
    uint64_t next, ms;

    if (tw_pending(w) == 0)
        return -1; /* NULL w included: tw_pending(NULL) is 0 */
    next = tw_next_deadline(w);
    if (next <= now || next <= tw_now(w))
        return 0;
    ms = (next - now) / TW__NS_PER_MS + ((next - now) % TW__NS_PER_MS != 0);
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* t as a timespec; time_t of 64 bits holds every uint64_t of ns in s. */
static struct timespec to_timespec(uint64_t t)
{
    struct timespec ts;
    uint64_t sec = t / TW__NS_PER_SEC;

    _Static_assert(sizeof(time_t) >= 8, "time_t must hold 2^64 ns in s");
    ts.tv_sec = (time_t)sec;
    ts.tv_nsec = (long)(t % TW__NS_PER_SEC);
    return ts;
}

TW_PUBLIC int tw_loop_timerfd(const struct tw_wheel *w, struct itimerspec *its)
{
    uint64_t next;

    if (!w || !its)
        return -EINVAL;
    memset(its, 0, sizeof(*its));
    if (tw_pending(w) == 0)
        return 0;
    next = tw_next_deadline(w);
    /* An it_value of zero disarms: a deadline at 0 (a virtual clock's
     * origin) is asked for as 1 ns, which is just as much in the past. */
    its->it_value = to_timespec(next ? next : 1);
    return 1;
}
