/*
 * Handles of the timer service: allocation, reference counts, the state
 * machine, cancel, cancel-and-wait and re-arm (see service.h for the
 * states, custody and the references).
 *
 * Cancel and re-arm must give a definite answer from any thread while the
 * worker, an executor thread or stop may be moving the same handle on. Each
 * of them moves it only by compare-and-swap from the state word it read, so
 * exactly one wins. A cancel that wins PENDING -> CANCELLING, DISPATCHED ->
 * CANCELLED or a running timer that would run again -> CANCEL_RUNNING
 * returns 1 and no later run can start; one that finds a one-shot running
 * its last run moves it to LAST_RUN and returns 0 (no re-arm can revive
 * it); one that finds LOCKED or CANCELLING waits it out and looks again;
 * any other state returns 0. Every winning cancel passes through CANCELLING
 * while it counts itself on the service (gate.c), so the service is alive
 * meanwhile. A re-arm takes LOCKED, writes the deadline, and stores the state
 * back with the generation bumped, so a worker that read the old deadline fails
 * its claim and reads again.
 *
 * Winning from PENDING means the timer may be sitting in the wheel, where
 * only the worker may unlink it. The canceller sends a message through its
 * message ring or the cancel queue, asks the worker to reap it within
 * TW__REAP_NS, and only then stores CANCELLED. A re-arm to an earlier
 * deadline sends the same kind of message and wakes the worker if it would
 * sleep past the new deadline.
 *
 * The means to send are found only once the move is held (CANCELLING,
 * LOCKED), as the service may be gone before: a free slot in the ring's
 * block, else a new block, else a node for the cancel queue. Should all of
 * them fail (out of memory), nothing already done is undone: the cancel
 * has won and stays won without a message, clearing TW__CQ in its store of
 * CANCELLED (service.h says who lets go of the handle then); the re-arm has
 * written nothing yet, and puts the word back as it found it, -ENOMEM.
 *
 * Those are the only times a caller touches the service, and the service
 * waits out CANCELLING and LOCKED before it lets go of a handle, so a
 * service that has been stopped can be freed while its old handles are
 * still cancelled, re-armed (answer 0) and queried.
 *
 * Every move of the state word and of the reference count is also told to
 * a user's ThreadSanitizer, if there is one (tsan.h).
 *
 * Cancel-and-wait sleeps on the state word itself (a futex), so it needs
 * nothing of the service: the caller's reference keeps the handle alive,
 * and the runner wakes it after leaving the running states.
 */
#include <errno.h>
#include <sched.h>

#include "clock.h"
#include "sat.h"
#include "service.h"

/* The word w moved to state `to`, the generation bumped if bump, the flags
 * (TW__WAITERS, TW__CQ, TW__ORPHAN) kept. */
static inline uint32_t with(uint32_t w, int to, bool bump)
{
    return ((w & ~TW__ST_MASK) + (bump ? TW__GEN_ONE : 0)) | (uint32_t)to;
}

/* Store state `to` into h, whose word w (LOCKED or CANCELLING) we hold:
 * no one else writes the word meanwhile. A release store (a plain one on
 * x86): those who wait it out (tw__handle_settle) acquire, and
 * cancel-and-wait's sleep hand-shake is with the compare-and-swaps of the
 * moves out of a running state, never with this store. */
static inline void put(struct tw_handle *h, uint32_t w, int to, bool bump)
{
    tw__hb_release(h);
    atomic_store_explicit(&h->word, with(w, to, bump), memory_order_release);
}

/* A handle of the right size for spec, its refs word holding one
 * reference, the fixed flags, the callback's index (or none: the callback
 * is in the tail) and s's slot. */
