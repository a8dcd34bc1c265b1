/*
 * The invariant checker: every structure of a wheel compared against a
 * brute-force scan. Tests call it after every operation; it is far too slow
 * for anything else. The design-specific parts (slot placement, bitmaps,
 * rounds) live beside each design in hier.c and hashed.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "list.h"
#include "wheel.h"

int tw__fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (why && len) {
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -EPROTO;
}

/* Walk one list checking its links both ways; add its length to *count.
 * `limit` bounds the walk so that a cycle is reported, not looped on. */
static int check_links(const struct tw_link *head, size_t limit, size_t *count,
                       char *why, size_t len)
{
    const struct tw_link *prev = head;

    for (const struct tw_link *n = head->next; n != head; n = n->next) {
        if (!n || n->prev != prev)
            return tw__fail(why, len, "broken list links");
        if (!tw__list_timer((struct tw_link *)n)->cb)
            return tw__fail(why, len, "pending timer without callback");
        if (++*count > limit)
            return tw__fail(why, len, "more timers in lists than pending");
        prev = n;
    }
    if (head->prev != prev)
        return tw__fail(why, len, "list tail does not match");
    return 0;
}

/* Due timers must carry their due tick; expired ones must have reached it. */
static int check_due_list(const struct tw_wheel *w, const struct tw_link *head,
                          bool expired, char *why, size_t len)
{
    for (const struct tw_link *n = head->next; n != head; n = n->next) {
        const struct tw_timer *t = tw__list_timer((struct tw_link *)n);

        if (t->aux != tw__due_tick(w, t->deadline))
            return tw__fail(why, len, "due list timer with wrong due tick");
        if (expired && t->aux > w->cur)
            return tw__fail(why, len, "expired timer due after cur");
    }
    return 0;
}

static int check_counts(const struct tw_wheel *w, char *why, size_t len)
{
    size_t count = 0;
    int rc = check_links(&w->expired, w->count, &count, why, len);

    if (!rc)
        rc = check_links(&w->deferred, w->count, &count, why, len);
    for (size_t i = 0; !rc && i < w->nslots; i++)
        rc = check_links(&w->slots[i], w->count, &count, why, len);
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
    if (w->cur > tw__time_tick(w, w->now))
        return tw__fail(why, len, "cur is ahead of the wheel's time");
    rc = check_counts(w, why, len);
    if (!rc)
        rc = check_due_list(w, &w->expired, true, why, len);
    if (!rc)
        rc = check_due_list(w, &w->deferred, false, why, len);
    if (!rc)
        rc = w->mode == TW_HIER ? tw__hier_check(w, why, len)
                                : tw__hashed_check(w, why, len);
    return rc;
}
