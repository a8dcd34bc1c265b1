/*
 * timewheel/purgatory.h: delayed operations watched by keys, completed or
 * expired exactly once (libtimewheel-purgatory, pkg-config
 * timewheel-purgatory). A layer over the core (timewheel/core.h) and the
 * service (timewheel/service.h); design, lock order and a comparison with
 * Kafka's DelayedOperationPurgatory: docs/purgatory.md.
 *
 * An operation (struct tw_delayed) is intrusive and owned by the caller,
 * like struct tw_timer: a produce request waiting for its replicas, a fetch
 * waiting for data. It is watched on one or more keys (byte strings such as
 * "orders-3") and answered exactly once: when a check of one of its keys
 * finds its condition met, or when its timeout fires.
 *
 * Callbacks of an operation:
 *  - try_complete(op, arg): whether the condition is met now. It only
 *    looks; the purgatory completes the operation when it answers true. It
 *    runs with no lock of the purgatory held, so it may take the caller's
 *    own locks, but it must not call the same purgatory (such calls fail
 *    with -EDEADLK, changing nothing). It may run several times, on any
 *    thread that watches or checks, never on two threads at once for the
 *    same operation.
 *  - on_expire(op, arg): the timeout won; runs once, just before
 *    on_complete. May be NULL.
 *  - on_complete(op, arg): runs exactly once per watch, whether the
 *    operation completed or expired (tw_delayed_state() tells which).
 *    From its first instruction the operation belongs to the caller again:
 *    it may be freed, or initialised and watched anew.
 *  Neither on_expire nor on_complete runs while the purgatory holds a lock;
 *  both may call any purgatory function, tw_purgatory_destroy() included.
 *  A hand-back function (tw_delayed_handback_fn) may call any function
 *  but destroy p (and, from stop's, stop p): those are -EDEADLK.
 *
 * Three ways to run the timeouts (struct tw_purgatory_config):
 *  - over a core wheel that the caller drives (an event loop): every call,
 *    and tw_advance() of that wheel, from one thread; timeouts expire inside
 *    tw_advance(). The configuration must then give the loop's clock (now):
 *    watch reads it and counts the timeout from that reading, never from
 *    the wheel's last advance, which in a loop that handles I/O before it
 *    advances is the time before the loop went to sleep.
 *  - over a timer of the caller's (struct tw_purgatory_timer), one thread:
 *    the caller reports each fired timeout with tw_purgatory_expire().
 *  - over a service: any thread may watch, check and cancel; timeouts expire
 *    on the service's worker or executor threads. An expiry that meets the
 *    operation while another thread is running its try_complete is left to
 *    that thread, which then runs on_expire and on_complete itself (unless
 *    its try_complete answered true: then the operation completed).
 *
 * Lock order, the rule for try_complete: the purgatory holds none of its
 * locks while it calls try_complete, and tw_purgatory_watch() and
 * tw_purgatory_check() never wait for a try_complete running on another
 * thread (they leave it a note to try again and move on). They do run
 * try_complete on the calling thread, so a caller that holds one of its
 * own locks while calling them must hold it recursively if try_complete
 * takes it too (as Java's locks are, in Kafka). With that, holding any lock
 * across watch and check is safe: the deadlock of Kafka's purgatory (a
 * checker holding the caller's lock blocks on an operation's lock whose
 * holder waits in tryComplete for the caller's lock) cannot happen. Only
 * tw_purgatory_cancel_key(), tw_purgatory_stop() and tw_purgatory_destroy()
 * wait for try_complete calls already running on other threads: do not
 * call those three while holding a lock that a try_complete takes.
 */
#ifndef TIMEWHEEL_PURGATORY_H
#define TIMEWHEEL_PURGATORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel/core.h"
#include "timewheel/service.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most keys one operation may be watched on. */
#define TW_PURGATORY_MAX_KEYS 64u
/* Longest key, in bytes: far above a Kafka topic-partition name (249 bytes
 * of topic and a partition number), low enough that a key copy is cheap. */
#define TW_PURGATORY_MAX_KEY_LEN 4096u
/* Default number of watch-list shards over a core wheel or a caller's
 * timer (one thread: the shards only split the table), over a service
 * (threads: each shard is a lock, and with two threads flat out 16 of
 * them made the threads wait for each other in the kernel about once in
 * 15 lock takings; Kafka's purgatory has 512), and the largest number. */
