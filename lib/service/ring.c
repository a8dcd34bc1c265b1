/*
 * The per-thread rings in front of the service's two queues (ring.h is the
 * ring itself: a chain of blocks, one producer, one consumer).
 *
 * Each owned stripe i (gate.c) of a service may have a pair of rings,
 * s->rings[i]: `fresh` carries new handles (custody, like newq) and `msgs`
 * cancel and re-arm messages (like cancelq). The thread that owns the
 * stripe makes them at its first push into the service and publishes the
 * pointer with a release store, then sets bit i of s->ringed so the worker
 * finds them (one locked instruction per thread and service, once). The
 * worker drains every ring in its reap and admit steps; stop drains them
 * after joining the worker; destroy frees them.
 *
 * A push goes to the queue instead (tw__mpsc_push, one exchange) when
 *  - the thread is on the shared stripe (more than TW__STRIPES threads):
 *    a ring has one producer;
 *  - the kernel gave no expedited membarrier (gate.c): the worker's sleep
 *    hand-shake needs a full barrier between a push and the producer's
 *    look at sleep_until, which the queue's exchange is and a ring's plain
 *    store is not; with membarrier, the worker pays for it (worker.c);
 *  - the rings could not be allocated (not retried for this stripe and
 *    service), or the ring needed a new block and it could not be.
 * Hence the two routes a handle can take to the worker; the worker drains
 * the rings first, then the queue. Handles of one thread are admitted in
 * the order they were pushed unless an allocation failed in between. A new
 * handle goes onto newq through the node in its own timer's deadline field
 * (service.h); a message has no node in the handle, so it goes onto
 * cancelq in one of its own, a 16-byte struct tw__qmsg the sender
 * allocates and the worker frees. Should that allocation fail too, a
 * cancel stands without a message and a re-arm to an earlier deadline is
 * refused with -ENOMEM (handle.c); a ring push never allocates when its
 * block has a free slot.
 *
 * Why blocks, not a fixed ring with the queue behind it: the worker wakes
 * on tick boundaries, not at every push (worker.c, "Sleeping"), so a ring
 * must hold what a producer pushes in a tick. A fixed 1024-slot ring
 * overflowed into the queue on 94 % of the pushes of svcbench's schedule
 * and cancel bursts (10^6 a thread), which then cost what they cost before
 * the rings; a fixed ring holding a tick of 10^7 pushes a second would be
 * 80 KiB per thread and service, most of the time empty.
 */
#include "service.h"

/* The rings of stripe i, made by its owner (this thread); NULL, and bit i
 * of s->ringless set, if they cannot be allocated. */
static struct tw__rings *make(struct tw_service *s, unsigned i)
{
    char *raw = tw__svc_zalloc(sizeof(struct tw__rings) + TW__CACHE_LINE);
    struct tw__rings *r;

    if (!raw) {
        atomic_fetch_or_explicit(&s->ringless, UINT64_C(1) << i,
                                 memory_order_relaxed);
        return NULL;
    }
    r = (struct tw__rings *)(raw + TW__CACHE_LINE -
                             (uintptr_t)raw % TW__CACHE_LINE);
    r->base = raw;
    r->fresh.used = r->fresh.taken = TW__BLOCK_SLOTS; /* no block yet */
    r->msgs.used = r->msgs.taken = TW__BLOCK_SLOTS;
    atomic_store_explicit(&s->rings[i], r, memory_order_release);
    /* A full barrier before the first push: a worker that read `ringed`
     * without this bit skipped the membarrier (worker.c). */
    atomic_fetch_or_explicit(&s->ringed, UINT64_C(1) << i,
                             memory_order_seq_cst);
    cmm_smp_mb();
    return r;
}

/* tw__rings_mine() found none: claim a stripe if this thread has none yet,
 * then take the stripe's rings (a former owner's) or make them. */
struct tw__rings *tw__rings_make(struct tw_service *s)
{
    struct tw__rings *r;
    unsigned i;

    if (!tw__my_stripe)
        tw__stripe_claim(s);
    i = tw__my_stripe - 1;
    if (i >= TW__STRIPES || !tw__gate_asym())
        return NULL;
    r = atomic_load_explicit(&s->rings[i], memory_order_relaxed);
    if (r)
        return r;
    if (atomic_load_explicit(&s->ringless, memory_order_relaxed) & UINT64_C(1)
                                                                       << i)
        return NULL;
    return make(s, i);
}

struct tw__rings *tw__rings_at(struct tw_service *s, unsigned i)
{
    return atomic_load_explicit(&s->rings[i], memory_order_acquire);
}

uint64_t tw__rings_made(struct tw_service *s)
{
    return atomic_load_explicit(&s->ringed, memory_order_acquire);
}

/* Whether every ring of the kind at offset `off` in struct tw__rings is
 * empty (the worker's look before it sleeps). */
static bool all_empty(struct tw_service *s, size_t off)
{
    uint64_t m = tw__rings_made(s);

    while (m) {
        unsigned i = (unsigned)__builtin_ctzll((unsigned long long)m);
        struct tw__ring *r =
            (struct tw__ring *)((char *)tw__rings_at(s, i) + off);

        m &= m - 1;
        if (tw__ring_ready(r))
            return false;
    }
    return true;
}

bool tw__rings_fresh_empty(struct tw_service *s)
{
    return all_empty(s, offsetof(struct tw__rings, fresh));
}

bool tw__rings_msgs_empty(struct tw_service *s)
{
    return all_empty(s, offsetof(struct tw__rings, msgs));
}

void tw__rings_free(struct tw_service *s)
{
    for (unsigned i = 0; i < TW__STRIPES; i++) {
        struct tw__rings *r = tw__rings_at(s, i);

        if (r) {
            tw__ring_free(&r->fresh);
            tw__ring_free(&r->msgs);
            tw_free(r->base, sizeof(*r) + TW__CACHE_LINE);
        }
    }
}

bool tw__ring_grow(struct tw__ring *r)
{
    struct tw__block *b = atomic_load_explicit(&r->spare, memory_order_acquire);

    if (b)
        atomic_store_explicit(&r->spare, NULL, memory_order_relaxed);
    else if (!(b = tw_alloc(sizeof(*b))))
        return false;
    atomic_store_explicit(&b->next, NULL, memory_order_relaxed);
    atomic_store_explicit(r->blk ? &r->blk->next : &r->first, b,
                          memory_order_release);
    r->blk = b;
    r->used = 0;
    return true;
}

/* The producer takes the spare only when it is set and the consumer sets
 * it only when it is not, so neither overwrites the other's block. */
void tw__ring_next(struct tw__ring *r)
{
    struct tw__block *old = r->at;

    r->at = atomic_load_explicit(old ? &old->next : &r->first,
                                 memory_order_acquire);
    r->taken = 0;
    if (!old)
        return;
    if (!atomic_load_explicit(&r->spare, memory_order_relaxed))
        atomic_store_explicit(&r->spare, old, memory_order_release);
    else
        tw_free(old, sizeof(*old));
}

void tw__ring_free(struct tw__ring *r)
{
    struct tw__block *b =
        r->at ? r->at : atomic_load_explicit(&r->first, memory_order_acquire);
    struct tw__block *spare =
        atomic_load_explicit(&r->spare, memory_order_acquire);

    while (b) {
        struct tw__block *next =
            atomic_load_explicit(&b->next, memory_order_relaxed);

        tw_free(b, sizeof(*b));
        b = next;
    }
    if (spare)
        tw_free(spare, sizeof(*spare));
}
