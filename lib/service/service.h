/*
 * The threaded timer service: the objects shared by its files. Never
 * installed.
 *
 *   service.c   create, schedule, stop, destroy, stats
 *   handle.c    handles: reference counts, the state machine, cancel
 *   worker.c    the worker thread: admit, reap, advance, sleep
 *   executor.c  the executor pool
 *   gate.c      what producers pass through: stop's gate, back-pressure,
 *               the striped counters and tw_service_stats() (the paths
 *               every schedule and cancel takes are inline below, as is
 *               the worker's post of a new handle)
 *   wait.c      sleeping on a handle's state word (cancel-and-wait)
 *   registry.c  the live services by slot: a handle's way to its service
 *   callbacks.c the service's callbacks by index: a handle's way to its own
 *   ring.c      each producer thread's rings in front of the queues
 *   ring.h      the ring: one producer, one consumer, a chain of blocks
 *   mpsc.h      the lock-free queue from producers to the worker
 *   clock.c     the producers' clock: the "now" a relative delay counts
 *               from, read from the TSC where that is safe (clock.h)
 *   tsan.h      telling a user's ThreadSanitizer about our orderings
 *
 * The service uses the core only through its public API
 * (timewheel/core.h), memory included: tw_alloc() and tw_free().
 *
 * Threads. Producers (any thread) push new handles, and messages about
 * cancelled or re-armed ones, into rings of their own (ring.c: one pair
 * per stripe a thread owns, made at its first push, a plain store per
 * push), or, where they have none, onto the queues `newq` and `cancelq`
 * (an exchange per push; a message goes onto cancelq in a node of its
 * own, struct tw__qmsg, allocated by the sender and freed by the worker,
 * so the handle carries no node for it). The worker thread alone touches
 * the core wheel: it drains every ring and both queues, moves new handles
 * into the wheel, unlinks cancelled ones, advances to CLOCK_MONOTONIC and
 * runs callbacks or hands them to the executor. tw_service_stop() takes
 * over the worker's structures, rings included, once it has joined the
 * worker and the executor.
 *
 * A handle's state word (32 bits: the state in the low 4, TW__WAITERS,
 * TW__CQ, TW__ORPHAN, a generation above, bumped by every re-arm) changes only
 * by compare-and-swap, so every race has a single winner; the generation makes
 * a worker that read a deadline and then claims the timer fail if a re-arm came
 * in between:
 *
 *   PENDING --worker--> RUNNING (no executor) or DISPATCHED (executor)
 *   DISPATCHED --executor--> RUNNING
 *   RUNNING --> DONE (one-shot) or PENDING (periodic, next period)
 *   PENDING/DISPATCHED --rearm--> LOCKED --> PENDING (gen + 1)
 *   RUNNING/RUN_AGAIN --rearm--> LOCKED --> RUN_AGAIN (gen + 1)
 *   RUN_AGAIN --> PENDING once the callback returns
 *   PENDING --cancel--> CANCELLING --> CANCELLED   (canceller sends a
 *                                                   message in between)
 *   DISPATCHED --cancel--> CANCELLING --> CANCELLED
 *   RUNNING (periodic) / RUN_AGAIN --cancel--> CANCELLING --> CANCEL_RUNNING
 *                                                   --> CANCELLED on return
 *   RUNNING (one-shot) --cancel, answering 0--> LAST_RUN --> DONE on return
 *   PENDING or DISPATCHED --stop--> RETURNED
 *
 * A re-arm moves only PENDING, DISPATCHED, RUNNING and RUN_AGAIN, so once
 * a cancel has moved the word (CANCELLED, CANCEL_RUNNING, LAST_RUN) every
 * later re-arm answers 0: a cancel wins over a callback that re-arms
 * itself. tw_handle_query() reads the four running states as RUNNING.
 *
 * LOCKED and CANCELLING are held for a few instructions by the thread that
 * set them; everyone else waits them out (tw__handle_settle()).
 *
 * Custody. The service's reference is held by exactly one place at a time:
 * a new-handle ring or the new queue (from schedule, or when the executor
 * hands a re-armed or periodic timer back), the wheel, the worker's batch
 * or the executor's queue, or the thread running the callback. Whoever
 * holds custody of a cancelled handle drops it. The message rings and the
 * cancel queue carry messages, not custody: "this handle was cancelled" or
 * "this handle was re-armed to an earlier deadline"; TW__CQ in the state
 * word says whether one is queued (in a ring or the queue), so a handle
 * has at most one message on the way. A handle's message and the handle
 * itself travel separately (a message may be taken before the handle is
 * admitted: the worker then finds the handle in no structure of its own
 * and leaves it to the admission, which sees the state). A message holds
 * no reference: while TW__CQ is set, the service's reference is never
 * dropped. Whoever lets go of the handle then (tw__handle_let_go, called
 * by tw__handle_drop) sets TW__ORPHAN instead, by compare-and-swap on the
 * settled word, and the worker, whose swap clears TW__CQ, drops the
 * reference for it if it finds TW__ORPHAN; whichever of the two swaps comes
 * second does the dropping. So the worker may read a handle whose message
 * it takes (from a ring or cancelq) until its own swap, and afterwards only
 * if the handle is in the wheel (its custody).
 *
 * A re-arm to a later deadline only writes the deadline: when the wheel
 * fires the timer at the old one, the worker sees the new one and puts it
 * back (lazy, as most re-arms push a deadline back). A re-arm to an earlier
 * deadline sends a message so the worker moves it in the wheel (O(1)).
 *
 * A message that cannot be sent (the ring's block is full and no new one
 * can be had, or there is no ring, and no node for cancelq can be
 * allocated) changes no custody. A cancel still wins, with TW__CQ left
 * clear: the handle stays where it is (the wheel, most likely) until its
 * holder meets it, at its deadline, its admission or stop, and lets go of
 * it as cancelled, as it does any cancelled handle it holds; the count and
 * the pending slot were settled when the cancel won, only the memory waits.
 * A re-arm to an earlier deadline instead gives up with -ENOMEM and
 * changes nothing (it holds LOCKED until then), so a re-arm that returned
 * 1 is never followed by a run at the old, later deadline.
 *
 * References: one for the caller (until tw_handle_release()) and one for
 * the service from schedule until the service lets go of the handle (and
 * its message, if one is queued then, has been taken). Whoever drops the
 * last frees the handle.
 *
 * Lifetime of the service against cancellers and re-armers: they touch the
 * service only while they hold CANCELLING or LOCKED, and find it through
 * the slot their handle names in the registry (registry.c). A service
 * thread (and stop) that meets either waits until it is gone before letting
 * go of the handle, so once stop has returned no caller can still be
 * inside the service, and destroy may free it and give its slot back.
 */