static struct tw_handle *alloc_handle(struct tw_service *s,
                                      const struct tw_timer_spec *spec)
{
    uint32_t refs = 1 | (uint32_t)s->slot << TW__SLOT_SHIFT;
    unsigned cb = 0;
    struct tw__handle_long *l;
    struct tw_handle *h;

    if (spec->period && spec->kind == TW_FIXED_DELAY)
        refs |= TW__HF_FIXED_DELAY;
    if (!spec->period && !spec->release && (cb = tw__cb_index(s, spec->cb))) {
        h = tw_alloc(sizeof(*h));
        refs |= (uint32_t)cb << TW__CB_SHIFT;
    } else {
        l = tw_alloc(sizeof(*l));
        if (!l)
            return NULL;
        l->tail.period = spec->period;
        l->tail.release = spec->release;
        l->tail.cb = spec->cb;
        refs |= TW__HF_TAIL;
        h = &l->h;
    }
    if (h)
        atomic_init(&h->refs, refs);
    return h;
}

struct tw_handle *tw__handle_new(struct tw_service *s,
                                 const struct tw_timer_spec *spec)
{
    struct tw_handle *h = alloc_handle(s, spec);

    /* Every field is set here or by the push that uses it (the queue
     * nodes), so the block is not zeroed first. The core's cb is ours
     * (service.h): the requested deadline lies there. */
    if (!h)
        return NULL;
    tw_timer_init(&h->timer, NULL, spec->arg);
    h->qnode.next = NULL;
    atomic_init(&h->deadline, spec->deadline);
    atomic_init(&h->word, TW__PENDING);
    return h;
}

/* The caller's reference, taken before h is published. */
void tw__handle_ref_unpublished(struct tw_handle *h)
{
    atomic_store_explicit(&h->refs, tw__fixed(h) + 1, memory_order_relaxed);
}

/* Drop a reference the caller holds. No one ever adds a reference to a
 * published handle (there is no retain: the count only falls), so a count
 * of one, read with acquire, is the caller's own, the last: it frees h
 * with no read-modify-write, and the acquire orders the free after the
 * other holders' release decrements. Otherwise the release half of the
 * subtraction makes this thread's writes to h visible to whoever frees it,
 * and its acquire half makes the freeing thread see everyone's. The worker
 * drops the service's reference after a cancel_release or a fire-and-forget
 * timer this way: one locked instruction fewer per timer. */
void tw__handle_unref(struct tw_handle *h)
{
    if ((atomic_load_explicit(&h->refs, memory_order_acquire) & TW__REF_MASK) !=
        1) {
        tw__hb_release(h);
        if ((atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) &
             TW__REF_MASK) != 1)
            return;
    }
    tw__hb_acquire(h);
    tw_free(h, tw__handle_size(h));
}

/* Move h from the word *w to state `to` (bumping the generation if bump),
 * keeping the flags (TW__WAITERS, TW__CQ, TW__ORPHAN); on failure *w is the
 * word found. */
static bool cas(struct tw_handle *h, uint32_t *w, int to, bool bump)
{
    bool won;

    tw__hb_release(h);
    won = atomic_compare_exchange_strong_explicit(
        &h->word, w, with(*w, to, bump), memory_order_seq_cst,
        memory_order_acquire);
    tw__hb_acquire(h);
    return won;
}

/* Wait out a canceller or re-armer holding CANCELLING or LOCKED (a few
 * instructions unless it was preempted there); returns the word then. */
uint32_t tw__handle_settle(struct tw_handle *h)
{
    uint32_t w;

    while ((w = atomic_load_explicit(&h->word, memory_order_acquire)),
           tw__st(w) == TW__CANCELLING || tw__st(w) == TW__LOCKED)
        sched_yield();
    tw__hb_acquire(h);
    return w;
}

/* After a move out of a running state from word w: wake any
 * cancel-and-wait. A waiter sets TW__WAITERS by compare-and-swap on the
 * running word, so either it did so before our move (which then saw the
 * bit in w) or its swap failed and it sees the new state itself. */
void tw__handle_wake(struct tw_handle *h, uint32_t w)
{
    if (w & TW__WAITERS)
        tw__futex_wake(&h->word);
}

/* The service lets go of h: count the outcome, call the release hook, drop
 * its reference. */
