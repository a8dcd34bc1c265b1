/*
 * The service's worker thread: the only thread that touches the core wheel
 * while the service runs.
 *
 * One turn of the loop:
 *   1. reap: take the messages from every producer's message ring and the
 *      cancel queue; unlink each cancelled timer that is still in the
 *      wheel, so its memory goes back at once, not at its deadline, and
 *      move each timer re-armed to an earlier deadline;
 *   2. admit: move at most ADMIT_BATCH new timers into the wheel, an equal
 *      share from each producer's ring, then the new queue (those cancelled
 *      on the way are dropped instead);
 *   3. advance the wheel to CLOCK_MONOTONIC. A due timer re-armed to a
 *      later deadline goes back into the wheel; one whose cancel could
 *      send no message (out of memory: handle.c) is let go of; the others
 *      are claimed by PENDING -> RUNNING and run here, or PENDING ->
 *      DISPATCHED and handed to the executor in one batch after the
 *      advance;
 *   4. sleep until the next piece of work.
 *
 * Sleeping. Hierarchical mode sleeps until tw_next_deadline(), or forever
 * when nothing is pending, and publishes that time in sleep_until. A
 * producer whose timer is due before it (or a canceller, when it is more
 * than TW__REAP_NS away) wakes the worker; one whose timer is due later
 * leaves it asleep, and the timer waits in the queue until the next wake.
 * The handshake is the classic store-then-load on both sides (the worker
 * stores sleep_until then looks at the rings and queues; a producer pushes
 * then loads sleep_until), which needs a full barrier on each side so that
 * at least one of them sees the other and a timer is never stranded. A
 * queue push is an exchange, a full barrier. A ring push is a plain store,
 * and the producer only keeps the compiler from moving its load above it:
 * the worker pays for the producers' barrier instead, with
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) after publishing its sleep
 * (gate.c), which runs a full barrier on every running thread of the
 * process, so either the worker's look that follows sees a producer's
 * push, or the producer's load after that push sees the new sleep_until.
 * A ring made after the worker found `ringed` empty (and so skipped the
 * membarrier) is published with a sequentially consistent fetch_or and a
 * full fence after it (ring.c), before the first push into it. Rings are
 * made only where the membarrier registered (ring.c); should it fail
 * later, the worker sleeps no further than it does when it skips the
 * call, producers go back to locked adds at the gate and no new rings are
 * made (gate.c). The
 * worker skips the call when the sleep ends by the next tick boundary and
 * within TW__REAP_NS: a push it missed then waits at most that, as one
 * that raced the look (below) does. Cancel messages pair
 * with reap_wake the same way. A canceller whose backlog passes the bound
 * of backlog.c kicks the worker instead, under the lock (no hand-shake
 * needed), and the worker publishes that bound after each admit. Hashed
 * mode wakes at every tick boundary, as
 * Netty does, and asks never to be woken early: no hand-shake, no
 * membarrier.
 *
 * Stop closes the producers' gate and wakes the worker, which leaves the
 * loop at step 3. A timer that falls due in an advance already running when
 * stop began is not run: it goes back into the wheel, to be handed back.
 */
#include <errno.h>
#include <sched.h>

#include "sat.h"
#include "service.h"

/* Most new timers moved into the wheel per turn (Netty's figure), so that a
 * flood of schedules cannot hold up the advance. */
#define ADMIT_BATCH 100000

static struct tw_handle *of_qnode(struct cds_wfcq_node *n)
{
    return TW_CONTAINER_OF(n, struct tw_handle, qnode);
}

/* The handle a message on the cancel queue is about; the message's node,
 * which the sender allocated, is freed. */
static struct tw_handle *of_qmsg(struct cds_wfcq_node *n)
{
    struct tw__qmsg *m = TW_CONTAINER_OF(n, struct tw__qmsg, node);
    struct tw_handle *h = m->h;

    tw_free(m, sizeof(*m));
    return h;
}

/* A message about h, which is ours if it is still in the wheel: handle.c
 * says what it means (and clears TW__CQ), we unlink or move the timer. */
