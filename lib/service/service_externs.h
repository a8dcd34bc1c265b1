/*
 * The service's cross-file interface: the functions and variables one of
 * its files defines for the others, grouped by the file that owns them
 * (each group named after it), with the contract of each beside its
 * definition. Never installed.
 *
 * Only what is out of line is here; the inline halves of gate.c, worker.c,
 * handle.c, ring.c, registry.c and callbacks.c (the paths every schedule
 * and cancel takes) are in service_inlines.h, grouped the same way. The
 * producers' clock (clock.c) has its own header, clock.h.
 */
#ifndef TW_SERVICE_EXTERNS_H
#define TW_SERVICE_EXTERNS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service_types.h"

/* thread.c: what the calling thread is to the services */
/* The service whose thread (worker, executor, or stop's visitor) this is. */
extern _Thread_local const struct tw_service *tw__svc_current;
/* The handle whose callback this thread is running, if any. */
extern _Thread_local const struct tw_handle *tw__running;

/* wake.c: waking the worker (the inline halves are in service_inlines.h) */
void tw__wake_kick(struct tw_service *s);
void tw__wake_notify(struct tw_service *s, uint64_t due);

/* handle.c */
struct tw_handle *tw__handle_new(struct tw_service *s,
                                 const struct tw_timer_spec *spec);
void tw__handle_ref_unpublished(struct tw_handle *h);
void tw__handle_unref(struct tw_handle *h);
void tw__handle_let_go(struct tw_handle *h);
uint32_t tw__handle_settle(struct tw_handle *h);
/* The moves of the service's own threads: they ask, and act on the
 * answer (handle.c is the only file that changes a handle's word). */
bool tw__handle_waiting(struct tw_handle *h);
enum tw__msg tw__handle_take_message(struct tw_handle *h, bool in_wheel);
void tw__handle_unlinked(struct tw_handle *h);
enum tw__claim tw__handle_claim(struct tw_handle *h, bool exec,
                                uint64_t wheel_deadline, bool stopping);
enum tw__claim tw__handle_claim_dispatched(struct tw_handle *h);
bool tw__handle_claim_return(struct tw_handle *h);
bool tw__handle_run(struct tw_service *s, struct tw_handle *h);
void tw__handle_drop(struct tw_service *s, struct tw_handle *h,
                     enum tw__outcome why);
void tw__handle_wake(struct tw_handle *h, uint32_t w);

/* wait.c */
void tw__futex_wait(_Atomic uint32_t *word, uint32_t val);
void tw__futex_wake(_Atomic uint32_t *word);

/* registry.c: the live services by slot, so that a handle names its
 * service in 16 bits of its refs word instead of an 8-byte pointer. */
extern _Atomic(struct tw_service *) tw__registry[TW__SLOTS];
int tw__registry_add(struct tw_service *s);
void tw__registry_remove(struct tw_service *s);
/* fork's child handler: mark every live service forked (fork.c). */
void tw__registry_forked(void);
/* The slots a child of fork() inherited (their handles answer -ECHILD). */
extern atomic_bool tw__registry_stale[TW__SLOTS];

/* fork.c: install the child handler, once (at the first create). */
void tw__fork_watch(void);

/* worker.c */
void *tw__worker_main(void *arg);
void tw__worker_expire(struct tw_timer *t, void *ctx);
void tw__worker_reap(struct tw_service *s, bool wait);
bool tw__worker_admit(struct tw_service *s, size_t max, bool wait);

/* backlog.c */
/* Worker: publish the bound of each ring's unreaped messages. */
void tw__backlog_publish(struct tw_service *s, uint64_t now);
/* Canceller, its message ring's block full: wake the worker, or give it
 * the processor, if the ring's backlog is past the bound. */
void tw__backlog_check(struct tw_service *s, struct tw__rings *r);
/* Producer, its new-timer ring's block full, before it pushes: the same
 * for the timers it cancelled before the worker admitted them. */
void tw__backlog_schedule(struct tw_service *s, struct tw__rings *r);
/* Producer without a ring: after each message onto cancelq; and before a
 * push onto newq, once its pushes since it last looked (tw__q_pushed)
 * reach TW__QUEUE_LOOK. */
void tw__backlog_sent_queue(void);
void tw__backlog_schedule_queue(struct tw_service *s);
extern _Thread_local unsigned tw__q_pushed;
/* Worker, after a reap or an admission that took something: wake the
 * cancellers waiting. */
void tw__backlog_reaped(struct tw_service *s);

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
/* This thread's stripe index + 1 (gate.c); 0: not claimed yet. */
extern _Thread_local unsigned tw__my_stripe;

/* ring.c */
struct tw__rings *tw__rings_make(struct tw_service *s);
struct tw__rings *tw__rings_at(struct tw_service *s, unsigned i);
uint64_t tw__rings_made(struct tw_service *s);
bool tw__rings_fresh_empty(struct tw_service *s);
bool tw__rings_msgs_empty(struct tw_service *s);
void tw__rings_free(struct tw_service *s);

/* callbacks.c: the index of cb in s's table when it is not at its first
 * slot (tw__cb_index() tries that one inline); 0 if the table has no room
 * for it. */
unsigned tw__cb_index_slow(struct tw_service *s, tw_service_callback *cb);

/* executor.c */
int tw__exec_start(struct tw_service *s, unsigned n);
void tw__exec_submit(struct tw__exec *x, struct tw__hlist *batch);
void tw__exec_stop(struct tw__exec *x);
void tw__exec_destroy(struct tw__exec *x);

#endif /* TW_SERVICE_EXTERNS_H */
