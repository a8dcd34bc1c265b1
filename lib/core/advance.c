/*
 * The advance driver, shared by both designs.
 *
 * One advance to time `now` (target tick T) does, in order:
 *   1. re-insert the deferred timers, now that the advance that scheduled
 *      them is over: those already due join the tail of the expired list,
 *      the others go into the slots like any timer;
 *   2. run callbacks from the head of the expired list, unlinking each
 *      timer before its callback runs (so it may re-arm itself); on a
 *      wheel with an expiry function (tw_set_expiry()) that function runs
 *      for each instead, and the timers' cb and arg are never read;
 *   3. ask the design to collect the next tick with work at or before T
 *      (a cascade, or a slot whose timers are due; an unbounded advance
 *      lets the hierarchical wheel take every due level-0 slot up to T in
 *      one pass), and go back to 2; stop when nothing is left at or
 *      before T.
 * An unbounded advance to a tick inside level 0's revolution, with nothing
 * deferred or expired, takes a shorter way to the same result
 * (level0_only(), below).
 * The expired list is filled one tick at a time, so callbacks run in order
 * of due tick. While callbacks run, any timer they schedule for a tick <= T
 * is deferred (timer.c), so an advance always ends. A bounded advance stops
 * after max_run callbacks with the wheel's tick wherever it got to; the next
 * advance carries on from there, the leftover expired timers first.
 *
 * A sliced advance (tw_advance_sliced()) also bounds the wheel's own work,
 * which max_run does not: a budget of max_work units, one per deferred
 * timer re-inserted, per collect step (a tick flushed, a slot reached, a
 * jump, a hashed tick walked) and per timer demoted. Steps 1 and 3 stop
 * when it is spent, leaving the wheel where the next call continues: the
 * deferred timers not yet flushed stay first on their list (and nothing is
 * collected while any is left, so none can be overtaken), a demotion cut
 * short stays on the hierarchical wheel's demoting list (hier.c). Every
 * unit is O(1), so a call's time is bounded by max_run callbacks and
 * max_work units, whatever the wheel holds. A general advance finishes any
 * demotion a sliced one left (tw__hier_demote_rest()), then works as above.
 *
 * Most advances of an event loop reach no work. The wheel's head
 * (struct tw_wheel_head, public in timewheel/core.h) holds idle_ns, the
 * time before which an advance has nothing to do, set at the end of each
 * general advance (idle_until) and lowered by anything that brings work
 * earlier. tw_advance() and tw_advance_bounded() are inline in the header:
 * before idle_ns they only record the time, in the caller's code; any other
 * advance calls tw__advance() here. The exported functions of the same
 * names, at the end of this file, make the same check for callers that
 * cannot inline.
 */
/* This file defines the exported twins of the inline tw_advance() and
 * tw_advance_bounded() (timewheel/core.h): the header declares them as
 * functions here instead of defining them inline. */
#define TW__ADVANCE_EXTERN 1

#include <errno.h>

#include "insert.h"
#include "list.h"
#include "wheel.h"

/* Put one deferred timer where it now belongs (step 1). */
static inline __attribute__((always_inline)) void flush_one(struct tw_wheel *w,
                                                            uint64_t due_ns)
{
    struct tw_timer *t = tw__list_timer(w->deferred.next);

    tw__list_unlink(&t->link);
    if (t->deadline <= due_ns)
        tw__list_push_back(&w->expired, &t->link);
    else
        tw__insert(w, t);
}

/* Step 1: every deferred timer. */
static void flush_deferred(struct tw_wheel *w)
{
    uint64_t due_ns = tw__tick_time(w, w->cur);

    while (!tw__list_empty(&w->deferred))
        flush_one(w, due_ns);
}

