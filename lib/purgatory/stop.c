/*
 * The end of a purgatory: the gate that stop closes, stop, destroy. What
 * stop hands back, and the frames that refuse the calls a hand-back must
 * not make, are in handback.c (shared with cancel_key).
 *
 * Stop closes a gate that every watch passes (counts of watches in
 * progress, one per stripe, and a closed flag), waits until
 * no watch is inside, then empties the shards one by one, waiting for
 * records that another thread owns (its try_complete is running) or is
 * still detaching. After that no list holds a record and no watch can add
 * one, so destroy may free the shards.
 *
 * Bounded: a refused watch reads the closed bit before it writes the count
 * (tw__p_gate_enter()), so after the close only watches already inside,
 * and at most one straggler per thread that read the bit just before it
 * was set, move the count; stop waits for those and for nothing else,
 * however many threads keep calling. Watch enters only after its first
 * try failed (watch.c), so the watches inside are those making a record
 * visible, which stop must see to hand it back.
 *
 * One stop: stop_state goes RUNNING -> STOPPING -> STOPPED, and the stop
 * that moved it to STOPPING is the one that works. Any other stop waits
 * until STOPPED before returning 0, so "stop on one thread, destroy on
 * another" frees p only after the working stop has let go of it: setting
 * STOPPED is the working stop's last access to p.

 */
#include <errno.h>
#include <sched.h>

#include "purgatory.h"

/* Close the gate and wait for the watches inside to leave. */
static void close_gate(struct tw_purgatory *p)
{
    atomic_store(&p->closed, true);
    for (unsigned i = 0; i < TW__P_STRIPES; i++)
        while (atomic_load(&p->stripes[i].gate) != 0)
            sched_yield(); /* a watch is still inside */
}

/* The stop that won: close, hand everything back, then let go of p. */
static int64_t run_stop(struct tw_purgatory *p, tw_delayed_handback_fn *fn,
                        void *ctx)
{
    struct tw__pframe f;
    int64_t n = 0;

    close_gate(p);
    tw__p_frame_push(&f, p, true);
    for (unsigned i = 0; i < p->nshards; i++)
        n += tw__p_stop_shard(&p->shards[i], fn, ctx);
    tw__p_frame_pop(&f);
    if (p->tick) /* every shard is empty: the service timer can go */
        tw__p_tick_stop(p);
    atomic_store(&p->stop_state, TW__P_STOPPED); /* the last access to p */
    return n;
}

int64_t tw_purgatory_stop(struct tw_purgatory *p, tw_delayed_handback_fn *fn,
                          void *ctx)
{
    int expect = TW__P_RUNNING;

    if (!p)
        return -EINVAL;
    if (tw__p_inherited(p))
        return -ECHILD;
    if (tw__p_in_try(p) || tw__p_in_handback(p, true))
        return -EDEADLK;
    if (atomic_compare_exchange_strong(&p->stop_state, &expect, TW__P_STOPPING))
        return run_stop(p, fn, ctx);
    /* Another stop is working (on another thread): wait for it. */
    while (atomic_load(&p->stop_state) != TW__P_STOPPED)
        sched_yield();
    return 0;
}

int tw_purgatory_destroy(struct tw_purgatory *p)
{
    if (!p)
        return 0;
    if (tw__p_inherited(p))
        return -ECHILD; /* at once, nothing freed (purgatory.c, "fork") */
    if (tw__p_in_try(p) || tw__p_in_handback(p, false))
        return -EDEADLK;
    tw_purgatory_stop(p, NULL, NULL);
    tw__p_free(p);
    return 0;
}
