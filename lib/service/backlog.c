/*
 * How many cancelled handles may wait for the worker: the reaping backlog.
 *
 * A winning cancel of a pending timer sends a message (handle.c), and the
 * handle's memory goes back only when the worker takes it (worker.c,
 * take_message). A worker that reaps on a timer alone, every TW__REAP_NS,
 * leaves all that a stream of cancels makes in that time: in the RPC
 * pattern (each request's timeout cancelled 0.1-1 ms after it was set) at
 * some 10^7 cancels a second, up to 10^6 dead handles for 10^4 live ones,
 * up to 8,000 bytes of RSS per request outstanding against a static 108
 * (docs/benchmarks.md, "The RPC pattern"). So the garbage is bounded by what is
 * outstanding, not by time:
 *
 *  - the worker publishes, at each turn, the bound of its backlog per
 *    producer ring, `reap_bound`: a sixteenth of the timers in its wheel (its
 *    high-water mark over the last TW__REAP_NS, so that a burst of cancels
 *    that empties the wheel is not held to the few left), at least
 *    TW__REAP_FLOOR, shared among the rings;
 *  - a canceller looks at its message ring's backlog (pushes it made less
 *    the worker's takes, ring.h) once per block of the ring, when the
 *    block is full, so the fast path of a cancel gains no instruction and
 *    no write to a line another thread writes;
 *  - the backlog counts only while memory grows: while, since the worker
 *    last took from this ring, the producers pushed into their rings at
 *    least half as many new timers as this thread cancelled (each dead
 *    handle waiting has a new live one beside it, the RPC pattern,
 *    whichever thread schedules). A burst of cancels alone (a wheel being
 * emptied) gives back as many live timers as it makes dead ones, and is reaped
 * as it was before the bound: holding it up cut svcbench's cancels/s from 39.8
 * to 14.4 M (one thread) and 57.5 to 18.6 M (two), and waking the worker during
 * it, from 69.0 to 49.6 M with two threads (the worker then shares their two
 * cores), for no memory saved;
 *  - past the bound it wakes the worker, once per reap of the worker's
 *    (the head it saw moved);
 *  - past twice the bound the worker is not keeping up (producers that
 *    outrun it on the cores they share): the canceller sleeps until the
 *    worker has taken its ring below the bound, for at most
 *    TW__REAP_WAIT_NS a block, and never on one of the service's own threads
 *    (a callback that cancels would wait for itself) nor once stop has begun.
 *    Sleeping, not yielding, gives the worker the processor on a machine
 *    whose cores the cancellers fill (sched_yield() did not: with two
 *    streams on two cores the garbage still reached 35,000 handles).
 *
 * Why a sixteenth and 512: svcbench rpc's RSS per request must stay within
 * twice the static figure (issue 21). A quarter and 2048 left up to 2.9
 * times with two threads and 10^4 requests; an eighth and 1024 up to 3.65
 * (one thread, hashed, 10^4) in runs under a load average of 7-10, where a
 * sixteenth and 512 stayed within 1.71 interleaved with them. A ring is
 * looked at once per 511 messages, so a bound below that changes little.
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
    uint64_t bound = high_water(s, now) / 16;
    unsigned rings =
        (unsigned)__builtin_popcountll((unsigned long long)tw__rings_made(s));

    if (bound < TW__REAP_FLOOR)
        bound = TW__REAP_FLOOR;
    bound /= rings ? rings : 1;
    if (bound != atomic_load_explicit(&s->reap_bound, memory_order_relaxed))
        atomic_store_explicit(&s->reap_bound, bound, memory_order_relaxed);
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
    uint64_t until = tw__mono_ns() + TW__REAP_WAIT_NS;
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
    while (tw__ring_untaken(r) >= bound && !tw__stopping(s))
        if (pthread_cond_timedwait(&s->reap_done, &s->lock, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_sub_explicit(&s->reap_waiters, 1, memory_order_relaxed);
}

/* Timers scheduled so far through every producer's ring (the tails of
 * their `fresh` rings, a line each written by its producer: read once a
 * block of our messages, and at most TW__STRIPES of them). */
static size_t scheduled_all(struct tw_service *s)
{
    uint64_t m = tw__rings_made(s);
    size_t n = 0;

    while (m) {
        unsigned i = (unsigned)__builtin_ctzll((unsigned long long)m);

        m &= m - 1;
        n += atomic_load_explicit(&tw__rings_at(s, i)->fresh.tail,
                                  memory_order_relaxed);
    }
    return n;
}

void tw__backlog_check(struct tw_service *s, struct tw__rings *r)
{
    size_t bound =
        (size_t)atomic_load_explicit(&s->reap_bound, memory_order_relaxed);
    size_t left = tw__ring_untaken(&r->msgs), grown;
    size_t head = atomic_load_explicit(&r->msgs.head, memory_order_relaxed);

    if (r->asked != head + 1) { /* the worker took some since we looked */
        r->asked = head + 1;
        r->fresh_at = scheduled_all(s);
        r->kicked = false;
    }
    if (left < bound)
        return;
    grown = scheduled_all(s) - r->fresh_at;
    if (grown < left / 2) /* cancels with few schedules beside them */
        return;
    if (!r->kicked) {
        r->kicked = true;
        tw__worker_kick(s);
    }
    if (left >= 2 * bound)
        wait_reap(s, &r->msgs, bound);
}