void tw__handle_drop(struct tw_service *s, struct tw_handle *h,
                     enum tw__outcome why)
{
    tw_release_fn *release = tw__release(h);

    /* A cancelled one was counted, and its slot given back, when the cancel
     * won (gate.c). */
    if (why != TW__OUT_CANCELLED)
        tw__gate_let_go(s, why == TW__OUT_COMPLETED);
    if (release)
        release(tw__arg(h));
    tw__handle_let_go(h);
}

/* Drop the service's reference to h, whose word is settled (the service
 * lets go of it, or the worker took its message): at once if no message is
 * queued, else leave it to the worker (TW__ORPHAN; service.h). */
void tw__handle_let_go(struct tw_handle *h)
{
    uint32_t w = atomic_load_explicit(&h->word, memory_order_acquire);

    do {
        if (!(w & TW__CQ)) {
            tw__handle_unref(h);
            return;
        }
        tw__hb_release(h);
    } while (!atomic_compare_exchange_weak_explicit(
        &h->word, &w, w | TW__ORPHAN, memory_order_acq_rel,
        memory_order_acquire));
}

/*
 * The next deadline of periodic h whose run just returned at now. Fixed
 * delay: now + period. Fixed rate: the next point of the grid last +
 * k * period; when that is already past, TW_CATCHUP_ALL keeps it (every
 * missed run happens, back to back) and TW_CATCHUP_SKIP jumps to the first
 * point after now.
 */
static uint64_t next_deadline(const struct tw_service *s,
                              const struct tw_handle *h, uint64_t now)
{
    uint64_t last = tw__deadline(h), period = tw__period(h);
    uint64_t next;

    if (tw__kind(h) == TW_FIXED_DELAY)
        return tw__add_sat(now, period);
    next = tw__add_sat(last, period);
    if (next > now || s->catchup == TW_CATCHUP_ALL)
        return next;
    return tw__add_sat(last, tw__mul_sat((now - last) / period + 1, period));
}

/*
 * The moves of the service's own threads. Each is asked by the thread
 * that holds h (the worker, an executor thread, stop) and answers what to
 * do with the timer: the wheel and the queues are theirs, the word ours.
 */

/* Whether h, new and just taken in by the worker, is still waiting (not
 * cancelled on the way): the word settled, read. */
bool tw__handle_waiting(struct tw_handle *h)
{
    return tw__st(tw__handle_settle(h)) == TW__PENDING;
}

/*
 * The commonest message: h was cancelled while in the wheel, its word w
 * (settled). Nothing but the worker moves that word any more: CANCELLED
 * is final to every cancel and re-arm, and only the one who holds h lets
 * go of it (the swap that sets TW__ORPHAN), which for a timer in the
 * wheel is the worker. So TW__CQ is cleared with a plain store, not the
 * compare-and-swap below: a locked instruction waits for every store
 * before it to reach the cache, here the previous message's unlink, which
 * writes two neighbours in the wheel that no cache holds, and the swap
 * held 97 % of the worker's message time in a cancel burst (perf;
 * docs/service.md). The worker then unlinks it and calls
 * tw__handle_unlinked(), which skips tw__handle_drop()'s second look at
 * the word: 14 instructions fewer a message.
 */
enum tw__msg tw__handle_take_message(struct tw_handle *h, bool in_wheel)
{
    uint32_t w = tw__handle_settle(h);

    if (in_wheel && tw__st(w) == TW__CANCELLED) {
        put(h, w & ~TW__CQ, TW__CANCELLED, false);
        return TW__MSG_UNLINK;
    }
    /* Clear TW__CQ in the word we act on: a cancel or re-arm after this
     * sends a message of its own. Out of the wheel, whoever holds h may
     * free it as soon as this swap has cleared TW__CQ: the worker touches
     * it afterwards only if it is in the wheel, or if its holder let go of
     * it before (TW__ORPHAN: the service's reference is dropped here in
     * its place). */
    tw__hb_release(h);
    while (!atomic_compare_exchange_weak_explicit(
        &h->word, &w, w & ~(TW__CQ | TW__ORPHAN), memory_order_acq_rel,
        memory_order_acquire))
        w = tw__handle_settle(h);
    tw__hb_acquire(h);
    if (w & TW__ORPHAN) {
        tw__handle_unref(h);
        return TW__MSG_NONE;
    }
    if (!in_wheel)
        return TW__MSG_NONE;
    if (tw__st(w) == TW__CANCELLED)
        return TW__MSG_UNLINK;
    if (tw__deadline(h) < tw_timer_deadline(&h->timer))
        return TW__MSG_MOVE;
    return TW__MSG_NONE;
}

