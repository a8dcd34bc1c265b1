/*
 * What a producer passes through on its way into the service, and what it
 * counts: stop's gate, back-pressure, and the counters behind
 * tw_service_stats().
 *
 * Stripes. Each thread is given one of TW__STRIPES cache lines of the
 * service (round-robin at its first schedule on any service), and writes
 * only that line on the schedule path: two producers on different stripes
 * never bounce a line between their cores. A stripe holds the number of
 * schedule calls inside the gate, the timers it accepted and refused, and
 * its unused credit of pending slots.
 *
 * The gate. A schedule adds one to its stripe's `inside` and then looks at
 * `closed`; stop sets `closed` and then waits until every stripe's `inside`
 * is 0. Both sides store then load, sequentially consistent, so either the
 * schedule sees `closed` and refuses with -ESHUTDOWN, or stop waits for it
 * to leave, with its timer queued before stop drains the queue.
 *
 * Back-pressure, two bounds, both answered with -EAGAIN:
 *  - max_pending (default TW_SERVICE_DEFAULT_MAX_PENDING): slots are taken
 *    from a shared pool `avail` TW__CREDIT_CHUNK at a time into the
 *    stripe's credit, and given back one by one as the service lets go of
 *    timers. The service never holds more than max_pending timers; a
 *    schedule may be refused while up to TW__STRIPES * TW__CREDIT_CHUNK
 *    slots sit unused in other stripes' credit.
 *  - max_lag (default TW_SERVICE_DEFAULT_MAX_LAG_NS): the worker sets
 *    `behind` when it has not emptied the new-timer queue for longer than
 *    that, and clears it once it has; producers are refused meanwhile, so
 *    a flood cannot make the queue, and the lateness of what waits in it,
 *    grow without bound.
 *
 * Stats. Each outcome counter is added to (with release) only after the
 * `accepted` increment of its timer (which happened before the push that
 * handed the timer, or its handle, to anyone): completed and returned when
 * the service lets go of the timer, cancelled on the canceller's stripe
 * when its cancel wins. Stats reads the outcome counters first (acquire) and `accepted`
 * last, so it sees every acceptance behind the outcomes it counted, and
 * pending = scheduled - completed - cancelled - returned is never
 * negative: the identity holds in every snapshot, under any load.
 */
#include <errno.h>
#include <sched.h>

#include "service.h"

static atomic_uint next_stripe;
static _Thread_local unsigned my_stripe; /* index + 1; 0: not yet given */

static struct tw__stripe *stripe_of(struct tw_service *s)
{
    if (!my_stripe)
        my_stripe = atomic_fetch_add_explicit(&next_stripe, 1,
                                              memory_order_relaxed) %
                        TW__STRIPES +
                    1;
    return &s->stripes[my_stripe - 1];
}

struct tw__stripe *tw__gate_enter(struct tw_service *s, int *rc)
{
    struct tw__stripe *st = stripe_of(s);

    atomic_fetch_add_explicit(&st->inside, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&s->closed, memory_order_seq_cst)) {
        tw__gate_leave(st);
        *rc = -ESHUTDOWN;
        return NULL;
    }
    *rc = 0;
    return st;
}

void tw__gate_leave(struct tw__stripe *st)
{
    atomic_fetch_sub_explicit(&st->inside, 1, memory_order_release);
}

/* Close the gate and wait for the schedule calls inside to leave. */
void tw__gate_close(struct tw_service *s)
{
    atomic_store_explicit(&s->closed, true, memory_order_seq_cst);
    for (unsigned i = 0; i < TW__STRIPES; i++)
        while (atomic_load_explicit(&s->stripes[i].inside,
                                    memory_order_acquire))
            sched_yield();
}

static int refuse(struct tw__stripe *st)
{
    atomic_fetch_add_explicit(&st->rejected, 1, memory_order_relaxed);
    return -EAGAIN;
}

/* Take one pending slot for a timer about to be accepted, or -EAGAIN. */
int tw__gate_reserve(struct tw_service *s, struct tw__stripe *st)
{
    int_fast64_t a;

    if (atomic_load_explicit(&s->behind, memory_order_relaxed))
        return refuse(st);
    if (!s->max_pending ||
        atomic_fetch_sub_explicit(&st->credit, 1, memory_order_relaxed) > 0)
        return 0;
    atomic_fetch_add_explicit(&st->credit, 1, memory_order_relaxed);
    a = atomic_load_explicit(&s->avail, memory_order_relaxed);
    do {
        if (a <= 0)
            return refuse(st);
    } while (!atomic_compare_exchange_weak_explicit(
        &s->avail, &a, a - (a < TW__CREDIT_CHUNK ? a : TW__CREDIT_CHUNK),
        memory_order_relaxed, memory_order_relaxed));
    atomic_fetch_add_explicit(
        &st->credit, (a < TW__CREDIT_CHUNK ? a : TW__CREDIT_CHUNK) - 1,
        memory_order_relaxed);
    return 0;
}

/* Give back a slot that tw__gate_reserve() took (the schedule failed). */
void tw__gate_unreserve(struct tw_service *s, struct tw__stripe *st)
{
    if (s->max_pending)
        atomic_fetch_add_explicit(&st->credit, 1, memory_order_relaxed);
}

/* A cancel won: count it on the canceller's stripe and give its pending
 * slot back there, at once, so that stats and max_pending see it as soon as
 * tw_handle_cancel() has returned 1 (the worker frees the handle within
 * TW__REAP_NS). A stripe that gathers more than two chunks of credit (a
 * thread that cancels more than it schedules) returns one to the pool. */
void tw__gate_count_cancel(struct tw_service *s)
{
    struct tw__stripe *st = stripe_of(s);
    int_fast64_t c;

    atomic_fetch_add_explicit(&st->cancelled, 1, memory_order_release);
    if (!s->max_pending)
        return;
    c = atomic_fetch_add_explicit(&st->credit, 1, memory_order_relaxed) + 1;
    while (c >= 2 * TW__CREDIT_CHUNK)
        if (atomic_compare_exchange_weak_explicit(
                &st->credit, &c, c - TW__CREDIT_CHUNK, memory_order_relaxed,
                memory_order_relaxed)) {
            atomic_fetch_add_explicit(&s->avail, TW__CREDIT_CHUNK,
                                      memory_order_relaxed);
            return;
        }
}

/* The service let go of a timer: its slot goes back to the pool. */
void tw__gate_let_go(struct tw_service *s)
{
    if (s->max_pending)
        atomic_fetch_add_explicit(&s->avail, 1, memory_order_relaxed);
}

static uint64_t get(atomic_uint_fast64_t *c)
{
    return atomic_load_explicit(c, memory_order_acquire);
}

TW_PUBLIC int tw_service_stats(struct tw_service *s,
                               struct tw_service_stats *out)
{
    uint64_t done;

    if (!s || !out)
        return -EINVAL;
    out->cancelled = 0;
    for (unsigned i = 0; i < TW__STRIPES; i++)
        out->cancelled += get(&s->stripes[i].cancelled);
    out->completed = get(&s->completed);
    out->returned = get(&s->returned);
    out->runs = get(&s->runs);
    out->wakeups = get(&s->wakeups);
    out->scheduled = out->rejected = 0;
    for (unsigned i = 0; i < TW__STRIPES; i++) {
        out->scheduled += get(&s->stripes[i].accepted);
        out->rejected +=
            atomic_load_explicit(&s->stripes[i].rejected, memory_order_relaxed);
    }
    done = out->completed + out->cancelled + out->returned;
    out->pending = out->scheduled - done;
    return 0;
}
