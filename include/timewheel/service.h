/*
 * timewheel/service.h: the threaded timer service, a layer over the core
 * (timewheel/core.h). A worker thread owns a wheel and drives it from
 * CLOCK_MONOTONIC so that any thread may schedule and cancel. Built into
 * libtimewheel-service (pkg-config timewheel-service), which needs threads
 * and liburcu. Threading model, handle lifetime and stop: docs/service.md.
 */
#ifndef TIMEWHEEL_SERVICE_H
#define TIMEWHEEL_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A timer service: a worker thread owns a wheel and drives it from
 * CLOCK_MONOTONIC, so that any thread may schedule and cancel. Deadlines are
 * absolute CLOCK_MONOTONIC times in ns; callbacks never run early. A delay
 * counts from the call: the deadline is at least CLOCK_MONOTONIC at the call
 * plus the delay, and at most TW_SERVICE_CLOCK_AHEAD_NS more (where the
 * TSC may be used, the calling thread reads it instead of the system
 * call, unfenced, with 1 us added for a read that the processor runs ahead
 * of older instructions: the lower bound holds unless one of them waited
 * on memory more than that; docs/service.md, "The producers' clock"). Threading
 * model, handle lifetime and stop semantics: docs/service.md.
 */
/* The most a relative delay's "now" can be after CLOCK_MONOTONIC at the
 * call. */
#define TW_SERVICE_CLOCK_AHEAD_NS UINT64_C(5000)
struct tw_service; /* opaque */
/* Opaque, reference-counted; one allocation per scheduled timer and its
 * whole memory while pending: 48 bytes on 64-bit targets, 80 for a
 * periodic timer or one with a release hook (jemalloc size classes). The
 * 48 hold no callback pointer: the service keeps a table of the callbacks
 * it is given (1,023 slots) and the handle an index; a callback the table
 * has no room for (hundreds of distinct callbacks in one service) makes
 * that timer's handle 80 bytes and its schedule a look through up to 16
 * slots of the table. */
struct tw_handle;

/* A service callback. h stays valid for the whole call (the service holds a
 * reference), so the callback may query or cancel it. */
typedef void tw_service_callback(struct tw_handle *h, void *arg);

/* Called once with the timer's arg when the service lets go of it for good
 * (see struct tw_timer_spec). */
typedef void tw_release_fn(void *arg);

/* What a fixed-rate timer does when a stall made it miss periods. Periods
 * count as missed only from the schedule: a timer scheduled with a first
 * deadline in the past starts at the last point of its grid at or before
 * the call, at once, and follows the grid from there (so deadline 0 runs
 * once, not once per period since the clock's origin). */
enum tw_catchup {
    TW_CATCHUP_SKIP = 0, /* run once, late, then resume on the period grid */
    TW_CATCHUP_ALL = 1,  /* run once for every missed period, back to back */
};

/* How a periodic timer's next deadline is counted. */
enum tw_period {
    TW_FIXED_RATE = 0,  /* the k-th run is due at first + k * period */
    TW_FIXED_DELAY = 1, /* each run is due period after the last returned */
};

/* What has become of a scheduled timer. DONE, CANCELLED and RETURNED are
 * final, and reached only once no run of the callback is in progress: a
 * timer cancelled while its callback runs reads RUNNING until the run has
 * returned (its own callback always reads RUNNING). */
enum tw_handle_state {
    TW_HANDLE_PENDING = 0,   /* waiting for its deadline, or due and queued */
    TW_HANDLE_RUNNING = 1,   /* its callback is running (cancelled or not) */
    TW_HANDLE_DONE = 2,      /* a one-shot timer whose callback has run */
    TW_HANDLE_CANCELLED = 3, /* cancelled: its callback will not run again */
    TW_HANDLE_RETURNED = 4,  /* handed back by tw_service_stop() */
};