#ifndef TW_SERVICE_H
#define TW_SERVICE_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <string.h>

#include "mpsc.h"
#include "ring.h"
#include "sat.h"
#include "timewheel/service.h"
#include "tsan.h"

enum tw__hstate {
    TW__PENDING,
    TW__DISPATCHED,
    TW__RUNNING,
    TW__RUN_AGAIN,      /* running; re-armed: pending again once it returns */
    TW__CANCEL_RUNNING, /* running; cancelled: will not run again */
    TW__LOCKED,         /* a re-armer or the runner is writing `deadline` */
    TW__CANCELLING,
    TW__CANCELLED,
    TW__DONE,
    TW__RETURNED,
    TW__LAST_RUN, /* running; a one-shot cancelled while it ran (the cancel
                     answered 0): DONE once it returns, re-arms answer 0 */
};

#define TW__ST_MASK 0xfu
/* Set by the first tw_handle_cancel_wait() that sleeps on the word, and
 * kept: from then on whoever moves h out of a running state wakes the
 * sleepers (handle.c). A bit of the word rather than a count beside it, so
 * that the runner's compare-and-swap itself tells it whether to wake. */
#define TW__WAITERS 0x10u
/* A message about the handle is on its way (in a message ring or cancelq):
 * set by the move that decides to send it (a cancel's compare-and-swap,
 * a re-arm's store), so a canceller spends no read-modify-write on it; a
 * cancel that then finds no way to send (no ring slot, and no node for
 * cancelq: out of memory) clears it again in its store of CANCELLED, which
 * no one can see before (handle.c). Cleared by the worker's
 * compare-and-swap when it takes the message. */
#define TW__CQ 0x20u
/* The service let go of the handle while TW__CQ was set: the worker drops
 * the service's reference when it takes the message (see the top). */
#define TW__ORPHAN 0x40u
#define TW__GEN_ONE 0x80u

static inline int tw__st(uint32_t w)
{
    return (int)(w & TW__ST_MASK);
}

/* How the service came to let go of a handle (which counter it adds to). */
enum tw__outcome {
    TW__OUT_COMPLETED,
    TW__OUT_CANCELLED,
    TW__OUT_RETURNED,
};

struct tw_service;

