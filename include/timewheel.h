/*
 * timewheel: timing wheels for C11.
 *
 * Two designs behind one API:
 *
 *   TW_HIER    a Kafka-style hierarchical wheel. Cascading levels (by default a
 *              second wheel of 1000 x 1 ms, a minute wheel of 60 x 1 s, an hour
 *              wheel of 60 x 1 min, a day wheel of 24 x 1 h, then 64-slot
 * levels as far as UINT64_MAX ns). Timers are demoted to finer levels as the
 * coarse ones come due, so every deadline is held exactly and nothing counts
 * rounds. Occupancy bitmaps let one advance cross days of empty time cheaply.
 *   TW_HASHED  a single-level hashed wheel with per-timer round counting, as in
 *              Netty's HashedWheelTimer, kept for compatibility and comparison.
 *
 * The core is caller-driven: time is a uint64_t count of nanoseconds that the
 * caller passes in (from CLOCK_MONOTONIC or a virtual clock). The core never
 * reads a clock, never starts a thread and is not thread-safe: one thread
 * drives a wheel.
 *
 * Timers are intrusive and owned by the caller: embed a struct tw_timer in
 * your own struct and get back to it with container_of. The library never
 * allocates or frees a timer.
 *
 * Guarantees (both modes, every layout):
 *  - Tick boundaries lie at start + k * tick. A timer never fires before its
 *    deadline: it fires during the first advance whose time reaches the first
 *    tick boundary at or after its deadline, so at most one tick late. The
 *    last boundary saturates at UINT64_MAX: advancing to UINT64_MAX fires
 *    every pending timer.
 *  - Timers fire in order of their due tick; the order of timers due in the
 *    same tick is unspecified. A timer whose deadline had already passed when
 *    it was scheduled is due at the tick the wheel was on at that moment.
 *  - Callbacks may schedule, re-arm and cancel any timer, themselves included.
 *    A timer cancelled by a callback before it ran does not run. A timer
 *    scheduled or re-armed from a callback to a time the running advance has
 *    already reached runs on the next advance, not the current one, so a
 *    callback that re-arms itself cannot livelock an advance.
 *  - Deadlines that would overflow saturate at UINT64_MAX and are held, not
 *    wrapped. A deadline in the past runs at the next advance.
 *  - Errors are negative errno codes; bad input never crashes the wheel and
 *    never loses a timer. See tw_strerror().
 */
#ifndef TIMEWHEEL_H
#define TIMEWHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TW_VERSION_MAJOR 0
#define TW_VERSION_MINOR 1
#define TW_VERSION_PATCH 0
#define TW_VERSION_STRING "0.1.0"
/* One number that grows with each release: 0xMMmmpp. */
#define TW_VERSION_HEX                                                         \
    ((TW_VERSION_MAJOR << 16) | (TW_VERSION_MINOR << 8) | TW_VERSION_PATCH)

#if defined(TW_BUILDING) && defined(__GNUC__)
#define TW_PUBLIC __attribute__((visibility("default")))
#else
#define TW_PUBLIC
#endif

/* Defaults: a 1 ms tick; Netty's 512 slots for the hashed wheel. */
#define TW_DEFAULT_TICK_NS UINT64_C(1000000)
#define TW_DEFAULT_HASHED_SLOTS 512u
/* Most configured levels a hierarchical layout may list. */
#define TW_MAX_LEVELS 64u
/* Most slots one hierarchical level may have (a two-word bitmap search). */
#define TW_MAX_LEVEL_SLOTS 4096u
/* Most slots of the hashed wheel after rounding up (Netty's limit, 2^30). */
#define TW_MAX_HASHED_SLOTS (1u << 30)

enum tw_mode {
    TW_HIER = 0,   /* hierarchical wheel with demotion (the default) */
    TW_HASHED = 1, /* single-level hashed wheel with round counting */
};

struct tw_timer;
struct tw_wheel; /* opaque */

