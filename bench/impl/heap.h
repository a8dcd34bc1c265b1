/*
 * An intrusive binary min-heap: the benchmark's baseline, never part of the
 * library.
 *
 * The caller embeds a struct heap_node in its own object; the heap keeps an
 * array of pointers to the nodes, and every node knows its position in that
 * array, so removing or re-keying any pending node is O(log n) and nothing
 * is allocated per timer. (libevent's min-heap has the same shape; libuv's
 * is a pointer tree, which saves the array but walks a path from the root on
 * every insert and removal.) Keys are due ticks; equal keys are ordered by
 * an insertion counter, so timers due in the same tick fire first-in
 * first-out, as in libuv.
 */
#ifndef BENCH_HEAP_H
#define BENCH_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define HEAP_NONE UINT32_MAX /* pos of a node that is not in the heap */

struct heap_node {
    uint64_t key; /* due tick */
    uint64_t seq; /* insertion order, breaks ties */
    uint32_t pos; /* index in heap.a, HEAP_NONE when not pending */
};

struct heap {
    struct heap_node **a;
    uint32_t n;
    uint32_t cap;
    uint64_t seq;
};

static inline bool heap_less(const struct heap_node *x,
                             const struct heap_node *y)
{
    return x->key < y->key || (x->key == y->key && x->seq < y->seq);
}

static inline void heap_place(struct heap *h, uint32_t i, struct heap_node *x)
{
    h->a[i] = x;
    x->pos = i;
}

/* Move x up from hole i until its parent is smaller. */
static inline void heap_sift_up(struct heap *h, uint32_t i, struct heap_node *x)
{
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;

        if (!heap_less(x, h->a[parent]))
            break;
        heap_place(h, i, h->a[parent]);
        i = parent;
    }
    heap_place(h, i, x);
}

/* Move x down from hole i until both children are larger. */
static inline void heap_sift_down(struct heap *h, uint32_t i,
                                  struct heap_node *x)
{
    for (;;) {
        uint32_t c = 2 * i + 1;

        if (c >= h->n)
            break;
        if (c + 1 < h->n && heap_less(h->a[c + 1], h->a[c]))
            c++;
        if (!heap_less(h->a[c], x))
            break;
        heap_place(h, i, h->a[c]);
        i = c;
    }
    heap_place(h, i, x);
}

/* Add x with key; returns false when the array cannot grow. */
static inline bool heap_push(struct heap *h, struct heap_node *x, uint64_t key)
{
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? 2 * h->cap : 64;
        struct heap_node **a = realloc(h->a, cap * sizeof(*a));

        if (!a)
            return false;
        h->a = a;
        h->cap = cap;
    }
    x->key = key;
    x->seq = h->seq++;
    heap_sift_up(h, h->n++, x);
    return true;
}

/* Put x, already at hole i, where its key belongs. */
static inline void heap_fix(struct heap *h, uint32_t i, struct heap_node *x)
{
    if (i > 0 && heap_less(x, h->a[(i - 1) / 2]))
        heap_sift_up(h, i, x);
    else
        heap_sift_down(h, i, x);
}

/* Remove pending x: the last node fills its hole. */
static inline void heap_remove(struct heap *h, struct heap_node *x)
{
    uint32_t i = x->pos;
    struct heap_node *last = h->a[--h->n];

    x->pos = HEAP_NONE;
    if (last != x)
        heap_fix(h, i, last);
}

/* Give pending x a new key (and a new place in the FIFO order). */
static inline void heap_rekey(struct heap *h, struct heap_node *x, uint64_t key)
{
    x->key = key;
    x->seq = h->seq++;
    heap_fix(h, x->pos, x);
}

static inline struct heap_node *heap_top(const struct heap *h)
{
    return h->n ? h->a[0] : NULL;
}

#endif /* BENCH_HEAP_H */
