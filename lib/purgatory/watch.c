/*
 * tw_purgatory_watch(): try at once, else watch on every key, arm the
 * timeout and try once more; and the operation's own small functions.
 *
 * The record is owned by the watching thread from before it enters the
 * first list until the second try has answered. A check on another thread
 * that meets it in a list meanwhile leaves AGAIN, so the owner's second try
 * loop sees every event that happened after the record became visible: the
 * guarantee Kafka gets from trying once more after adding to all lists.
 * A timeout that fires meanwhile (a timeout of 0 over a service) leaves
 * EXPIRE, and nobody can complete, expire or free the record under us, so
 * an error half-way is undone without a trace.
 */
#include <errno.h>
#include <string.h>

#include "purgatory.h"

void tw_delayed_init(struct tw_delayed *op, tw_try_complete_fn *try_complete,
                     tw_delayed_fn *on_complete, tw_delayed_fn *on_expire,
                     void *arg)
{
    if (!op)
        return;
    *op = (struct tw_delayed){.try_complete = try_complete,
                              .on_complete = on_complete,
                              .on_expire = on_expire,
                              .arg = arg,
                              .state = TW_DELAYED_IDLE};
}

/* Every key usable, none twice; fills hash[]. 0, -EINVAL or -E2BIG. */
static int keys_ok(const struct tw_key *keys, size_t n, uint64_t *hash)
{
    if (!keys || n == 0)
        return -EINVAL;
    if (n > TW_PURGATORY_MAX_KEYS)
        return -E2BIG;
    for (size_t i = 0; i < n; i++) {
        int rc = tw__p_key_ok(keys[i].bytes, keys[i].len);

        if (rc < 0)
            return rc;
        hash[i] = tw__p_hash(keys[i].bytes, keys[i].len);
        for (size_t j = 0; j < i; j++)
            if (hash[j] == hash[i] && keys[j].len == keys[i].len &&
                memcmp(keys[j].bytes, keys[i].bytes, keys[i].len) == 0)
                return -EINVAL;
    }
    return 0;
}

static int args_ok(struct tw_purgatory *p, struct tw_delayed *op,
                   const struct tw_key *keys, size_t n, uint64_t *hash)
{
    if (!p || !op || !op->try_complete || !op->on_complete)
        return -EINVAL;
    if (tw__p_inherited(p))
        return -ECHILD;
    if (tw__p_in_try(p))
        return -EDEADLK;
    return keys_ok(keys, n, hash);
}

/* Mark op watched, or say why it cannot be (atomically over a service,
 * where two threads could watch one operation at once by mistake). */
static int take_op(const struct tw_purgatory *p, struct tw_delayed *op)
{
    int s = TW_DELAYED_IDLE;

    if (!p->threaded) {
        s = op->state;
        if (s == TW_DELAYED_IDLE)
            op->state = TW_DELAYED_WATCHED;
    } else if (__atomic_compare_exchange_n(&op->state, &s, TW_DELAYED_WATCHED,
                                           false, __ATOMIC_ACQ_REL,
                                           __ATOMIC_ACQUIRE)) {
        return 0;
    }
    if (s == TW_DELAYED_IDLE)
        return 0;
    return s == TW_DELAYED_WATCHED ? -EBUSY : -EALREADY;
}

static void give_back_op(struct tw_delayed *op)
{
    __atomic_store_n(&op->state, TW_DELAYED_IDLE, __ATOMIC_RELEASE);
}

static struct tw__pwatch *record_new(struct tw_purgatory *p,
                                     struct tw_delayed *op, size_t n)
{
    size_t size = sizeof(struct tw__pwatch) + n * sizeof(struct tw__pentry);
    struct tw__pwatch *w = tw_alloc(size);

    if (!w)
        return NULL;
    memset(w, 0, size);
    atomic_init(&w->state, TW__P_OWNED);
    w->threaded = p->threaded;
    w->op = op;
    w->p = p;
    w->nkeys = (unsigned)n;
    for (size_t i = 0; i < n; i++)
        w->entry[i].w = w;
    return w;
}