#define TW_PURGATORY_DEFAULT_SHARDS 16u
#define TW_PURGATORY_DEFAULT_SERVICE_SHARDS 512u
#define TW_PURGATORY_MAX_SHARDS 4096u

struct tw_purgatory; /* opaque */
struct tw_delayed;
struct tw__pwatch; /* private */

/* Whether op's condition is met now (see the top of this header). */
typedef bool tw_try_complete_fn(struct tw_delayed *op, void *arg);
/* on_complete and on_expire. */
typedef void tw_delayed_fn(struct tw_delayed *op, void *arg);
/* Receives each operation handed back, uncompleted, by
 * tw_purgatory_cancel_key() or tw_purgatory_stop(); it belongs to the
 * caller again from the call on. */
typedef void tw_delayed_handback_fn(struct tw_delayed *op, void *ctx);

/* What has become of an operation. */
enum tw_delayed_state {
    TW_DELAYED_IDLE = 0,      /* initialised, not watched */
    TW_DELAYED_WATCHED = 1,   /* waiting on its keys and its timeout */
    TW_DELAYED_COMPLETED = 2, /* try_complete answered true */
    TW_DELAYED_EXPIRED = 3,   /* its timeout won */
    TW_DELAYED_CANCELLED = 4, /* handed back by cancel_key or stop */
};

/*
 * An operation, embedded by the caller in its own struct (TW_CONTAINER_OF
 * gets back to it). Initialise it with tw_delayed_init(); the fields are
 * private. It must not be moved or freed while watched.
 */
struct tw_delayed {
    tw_try_complete_fn *try_complete;
    tw_delayed_fn *on_complete;
    tw_delayed_fn *on_expire;
    void *arg;
    struct tw__pwatch *watch; /* the purgatory's record while watched */
    int state;                /* enum tw_delayed_state, read atomically */
};

/* A key: len bytes at bytes (1 .. TW_PURGATORY_MAX_KEY_LEN; compared
 * bytewise, copied by the purgatory). */
struct tw_key {
    const void *bytes;
    size_t len;
};

/*
 * Timeouts on a timer of the caller's own (a binary heap, libuv, ...), for
 * a purgatory used from one thread like one over a core wheel. arm starts
 * op's timeout, timeout_ns from the caller's now (0, or a negative code
 * that watch returns); it must not expire op before returning. disarm stops
 * it; it is called once for every armed timeout, also after it fired.
 * When a timeout fires the caller calls tw_purgatory_expire().
 */
struct tw_purgatory_timer {
    int (*arm)(void *ctx, struct tw_delayed *op, uint64_t timeout_ns);
    void (*disarm)(void *ctx, struct tw_delayed *op);
    void *ctx;
};

/* The clock of the loop that drives a core wheel: the time now, in ns, on
 * the clock the wheel is advanced with (ctx is cfg.now_ctx). */
typedef uint64_t tw_purgatory_now_fn(void *ctx);

/*
 * How to build a purgatory: exactly one of wheel, service and timer.
 *  wheel    a core wheel the caller drives; the purgatory is then used
 *           from that one thread only. Needs now.
 *  now      with wheel, and only with it: the loop's clock. Watch reads it
 *           once (when it arms a timeout) and schedules the timeout at the
 *           later of that reading and tw_now(wheel), plus timeout_ns, so a
 *           timeout never counts from before the watch. For a wheel
 *           advanced with CLOCK_MONOTONIC readings (docs/embedding.md),
 *           tw_purgatory_monotonic; a virtual clock (a simulation) passes
 *           its own.
 *  now_ctx  passed to now.
 *  service  a service (any thread; timeouts counted from tw_service_now(),
 *           read by watch). The purgatory keeps its timeouts in wheels of
 *           its own and holds one service timer at a time to advance
 *           them, so the service's max_pending bounds that timer, not
 *           the watches.
 *  timer    the caller's own timer (copied; one thread, as a wheel).
 *  shards   watch-list shards (locks), 0 for the default of the mode
 *           (TW_PURGATORY_DEFAULT_SERVICE_SHARDS over a service,
 *           TW_PURGATORY_DEFAULT_SHARDS otherwise); rounded up to a power
 *           of two, at most TW_PURGATORY_MAX_SHARDS.
 * The purgatory does not own the wheel or the service: destroy the
 * purgatory first.
 */