/*
 * A handle is one allocation: struct tw_handle, followed by a struct
 * tw__handle_tail only when the timer is periodic, has a release hook or a
 * callback the service's table could not take (callbacks.c): TW__HF_TAIL
 * says so; tw__handle_size() gives the size to free. The common one-shot
 * timer thus pays for none of the tail's fields: 48 bytes, a jemalloc size
 * class, against 80 with the tail.
 *
 * The 32-bit `refs` word holds, besides the reference count in its low
 * two bits, two flags fixed at creation, the index of the callback in the
 * service's table (callbacks.c), which stands for an 8-byte pointer to the
 * callback, and the slot of its service in the registry (registry.c),
 * which stands for an 8-byte pointer to the service. Adding or taking one
 * reference leaves the rest alone: the count never exceeds two (the caller
 * and the service; a message holds none).
 *
 * The core's timer carries three fields of ours (timewheel/core.h): the
 * wheel calls tw__worker_expire() for every due timer (its expiry
 * function, set by make_wheel()) and never reads the timer's cb or arg, so
 * its arg holds the user's arg, and its cb, always, the requested deadline
 * (`deadline`, written from any thread by a re-arm, below); and while the
 * handle is out of the wheel (in newq, in the worker's batch, in the
 * executor's queue, in stop's lists) the timer's deadline field is ours,
 * and holds the link of whichever of those it is in. A handle is in the
 * wheel or in one of those, never both (custody, above: only the worker,
 * an executor thread handing a timer back to it, or stop once it has
 * joined both, moves it between them, and the
 * wheel gives it back only through the expiry function or tw_drain(), not
 * pending by then). A message about the handle, which may be queued
 * while the handle is in the wheel, needs no field in it: a ring slot
 * holds a pointer to it, and on cancelq a struct tw__qmsg does.
 *
 * The wheel's deadline (when the worker will next look at the timer) and
 * the requested one (when it should run) are two fields because the lazy
 * re-arm writes the second from any thread while the timer sits in the
 * wheel at the first (docs/benchmarks.md, History, "48 bytes").
 */
#define TW__REF_MASK 0x3u
#define TW__HF_TAIL 0x4u        /* a struct tw__handle_tail follows */
#define TW__HF_FIXED_DELAY 0x8u /* kind TW_FIXED_DELAY (else FIXED_RATE) */
#define TW__CB_SHIFT 4          /* the callback's index (callbacks.c) */
#define TW__CB_BITS 10
#define TW__CB_SLOTS (1u << TW__CB_BITS)
#define TW__SLOT_SHIFT 16 /* the service's slot: the top 16 bits */

struct tw_handle {
    union {
        /* The core's node, worker-owned but for the fields below. */
        struct tw_timer timer;
        /* The same bytes as the service names them. */
        struct {
            struct tw_link wheel_link;      /* timer.link: never used by name */
            union {                         /* timer.deadline, while out */
                struct cds_wfcq_node qnode; /* in newq (custody) */
                struct tw_handle *next;     /* or in a list of ours */
            };
            /* timer.cb: written under LOCKED (or before publishing) */
            _Atomic uint64_t deadline;
            void *user_arg; /* timer.arg: never used by name */
        };
    };
    _Atomic uint32_t word; /* enum tw__hstate | TW__* flags | gen */
    _Atomic uint32_t refs; /* count | TW__HF_* | callback | slot */
};

/* The links lie exactly over the timer's deadline, the requested deadline
 * over its cb (on 64-bit targets, where both are 8 bytes). */
_Static_assert(offsetof(struct tw_handle, qnode) ==
                       offsetof(struct tw_handle, timer.deadline) &&
                   offsetof(struct tw_handle, next) ==
                       offsetof(struct tw_handle, timer.deadline) &&
                   sizeof(struct cds_wfcq_node) <= sizeof(uint64_t) &&
                   sizeof(struct tw_handle *) <= sizeof(uint64_t),
               "the service's links must lie over the timer's deadline");
_Static_assert(offsetof(struct tw_handle, deadline) ==
                       offsetof(struct tw_handle, timer.cb) &&
                   sizeof(tw_callback *) == sizeof(uint64_t) &&
                   offsetof(struct tw_handle, user_arg) ==
                       offsetof(struct tw_handle, timer.arg),
               "the requested deadline lies over the timer's cb "
               "(64-bit targets only)");

/* What only periodic timers, those with a release hook and those whose
 * callback has no index carry. */
struct tw__handle_tail {
    uint64_t period; /* 0: one-shot */
    tw_release_fn *release;
    tw_service_callback *cb; /* the callback of a handle with a tail */
};

struct tw__handle_long {
    struct tw_handle h;
    struct tw__handle_tail tail;
};