/* The worker has unlinked cancelled h (TW__MSG_UNLINK): the service lets
 * go of it. TW__CQ is clear and no one else can set TW__ORPHAN, so the
 * release hook and the reference, without tw__handle_drop()'s look. */
void tw__handle_unlinked(struct tw_handle *h)
{
    tw_release_fn *release = tw__release(h);

    if (release)
        release(tw__arg(h));
    tw__handle_unref(h);
}

/* The worker meets h due in the wheel at wheel_deadline: claim it for a
 * run (PENDING -> RUNNING, or DISPATCHED for an executor), or say it is
 * gone (cancelled, message or not) or to go back into the wheel at its
 * requested deadline (re-armed later, or stop has begun: handed back). The
 * generation makes a claim fail if a re-arm came between our read of the
 * deadline and the swap. */
enum tw__claim tw__handle_claim(struct tw_handle *h, bool exec,
                                uint64_t wheel_deadline, bool stopping)
{
    int to = exec ? TW__DISPATCHED : TW__RUNNING;

    for (;;) {
        uint32_t w = tw__handle_settle(h);

        if (tw__st(w) != TW__PENDING)
            return TW__CLAIM_GONE;
        if (stopping || tw__deadline(h) > wheel_deadline)
            return TW__CLAIM_LATER;
        if (cas(h, &w, to, false))
            return TW__CLAIM_WON;
    }
}

/* An executor thread takes h from its queue: DISPATCHED -> RUNNING (won),
 * pending again (re-armed while queued: back to the worker), or gone. */
enum tw__claim tw__handle_claim_dispatched(struct tw_handle *h)
{
    for (;;) {
        uint32_t w = tw__handle_settle(h);

        if (tw__st(w) == TW__PENDING)
            return TW__CLAIM_LATER;
        if (tw__st(w) != TW__DISPATCHED)
            return TW__CLAIM_GONE;
        if (cas(h, &w, TW__RUNNING, false))
            return TW__CLAIM_WON;
    }
}

/* Stop claims h for its hand-back (PENDING or DISPATCHED -> RETURNED);
 * false: cancelled meanwhile, to be let go of as such. */
bool tw__handle_claim_return(struct tw_handle *h)
{
    for (;;) {
        uint32_t w = tw__handle_settle(h);

        if (tw__st(w) != TW__PENDING && tw__st(w) != TW__DISPATCHED)
            return false;
        if (cas(h, &w, TW__RETURNED, false))
            return true;
    }
}

/* After the callback of h returned at now: a one-shot timer is done; a
 * periodic or re-armed one is pending again at its next deadline (true:
 * the caller puts it back); a cancelled one is let go of. Any
 * cancel-and-wait is woken once h has left RUNNING. */
static bool finish(struct tw_service *s, struct tw_handle *h)
{
    for (;;) {
        uint32_t w = tw__handle_settle(h);

        switch (tw__st(w)) {
        case TW__CANCEL_RUNNING:
            if (!cas(h, &w, TW__CANCELLED, false))
                continue;
            tw__handle_wake(h, w);
            tw__handle_drop(s, h, TW__OUT_CANCELLED);
            return false;
        case TW__RUN_AGAIN:
            if (!cas(h, &w, TW__PENDING, true))
                continue;
            break;
        default: /* TW__RUNNING, or TW__LAST_RUN: a one-shot sealed by a
                  * cancel during this run, done all the same */
            if (tw__st(w) == TW__LAST_RUN || !tw__period(h)) {
                if (!cas(h, &w, TW__DONE, false))
                    continue;
                tw__handle_wake(h, w);
                tw__handle_drop(s, h, TW__OUT_COMPLETED);
                return false;
            }
            if (!cas(h, &w, TW__LOCKED, false))
                continue;
            atomic_store_explicit(&h->deadline,
                                  next_deadline(s, h, tw__mono_ns()),
                                  memory_order_relaxed);
            put(h, w, TW__PENDING, true);
            break;
        }
        tw__handle_wake(h, w);
        return true;
    }
}

