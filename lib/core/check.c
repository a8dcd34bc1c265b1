/*
 * The invariant checker: every structure of a wheel compared against a
 * brute-force scan. Tests call it after every operation; it is far too slow
 * for anything else. The design-specific parts (slot placement, bitmaps,
 * rounds) live beside each design in hier.c and hashed.c.
 */
#include <errno.h>

#include "list.h"
#include "wheel.h"

/* Walk one list of w checking its links both ways; add its length to
 * *count. `limit` bounds the walk so that a cycle is reported, not looped
 * on. A timer needs a callback unless w has an expiry function. */
static int check_links(const struct tw_wheel *w, const struct tw_link *head,
                       size_t limit, size_t *count, char *why, size_t len)
{
    const struct tw_link *prev = head;

    for (const struct tw_link *n = head->next; n != head; n = n->next) {
        if (!n || n->prev != prev)
            return tw__fail(why, len, "broken list links");
        if (!w->expire && !tw__list_timer((struct tw_link *)n)->cb)
            return tw__fail(why, len, "pending timer without callback");
        if (++*count > limit)
            return tw__fail(why, len, "more timers in lists than pending");
        prev = n;
    }
    if (head->prev != prev)
        return tw__fail(why, len, "list tail does not match");
    return 0;
}

/* Expired timers must have reached their due tick. */
static int check_expired(const struct tw_wheel *w, char *why, size_t len)
{
    const struct tw_link *head = &w->expired;

    for (const struct tw_link *n = head->next; n != head; n = n->next) {
        const struct tw_timer *t = tw__list_timer((struct tw_link *)n);

        if (tw__due_tick(w, t->deadline) > w->cur)
            return tw__fail(why, len, "expired timer due after cur");
    }
    return 0;
}

/* Outside an advance, deadlines up to cur's boundary are deferred. */
static int check_defer(const struct tw_wheel *w, char *why, size_t len)
{
    bool open = w->mode == TW_HIER && !(w->busy & TW__VISITING);

    if (!(w->busy & TW__ADVANCING) && w->defer_ns != tw__tick_time(w, w->cur))
        return tw__fail(why, len, "deferral bound is not cur's boundary");
    if (w->fast_ns != (open ? w->defer_ns : UINT64_MAX))
        return tw__fail(why, len, "fast-path bound does not match");
    return 0;
}

/* The idle bound must never pass work: no later than the next piece of
 * work in the slots (for the hashed wheel, the next tick), and 0 while a
 * due list or the demoting list holds timers or the wheel is busy. */
static int check_idle(const struct tw_wheel *w, char *why, size_t len)
{
    uint64_t tick;

    if (w->head.idle_ns == 0)
        return 0;
    if (w->busy || !tw__list_empty(&w->expired) ||
        !tw__list_empty(&w->deferred) || !tw__list_empty(&w->demoting))
        return tw__fail(why, len, "idle bound open with work due");
    if (w->mode == TW_HASHED)
        tick = w->cur < w->max_tick ? w->cur + 1 : UINT64_MAX;
    else
        tick = tw__hier_next_tick(w);
    if (tick != UINT64_MAX && w->head.idle_ns > tw__tick_time(w, tick))
        return tw__fail(why, len, "idle bound past the next work");
    return 0;
}

static int check_counts(const struct tw_wheel *w, char *why, size_t len)
{
    size_t count = 0;
    int rc = check_links(w, &w->expired, w->count, &count, why, len);

    if (!rc)
        rc = check_links(w, &w->deferred, w->count, &count, why, len);
    if (!rc)
        rc = check_links(w, &w->demoting, w->count, &count, why, len);
    if (!rc && w->mode != TW_HIER && !tw__list_empty(&w->demoting))
        rc = tw__fail(why, len, "demoting list used by a hashed wheel");
    for (size_t i = 0; !rc && i < w->nslots; i++)
        rc = check_links(w, &w->slots[i], w->count, &count, why, len);
    if (!rc && count != w->count)
        rc = tw__fail(why, len, "%zu timers in lists, %zu counted", count,
                      w->count);
    return rc;
}

TW_PUBLIC int tw_check(const struct tw_wheel *w, char *why, size_t len)
{
    int rc;

    if (!w)
        return -EINVAL;
    if (w->cur > tw__time_tick(w, w->head.now))
        return tw__fail(why, len, "cur is ahead of the wheel's time");
    rc = check_counts(w, why, len);
    if (!rc)
        rc = check_expired(w, why, len);
    if (!rc)
        rc = check_defer(w, why, len);
    if (!rc)
        rc = check_idle(w, why, len);
    if (!rc)
        rc = w->mode == TW_HIER ? tw__hier_check(w, why, len)
                                : tw__hashed_check(w, why, len);
    return rc;
}
