/*
 * The wheel object shared by both designs, and the internal interface between
 * the mode-independent driver (advance.c), the wheel object (wheel.c) and
 * the two designs (hier.c, hashed.c). Never installed.
 *
 * Time inside the wheel is counted in ticks since start_ns. A timer's due
 * tick is the first tick boundary at or after its deadline:
 *     due = ceil((deadline - start_ns) / tick_ns), 0 for a deadline <= start.
 * `cur` is the last tick the wheel has processed. Every pending timer sits in
 * exactly one list:
 *   - expired:  collected because due, waiting for its callback to run;
 *   - deferred: scheduled when already due (in the past, or from a callback
 *               to a tick the running advance has reached); re-inserted at
 *               the start of the next advance so that it cannot run in the
 *               advance that scheduled it;
 *   - demoting: (hierarchical, sliced advances only) taken from a coarse
 *               slot whose start cur has reached, not yet put one level
 *               down or more; due tick in [cur, demote_last]. While it holds
 *               a timer, cur stays where it is (hier.c, "sliced demotion");
 *   - a slot of the design's wheel, due tick > cur.
 */
#ifndef TW_WHEEL_H
#define TW_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bitmap.h"
#include "timewheel/core.h"

/* Levels a hierarchical wheel can need: 64 is enough for 2-slot levels over
 * 64-bit ticks, the finest layout allowed. */
#define TW__LEVELS_MAX 64
/* Slots of each level added beyond the configured ones. */
#define TW__EXTRA_LEVEL_SLOTS 64u

/* Flags in tw_wheel.busy: what is running on the wheel's stack. */
#define TW__ADVANCING 1u /* an advance is running callbacks */
#define TW__VISITING 2u  /* tw_visit() or tw_drain() walks the lists */

/* One level of the hierarchical wheel. Its current revolution ("block") is
 * the range of ticks [base, last] that share every digit above this level
 * with cur; slot s covers ticks base + s * width .. base + (s + 1) * width - 1.
 * Occupied slots are always after pos, the digit of cur at this level.
 *
 * Insertion reads only the level's tw__place (below). */
struct tw__level {
    uint64_t width; /* ticks per slot */
    uint64_t span;  /* ticks per revolution, UINT64_MAX if more */
    uint64_t base;  /* first tick of the current revolution */
    uint64_t last;  /* last tick of the current revolution (saturated) */
    uint32_t nslots;
    uint32_t first; /* index of slot 0 in tw_wheel.slots */
    uint32_t pos;   /* cur's slot at this level */
    uint32_t unused;
    struct tw__bitmap bits;
};

/* What insertion reads of level k, in ns, so that it never divides and
 * never computes a due tick (but in the top levels, below). A deadline d
 * belongs to the lowest level with d <= last_ns (the boundary of its last tick,
 * saturated). A deadline d > start with due tick e in [base, last] lies in slot
 *     (e - base) / width = (d - org_ns) / width_ns,
 * with org_ns = start + 1 + (base - 1) * tick (mod 2^64) and width_ns =
 * width * tick, since d - org_ns = (e - base) * tick + r with 0 <= r < tick,
 * below span * tick.
 *
 * That quotient is taken without a division (a 64-bit divide costs several
 * times a multiply on current cores, and it was the longest step of a
 * schedule): with n = d - org_ns,
 *     n / width_ns = (2n) / (2 width_ns) = mulhi(2n, mult) >> shift,
 * where mulhi is the high word of the 128-bit product, 2n is computed as
 * 2d - org2_ns (mod 2^64), and mult = floor(2^(64 + shift) / (2 width_ns))
 * + 1 with the largest shift that keeps mult in 64 bits. Granlund and
 * Montgomery's bound makes the quotient exact for every 2n * err <
 * 2^(64 + shift), err = mult * 2 width_ns - 2^(64 + shift); add_level()
 * (hier.c) checks it for the largest n of the level. Doubling n keeps a
 * level one tick of 1 ns wide exact, whose multiplier would otherwise be
 * 2^64.
 *
 * Where the bound fails or span * tick does not fit 64 bits (the top levels
 * of a layout) width_ns and mult are 0: the quotient is then 0, and slot 0
 * of a level is always empty (occupied slots lie after pos), so the fast
 * paths of timer.c find an empty slot and take the general path, which
 * places by due tick. No test of the level is needed on the fast paths.
 * 56 bytes each, in an array apart from the levels. */
struct tw__place {
    uint64_t last_ns;
    uint64_t org2_ns;      /* 2 * org_ns, mod 2^64 */
    uint64_t mult;         /* 0: place by due tick */
    struct tw_link *slot0; /* the level's first slot head */
    unsigned shift;
    uint64_t org_ns;   /* the re-arm's same-slot test (timer.c) */
    uint64_t width_ns; /* 0: place by due tick */
};

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 tw__u128;
/* The high 64 bits of a * b. */
static inline uint64_t tw__mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((tw__u128)a * b) >> 64);
}
#else
static inline uint64_t tw__mulhi(uint64_t a, uint64_t b)
{
    uint64_t a0 = a & UINT32_MAX, a1 = a >> 32;
    uint64_t b0 = b & UINT32_MAX, b1 = b >> 32;
    uint64_t mid = (a0 * b0 >> 32) + (a1 * b0 & UINT32_MAX) + a0 * b1;

    return a1 * b1 + (a1 * b0 >> 32) + (mid >> 32);
}
#endif

/* The slot of d at the level of p, for a d that belongs to it; 0 where
 * the level places by due tick (above). */
static inline uint64_t tw__place_slot(const struct tw__place *p, uint64_t d)
{
    return tw__mulhi(2 * d - p->org2_ns, p->mult) >> p->shift;
}

