/*
 * The service's inline fast paths: the halves of its files that every
 * schedule, cancel and re-arm takes, kept inline so that a call crosses no
 * function boundary the compiler cannot see through. Grouped by the file
 * that owns the rest of the path (each group named after it: a change to
 * gate.c's rules is a change to gate.c's group here too). Never installed.
 *
 * Everything else is out of line, declared in service_externs.h.
 */
#ifndef TW_SERVICE_INLINES_H
#define TW_SERVICE_INLINES_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "clockns.h"
#include "ring.h"
#include "sat.h"
#include "service_externs.h"
#include "service_types.h"
#include "tsan.h"

/* ---- handle.c's half: reading a handle, moving its state word ---- */

static inline int tw__st(uint32_t w)
{
    return (int)(w & TW__ST_MASK);
}

/* The bits of h's refs word that never change after creation. */
static inline uint32_t tw__fixed(const struct tw_handle *h)
{
    return atomic_load_explicit(&((struct tw_handle *)h)->refs,
                                memory_order_relaxed);
}

static inline const struct tw__handle_tail *tw__tail(const struct tw_handle *h)
{
    if (!(tw__fixed(h) & TW__HF_TAIL))
        return NULL;
    return &TW_CONTAINER_OF(h, const struct tw__handle_long, h)->tail;
}

/* The size h was allocated with. */
static inline size_t tw__handle_size(const struct tw_handle *h)
{
    return tw__fixed(h) & TW__HF_TAIL ? sizeof(struct tw__handle_long)
                                      : sizeof(struct tw_handle);
}

static inline uint64_t tw__period(const struct tw_handle *h)
{
    const struct tw__handle_tail *t = tw__tail(h);

    return t ? t->period : 0;
}

static inline tw_release_fn *tw__release(const struct tw_handle *h)
{
    const struct tw__handle_tail *t = tw__tail(h);

    return t ? t->release : NULL;
}

static inline enum tw_period tw__kind(const struct tw_handle *h)
{
    return tw__fixed(h) & TW__HF_FIXED_DELAY ? TW_FIXED_DELAY : TW_FIXED_RATE;
}

/* Whether a canceller or re-armer holds h's word (CANCELLING, LOCKED) at
 * this instant: the worker puts such a new handle aside instead of
 * waiting for it (worker.c). A read, inline: on every admission. */
static inline bool tw__handle_held(struct tw_handle *h)
{
    int st = tw__st(atomic_load_explicit(&h->word, memory_order_relaxed));

    return st == TW__CANCELLING || st == TW__LOCKED;
}

/* The argument: kept in the core's timer, whose own field it is not, as
 * the wheel calls its expiry function (tw__worker_expire) instead. */
static inline void *tw__arg(const struct tw_handle *h)
{
    return h->user_arg;
}

static inline uint64_t tw__deadline(const struct tw_handle *h)
{
    return atomic_load_explicit(&h->deadline, memory_order_relaxed);
}

/* ---- registry.c's half ---- */

/* h's service. Only while the service holds h (service.h, "Lifetime of
 * the service"):
 * once the service is destroyed its slot may name another service. */
static inline struct tw_service *tw__svc(const struct tw_handle *h)
{
    return atomic_load_explicit(&tw__registry[tw__fixed(h) >> TW__SLOT_SHIFT],
                                memory_order_acquire);
}

/* Whether h belongs to a service a child of fork() inherited (fork.c):
 * by its slot, without reading the service. */
static inline bool tw__inherited(const struct tw_handle *h)
{
    return atomic_load_explicit(
        &tw__registry_stale[tw__fixed(h) >> TW__SLOT_SHIFT],
        memory_order_relaxed);
}

/* ---- callbacks.c's half ---- */

/* h's callback: in s's table (callbacks.c), or in h's tail. */
static inline tw_service_callback *tw__cb(const struct tw_service *s,
                                          const struct tw_handle *h)
{
    unsigned i = (tw__fixed(h) >> TW__CB_SHIFT) & (TW__CB_SLOTS - 1);

    if (i)
        return atomic_load_explicit(&((struct tw_service *)s)->cbs[i],
                                    memory_order_relaxed);
    return tw__tail(h)->cb;
}

