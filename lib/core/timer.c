/*
 * Timer operations: initialise, schedule, re-arm, cancel and query. All O(1).
 *
 * Placement is shared by both designs: a timer whose due tick has already
 * been reached goes on the deferred list (so that it runs on the next advance
 * and never in the advance that scheduled it); any other goes into the
 * design's slots. Removal is a list unlink; when it empties a slot of the
 * hierarchical wheel, that slot's occupancy bit is cleared.
 *
 * Whether a timer is pending is link.next alone, and a timer's deadline is
 * read only once link.next has said it is: while it is not pending, the
 * deadline field is the caller's (timewheel/core.h). On a wheel with an
 * expiry function the callback may be NULL (wheel.c).
 */
#include <errno.h>

#include "insert.h"
#include "list.h"
#include "sat.h"
#include "wheel.h"

TW_PUBLIC void tw_timer_init(struct tw_timer *t, tw_callback *cb, void *arg)
{
    if (!t)
        return;
    t->link.next = NULL;
    t->link.prev = NULL;
    t->deadline = 0;
    t->cb = cb;
    t->arg = arg;
}

TW_PUBLIC bool tw_timer_pending(const struct tw_timer *t)
{
    return t && t->link.next;
}

TW_PUBLIC uint64_t tw_timer_deadline(const struct tw_timer *t)
{
    return t ? t->deadline : 0;
}

/* The general placement: deferred, the hashed wheel, or any level. */
static void place(struct tw_wheel *w, struct tw_timer *t, uint64_t deadline)
{
    t->deadline = deadline;
    if (deadline <= w->defer_ns) {
        tw__list_push_back(&w->deferred, &t->link);
        w->head.idle_ns = 0; /* the next advance must flush it */
    } else
        tw__insert(w, t);
    w->count++;
}

static void remove_timer(struct tw_wheel *w, struct tw_timer *t)
{
    struct tw_link *emptied = tw__list_unlink(&t->link);

    if (emptied && w->mode == TW_HIER)
        tw__hier_emptied(w, emptied);
    w->count--;
}

/*
 * The fast paths of schedule and re-arm, taken in the common case: the
 * deadline is after w->fast_ns and its slot is already occupied, so no bit
 * changes. Then insertion is a few comparisons, one multiplication and
 * four stores, with no call: the compiler saves no register.
 *
 * w->fast_ns is the deferral bound of a hierarchical wheel that no visitor
 * walks, and UINT64_MAX otherwise (hashed, or visiting): one comparison
 * sends deferred timers, the hashed wheel and calls from a visitor to the
 * general path, which sorts them out and returns the errors. Past it, the
 * call cannot fail, so the new deadline is stored at once and the paths
 * out of line read it from the timer: the deadline is then not needed
 * after the multiplication, which takes two fixed registers on x86-64, and
 * no argument is moved on the way in or out. A deadline in a level placed
 * by due tick needs no test of its own: its quotient is 0, and slot 0 of
 * a level is always empty (wheel.h), so it takes the empty-slot path.
 */
static inline const struct tw__place *fast_level(const struct tw_wheel *w,
                                                 uint64_t d)
{
    const struct tw__place *p = w->place;

    while (d > p->last_ns)
        p++;
    return p;
}

__attribute__((noinline)) static int
schedule_slow(struct tw_wheel *w, struct tw_timer *t, uint64_t deadline)
{
    if (w->busy & TW__VISITING)
        return -EBUSY;
    place(w, t, deadline);
    return 0;
}

__attribute__((noinline)) static int
rearm_slow(struct tw_wheel *w, struct tw_timer *t, uint64_t deadline)
{
    int was_pending = t->link.next != NULL;

    if (!w->expire && !t->cb)
        return -EINVAL;
    if (w->busy & TW__VISITING)
        return -EBUSY;
    if (was_pending)
        remove_timer(w, t);
    place(w, t, deadline);
    return was_pending;
}

/* The general path of a re-arm past the fast path's tests, its new
 * deadline stored in the timer: the new slot was empty, the level is
 * placed by due tick, or the timer leaves a list it was the last of. It is
 * a tail call, and so are the calls above from the fast paths: the general
 * functions end in their return value for that. */
__attribute__((noinline)) static int rearm_placed(struct tw_wheel *w,
                                                  struct tw_timer *t)
{
    return rearm_slow(w, t, t->deadline);
}

/* A schedule past the fast path's test into an empty slot: the slot, found
 * already, is marked occupied here, where the general path would find it
 * again from the deadline. Timers spread thinly over level 0 (a second's
 * worth of timeouts in 1000 slots) take this path for most schedules. A
 * level placed by due tick (mult 0) goes the general way: its slot is not
 * known from the quotient (wheel.h). */