/* Step 1 of a sliced advance: at most budget timers; returns how many. */
static uint64_t flush_deferred_some(struct tw_wheel *w, uint64_t budget)
{
    uint64_t due_ns = tw__tick_time(w, w->cur), n = 0;

    for (; n < budget && !tw__list_empty(&w->deferred); n++)
        flush_one(w, due_ns);
    return n;
}

/* Run due timers: through fn(t, ctx) when fn is given (the wheel's expiry
 * function), else through each timer's own callback. Inlined twice through
 * drive(), with fn a constant NULL once, so that a wheel without an expiry
 * function runs the loop it always ran, with no test per timer. fn cannot
 * change during an advance (tw_set_expiry() refuses while busy). */
static inline __attribute__((always_inline)) uint64_t
run_loop(struct tw_wheel *w, uint64_t budget, tw_callback *fn, void *ctx)
{
    uint64_t ran = 0;

    while (ran < budget && !tw__list_empty(&w->expired)) {
        struct tw_timer *t = tw__list_timer(w->expired.next);

        tw__list_unlink(&t->link);
        w->count--;
        if (fn)
            fn(t, ctx);
        else
            t->cb(t, t->arg);
        ran++;
    }
    return ran;
}

/* An unbounded advance may collect many ticks at once: nothing can tell,
 * since it runs them all before it returns. */
static bool collect_next(struct tw_wheel *w, uint64_t target, bool batch)
{
    return w->mode == TW_HIER ? tw__hier_collect(w, target, batch)
                              : tw__hashed_collect(w, target);
}

/* Steps 2 and 3 until nothing is left at or before target or max_run
 * callbacks ran; fn as for run_loop(), so that the choice between the
 * expiry function and the timers' callbacks is made once per advance, not
 * once per tick (a hashed advance across an hour walks 3.6 million). */
static inline __attribute__((always_inline)) uint64_t
drive(struct tw_wheel *w, uint64_t target, uint64_t max_run, tw_callback *fn,
      void *ctx)
{
    uint64_t ran = 0;

    for (;;) {
        ran += run_loop(w, max_run - ran, fn, ctx);
        /* The slots hold only timers due after cur (wheel.h), and the
         * callbacks cannot put one at or before the target (they are
         * deferred): once cur is there, a collect would find nothing. */
        if (ran == max_run || w->cur == target ||
            !collect_next(w, target, max_run == INT64_MAX))
            return ran;
    }
}

/* drive() for a wheel with an expiry function, out of line: inlined into
 * tw__advance() beside the other instance, it made the two share spilled
 * counters, two loads more per tick for every wheel. */
__attribute__((noinline)) static uint64_t
drive_expiry(struct tw_wheel *w, uint64_t target, uint64_t max_run)
{
    return drive(w, target, max_run, w->expire, w->expire_ctx);
}

/* The time before which an advance has nothing to do, while the due lists
 * are empty (0, never, otherwise): for the hierarchical wheel the boundary
 * of the next piece of work in its slots; for the hashed wheel, which must
 * walk every tick while anything is pending, the boundary of the next tick,
 * so that only advances within the tick already reached take the inline
 * path. */
static inline __attribute__((always_inline)) uint64_t
idle_until(const struct tw_wheel *w)
{
    uint64_t tick;

    if (!tw__list_empty(&w->expired) || !tw__list_empty(&w->deferred))
        return 0;
    if (w->mode == TW_HASHED)
        return w->cur < w->max_tick ? tw__tick_time(w, w->cur + 1) : UINT64_MAX;
    tick = tw__hier_next_tick(w);
    return tick == UINT64_MAX ? UINT64_MAX : tw__tick_time(w, tick);
}

/* Steps 2 and 3 of a sliced advance, with max_work units (the top of the
 * file): one loop for both kinds of wheel and with or without an expiry
 * function, as its budget, not its speed, is what matters. Out of line so
 * that the general advance's loop stays as it was. */
