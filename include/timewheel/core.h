/*
 * timewheel/core.h: the caller-driven timing wheels (libtimewheel,
 * pkg-config timewheel). Needs only the allocator (by default a jemalloc
 * private to the library, inside it: the host's malloc is left alone).
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
 * your own struct and get back to it with TW_CONTAINER_OF. The library
 * never allocates or frees a timer.
 *
 * Guarantees (both modes, every layout):
 *  - Tick boundaries lie at start + k * tick. A timer never fires before its
 *    deadline: it fires during the first advance whose time reaches the first
 *    tick boundary at or after its deadline, so at most one tick late. The
 *    last boundary saturates at UINT64_MAX: advancing to UINT64_MAX fires
 *    every pending timer.
 *  - Timers fire in order of their due tick; the order of timers due in the
 *    same tick is unspecified. A timer whose deadline had already passed when
 *    it was scheduled follows the same rule: it runs at the next advance,
 *    unless the first tick boundary at or after its deadline is still ahead
 *    of the wheel's time (a deadline less than a tick in the past); then it
 *    runs at the advance that reaches that boundary.
 *  - Callbacks may schedule, re-arm and cancel any timer, themselves included.
 *    A timer cancelled by a callback before it ran does not run. A timer
 *    scheduled or re-armed from a callback to a time the running advance has
 *    already reached runs on the next advance, not the current one, so a
 *    callback that re-arms itself cannot livelock an advance.
 *  - Deadlines that would overflow saturate at UINT64_MAX and are held, not
 *    wrapped. A deadline in the past runs as said above.
 *  - Errors are negative errno codes; bad input never crashes the wheel and
 *    never loses a timer. See tw_strerror().
 */
#ifndef TIMEWHEEL_CORE_H
#define TIMEWHEEL_CORE_H

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
struct tw_wheel; /* opaque but for its head, below */

/*
 * The first bytes of every struct tw_wheel, public only so that
 * tw_advance() can be inline (see it below). Read-only for the caller: use
 * tw_now() for the time. Part of the ABI of libtimewheel.so.0: a program
 * built against this header reads them directly, so the two fields open
 * every wheel in this order, and changing that needs a new soname.
 *   now      the wheel's time, as tw_now() answers it;
 *   idle_ns  an advance to a time in [now, idle_ns) has nothing to do: no
 *            timer is due and no level needs work before it. The library
 *            keeps it no later than the next piece of work and at 0 while
 *            anything else must happen (a due or deferred timer, an advance
 *            or visit running).
 */
struct tw_wheel_head {
    uint64_t now;
    uint64_t idle_ns;
};

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
 * schedule); the fields are private, but for those an embedder may own:
 *  - deadline, while the timer is not pending: no function reads it then
 *    but tw_timer_deadline(), which answers what is there (the last
 *    deadline, unless the caller wrote over it), and none writes it but
 *    tw_timer_init() (0) and the calls that make the timer pending. So an
 *    embedder may keep 8 bytes of its own there (a queue link) while the
 *    timer is out of every wheel. Both links must stay as the library left
 *    them, NULL: tw_cancel() takes two equal links for "not pending".
 *  - cb and arg, on a wheel with an expiry function (tw_set_expiry()): the
 *    wheel never reads them.
 * It must not be moved or freed while pending. A pending timer belongs to
 * the wheel that scheduled it: passing it to another wheel before it stops
 * being pending is undefined.
 */
struct tw_timer {
    struct tw_link link; /* both NULL: not pending */
    uint64_t deadline;   /* absolute, ns, as scheduled (saturated); the
                          * wheel derives its level, slot or bucket and
                          * whether it is due from this alone; the
                          * caller's while not pending (above) */
    tw_callback *cb;
    void *arg;
};

#if !defined(__cplusplus) && (defined(__x86_64__) || defined(__aarch64__))
_Static_assert(sizeof(struct tw_timer) <= 40, "struct tw_timer must fit 40 B");
#endif

/*
 * Room to grow: every struct the caller fills for the library (tw_config,
 * tw_service_config, tw_purgatory_config, tw_store_config) and the stats
 * the library fills for the caller (tw_service_stats) end in
 * TW_RESERVED_WORDS words that must be zero. The init functions and the
 * library zero them; a function that reads such a config refuses a
 * non-zero tail with -EINVAL. A later minor version adds a field by taking
 * words off the tail, so the struct keeps its size and offsets, and a new
 * field's zero means "as before": a program built against an older header
 * runs unchanged against the newer library (its tail is zero), and one that
 * sets a newer field against an older library gets -EINVAL instead of the
 * field silently ignored. Fill configs with their init function (or a
 * zeroed initializer), never leave the tail uninitialised.
 */
