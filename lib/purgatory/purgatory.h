/*
 * The purgatory: the objects shared by its files. Never installed.
 *
 *   purgatory.c  create, free, stats, the in-try marker
 *   metrics.c    the stats in the Prometheus text format
 *   stop.c       the gate, stop, destroy
 *   handback.c   handing records back (cancel_key, stop), the frames that
 *                refuse destroy and stop from inside a hand-back
 *   keys.c       the sharded hash tables of keys and their watch lists
 *   watch.c      tw_purgatory_watch(), tw_delayed_init()
 *   owner.c      the ownership protocol: try, settle, detach, deliver;
 *                tw_delayed_state()
 *   check.c      tw_purgatory_check() and tw_purgatory_cancel_key()
 *   timeout.c    the timeout of a watch, over a core wheel, a service or
 *                a timer of the caller's
 *   ticker.c     over a service: a core wheel per shard and one service
 *                timer that advances them all
 *
 * The layer uses the core and the service only through their public
 * headers, memory included (tw_alloc(), tw_free()).
 *
 * A watched operation has a record, struct tw__pwatch, allocated by watch:
 * one entry per key (linked into that key's watch list), its timeout (a
 * core timer: in the caller's wheel, or over a service in the wheel of its
 * first key's shard) and a state word that gives every race a
 * single winner:
 *
 *   0 (WATCHING)  in the lists, nobody owns it
 *   OWNED         one thread owns it: it is running its try_complete, or
 *                 watch is still setting it up. Others leave notes, bits
 *                 that the owner reads before letting go:
 *     | AGAIN     a check met it: the owner tries once more
 *     | EXPIRE    its timeout fired: the owner expires it (unless its
 *                 try_complete answered true)
 *   DONE          claimed for good (completed, expired, handed back): the
 *                 claimer detaches it and nobody else touches the operation
 *
 *   0 --check, watch--> OWNED --try says no, no notes--> 0
 *   0 --timeout, cancel_key, stop--> DONE;  OWNED --try says yes--> DONE
 *
 * Only the thread that moves a record to DONE touches the caller's
 * operation afterwards, so the operation may be freed by on_complete.
 * The record itself lives until the claimer frees it, as it delivers
 * (tw__p_put(); a watch that fails frees its own). A thread reaches a
 * record only through
 * a watch list or a shard's wheel under the shard's lock (the claimer
 * cancels the timeout under that lock before it lets go), or by owning
 * it, so no record is freed under a reader.
 */
#ifndef TW_PURGATORY_PRIV_H
#define TW_PURGATORY_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel/purgatory.h"

/* The state word of a record. */
#define TW__P_OWNED 1u
#define TW__P_AGAIN 2u
#define TW__P_EXPIRE 4u
#define TW__P_DONE 8u

struct tw__pkey;

/* One key of one watch: links the record into the key's watch list. */
struct tw__pentry {
    /* In its key's list of watchers (lib/common/dlist.h, on the core's
     * public struct tw_link). */
    struct tw_link link;
    struct tw__pkey *key;
    struct tw__pwatch *w;
};

/* A distinct key with at least one watcher; freed with its last. */
struct tw__pkey {
    struct tw__pkey *chain;  /* next in its bucket */
    struct tw_link watchers; /* the head of its entries' list */
    uint64_t hash;
    size_t nwatchers;
    size_t len;
    unsigned char bytes[];
};

/* A shard: a lock and a hash table of keys, padded so that threads
 * working on neighbouring shards share at most the edge of a cache line
 * (the allocator promises 16-byte alignment, not 64). */
struct tw__pshard {
    pthread_mutex_t lock;
    bool locking; /* over a service; a core wheel has one thread */
    struct tw__pkey **buckets;
    size_t nbuckets; /* a power of two */
    size_t nkeys;
    /* Over a service, in the first TW__P_WHEELS shards: the timeouts of
     * the records whose first key is here or in a shard of the same
     * index mod TW__P_WHEELS (ticker.c), and what the tick's advance of
     * them claimed. */
    struct tw_wheel *timeouts;
    struct tw__pwatch *fired;
    char pad[64];
};

struct tw__pwatch {
    atomic_uint state; /* the word above */
    bool threaded;     /* over a service: the word is changed atomically */
    struct tw_delayed *op;
    struct tw_purgatory *p;
    struct tw__pwatch *next; /* the owner's local lists */
    struct tw_timer timer;   /* the timeout, over a core wheel or a service */
    int outcome;             /* enum tw_delayed_state, set by the claimer */
    unsigned nkeys;
    struct tw__pentry entry[];
};

