/*
 * The threaded timer service: its design, and the one header its files
 * include. Never installed, nor any header of this folder.
 *
 *   service.h          this: the index, the design (threads, the state
 *                      machine, custody, references, lifetime); includes
 *                      the three below
 *   service_types.h    the layout: the handle, its state word, the stripes,
 *                      the service object, the constants (no functions)
 *   service_externs.h  the cross-file interface: what each .c defines for
 *                      the others, grouped by that file
 *   service_inlines.h  the inline fast paths of schedule, cancel and
 *                      re-arm, grouped by the .c that owns the rest
 *   service.c   create, schedule, stop, destroy, stats
 *   handle.c    handles: reference counts and the state machine, the only
 *               file that changes a handle's word: cancel (and its fast
 *               twin for tw_handle_cancel_release()), re-arm, and the
 *               moves the service's threads ask for (claim a due timer,
 *               run it and finish it, what a message means, hand-back):
 *               they act on its answer with the wheel and queues they own
 *   worker.c    the worker thread: admit, reap, advance, sleep; the wheel
 *   wake.c      waking the worker (kick, and the look at its sleep)
 *   thread.c    what the calling thread is to the services (a service's
 *               own thread; the callback it runs)
 *   backlog.c   how many cancelled handles may wait for the worker's reap:
 *               a bound tied to the pending timers, kept by cancellers
 *   executor.c  the executor pool
 *   gate.c      what producers pass through: stop's gate, back-pressure,
 *               the striped counters and tw_service_stats() (the paths
 *               every schedule and cancel takes are its group in
 *               service_inlines.h, as is the worker's post of a new
 *               handle in worker.c's)
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
 * (timewheel/core.h), memory included: tw_alloc() and tw_free(), and the
 * layers' shared toolbox (lib/common/: sat.h).
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
 * in between. Every move is made in handle.c: the worker, the executor and
 * stop ask it (tw__handle_claim(), tw__handle_run(), tw__handle_take_message(),
 * tw__handle_claim_return()) and do with the wheel or their queues what the
 * answer says, so the machine below is read in one file:
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
 * if the handle is in the wheel (its custody). A handle cancelled while in
 * the wheel needs no swap: only the worker, its holder, could set
 * TW__ORPHAN, and no one moves a CANCELLED word, so the worker clears
 * TW__CQ with a plain store and lets go of it at once (handle.c,
 * tw__handle_take_message()).
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

#include "service_externs.h" /* what each file defines for the others */
#include "service_inlines.h" /* the fast paths, inline */
#include "service_types.h"   /* the layout: every struct, state, constant */

#endif /* TW_SERVICE_H */