#define TW_RESERVED_WORDS 8

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
    uint64_t reserved[TW_RESERVED_WORDS]; /* zero; see TW_RESERVED_WORDS */
};

/* The struct of type whose member is at ptr: how a callback gets back from
 * its struct tw_timer (or any intrusive node) to the caller's object. */
#define TW_CONTAINER_OF(ptr, type, member)                                     \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/*
 * An allocator for every block the library allocates for itself (wheels,
 * services, handles; never a timer). alloc returns size bytes aligned for
 * any type, or NULL; free gets back a block and the size it was asked for.
 * ctx is passed to both.
 */
struct tw_allocator {
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *p, size_t size);
    void *ctx;
};

/* ---- units ------------------------------------------------------------- */

/*
 * Every time in the library is a count of nanoseconds in a uint64_t: a
 * deadline, a delay, a period, a tick. A bare 2000 is 2 us, not 2 s. The
 * constants (the kernel's NSEC_PER_MSEC and its kin) work in constant
 * expressions; the functions convert a count of a larger unit, saturating
 * at UINT64_MAX (never), as every deadline in the library does.
 */
#define TW_NSEC_PER_USEC UINT64_C(1000)
#define TW_NSEC_PER_MSEC UINT64_C(1000000)
#define TW_NSEC_PER_SEC UINT64_C(1000000000)

static inline uint64_t tw__units(uint64_t n, uint64_t ns_per_unit)
{
    return n > UINT64_MAX / ns_per_unit ? UINT64_MAX : n * ns_per_unit;
}

/* us microseconds in ns. */
static inline uint64_t tw_usec(uint64_t us)
{
    return tw__units(us, TW_NSEC_PER_USEC);
}

/* ms milliseconds in ns. */
static inline uint64_t tw_msec(uint64_t ms)
{
    return tw__units(ms, TW_NSEC_PER_MSEC);
}

/* s seconds in ns. */
static inline uint64_t tw_sec(uint64_t s)
{
    return tw__units(s, TW_NSEC_PER_SEC);
}

/* ---- version and errors ------------------------------------------------ */

/* TW_VERSION_HEX of the library actually linked. */
TW_PUBLIC unsigned tw_version(void);
/* TW_VERSION_STRING of the library actually linked. */
TW_PUBLIC const char *tw_version_string(void);
/* A static message for a negative errno code returned by this library (or
 * for any other int); never NULL. */
TW_PUBLIC const char *tw_strerror(int err);

/* ---- memory ------------------------------------------------------------ */

/*
 * Route every allocation of every layer through a (copied); NULL restores
 * the built-in default (the library's own jemalloc, private to it, with an
 * arena of the library's own made at the first allocation; malloc with
 * ALLOC=libc). Only before
 * the library's first allocation, as with libuv's uv_replace_allocator():
 * afterwards -EBUSY, changing nothing. -EINVAL when a lacks alloc or free.
 * Not thread-safe: call it at start-up.
 */
TW_PUBLIC int tw_set_allocator(const struct tw_allocator *a);

/* size bytes from the library's allocator (uninitialised), or NULL; size 0
 * is NULL. For layers and embedders whose memory should go the same way. */
TW_PUBLIC void *tw_alloc(size_t size);

/* Give back a block from tw_alloc() with the size it was asked for. NULL is
 * a no-op. */
TW_PUBLIC void tw_free(void *p, size_t size);

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
 * Make w call fn(timer, ctx) for every due timer instead of the timer's own
 * cb(timer, arg), so that an embedder whose timers all expire the same way
 * owns their cb and arg fields (struct tw_timer): w never reads them, and
 * its schedule functions accept a NULL cb. fn runs as a callback would
 * (same thread, same rules; the timer is no longer pending). A NULL fn
 * gives the timers their callbacks back. Returns 0, or -EINVAL for a NULL
 * w, -EBUSY from a callback or visitor of w or (fn NULL) while timers are
 * pending, since they may have no callback; on error nothing changes.
 * Calling it again replaces fn and ctx.
 */
TW_PUBLIC int tw_set_expiry(struct tw_wheel *w, tw_callback *fn, void *ctx);