/* Run claimed h (RUNNING) on this thread, counted on its stripe, then move
 * it on (finish()); true if it is pending again and the caller puts it
 * back (the worker into its wheel, an executor thread to the worker). */
bool tw__handle_run(struct tw_service *s, struct tw_handle *h)
{
    const struct tw_handle *was = tw__running;
    struct tw__stripe *st = tw__stripe_mine(s);

    tw__count(s, st, &st->runs);
    tw__running = h;
    tw__cb(s, h)(h, tw__arg(h));
    tw__running = was;
    return finish(s, h);
}

/* h's message onto the cancel queue, in a node of its own (the worker
 * frees it); false, with nothing sent, if the node cannot be allocated.
 * Out of line: only threads without a ring slot come here. */
static __attribute__((noinline)) bool queue_message(struct tw_service *s,
                                                    struct tw_handle *h)
{
    struct tw__qmsg *m = tw_alloc(sizeof(*m));

    if (!m)
        return false;
    m->h = h;
    tw__mpsc_push(&s->cancelq, &m->node);
    tw__backlog_sent_queue();
    return true;
}

/* Send h's message through this thread's message ring, or the cancel
 * queue (ring.c says when); false, with nothing sent, only if neither a
 * ring slot nor a queue node could be allocated. The caller holds h's word
 * (CANCELLING or LOCKED) and sends only if the word had TW__CQ clear: one
 * message carries every cancel and re-arm made before the worker takes it
 * (the worker reads the state and deadline only then). TW__CQ keeps h
 * alive meanwhile; the message takes no reference (service.h). The caller
 * looks at the worker's sleep next: a ring push is a plain store, kept
 * before that look by the compiler barrier here and, in the processor, by
 * the worker's membarrier (worker.c); a queue push is a full barrier. A
 * ring push fails only when its block is full and no new block can be had
 * (ring.h): with a free slot this costs what it did when the queue's node
 * was in the handle, and the caller's test of the answer. */
static inline __attribute__((always_inline)) bool
send_message(struct tw_service *s, struct tw_handle *h)
{
    struct tw__rings *r = tw__rings_mine(s);

    if (r && __builtin_expect(r->msgs.used == TW__BLOCK_SLOTS, 0))
        tw__backlog_check(s, r); /* once a block: backlog.c */
    if (r && tw__ring_push(&r->msgs, h)) {
        atomic_signal_fence(memory_order_seq_cst);
        return true;
    }
    return queue_message(s, h);
}

/* The canceller's side of PENDING -> CANCELLING -> CANCELLED, holding
 * CANCELLING from w, the word before the move (which set TW__CQ). A
 * message already queued (a re-arm's) carries the cancel too, and its
 * sender has woken the worker if need be. If none can be sent, the cancel
 * stands without one: TW__CQ goes back to clear, and whoever holds h lets
 * go of it when it next meets it (service.h). */
static void cancel_pending(struct tw_handle *h, uint32_t w)
{
    struct tw_service *s = tw__svc(h);

    tw__gate_count_cancel(s);
    if (!(w & TW__CQ)) {
        if (__builtin_expect(!send_message(s, h), 0)) {
            put(h, w, TW__CANCELLED, false); /* TW__CQ clear */
            return;
        }
        tw__wake_reap(s);
    }
    put(h, w | TW__CQ, TW__CANCELLED, false);
}

