/*
 * How many cancelled handles may wait for the worker: the reaping backlog.
 *
 * A winning cancel of a pending timer sends a message (handle.c), and the
 * handle's memory goes back only when the worker takes it (worker.c,
 * take_message). A worker that reaps on a timer alone, every TW__REAP_NS,
 * leaves all that a stream of cancels makes in that time: in the RPC
 * pattern (each request's timeout cancelled 0.1-1 ms after it was set) at
 * some 10^7 cancels a second, 10^6 dead handles for 10^4 live ones, 500 to
 * 7,000 bytes per request outstanding instead of 48 (docs/benchmarks.md,
 * "The RPC pattern"). So the garbage is bounded by what is outstanding, not
 * by time:
 *
 *  - the worker publishes, at each turn, the bound of its backlog per
 *    producer ring, `reap_bound`: an eighth of the timers in its wheel (its
 *    high-water mark over the last TW__REAP_NS, so that a burst of cancels
 *    that empties the wheel is not held to the few left), at least
 *    TW__REAP_FLOOR, shared among the rings;
 *  - a canceller looks at its message ring's backlog (pushes it made less
 *    the worker's takes, ring.h) once per block of the ring, when the
 *    block is full, so the fast path of a cancel gains no instruction and
 *    no write to a line another thread writes; past the bound it wakes the
 *    worker, once per reap of the worker's (the head it saw moved);
 *  - past twice the bound, if the canceller has also scheduled at least
 *    the bound since it woke the worker, the worker is not keeping up
 *    (producers that outrun it on the cores they share) and memory grows:
 *    each dead handle waiting has a new live one beside it. A thread that
 *    only cancels (a burst that empties the wheel) gives back as many live
 *    timers as it makes dead ones, so memory does not grow past what the
 *    live ones held, and it is not held up: waiting there cut svcbench's
 *    cancels/s from 39.8 to 14.4 M (one thread) and 57.5 to 18.6 M (two)
 *    for no memory saved. Otherwise the canceller sleeps until the
 *    worker has taken its ring below the bound, for at most
 *    TW__REAP_WAIT_NS a block, and never on one of the service's own threads
 *    (a callback that cancels would wait for itself) nor once stop has begun.
 *    Sleeping, not yielding, gives the worker the processor on a machine
 *    whose cores the cancellers fill (sched_yield() did not: with two
 *    streams on two cores the garbage still reached 35,000 handles).
 *
 * Why an eighth and 1024: a quarter and 2048 left svcbench rpc's RSS per
 * request at up to 2.9 times the static figure with two threads and 10^4
 * requests (the target is 2); an eighth and 1024, 1.70 at most.
 *
 * A slow stream of cancels stays below the floor and is reaped as before,
 * within TW__REAP_NS, without a wake-up per cancel. The wake-up is a kick
 * (a flag under the worker's lock), which the worker reads before every
 * sleep, so it needs no part of the membarrier hand-shake (worker.c,
 * "Sleeping"): a kick made while the worker is awake makes its next sleep
 * return at once. A stale head read by the canceller only makes it kick or
 * look again. Threads without a ring (cancelq) keep the timer alone: their
 * messages cost a node and an exchange each already.
 */
#include <errno.h>
#include <time.h>

#include "service.h"

/* The timers in the wheel, as the bound counts them: the most seen since the
 * window began, the window restarting every TW__REAP_NS. Worker only. */
static uint64_t high_water(struct tw_service *s, uint64_t now)
{
    uint64_t n = tw_pending(s->wheel);

    if (now - s->hwm_at > TW__REAP_NS) {
        s->hwm_at = now;
        s->hwm = n;
    } else if (n > s->hwm) {
        s->hwm = n;
    }
    return s->hwm;
}

void tw__backlog_publish(struct tw_service *s, uint64_t now)
{
    uint64_t bound = high_water(s, now) / 8;
    unsigned rings =
        (unsigned)__builtin_popcountll((unsigned long long)tw__rings_made(s));

    if (bound < TW__REAP_FLOOR)
        bound = TW__REAP_FLOOR;
    bound /= rings ? rings : 1;
    if (bound != atomic_load_explicit(&s->reap_bound, memory_order_relaxed))
        atomic_store_explicit(&s->reap_bound, bound, memory_order_relaxed);
}

/* Messages r's producer (this thread) pushed that the worker has not taken. */
static size_t unreaped(const struct tw__ring *r)
{
    return atomic_load_explicit(&r->tail, memory_order_relaxed) -
           atomic_load_explicit(&r->head, memory_order_relaxed);
}

void tw__backlog_reaped(struct tw_service *s)
{
    cmm_smp_mb(); /* our takes before the look at the waiters: wait_reap() */
    if (!atomic_load_explicit(&s->reap_waiters, memory_order_relaxed))
        return;
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->reap_done);
    pthread_mutex_unlock(&s->lock);
}

/* The worker is more than twice the bound behind: wake it and sleep until
 * it has taken r below the bound (its broadcast), stop has begun, or
 * TW__REAP_WAIT_NS has passed. Counting ourselves among the waiters before
 * the look at r's head, as the worker stores the head before its look at
 * the waiters, with a full barrier each, means that either we see its take
 * or it sees us and broadcasts under the lock we hold until we sleep; the
 * time limit bounds the rest (a worker in a long callback). */
static void wait_reap(struct tw_service *s, const struct tw__ring *r,
                      size_t bound)
{
    uint64_t until = tw__svc_clock() + TW__REAP_WAIT_NS;
    struct timespec ts = {
        .tv_sec = (time_t)(until / UINT64_C(1000000000)),
        .tv_nsec = (long)(until % UINT64_C(1000000000)),
    };

    if (tw__svc_current == s)
        return;
    atomic_fetch_add_explicit(&s->reap_waiters, 1, memory_order_seq_cst);
    pthread_mutex_lock(&s->lock);
    s->kicked = true;
    pthread_cond_signal(&s->wake);
    while (unreaped(r) >= bound && !tw__stopping(s))
        if (pthread_cond_timedwait(&s->reap_done, &s->lock, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_sub_explicit(&s->reap_waiters, 1, memory_order_relaxed);
}

/* Timers this thread scheduled since it last woke the worker: those that
 * took the place of the ones it cancelled meanwhile. */
static size_t scheduled_since(const struct tw__rings *r)
{
    return atomic_load_explicit(&r->fresh.tail, memory_order_relaxed) -
           r->fresh_at;
}

void tw__backlog_check(struct tw_service *s, struct tw__rings *r)
{
    size_t bound =
        (size_t)atomic_load_explicit(&s->reap_bound, memory_order_relaxed);
    size_t left = unreaped(&r->msgs), head;

    if (left < bound)
        return;
    head = atomic_load_explicit(&r->msgs.head, memory_order_relaxed);
    if (r->asked != head + 1) { /* not since the worker last took some */
        r->asked = head + 1;
        r->fresh_at =
            atomic_load_explicit(&r->fresh.tail, memory_order_relaxed);
        tw__worker_kick(s);
    }
    if (left >= 2 * bound && scheduled_since(r) >= bound)
        wait_reap(s, &r->msgs, bound);
}
