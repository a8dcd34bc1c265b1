/*
 * Handing records back to the caller: what tw_purgatory_cancel_key()
 * (check.c) and tw_purgatory_stop() (stop.c) share. Claim the WATCHING
 * records of a key, detach them, then, no lock held, give each to the
 * caller's hand-back function; stop does it for a whole shard, waiting for
 * records that another thread owns or is still detaching.
 *
 * From inside a hand-back function, on the thread running the stop or the
 * cancel_key that called it, two calls cannot be honoured: destroy (the
 * caller of the hand-back still uses p when fn returns: a use after free)
 * and, from stop's own hand-back, stop (it would wait for itself). Both
 * answer -EDEADLK, as the same calls from a try_complete do; Netty's
 * HashedWheelTimer refuses stop() from a TimerTask the same way. A frame
 * pushed on the thread's stack around the hand-backs tells them apart.
 *
 * These were split between check.c (the claim and stop's shard loop) and
 * stop.c (the frames), which then called into each other (issue 29); both
 * now call into this file, which calls neither.
 */
#include <sched.h>

#include "purgatory.h"

static _Thread_local struct tw__pframe *frames;

void tw__p_frame_push(struct tw__pframe *f, const struct tw_purgatory *p,
                      bool stop)
{
    f->p = p;
    f->stop = stop;
    f->up = frames;
    frames = f;
}

void tw__p_frame_pop(const struct tw__pframe *f)
{
    frames = f->up;
}

bool tw__p_in_handback(const struct tw_purgatory *p, bool stop_only)
{
    for (const struct tw__pframe *f = frames; f; f = f->up)
        if (f->p == p && (f->stop || !stop_only))
            return true;
    return false;
}

/* Claim every WATCHING record of the key (shard locked) onto *claimed;
 * returns whether an owned one was left (it may come back). */
bool tw__p_claim_key(struct tw__pkey *k, struct tw__pwatch **claimed)
{
    bool busy = false;

    for (struct tw_link *l = k->watchers.next; l != &k->watchers; l = l->next) {
        struct tw__pwatch *w = TW_CONTAINER_OF(l, struct tw__pentry, link)->w;

        if (tw__p_claim(w)) {
            w->outcome = TW_DELAYED_CANCELLED;
            w->next = *claimed;
            *claimed = w;
        } else {
            busy |= (atomic_load(&w->state) & TW__P_DONE) == 0;
        }
    }
    return busy;
}

/* Detach and hand back a list of claimed records; returns how many. */
int64_t tw__p_hand_back(struct tw__pwatch *claimed, unsigned count,
                        tw_delayed_handback_fn *fn, void *ctx)
{
    struct tw__pwatch *next;
    int64_t n = 0;

    for (struct tw__pwatch *w = claimed; w; w = next) {
        next = w->next;
        tw__p_count(w->p, count);
        tw__p_detach(w);
    }
    for (struct tw__pwatch *w = claimed; w; w = next) {
        next = w->next;
        tw__p_deliver(w, fn, ctx);
        n++;
    }
    return n;
}

/* Hand back everything in one shard, waiting for owners (stop). */
int64_t tw__p_stop_shard(struct tw__pshard *sh, tw_delayed_handback_fn *fn,
                         void *ctx)
{
    int64_t n = 0;

    for (;;) {
        struct tw__pwatch *claimed = NULL;
        size_t left;

        tw__p_lock(sh);
        for (size_t b = 0; b < sh->nbuckets; b++)
            for (struct tw__pkey *k = sh->buckets[b]; k; k = k->chain)
                tw__p_claim_key(k, &claimed);
        left = sh->nkeys;
        tw__p_unlock(sh);
        n += tw__p_hand_back(claimed, TW__P_RETURNED, fn, ctx);
        if (left == 0)
            return n;
        /* Records owned or being detached elsewhere: wait for them. */
        if (!claimed)
            sched_yield();
    }
}
