/*
 * The service's types: every structure, state and constant its files
 * share, and nothing else (no function, no variable). Never installed.
 *
 * Its owner is the layout: the handle (48 bytes one-shot, 80 with its tail,
 * checked below), the state word's bits, the striped counters, the service
 * object. What a field means in the design (custody, the state machine,
 * references) is told once, at the top of service.h; the functions that
 * read these types are declared in service_externs.h and, for the inline
 * fast paths, defined in service_inlines.h.
 */
#ifndef TW_SERVICE_TYPES_H
#define TW_SERVICE_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpsc.h"
#include "ring.h"
#include "timewheel/service.h"

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
 * no one can see before (handle.c). Cleared by the worker when it takes
 * the message: by compare-and-swap, or by a plain store for a timer
 * cancelled in the wheel, whose word no one else moves
 * (tw__handle_take_message). */
#define TW__CQ 0x20u
/* The service let go of the handle while TW__CQ was set: the worker drops
 * the service's reference when it takes the message (service.h, "Custody"). */
#define TW__ORPHAN 0x40u
#define TW__GEN_ONE 0x80u

/* How the service came to let go of a handle (which counter it adds to). */
enum tw__outcome {
    TW__OUT_COMPLETED,
    TW__OUT_CANCELLED,
    TW__OUT_RETURNED,
};

struct tw_service;

/* What a message means to the worker (handle.c, tw__handle_take_message):
 * unlink the cancelled timer, move the re-armed one, or nothing. */
enum tw__msg {
    TW__MSG_NONE,
    TW__MSG_UNLINK,
    TW__MSG_MOVE,
};

/* The answer to a service thread's claim of a due or queued handle
 * (handle.c): run it, put it back (later), or let go of it (gone). */
enum tw__claim {
    TW__CLAIM_WON,
    TW__CLAIM_LATER,
    TW__CLAIM_GONE,
};

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
 * function, set by make_wheel() in service.c) and never reads the timer's cb or
 * arg, so its arg holds the user's arg, and its cb, always, the requested
 * deadline
 * (`deadline`, written from any thread by a re-arm, below); and while the
 * handle is out of the wheel (in newq, in the worker's batch, in the
 * executor's queue, in stop's lists) the timer's deadline field is ours,
 * and holds the link of whichever of those it is in. A handle is in the
 * wheel or in one of those, never both (custody, service.h: only the worker,
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

/* How soon the worker must unlink a cancelled timer from the wheel. A
 * canceller wakes a worker that sleeps longer than this, and a worker that
 * has just reaped sleeps at most this long, so a slow stream of cancels
 * costs about 1 / TW__REAP_NS wake-ups per second, not one per cancel; a
 * fast one wakes it sooner, by count (backlog.c). */
#define TW__REAP_NS UINT64_C(100000000)

/* The reaping backlog (backlog.c): the fewest unreaped cancel messages, over
 * all the producers' rings, that make a canceller wake the worker (some
 * 28 KB of handles: a stream of fewer than about 5,000 cancels a second
 * stays below it and costs a wake-up per TW__REAP_NS, a faster one one per
 * 512 cancels or more, never one per cancel); and how often a producer
 * waiting for a worker more than twice the bound behind looks whether it
 * made progress (it gives up after TW__REAP_NS without). */
#define TW__REAP_FLOOR 512u
#define TW__REAP_WAIT_NS UINT64_C(2000000)
/* How many of its pushes onto the new queue a thread without a ring makes
 * between two looks at the queue's backlog (backlog.c): each such thread
 * may overshoot the bound by this many before it waits, so a few dozen of
 * them overshoot by a few thousand; a look is two loads and a call. */
#define TW__QUEUE_LOOK 64u

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

/* Exactly one line: a ninth counter would silently make every stripe two
 * (issue 29), and each service holds 65 of them. */
_Static_assert(sizeof(struct tw__stripe) == TW__CACHE_LINE,
               "a stripe of counters must be exactly one cache line");

/* A message on cancelq: the handle it is about, in a node of its own,
 * allocated by the sender (tw_alloc) and freed by the worker that takes it
 * (or stop). Like a ring slot, it holds no reference (service.h, "Custody"). */
struct tw__qmsg {
    struct cds_wfcq_node node;
    struct tw_handle *h;
};

/* A stripe's rings (ring.c): new handles, and messages. */
struct tw__rings {
    struct tw__ring fresh; /* custody, as in newq */
    struct tw__ring msgs;  /* messages, as in cancelq */
    void *base;            /* what tw_alloc() returned */
    /* The producer's (backlog.c): msgs.head + 1 when it last saw the
     * worker take (0: never), the timers scheduled through all rings then,
     * and whether it has woken the worker since. */
    size_t asked;
    size_t fresh_at;
    bool kicked;
    /* The producer's own msgs.tail when it last looked at its fresh ring
     * (backlog.c): how many messages it sent between two looks. */
    size_t msgs_mine;
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
    bool forked;        /* a child of fork() inherited it: -ECHILD (fork.c) */
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
    /* Unreaped cancel messages per ring past which a canceller wakes the
     * worker (backlog.c): written by the worker when it changes, read by
     * cancellers once per block of their ring; TW__REAP_FLOOR until the
     * worker's first turn. */
    atomic_uint_fast64_t reap_bound;
    /* The same bound before it is shared among the rings: that of the
     * new queue, which every thread without a ring shares (backlog.c). */
    atomic_uint_fast64_t reap_queue;
    /* Handles the worker has taken from newq (it alone writes it). */
    atomic_size_t newq_out;
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
    /* Cancellers waiting for the worker to reap (backlog.c), and their
     * wake-up, broadcast under lock after a reap that took messages. */
    pthread_cond_t reap_done;
    atomic_int reap_waiters;
    /* Owned by the worker thread (by stop once it is joined). */
    struct tw_wheel *wheel;
    struct tw__hlist batch; /* due, for the executor after the advance */
    struct tw__hlist held;  /* new, their word held: admitted next turn */
    bool reaped;            /* the last reap found cancelled timers */
    bool admitted;          /* the last admission took new timers */
    uint64_t hwm, hwm_at;   /* most timers in the wheel since hwm_at */
    bool behind_set;        /* the worker's copy of `behind` */
    uint64_t drained_at;    /* when the worker last emptied rings and newq */
    pthread_t worker;
    struct tw__exec exec;
    atomic_uint_fast64_t wakeups; /* the worker's */
    /* Stop. */
    pthread_mutex_t stop_lock;
    bool stopped;      /* under stop_lock */
    bool worker_alive; /* the worker thread was started and not joined */
    /* Written by the worker alone, read by tw_service_metrics() (metrics.c):
     * the clock reading of its turn in progress (0: asleep), and the
     * lateness of what it fired. */
    _Alignas(TW__CACHE_LINE) atomic_uint_fast64_t turn_at;
    atomic_uint_fast64_t fired;
    atomic_uint_fast64_t late_sum;
    atomic_uint_fast64_t late[TW_SERVICE_LATE_BUCKETS + 1];
    /* The callbacks by index (callbacks.c): filled once each, read by all. */
    _Alignas(TW__CACHE_LINE) _Atomic(tw_service_callback *) cbs[TW__CB_SLOTS];
};

/* registry.c: the slots a handle can name its service by. */
#define TW__SLOTS 65536u /* slot 0 is never given: "none" */

/* callbacks.c: slots a callback may take, from its first. */
#define TW__CB_PROBE 16

#endif /* TW_SERVICE_TYPES_H */