/* PENDING -> CANCELLING with TW__CQ set, in one compare-and-swap. */
static bool cancel_cas(struct tw_handle *h, uint32_t *w)
{
    uint32_t want = (*w & ~TW__ST_MASK) | TW__CQ | TW__CANCELLING;
    bool won;

    tw__hb_release(h);
    won = atomic_compare_exchange_strong_explicit(
        &h->word, w, want, memory_order_seq_cst, memory_order_acquire);
    tw__hb_acquire(h);
    return won;
}

/*
 * The caller's reference, dropped while this thread holds h's word in
 * CANCELLING: no one else changes the count meanwhile (the service lets go
 * of h only from a settled word, and a message holds no reference), and it
 * is two (the caller and the service, which still holds h in every state a
 * cancel can win from). So a plain store does it, and the release store of
 * the state that follows publishes it: one locked instruction fewer than
 * tw_handle_release() after the cancel.
 */
static void drop_caller_held(struct tw_handle *h)
{
    tw__hb_release(h);
    atomic_store_explicit(&h->refs, tw__fixed(h) - 1, memory_order_relaxed);
}

/*
 * A cancel that finds a one-shot running and not re-armed (RUNNING): this
 * run is its last, the callback has fired, so the cancel answers 0, as it
 * does once the timer is DONE. It still takes effect: RUNNING -> LAST_RUN,
 * in which a re-arm (from the callback itself or any thread) answers 0, so
 * a heartbeat that re-arms itself from its callback stops there, and the
 * runner moves LAST_RUN to DONE (finish(), below). Nothing of the
 * service is touched (no count, no message): the outcome stays "completed".
 * False, with *w the word found, if the swap lost.
 */
static bool seal_last_run(struct tw_handle *h, uint32_t *w)
{
    return cas(h, w, TW__LAST_RUN, false);
}

/* tw_handle_cancel(), and with `release` the caller's reference dropped as
 * well: inside the winning move, or after a losing one. */
/* w: the word h is thought to hold. Callers first guess the commonest,
 * PENDING with no flag and generation 0 (never re-armed): the swap then
 * asks for the line to write at once, instead of a load asking to read it
 * and the swap asking again. A wrong guess costs the failed swap, which
 * reads the word. */
static int cancel(struct tw_handle *h, bool release, uint32_t w)
{
    if (__builtin_expect(tw__inherited(h), 0)) { /* fork.c */
        if (release)
            tw__handle_unref(h);
        return -ECHILD;
    }
    for (;;) {
        switch (tw__st(w)) {
        case TW__PENDING:
            if (cancel_cas(h, &w)) {
                if (release)
                    drop_caller_held(h);
                cancel_pending(h, w);
                return 1;
            }
            break;
        case TW__DISPATCHED: /* the executor lets go of it */
            if (cas(h, &w, TW__CANCELLING, false)) {
                tw__gate_count_cancel(tw__svc(h));
                if (release)
                    drop_caller_held(h);
                put(h, w, TW__CANCELLED, false);
                return 1;
            }
            break;
        case TW__RUNNING: /* a periodic timer would run again */
        case TW__RUN_AGAIN:
            if (tw__st(w) == TW__RUNNING && !tw__period(h)) {
                if (seal_last_run(h, &w))
                    goto lost;
                break;
            }
            if (cas(h, &w, TW__CANCELLING, false)) {
                tw__gate_count_cancel(tw__svc(h)); /* the runner lets go */
                if (release)
                    drop_caller_held(h);
                put(h, w, TW__CANCEL_RUNNING, false);
                return 1;
            }
            break;
        case TW__LOCKED:     /* a re-arm is moving it: wait and look */
        case TW__CANCELLING: /* another cancel: it answers 1, this 0 */
            break;
        default:
            goto lost;
        }
        w = tw__handle_settle(h);
    }
lost:
    if (release)
        tw__handle_unref(h);
    return 0;
}

TW_PUBLIC int tw_handle_cancel(struct tw_handle *h)
{
    return h ? cancel(h, false, TW__PENDING) : -EINVAL;
}

