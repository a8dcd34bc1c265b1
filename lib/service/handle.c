/*
 * Handles of the timer service: allocation, reference counts, the state
 * machine and cancel (see service.h for the states and the references).
 *
 * Cancel must give a definite answer from any thread while the worker, an
 * executor thread or stop may be moving the same handle on. Each of them
 * moves it only by compare-and-swap from the state it expects, so exactly
 * one wins: a cancel that wins PENDING -> CANCELLING, DISPATCHED ->
 * CANCELLED or (periodic) RUNNING -> CANCELLED returns 1 and no later run
 * can start; a cancel that finds any other state returns 0.
 *
 * Winning from PENDING means the timer may be sitting in the wheel, where
 * only the worker may unlink it. The canceller pushes the handle (with a
 * reference of its own) onto the cancel queue, asks the worker to reap it
 * within TW__REAP_NS, and only then stores CANCELLED. That is the only time
 * a canceller touches the service, and the service waits for CANCELLED
 * before it lets go of a handle, so a service that has been stopped can be
 * freed while its old handles are still cancelled and queried.
 */
#include <errno.h>
#include <sched.h>

#include "service.h"

struct tw_handle *tw__handle_new(struct tw_service *s, tw_service_callback *cb,
                                 void *arg, uint64_t deadline)
{
    struct tw_handle *h = tw__svc_zalloc(sizeof(*h));

    if (!h)
        return NULL;
    tw_timer_init(&h->timer, tw__worker_expire, h);
    h->svc = s;
    h->cb = cb;
    h->arg = arg;
    atomic_init(&h->deadline, deadline);
    atomic_init(&h->state, TW__PENDING);
    atomic_init(&h->refs, 1);
    return h;
}

void tw__handle_ref(struct tw_handle *h)
{
    atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
}

/* The release half makes this thread's writes to h visible to whoever frees
 * it; the acquire half makes the freeing thread see everyone's. */
void tw__handle_unref(struct tw_handle *h)
{
    if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1)
        tw_free(h, sizeof(*h));
}

bool tw__handle_move(struct tw_handle *h, int from, int to)
{
    return atomic_compare_exchange_strong_explicit(
        &h->state, &from, to, memory_order_acq_rel, memory_order_acquire);
}

/* Wait out a canceller between CANCELLING and CANCELLED (a few instructions
 * unless it was preempted there); returns the state then. */
int tw__handle_settle(struct tw_handle *h)
{
    int st;

    while ((st = atomic_load_explicit(&h->state, memory_order_acquire)) ==
           TW__CANCELLING)
        sched_yield();
    return st;
}

/* The service lets go of h: count the outcome, drop its reference. */
void tw__handle_drop(struct tw_service *s, struct tw_handle *h,
                     enum tw__outcome why)
{
    atomic_uint_fast64_t *counter = why == TW__OUT_COMPLETED   ? &s->completed
                                    : why == TW__OUT_CANCELLED ? &s->cancelled
                                                               : &s->returned;

    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->pending, 1, memory_order_relaxed);
    tw__handle_unref(h);
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/*
 * The next deadline of periodic h whose run just returned at now. Fixed
 * delay: now + period. Fixed rate: the next point of the grid last +
 * k * period; when that is already past, TW_CATCHUP_ALL keeps it (every
 * missed run happens, back to back) and TW_CATCHUP_SKIP jumps to the first
 * point after now.
 */
uint64_t tw__handle_next_deadline(const struct tw_service *s,
                                  struct tw_handle *h, uint64_t now)
{
    uint64_t last = atomic_load_explicit(&h->deadline, memory_order_relaxed);
    uint64_t next;

    if (h->kind == TW_FIXED_DELAY)
        return tw__add_sat(now, h->period);
    next = tw__add_sat(last, h->period);
    if (next > now || s->catchup == TW_CATCHUP_ALL)
        return next;
    return tw__add_sat(last, mul_sat((now - last) / h->period + 1, h->period));
}

/* The canceller's side of PENDING -> CANCELLING -> CANCELLED. */
static void cancel_pending(struct tw_handle *h)
{
    struct tw_service *s = h->svc;

    tw__handle_ref(h);
    tw__mpsc_push(&s->cancelq, &h->cnode);
    tw__worker_notify(s, tw__add_sat(tw__svc_clock(), TW__REAP_NS));
    atomic_store_explicit(&h->state, TW__CANCELLED, memory_order_release);
}

TW_PUBLIC int tw_handle_cancel(struct tw_handle *h)
{
    int st;

    if (!h)
        return -EINVAL;
    st = atomic_load_explicit(&h->state, memory_order_acquire);
    for (;;) {
        if (st == TW__PENDING) {
            if (tw__handle_move(h, st, TW__CANCELLING)) {
                cancel_pending(h);
                return 1;
            }
        } else if (st == TW__DISPATCHED || (st == TW__RUNNING && h->period)) {
            if (tw__handle_move(h, st, TW__CANCELLED))
                return 1;
        } else {
            return 0;
        }
        st = atomic_load_explicit(&h->state, memory_order_acquire);
    }
}

TW_PUBLIC enum tw_handle_state tw_handle_query(const struct tw_handle *h)
{
    if (!h)
        return TW_HANDLE_CANCELLED;
    switch (atomic_load_explicit(&h->state, memory_order_acquire)) {
    case TW__PENDING:
    case TW__DISPATCHED:
        return TW_HANDLE_PENDING;
    case TW__RUNNING:
        return TW_HANDLE_RUNNING;
    case TW__DONE:
        return TW_HANDLE_DONE;
    case TW__RETURNED:
        return TW_HANDLE_RETURNED;
    default:
        return TW_HANDLE_CANCELLED;
    }
}

TW_PUBLIC uint64_t tw_handle_deadline(const struct tw_handle *h)
{
    return h ? atomic_load_explicit(&h->deadline, memory_order_relaxed) : 0;
}

TW_PUBLIC void tw_handle_release(struct tw_handle *h)
{
    if (h)
        tw__handle_unref(h);
}