__attribute__((noinline)) static uint64_t
drive_sliced(struct tw_wheel *w, uint64_t target, uint64_t max_run,
             uint64_t work, bool blocked)
{
    uint64_t ran = 0;

    for (;;) {
        ran += run_loop(w, max_run - ran, w->expire, w->expire_ctx);
        if (ran == max_run || blocked)
            return ran;
        if (w->mode == TW_HIER) {
            if (!tw__hier_collect_sliced(w, target, &work))
                return ran;
        } else if (w->count == 0) {
            /* Nothing in the buckets: no tick needs walking, and the
             * hashed wheel's next tick must be the target's (wheel.c). */
            w->cur = target;
            return ran;
        } else if (work == 0 || (work--, !tw__hashed_collect(w, target))) {
            return ran;
        }
    }
}

/* The tick that now has reached (tw__time_tick()). An event loop's
 * advances mostly stay in level 0's revolution: there the level's
 * reciprocal (wheel.h) gives it with a multiplication instead of a
 * division, whose latency every later step of the advance waited for. The
 * due tick of now + 1 is that tick plus one, and it lies in level 0 when
 * now is below the level's last boundary; it is not below the level's
 * base, since now >= head.now has reached cur (check.c). A level 0
 * placed by due tick (mult 0), the hashed wheel (whose places are unset)
 * and the end of time divide. */
static inline __attribute__((always_inline)) uint64_t
target_tick(const struct tw_wheel *w, uint64_t now)
{
    const struct tw__place *p = w->place;

    if (w->mode == TW_HIER && now < p->last_ns && p->mult)
        return w->levels[0].base - 1 + tw__place_slot(p, now + 1);
    return tw__time_tick(w, now);
}

/* What every advance checks and sets before it drives; 0 to go on, or the
 * error, changing nothing. Returns the target tick in *target. */
static inline __attribute__((always_inline)) int
begin(struct tw_wheel *w, uint64_t now, uint64_t max_run, uint64_t *target)
{
    if (!w || max_run == 0)
        return -EINVAL;
    if (w->busy)
        return -EBUSY;
    if (now < w->head.now)
        return -ERANGE;
    w->head.now = now;
    w->head.idle_ns = 0; /* closes the inline path until the end */
    *target = target_tick(w, now);
    return 0;
}

/* What every advance sets once it has driven. Only a sliced advance can
 * leave a demotion under way (a general one finishes it first): then an
 * advance has work to do at once. Inlined into both advances, as begin()
 * and idle_until(), so that the general one runs the code it ran before
 * the sliced one shared it. */
static inline __attribute__((always_inline)) void finish(struct tw_wheel *w,
                                                         bool sliced)
{
    w->busy &= ~TW__ADVANCING;
    /* Outside an advance only ticks up to cur are due (timer.c). */
    tw__set_defer(w, tw__tick_time(w, w->cur));
    w->head.idle_ns =
        sliced && !tw__list_empty(&w->demoting) ? 0 : idle_until(w);
}

/* An unbounded advance of a hierarchical wheel without an expiry function,
 * to a target in level 0's current revolution, with nothing deferred,
 * expired or being demoted: an event loop's advance onto a tick with work.
 * The driver above would collect once and run the callbacks; this does the
 * same with no test it can answer beforehand: one collect takes every due
 * level-0 tick and moves cur to the target (the levels above start after
 * that revolution), and the callbacks cannot add work at or before the
 * target (they defer it). */
static inline __attribute__((always_inline)) bool
level0_only(const struct tw_wheel *w, uint64_t target, uint64_t max_run)
{
    return w->mode == TW_HIER && max_run >= INT64_MAX && !w->expire &&
           target <= w->levels[0].last && tw__list_empty(&w->deferred) &&
           tw__list_empty(&w->expired) && tw__list_empty(&w->demoting);
}

/* The driver's way, out of line: the level-0 way of tw__advance() then
 * saves only the registers it uses. */