struct tw_purgatory_config {
    struct tw_wheel *wheel;
    struct tw_service *service;
    const struct tw_purgatory_timer *timer;
    unsigned shards;
    tw_purgatory_now_fn *now;
    void *now_ctx;
    uint64_t reserved[TW_RESERVED_WORDS]; /* zero; see TW_RESERVED_WORDS */
};

/* A now function for cfg.now: CLOCK_MONOTONIC in ns (ctx ignored), the
 * clock of the loop recipe (tw_loop_clock(CLOCK_MONOTONIC, ...)). */
TW_PUBLIC uint64_t tw_purgatory_monotonic(void *ctx);

/* Counters; watched == completed + expired + cancelled + returned +
 * watching whenever no call is in progress. */
struct tw_purgatory_stats {
    uint64_t watched;   /* operations accepted by watch (completed at once
                           included) */
    uint64_t at_once;   /* of those, completed by watch itself */
    uint64_t completed; /* completions (at_once included) */
    uint64_t expired;   /* timeouts that won */
    uint64_t cancelled; /* handed back by tw_purgatory_cancel_key() */
    uint64_t returned;  /* handed back by tw_purgatory_stop() */
    uint64_t watching;  /* operations watched now */
    uint64_t keys;      /* distinct keys with at least one watcher */
};

/* Fill cfg with: no wheel, no service, no timer, no now, shards 0 (the
 * default of the mode). NULL: no-op. */
TW_PUBLIC void tw_purgatory_config_init(struct tw_purgatory_config *cfg);

/*
 * Create a purgatory. Returns NULL on failure and stores in err (when not
 * NULL) -EINVAL (NULL cfg, not exactly one of wheel, service and timer, a
 * wheel without now or now without a wheel, a timer without arm or disarm,
 * too many shards) or -ENOMEM; 0 on success.
 */
TW_PUBLIC struct tw_purgatory *
tw_purgatory_create(const struct tw_purgatory_config *cfg, int *err);

/* Make op an idle operation with these callbacks (on_expire may be NULL).
 * Must not be called on a watched operation. NULL op: no-op; NULL
 * try_complete or on_complete are stored and refused by watch. */
TW_PUBLIC void tw_delayed_init(struct tw_delayed *op,
                               tw_try_complete_fn *try_complete,
                               tw_delayed_fn *on_complete,
                               tw_delayed_fn *on_expire, void *arg);

/* What has become of op (a snapshot under threads). NULL: TW_DELAYED_IDLE. */
TW_PUBLIC enum tw_delayed_state tw_delayed_state(const struct tw_delayed *op);

/*
 * Try to complete op at once; otherwise watch it on each of its nkeys keys,
 * arm its timeout (timeout_ns from now, saturating: now is a clock reading
 * taken during the call, cfg.now over a wheel, tw_service_now() over a
 * service, the caller's arm over its timer) and try once more, so
 * that an event between the first try and the watch is not missed. Returns
 * 1 if op completed during the call (on_complete has run), 0 if it is
 * watched, or, changing nothing and leaving op idle:
 *   -EINVAL    NULL p or op, NULL try_complete or on_complete, NULL keys or
 *              nkeys 0, a key with NULL bytes or length 0, a key twice
 *   -E2BIG     more than TW_PURGATORY_MAX_KEYS keys, or a key longer than
 *              TW_PURGATORY_MAX_KEY_LEN
 *   -EBUSY     op is already watched
 *   -EALREADY  op has completed, expired or been handed back (initialise it
 *              again to reuse it)
 *   -EDEADLK   called from a try_complete of p
 *   -ESHUTDOWN p is stopped;  -ENOMEM;  or, over a service, its refusal
 *              of the purgatory's one service timer when the watch needs
 *              it armed (-EAGAIN: the service is full of other timers;
 *              -ESHUTDOWN: it is stopped)
 */
TW_PUBLIC int tw_purgatory_watch(struct tw_purgatory *p, struct tw_delayed *op,
                                 const struct tw_key *keys, size_t nkeys,
                                 uint64_t timeout_ns);

/*
 * Try to complete every operation watched on the key (len bytes): those
 * whose try_complete answers true complete (their on_complete runs on this
 * thread before the call returns). Returns how many completed, 0 for a key
 * nobody watches, or -EINVAL (NULL p or key, len 0), -E2BIG (len too
 * long), -EDEADLK (from a try_complete of p). An operation that another
 * thread is trying at that moment is tried again by that thread.
 */