/* A callback runs on the thread that called tw_advance(); when it runs, the
 * timer is no longer pending and may be scheduled again at once. */
typedef void tw_callback(struct tw_timer *timer, void *arg);

/* Visitor for tw_visit(); return non-zero to stop the walk early. */
typedef int tw_visitor(struct tw_timer *timer, void *ctx);

/* Links of the lists a pending timer sits in. Private to the library. */
struct tw_link {
    struct tw_link *next;
    struct tw_link *prev;
};

/*
 * A timer, embedded by the caller in its own struct. Initialise it with
 * tw_timer_init() (or zero it and then call tw_timer_init() before the first
 * schedule); the fields are private. It must not be moved or freed while
 * pending. A pending timer belongs to the wheel that scheduled it: passing it
 * to another wheel before it stops being pending is undefined.
 */
struct tw_timer {
    struct tw_link link; /* NULL next: not pending */
    uint64_t deadline;   /* absolute, ns, as scheduled (saturated) */
    uint64_t aux;        /* hier: due tick; hashed: remaining rounds */
    tw_callback *cb;
    void *arg;
};

#if !defined(__cplusplus) && (defined(__x86_64__) || defined(__aarch64__))
_Static_assert(sizeof(struct tw_timer) <= 48, "struct tw_timer must fit 48 B");
#endif

/*
 * How to build a wheel. Fill it with tw_config_init(), then change fields.
 *  mode      TW_HIER or TW_HASHED.
 *  tick_ns   length of one tick in ns; must be > 0.
 *  slots     hierarchical: slots per level, finest first, each 2..4096;
 *            coarser 64-slot levels are added as far as UINT64_MAX needs.
 *            hashed: one entry, the ticks per wheel, rounded up to a power of
 *            two (1..2^30).  NULL selects the mode's default layout.
 *  levels    number of entries in slots (ignored when slots is NULL).
 *  start_ns  the wheel's time when created; tick boundaries are counted
 *            from it.
 */
struct tw_config {
    enum tw_mode mode;
    uint64_t tick_ns;
    const uint32_t *slots;
    unsigned levels;
    uint64_t start_ns;
};

/* ---- version and errors ------------------------------------------------ */

/* TW_VERSION_HEX of the library actually linked. */
TW_PUBLIC unsigned tw_version(void);
/* TW_VERSION_STRING of the library actually linked. */
TW_PUBLIC const char *tw_version_string(void);
/* A static message for a negative errno code returned by this library (or
 * for any other int); never NULL. */
TW_PUBLIC const char *tw_strerror(int err);

/* ---- wheels ---------------------------------------------------------------
 */

/* Fill cfg with the defaults of mode: a 1 ms tick, the mode's default layout
 * and start time 0. A NULL cfg is a no-op. */
TW_PUBLIC void tw_config_init(struct tw_config *cfg, enum tw_mode mode);

/*
 * Create a wheel from cfg. Returns NULL on failure and, when err is not
 * NULL, stores -EINVAL (bad config: NULL cfg, unknown mode, zero tick, a
 * level with fewer than 2 or more than 4096 slots, a level whose slot width
 * overflows 64-bit ns, a hashed wheel with more than one level or whose
 * tick x slots overflows) or -ENOMEM; stores 0 on success.
 */
TW_PUBLIC struct tw_wheel *tw_create(const struct tw_config *cfg, int *err);

/*
 * Destroy a wheel. Timers still pending are detached (they become not
 * pending, their callbacks never run) and nothing else of the caller's is
 * touched. NULL is a no-op returning 0. Returns -EBUSY, destroying nothing,
 * when called from a callback or visitor of this wheel.
 */
TW_PUBLIC int tw_destroy(struct tw_wheel *w);

/* ---- timers -----------------------------------------------------------------
 */

/* Make t a not-pending timer that will call cb(t, arg). Must not be called
 * on a pending timer (that would lose it from the wheel's lists). A NULL t
 * is a no-op; a NULL cb is stored and refused by the schedule functions. */