#if defined(__x86_64__) || defined(__aarch64__)
/* Both are jemalloc size classes: the whole cost of a pending timer.
 * service_alloc/handles_fit_their_size_classes checks the sizes the service
 * allocates. */
_Static_assert(sizeof(struct tw_handle) <= 48, "a handle must fit 48 B");
_Static_assert(sizeof(struct tw__handle_long) <= 80,
               "a handle with its tail must fit 80 B");
#endif

/* The bits of h's refs word that never change after creation. */
static inline uint32_t tw__fixed(const struct tw_handle *h)
{
    return atomic_load_explicit(&((struct tw_handle *)h)->refs,
                                memory_order_relaxed);
}

static inline const struct tw__handle_tail *tw__tail(const struct tw_handle *h)
{
    if (!(tw__fixed(h) & TW__HF_TAIL))
        return NULL;
    return &TW_CONTAINER_OF(h, const struct tw__handle_long, h)->tail;
}

/* The size h was allocated with. */
static inline size_t tw__handle_size(const struct tw_handle *h)
{
    return tw__fixed(h) & TW__HF_TAIL ? sizeof(struct tw__handle_long)
                                      : sizeof(struct tw_handle);
}

static inline uint64_t tw__period(const struct tw_handle *h)
{
    const struct tw__handle_tail *t = tw__tail(h);

    return t ? t->period : 0;
}

static inline tw_release_fn *tw__release(const struct tw_handle *h)
{
    const struct tw__handle_tail *t = tw__tail(h);

    return t ? t->release : NULL;
}

static inline enum tw_period tw__kind(const struct tw_handle *h)
{
    return tw__fixed(h) & TW__HF_FIXED_DELAY ? TW_FIXED_DELAY : TW_FIXED_RATE;
}

/* How soon the worker must unlink a cancelled timer from the wheel. A
 * canceller wakes a worker that sleeps longer than this, and a worker that
 * has just reaped sleeps at most this long, so a stream of cancels costs
 * about 1 / TW__REAP_NS wake-ups per second, not one per cancel. */
#define TW__REAP_NS UINT64_C(100000000)

/* Stripes of counters a thread owns (gate.c), each a cache line, so that
 * two threads never write the same line and a thread counts with plain
 * stores; threads beyond these share one more stripe, with atomic adds. */
#define TW__STRIPES 64
/* Pending slots a stripe takes from the shared pool at once. */
#define TW__CREDIT_CHUNK 64

struct tw__stripe {
    _Alignas(TW__CACHE_LINE)
        atomic_uint_fast64_t inside; /* calls in the gate */
    atomic_uint_fast64_t accepted;
    atomic_uint_fast64_t rejected;
    atomic_uint_fast64_t cancelled; /* cancels that won (tw_handle_cancel) */
    atomic_uint_fast64_t completed; /* let go of by this thread: ran */
    atomic_uint_fast64_t returned;  /* let go of by this thread: handed back */
    atomic_uint_fast64_t runs;      /* callbacks this thread started */
    atomic_int_fast64_t credit; /* pending slots taken from `avail`, unused */
};

/* A message on cancelq: the handle it is about, in a node of its own,
 * allocated by the sender (tw_alloc) and freed by the worker that takes it
 * (or stop). Like a ring slot, it holds no reference (see the top). */
struct tw__qmsg {
    struct cds_wfcq_node node;
    struct tw_handle *h;
};

/* A stripe's rings (ring.c): new handles, and messages. */
struct tw__rings {
    struct tw__ring fresh; /* custody, as in newq */
    struct tw__ring msgs;  /* messages, as in cancelq */
    void *base;            /* what tw_alloc() returned */
};

/* A singly linked FIFO of handles through their `next` field, which lies
 * over the timer's deadline: only for handles out of the wheel. */
struct tw__hlist {
    struct tw_handle *head;
    struct tw_handle *tail;
    size_t n;
};

struct tw__exec {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct tw__hlist queue; /* DISPATCHED handles, oldest first */
    bool stop;
    unsigned nthreads; /* configured: 0 runs callbacks on the worker */
    unsigned started;  /* threads running, until stop joins them */
    pthread_t *threads;
};

