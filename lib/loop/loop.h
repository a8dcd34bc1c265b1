/*
 * lib/loop: the event-loop helpers (include/timewheel/loop.h), built over
 * the core's public API only. Private to the layer; never installed.
 *
 *   loop.h      this index, and the time units the files share (the
 *               saturating add is the layers' shared one, lib/common/sat.h)
 *   clock.c     reading a clock in ns; a wheel that starts at the clock's time
 *   relative.c  relative timers counted from the loop's clock reading
 *   sleep.c     how long a loop sleeps: epoll_wait() ms, a timerfd setting
 *
 * Design: the core is left as it is (it never reads a clock and its time
 * moves only by advancing). The loop's time is the clock reading the caller
 * takes once per wake-up and passes to every helper, as libuv passes its
 * cached loop time; docs/embedding.md says why this and not a wheel time
 * moved forward without running callbacks.
 */
#ifndef TW_LOOP_PRIVATE_H
#define TW_LOOP_PRIVATE_H

#include <stdint.h>

#define TW__NS_PER_SEC UINT64_C(1000000000)
#define TW__NS_PER_MS UINT64_C(1000000)

#endif /* TW_LOOP_PRIVATE_H */
