/*
 * The "libev" implementation: real libev timers (the Debian package), one
 * ev_timer per timer on one loop (ev_loop_new with the epoll backend).
 *
 * libev keeps its timers in a 4-ary heap of (deadline, watcher) pairs and
 * measures relative timers from the loop's cached monotonic time, which it
 * reads with clock_gettime() only when the loop runs (ev_run, ev_now_update).
 * Those calls are bracketed with clock_virtual_enter()/leave(), so the
 * cached time is the virtual time of the last advance (see clock.h), which
 * this file also keeps as now. A deadline becomes `after` seconds from that
 * time, less half a tick: libev fires a timer once its deadline is strictly
 * before the loop's time, so the half tick makes it fire at the advance that
 * reaches its due tick, the same tick the wheels compute, and never earlier.
 *
 * Re-arm is libev's idiom for idle timeouts: set the watcher's repeat to the
 * new delay and call ev_timer_again(), which moves a pending timer in place
 * in the heap (or starts one that is not pending). A timer re-armed this way
 * repeats, so its callback stops it: it fires once, like the others.
 * advance() is ev_run(EVRUN_NOWAIT): it updates the cached time, polls epoll
 * without waiting (one system call), and runs every due timer; libev cannot
 * bound the number of callbacks of one run. libev offers no call for the
 * loop's next deadline, so next_deadline is NULL.
 */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "impl.h"

struct lev_ctx {
    struct ev_loop *loop;
    ev_timer *t; /* the n timers, one array */
    uint32_t n;
    uint64_t now; /* virtual time of the last advance: the loop's time */
    uint64_t fired;
};

/* The callback: timers only count themselves; a re-armed (repeating) timer
 * is stopped so that it fires once. */
static void on_fire(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct lev_ctx *c = ev_userdata(loop);

    (void)revents;
    if (w->repeat > 0)
        ev_timer_stop(loop, w);
    c->fired++;
}

static void *lev_create(uint32_t n, char *why, size_t len)
{
    struct lev_ctx *c = calloc(1, sizeof(*c));

    clock_virtual_set(0);
    clock_virtual_enter();
    if (c)
        c->t = malloc((n ? n : 1) * sizeof(*c->t));
    if (c && c->t)
        c->loop = ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV);
    clock_virtual_leave();
    if (!c || !c->t || !c->loop) {
        snprintf(why, len, "%s",
                 c && c->t ? "ev_loop_new failed" : "out of memory");
        if (c)
            free(c->t);
        free(c);
        return NULL;
    }
    ev_set_userdata(c->loop, c);
    c->n = n;
    for (uint32_t i = 0; i < n; i++)
        ev_timer_init(&c->t[i], on_fire, 0., 0.);
    return c;
}

static void lev_destroy(void *ctx)
{
    struct lev_ctx *c = ctx;

    for (uint32_t i = 0; i < c->n; i++)
        ev_timer_stop(c->loop, &c->t[i]);
    clock_virtual_enter();
    ev_loop_destroy(c->loop);
    clock_virtual_leave();
    free(c->t);
    free(c);
}

/* libev's delay for deadline: seconds from the loop's time to the due tick,
 * less half a tick (negative when already due: fires at the next run). */
static double after_s(const struct lev_ctx *c, uint64_t deadline)
{
    double due = (double)(due_tick(deadline) * BENCH_TICK_NS);

    return (due - (double)c->now - (double)(BENCH_TICK_NS / 2)) / 1e9;
}

static void lev_schedule(void *ctx, uint32_t i, uint64_t deadline)
{
    struct lev_ctx *c = ctx;

    ev_timer_set(&c->t[i], after_s(c, deadline), 0.);
    ev_timer_start(c->loop, &c->t[i]);
}

static void lev_cancel(void *ctx, uint32_t i)
{
    struct lev_ctx *c = ctx;

    ev_timer_stop(c->loop, &c->t[i]);
}

/* ev_timer_again() with the new delay as repeat; a delay that is not
 * positive (already due) would make it stop the timer, so that one is
 * stopped and started instead. */
static void lev_rearm(void *ctx, uint32_t i, uint64_t deadline)
{
    struct lev_ctx *c = ctx;
    double after = after_s(c, deadline);

    if (after > 0) {
        c->t[i].repeat = after;
        ev_timer_again(c->loop, &c->t[i]);
        return;
    }
    ev_timer_stop(c->loop, &c->t[i]);
    lev_schedule(ctx, i, deadline);
}

static uint64_t lev_advance(void *ctx, uint64_t now, uint64_t max_run)
{
    struct lev_ctx *c = ctx;
    uint64_t before = c->fired;

    (void)max_run;
    c->now = now;
    clock_virtual_set(now);
    clock_virtual_enter();
    ev_run(c->loop, EVRUN_NOWAIT);
    clock_virtual_leave();
    return c->fired - before;
}

static const char *lev_version(void)
{
    static char v[48];

    snprintf(v, sizeof(v), "%d.%d (Debian)", ev_version_major(),
             ev_version_minor());
    return v;
}

const struct impl impl_libev = {
    .name = "libev",
    .about = "libev ev_timer_start/ev_timer_stop, re-arm by ev_timer_again, "
             "fired by ev_run(EVRUN_NOWAIT) (4-ary heap, cached time)",
    .node_size = sizeof(ev_timer),
    .bounded = false,
    .create = lev_create,
    .destroy = lev_destroy,
    .schedule = lev_schedule,
    .cancel = lev_cancel,
    .rearm = lev_rearm,
    .advance = lev_advance,
    .next_deadline = NULL,
    .version = lev_version,
    .scale = true,
};