/*
 * Take every pending timer out of w, calling fn(timer, ctx) for each once
 * it is no longer pending (so fn may free it, keep it in a list through
 * its deadline field, the embedder's while the timer is not pending, or
 * schedule it on another wheel), in no particular order. w
 * stays usable and is empty afterwards. fn must not use w: schedule,
 * re-arm, cancel, advance and drain called from it return -EBUSY, destroy
 * -EDEADLK. Returns the number of timers taken, or -EINVAL for a NULL w or
 * fn, -EBUSY from a callback or visitor of w.
 */
TW_PUBLIC int64_t tw_drain(struct tw_wheel *w, tw_callback *fn, void *ctx);

/*
 * Destroy a wheel. Timers still pending are detached (they become not
 * pending, their callbacks never run) and nothing else of the caller's is
 * touched. NULL is a no-op returning 0. Returns -EDEADLK, destroying nothing,
 * when called from a callback or visitor of this wheel. libtimewheel is
 * never unmapped by dlclose() (docs/embedding.md, "dlclose").
 */
TW_PUBLIC int tw_destroy(struct tw_wheel *w);

/* ---- timers -----------------------------------------------------------------
 */

/* Make t a not-pending timer that will call cb(t, arg). Must not be called
 * on a pending timer (that would lose it from the wheel's lists). A NULL t
 * is a no-op; a NULL cb is stored and refused by the schedule functions of
 * a wheel without an expiry function. */
TW_PUBLIC void tw_timer_init(struct tw_timer *t, tw_callback *cb, void *arg);

/*
 * Schedule t to fire at the absolute time deadline (ns). Returns 0, or
 * -EINVAL (NULL w or t, NULL callback on a wheel without an expiry
 * function) or -EBUSY (t is already pending: use tw_rearm() to move it); on
 * error nothing changes.
 */
TW_PUBLIC int tw_schedule(struct tw_wheel *w, struct tw_timer *t,
                          uint64_t deadline);

/*
 * tw_schedule() at the wheel's current time + delay, saturating. The
 * wheel's time is that of its last advance, which is right for a virtual
 * clock and wrong in an event loop that handles I/O before it advances:
 * there the last advance was before the loop slept, and a timeout set
 * after the wake-up would fire early by the time slept. In a loop, take a
 * clock reading: tw_loop_schedule_after() (timewheel/loop.h) does.
 */
TW_PUBLIC int tw_schedule_after(struct tw_wheel *w, struct tw_timer *t,
                                uint64_t delay);

/*
 * Move t to a new deadline in O(1): a pending timer is unlinked and put
 * where the new deadline belongs (never added twice); a timer that is not
 * pending is scheduled. Returns 1 if t was pending, 0 if it was not, or
 * -EINVAL (NULL w or t, NULL callback as for tw_schedule()), changing
 * nothing.
 */
TW_PUBLIC int tw_rearm(struct tw_wheel *w, struct tw_timer *t,
                       uint64_t deadline);

/* tw_rearm() at the wheel's current time + delay, saturating; counted
 * from the last advance, as tw_schedule_after() is: in an event loop use
 * tw_loop_rearm_after() (timewheel/loop.h). */
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
 * pending; a never-scheduled timer answers 0, a timer no longer pending its
 * last deadline unless its owner wrote over it (struct tw_timer). NULL: 0. */
TW_PUBLIC uint64_t tw_timer_deadline(const struct tw_timer *t);

/* ---- time ------------------------------------------------------------------
 */

/* The wheel's current time: the latest time given to an advance, or the
 * start time. NULL: 0. */
TW_PUBLIC uint64_t tw_now(const struct tw_wheel *w);

/* Number of pending timers, including those due and not yet run. NULL: 0. */
TW_PUBLIC size_t tw_pending(const struct tw_wheel *w);

/* The general advance behind tw_advance() and tw_advance_bounded(), with
 * every check of their contract. Not an API of its own: call those. */
TW_PUBLIC int64_t tw__advance(struct tw_wheel *w, uint64_t now,
                              uint64_t max_run);

/* The idle advance is the common case: laid out as the straight path, so
 * that it takes no branch (where the compiler knows how). */
#if defined(__GNUC__) || defined(__clang__)
#define TW__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define TW__LIKELY(x) (x)
#endif

