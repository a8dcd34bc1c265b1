/*
 * A single-producer, single-consumer queue of handle pointers: the front
 * each producer thread has before the service's queues (ring.c says how the
 * service uses it). It is a chain of fixed blocks of slots, each block a
 * ring lap that is not reused until the consumer has left it.
 *
 * The producer writes the next slot of its block and publishes it with a
 * release store of `tail` (a count of pushes); the consumer reads slots
 * while its own count is below the `tail` it acquired. Neither side issues
 * a locked instruction (on x86 both stores are plain moves), and neither
 * reads the other's line except the consumer's one look at `tail` per
 * drain. When the producer's block is full it links a new one (release, so
 * a consumer that reaches the end of a block finds the link before any slot
 * beyond it), taken from the one-block `spare` the consumer left or from
 * the allocator; the consumer, leaving a block, hands it back as the spare
 * or frees it. Hence the chain grows with a burst and shrinks after it
 * (a block and a spare each, once drained), and a push never waits and
 * never fails except when the allocator does.
 *
 * One producer at a time: the thread that owns the stripe the ring belongs
 * to (gate.c). When that thread exits and another claims the stripe, the
 * claim's acquire orders the new owner after everything the old one wrote
 * (`tail`, `blk`, `used`, the slots), so the ring carries on as if one
 * thread had written it all. One consumer: the worker, or stop once it has
 * joined the worker.
 */
#ifndef TW_SERVICE_RING_H
#define TW_SERVICE_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "mpsc.h" /* TW__CACHE_LINE */
#include "tsan.h"

/* Slots per block: a block and its link make 4 KiB, a jemalloc size class
 * small enough for its thread cache, so a new block is a few dozen
 * instructions once per 511 pushes. */
#define TW__BLOCK_SLOTS 511u

struct tw_handle;

struct tw__block {
    struct tw_handle *slot[TW__BLOCK_SLOTS];
    _Atomic(struct tw__block *) next; /* set by the producer once full */
};

struct tw__ring {
    /* The producer's line. */
    _Alignas(TW__CACHE_LINE) atomic_size_t tail; /* pushes published */
    struct tw__block *blk; /* the block it writes; NULL before the first */
    unsigned used;         /* slots of blk written */
    /* The consumer's line. */
    /* Handles taken: atomic only so that the producer may read it once a
     * block to see how far behind the consumer is (backlog.c); the
     * consumer alone writes it, with plain stores. */
    _Alignas(TW__CACHE_LINE) atomic_size_t head;
    struct tw__block *at; /* the block it reads */
    unsigned taken;       /* slots of `at` read */
    /* The link to the first block (the producer's "block -1"). */
    _Alignas(TW__CACHE_LINE) _Atomic(struct tw__block *) first;
    _Atomic(struct tw__block *) spare; /* consumer -> producer, one block */
};

/* The producer's side of a full (or absent) block: link a new one. */
bool tw__ring_grow(struct tw__ring *r);
/* The consumer's side of a block read to its end: move to the next. */
void tw__ring_next(struct tw__ring *r);
/* Free every block of r (nothing may be pushed or taken any more). */
void tw__ring_free(struct tw__ring *r);

/* Producer: append h; false only if a new block was needed and could not
 * be allocated. What the producer wrote into h before is visible to the
 * consumer that takes it. */
static inline bool tw__ring_push(struct tw__ring *r, struct tw_handle *h)
{
    size_t t;

    if (__builtin_expect(r->used == TW__BLOCK_SLOTS, 0) && !tw__ring_grow(r))
        return false;
    tw__hb_release(h);
    t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    r->blk->slot[r->used++] = h;
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return true;
}

/* Producer: how many of its pushes the consumer has not taken yet (a
 * snapshot: the consumer may take more meanwhile; backlog.c). */
static inline size_t tw__ring_untaken(const struct tw__ring *r)
{
    return atomic_load_explicit(&r->tail, memory_order_relaxed) -
           atomic_load_explicit(&r->head, memory_order_relaxed);
}

/* Consumer: how many handles are ready now. */
static inline size_t tw__ring_ready(struct tw__ring *r)
{
    return atomic_load_explicit(&r->tail, memory_order_acquire) -
           atomic_load_explicit(&r->head, memory_order_relaxed);
}

/* Consumer: take the oldest handle; tw__ring_ready() said there is one. */
static inline struct tw_handle *tw__ring_take(struct tw__ring *r)
{
    struct tw_handle *h;

    if (r->taken == TW__BLOCK_SLOTS)
        tw__ring_next(r);
    h = r->at->slot[r->taken++];
    atomic_store_explicit(
        &r->head, atomic_load_explicit(&r->head, memory_order_relaxed) + 1,
        memory_order_relaxed);
    tw__hb_acquire(h);
    return h;
}

#endif /* TW_SERVICE_RING_H */