/* The counters of a purgatory, kept per stripe (struct tw__pstripe). */
enum {
    TW__P_WATCHED,
    TW__P_AT_ONCE,
    TW__P_COMPLETED,
    TW__P_EXPIRED,
    TW__P_CANCELLED,
    TW__P_RETURNED,
    TW__P_NCOUNTS
};

/* Stripes of counters: a thread keeps to one (given round-robin at its
 * first call), so that threads on different cores do not write the same
 * cache line for every watch and completion; stats sums them. */
#define TW__P_STRIPES 8u

/* One stripe: the watches in progress through the gate (stop waits until
 * every stripe's count is 0) and the counters; padded as a shard is. */
struct tw__pstripe {
    _Atomic uint64_t gate;
    _Atomic uint64_t count[TW__P_NCOUNTS];
    char pad[64];
};

/* Where stop is: stop_state goes RUNNING -> STOPPING (one stop won) ->
 * STOPPED (it has handed everything back and no longer touches p). */
#define TW__P_RUNNING 0
#define TW__P_STOPPING 1
#define TW__P_STOPPED 2

struct tw_purgatory {
    bool threaded;            /* over a service (else one thread) */
    struct tw_wheel *wheel;   /* exactly one of wheel, svc and timer */
    tw_purgatory_now_fn *now; /* with wheel: the loop's clock */
    void *now_ctx;
    struct tw_service *svc;
    struct tw_purgatory_timer timer; /* arm NULL: not this one */
    unsigned nshards;                /* a power of two */
    struct tw__pshard *shards;
    struct tw__ptick *tick; /* over a service (ticker.c) */
    atomic_bool closed;     /* stop has begun: the gate refuses watches */
    atomic_int stop_state;  /* TW__P_RUNNING, _STOPPING, _STOPPED */
    unsigned fork_gen;      /* tw__p_fork_gen at create (purgatory.c, "fork") */
    /* Written on every watch and outcome: away from the fields above,
     * which every call reads. */
    char pad[64];
    struct tw__pstripe stripes[TW__P_STRIPES];
};

/* The calling thread's stripe: 1 + its index, 0 before its first call. */
extern _Thread_local unsigned tw__p_stripe_ix;
unsigned tw__p_stripe_assign(void);

static inline struct tw__pstripe *tw__p_stripe(struct tw_purgatory *p)
{
    unsigned i = tw__p_stripe_ix;

    if (i == 0)
        i = tw__p_stripe_assign();
    return &p->stripes[i - 1];
}

/*
 * The gate, inline for watch. With one thread no stop can run during a
 * watch: only the closed flag matters. Over a service a watch counts
 * itself in on its thread's stripe, then reads the flag; stop sets the
 * flag, then waits for every stripe's count to fall to zero. Both orders
 * are sequentially consistent, so either the watch sees the flag (and
 * leaves) or stop sees its count (and waits for it). A refused watch reads
 * the flag before it writes, so once stop has closed the gate a refused
 * call never touches a count that stop waits on (a thread can bump its
 * count at most once more, if it read the flag just before the close):
 * stop is not held up by the calls it refuses. Watch passes the gate only
 * after its first try failed, when it is about to make a record visible: a
 * watch that completes at once never holds stop.
 */
static inline bool tw__p_gate_closed(const struct tw_purgatory *p)
{
    return atomic_load_explicit(&p->closed, memory_order_relaxed);
}

static inline bool tw__p_gate_enter(struct tw_purgatory *p)
{
    struct tw__pstripe *st;

    if (tw__p_gate_closed(p))
        return false;
    if (!p->threaded)
        return true;
    st = tw__p_stripe(p);
    atomic_fetch_add(&st->gate, 1);
    if (atomic_load(&p->closed)) {
        atomic_fetch_sub(&st->gate, 1);
        return false;
    }
    return true;
}

static inline void tw__p_gate_leave(struct tw_purgatory *p)
{
    if (p->threaded)
        atomic_fetch_sub(&tw__p_stripe(p)->gate, 1);
}

/*
 * Compare-and-swap of a record's state word. Over a service it is atomic;
 * over a core wheel or a caller's timer (one thread, by the contract of
 * those modes) a plain load and store do the same at a fraction of the
 * cost: a check does three of these for every operation it tries.
 */