TW_PUBLIC void tw_timer_init(struct tw_timer *t, tw_callback *cb, void *arg);

/*
 * Schedule t to fire at the absolute time deadline (ns). Returns 0, or
 * -EINVAL (NULL w or t, NULL callback) or -EBUSY (t is already pending: use
 * tw_rearm() to move it); on error nothing changes.
 */
TW_PUBLIC int tw_schedule(struct tw_wheel *w, struct tw_timer *t,
                          uint64_t deadline);

/* tw_schedule() at the wheel's current time + delay, saturating. */
TW_PUBLIC int tw_schedule_after(struct tw_wheel *w, struct tw_timer *t,
                                uint64_t delay);

/*
 * Move t to a new deadline in O(1): a pending timer is unlinked and put
 * where the new deadline belongs (never added twice); a timer that is not
 * pending is scheduled. Returns 1 if t was pending, 0 if it was not, or
 * -EINVAL (NULL w or t, NULL callback), changing nothing.
 */
TW_PUBLIC int tw_rearm(struct tw_wheel *w, struct tw_timer *t,
                       uint64_t deadline);

/* tw_rearm() at the wheel's current time + delay, saturating. */
TW_PUBLIC int tw_rearm_after(struct tw_wheel *w, struct tw_timer *t,
                             uint64_t delay);

/*
 * Cancel t. Returns 1 if it was pending (its callback will not run), 0 if
 * it was not (a no-op, so cancelling twice is harmless), -EINVAL for a NULL
 * w or t.
 */
TW_PUBLIC int tw_cancel(struct tw_wheel *w, struct tw_timer *t);

/* Whether t is pending. NULL: false. */
TW_PUBLIC bool tw_timer_pending(const struct tw_timer *t);

/* The deadline t was last scheduled for (saturated), meaningful while it is
 * pending; a never-scheduled timer answers 0. NULL: 0. */
TW_PUBLIC uint64_t tw_timer_deadline(const struct tw_timer *t);

/* ---- time ------------------------------------------------------------------
 */

/* The wheel's current time: the latest time given to an advance, or the
 * start time. NULL: 0. */
TW_PUBLIC uint64_t tw_now(const struct tw_wheel *w);

/* Number of pending timers, including those due and not yet run. NULL: 0. */
TW_PUBLIC size_t tw_pending(const struct tw_wheel *w);

/*
 * Advance the wheel to time now and run every callback that is due, in
 * order of due tick. Returns how many ran, or a negative code changing
 * nothing: -EINVAL (NULL w), -ERANGE (now is earlier than tw_now(w)),
 * -EBUSY (called from a callback or visitor of this wheel).
 */
TW_PUBLIC int64_t tw_advance(struct tw_wheel *w, uint64_t now);

/*
 * As tw_advance(), but run at most max_run callbacks; timers left over stay
 * due and run first on the next advance (with the same or a later now), so
 * a burst can be spread across calls. max_run 0 is -EINVAL.
 */
TW_PUBLIC int64_t tw_advance_bounded(struct tw_wheel *w, uint64_t now,
                                     uint64_t max_run);

/*
 * The time by which tw_advance() must next be called: tw_now(w) if a timer
 * is already due; otherwise the tick boundary of the next piece of work,
 * which is never later than the earliest pending timer's boundary (in
 * hierarchical mode it can be earlier, when coarse timers must be demoted;
 * in hashed mode it is the next tick while anything is pending). UINT64_MAX
 * when nothing is pending (check tw_pending() to tell this apart from a
 * timer due at UINT64_MAX). NULL: UINT64_MAX.
 */
TW_PUBLIC uint64_t tw_next_deadline(const struct tw_wheel *w);

/* ---- inspection
 * --------------------------------------------------------------- */

