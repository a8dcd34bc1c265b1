/*
 * The timeout of a watch: over either timer layer, through its public API,
 * or over a timer of the caller's (struct tw_purgatory_timer), which arms
 * and disarms through the caller's functions and expires through
 * tw_purgatory_expire(), on the one thread that uses the purgatory.
 *
 * Over a core wheel the record embeds a struct tw_timer: arming is
 * tw_schedule() at the loop's clock reading (cfg.now, read here, held at
 * no earlier than tw_now()) plus the timeout, cancelling tw_cancel(), and
 * the expiry runs inside the caller's tw_advance(), on the one thread that
 * uses the purgatory. Not tw_schedule_after(): that counts from the
 * wheel's last advance, which in a loop that handles I/O before it
 * advances is the time before the loop slept (the loop layer's
 * tw_loop_schedule_after() takes a reading for the same reason).
 *
 * Over a service the record keeps the handle that tw_service_submit()
 * returns. The timer callback may run on the worker or an executor thread
 * at any moment after arming, even before the handle is stored, so it
 * reaches the record through a reference of its own and never through the
 * handle. It claims a WATCHING record (and then expires it on its own
 * thread), notes EXPIRE on an owned one (the owner expires it), and leaves
 * a DONE one alone. The timer's reference is dropped by the service's
 * release function, which the service calls exactly once when it lets go
 * of the timer for good (after the callback returned, once a cancelled
 * timer is out of its structures, or at its stop), so the claimer only
 * cancels and releases its handle and never has to know whether the
 * callback is running.
 */
#include <errno.h>
#include <time.h>

#include "purgatory.h"
#include "sat.h"

uint64_t tw_purgatory_monotonic(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0 || ts.tv_sec < 0)
        return 0; /* cannot happen on Linux; 0 counts from tw_now() */
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* A WATCHING record is claimed; an owned one is left a note. Returns
 * whether this call claimed it. */
static bool expire_or_note(struct tw__pwatch *w)
{
    unsigned s = atomic_load(&w->state);

    for (;;) {
        if (s & TW__P_DONE)
            return false;
        if (s == 0) {
            if (tw__p_cas(w, &s, TW__P_DONE))
                return true;
            continue;
        }
        if (tw__p_cas(w, &s, s | TW__P_EXPIRE))
            return false;
    }
}

static void expire(struct tw__pwatch *w)
{
    w->outcome = TW_DELAYED_EXPIRED;
    tw__p_detach(w);
    tw__p_deliver(w, NULL, NULL);
}

static void on_core_timer(struct tw_timer *t, void *arg)
{
    struct tw__pwatch *w = arg;

    (void)t;
    if (expire_or_note(w))
        expire(w);
}

static void on_service_timer(struct tw_handle *h, void *arg)
{
    struct tw__pwatch *w = arg;

    (void)h;
    if (expire_or_note(w))
        expire(w);
}

/* The service lets go of the timer: drop its reference. */
static void on_service_release(void *arg)
{
    tw__p_put(arg);
}

int tw__p_arm(struct tw__pwatch *w, uint64_t timeout_ns)
{
    struct tw_purgatory *p = w->p;
    struct tw_timer_spec spec = {
        .cb = on_service_timer, .arg = w, .release = on_service_release};
    int rc;

    if (p->wheel) {
        uint64_t now = p->now(p->now_ctx), wheel_now = tw_now(p->wheel);

        tw_timer_init(&w->to.timer, on_core_timer, w);
        return tw_schedule(
            p->wheel, &w->to.timer,
            tw__add_sat(now > wheel_now ? now : wheel_now, timeout_ns));
    }
    if (p->timer.arm)
        return p->timer.arm(p->timer.ctx, w->op, timeout_ns);
    spec.deadline = tw__add_sat(tw_service_now(p->svc), timeout_ns);
    atomic_fetch_add(&w->refs, 1); /* the timer's */
    rc = tw_service_submit(p->svc, &spec, &w->to.handle);
    if (rc < 0)
        atomic_fetch_sub(&w->refs, 1);
    return rc;
}

void tw__p_disarm(struct tw__pwatch *w)
{
    if (w->p->wheel) {
        tw_cancel(w->p->wheel, &w->to.timer);
        return;
    }
    if (w->p->timer.arm) {
        w->p->timer.disarm(w->p->timer.ctx, w->op);
        return;
    }
    tw_handle_cancel(w->to.handle);
    tw_handle_release(w->to.handle);
}

int tw_purgatory_expire(struct tw_purgatory *p, struct tw_delayed *op)
{
    struct tw__pwatch *w;

    if (!p || !op || !p->timer.arm)
        return -EINVAL;
    if (tw__p_in_try(p))
        return -EDEADLK;
    w = op->watch;
    if (tw_delayed_state(op) != TW_DELAYED_WATCHED || !w || w->p != p)
        return 0;
    if (!expire_or_note(w))
        return 0;
    expire(w);
    return 1;
}