static inline bool tw__p_cas(struct tw__pwatch *w, unsigned *expect,
                             unsigned want)
{
    unsigned s;

    if (w->threaded)
        return atomic_compare_exchange_strong(&w->state, expect, want);
    s = atomic_load_explicit(&w->state, memory_order_relaxed);
    if (s != *expect) {
        *expect = s;
        return false;
    }
    atomic_store_explicit(&w->state, want, memory_order_relaxed);
    return true;
}

/*
 * The one move every event makes on a record it meets: take a WATCHING
 * record (0 -> take) or leave `note` on an owned one for its owner; a DONE
 * record is left alone. Returns whether this call took it. A check takes
 * OWNED and notes AGAIN (shard locked); a timeout that fires takes DONE
 * and notes EXPIRE. Inline: a check does it for every record of its key.
 */
static inline bool tw__p_take_or_note(struct tw__pwatch *w, unsigned take,
                                      unsigned note)
{
    unsigned s = atomic_load(&w->state);

    for (;;) {
        if (s & TW__P_DONE)
            return false;
        if (s == 0) {
            if (tw__p_cas(w, &s, take))
                return true;
            continue;
        }
        if (tw__p_cas(w, &s, s | note))
            return false;
    }
}

/* ---- purgatory.c ---- */
/* The purgatory whose try_complete this thread is running, if any: a call
 * on that purgatory from inside it is refused with -EDEADLK. Inline, as
 * the check loop sets it around every try. */
extern _Thread_local const struct tw_purgatory *tw__p_trying;

/* Whether the calling thread is inside a try_complete of p. */
/* Bumped in every child of fork() (purgatory.c, "fork"). */
extern atomic_uint tw__p_fork_gen;

/* Whether p is over a service and this is a child of fork() that
 * inherited it: every call answers -ECHILD (the service's threads are not
 * in the child, and a shard lock may have been held by one of them). */
static inline bool tw__p_inherited(const struct tw_purgatory *p)
{
    return p->threaded &&
           p->fork_gen !=
               atomic_load_explicit(&tw__p_fork_gen, memory_order_relaxed);
}

static inline bool tw__p_in_try(const struct tw_purgatory *p)
{
    return tw__p_trying == p;
}

/* Run op's try_complete with the in-try marker of p set (and another
 * purgatory's marker, if any, put back after). */
static inline bool tw__p_call_try(struct tw_purgatory *p, struct tw_delayed *op)
{
    const struct tw_purgatory *outer = tw__p_trying;
    bool yes;

    tw__p_trying = p;
    yes = op->try_complete(op, op->arg);
    tw__p_trying = outer;
    return yes;
}

/* The usual check of a key argument: 0, -EINVAL or -E2BIG. */
int tw__p_key_ok(const void *bytes, size_t len);
/* Count one on counter c (TW__P_WATCHED...) of p. */
void tw__p_count(struct tw_purgatory *p, unsigned c);
/* Free p's shards and p (destroy, once p is stopped). */
void tw__p_free(struct tw_purgatory *p);

/* ---- keys.c ---- */
uint64_t tw__p_hash(const void *bytes, size_t len);
struct tw__pshard *tw__p_shard(struct tw_purgatory *p, uint64_t hash);
/* The key node of (bytes, len) in its shard (locked), or NULL. */
struct tw__pkey *tw__p_key_find(struct tw__pshard *sh, uint64_t hash,
                                const void *bytes, size_t len);
/* Link entry e into the watch list of its key, creating the key node
 * (shard locked). 0 or -ENOMEM. */
int tw__p_key_link(struct tw__pshard *sh, struct tw__pentry *e, uint64_t hash,
                   const struct tw_key *key);
/* Unlink e from its key's list, freeing the key with its last watcher
 * (shard locked). */
void tw__p_key_unlink(struct tw__pshard *sh, struct tw__pentry *e);
/* Set up and tear down a shard's table; locking says whether its lock is
 * taken (over a service) or not (over a core wheel, one thread). */
int tw__p_shard_init(struct tw__pshard *sh, bool locking);
void tw__p_shard_fini(struct tw__pshard *sh);
void tw__p_lock(struct tw__pshard *sh);
void tw__p_unlock(struct tw__pshard *sh);

/* ---- owner.c ---- */
/* Owner: run try_complete until it answers with no note left; returns
 * true when the record was claimed (DONE, outcome set), false when it was
 * let go (back to WATCHING). */
bool tw__p_own_try(struct tw__pwatch *w);
/* Claim a WATCHING record (0 -> DONE). */
bool tw__p_claim(struct tw__pwatch *w);
/* Claimer: unlink from every key, cancel the timeout, count, set the
 * operation's state. The operation is not called. */
