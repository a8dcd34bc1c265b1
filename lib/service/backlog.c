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
 *  - the dead handles counted are those whose messages wait in a thread's
 *    message ring and, since issue 28, those cancelled before the worker
 *    admitted them, which wait in the new-timer ring (or the new queue)
 *    they were pushed into: the worker takes every message at each turn
 *    but admits a share of each ring, and with 60 producers on 2 cores
 *    the messages went at once while 2 million dead handles piled up
 *    unadmitted, let go of 1.5-3 s after their cancels;
 *  - a canceller looks at its message ring once per block of the ring,
 *    when the block is full, so the fast path of a cancel gains no
 *    instruction and no write to a line another thread writes; past the
 *    bound it wakes the worker, once per reap of the worker's (the head it
 *    saw moved), and it never sleeps there: it holds the word of the
 *    handle it cancels (CANCELLING), and a worker that met that very
 *    handle would wait for it while it waited for the worker;
 *  - a producer looks at its two rings once per block of its new-timer
 *    ring, when the block is full, before the push (tw__backlog_schedule;
 *    a thread without a ring, once per TW__QUEUE_LOOK (64) of its own
 *    pushes onto the new queue, at the queue against the whole bound):
 *    it holds nothing then and is inside the gate, so the service is
 *    alive. Every thread without a ring looks at its own count: when
 *    only the thread whose push met a multiple of 512 on the shared
 *    stripe's count looked, one of some 36 such threads waited at a time
 *    and the others went on, and under ASan 100 producers (36 of them
 *    without a ring) left up to 57 % of the ring-less threads' cancelled
 *    timers for more than 1 s (tests/service/test_backlog.c, rpc_100_*);
 *  - the backlog counts only while memory grows: the message ring while,
 *    since the worker last took from it, the producers pushed into their
 *    rings at least half as many new timers as this thread cancelled
 *    (each dead handle waiting has a new live one beside it, the RPC
 *    pattern, whichever thread schedules); the new-timer ring (or the
 *    queue) while the thread sent at least half as many messages as it
 *    scheduled timers since it last looked (it cancels what it schedules).
 *    A burst of cancels alone (a wheel being emptied) gives back as many
 *    live timers as it makes dead ones, and is reaped as it was before
 *    the bound: holding it up cut svcbench's cancels/s from 39.8 to 14.4 M
 *    (one thread) and 57.5 to 18.6 M (two), and waking the worker during
 *    it, from 69.0 to 49.6 M with two threads (the worker then shares
 *    their two cores), for no memory saved;
 *  - past the bound the producer wakes the worker; past twice the bound
 *    the worker is not keeping up (producers that outrun it on the cores
 *    they share): the producer sleeps until the worker has taken what was
 *    past the bound below it, for as long as the worker makes progress,
 *    at most TW__REAP_NS without progress (a long callback), and never on a
 *    thread of any service (a callback or release hook would hold up its
 *    own service for another's, or wait for itself) nor once stop has
 *    begun. Sleeping, not yielding, gives the worker the processor on a
 *    machine whose cores the producers fill (sched_yield() did not: with
 *    two streams on two cores the garbage still reached 35,000 handles);
 *    and waiting for progress, not for 2 ms alone, is what bounds 60
 *    producers: each went on for another block after 2 ms and they still
 *    outran a worker that had a sixtieth of the processors.
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
 * look again. The new queue's backlog is the shared stripe's schedules
 * less newq_out, the worker's count of its takes (queue_untaken()).
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
    if (bound != atomic_load_explicit(&s->reap_queue, memory_order_relaxed))
        atomic_store_explicit(&s->reap_queue, bound, memory_order_relaxed);
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

/* Handles on the new queue the worker has not taken yet, as far as the
 * counters already kept tell, without a counter of its own that every
 * push would add to: the schedules of threads without a ring (the shared
 * stripe's `accepted`, an atomic add each already) less the worker's takes
 * from the queue. It can only count short (a ringed thread whose ring
 * could not grow, and the executor's hand-backs, push onto the queue
 * without counting there; the worker's takes count them), never long. */
static size_t queue_untaken(struct tw_service *s)
{
    uint64_t in = atomic_load_explicit(&s->stripes[TW__STRIPES].accepted,
                                       memory_order_relaxed);
    uint64_t out = atomic_load_explicit(&s->newq_out, memory_order_relaxed);

    return in > out ? (size_t)(in - out) : 0;
}

/* What a waiting canceller watches: the rings or the queue that were past
 * the bound (NULL, false: not watched). */
struct watch {
    const struct tw__ring *msgs, *fresh;
    bool queue;
    size_t bound;
};

static bool still_behind(struct tw_service *s, const struct watch *w)
{
    return (w->msgs && tw__ring_untaken(w->msgs) >= w->bound) ||
           (w->fresh && tw__ring_untaken(w->fresh) >= w->bound) ||
           (w->queue && queue_untaken(s) >= w->bound);
}

/* How far the worker has taken what w watches: moves while it works. */
static size_t progress(struct tw_service *s, const struct watch *w)
{
    size_t n = 0;

    if (w->msgs)
        n += atomic_load_explicit(&w->msgs->head, memory_order_relaxed);
    if (w->fresh)
        n += atomic_load_explicit(&w->fresh->head, memory_order_relaxed);
    if (w->queue)
        n += atomic_load_explicit(&s->newq_out, memory_order_relaxed);
    return n;
}

static struct timespec after_wait(void)
{
    uint64_t until = tw__mono_ns() + TW__REAP_WAIT_NS;

    return (struct timespec){
        .tv_sec = (time_t)(until / UINT64_C(1000000000)),
        .tv_nsec = (long)(until % UINT64_C(1000000000)),
    };
}

/* The worker is more than twice the bound behind: wake it and sleep until
 * it has taken what w watches below the bound (its broadcast after a reap
 * or an admission that took something), stop has begun, or it took
 * nothing of it for TW__REAP_NS (a worker in a long callback, or one
 * waiting for a processor among hundreds of threads), looking every
 * TW__REAP_WAIT_NS. A worker that makes progress is waited for to the
 * end: with a time limit alone, 60 producers on 2 cores each went on for
 * a block after 2 ms and still outran a worker that had one sixtieth of
 * the processors (issue 28). Nor is there a limit in all, nor a shorter
 * one while the worker is in its advance (2 ms, for a long callback), as
 * there were: a worker preempted there, or waiting 100 ms for a processor
 * among 200 threads, let them all go on, and under ASan, with the 100
 * producers of one test beside the 100 of another (make check runs two
 * tests at a time), in each of 3 runs a test let 5.7-74 % of its
 * cancelled timers go after more than 1 s; with 100 ms without progress
 * and 2 ms in the advance, 3 and 12 % in 2 runs of 3; with 100 ms without
 * progress alone, none in 4. Counting ourselves among
 * the waiters before the look at the heads, as the worker stores the heads
 * before its look at the waiters, with a full barrier each, means that either
 * we see its take or it sees us and broadcasts under the lock we hold until we
 * sleep. Never on a thread of any service: a callback (or a release hook) that
 * cancels would hold up its own service's timers for another's, or wait
 * for itself. */
static void wait_reap(struct tw_service *s, const struct watch *w)
{
    struct timespec ts = after_wait();
    uint64_t give_up = tw__mono_ns() + TW__REAP_NS;
    size_t seen = progress(s, w);

    if (tw__svc_current)
        return;
    atomic_fetch_add_explicit(&s->reap_waiters, 1, memory_order_seq_cst);
    pthread_mutex_lock(&s->lock);
    s->kicked = true;
    pthread_cond_signal(&s->wake);
    while (still_behind(s, w) && !tw__stopping(s)) {
        size_t now;

        if (pthread_cond_timedwait(&s->reap_done, &s->lock, &ts) != ETIMEDOUT)
            continue;
        if ((now = progress(s, w)) != seen)
            give_up = tw__mono_ns() + TW__REAP_NS;
        else if (tw__mono_ns() >= give_up)
            break; /* the worker took nothing of it for TW__REAP_NS */
        seen = now;
        ts = after_wait();
    }
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

/* The dead handles this thread's message ring holds, as the bound counts
 * them: its unreaped messages, if the producers scheduled at least half as
 * many timers beside them since the worker last took from it (else 0: a
 * burst of cancels alone). */
static size_t dead_in_msgs(struct tw_service *s, struct tw__rings *r,
                           size_t bound)
{
    size_t left = tw__ring_untaken(&r->msgs);
    size_t head = atomic_load_explicit(&r->msgs.head, memory_order_relaxed);

    if (r->asked != head + 1) { /* the worker took some since we looked */
        r->asked = head + 1;
        r->fresh_at = scheduled_all(s);
        r->kicked = false;
    }
    if (left < bound || scheduled_all(s) - r->fresh_at < left / 2)
        return 0;
    return left;
}

/* The cancel's side, its message ring's block full, holding the word of
 * the handle it cancels (CANCELLING): past the bound it wakes the worker,
 * once per reap, but never waits here. A canceller that slept holding
 * CANCELLING would stop a worker that meets that very handle (admitting
 * it, or firing it) until the sleep timed out, and the worker, stopped,
 * could not take what the canceller waits for: the waiting is done on
 * the schedule's side, below, where the thread holds nothing. */
void tw__backlog_check(struct tw_service *s, struct tw__rings *r)
{
    size_t bound =
        (size_t)atomic_load_explicit(&s->reap_bound, memory_order_relaxed);

    if (dead_in_msgs(s, r, bound) >= bound && !r->kicked) {
        r->kicked = true;
        tw__wake_kick(s);
    }
}

/*
 * The schedule's side, once per block of the thread's new-timer ring, when
 * the block is full, before the push: the thread holds no handle's word
 * and is inside the gate, so the service is alive and the worker is never
 * kept waiting on us. The dead handles counted are those of its message
 * ring (as above) and, new (issue 28), those waiting for admission in its
 * new-timer ring: a timer cancelled before the worker admitted it stays
 * where it was pushed, and the worker lets go of it only when it admits
 * it. The worker takes every message at each turn but admits a share of
 * each ring, so with more producers than processors (60 threads on 2
 * cores in the RPC pattern) the messages were taken at once while the
 * dead handles piled up in the new-timer rings: 2 million of them, let
 * go of 1.5 s after their cancels (tests/service/test_backlog.c, rpc_*).
 * The new-timer ring counts only if the thread sent at least half as many
 * messages as it scheduled timers since its last look (it cancels what it
 * schedules). Past the bound it wakes the worker; past twice the bound it
 * waits for it (wait_reap()).
 */
void tw__backlog_schedule(struct tw_service *s, struct tw__rings *r)
{
    size_t sent = atomic_load_explicit(&r->msgs.tail, memory_order_relaxed);
    size_t grown = sent - r->msgs_mine;
    struct watch w = {
        .bound =
            (size_t)atomic_load_explicit(&s->reap_bound, memory_order_relaxed),
    };
    size_t msgs = dead_in_msgs(s, r, w.bound);
    size_t fresh =
        grown >= TW__BLOCK_SLOTS / 2 ? tw__ring_untaken(&r->fresh) : 0;

    r->msgs_mine = sent;
    if (msgs < w.bound && fresh < w.bound)
        return;
    tw__wake_kick(s);
    w.msgs = msgs >= 2 * w.bound ? &r->msgs : NULL;
    w.fresh = fresh >= 2 * w.bound ? &r->fresh : NULL;
    if (w.msgs || w.fresh)
        wait_reap(s, &w);
}

/* A thread without a ring: its cancel messages onto cancelq and its pushes
 * onto newq since it last looked. Per thread, not per service: a thread
 * that works in two services looks at the second with counts that include
 * the first's, which at worst makes one look too early or skips one. The
 * pushes are counted inline (tw__worker_post()), the messages out of line
 * (handle.c, queue_message(), which allocates anyway). */
_Thread_local unsigned tw__q_pushed;
static _Thread_local unsigned q_sent;

void tw__backlog_sent_queue(void)
{
    q_sent++;
}

/* As tw__backlog_schedule(), for a thread without a ring, whose new timers
 * go onto the new queue that all such threads share: once per
 * TW__QUEUE_LOOK of its own pushes, the queue's backlog against the whole
 * bound, if it sent at least half as many messages as it pushed timers
 * (it cancels what it schedules: the RPC pattern). */
void tw__backlog_schedule_queue(struct tw_service *s)
{
    struct watch w = {.queue = true};
    unsigned sent = q_sent, pushed = tw__q_pushed;
    size_t left;

    q_sent = 0;
    tw__q_pushed = 0;
    if (sent < pushed / 2) /* this thread cancels little beside */
        return;
    w.bound =
        (size_t)atomic_load_explicit(&s->reap_queue, memory_order_relaxed);
    left = queue_untaken(s);
    if (left < w.bound)
        return;
    tw__wake_kick(s);
    if (left >= 2 * w.bound)
        wait_reap(s, &w);
}
