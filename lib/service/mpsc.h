/*
 * The multi-producer, single-consumer queue that carries handles to the
 * service's worker: liburcu's wait-free concurrent queue (wfcqueue).
 *
 * Any thread may push; only the worker (or tw_service_stop() once the
 * worker has been joined) pops. A push is one atomic exchange on the tail
 * and one store into the old tail node, so producers never wait for each
 * other or for the consumer. The consumer needs no lock because it is the
 * only one: the double-underscore dequeue functions leave mutual exclusion
 * between consumers to the caller, and there is none to exclude.
 *
 * We call liburcu's exported functions rather than defining _LGPL_SOURCE to
 * inline them, for two reasons. Licence: the inline versions are LGPL code
 * that would be compiled into our library. ThreadSanitizer: the inline
 * versions use inline-assembly atomics that TSan cannot see, so it would
 * report the queue's own accesses as races. Out of line they run in
 * uninstrumented code, and the only ordering TSan must learn is the one we
 * rely on: whatever a producer wrote into a node before pushing it is
 * visible to the consumer that popped it. The tsan_release/tsan_acquire
 * annotations on the node's address say exactly that (tsan.h: in other
 * builds they reach a user's TSan runtime through weak references).
 *
 * A pop can find a producer half-way through a push (tail exchanged, link
 * not yet written). tw__mpsc_pop() then reports TW__MPSC_BUSY instead of
 * spinning, so the worker can do something else and come back;
 * tw__mpsc_pop_wait() is for the quiescent drain at stop, when every push has
 * completed.
 */
#ifndef TW_SERVICE_MPSC_H
#define TW_SERVICE_MPSC_H

#include <stdbool.h>
#include <stddef.h>
#include <urcu/wfcqueue.h>

#include "tsan.h"

/* A cache line: producers hammer the tail while the consumer reads the
 * head, so the two are kept on different lines. */
#define TW__CACHE_LINE 64

struct tw__mpsc {
    _Alignas(TW__CACHE_LINE) struct __cds_wfcq_head head;
    _Alignas(TW__CACHE_LINE) struct cds_wfcq_tail tail;
};

/* What tw__mpsc_pop() returns while a push is half done. */
#define TW__MPSC_BUSY CDS_WFCQ_WOULDBLOCK

static inline void tw__mpsc_init(struct tw__mpsc *q)
{
    __cds_wfcq_init(&q->head, &q->tail);
}

/* Push node; safe from any thread. Returns whether the queue was empty.
 * The push is an atomic exchange on the tail, which liburcu documents as a
 * full memory barrier before and after (uatomic_xchg), so a load after the
 * push is not reordered before it: the worker's sleep hand-shake relies on
 * that instead of a fence of its own. */
static inline bool tw__mpsc_push(struct tw__mpsc *q, struct cds_wfcq_node *node)
{
    cds_wfcq_node_init(node);
    tsan_release(node);
    return !cds_wfcq_enqueue(&q->head, &q->tail, node);
}

/* Pop the oldest node: NULL when empty, TW__MPSC_BUSY when the next node's
 * push is still in progress. Consumer only. */
static inline struct cds_wfcq_node *tw__mpsc_pop(struct tw__mpsc *q)
{
    struct cds_wfcq_node *node =
        __cds_wfcq_dequeue_nonblocking(&q->head, &q->tail);

    if (node && node != TW__MPSC_BUSY)
        tsan_acquire(node);
    return node;
}

/* Pop the oldest node, waiting out a push in progress; NULL when empty.
 * Consumer only. */
static inline struct cds_wfcq_node *tw__mpsc_pop_wait(struct tw__mpsc *q)
{
    struct cds_wfcq_node *node =
        __cds_wfcq_dequeue_blocking(&q->head, &q->tail);

    if (node)
        tsan_acquire(node);
    return node;
}

/* Whether the queue looks empty; a push may land just after. */
static inline bool tw__mpsc_empty(struct tw__mpsc *q)
{
    return cds_wfcq_empty(&q->head, &q->tail);
}

#endif /* TW_SERVICE_MPSC_H */