void tw__p_detach(struct tw__pwatch *w);
/* Unlink the first n entries of w, each under its shard's lock; over a
 * service, cancel the timeout with the first. */
void tw__p_unlink_keys(struct tw__pwatch *w, size_t n);
/* Claimer, after detach and with no lock held: free the record, then run
 * on_expire and on_complete (completed, expired) or fn (handed back). */
void tw__p_deliver(struct tw__pwatch *w, tw_delayed_handback_fn *fn, void *ctx);
/* Free a record that no list, wheel or other thread can reach. */
void tw__p_put(struct tw__pwatch *w);

/* ---- handback.c ---- */
/* A hand-back in progress on this thread: stop and cancel_key push one
 * (on their stack) around the hand-back functions they call, so that a
 * call from inside one that would free p (destroy) or wait for itself
 * (stop from stop's) is refused with -EDEADLK. */
struct tw__pframe {
    const struct tw_purgatory *p;
    bool stop; /* pushed by stop (else by cancel_key) */
    struct tw__pframe *up;
};
void tw__p_frame_push(struct tw__pframe *f, const struct tw_purgatory *p,
                      bool stop);
void tw__p_frame_pop(const struct tw__pframe *f);
/* Whether this thread is inside a hand-back of p (of its stop only, when
 * stop_only). */
bool tw__p_in_handback(const struct tw_purgatory *p, bool stop_only);

/* Claim every WATCHING record of key k (its shard locked) onto *claimed,
 * as handed back; returns whether a record owned elsewhere was left (it
 * may come back). */
bool tw__p_claim_key(struct tw__pkey *k, struct tw__pwatch **claimed);
/* Detach, count (as `count`) and hand back to fn a list of claimed
 * records, no lock held; returns how many. */
int64_t tw__p_hand_back(struct tw__pwatch *claimed, unsigned count,
                        tw_delayed_handback_fn *fn, void *ctx);
/* Hand back every record of one shard, waiting for owners and for
 * claimers still detaching, until the shard holds no key (stop). */
int64_t tw__p_stop_shard(struct tw__pshard *sh, tw_delayed_handback_fn *fn,
                         void *ctx);

/* ---- ticker.c ---- */
struct tw__ptick;
/* Over a service, the shards that hold a timeout wheel: a wheel costs
 * about 16 KiB, so a purgatory of many shards shares this many. */
#define TW__P_WHEELS 16u

static inline unsigned tw__p_nwheels(const struct tw_purgatory *p)
{
    return p->nshards < TW__P_WHEELS ? p->nshards : TW__P_WHEELS;
}

/* The shard whose wheel (and lock) keeps the timeouts of shard sh. */
static inline struct tw__pshard *tw__p_wheel_shard(struct tw_purgatory *p,
                                                   struct tw__pshard *sh)
{
    return &p->shards[(unsigned)(sh - p->shards) & (TW__P_WHEELS - 1)];
}
/* Create p's tick and its shards' wheels (over a service). 0 or -ENOMEM
 * (what was made is freed by tw__p_tick_free()). */
int tw__p_tick_create(struct tw_purgatory *p);
/* Make the service timer fire no later than d (after a watch scheduled a
 * timeout at d). 0, or the service's refusal. */
int tw__p_tick_cover(struct tw_purgatory *p, uint64_t d);
/* Detach the tick from p and cancel its timer (stop, shards empty). */
void tw__p_tick_stop(struct tw_purgatory *p);
/* Free the wheels and drop p's reference to the tick (destroy). */
void tw__p_tick_free(struct tw_purgatory *p);

/* ---- timeout.c ---- */
/* Over a core wheel or a caller's timer: arm w's timeout; 0 or a negative
 * code (the record is then untouched). */
int tw__p_arm(struct tw__pwatch *w, uint64_t timeout_ns);
/* Over a core wheel or a caller's timer: cancel w's timeout (claimer, not
 * from the timer's own callback). */
void tw__p_disarm(struct tw__pwatch *w);
/* Over a service, sh being the shard of w's first key, locked: schedule
 * w's timeout in its wheel (returns the deadline, which the caller then
 * has the tick cover), or cancel it (a no-op if it fired). */
uint64_t tw__p_arm_shard(struct tw__pwatch *w, struct tw__pshard *sh,
                         uint64_t timeout_ns);
void tw__p_disarm_shard(struct tw__pwatch *w, struct tw__pshard *sh);

#endif /* TW_PURGATORY_PRIV_H */
