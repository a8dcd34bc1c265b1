/*
 * The service's table of callbacks: a handle names its callback by an
 * index of TW__CB_BITS bits in its refs word (service.h) instead of an
 * 8-byte pointer. That pointer was the difference between a one-shot
 * handle of 56 bytes, which jemalloc rounds up to 64, and one of 48, a
 * class of its own: 48 bytes per pending timer against Netty's 56.
 *
 * The table is a set of callback pointers by open addressing: a callback's
 * index is the slot it sits in, first tried at a hash of its address, then
 * at the next slots up to TW__CB_PROBE of them (slot 0 is never used: index
 * 0 means "no index"). A slot is filled once, by compare-and-swap from NULL,
 * and never emptied while the service lives, so
 *  - a lookup needs no lock: the slots it passes hold other callbacks, the
 *    one it stops at holds its own or is empty;
 *  - two threads that put the same callback in at once walk the same slots,
 *    so the one whose swap fails finds the other's callback in that slot
 *    and takes its index: a callback never has two;
 *  - the reader of an index (the worker, an executor, stop) finds the slot
 *    filled: the producer filled it, or saw it filled with acquire, before
 *    it published the handle, which the reader takes with acquire.
 *
 * A program's timer callbacks are few (a framework has one per kind of
 * timeout, not one per timer), so the common case is one multiplication and
 * one load of a line every producer only reads. A callback that finds its
 * TW__CB_PROBE slots taken by others (the table holds up to 1,023; more
 * distinct callbacks in one service, or unlucky hashes, before that) goes
 * into the handle's tail instead, as a periodic timer's period does: that
 * handle costs 80 bytes, not 48, and works the same.
 */
#include "service.h"

/* The index of cb in s's table, putting it in if there is room; 0: none
 * (tw__cb_index() found neither cb nor an empty slot at its first try). */
unsigned tw__cb_index_slow(struct tw_service *s, tw_service_callback *cb)
{
    unsigned i = tw__cb_hash(cb);

    for (unsigned k = 0; k < TW__CB_PROBE; k++, i = (i + 1) % TW__CB_SLOTS) {
        tw_service_callback *seen;

        if (i == 0)
            continue;
        /* A read first: a slot taken by another callback costs a load,
         * not a locked instruction on a line every producer reads. */
        seen = atomic_load_explicit(&s->cbs[i], memory_order_acquire);
        if (!seen && atomic_compare_exchange_strong_explicit(
                         &s->cbs[i], &seen, cb, memory_order_acq_rel,
                         memory_order_acquire))
            return i;
        if (seen == cb)
            return i;
    }
    return 0;
}