struct tw_service {
    void *base;    /* what tw_alloc() returned: s is aligned to a cache line */
    unsigned slot; /* in the registry: its handles' way back to it */
    /* Read by every producer, written rarely. */
    atomic_bool closed; /* stop has begun: the gate refuses */
    atomic_bool behind; /* the worker is more than max_lag behind: refuse */
    enum tw_mode mode;
    enum tw_catchup catchup;
    uint64_t tick_ns;
    uint64_t start_ns;
    size_t max_pending;
    uint64_t max_lag;
    /* Written by the worker at each sleep, read by producers and
     * cancellers. sleep_until is the time the worker sleeps until, 0 while
     * it is awake; reap_wake says it sleeps longer than TW__REAP_NS. */
    _Alignas(TW__CACHE_LINE) atomic_uint_fast64_t sleep_until;
    atomic_bool reap_wake;
    atomic_bool hinted; /* a re-arm to an earlier deadline sent a message */
    struct tw__mpsc newq;
    struct tw__mpsc cancelq;                    /* struct tw__qmsg nodes */
    struct tw__stripe stripes[TW__STRIPES + 1]; /* the last: shared */
    /* Each owned stripe's rings (ring.c), made by its owner at its first
     * push; bit i of `ringed` says rings[i] holds some. Written once per
     * stripe, read by its owner at every push and by the worker. */
    _Alignas(TW__CACHE_LINE) _Atomic(struct tw__rings *) rings[TW__STRIPES];
    atomic_uint_fast64_t ringed;
    atomic_uint_fast64_t ringless; /* bit i: rings[i] could not be made */
    /* Pending slots not given to a stripe: producers take, drops give. */
    _Alignas(TW__CACHE_LINE) atomic_int_fast64_t avail;
    /* Sleeping and waking the worker. */
    _Alignas(TW__CACHE_LINE) pthread_mutex_t lock;
    pthread_cond_t wake;
    bool kicked; /* under lock */
    /* Owned by the worker thread (by stop once it is joined). */
    struct tw_wheel *wheel;
    struct tw__hlist batch; /* due, for the executor after the advance */
    bool reaped;            /* the last reap found cancelled timers */
    bool behind_set;        /* the worker's copy of `behind` */
    uint64_t drained_at;    /* when the worker last emptied rings and newq */
    pthread_t worker;
    struct tw__exec exec;
    atomic_uint_fast64_t wakeups; /* the worker's */
    /* Stop. */
    pthread_mutex_t stop_lock;
    bool stopped;      /* under stop_lock */
    bool worker_alive; /* the worker thread was started and not joined */
    /* The callbacks by index (callbacks.c): filled once each, read by all. */
    _Alignas(TW__CACHE_LINE) _Atomic(tw_service_callback *) cbs[TW__CB_SLOTS];
};

/* The service whose thread (worker, executor, or stop's visitor) this is. */
extern _Thread_local const struct tw_service *tw__svc_current;
/* The handle whose callback this thread is running, if any. */
extern _Thread_local const struct tw_handle *tw__running;

