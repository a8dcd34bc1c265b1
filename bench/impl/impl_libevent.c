/*
 * The "libevent" implementation: real libevent timer events (the Debian
 * package), one struct event per timer, assigned in one array.
 *
 * libevent reads CLOCK_MONOTONIC(_COARSE) itself, in every event_add() and in
 * its loop; every call into it is bracketed with clock_virtual_enter() and
 * leave(), so it sees the virtual time (see clock.h). A deadline becomes a
 * relative timeval from the virtual now, rounded up to the microsecond.
 * advance() is event_base_loop(EVLOOP_NONBLOCK): it polls with a zero
 * timeout (libevent always makes the epoll_wait system call, even with no
 * descriptor), moves the due events from its min-heap to the active queue
 * and runs them. libevent cannot stop part-way through the due timers.
 */
#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "impl.h"

struct ev_ctx {
    struct event_base *base;
    char *ev; /* the n events, one array of evsize-byte slots */
    size_t evsize;
    uint32_t n;
    uint64_t now; /* virtual time of the last advance */
    uint64_t fired;
};

static struct event *ev_at(struct ev_ctx *c, uint32_t i)
{
    return (struct event *)(void *)(c->ev + (size_t)i * c->evsize);
}

/* The callback: timers only count themselves. */
static void on_fire(evutil_socket_t fd, short what, void *arg)
{
    struct ev_ctx *c = arg;

    (void)fd;
    (void)what;
    c->fired++;
}

static void *evb_create(uint32_t n, char *why, size_t len)
{
    struct ev_ctx *c = calloc(1, sizeof(*c));

    clock_virtual_set(0);
    clock_virtual_enter();
    if (c) {
        /* The library's own size, in case it differs from the header's. */
        c->evsize = event_get_struct_event_size();
        c->ev = malloc((n ? n : 1) * c->evsize);
        c->base = c->ev ? event_base_new() : NULL;
    }
    if (!c || !c->base) {
        clock_virtual_leave();
        snprintf(why, len, "event_base_new failed");
        if (c)
            free(c->ev);
        free(c);
        return NULL;
    }
    c->n = n;
    for (uint32_t i = 0; i < n; i++)
        event_assign(ev_at(c, i), c->base, -1, 0, on_fire, c);
    clock_virtual_leave();
    return c;
}

static void evb_destroy(void *ctx)
{
    struct ev_ctx *c = ctx;

    clock_virtual_enter();
    for (uint32_t i = 0; i < c->n; i++)
        event_del(ev_at(c, i));
    event_base_free(c->base);
    clock_virtual_leave();
    free(c->ev);
    free(c);
}

/* event_add() with the deadline as a timeout from the virtual now. */
static void evb_schedule(void *ctx, uint32_t i, uint64_t deadline)
{
    struct ev_ctx *c = ctx;
    uint64_t us = deadline > c->now ? (deadline - c->now + 999) / 1000 : 0;
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
                         .tv_usec = (suseconds_t)(us % 1000000)};

    clock_virtual_enter();
    event_add(ev_at(c, i), &tv);
    clock_virtual_leave();
}

static void evb_cancel(void *ctx, uint32_t i)
{
    struct ev_ctx *c = ctx;

    clock_virtual_enter();
    event_del(ev_at(c, i));
    clock_virtual_leave();
}

/* event_add() on a pending event moves it in the heap: libevent's re-arm. */
static void evb_rearm(void *ctx, uint32_t i, uint64_t deadline)
{
    evb_schedule(ctx, i, deadline);
}

static uint64_t evb_advance(void *ctx, uint64_t now, uint64_t max_run)
{
    struct ev_ctx *c = ctx;
    uint64_t before = c->fired;

    (void)max_run;
    c->now = now;
    clock_virtual_set(now);
    clock_virtual_enter();
    event_base_loop(c->base, EVLOOP_NONBLOCK);
    clock_virtual_leave();
    return c->fired - before;
}

static const char *lev_version(void)
{
    static char v[48];

    snprintf(v, sizeof(v), "%s (Debian)", event_get_version());
    return v;
}

const struct impl impl_libevent = {
    .name = "libevent",
    .about = "libevent event_add/event_del of timer events on one base, "
             "fired by event_base_loop(EVLOOP_NONBLOCK) (array min-heap)",
    .node_size = sizeof(struct event),
    .bounded = false,
    .create = evb_create,
    .destroy = evb_destroy,
    .schedule = evb_schedule,
    .cancel = evb_cancel,
    .rearm = evb_rearm,
    .advance = evb_advance,
    .next_deadline = NULL, /* libevent 2.1 has no call that tells */
    .version = lev_version,
};
