/*
 * Intrusive circular doubly linked lists of timers.
 *
 * A list head is a bare struct tw_link pointing at itself when empty. A timer
 * is pending exactly while its link.next is not NULL. Because every list is
 * circular with a head, unlinking a node leaves prev == next exactly when the
 * list became empty, and then both point at the head: the wheel uses that to
 * clear occupancy bits in O(1) without storing a slot number in the timer.
 */
#ifndef TW_LIST_H
#define TW_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel/core.h"

static inline void tw__list_init(struct tw_link *head)
{
    head->next = head;
    head->prev = head;
}

static inline bool tw__list_empty(const struct tw_link *head)
{
    return head->next == head;
}

static inline struct tw_timer *tw__list_timer(struct tw_link *link)
{
    return TW_CONTAINER_OF(link, struct tw_timer, link);
}

static inline void tw__list_push_back(struct tw_link *head,
                                      struct tw_link *node)
{
    struct tw_link *last = head->prev;

    /* This order keeps GCC from pairing the node's two stores into a
     * vector store, which takes four instructions instead of two. */
    node->prev = last;
    last->next = node;
    node->next = head;
    head->prev = node;
}

/* Unlink node and mark it not pending. Returns the list's head when the list
 * became empty, NULL otherwise. */
static inline struct tw_link *tw__list_unlink(struct tw_link *node)
{
    struct tw_link *prev = node->prev;
    struct tw_link *next = node->next;

    prev->next = next;
    next->prev = prev;
    node->next = NULL;
    node->prev = NULL;
    return prev == next ? prev : NULL;
}

/* Move every node of from to the end of to; from becomes empty. */
static inline void tw__list_splice_back(struct tw_link *to,
                                        struct tw_link *from)
{
    if (tw__list_empty(from))
        return;
    from->next->prev = to->prev;
    to->prev->next = from->next;
    from->prev->next = to;
    to->prev = from->prev;
    tw__list_init(from);
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