/*
 * How to build a service. Fill it with tw_service_config_init().
 *  mode, tick_ns, slots, levels   the wheel, as in struct tw_config.
 *                    In hashed mode a tick under 1 ms is raised to 1 ms
 *                    (TW_SERVICE_MIN_HASHED_TICK_NS), as Netty does: a
 *                    worker that wakes every tick cannot keep up below it.
 *  executor_threads  0: callbacks run one by one on the worker thread;
 *                    N (at most 1024): on a pool of N threads.
 *  max_pending       most timers pending at once (default
 *                    TW_SERVICE_DEFAULT_MAX_PENDING); 0 is unbounded. A
 *                    cancel gives its slot back at once.
 *                    Never exceeded; a schedule may be refused up to 8320
 *                    timers before it is reached (slots are handed to
 *                    threads 64 at a time, and a thread keeps up to 127
 *                    that its cancels freed).
 *  catchup           the policy of fixed-rate timers after a stall.
 *  max_lag_ns        back-pressure on a flood (default
 *                    TW_SERVICE_DEFAULT_MAX_LAG_NS): while the worker has
 *                    not caught up with the schedules queued to it for
 *                    longer than this, schedules are refused with -EAGAIN,
 *                    so lateness cannot grow without bound. 0: never.
 *                    An accepted timer is then late by at most about
 *                    max_lag_ns plus the worker's turn in progress, and
 *                    a turn's length follows the machine's load, so no
 *                    fixed multiple of max_lag_ns holds: 0.75-2.1x a
 *                    max_lag_ns of 100 ms and 0.12-0.16x the default at a
 *                    load average of 6-10 on 2 cores, 4.0x and 1.6x at a
 *                    load of 8 in another run (issue 28). A producer that
 *                    retries may be refused for several max_lag_ns in a
 *                    row (docs/service.md, "Overload").
 */
struct tw_service_config {
    enum tw_mode mode;
    uint64_t tick_ns;
    const uint32_t *slots;
    unsigned levels;
    unsigned executor_threads;
    size_t max_pending;
    enum tw_catchup catchup;
    uint64_t max_lag_ns;
    uint64_t reserved[TW_RESERVED_WORDS]; /* zero; see TW_RESERVED_WORDS */
};

/* The defaults tw_service_config_init() sets: at most 2^22 timers held
 * (320 MiB of one-shot handles, 384 MiB if every timer is periodic or has
 * a release hook), refuse while the worker is 1 s behind the queue
 * (a burst of 10^6 schedules at once still goes through on a loaded
 * machine). */
#define TW_SERVICE_DEFAULT_MAX_PENDING ((size_t)1 << 22)
#define TW_SERVICE_DEFAULT_MAX_LAG_NS UINT64_C(1000000000)
/* The shortest tick of a hashed service (Netty's). */
#define TW_SERVICE_MIN_HASHED_TICK_NS UINT64_C(1000000)

/* Counters of a service. scheduled == completed + cancelled + returned +
 * pending holds in every snapshot, also under load. Each counter is a
 * value it held during the call, but they are read one after another (each
 * a sum over per-thread stripes), so a snapshot taken while threads run is
 * not one instant. pending (the timers accepted and not yet let go of) is
 * never above what really was pending at an instant of the call, hence
 * never above max_pending, and short of such a value by at most the timers
 * accepted while the call read (it reads again, up to 4 times, while some
 * were): exact when none was. scheduled is then the outcomes plus pending. */
