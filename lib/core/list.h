/*
 * Intrusive circular doubly linked lists of timers: the lists themselves
 * are the layers' shared ones (lib/common/dlist.h); this adds what only the
 * wheel needs, a timer from its link and a walk from both ends.
 *
 * A timer is pending exactly while its link.next is not NULL (the shared
 * unlink clears it). Unlinking a timer returns the slot's head when the slot
 * became empty: the wheel uses that to clear occupancy bits in O(1) without
 * storing a slot number in the timer.
 */
#ifndef TW_LIST_H
#define TW_LIST_H

#include <stdint.h>

#include "dlist.h"
#include "timewheel/core.h"

static inline struct tw_timer *tw__list_timer(struct tw_link *link)
{
    return TW_CONTAINER_OF(link, struct tw_timer, link);
}

/* What tw__list_walk_both() calls for each node. */
typedef void tw__list_visit(struct tw_wheel *w, struct tw_link *node,
                            uint64_t due_ns);

/*
 * Call visit(w, node, due_ns) once for every node of the chain from first
 * to last (last is reached from first through next), taking them from both
 * ends at once. A walk along a list is a chain of dependent loads (a node's
 * address is in the node before it), a cache miss at every step when the
 * list is cold; two walks from the ends of a doubly linked list are two
 * independent chains, two misses in flight. Each node's neighbour is read
 * before visit may unlink or relink it, so visit may move the node it is
 * given anywhere but into this chain. The order of the visits is neither
 * the list's nor its reverse: for timers due in the same tick only.
 */
static inline void tw__list_walk_both(struct tw_link *first,
                                      struct tw_link *last,
                                      tw__list_visit *visit, struct tw_wheel *w,
                                      uint64_t due_ns)
{
    for (;;) {
        struct tw_link *next, *prev;

        if (first == last) { /* an odd count: the middle node */
            visit(w, first, due_ns);
            return;
        }
        next = first->next;
        prev = last->prev;
        visit(w, first, due_ns);
        visit(w, last, due_ns);
        if (next == last) /* an even count: the walks have met */
            return;
        first = next;
        last = prev;
    }
}

#endif /* TW_LIST_H */