static void take_message(struct tw_service *s, struct tw_handle *h)
{
    switch (tw__handle_take_message(h, tw_timer_pending(&h->timer))) {
    case TW__MSG_UNLINK:
        tw_cancel(s->wheel, &h->timer);
        tw__handle_unlinked(h);
        break;
    case TW__MSG_MOVE:
        tw_rearm(s->wheel, &h->timer, tw__deadline(h));
        break;
    case TW__MSG_NONE:
        break;
    }
}

/* Pass to fn what each ring of the kind at `off` in struct tw__rings held
 * when we looked, at most `share` of each (so that one flooding thread
 * cannot take a turn's whole batch from the others); returns how many,
 * and sets *left if a ring kept some. */
static size_t drain_rings(struct tw_service *s, uint64_t m, size_t off,
                          size_t share, bool *left,
                          void (*fn)(struct tw_service *, struct tw_handle *))
{
    size_t n = 0;

    while (m) {
        unsigned i = (unsigned)__builtin_ctzll((unsigned long long)m);
        struct tw__ring *r =
            (struct tw__ring *)((char *)tw__rings_at(s, i) + off);
        size_t k = tw__ring_ready(r);

        m &= m - 1;
        if (k > share) {
            k = share;
            *left = true;
        }
        for (size_t j = 0; j < k; j++)
            fn(s, tw__ring_take(r));
        n += k;
    }
    return n;
}

void tw__worker_reap(struct tw_service *s, bool wait)
{
    struct cds_wfcq_node *n;
    bool any, left = false;

    atomic_store_explicit(&s->hinted, false, memory_order_relaxed);
    any = drain_rings(s, tw__rings_made(s), offsetof(struct tw__rings, msgs),
                      SIZE_MAX, &left, take_message) > 0;
    while ((n = wait ? tw__mpsc_pop_wait(&s->cancelq)
                     : tw__mpsc_pop(&s->cancelq)) &&
           n != TW__MPSC_BUSY) {
        take_message(s, of_qmsg(n));
        any = true;
    }
    s->reaped = any;
}

/* New h into the wheel, or let go of if it was cancelled on the way. */
static void admit_one(struct tw_service *s, struct tw_handle *h)
{
    if (tw__handle_waiting(h))
        tw_schedule(s->wheel, &h->timer, tw__deadline(h));
    else
        tw__handle_drop(s, h, TW__OUT_CANCELLED);
}

/* As admit_one(), but a handle whose word a canceller or re-armer holds
 * (CANCELLING, LOCKED) is put aside for the next turn instead of waited
 * for: with more producers than processors, the holder may have been
 * preempted inside its few instructions, and a worker yielding to it until
 * it ran again took hundreds of milliseconds to admit a turn's timers
 * (issue 28). */
static void admit_or_defer(struct tw_service *s, struct tw_handle *h)
{
    if (tw__handle_held(h))
        tw__hlist_push(&s->held, h);
    else
        admit_one(s, h);
}

/* The handles put aside by the last admission: admitted now, or put aside
 * again (wait: by stop, which waits for every holder instead). */
static void admit_held(struct tw_service *s, bool wait)
{
    struct tw__hlist l = s->held;
    struct tw_handle *h;

    s->held = (struct tw__hlist){0};
    while ((h = tw__hlist_pop(&l)))
        (wait ? admit_one : admit_or_defer)(s, h);
}

/* At most max new handles: an equal share from each ring, then the queue
 * (which holds the pushes of threads without a ring) up to max. Returns
 * whether some may be left. */
bool tw__worker_admit(struct tw_service *s, size_t max, bool wait)
{
    uint64_t m = tw__rings_made(s);
    size_t share = max / ((size_t)__builtin_popcountll(m) + 1);
    bool left = false;
    size_t i, q = 0;

    admit_held(s, wait);
    i = drain_rings(s, m, offsetof(struct tw__rings, fresh), share ? share : 1,
                    &left, wait ? admit_one : admit_or_defer);

    for (; i + q < max; q++) {
        struct cds_wfcq_node *n =
            wait ? tw__mpsc_pop_wait(&s->newq) : tw__mpsc_pop(&s->newq);

        if (!n || n == TW__MPSC_BUSY) {
            left = left || n;
            break;
        }
        (wait ? admit_one : admit_or_defer)(s, of_qnode(n));
    }
    if (q)
        atomic_store_explicit(
            &s->newq_out,
            atomic_load_explicit(&s->newq_out, memory_order_relaxed) + q,
            memory_order_relaxed);
    s->admitted = i + q > 0;
    return left || s->held.n || i + q >= max;
}

