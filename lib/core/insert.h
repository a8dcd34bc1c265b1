/*
 * Where a timer goes when it is put into a wheel: the hot path of schedule,
 * re-arm, demotion and the deferred flush, kept inline so that each compiles
 * to straight-line code. Placement rules are explained at the top of hier.c
 * and hashed.c; both require due > w->cur.
 */
#ifndef TW_INSERT_H
#define TW_INSERT_H

#include <stdint.h>

#include "bitmap.h"
#include "list.h"
#include "wheel.h"

/* Mark slot s of level lv occupied (hier.c; out of line, as it is rare). */
void tw__hier_occupy(struct tw_wheel *w, struct tw__level *lv, uint32_t s);

/* Hierarchical: the lowest level whose current revolution reaches due, in
 * the slot of due's digit there. */
static inline void tw__hier_insert(struct tw_wheel *w, struct tw_timer *t,
                                   uint64_t due)
{
    struct tw__level *lv = w->levels;
    struct tw_link *head;
    uint64_t offset;
    uint32_t s;

    while (due > lv->last)
        lv++;
    offset = due - lv->base;
    s = (uint32_t)(lv->width == 1 ? offset : offset / lv->width);
    head = &w->slots[lv->first + s];
    t->aux = due;
    /* Bits change only when a slot stops being empty: skipping them
     * otherwise keeps this path short, which matters when the timers are
     * cold and many schedules must overlap their cache misses. */
    if (tw__list_empty(head))
        tw__hier_occupy(w, lv, s);
    tw__list_push_back(head, &t->link);
}

/* Hashed: bucket due & mask, after (due - next) / slots whole revolutions,
 * with next = cur + 1 the tick the wheel processes next (Netty's arithmetic;
 * due >= next here, so max(due, next) is due). */
static inline void tw__hashed_insert(struct tw_wheel *w, struct tw_timer *t,
                                     uint64_t due)
{
    t->aux = (due - (w->cur + 1)) >> w->shift;
    tw__list_push_back(&w->slots[due & w->mask], &t->link);
}

/* Either design. */
static inline void tw__insert(struct tw_wheel *w, struct tw_timer *t,
                              uint64_t due)
{
    if (w->mode == TW_HIER)
        tw__hier_insert(w, t, due);
    else
        tw__hashed_insert(w, t, due);
}

#endif /* TW_INSERT_H */
