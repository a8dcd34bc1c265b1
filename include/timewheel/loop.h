/*
 * timewheel/loop.h: helpers to drive a caller-driven wheel from an event
 * loop (libtimewheel-loop, pkg-config timewheel-loop). Needs only the core.
 *
 * The core never reads a clock: a loop hands it the time. These helpers make
 * the correct loop the easy one (docs/embedding.md has the recipe):
 *
 *   struct tw_config cfg;
 *   tw_config_init(&cfg, TW_HIER);
 *   tw_loop_config(&cfg, CLOCK_MONOTONIC);   // the wheel starts at "now"
 *   w = tw_create(&cfg, &err);
 *   for (;;) {
 *       n = epoll_wait(ep, events, max, tw_loop_timeout_ms(w, now));
 *       tw_loop_clock(CLOCK_MONOTONIC, &now);   // once per wake-up
 *       ...handle the n events: tw_loop_rearm_after(w, &c->idle, now, idle);
 *       tw_advance(w, now);                     // then the timers
 *   }
 *
 * Relative timers take the time explicitly. The core's tw_schedule_after()
 * and tw_rearm_after() count from the wheel's time at its last advance,
 * which in a loop that handles I/O before it advances is the time before
 * the loop went to sleep: a re-arm after a long sleep would count from a
 * stale time and close a live connection early. tw_loop_rearm_after() counts
 * from the clock reading the loop took when it woke up (the later of that
 * reading and the wheel's time), the way libuv counts from its cached loop
 * time.
 *
 * All times are nanoseconds of one clock: the clock given to
 * tw_loop_config(), read with tw_loop_clock(), and for tw_loop_timerfd() the
 * clock the timerfd was created on. clock_id is a POSIX clockid_t
 * (CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, ...) passed as int so that this
 * header compiles without POSIX's feature macros.
 */
#ifndef TIMEWHEEL_LOOP_H
#define TIMEWHEEL_LOOP_H

#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* POSIX's timerfd setting (<time.h>); only a pointer to it is used here. */
struct itimerspec;

/*
 * Read clock clock_id into *now as nanoseconds since the clock's origin
 * (saturating at UINT64_MAX). Returns 0, or -EINVAL for a NULL now or a
 * clock the system does not have (then *now is untouched).
 */
TW_PUBLIC int tw_loop_clock(int clock_id, uint64_t *now);

/*
 * Set cfg->start_ns to clock clock_id's current time, so that a wheel
 * created from cfg starts where the loop's clock is rather than at 0 (from
 * 0, every relative timer of a wheel driven by CLOCK_MONOTONIC would be due
 * at the first advance, and a hashed wheel would walk the machine's uptime
 * tick by tick). Returns 0, or -EINVAL (NULL cfg, unknown clock), changing
 * nothing. Safe to call again: the later reading wins.
 */
TW_PUBLIC int tw_loop_config(struct tw_config *cfg, int clock_id);

/*
 * tw_schedule() at now + delay (saturating), where now is the loop's clock
 * reading; a now earlier than tw_now(w) counts from tw_now(w) instead, so
 * neither a stale reading nor a stale wheel makes the timer fire early.
 * Returns as tw_schedule(): 0, -EINVAL (NULL w or t, NULL callback), -EBUSY
 * (t pending); on error nothing changes.
 */
TW_PUBLIC int tw_loop_schedule_after(struct tw_wheel *w, struct tw_timer *t,
                                     uint64_t now, uint64_t delay);

/*
 * tw_rearm() at now + delay (saturating), counted as tw_loop_schedule_after()
 * counts. Returns as tw_rearm(): 1 if t was pending, 0 if not, -EINVAL
 * (NULL w or t, NULL callback) changing nothing.
 */
TW_PUBLIC int tw_loop_rearm_after(struct tw_wheel *w, struct tw_timer *t,
                                  uint64_t now, uint64_t delay);

/*
 * The timeout for epoll_wait() (or poll()) in milliseconds, for a loop whose
 * clock reads now: -1 when nothing is pending (sleep until I/O); 0 when an
 * advance is due (tw_next_deadline(w) is at or before now or tw_now(w));
 * otherwise the time to tw_next_deadline(w) rounded UP to a whole ms, so the
 * loop never wakes before the work is due and spins, and clamped to INT_MAX
 * (a loop that wakes after INT_MAX ms asks again). A NULL w is -1, as a
 * wheel with nothing pending.
 */
TW_PUBLIC int tw_loop_timeout_ms(const struct tw_wheel *w, uint64_t now);

/*
 * Fill *its for timerfd_settime(fd, TFD_TIMER_ABSTIME, its, NULL), where
 * fd is a timerfd on the wheel's clock: it_value is tw_next_deadline(w) as
 * an absolute time (a deadline at 0 becomes 1 ns, since a zero it_value
 * would disarm the timerfd; a time already past fires at once), it_interval
 * is zero. Returns 1 when armed, 0 when nothing is pending (*its all zero:
 * that setting disarms the timerfd), -EINVAL for a NULL w or its (nothing
 * written).
 */
TW_PUBLIC int tw_loop_timerfd(const struct tw_wheel *w, struct itimerspec *its);

#ifdef __cplusplus
}
#endif

#endif /* TIMEWHEEL_LOOP_H */
