/*
 * The ownership protocol of a watched operation's record (the state word
 * is described in purgatory.h): the owner's try loop, the claim, and what
 * the claimer does with a claimed record, and the operation's state that
 * the claimer publishes (tw_delayed_state()).
 *
 * Why notes instead of a lock per operation: Kafka's purgatory takes the
 * operation's lock around tryComplete, and a thread that holds a caller's
 * lock and checks a key then blocks on an operation lock held by a thread
 * whose tryComplete waits for that caller's lock (a documented deadlock,
 * later patched with tryLock and a retry flag). Here nobody ever waits for
 * an owner: a check that meets an owned record sets AGAIN and moves on, a
 * timeout sets EXPIRE, and the owner reads the notes before letting go, so
 * no event is lost and no thread blocks on another's try_complete.
 */
#include "purgatory.h"

bool tw__p_own_try(struct tw__pwatch *w)
{
    for (;;) {
        unsigned s = TW__P_OWNED;
        bool yes;

        /* Clear AGAIN first: an event during this try sets it anew (and
         * one after the load below is seen when letting go). */
        if (atomic_load_explicit(&w->state, memory_order_relaxed) &
            TW__P_AGAIN) {
            while (!tw__p_cas(w, &s, s & ~TW__P_AGAIN))
                ;
            s = TW__P_OWNED;
        }
        yes = tw__p_call_try(w->p, w->op);
        if (yes) {
            /* The condition was met: that beats a timeout noted meanwhile. */
            atomic_store(&w->state, TW__P_DONE);
            w->outcome = TW_DELAYED_COMPLETED;
            return true;
        }
        if (tw__p_cas(w, &s, 0))
            return false;
        if (s & TW__P_EXPIRE) {
            atomic_store(&w->state, TW__P_DONE);
            w->outcome = TW_DELAYED_EXPIRED;
            return true;
        }
        /* Only AGAIN is left: another event came, try again. */
    }
}

bool tw__p_claim(struct tw__pwatch *w)
{
    unsigned s = 0;

    return tw__p_cas(w, &s, TW__P_DONE);
}

/* Everything that touches the purgatory comes before the last unlink:
 * once a stop has seen every list empty, the purgatory may be freed while
 * this thread is still delivering. */
void tw__p_detach(struct tw__pwatch *w)
{
    struct tw_purgatory *p = w->p;

    if (w->outcome == TW_DELAYED_COMPLETED)
        tw__p_count(p, TW__P_COMPLETED);
    else if (w->outcome == TW_DELAYED_EXPIRED)
        tw__p_count(p, TW__P_EXPIRED);
    /* cancel_key and stop count what they hand back themselves. */
    if (!p->svc)
        tw__p_disarm(w);
    tw__p_unlink_keys(w, w->nkeys);
    w->op->watch = NULL;
    __atomic_store_n(&w->op->state, w->outcome, __ATOMIC_RELEASE);
}

/* The reading side of the store just above: here, beside it, rather than
 * in watch.c, which tw_purgatory_expire() (timeout.c) then called into
 * while watch.c called timeout.c to arm (issue 29). */
enum tw_delayed_state tw_delayed_state(const struct tw_delayed *op)
{
    if (!op)
        return TW_DELAYED_IDLE;
    return (enum tw_delayed_state)__atomic_load_n(&op->state, __ATOMIC_ACQUIRE);
}

/* Over a service the first key's shard wheel holds the timeout: it is
 * cancelled in the same locked section as the first unlink. */
void tw__p_unlink_keys(struct tw__pwatch *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct tw__pentry *e = &w->entry[i];
        struct tw__pshard *sh = tw__p_shard(w->p, e->key->hash);

        tw__p_lock(sh);
        if (i == 0 && w->p->svc)
            tw__p_disarm_shard(w, sh);
        tw__p_key_unlink(sh, e);
        tw__p_unlock(sh);
    }
}

/* The record has one owner left when this is called (the claimer after
 * delivering, or a watch undoing itself): no timer holds a reference since
 * the timeouts moved into the purgatory's own wheels, so no count. */
void tw__p_put(struct tw__pwatch *w)
{
    tw_free(w, sizeof(*w) + w->nkeys * sizeof(w->entry[0]));
}

void tw__p_deliver(struct tw__pwatch *w, tw_delayed_handback_fn *fn, void *ctx)
{
    struct tw_delayed *op = w->op;
    int outcome = w->outcome;

    /* The record goes first: from on_complete on, the operation may be
     * freed or watched again, and the record must not outlive our use. */
    tw__p_put(w);
    if (outcome == TW_DELAYED_CANCELLED) {
        if (fn)
            fn(op, ctx);
        return;
    }
    if (outcome == TW_DELAYED_EXPIRED && op->on_expire)
        op->on_expire(op, op->arg);
    op->on_complete(op, op->arg);
}