/*
 * tw_handle_cancel_release() on its commonest path, in one piece: a handle
 * waiting and never re-armed (PENDING, generation 0, no flag: the first
 * guess of cancel()), a thread with a stripe of its own and a free slot in
 * its message ring, and no user's ThreadSanitizer to tell (tsan.h). The
 * moves are those of cancel(h, true) and cancel_pending(), with the
 * thread's stripe read once and none of the hooks' tests. Returns false,
 * having changed nothing, when the swap loses (*w then holds the word found,
 * for cancel() to start from) or before it when the thread has no stripe of
 * its own.
 *
 * A twin of the general path, so a change to the moves of cancel() or
 * cancel_pending() is made here too (tests/service/test_cancel_release.c
 * drives both). Kept only because it pays: about 76 instructions per call
 * against 118 through cancel() alone, and about 14% more cancels a second
 * (docs/service.md, "Handle lifetime and cancel", has the figures and how
 * they were measured). Should a change bring cancel() within a few
 * instructions of it, fold it.
 */
static inline bool cancel_release_fast(struct tw_handle *h, uint32_t *w)
{
    unsigned i = tw__my_stripe - 1; /* UINT_MAX before the claim */
    struct tw_service *s;
    struct tw__stripe *st;
    struct tw__rings *r;

    if (i >= TW__STRIPES || !atomic_compare_exchange_strong_explicit(
                                &h->word, w, TW__CQ | TW__CANCELLING,
                                memory_order_seq_cst, memory_order_acquire))
        return false;
    drop_caller_held(h);
    s = tw__svc(h);
    r = atomic_load_explicit(&s->rings[i], memory_order_relaxed);
    if (!r || r->msgs.used == TW__BLOCK_SLOTS) {
        cancel_pending(h, TW__PENDING); /* a ring to make or to grow */
        return true;
    }
    st = &s->stripes[i];
    tw__count(s, st, &st->cancelled);
    tw__give_back(s, st);
    tw__ring_push(&r->msgs, h);
    atomic_signal_fence(memory_order_seq_cst); /* see send_message */
    tw__wake_reap(s);
    atomic_store_explicit(&h->word, TW__CQ | TW__CANCELLED,
                          memory_order_release);
    return true;
}

TW_PUBLIC int tw_handle_cancel_release(struct tw_handle *h)
{
    uint32_t w = TW__PENDING;

    if (!h)
        return -EINVAL;
    if (!tw__hb_live() && cancel_release_fast(h, &w))
        return 1;
    return cancel(h, true, w); /* the word the fast path's swap found */
}

static bool running(uint32_t w)
{
    int st = tw__st(w);

    return st == TW__RUNNING || st == TW__RUN_AGAIN ||
           st == TW__CANCEL_RUNNING || st == TW__LAST_RUN;
}

/* Sleep until h's running word w changes (or a spurious wake-up), having
 * set TW__WAITERS so that the runner's move out of it wakes us. */
static void wait_change(struct tw_handle *h, uint32_t w)
{
    if (!(w & TW__WAITERS)) {
        uint32_t flagged = w | TW__WAITERS;

        tw__hb_release(h);
        if (!atomic_compare_exchange_strong_explicit(&h->word, &w, flagged,
                                                     memory_order_seq_cst,
                                                     memory_order_acquire))
            return; /* it moved meanwhile: look again */
        w = flagged;
    }
    tw__futex_wait(&h->word, w);
}

TW_PUBLIC int tw_handle_cancel_wait(struct tw_handle *h)
{
    int prevented;

    if (!h)
        return -EINVAL;
    if (tw__inherited(h))
        return -ECHILD; /* fork.c */
    if (tw__running == h)
        return -EDEADLK;
    /* Whatever the cancel answers, no run starts after it (a running
     * one-shot is sealed: its re-arms answer 0), so the handle can only
     * leave the running states for DONE or CANCELLED: wait for that. */
    prevented = tw_handle_cancel(h);
    for (;;) {
        uint32_t w = tw__handle_settle(h);

        if (!running(w))
            return prevented;
        wait_change(h, w);
    }
}