struct tw_wheel {
    /* First, as timewheel/core.h promises: head.now is the latest time
     * given to an advance (tw_now()); head.idle_ns the time before which
     * an advance has nothing to do, read by the inline tw_advance() and
     * kept by advance.c; 0 closes that fast path. */
    struct tw_wheel_head head;
    enum tw_mode mode;
    unsigned busy; /* TW__ADVANCING | TW__VISITING */
    uint64_t tick_ns;
    uint64_t start_ns;
    uint64_t cur;        /* last tick processed */
    uint64_t max_tick;   /* due tick of UINT64_MAX: the end of time */
    uint64_t tick_limit; /* largest k with start + k * tick in 64 bits */
    uint64_t defer_ns;   /* deadlines <= this are deferred: the boundary of the
                          * target tick while advancing, of cur otherwise */
    uint64_t fast_ns;    /* defer_ns, or UINT64_MAX when the fast path of
                          * schedule and re-arm is closed (timer.c) */
    size_t count;        /* pending timers */
    struct tw_link expired;
    struct tw_link deferred;
    struct tw_link *slots; /* every slot head of every level, finest first */
    size_t nslots;
    uint64_t *words; /* bitmap words of every level (hier) */
    size_t nwords;
    /* hierarchical */
    uint64_t occupied; /* bit k: level k holds a timer */
    unsigned nlevels;
    unsigned nexact; /* levels with width_ns > 0: the lowest ones */
    struct tw__place place[TW__LEVELS_MAX];
    struct tw__level levels[TW__LEVELS_MAX];
    /* hashed */
    uint64_t mask;  /* slots - 1 */
    unsigned shift; /* log2(slots) */
    /* tw_set_expiry(): called for due timers instead of their callbacks;
     * last, read once per advance (advance.c) */
    tw_callback *expire;
    void *expire_ctx;
    /* Sliced demotion (hier.c): the timers of a coarse slot not yet put
     * lower, and that slot's last tick. Empty unless a sliced advance's
     * demotion is under way, which may last across calls. Every general
     * advance looks at it, beside the expiry function: at the end, so that
     * the offsets of the fields the hot paths read stay as they were (the
     * code generated for them did not stay the same when they moved). */
    struct tw_link demoting;
    uint64_t demote_last;
};

/* The inline advance of timewheel/core.h reads the head through a cast. */
_Static_assert(offsetof(struct tw_wheel, head) == 0,
               "struct tw_wheel_head must open struct tw_wheel");

/* Due tick of an absolute deadline (see above); never above max_tick. */
static inline uint64_t tw__due_tick(const struct tw_wheel *w, uint64_t deadline)
{
    /* ceil(x / tick) as floor((x - 1) / tick) + 1: one division, no
     * remainder test, and no overflow since x >= 1 here. */
    if (deadline <= w->start_ns)
        return 0;
    return (deadline - w->start_ns - 1) / w->tick_ns + 1;
}

/* Time of tick boundary k, saturating at UINT64_MAX. A timer is due at
 * tick k exactly when its deadline is <= tw__tick_time(w, k). */
static inline uint64_t tw__tick_time(const struct tw_wheel *w, uint64_t tick)
{
    return tick > w->tick_limit ? UINT64_MAX : w->start_ns + tick * w->tick_ns;
}
/* The tick a time has reached: floor, except UINT64_MAX reaches max_tick. */
uint64_t tw__time_tick(const struct tw_wheel *w, uint64_t time);
/* Write a formatted invariant failure into why; returns -EPROTO
 * (error.c, beside the other error texts). */
int tw__fail(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Set the deferral bound, and the fast-path bound that goes with it: open
 * only for a hierarchical wheel that no visitor walks (timer.c). */
static inline void tw__set_defer(struct tw_wheel *w, uint64_t ns)
{
    w->defer_ns = ns;
    w->fast_ns =
        w->mode == TW_HIER && !(w->busy & TW__VISITING) ? ns : UINT64_MAX;
}

/* Hierarchical design (hier.c; the insert is inline in insert.h). */
int tw__hier_layout(struct tw_wheel *w, const struct tw_config *cfg);
void tw__hier_emptied(struct tw_wheel *w, struct tw_link *head);
/* Collect the next tick with work at or before target (with batch, every
 * level-0 tick up to target); false when there is none and cur == target. */
bool tw__hier_collect(struct tw_wheel *w, uint64_t target, bool batch);
/* Every level-0 tick with work up to target, which lies in level 0's
 * current revolution, to the expired list in tick order, and cur to
 * target: an unbounded advance's whole collect there, since the levels
 * above start after that revolution. */
void tw__hier_collect_level0(struct tw_wheel *w, uint64_t target);
/* The same, in a sliced advance: one step of at most *work units (each
 * collect step one, each timer demoted one), *work lowered by what it
 * took; false when *work is spent or nothing is left at or before
 * target. A demotion the budget cuts short stays on w->demoting and
 * continues at the next call, before anything else is collected. */
bool tw__hier_collect_sliced(struct tw_wheel *w, uint64_t target,
                             uint64_t *work);
/* Put every timer left on w->demoting where it belongs: an advance that
 * does not bound its work finishes a sliced demotion first. */
void tw__hier_demote_rest(struct tw_wheel *w);
uint64_t tw__hier_next_tick(const struct tw_wheel *w);
int tw__hier_check(const struct tw_wheel *w, char *why, size_t len);

/* Hashed design (hashed.c). */
int tw__hashed_layout(struct tw_wheel *w, const struct tw_config *cfg);
bool tw__hashed_collect(struct tw_wheel *w, uint64_t target);
int tw__hashed_check(const struct tw_wheel *w, char *why, size_t len);

#endif /* TW_WHEEL_H */
