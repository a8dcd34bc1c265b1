/*
 * Intrusive circular doubly linked lists of struct tw_link, for every layer
 * (lib/common/, never installed). The link is the core's public one
 * (timewheel/core.h): the core threads its timers on it (lib/core/list.h
 * adds what only the wheel needs), the purgatory a key's watchers.
 *
 * A list head is a bare struct tw_link pointing at itself when empty. A
 * node out of every list has NULL links (tw__list_unlink() leaves them so).
 * Because every list is circular with a head, unlinking a node leaves prev
 * == next exactly when the list became empty, and then both point at the
 * head: tw__list_unlink() says so, which the wheel uses to clear occupancy
 * bits in O(1) without storing a slot number in the timer.
 */
#ifndef TW_COMMON_DLIST_H
#define TW_COMMON_DLIST_H

#include <stdbool.h>
#include <stddef.h>

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

/* Unlink node and clear its links. Returns the list's head when the list
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

#endif /* TW_COMMON_DLIST_H */