static inline uint64_t tw__svc_clock(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static inline void tw__hlist_push(struct tw__hlist *l, struct tw_handle *h)
{
    h->next = NULL;
    if (l->tail)
        l->tail->next = h;
    else
        l->head = h;
    l->tail = h;
    l->n++;
}

static inline struct tw_handle *tw__hlist_pop(struct tw__hlist *l)
{
    struct tw_handle *h = l->head;

    if (h) {
        l->head = h->next;
        if (!l->head)
            l->tail = NULL;
        l->n--;
        h->next = NULL;
    }
    return h;
}

/* handle.c */
struct tw_handle *tw__handle_new(struct tw_service *s,
                                 const struct tw_timer_spec *spec);
void tw__handle_ref_unpublished(struct tw_handle *h);
void tw__handle_unref(struct tw_handle *h);
void tw__handle_let_go(struct tw_handle *h);
uint32_t tw__handle_settle(struct tw_handle *h);
bool tw__handle_cas(struct tw_handle *h, uint32_t *w, int to, bool bump);
void tw__handle_drop(struct tw_service *s, struct tw_handle *h,
                     enum tw__outcome why);
uint64_t tw__handle_next_deadline(const struct tw_service *s,
                                  struct tw_handle *h, uint64_t now);
void tw__handle_wake(struct tw_handle *h, uint32_t w);

/* The word w moved to state `to`, the generation bumped if bump, the flags
 * (TW__WAITERS, TW__CQ, TW__ORPHAN) kept. */
static inline uint32_t tw__with(uint32_t w, int to, bool bump)
{
    return ((w & ~TW__ST_MASK) + (bump ? TW__GEN_ONE : 0)) | (uint32_t)to;
}

/* Store state `to` into h, whose word w (LOCKED or CANCELLING) we hold:
 * no one else writes the word meanwhile. A release store (a plain one on
 * x86): those who wait it out (tw__handle_settle) acquire, and
 * cancel-and-wait's sleep hand-shake is with the compare-and-swaps of the
 * moves out of a running state, never with this store. */
static inline void tw__handle_put(struct tw_handle *h, uint32_t w, int to,
                                  bool bump)
{
    tw__hb_release(h);
    atomic_store_explicit(&h->word, tw__with(w, to, bump),
                          memory_order_release);
}

/* wait.c */
void tw__futex_wait(_Atomic uint32_t *word, uint32_t val);
void tw__futex_wake(_Atomic uint32_t *word);

/* registry.c: the live services by slot, so that a handle names its
 * service in 16 bits of its refs word instead of an 8-byte pointer. */
#define TW__SLOTS 65536u /* slot 0 is never given: "none" */
extern _Atomic(struct tw_service *) tw__registry[TW__SLOTS];
int tw__registry_add(struct tw_service *s);
void tw__registry_remove(struct tw_service *s);

/* h's service. Only while the service holds h (see the header comment):
 * once the service is destroyed its slot may name another service. */
static inline struct tw_service *tw__svc(const struct tw_handle *h)
{
    return atomic_load_explicit(&tw__registry[tw__fixed(h) >> TW__SLOT_SHIFT],
                                memory_order_acquire);
}

/* h's callback: in s's table (callbacks.c), or in h's tail. */
static inline tw_service_callback *tw__cb(const struct tw_service *s,
                                          const struct tw_handle *h)
{
    unsigned i = (tw__fixed(h) >> TW__CB_SHIFT) & (TW__CB_SLOTS - 1);

    if (i)
        return atomic_load_explicit(&((struct tw_service *)s)->cbs[i],
                                    memory_order_relaxed);
    return tw__tail(h)->cb;
}

/* The argument: kept in the core's timer, whose own field it is not, as
 * the wheel calls its expiry function (tw__worker_expire) instead. */
static inline void *tw__arg(const struct tw_handle *h)
{
    return h->user_arg;
}

static inline uint64_t tw__deadline(const struct tw_handle *h)
{
    return atomic_load_explicit(&h->deadline, memory_order_relaxed);
}

/* worker.c */
void *tw__worker_main(void *arg);
void tw__worker_expire(struct tw_timer *t, void *ctx);
void tw__worker_run(struct tw_service *s, struct tw_handle *h);
void tw__worker_kick(struct tw_service *s);
void tw__worker_notify(struct tw_service *s, uint64_t due);
void tw__worker_reap(struct tw_service *s, bool wait);
bool tw__worker_admit(struct tw_service *s, size_t max, bool wait);

/* gate.c */
void tw__gate_init(void);
struct tw__stripe *tw__stripe_claim(struct tw_service *s);
void tw__gate_unreserve(struct tw_service *s, struct tw__stripe *st);
void tw__gate_close(struct tw_service *s);
void tw__gate_let_go(struct tw_service *s, bool completed);
bool tw__gate_asym(void);
int tw__gate_reserve_slow(struct tw_service *s, struct tw__stripe *st);
/* Whether stop and the worker pay the producers' barrier (gate.c). */
extern atomic_bool tw__asym;
bool tw__gate_membarrier(void);

/* ring.c */
struct tw__rings *tw__rings_make(struct tw_service *s);
struct tw__rings *tw__rings_at(struct tw_service *s, unsigned i);
uint64_t tw__rings_made(struct tw_service *s);
bool tw__rings_fresh_empty(struct tw_service *s);
bool tw__rings_msgs_empty(struct tw_service *s);
void tw__rings_free(struct tw_service *s);

/* Initial-exec TLS: one load off %fs instead of a call to __tls_get_addr
 * on every schedule and cancel (a few bytes of the static TLS surplus when
 * the library is loaded with dlopen). */
#if defined(__GNUC__)
#define TW__TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define TW__TLS_IE
#endif

/* This thread's stripe index + 1 (gate.c); 0: not claimed yet. */
extern _Thread_local unsigned tw__my_stripe TW__TLS_IE;

/* The stripe this thread counts on in s, claiming one at the first call. */
static inline struct tw__stripe *tw__stripe_mine(struct tw_service *s)
{
    unsigned i = tw__my_stripe;

    return i ? &s->stripes[i - 1] : tw__stripe_claim(s);
}

/* Whether st is the shared stripe (the others each have one writer). */
static inline bool tw__shared(const struct tw_service *s,
                              const struct tw__stripe *st)
{
    return st == &s->stripes[TW__STRIPES];
}

/* Count one on counter c of stripe st, which this thread uses: a plain
 * load and a release store on its own stripe, an atomic add on the shared
 * one. The release orders the count after what it counts (gate.c). */
static inline void tw__count(const struct tw_service *s, struct tw__stripe *st,
                             atomic_uint_fast64_t *c)
{
    if (tw__shared(s, st))
        atomic_fetch_add_explicit(c, 1, memory_order_release);
    else
        atomic_store_explicit(c,
                              atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_release);
}

/* This thread's rings in s (ring.c), made at its first push into s; NULL:
 * it pushes onto the queues. */
static inline struct tw__rings *tw__rings_mine(struct tw_service *s)
{
    unsigned i = tw__my_stripe - 1; /* UINT_MAX before the claim */
    struct tw__rings *r;

    if (i < TW__STRIPES &&
        (r = atomic_load_explicit(&s->rings[i], memory_order_relaxed)))
        return r;
    return tw__rings_make(s);
}

/* After pushing something due at `due`: wake the worker if it would
 * otherwise sleep past due's tick boundary. A timer due within the last tick
 * before the worker's wake-up fires on that wake-up anyway (it is admitted
 * and then due), so it needs no kick: with timers arriving a tick or more
 * ahead, as most do, producers never make a system call. The push before
 * this was either into a ring, whose plain store the worker's membarrier
 * orders before this load (see "Sleeping" at the top; the caller kept the
 * compiler from reordering them), or an exchange with a full barrier
 * (mpsc.h): no fence of our own on the schedule path either way. */
static inline void tw__worker_notify_pushed(struct tw_service *s, uint64_t due)
{
    if (tw__add_sat(due, s->tick_ns) <=
        atomic_load_explicit(&s->sleep_until, memory_order_relaxed))
        tw__worker_kick(s);
}

/* Give custody of h to the worker: push it into this thread's ring, or
 * onto the new queue (ring.c says when). */
static inline void tw__worker_post(struct tw_service *s, struct tw_handle *h)
{
    uint64_t due = tw__deadline(h);
    struct tw__rings *r = tw__rings_mine(s);

    if (r && tw__ring_push(&r->fresh, h))
        atomic_signal_fence(memory_order_seq_cst); /* see notify_pushed */
    else
        tw__mpsc_push(&s->newq, &h->qnode);
    tw__worker_notify_pushed(s, due);
}

/* gate.c's pending-slot credit, inline: a cancel gives its slot back on
 * every call. */
/* Add n to st's credit (the owner's plain store, or an atomic add). */
static inline int_fast64_t tw__credit_add(struct tw_service *s,
                                          struct tw__stripe *st, int_fast64_t n)
{
    int_fast64_t c;

    if (tw__shared(s, st))
        return atomic_fetch_add_explicit(&st->credit, n, memory_order_relaxed) +
               n;
    c = atomic_load_explicit(&st->credit, memory_order_relaxed) + n;
    atomic_store_explicit(&st->credit, c, memory_order_relaxed);
    return c;
}

/* A timer's slot is free again: into this thread's credit; a stripe that
 * gathers two chunks (a thread that lets go of more than it schedules, as
 * the worker does) returns one to the pool. */
static inline void tw__give_back(struct tw_service *s, struct tw__stripe *st)
{
    int_fast64_t c;

    if (!s->max_pending)
        return;
    c = tw__credit_add(s, st, 1);
    if (c < 2 * TW__CREDIT_CHUNK)
        return;
    if (!tw__shared(s, st)) {
        tw__credit_add(s, st, -TW__CREDIT_CHUNK);
    } else {
        do {
            if (c < 2 * TW__CREDIT_CHUNK)
                return;
        } while (!atomic_compare_exchange_weak_explicit(
            &st->credit, &c, c - TW__CREDIT_CHUNK, memory_order_relaxed,
            memory_order_relaxed));
    }
    atomic_fetch_add_explicit(&s->avail, TW__CREDIT_CHUNK,
                              memory_order_relaxed);
}

/* A cancel won: count it on the canceller's stripe and give its pending
 * slot back there, at once, so that stats and max_pending see it as soon as
 * tw_handle_cancel() has returned 1 (the worker frees the handle within
 * TW__REAP_NS). */
static inline void tw__gate_count_cancel(struct tw_service *s)
{
    struct tw__stripe *st = tw__stripe_mine(s);

    tw__count(s, st, &st->cancelled);
    tw__give_back(s, st);
}

/* The producers' gate, inline: on every schedule (gate.c has the rules). */
static inline void tw__gate_leave(struct tw_service *s, struct tw__stripe *st)
{
    if (tw__shared(s, st))
        atomic_fetch_sub_explicit(&st->inside, 1, memory_order_release);
    else
        atomic_store_explicit(&st->inside, 0, memory_order_release);
}

static inline struct tw__stripe *tw__gate_enter(struct tw_service *s, int *rc)
{
    struct tw__stripe *st = tw__stripe_mine(s);

    /* A call that sees the gate closed leaves the counts alone, so the
     * calls stop refuses cannot keep it waiting (gate.c, "Bounded"). */
    if (atomic_load_explicit(&s->closed, memory_order_relaxed)) {
        *rc = -ESHUTDOWN;
        return NULL;
    }
    if (!tw__shared(s, st) &&
        atomic_load_explicit(&tw__asym, memory_order_relaxed)) {
        atomic_store_explicit(&st->inside, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
    } else {
        atomic_fetch_add_explicit(&st->inside, 1, memory_order_seq_cst);
    }
    if (atomic_load_explicit(&s->closed, memory_order_seq_cst)) {
        tw__gate_leave(s, st);
        *rc = -ESHUTDOWN;
        return NULL;
    }
    *rc = 0;
    return st;
}

/* Take a pending slot for a schedule (gate.c has the rules): inline, the
 * owner's plain decrement of its credit; the rest out of line. */
static inline int tw__gate_reserve(struct tw_service *s, struct tw__stripe *st)
{
    int_fast64_t c;

    if (!atomic_load_explicit(&s->behind, memory_order_relaxed) &&
        !tw__shared(s, st) && s->max_pending &&
        (c = atomic_load_explicit(&st->credit, memory_order_relaxed)) > 0) {
        atomic_store_explicit(&st->credit, c - 1, memory_order_relaxed);
        return 0;
    }
    return tw__gate_reserve_slow(s, st);
}

/* After a cancel's message: wake the worker if it sleeps longer than
 * TW__REAP_NS (worker.c). Inline: on every cancel. */
static inline void tw__worker_notify_reap(struct tw_service *s)
{
    if (atomic_load_explicit(&s->reap_wake, memory_order_relaxed))
        tw__worker_kick(s);
}

static inline bool tw__stopping(const struct tw_service *s)
{
    return atomic_load_explicit(&s->closed, memory_order_relaxed);
}

/* Where a periodic timer due at `deadline` starts. TW_CATCHUP_ALL counts a
 * fixed-rate timer's missed periods from when it was scheduled: the periods
 * before were never missed, as nothing was scheduled then, so a deadline in
 * the past moves to the last point of its grid at or before now, and runs
 * at once (timewheel/service.h, enum tw_catchup). Without this, deadline 0
 * with a 10 ms period ran 1,566,842 runs in its first second at 4.6 h of
 * uptime (issue 22; docs/service.md). Reads the clock only for such a
 * timer. */
static inline uint64_t tw__catchup_start(enum tw_catchup c, uint64_t deadline,
                                         uint64_t period, enum tw_period kind)
{
    uint64_t now;

    if (c != TW_CATCHUP_ALL || kind != TW_FIXED_RATE || !period)
        return deadline;
    now = tw__svc_clock();
    if (deadline >= now)
        return deadline;
    return deadline + (now - deadline) / period * period;
}

/* callbacks.c: the index of cb in s's table, inline when cb sits at its
 * first slot (the common case); 0 if the table has no room for it. */
#define TW__CB_PROBE 16 /* slots a callback may take, from its first */
unsigned tw__cb_index_slow(struct tw_service *s, tw_service_callback *cb);

static inline unsigned tw__cb_hash(tw_service_callback *cb)
{
    return (
        unsigned)(((uint64_t)(uintptr_t)cb * UINT64_C(0x9e3779b97f4a7c15)) >>
                  (64 - TW__CB_BITS));
}

static inline unsigned tw__cb_index(struct tw_service *s,
                                    tw_service_callback *cb)
{
    unsigned i = tw__cb_hash(cb);

    if (i && atomic_load_explicit(&s->cbs[i], memory_order_acquire) == cb)
        return i;
    return tw__cb_index_slow(s, cb);
}

/* executor.c */
int tw__exec_start(struct tw_service *s, unsigned n);
void tw__exec_submit(struct tw__exec *x, struct tw__hlist *batch);
void tw__exec_stop(struct tw__exec *x);
void tw__exec_destroy(struct tw__exec *x);

/* A zeroed block from the library's allocator (the core's seam). */
static inline void *tw__svc_zalloc(size_t size)
{
    void *p = tw_alloc(size);

    return p ? memset(p, 0, size) : NULL;
}

#endif /* TW_SERVICE_H */