static inline unsigned tw__cb_hash(tw_service_callback *cb)
{
    return (
        unsigned)(((uint64_t)(uintptr_t)cb * UINT64_C(0x9e3779b97f4a7c15)) >>
                  (64 - TW__CB_BITS));
}

/* The index of cb in s's table, inline when cb sits at its first slot (the
 * common case); 0 if the table has no room for it. */
static inline unsigned tw__cb_index(struct tw_service *s,
                                    tw_service_callback *cb)
{
    unsigned i = tw__cb_hash(cb);

    if (i && atomic_load_explicit(&s->cbs[i], memory_order_acquire) == cb)
        return i;
    return tw__cb_index_slow(s, cb);
}

/* ---- gate.c's half: the producers' gate, the striped counters and the
 * pending-slot credit, on every schedule and cancel (gate.c has the rules) */

/* The stripe this thread counts on in s, claiming one at the first call. */
static inline struct tw__stripe *tw__stripe_mine(struct tw_service *s)
{
    unsigned i = tw__my_stripe;

    return i ? &s->stripes[i - 1] : tw__stripe_claim(s);
}

/* Whether st is the shared stripe (the others each have one writer). */
static inline bool tw__shared(const struct tw_service *s,
                              const struct tw__stripe *st)
{
    return st == &s->stripes[TW__STRIPES];
}

/* Count one on counter c of stripe st, which this thread uses: a plain
 * load and a release store on its own stripe, an atomic add on the shared
 * one. The release orders the count after what it counts (gate.c). */
static inline void tw__count(const struct tw_service *s, struct tw__stripe *st,
                             atomic_uint_fast64_t *c)
{
    if (tw__shared(s, st))
        atomic_fetch_add_explicit(c, 1, memory_order_release);
    else
        atomic_store_explicit(c,
                              atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_release);
}

/* Add n to st's credit (the owner's plain store, or an atomic add):
 * inline, as a cancel gives its slot back on every call. */
static inline int_fast64_t tw__credit_add(struct tw_service *s,
                                          struct tw__stripe *st, int_fast64_t n)
{
    int_fast64_t c;

    if (tw__shared(s, st))
        return atomic_fetch_add_explicit(&st->credit, n, memory_order_relaxed) +
               n;
    c = atomic_load_explicit(&st->credit, memory_order_relaxed) + n;
    atomic_store_explicit(&st->credit, c, memory_order_relaxed);
    return c;
}

/* A cancelled timer's slot is free again: into this thread's credit; a
 * stripe that gathers two chunks (a thread that cancels more than it
 * schedules) returns one to the pool. The slots of the timers the service
 * lets go of go straight to the pool instead (tw__gate_let_go()). */
static inline void tw__give_back(struct tw_service *s, struct tw__stripe *st)
{
    int_fast64_t c;

    if (!s->max_pending)
        return;
    c = tw__credit_add(s, st, 1);
    if (c < 2 * TW__CREDIT_CHUNK)
        return;
    if (!tw__shared(s, st)) {
        tw__credit_add(s, st, -TW__CREDIT_CHUNK);
    } else {
        do {
            if (c < 2 * TW__CREDIT_CHUNK)
                return;
        } while (!atomic_compare_exchange_weak_explicit(
            &st->credit, &c, c - TW__CREDIT_CHUNK, memory_order_relaxed,
            memory_order_relaxed));
    }
    atomic_fetch_add_explicit(&s->avail, TW__CREDIT_CHUNK,
                              memory_order_relaxed);
}

/* A cancel won: count it on the canceller's stripe and give its pending
 * slot back there, at once, so that stats and max_pending see it as soon as
 * tw_handle_cancel() has returned 1 (the worker frees the handle within
 * TW__REAP_NS). */
