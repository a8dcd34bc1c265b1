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

/* Mark slot s of level k occupied (hier.c; out of line, as it is rare). */
void tw__hier_occupy(struct tw_wheel *w, unsigned k, uint32_t s);
/* Slot of d at level k whose width_ns is 0 (hier.c; the top levels only). */
uint64_t tw__hier_slot_slow(const struct tw_wheel *w, unsigned k, uint64_t d);

/* Hierarchical: the lowest level whose current revolution reaches t's due
 * tick, in the slot of that tick's digit there. Both are found from the
 * deadline in ns (wheel.h), so the due tick is never computed: one
 * multiplication in all. */
static inline void tw__hier_insert(struct tw_wheel *w, struct tw_timer *t)
{
    uint64_t d = t->deadline, s;
    const struct tw__place *p = w->place;
    struct tw_link *head;

    while (d > p->last_ns)
        p++;
    if (__builtin_expect(p->mult != 0, 1))
        s = tw__place_slot(p, d);
    else
        s = tw__hier_slot_slow(w, (unsigned)(p - w->place), d);
    head = p->slot0 + s;
    /* Bits change only when a slot stops being empty: skipping them
     * otherwise keeps this path short, which matters when the timers are
     * cold and many schedules must overlap their cache misses. */
    if (tw__list_empty(head))
        tw__hier_occupy(w, (unsigned)(p - w->place), (uint32_t)s);
    tw__list_push_back(head, &t->link);
}

/* Hashed: bucket due & mask. Netty also stores the remaining rounds,
 * (due - next) / slots; here a visited timer is due exactly when its
 * deadline is at or before the visited tick's boundary (hashed.c), which
 * says the same without a field or a store per visit. */
static inline void tw__hashed_insert(struct tw_wheel *w, struct tw_timer *t)
{
    uint64_t due = tw__due_tick(w, t->deadline);

    tw__list_push_back(&w->slots[due & w->mask], &t->link);
}

/* Either design; t->deadline is set and its due tick is after cur. */
static inline void tw__insert(struct tw_wheel *w, struct tw_timer *t)
{
    if (w->mode == TW_HIER)
        tw__hier_insert(w, t);
    else
        tw__hashed_insert(w, t);
}

#endif /* TW_INSERT_H */