#ifdef TW__ADVANCE_EXTERN
/* Only lib/core/advance.c, which defines the exported twins of the two
 * inline functions below. */
TW_PUBLIC int64_t tw_advance(struct tw_wheel *w, uint64_t now);
TW_PUBLIC int64_t tw_advance_bounded(struct tw_wheel *w, uint64_t now,
                                     uint64_t max_run);
#else
/*
 * Advance the wheel to time now and run every callback that is due, in
 * order of due tick. Returns how many ran, or a negative code changing
 * nothing: -EINVAL (NULL w), -ERANGE (now is earlier than tw_now(w)),
 * -EBUSY (called from a callback or visitor of this wheel).
 *
 * Inline: an advance to a time before the next piece of work (the head's
 * idle_ns) only records the time and returns 0, with no call, since an
 * event loop ticking through empty time makes millions of them; any other
 * goes to tw__advance(). The library also exports tw_advance and
 * tw_advance_bounded as functions that answer exactly the same, for
 * bindings that cannot use an inline function (ctypes, bindgen, dlsym).
 */
static inline int64_t tw_advance(struct tw_wheel *w, uint64_t now)
{
    /* struct tw_wheel opens with its head (C11 6.7.2.1: a pointer to a
     * struct, suitably converted, points to its first member). */
    struct tw_wheel_head *h = (struct tw_wheel_head *)(void *)w;

    if (TW__LIKELY(w && now < h->idle_ns && now >= h->now)) {
        h->now = now;
        return 0;
    }
    return tw__advance(w, now, UINT64_MAX);
}

/*
 * As tw_advance(), but run at most max_run callbacks; timers left over stay
 * due and run first on the next advance (with the same or a later now), so
 * a burst can be spread across calls. max_run 0 is -EINVAL. Inline, as
 * tw_advance().
 */
static inline int64_t tw_advance_bounded(struct tw_wheel *w, uint64_t now,
                                         uint64_t max_run)
{
    struct tw_wheel_head *h = (struct tw_wheel_head *)(void *)w;

    if (TW__LIKELY(w && now < h->idle_ns && now >= h->now && max_run)) {
        h->now = now;
        return 0;
    }
    return tw__advance(w, now, max_run);
}
#endif

/*
 * As tw_advance_bounded(), and also bound the wheel's own work in this call,
 * which max_run does not: when a coarse slot of a hierarchical wheel comes
 * due, tw_advance() and tw_advance_bounded() move every timer in it one
 * level down or more in one call (a slot of 10^6 timers is milliseconds),
 * and a hashed wheel walks every tick up to now. Here the call stops after
 * about max_work units of that work: one per timer moved between levels or
 * re-inserted after being deferred, one per tick or slot collected (a
 * hashed tick walks its whole bucket). Each unit is constant time, so a
 * call takes at most max_run callbacks plus max_work units, however many
 * timers the wheel holds.
 *
 * The wheel is left exactly where the next call continues, with the same or
 * a later now: work is left while tw_next_deadline(w) <= tw_now(w). Calling
 * again until then runs the timers one tw_advance() would have run, in
 * order of due tick. A timer a callback schedules at or before now is
 * deferred, as with tw_advance(), and runs in a later call (so such a loop
 * runs it too: a callback that always re-arms itself at now keeps it
 * going). No timer fires early; while a demotion is spread over calls, the
 * wheel does not move past the start of the slot being demoted, so a timer
 * due in that slot may fire as late as one tick plus the time those calls
 * take (docs/benchmarks.md, "Scale", measures it). Schedule, re-arm, cancel,
 * visit and drain work between the calls as at any time; tw_advance() and
 * tw_advance_bounded() finish a demotion left over before anything else.
 *
 * Returns the callbacks run, or a negative code changing nothing: -EINVAL
 * (NULL w, max_run or max_work 0), -ERANGE (now earlier than tw_now(w)),
 * -EBUSY (from a callback or visitor of this wheel). Like tw_advance(), it
 * only records the time when nothing can be due before now.
 */
TW_PUBLIC int64_t tw_advance_sliced(struct tw_wheel *w, uint64_t now,
                                    uint64_t max_run, uint64_t max_work);

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
 * called from it return -EBUSY, destroy -EDEADLK. Returns 0 after a full walk,
 * the first non-zero value fn returned, or -EINVAL for NULL w or fn.
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

#ifdef __cplusplus
}
#endif

#endif /* TIMEWHEEL_CORE_H */