/* Run h's callback here (no executor): handle.c moves its word; a
 * periodic or re-armed timer goes back into the wheel. */
static void run_here(struct tw_service *s, struct tw_handle *h)
{
    if (tw__handle_run(s, h))
        tw_schedule(s->wheel, &h->timer, tw__deadline(h));
}

/* The wheel's expiry function (ctx: the service), called for every due
 * timer instead of the timer's cb, a field of ours: h has left the
 * wheel, and until it goes back in, its timer's deadline field is ours
 * (service.h), read here before anything overwrites it. handle.c decides
 * (tw__handle_claim()); we act on the answer. */
void tw__worker_expire(struct tw_timer *t, void *ctx)
{
    struct tw_handle *h = TW_CONTAINER_OF(t, struct tw_handle, timer);
    struct tw_service *s = ctx;
    bool exec = s->exec.nthreads != 0;

    switch (tw__handle_claim(h, exec, tw_timer_deadline(t), tw__stopping(s))) {
    case TW__CLAIM_GONE:
        tw__handle_drop(s, h, TW__OUT_CANCELLED);
        return;
    case TW__CLAIM_LATER: /* to hand back, or re-armed */
        tw_schedule(s->wheel, t, tw__deadline(h));
        return;
    case TW__CLAIM_WON:
        break;
    }
    tw__metrics_fired(s, tw__deadline(h));
    if (exec)
        tw__hlist_push(&s->batch, h);
    else
        run_here(s, h);
}

/* The first tick boundary after now. */
static uint64_t next_tick(const struct tw_service *s, uint64_t now)
{
    uint64_t ticks = now > s->start_ns ? (now - s->start_ns) / s->tick_ns : 0;

    return tw__add_sat(s->start_ns, (ticks + 1) * s->tick_ns);
}

/* When the worker must next look at the wheel. */
static uint64_t next_wake(const struct tw_service *s, uint64_t now)
{
    uint64_t at;

    if (s->mode == TW_HASHED)
        return next_tick(s, now);
    at = tw_next_deadline(s->wheel);
    if (s->reaped && at > tw__add_sat(now, TW__REAP_NS))
        at = tw__add_sat(now, TW__REAP_NS);
    return at;
}

/* Block on the condition variable until target, a kick, or forever when
 * target is UINT64_MAX. Called with s->lock held. */
static void wait_until(struct tw_service *s, uint64_t target)
{
    struct timespec ts = {
        .tv_sec = (time_t)(target / UINT64_C(1000000000)),
        .tv_nsec = (long)(target % UINT64_C(1000000000)),
    };

    while (!s->kicked) {
        int rc = target == UINT64_MAX
                     ? pthread_cond_wait(&s->wake, &s->lock)
                     : pthread_cond_timedwait(&s->wake, &s->lock, &ts);

        atomic_fetch_add_explicit(&s->wakeups, 1, memory_order_relaxed);
        if (rc == ETIMEDOUT)
            break;
    }
}

static void publish_sleep(struct tw_service *s, uint64_t now, uint64_t target)
{
    atomic_store_explicit(&s->sleep_until, target, memory_order_seq_cst);
    atomic_store_explicit(&s->reap_wake, target > tw__add_sat(now, TW__REAP_NS),
                          memory_order_seq_cst);
    cmm_smp_mb();
}

/* Whether a new timer waits in a ring or the queue. */
static bool fresh_waiting(struct tw_service *s)
{
    return !tw__mpsc_empty(&s->newq) || !tw__rings_fresh_empty(s);
}

/* Whether a message waits in a ring or the queue. */
static bool message_waiting(struct tw_service *s)
{
    return !tw__mpsc_empty(&s->cancelq) || !tw__rings_msgs_empty(s);
}

/* After publishing a sleep until target: make a ring push that the
 * producer followed with a look at sleep_until or reap_wake either visible
 * to our look at the rings or ordered after our store (the top,
 * "Sleeping"). Not needed when no ring exists, nor when the sleep ends by
 * the next tick boundary and within TW__REAP_NS: a producer would then not
 * wake us anyway (its timer is due no earlier than it could fire then;
 * reap_wake is false). */