/*
 * Call fn(timer, ctx) once for every pending timer, in no particular order,
 * so an embedder can persist or hand them over (then tw_destroy() detaches
 * them all). fn must not change the wheel: schedule, re-arm, cancel, advance
 * and destroy called from it return -EBUSY. Returns 0 after a full walk, the
 * first non-zero value fn returned, or -EINVAL for NULL w or fn.
 */
TW_PUBLIC int tw_visit(struct tw_wheel *w, tw_visitor *fn, void *ctx);

/*
 * Check every internal structure of w against a brute-force scan: list
 * links, the level, slot and round of every timer, occupancy bitmaps, the
 * pending count. Slow; meant for tests. Returns 0, or -EPROTO with a
 * description written to why (if why and len are non-zero), or -EINVAL for
 * a NULL w.
 */
TW_PUBLIC int tw_check(const struct tw_wheel *w, char *why, size_t len);

/* ---- threaded service (lib/service.c) ---- */

/*
 * A timer service: a worker thread owns a wheel and drives it from
 * CLOCK_MONOTONIC, so that any thread may schedule and cancel. Deadlines are
 * absolute CLOCK_MONOTONIC times in ns; callbacks never run early. Threading
 * model, handle lifetime and stop semantics: docs/service.md.
 */
struct tw_service; /* opaque */
struct tw_handle;  /* opaque, reference-counted */

/* A service callback. h stays valid for the whole call (the service holds a
 * reference), so the callback may query or cancel it. */
typedef void tw_service_callback(struct tw_handle *h, void *arg);

/* What a fixed-rate timer does when a stall made it miss periods. */
enum tw_catchup {
    TW_CATCHUP_SKIP = 0, /* run once, late, then resume on the period grid */
    TW_CATCHUP_ALL = 1,  /* run once for every missed period, back to back */
};

/* How a periodic timer's next deadline is counted. */
enum tw_period {
    TW_FIXED_RATE = 0,  /* the k-th run is due at first + k * period */
    TW_FIXED_DELAY = 1, /* each run is due period after the last returned */
};

/* What has become of a scheduled timer. */
enum tw_handle_state {
    TW_HANDLE_PENDING = 0,   /* waiting for its deadline, or due and queued */
    TW_HANDLE_RUNNING = 1,   /* its callback is running */
    TW_HANDLE_DONE = 2,      /* a one-shot timer whose callback has run */
    TW_HANDLE_CANCELLED = 3, /* cancelled: its callback will not run again */
    TW_HANDLE_RETURNED = 4,  /* handed back by tw_service_stop() */
};

/*
 * How to build a service. Fill it with tw_service_config_init().
 *  mode, tick_ns, slots, levels   the wheel, as in struct tw_config.
 *  executor_threads  0: callbacks run one by one on the worker thread;
 *                    N (at most 1024): on a pool of N threads.
 *  max_pending       most timers held at once; 0 is unbounded.
 *  catchup           the policy of fixed-rate timers after a stall.
 */
struct tw_service_config {
    enum tw_mode mode;
    uint64_t tick_ns;
    const uint32_t *slots;
    unsigned levels;
    unsigned executor_threads;
    size_t max_pending;
    enum tw_catchup catchup;
};

/* Counters of a service; scheduled == completed + cancelled + returned +
 * pending whenever no call is in progress (always, once stopped). */
struct tw_service_stats {
    uint64_t scheduled; /* timers accepted (a periodic one counts once) */
    uint64_t runs;      /* callbacks started, every period counted */
    uint64_t completed; /* one-shot timers whose callback ran */
    uint64_t cancelled; /* timers cancelled (periodic ones included) */
    uint64_t returned;  /* timers handed back by stop */
    uint64_t pending;   /* timers the service holds now */
    uint64_t rejected;  /* schedules refused with -EAGAIN */
    uint64_t wakeups;   /* times the worker thread woke from a sleep */
};

