/*
 * Timer operations: initialise, schedule, re-arm, cancel and query. All O(1).
 *
 * Placement is shared by both designs: a timer whose due tick has already
 * been reached goes on the deferred list (so that it runs on the next advance
 * and never in the advance that scheduled it); any other goes into the
 * design's slots. Removal is a list unlink; when it empties a slot of the
 * hierarchical wheel, that slot's occupancy bit is cleared.
 */
#include <errno.h>

#include "insert.h"
#include "list.h"
#include "wheel.h"

TW_PUBLIC void tw_timer_init(struct tw_timer *t, tw_callback *cb, void *arg)
{
    if (!t)
        return;
    t->link.next = NULL;
    t->link.prev = NULL;
    t->deadline = 0;
    t->aux = 0;
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

__attribute__((always_inline)) static inline void
place(struct tw_wheel *w, struct tw_timer *t, uint64_t deadline)
{
    uint64_t due = tw__due_tick(w, deadline);

    t->deadline = deadline;
    if (due <= w->defer_to) {
        t->aux = due;
        tw__list_push_back(&w->deferred, &t->link);
    } else {
        tw__insert(w, t, due);
    }
    w->count++;
}

static inline void remove_timer(struct tw_wheel *w, struct tw_timer *t)
{
    struct tw_link *emptied = tw__list_unlink(&t->link);

    if (emptied && w->mode == TW_HIER)
        tw__hier_emptied(w, emptied);
    w->count--;
}

/* Common argument checks of the schedule and re-arm functions. */
static int check_args(const struct tw_wheel *w, const struct tw_timer *t)
{
    if (!w || !t || !t->cb)
        return -EINVAL;
    if (w->busy & TW__VISITING)
        return -EBUSY;
    return 0;
}

static uint64_t after(const struct tw_wheel *w, uint64_t delay)
{
    return delay > UINT64_MAX - w->now ? UINT64_MAX : w->now + delay;
}

TW_PUBLIC int tw_schedule(struct tw_wheel *w, struct tw_timer *t,
                          uint64_t deadline)
{
    int rc = check_args(w, t);

    if (rc)
        return rc;
    if (t->link.next)
        return -EBUSY;
    place(w, t, deadline);
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
    int rc = check_args(w, t);
    int was_pending;

    if (rc)
        return rc;
    was_pending = t->link.next != NULL;
    if (was_pending)
        remove_timer(w, t);
    place(w, t, deadline);
    return was_pending;
}

TW_PUBLIC int tw_rearm_after(struct tw_wheel *w, struct tw_timer *t,
                             uint64_t delay)
{
    return w ? tw_rearm(w, t, after(w, delay)) : -EINVAL;
}

TW_PUBLIC int tw_cancel(struct tw_wheel *w, struct tw_timer *t)
{
    if (!w || !t)
        return -EINVAL;
    if (w->busy & TW__VISITING)
        return -EBUSY;
    if (!t->link.next)
        return 0;
    remove_timer(w, t);
    return 1;
}
