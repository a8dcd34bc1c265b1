/*
 * The timeout of a watch, over either timer layer, through its public API.
 *
 * Over a core wheel the record embeds a struct tw_timer: arming is
 * tw_schedule_after(), cancelling tw_cancel(), and the expiry runs inside
 * the caller's tw_advance(), on the one thread that uses the purgatory.
 *
 * Over a service the record keeps the handle that tw_service_schedule()
 * returns. The timer callback may run on the worker or an executor thread
 * at any moment after arming, even before the handle is stored, so it
 * reaches the record through its own reference and never through the
 * handle. It claims a WATCHING record (and then expires it on its own
 * thread), notes EXPIRE on an owned one (the owner expires it), and leaves
 * a DONE one alone; then it drops its reference. The claimer disarms: a
 * cancel that wins (1) means the callback will never run, so the claimer
 * drops the callback's reference; a timer that the service has handed back
 * by its stop will not run either. Otherwise the callback runs, or has run,
 * and drops its own.
 */
#include "purgatory.h"

/* A WATCHING record is claimed; an owned one is left a note. Returns
 * whether this call claimed it. */
static bool expire_or_note(struct tw__pwatch *w)
{
    unsigned s = atomic_load(&w->state);

    for (;;) {
        if (s & TW__P_DONE)
            return false;
        if (s == 0) {
            if (atomic_compare_exchange_weak(&w->state, &s, TW__P_DONE))
                return true;
            continue;
        }
        if (atomic_compare_exchange_weak(&w->state, &s, s | TW__P_EXPIRE))
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
    /* Our reference keeps the record alive through expire()'s put. */
    if (expire_or_note(w))
        expire(w);
    tw__p_put(w);
}

int tw__p_arm(struct tw__pwatch *w, uint64_t timeout_ns)
{
    struct tw_purgatory *p = w->p;
    int rc;

    if (p->wheel) {
        tw_timer_init(&w->to.timer, on_core_timer, w);
        return tw_schedule_after(p->wheel, &w->to.timer, timeout_ns);
    }
    atomic_fetch_add(&w->refs, 1); /* the callback's */
    rc = tw_service_schedule(p->svc, timeout_ns, on_service_timer, w,
                             &w->to.handle);
    if (rc < 0)
        atomic_fetch_sub(&w->refs, 1);
    return rc;
}

void tw__p_disarm(struct tw__pwatch *w)
{
    struct tw_handle *h;

    if (w->p->wheel) {
        tw_cancel(w->p->wheel, &w->to.timer);
        return;
    }
    h = w->to.handle;
    if (tw_handle_cancel(h) == 1 || tw_handle_query(h) == TW_HANDLE_RETURNED)
        atomic_fetch_sub(&w->refs, 1); /* the callback's: it never runs */
    tw_handle_release(h);
}