/* A timer handed back by tw_service_stop(). */
struct tw_handback {
    tw_service_callback *cb;
    void *arg;
    uint64_t deadline;   /* when it was due (CLOCK_MONOTONIC ns) */
    uint64_t period;     /* 0 for a one-shot timer */
    enum tw_period kind; /* meaningful when period is not 0 */
};

/* Receives each handed-back timer; t is valid during the call only. */
typedef void tw_handback_fn(const struct tw_handback *t, void *ctx);

/* Fill cfg with the defaults of mode: the core's defaults, no executor
 * threads, no maximum, TW_CATCHUP_SKIP. A NULL cfg is a no-op. */
TW_PUBLIC void tw_service_config_init(struct tw_service_config *cfg,
                                      enum tw_mode mode);

/* Create a service and start its threads. Returns NULL on failure and
 * stores in err (when not NULL) -EINVAL (bad config, as tw_create(), or too
 * many threads), -ENOMEM or the error of pthread_create; 0 on success. */
TW_PUBLIC struct tw_service *
tw_service_create(const struct tw_service_config *cfg, int *err);

/*
 * From any thread, call cb(h, arg) once, delay ns from now (saturating).
 * With out, *out gets a handle to release; without, none is kept. Returns 0,
 * -EINVAL (NULL s or cb), -EAGAIN (max_pending reached), -ENOMEM or
 * -ESHUTDOWN (stop has begun); on error nothing changes and *out is NULL.
 */
TW_PUBLIC int tw_service_schedule(struct tw_service *s, uint64_t delay,
                                  tw_service_callback *cb, void *arg,
                                  struct tw_handle **out);

/* As tw_service_schedule(), but run first after delay, then every period
 * ns counted as kind says, until cancelled. period 0 or an unknown kind is
 * -EINVAL. */
TW_PUBLIC int tw_service_schedule_periodic(struct tw_service *s, uint64_t delay,
                                           uint64_t period, enum tw_period kind,
                                           tw_service_callback *cb, void *arg,
                                           struct tw_handle **out);

/*
 * From any thread: 1 if the callback will not start again because of this
 * call (a periodic timer's current run, if any, finishes), 0 if it had
 * already run, is running (one-shot), was cancelled or handed back.
 * Safe twice, and after the service is destroyed. NULL: -EINVAL.
 */
TW_PUBLIC int tw_handle_cancel(struct tw_handle *h);

/* What has become of h (a snapshot: other threads may change it at once).
 * NULL: TW_HANDLE_CANCELLED. */
TW_PUBLIC enum tw_handle_state tw_handle_query(const struct tw_handle *h);

/* The deadline h is waiting for, or last waited for (CLOCK_MONOTONIC ns).
 * NULL: 0. */
TW_PUBLIC uint64_t tw_handle_deadline(const struct tw_handle *h);

/* Give back the caller's reference: h must not be used afterwards. It does
 * not cancel the timer. NULL is a no-op; releasing twice is undefined. */
TW_PUBLIC void tw_handle_release(struct tw_handle *h);

/*
 * Stop accepting timers (later schedules fail with -ESHUTDOWN), let running
 * callbacks finish, join every thread, then call fn (if not NULL) once for
 * each timer that neither ran nor was cancelled. Returns 0; a second stop
 * is a no-op returning 0. -EINVAL for NULL s; -EDEADLK, doing nothing, from
 * a callback of s or from fn.
 */
TW_PUBLIC int tw_service_stop(struct tw_service *s, tw_handback_fn *fn,
                              void *ctx);

/* Stop s (dropping what stop would hand back) and free it. Handles stay
 * valid until released. NULL: 0. -EDEADLK, doing nothing, from a callback
 * of s. */
TW_PUBLIC int tw_service_destroy(struct tw_service *s);

/* Copy the counters of s into out. -EINVAL for NULL s or out. */
TW_PUBLIC int tw_service_stats(struct tw_service *s,
                               struct tw_service_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* TIMEWHEEL_H */
