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
 * Over a service the record's struct tw_timer goes into the core wheel
 * of its first key's shard, at the service's clock plus the timeout, under
 * that shard's lock, and the purgatory's one service timer is made to fire
 * by then (ticker.c). Its callback advances the wheels on the worker (or
 * an executor thread): a fired timeout claims a WATCHING record (expired
 * on that thread), notes EXPIRE on an owned one (the owner expires it),
 * and leaves a DONE one alone. The claimer cancels the timeout under the
 * same lock, so a record is never in a wheel once it can be freed.
 */
#include <errno.h>

#include "clockns.h"
#include "purgatory.h"
#include "sat.h"

uint64_t tw_purgatory_monotonic(void *ctx)
{
    (void)ctx;
    return tw__mono_ns();
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
    if (tw__p_take_or_note(w, TW__P_DONE, TW__P_EXPIRE))
        expire(w);
}

/* Over a service, into the wheel that keeps the timeouts of sh, the
 * shard of w's first key (locked; the wheel's own shard is locked too if
 * it is another). An empty wheel is first brought to now (it runs
 * nothing), so that it never walks a long idle gap when the tick next
 * advances it. The schedule cannot fail: the timer is new and the wheel
 * has an expiry function. */
uint64_t tw__p_arm_shard(struct tw__pwatch *w, struct tw__pshard *sh,
                         uint64_t timeout_ns)
{
    struct tw__pshard *wsh = tw__p_wheel_shard(w->p, sh);
    uint64_t now = tw_service_now(w->p->svc);
    uint64_t d = tw__add_sat(now, timeout_ns);

    tw_timer_init(&w->timer, NULL, w);
    if (wsh != sh)
        tw__p_lock(wsh);
    if (tw_pending(wsh->timeouts) == 0 && now > tw_now(wsh->timeouts))
        tw_advance(wsh->timeouts, now);
    tw_schedule(wsh->timeouts, &w->timer, d);
    if (wsh != sh)
        tw__p_unlock(wsh);
    return d;
}

void tw__p_disarm_shard(struct tw__pwatch *w, struct tw__pshard *sh)
{
    struct tw__pshard *wsh = tw__p_wheel_shard(w->p, sh);

    if (wsh != sh)
        tw__p_lock(wsh);
    tw_cancel(wsh->timeouts, &w->timer);
    if (wsh != sh)
        tw__p_unlock(wsh);
}

int tw__p_arm(struct tw__pwatch *w, uint64_t timeout_ns)
{
    struct tw_purgatory *p = w->p;

    if (p->wheel) {
        uint64_t now = p->now(p->now_ctx), wheel_now = tw_now(p->wheel);

        tw_timer_init(&w->timer, on_core_timer, w);
        return tw_schedule(
            p->wheel, &w->timer,
            tw__add_sat(now > wheel_now ? now : wheel_now, timeout_ns));
    }
    return p->timer.arm(p->timer.ctx, w->op, timeout_ns);
}

void tw__p_disarm(struct tw__pwatch *w)
{
    if (w->p->wheel)
        tw_cancel(w->p->wheel, &w->timer);
    else
        w->p->timer.disarm(w->p->timer.ctx, w->op);
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
    if (!tw__p_take_or_note(w, TW__P_DONE, TW__P_EXPIRE))
        return 0;
    expire(w);
    return 1;
}