/* Returns the target to sleep to: target, or the next tick boundary (and
 * at most TW__REAP_NS) when the barrier could not run, so that a push it
 * missed waits no longer than when the barrier is skipped. */
static uint64_t see_ring_pushes(struct tw_service *s, uint64_t now,
                                uint64_t target)
{
    uint64_t near = next_tick(s, now);

    if (near > tw__add_sat(now, TW__REAP_NS))
        near = tw__add_sat(now, TW__REAP_NS);
    if (tw__rings_made(s) && target > near && !tw__gate_membarrier())
        return near;
    return target;
}

static void sleep_next(struct tw_service *s)
{
    uint64_t now = tw__mono_ns();
    uint64_t target = next_wake(s, now), seen;

    if (target <= now)
        return;
    pthread_mutex_lock(&s->lock);
    if (s->mode == TW_HASHED) {
        wait_until(s, target);
    } else if (!s->kicked) {
        publish_sleep(s, now, target);
        if ((seen = see_ring_pushes(s, now, target)) < target) {
            target = seen;
            publish_sleep(s, now, target);
        }
        /* Pushed before sleep_until was published, so no one woke us.
         * Those timers were scheduled before now: a new one cannot fall
         * due before the next tick boundary unless it was scheduled with a
         * delay of about zero, and such a one fires on that boundary (at
         * most a tick late). Waking there instead of going round the loop
         * at once keeps a busy worker from chasing every push. */
        if (fresh_waiting(s) && target > next_tick(s, now)) {
            target = next_tick(s, now);
            publish_sleep(s, now, target);
        }
        if (atomic_load_explicit(&s->hinted, memory_order_relaxed) &&
            target > next_tick(s, now)) {
            target = next_tick(s, now);
            publish_sleep(s, now, target);
        }
        if (message_waiting(s) && target > now + TW__REAP_NS) {
            target = now + TW__REAP_NS;
            publish_sleep(s, now, target);
        }
        wait_until(s, target);
        atomic_store_explicit(&s->sleep_until, 0, memory_order_relaxed);
        atomic_store_explicit(&s->reap_wake, false, memory_order_relaxed);
    }
    s->kicked = false;
    pthread_mutex_unlock(&s->lock);
}

/* Back-pressure: tell producers to wait while the new queue has not been
 * emptied for longer than max_lag (gate.c). */
static void track_lag(struct tw_service *s, uint64_t now, bool more)
{
    bool late;

    if (!more)
        s->drained_at = now;
    late = more && s->max_lag && now - s->drained_at > s->max_lag;
    if (late != s->behind_set) {
        s->behind_set = late;
        atomic_store_explicit(&s->behind, late, memory_order_relaxed);
    }
}

/* Sleep; if the queue was empty when we went to sleep, whatever waits
 * after it came in since, so the lag counts from the wake-up (an idle
 * worker is not behind). If timers already waited (they came in during a
 * long advance or callback), the lag keeps counting from the last time the
 * queue was empty. */
static void sleep_then_count_lag(struct tw_service *s)
{
    bool empty = !fresh_waiting(s);

    atomic_store_explicit(&s->turn_at, 0, memory_order_relaxed); /* no lag */
    sleep_next(s);
    if (empty)
        s->drained_at = tw__mono_ns();
}

void *tw__worker_main(void *arg)
{
    struct tw_service *s = arg;

    tw__svc_current = s;
    for (;;) {
        uint64_t now = tw__mono_ns();
        bool more;

        atomic_store_explicit(&s->turn_at, now, memory_order_relaxed);
        tw__worker_reap(s, false);
        more = tw__worker_admit(s, ADMIT_BATCH, false);
        if (s->reaped || s->admitted)
            tw__backlog_reaped(s); /* wake the cancellers waiting */
        tw__backlog_publish(s, now);
        track_lag(s, now, more);
        if (tw__stopping(s)) {
            atomic_store_explicit(&s->turn_at, 0, memory_order_relaxed);
            break;
        }
        tw_advance(s->wheel, now);
        if (s->batch.n)
            tw__exec_submit(&s->exec, &s->batch);
        if (more)
            sched_yield(); /* let a half-done push finish */
        else
            sleep_then_count_lag(s);
    }
    return NULL;
}