__attribute__((noinline)) static int64_t
advance_driven(struct tw_wheel *w, uint64_t target, uint64_t max_run)
{
    uint64_t ran;

    if (max_run > INT64_MAX)
        max_run = INT64_MAX;
    if (!tw__list_empty(&w->demoting))
        tw__hier_demote_rest(w);
    flush_deferred(w);
    tw__set_defer(w, tw__tick_time(w, target));
    w->busy |= TW__ADVANCING;
    if (w->expire)
        ran = drive_expiry(w, target, max_run);
    else
        ran = drive(w, target, max_run, NULL, NULL);
    finish(w, false);
    return (int64_t)ran;
}

/* The general advance: every check, then the level-0 way or the driver
 * described above. Exported for the inline advances of timewheel/core.h,
 * which call it whenever the wheel's head says there may be work. */
TW_PUBLIC int64_t tw__advance(struct tw_wheel *w, uint64_t now,
                              uint64_t max_run)
{
    uint64_t target, ran;
    int rc = begin(w, now, max_run, &target);

    if (rc)
        return rc;
    if (!level0_only(w, target, max_run))
        return advance_driven(w, target, max_run);
    tw__set_defer(w, tw__tick_time(w, target));
    w->busy |= TW__ADVANCING;
    tw__hier_collect_level0(w, target);
    ran = run_loop(w, INT64_MAX, NULL, NULL);
    finish(w, false);
    return (int64_t)ran;
}

TW_PUBLIC int64_t tw_advance_sliced(struct tw_wheel *w, uint64_t now,
                                    uint64_t max_run, uint64_t max_work)
{
    uint64_t target, ran, moved;
    int rc;

    if (TW__LIKELY(w && now < w->head.idle_ns && now >= w->head.now &&
                   max_run && max_work)) {
        w->head.now = now;
        return 0;
    }
    rc = max_work ? begin(w, now, max_run, &target) : -EINVAL;
    if (rc)
        return rc;
    if (max_run > INT64_MAX)
        max_run = INT64_MAX;
    moved = flush_deferred_some(w, max_work);
    tw__set_defer(w, tw__tick_time(w, target));
    w->busy |= TW__ADVANCING;
    ran = drive_sliced(w, target, max_run, max_work - moved,
                       !tw__list_empty(&w->deferred));
    /* A hashed wheel that has nothing left is at the target: whatever
     * stopped the drive, no tick is left to walk. */
    if (w->mode == TW_HASHED && w->count == 0)
        w->cur = target;
    finish(w, true);
    return (int64_t)ran;
}

/*
 * The inline advances of timewheel/core.h: an advance to a time before
 * idle_ns has nothing to do, and only records the time, leaving cur where
 * it was. That is safe because nothing lies between: no slot holds work at
 * or before the target tick, the due lists are empty, and idle_ns is 0
 * while an advance or a visit runs (so -EBUSY still comes from the general
 * path). A timer scheduled afterwards with a deadline the wheel's time has
 * passed but cur has not is placed at its own due tick, which the next
 * advance reaches first: it runs at the next advance, as the contract says.
 * Anything that may bring work earlier lowers idle_ns: a slot that stops
 * being empty (tw__hier_occupy) or a deferred timer (timer.c); removing
 * work leaves it low, which only sends the next advance down the general
 * path. The functions below are the same check, exported for callers that
 * cannot inline (bindings, programs built against 0.1.0).
 */
TW_PUBLIC int64_t tw_advance_bounded(struct tw_wheel *w, uint64_t now,
                                     uint64_t max_run)
{
    if (TW__LIKELY(w && now < w->head.idle_ns && now >= w->head.now &&
                   max_run)) {
        w->head.now = now;
        return 0;
    }
    return tw__advance(w, now, max_run);
}

TW_PUBLIC int64_t tw_advance(struct tw_wheel *w, uint64_t now)
{
    return tw_advance_bounded(w, now, UINT64_MAX);
}
