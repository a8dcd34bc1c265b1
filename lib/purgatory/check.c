/*
 * tw_purgatory_check() and tw_purgatory_cancel_key(): everything done to
 * the operations watched on one key.
 *
 * A check works in three phases so that no lock is held while the caller's
 * code runs, and so that the thread owns no record while on_complete runs
 * (on_complete may call cancel_key or stop, which wait for owners):
 *   1. under the shard's lock, own every WATCHING record of the key (a
 *      record owned elsewhere gets AGAIN: its owner tries again);
 *   2. no lock held: run each owned record's try_complete; a no lets the
 *      record go, a yes (or a timeout noted meanwhile) claims and detaches
 *      it onto a local list;
 *   3. deliver each claimed record: on_expire if it expired, on_complete.
 */
#include <errno.h>
#include <sched.h>

#include "purgatory.h"

static int args_ok(struct tw_purgatory *p, const void *key, size_t len)
{
    if (!p)
        return -EINVAL;
    if (tw__p_inherited(p))
        return -ECHILD;
    if (tw__p_in_try(p))
        return -EDEADLK;
    return tw__p_key_ok(key, len);
}

/* Phase 1: the records of the key that this call now owns. */
static struct tw__pwatch *own_key(struct tw_purgatory *p, const void *key,
                                  size_t len)
{
    uint64_t hash = tw__p_hash(key, len);
    struct tw__pshard *sh = tw__p_shard(p, hash);
    struct tw__pwatch *owned = NULL;
    struct tw__pkey *k;

    tw__p_lock(sh);
    k = tw__p_key_find(sh, hash, key, len);
    for (struct tw_link *l = k ? k->watchers.next : NULL;
         l && l != &k->watchers; l = l->next) {
        struct tw__pwatch *w = TW_CONTAINER_OF(l, struct tw__pentry, link)->w;

        if (tw__p_take_or_note(w, TW__P_OWNED, TW__P_AGAIN)) {
            w->next = owned;
            owned = w;
        }
    }
    tw__p_unlock(sh);
    return owned;
}

int64_t tw_purgatory_check(struct tw_purgatory *p, const void *key, size_t len)
{
    struct tw__pwatch *owned, *done = NULL, *next;
    int64_t completed = 0;
    int rc = args_ok(p, key, len);

    if (rc < 0)
        return rc;
    owned = own_key(p, key, len);
    /* Phase 2. Read next first: a record let go may be freed at once. */
    for (struct tw__pwatch *w = owned; w; w = next) {
        next = w->next;
        if (tw__p_own_try(w)) {
            tw__p_detach(w);
            w->next = done;
            done = w;
        }
    }
    /* Phase 3. */
    for (struct tw__pwatch *w = done; w; w = next) {
        next = w->next;
        completed += w->outcome == TW_DELAYED_COMPLETED;
        tw__p_deliver(w, NULL, NULL);
    }
    return completed;
}

int64_t tw_purgatory_cancel_key(struct tw_purgatory *p, const void *key,
                                size_t len, tw_delayed_handback_fn *fn,
                                void *ctx)
{
    uint64_t hash;
    struct tw__pshard *sh;
    struct tw__pframe f;
    int64_t n = 0;
    bool busy = true;
    int rc = args_ok(p, key, len);

    if (rc == 0 && !fn)
        rc = -EINVAL;
    if (rc < 0)
        return rc;
    hash = tw__p_hash(key, len);
    sh = tw__p_shard(p, hash);
    tw__p_frame_push(&f, p, false); /* fn must not destroy p under us */
    while (busy) {
        struct tw__pwatch *claimed = NULL;
        struct tw__pkey *k;

        tw__p_lock(sh);
        k = tw__p_key_find(sh, hash, key, len);
        busy = k && tw__p_claim_key(k, &claimed);
        tw__p_unlock(sh);
        n += tw__p_hand_back(claimed, TW__P_CANCELLED, fn, ctx);
        /* An owner is running a try_complete: let it answer. */
        if (busy && !claimed)
            sched_yield();
    }
    tw__p_frame_pop(&f);
    return n;
}
