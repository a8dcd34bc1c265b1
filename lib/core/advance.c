/*
 * The advance driver, shared by both designs.
 *
 * One advance to time `now` (target tick T) does, in order:
 *   1. re-insert the deferred timers, now that the advance that scheduled
 *      them is over: those already due join the tail of the expired list,
 *      the others go into the slots like any timer;
 *   2. run callbacks from the head of the expired list, unlinking each
 *      timer before its callback runs (so it may re-arm itself);
 *   3. ask the design to collect the next tick with work at or before T
 *      (a cascade, or a slot whose timers are due; an unbounded advance
 *      lets the hierarchical wheel take every due level-0 slot up to T in
 *      one pass), and go back to 2; stop when nothing is left at or
 *      before T.
 * The expired list is filled one tick at a time, so callbacks run in order
 * of due tick. While callbacks run, any timer they schedule for a tick <= T
 * is deferred (timer.c), so an advance always ends. A bounded advance stops
 * after max_run callbacks with the wheel's tick wherever it got to; the next
 * advance carries on from there, the leftover expired timers first.
 */
#include <errno.h>

#include "insert.h"
#include "list.h"
#include "wheel.h"

static void flush_deferred(struct tw_wheel *w)
{
    uint64_t due_ns = tw__tick_time(w, w->cur);

    while (!tw__list_empty(&w->deferred)) {
        struct tw_timer *t = tw__list_timer(w->deferred.next);

        tw__list_unlink(&t->link);
        if (t->deadline <= due_ns)
            tw__list_push_back(&w->expired, &t->link);
        else
            tw__insert(w, t);
    }
}

static uint64_t run_expired(struct tw_wheel *w, uint64_t budget)
{
    uint64_t ran = 0;

    while (ran < budget && !tw__list_empty(&w->expired)) {
        struct tw_timer *t = tw__list_timer(w->expired.next);

        tw__list_unlink(&t->link);
        w->count--;
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

TW_PUBLIC int64_t tw_advance_bounded(struct tw_wheel *w, uint64_t now,
                                     uint64_t max_run)
{
    uint64_t target, ran = 0;

    if (!w || max_run == 0)
        return -EINVAL;
    if (w->busy)
        return -EBUSY;
    if (now < w->now)
        return -ERANGE;
    if (max_run > INT64_MAX)
        max_run = INT64_MAX;
    w->now = now;
    target = tw__time_tick(w, now);
    flush_deferred(w);
    tw__set_defer(w, tw__tick_time(w, target));
    w->busy |= TW__ADVANCING;
    for (;;) {
        ran += run_expired(w, max_run - ran);
        if (ran == max_run || !collect_next(w, target, max_run == INT64_MAX))
            break;
    }
    w->busy &= ~TW__ADVANCING;
    /* Outside an advance only ticks up to cur are due (timer.c). */
    tw__set_defer(w, tw__tick_time(w, w->cur));
    return (int64_t)ran;
}

TW_PUBLIC int64_t tw_advance(struct tw_wheel *w, uint64_t now)
{
    return tw_advance_bounded(w, now, UINT64_MAX);
}