/* Under LOCKED (word *w): a re-arm to an earlier deadline of a timer that
 * may be in the wheel tells the worker, which moves it; a later one needs
 * nothing (the worker puts it back when the old deadline comes). Sets
 * TW__CQ in *w; -ENOMEM, with no message sent, if none could be. */
static int rearm_earlier(struct tw_handle *h, uint32_t *w, uint64_t deadline)
{
    struct tw_service *s = tw__svc(h);

    /* Written only when not already set: a stream of re-arms does not
     * bounce the line with the worker. Before the push, whose barrier (the
     * queue's) or the worker's membarrier (a ring's) then orders it before
     * the look at sleep_until; set in vain if the send fails, it costs the
     * worker one wake-up on the next tick boundary. */
    if (!atomic_load_explicit(&s->hinted, memory_order_relaxed))
        atomic_store_explicit(&s->hinted, true, memory_order_relaxed);
    if (!(*w & TW__CQ)) {
        if (!send_message(s, h))
            return -ENOMEM;
        tw__wake_pushed(s, deadline); /* see send_message */
    } else {
        tw__wake_notify(s, deadline);
    }
    *w |= TW__CQ;
    return 0;
}

TW_PUBLIC int tw_handle_rearm_at(struct tw_handle *h, uint64_t deadline)
{
    if (!h)
        return -EINVAL;
    if (tw__inherited(h))
        return -ECHILD; /* fork.c */
    for (;;) {
        uint32_t w = tw__handle_settle(h);
        int st = tw__st(w);
        uint64_t old;

        if (st != TW__PENDING && st != TW__DISPATCHED && st != TW__RUNNING &&
            st != TW__RUN_AGAIN)
            return 0;
        if (!cas(h, &w, TW__LOCKED, false))
            continue;
        /* A fixed-rate grid restarted in the past under TW_CATCHUP_ALL
         * starts at its last point before now, as at submit. */
        deadline = tw__catchup_start(tw__svc(h)->catchup, deadline,
                                     tw__period(h), tw__kind(h));
        old = tw__deadline(h);
        if (st == TW__PENDING && deadline < old &&
            rearm_earlier(h, &w, deadline)) {
            /* No message could be sent: as we found it, generation too. */
            put(h, w, st, false);
            return -ENOMEM;
        }
        atomic_store_explicit(&h->deadline, deadline, memory_order_relaxed);
        put(h, w,
            st == TW__RUNNING || st == TW__RUN_AGAIN ? TW__RUN_AGAIN
                                                     : TW__PENDING,
            true);
        return 1;
    }
}

TW_PUBLIC int tw_handle_rearm(struct tw_handle *h, uint64_t delay)
{
    if (!h)
        return -EINVAL;
    return tw_handle_rearm_at(h, tw__add_sat(tw__svc_clock_upper(), delay));
}

TW_PUBLIC enum tw_handle_state tw_handle_query(const struct tw_handle *h)
{
    if (!h)
        return TW_HANDLE_CANCELLED;
    switch (tw__st(tw__handle_settle((struct tw_handle *)h))) {
    case TW__PENDING:
    case TW__DISPATCHED:
        return TW_HANDLE_PENDING;
    case TW__RUNNING:
    case TW__RUN_AGAIN:
    case TW__CANCEL_RUNNING: /* cancelled, but this run is not over */
    case TW__LAST_RUN:
        return TW_HANDLE_RUNNING;
    case TW__DONE:
        return TW_HANDLE_DONE;
    case TW__RETURNED:
        return TW_HANDLE_RETURNED;
    default:
        return TW_HANDLE_CANCELLED;
    }
}

TW_PUBLIC uint64_t tw_handle_deadline(const struct tw_handle *h)
{
    return h ? tw__deadline(h) : 0;
}

TW_PUBLIC void tw_handle_release(struct tw_handle *h)
{
    if (h)
        tw__handle_unref(h);
}