struct tw_service_stats {
    uint64_t scheduled; /* timers accepted (a periodic one counts once) */
    uint64_t runs;      /* callbacks started, every period counted */
    uint64_t completed; /* one-shot timers whose callback ran */
    uint64_t cancelled; /* timers cancelled (periodic ones included), counted
                           when tw_handle_cancel() returned 1 */
    uint64_t returned;  /* timers handed back by stop */
    uint64_t pending;   /* timers accepted and not yet run to completion,
                           cancelled or returned (the memory of a cancelled
                           one is freed within about 100 ms of the cancel
                           while the worker gets a processor: see
                           tw_handle_cancel()) */
    uint64_t rejected;  /* schedules refused with -EAGAIN */
    uint64_t wakeups;   /* times the worker thread woke from a sleep */
    uint64_t reserved[TW_RESERVED_WORDS]; /* zero: later counters */
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

/*
 * A timer for tw_service_submit(), the general form of the schedule calls.
 *  deadline  absolute, on the service's clock (tw_service_now()); a time in
 *            the past runs at once (less than a tick in the past: at the
 *            end of its tick, as in the core).
 *  period    0: one-shot; otherwise run every period ns after the first,
 *            counted as kind says, until cancelled.
 *  cb, arg   the callback and its argument.
 *  release   NULL, or called with arg exactly once when the service lets go
 *            of the timer for good: after the last run of the callback has
 *            returned, once a cancelled timer is out of the service's
 *            structures (at the latest at stop), or after stop's hand-back
 *            function returned for it. After that the service never
 *            touches arg again, so release may free it. It runs on a thread
 *            of the service (worker, executor, or the one calling stop or
 *            destroy) and must not block for long; it may not stop or
 *            destroy the service (-EDEADLK).
 */
struct tw_timer_spec {
    uint64_t deadline;
    uint64_t period;
    enum tw_period kind;
    tw_service_callback *cb;
    void *arg;
    tw_release_fn *release;
};

/* Fill cfg with the defaults of mode: the core's defaults, no executor
 * threads, TW_SERVICE_DEFAULT_MAX_PENDING, TW_SERVICE_DEFAULT_MAX_LAG_NS,
 * TW_CATCHUP_SKIP. A NULL cfg is a no-op. */
TW_PUBLIC void tw_service_config_init(struct tw_service_config *cfg,
                                      enum tw_mode mode);

/*
 * fork(): a child of fork() has only the thread that forked, so the
 * services it inherits have no worker. Every call on an inherited service
 * or one of its handles answers -ECHILD and changes nothing (schedule,
 * submit, cancel, cancel-and-wait, re-arm, stats, stop), and
 * tw_service_destroy() returns -ECHILD at once, joining nothing and
 * freeing nothing: the service's memory in the child is its copy of the
 * parent's, possibly in the middle of a change a parent thread was making,
 * and goes with the child's address space when it exits or execs.
 * tw_handle_cancel_release() still drops the caller's reference;
 * tw_handle_query(), tw_handle_deadline(), tw_handle_release() and
 * tw_service_now() work. A service created in the child works as
 * anywhere. docs/service.md, "fork".
 */

/* Create a service and start its threads. Returns NULL on failure and
 * stores in err (when not NULL) -EINVAL (bad config, as tw_create(), or too
 * many threads), -ENOMEM, -EAGAIN (65,535 services are alive already) or
 * the error of pthread_create; 0 on success. */
TW_PUBLIC struct tw_service *
tw_service_create(const struct tw_service_config *cfg, int *err);

/*
 * From any thread, call cb(h, arg) once, delay ns from now (saturating; now
 * as the top of this header says).
 * With out, *out gets a handle to release; without, none is kept. Returns 0,
 * -EINVAL (NULL s or cb), -EAGAIN (max_pending reached, or the worker is
 * more than max_lag_ns behind: back-pressure, try later), -ENOMEM or
 * -ESHUTDOWN (stop has begun); on error nothing changes and *out is NULL.
 * From a thread that also cancels what it schedules (the RPC pattern), a
 * schedule may sleep, once per 511 schedules (per 64 on a thread beyond
 * the 64 that get rings of their own), while the worker is behind
 * letting go of cancelled timers: more than twice this thread's share of
 * a bound of a sixteenth as many as pending, 512 at least (shared among
 * the threads with rings; the threads without one share one such bound).
 * It sleeps until the worker is back below the bound, for as long as the
 * worker makes progress, at most 100 ms without progress (a worker in a
 * long callback); never on a thread of any service (a
 * callback or release hook), nor once stop has begun (docs/service.md,
 * "Handle lifetime and cancel").
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

/* As tw_service_schedule(), at an absolute deadline on the service's clock
 * (tw_service_now()); a deadline in the past runs at once. */
TW_PUBLIC int tw_service_schedule_at(struct tw_service *s, uint64_t deadline,
                                     tw_service_callback *cb, void *arg,
                                     struct tw_handle **out);

/* Schedule the timer spec describes (see struct tw_timer_spec). Returns
 * what tw_service_schedule() returns; -EINVAL also for a NULL spec, a NULL
 * cb, or a period with an unknown kind. */
TW_PUBLIC int tw_service_submit(struct tw_service *s,
                                const struct tw_timer_spec *spec,
                                struct tw_handle **out);

/* The service's clock: CLOCK_MONOTONIC in ns, the clock of every deadline,
 * read with clock_gettime() (exact: between a reading before the call and
 * one after; the "now" of a relative delay may be up to
 * TW_SERVICE_CLOCK_AHEAD_NS later). Callable from any thread, also after
 * stop. NULL: 0. */
TW_PUBLIC uint64_t tw_service_now(const struct tw_service *s);

/*
 * From any thread, its own callback included. Whatever it answers, no run
 * of the callback starts after this call (a run in progress finishes:
 * tw_handle_cancel_wait() waits for it), and a re-arm racing it either
 * came first (and is cancelled with the timer) or answers 0.
 *  1  this call ended a timer that would have run again: it was waiting,
 *     or it is running and is periodic or was re-armed during this run.
 *  0  the callback has fired and its timer is not to run again: a
 *     one-shot that ran, or is running without having been re-armed in
 *     this run (its last run: it still completes, DONE, and a re-arm
 *     from then on, from its own callback too, answers 0: a cancel wins
 *     over the heartbeat that re-arms itself); or the timer was already
 *     cancelled or handed back. So a one-shot never re-armed, cancelled
 *     once and not handed back, answers 1 exactly when its callback never
 *     runs (what an RPC time-out needs to know).
 * Safe twice, and after the service is destroyed. NULL: -EINVAL. The
 * service lets go of a timer cancelled while waiting (its release hook
 * runs) within about 100 ms while its worker gets a processor, or, if no
 * memory could be had for the message that tells its worker, at its
 * deadline or at stop. On a machine whose processors the producers or
 * other processes fill, what holds is a bound on how many: the cancelled
 * timers the worker has not let go of stay within a sixteenth of those
 * pending (512 at least) plus about 511 per producer thread (64 per
 * thread without a ring of its own), whatever the
 * rate, because producers that cancel what they schedule wait for the
 * worker (tw_service_schedule()); how long they wait follows the load
 * (docs/service.md, "Handle lifetime and cancel", has the figures). A
 * cancel never fails for load and never sleeps for it.
 */
TW_PUBLIC int tw_handle_cancel(struct tw_handle *h);

/*
 * tw_handle_cancel(h) then tw_handle_release(h), as one call and cheaper:
 * when it wins, the cancel's own compare-and-swap is its only locked
 * instruction on a thread with its own stripe and rings, the common case
 * (the pair takes two). The same answers; h must not be used
 * afterwards, whatever the answer. NULL: -EINVAL (nothing released).
 * Netty's Timeout.cancel() is this call: cancel, and forget the handle.
 */
TW_PUBLIC int tw_handle_cancel_release(struct tw_handle *h);

/*
 * Cancel h and wait until its callback is not running: once this returns,
 * the callback is not running and will never start again (a re-arm from
 * the running callback after the cancel answers 0). Returns what the
 * cancel answered (tw_handle_cancel()): 1 if it ended a timer that would
 * have run again, 0 if the callback had fired (a one-shot's last run) or
 * the timer had already been cancelled or handed back.
 * -EINVAL for NULL; -EDEADLK, doing nothing, from h's own callback (use
 * tw_handle_cancel() there). Safe after the service is destroyed. Blocks
 * while a run is in progress (on a futex, not spinning), so two callbacks
 * that cancel-and-wait each other on an executor deadlock, as two mutexes
 * taken in opposite orders would.
 */
TW_PUBLIC int tw_handle_cancel_wait(struct tw_handle *h);

/*
 * Move h to fire delay ns from now (saturating; now as for
 * tw_service_schedule()), from any thread, its own callback included,
 * O(1) at the worker. Allocates nothing, except that a move to an earlier
 * deadline sends the worker a message, which may need memory: the
 * thread's rings in this service and their first block at its first
 * message, a new block once per 511 messages, or a 16-byte node on a
 * thread without a ring (beyond 64 threads, without membarrier, or whose
 * rings could not be allocated).
 * Returns:
 *  1  re-armed: the next run of the callback starts at the new deadline,
 *     never before, unless h is cancelled, re-armed again or handed back
 *     by stop (which then reports the new deadline). If the callback is
 *     running (a one-shot timer from its own callback, for instance), it
 *     runs again at the new deadline once this run returns. A periodic
 *     timer's next run moves there and its later runs follow the period
 *     from it (fixed rate: the grid restarts at the new deadline).
 *  0  too late, nothing changed: the timer is done (a one-shot whose
 *     callback has run, or whose run was cancelled before this re-arm:
 *     tw_handle_cancel() answered 0 and the run finishes as the last),
 *     cancelled (also while running) or handed back.
 *  -EINVAL  NULL h.
 *  -ENOMEM  a move to an earlier deadline of a waiting timer found no
 *     memory for its message: nothing changed, the timer fires at its old
 *     deadline (a later deadline never needs memory).
 * Racing a cancel, exactly one wins: either the re-arm returns 1 and the
 * cancel then cancels the re-armed timer (returning 1), or the cancel came
 * first and the re-arm returns 0 (whatever the cancel answered: 0 for a
 * one-shot whose run was in progress). Racing stop, a re-armed timer is
 * handed back (or the re-arm returns 0 if stop got there first).
 */
TW_PUBLIC int tw_handle_rearm(struct tw_handle *h, uint64_t delay);

/* As tw_handle_rearm(), at an absolute deadline on the service's clock. */
TW_PUBLIC int tw_handle_rearm_at(struct tw_handle *h, uint64_t deadline);

/* What has become of h (a snapshot: other threads may change it at once;
 * see enum tw_handle_state: RUNNING while a run is in progress, cancelled
 * or not). NULL: TW_HANDLE_CANCELLED. */
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
 * each timer that neither ran nor was cancelled. It waits only for the
 * schedule calls already inside when it began, so it returns in bounded
 * time however many threads keep calling. Returns 0; a second stop
 * is a no-op returning 0. -EINVAL for NULL s; -EDEADLK, doing nothing, from
 * a callback of s or from fn.
 */
TW_PUBLIC int tw_service_stop(struct tw_service *s, tw_handback_fn *fn,
                              void *ctx);

/* Stop s (dropping what stop would hand back) and free it. Handles stay
 * valid until released. NULL: 0. -EDEADLK, doing nothing, from a callback
 * of s. Every service must be destroyed before a dlclose() of this
 * library (its worker would run unmapped code): docs/embedding.md. */
TW_PUBLIC int tw_service_destroy(struct tw_service *s);

/* Copy the counters of s into out. -EINVAL for NULL s or out. */
TW_PUBLIC int tw_service_stats(struct tw_service *s,
                               struct tw_service_stats *out);

/* Buckets of the lateness histogram of struct tw_service_metrics: bucket i
 * counts the timers fired at most TW_SERVICE_LATE_NS(i) ns late (and more
 * than TW_SERVICE_LATE_NS(i - 1)): 65.5 us, 131 us, ... doubling up to
 * 2.1 s; late[TW_SERVICE_LATE_BUCKETS] counts those later still. */
#define TW_SERVICE_LATE_BUCKETS 16
#define TW_SERVICE_LATE_NS(i) (UINT64_C(65536) << (i))

/*
 * What an operator reads of a running service, without stopping anything
 * (each figure a relaxed read of what the worker writes):
 *  lag_ns       how far the worker is behind its clock now: 0 while it
 *               sleeps; while it works, the time since the clock reading
 *               its current turn acts on (a long callback, a flood to
 *               admit, or no processor, all show here)
 *  late[]       the lateness of the timers the worker fired: the clock
 *               reading of the turn that found each due, less its
 *               deadline (a timer run after a long callback of the same
 *               turn counts from the turn's reading), in the buckets
 *               above; fired, their number; late_sum_ns, their total
 * reserved is zeroed: fields can be added without a new SONAME.
 */
struct tw_service_metrics {
    uint64_t lag_ns;
    uint64_t fired;
    uint64_t late_sum_ns;
    uint64_t late[TW_SERVICE_LATE_BUCKETS + 1];
    uint64_t reserved[8];
};

/* Fill *out; 0, -EINVAL for a NULL argument, -ECHILD in a child of fork()
 * that inherited s. Callable from any thread, also from a callback, and
 * after stop (lag 0 then). */
TW_PUBLIC int tw_service_metrics(const struct tw_service *s,
                                 struct tw_service_metrics *out);

/* The metrics and the counters of tw_service_stats() in the Prometheus text
 * format (version 0.0.4), into buf of len bytes, with snprintf()'s
 * contract: never past len, NUL-terminated when len > 0, and the length of
 * the whole text returned (write again with a bigger buffer when it is not
 * below len). Families: tw_service_lag_seconds (gauge),
 * tw_service_lateness_seconds (histogram), tw_service_pending (gauge),
 * tw_service_{scheduled,runs,completed,cancelled,returned,rejected,wakeups}_total
 * (counters). -EINVAL for a NULL s (or a NULL buf with len > 0), -ECHILD as
 * above, -EOVERFLOW if the length would not fit an int. */
TW_PUBLIC int tw_service_metrics_text(const struct tw_service *s, char *buf,
                                      size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TIMEWHEEL_SERVICE_H */