TW_PUBLIC int64_t tw_purgatory_check(struct tw_purgatory *p, const void *key,
                                     size_t len);

/*
 * Stop watching every operation watched on the key: each is removed from
 * all its keys, its timeout cancelled, and handed to fn(op, ctx),
 * uncompleted (state TW_DELAYED_CANCELLED; no callback of op runs).
 * Returns how many, or -EINVAL (NULL p, key or fn, len 0), -E2BIG,
 * -EDEADLK (from a try_complete of p). Waits for try_complete calls of
 * those operations running on other threads (see the lock order above).
 * fn may call any function of p but tw_purgatory_destroy() (-EDEADLK).
 */
TW_PUBLIC int64_t tw_purgatory_cancel_key(struct tw_purgatory *p,
                                          const void *key, size_t len,
                                          tw_delayed_handback_fn *fn,
                                          void *ctx);

/*
 * Refuse later watches (-ESHUTDOWN), wait for watches in progress, then
 * hand every watched operation to fn(op, ctx) (state TW_DELAYED_CANCELLED)
 * with its timeout cancelled; with a NULL fn they are only detached.
 * Returns how many. Stop returns in bounded time however many threads keep
 * calling watch: neither a refused watch nor one that completes at once
 * holds it up, only those setting up a record it must hand back. A second stop
 * (on any thread) waits until the first has handed everything back, then
 * returns 0. -EINVAL for NULL p; -EDEADLK, doing nothing, from a
 * try_complete of p or from a hand-back function of p's own stop (the stop
 * in progress cannot wait for itself). fn may call any function of p but
 * tw_purgatory_stop() and tw_purgatory_destroy() (-EDEADLK): destroy p
 * after stop has returned.
 */
TW_PUBLIC int64_t tw_purgatory_stop(struct tw_purgatory *p,
                                    tw_delayed_handback_fn *fn, void *ctx);

/* Stop p (detaching what stop would hand back; a stop running on another
 * thread is waited for) and free it. NULL: 0. -EDEADLK, doing nothing,
 * from a try_complete of p or a hand-back function of p (of its stop or
 * its cancel_key, which still use p after fn returns). No other call on p
 * may run or follow. Destroy every purgatory (then its service) before a
 * dlclose() of this library: docs/embedding.md, "dlclose".
 * fork(): in a child of fork(), a purgatory over a service that the child
 * inherited answers -ECHILD to every call (watch, check, cancel_key,
 * stats, stop) and this call returns -ECHILD at once, freeing nothing (the
 * child's copy, gone at its exit or exec): its service has no thread in
 * the child and a shard lock may have been held by a parent thread. A
 * purgatory over a core wheel or a caller's timer works in the child. */
TW_PUBLIC int tw_purgatory_destroy(struct tw_purgatory *p);

/*
 * The caller's timer (struct tw_purgatory_timer) fired for op: expire it
 * now (on_expire, then on_complete). Returns 1 if op expired, 0 if it is
 * not watched by p any more (completed or handed back: a late timer is
 * harmless), -EINVAL for NULL p or op or a purgatory without a caller's
 * timer, -EDEADLK from a try_complete of p.
 */
TW_PUBLIC int tw_purgatory_expire(struct tw_purgatory *p,
                                  struct tw_delayed *op);

/* Copy the counters of p into out. -EINVAL for NULL p or out. */
TW_PUBLIC int tw_purgatory_stats(struct tw_purgatory *p,
                                 struct tw_purgatory_stats *out);

/*
 * The counters of tw_purgatory_stats() in the Prometheus text format
 * (version 0.0.4) for a monitoring system: tw_purgatory_delayed (watched
 * now, Kafka's NumDelayedOperations), tw_purgatory_keys, and the counters
 * tw_purgatory_{watched,completed_at_once,completed,expired,cancelled,
 * returned}_total. Written into buf with snprintf()'s contract: never
 * past len bytes, NUL-terminated when len > 0, and the length of the whole
 * text returned, so a result >= len means buf was too short (ask again
 * with result + 1). Stops nothing. -EINVAL for NULL p, or NULL buf with
 * len > 0 (NULL, 0 asks for the length); -ECHILD as tw_purgatory_stats().
 */
TW_PUBLIC int tw_purgatory_metrics_text(struct tw_purgatory *p, char *buf,
                                        size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TIMEWHEEL_PURGATORY_H */