__attribute__((noinline)) static int schedule_empty(struct tw_wheel *w,
                                                    struct tw_timer *t,
                                                    const struct tw__place *p,
                                                    struct tw_link *head)
{
    if (!p->mult)
        return schedule_slow(w, t, t->deadline);
    tw__hier_occupy(w, (unsigned)(p - w->place), (uint32_t)(head - p->slot0));
    tw__list_push_back(head, &t->link);
    w->count++;
    return 0;
}

static uint64_t after(const struct tw_wheel *w, uint64_t delay)
{
    return tw__add_sat(w->head.now, delay);
}

TW_PUBLIC int tw_schedule(struct tw_wheel *w, struct tw_timer *t,
                          uint64_t deadline)
{
    const struct tw__place *p;
    struct tw_link *head;

    /* The expiry function is tested first: with one, the timer's cb is the
     * embedder's (tw_set_expiry()), which may be writing it now. */
    if (!w || !t || (!w->expire && !t->cb))
        return -EINVAL;
    if (t->link.next)
        return -EBUSY;
    if (deadline <= w->fast_ns)
        return schedule_slow(w, t, deadline);
    t->deadline = deadline;
    p = fast_level(w, deadline);
    head = p->slot0 + tw__place_slot(p, deadline);
    if (tw__list_empty(head))
        return schedule_empty(w, t, p, head);
    tw__list_push_back(head, &t->link);
    w->count++;
    return 0;
}

TW_PUBLIC int tw_schedule_after(struct tw_wheel *w, struct tw_timer *t,
                                uint64_t delay)
{
    return w ? tw_schedule(w, t, after(w, delay)) : -EINVAL;
}

TW_PUBLIC int tw_rearm(struct tw_wheel *w, struct tw_timer *t,
                       uint64_t deadline)
{
    const struct tw__place *p;
    struct tw_link *prev, *next, *head;
    uint64_t s, lo;
    bool same;

    if (!w || !t)
        return -EINVAL;
    /* Fast: a pending timer (which has a callback: schedule refused it
     * otherwise; rearm_slow() checks the others), to a deadline that is
     * not deferred (see fast_level()). */
    if (!t->link.next || deadline <= w->fast_ns)
        return rearm_slow(w, t, deadline);
    p = fast_level(w, deadline);
    s = tw__place_slot(p, deadline);
    lo = p->org_ns + s * p->width_ns; /* the new slot's first deadline */
    /* Still in the same slot, as when an idle timeout moves a little
     * later (Linux's mod_timer() does the same): only the deadline
     * changes, and neither list neighbour is touched. A timer whose old
     * deadline lies in the new slot's range is in that slot, if it is in
     * the slots at all: the slot lies after cur, so an expired timer
     * never matches. A deferred one may, and then stays deferred with
     * its new deadline: the next advance re-examines every deferred
     * timer and places it by its deadline (advance.c), where this one
     * would have gone, and it is not due before then. A level placed by
     * due tick has width_ns 0 and never matches. The test is two-sided:
     * the slot that holds UINT64_MAX may reach past 2^64, and then a
     * deadline far in the past (an expired timer's, 0 say) would land in
     * its range modulo 2^64 and stay due (issue 22, defect 6). */
    same = t->deadline >= lo && t->deadline - lo < p->width_ns;
    t->deadline = deadline;
    if (same)
        return 1;
    head = p->slot0 + s;
    next = t->link.next;
    prev = t->link.prev;
    /* Leaving a list that keeps other timers for an occupied slot
     * changes no bit; anything else takes the general path. */
    if (prev == next || tw__list_empty(head))
        return rearm_placed(w, t);
    /* Unlinked and relinked with the count unchanged; if the new slot is
     * the timer's own list, it goes to the tail, as a cancel and
     * schedule would put it. */
    prev->next = next;
    next->prev = prev;
    tw__list_push_back(head, &t->link);
    return 1;
}

TW_PUBLIC int tw_rearm_after(struct tw_wheel *w, struct tw_timer *t,
                             uint64_t delay)
{
    return w ? tw_rearm(w, t, after(w, delay)) : -EINVAL;
}

__attribute__((noinline)) static int cancel_slow(struct tw_wheel *w,
                                                 struct tw_timer *t)
{
    if (!t->link.next)
        return 0;
    remove_timer(w, t);
    return 1;
}

TW_PUBLIC int tw_cancel(struct tw_wheel *w, struct tw_timer *t)
{
    struct tw_link *prev, *next;

    if (!w || !t)
        return -EINVAL;
    if (w->busy & TW__VISITING)
        return -EBUSY;
    next = t->link.next;
    prev = t->link.prev;
    /* Both links are NULL when t is not pending; otherwise they are equal
     * when t is the last timer of its list, and leaving may empty a slot,
     * whose bit then changes. One test sends both to cancel_slow(). */
    if (prev == next)
        return cancel_slow(w, t);
    prev->next = next;
    next->prev = prev;
    t->link.next = NULL;
    t->link.prev = NULL;
    w->count--;
    return 1;
}