static inline void tw__gate_count_cancel(struct tw_service *s)
{
    struct tw__stripe *st = tw__stripe_mine(s);

    tw__count(s, st, &st->cancelled);
    tw__give_back(s, st);
}

/* The producers' gate, inline: on every schedule (gate.c has the rules). */
static inline void tw__gate_leave(struct tw_service *s, struct tw__stripe *st)
{
    if (tw__shared(s, st))
        atomic_fetch_sub_explicit(&st->inside, 1, memory_order_release);
    else
        atomic_store_explicit(&st->inside, 0, memory_order_release);
}

static inline struct tw__stripe *tw__gate_enter(struct tw_service *s, int *rc)
{
    struct tw__stripe *st = tw__stripe_mine(s);

    /* A call that sees the gate closed leaves the counts alone, so the
     * calls stop refuses cannot keep it waiting (gate.c, "Bounded"). */
    if (atomic_load_explicit(&s->closed, memory_order_relaxed)) {
        *rc = s->forked ? -ECHILD : -ESHUTDOWN; /* fork.c */
        return NULL;
    }
    if (!tw__shared(s, st) &&
        atomic_load_explicit(&tw__asym, memory_order_relaxed)) {
        atomic_store_explicit(&st->inside, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
    } else {
        atomic_fetch_add_explicit(&st->inside, 1, memory_order_seq_cst);
    }
    if (atomic_load_explicit(&s->closed, memory_order_seq_cst)) {
        tw__gate_leave(s, st);
        *rc = s->forked ? -ECHILD : -ESHUTDOWN;
        return NULL;
    }
    *rc = 0;
    return st;
}

/* Take a pending slot for a schedule (gate.c has the rules): inline, the
 * owner's plain decrement of its credit; the rest out of line. */
static inline int tw__gate_reserve(struct tw_service *s, struct tw__stripe *st)
{
    int_fast64_t c;

    if (!atomic_load_explicit(&s->behind, memory_order_relaxed) &&
        !tw__shared(s, st) && s->max_pending &&
        (c = atomic_load_explicit(&st->credit, memory_order_relaxed)) > 0) {
        atomic_store_explicit(&st->credit, c - 1, memory_order_relaxed);
        return 0;
    }
    return tw__gate_reserve_slow(s, st);
}

static inline bool tw__stopping(const struct tw_service *s)
{
    return atomic_load_explicit(&s->closed, memory_order_relaxed);
}

/* ---- ring.c's half ---- */

/* This thread's rings in s (ring.c), made at its first push into s; NULL:
 * it pushes onto the queues. */
static inline struct tw__rings *tw__rings_mine(struct tw_service *s)
{
    unsigned i = tw__my_stripe - 1; /* UINT_MAX before the claim */
    struct tw__rings *r;

    if (i < TW__STRIPES &&
        (r = atomic_load_explicit(&s->rings[i], memory_order_relaxed)))
        return r;
    return tw__rings_make(s);
}

/* ---- wake.c's half: waking the worker ---- */

/* After pushing something due at `due`: wake the worker if it would
 * otherwise sleep past due's tick boundary. A timer due within the last tick
 * before the worker's wake-up fires on that wake-up anyway (it is admitted
 * and then due), so it needs no kick: with timers arriving a tick or more
 * ahead, as most do, producers never make a system call. The push before
 * this was either into a ring, whose plain store the worker's membarrier
 * orders before this load (worker.c, "Sleeping"; the caller kept the
 * compiler from reordering them), or an exchange with a full barrier
 * (mpsc.h): no fence of our own on the schedule path either way. */
static inline void tw__wake_pushed(struct tw_service *s, uint64_t due)
{
    if (tw__add_sat(due, s->tick_ns) <=
        atomic_load_explicit(&s->sleep_until, memory_order_relaxed))
        tw__wake_kick(s);
}

/* After a cancel's message: wake the worker if it sleeps longer than
 * TW__REAP_NS (worker.c). Inline: on every cancel. */
static inline void tw__wake_reap(struct tw_service *s)
{
    if (atomic_load_explicit(&s->reap_wake, memory_order_relaxed))
        tw__wake_kick(s);
}

/* ---- metrics.c's half: what the worker counts as it fires ---- */

/* A plain add to a counter only the worker writes. */
static inline void tw__metric_add(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* The worker fired a timer due at deadline in its turn that read the clock
 * at turn_at: into the lateness histogram (worker only). */
static inline void tw__metrics_fired(struct tw_service *s, uint64_t deadline)
{
    uint64_t at = atomic_load_explicit(&s->turn_at, memory_order_relaxed);
    uint64_t late = at > deadline ? at - deadline : 0;
    uint64_t q = (late - 1) >> 16; /* 0 for at most 65,536 ns */
    unsigned b = late && q ? 64u - (unsigned)__builtin_clzll(q) : 0;

    if (b > TW_SERVICE_LATE_BUCKETS)
        b = TW_SERVICE_LATE_BUCKETS;
    tw__metric_add(&s->late[b], 1);
    tw__metric_add(&s->late_sum, late);
    tw__metric_add(&s->fired, 1);
}

/* ---- worker.c's half: handing it work ---- */

/* Give custody of h to the worker: push it into this thread's ring, or
 * onto the new queue (ring.c says when). */
static inline void tw__worker_post(struct tw_service *s, struct tw_handle *h)
{
    uint64_t due = tw__deadline(h);
    struct tw__rings *r = tw__rings_mine(s);

    if (r && __builtin_expect(r->fresh.used == TW__BLOCK_SLOTS, 0))
        tw__backlog_schedule(s, r); /* once a block: backlog.c */
    if (r && tw__ring_push(&r->fresh, h)) {
        atomic_signal_fence(memory_order_seq_cst); /* see tw__wake_pushed */
    } else {
        /* once per TW__QUEUE_LOOK of this thread's pushes: backlog.c */
        if (__builtin_expect(++tw__q_pushed >= TW__QUEUE_LOOK, 0))
            tw__backlog_schedule_queue(s);
        tw__mpsc_push(&s->newq, &h->qnode);
    }
    tw__wake_pushed(s, due);
}

/* A singly linked FIFO of handles out of the wheel (struct tw__hlist): the
 * worker's batch, the executor's queue, stop's lists. */
static inline void tw__hlist_push(struct tw__hlist *l, struct tw_handle *h)
{
    h->next = NULL;
    if (l->tail)
        l->tail->next = h;
    else
        l->head = h;
    l->tail = h;
    l->n++;
}

static inline struct tw_handle *tw__hlist_pop(struct tw__hlist *l)
{
    struct tw_handle *h = l->head;

    if (h) {
        l->head = h->next;
        if (!l->head)
            l->tail = NULL;
        l->n--;
        h->next = NULL;
    }
    return h;
}

/* ---- service.c's half ---- */

/* Where a periodic timer due at `deadline` starts. TW_CATCHUP_ALL counts a
 * fixed-rate timer's missed periods from when it was scheduled: the periods
 * before were never missed, as nothing was scheduled then, so a deadline in
 * the past moves to the last point of its grid at or before now, and runs
 * at once (timewheel/service.h, enum tw_catchup). Without this, deadline 0
 * with a 10 ms period ran 1,566,842 runs in its first second at 4.6 h of
 * uptime (issue 22; docs/service.md). Reads the clock only for such a
 * timer. */
static inline uint64_t tw__catchup_start(enum tw_catchup c, uint64_t deadline,
                                         uint64_t period, enum tw_period kind)
{
    uint64_t now;

    if (c != TW_CATCHUP_ALL || kind != TW_FIXED_RATE || !period)
        return deadline;
    now = tw__mono_ns();
    if (deadline >= now)
        return deadline;
    return deadline + (now - deadline) / period * period;
}

/* A zeroed block from the library's allocator (the core's seam). */
static inline void *tw__svc_zalloc(size_t size)
{
    void *p = tw_alloc(size);

    return p ? memset(p, 0, size) : NULL;
}

#endif /* TW_SERVICE_INLINES_H */