/* Link entry i of w on its key. Over a service the first key's shard also
 * takes the timeout into its wheel, in the same locked section (the
 * deadline into *due). */
static int link_one(struct tw__pwatch *w, size_t i, const struct tw_key *key,
                    uint64_t hash, uint64_t timeout_ns, uint64_t *due)
{
    struct tw__pshard *sh = tw__p_shard(w->p, hash);
    int rc;

    tw__p_lock(sh);
    rc = tw__p_key_link(sh, &w->entry[i], hash, key);
    if (rc == 0 && i == 0 && w->p->svc)
        *due = tw__p_arm_shard(w, sh, timeout_ns);
    tw__p_unlock(sh);
    return rc;
}

/* Link w on every key and arm its timeout, or undo all and free w. */
static int link_and_arm(struct tw__pwatch *w, const struct tw_key *keys,
                        const uint64_t *hash, uint64_t timeout_ns)
{
    size_t linked = 0;
    uint64_t due = 0;
    int rc = 0;

    while (linked < w->nkeys && rc == 0) {
        rc = link_one(w, linked, &keys[linked], hash[linked], timeout_ns, &due);
        linked += rc == 0;
    }
    if (rc == 0)
        rc = w->p->svc ? tw__p_tick_cover(w->p, due) : tw__p_arm(w, timeout_ns);
    if (rc < 0) {
        /* Nobody else touched w (it is owned): its timeout may have
         * fired and left a note, which goes with it. */
        tw__p_unlink_keys(w, linked);
        tw__p_put(w);
    }
    return rc;
}

/* The first try, before the purgatory knows op. Outside the gate: it
 * adds nothing that stop would have to hand back, so stop need not wait
 * for it (nor for the caller's try_complete in it). */
static bool at_once(struct tw_purgatory *p, struct tw_delayed *op)
{
    if (!tw__p_call_try(p, op))
        return false;
    tw__p_count(p, TW__P_WATCHED);
    tw__p_count(p, TW__P_AT_ONCE);
    tw__p_count(p, TW__P_COMPLETED);
    __atomic_store_n(&op->state, TW_DELAYED_COMPLETED, __ATOMIC_RELEASE);
    op->on_complete(op, op->arg);
    return true;
}

static int refuse(struct tw_delayed *op)
{
    give_back_op(op);
    return -ESHUTDOWN;
}

int tw_purgatory_watch(struct tw_purgatory *p, struct tw_delayed *op,
                       const struct tw_key *keys, size_t nkeys,
                       uint64_t timeout_ns)
{
    uint64_t hash[TW_PURGATORY_MAX_KEYS];
    struct tw__pwatch *w;
    int rc = args_ok(p, op, keys, nkeys, hash);

    if (rc == 0)
        rc = take_op(p, op);
    if (rc < 0)
        return rc;
    if (tw__p_gate_closed(p))
        return refuse(op);
    if (at_once(p, op))
        return 1;
    /* From here on the record is visible to stop: pass the gate. */
    if (!tw__p_gate_enter(p))
        return refuse(op);
    w = record_new(p, op, nkeys);
    rc = w ? link_and_arm(w, keys, hash, timeout_ns) : -ENOMEM;
    if (rc < 0) {
        give_back_op(op);
        tw__p_gate_leave(p);
        return rc;
    }
    op->watch = w;
    tw__p_count(p, TW__P_WATCHED);
    if (!tw__p_own_try(w)) {
        tw__p_gate_leave(p);
        return 0;
    }
    if (w->outcome == TW_DELAYED_COMPLETED)
        tw__p_count(p, TW__P_AT_ONCE);
    rc = w->outcome == TW_DELAYED_COMPLETED;
    tw__p_detach(w);
    tw__p_gate_leave(p);
    tw__p_deliver(w, NULL, NULL);
    return rc;
}
