/*
 * The "libuv" implementation: real libuv timers (the Debian package), one
 * uv_timer_t per timer on one loop.
 *
 * libuv reads CLOCK_MONOTONIC itself; every call into it is bracketed with
 * clock_virtual_enter()/leave(), so its loop time is the virtual time (see
 * clock.h) and it runs the same sequence as the others. A deadline becomes a
 * timeout in whole ms from the loop's time (uv_now), so libuv's key is the
 * same due tick the wheels compute. advance() is uv_run(UV_RUN_NOWAIT): it
 * updates the loop time, runs every due timer, and polls for I/O without
 * waiting (one epoll_wait system call, even with no descriptor watched).
 * libuv cannot bound the number of callbacks of one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include "clock.h"
#include "impl.h"

struct uv_ctx {
    uv_loop_t loop;
    uv_timer_t *t; /* the n timers, one array */
    uint32_t n;
    uint64_t fired;
};

/* The callback: timers only count themselves. */
static void on_fire(uv_timer_t *t)
{
    struct uv_ctx *c = t->loop->data;

    c->fired++;
}

static void *uvb_create(uint32_t n, char *why, size_t len)
{
    struct uv_ctx *c = calloc(1, sizeof(*c));
    int rc = UV_ENOMEM;

    clock_virtual_set(0);
    clock_virtual_enter();
    if (c)
        c->t = malloc((n ? n : 1) * sizeof(*c->t));
    if (c && c->t)
        rc = uv_loop_init(&c->loop);
    if (rc) {
        clock_virtual_leave();
        snprintf(why, len, "uv_loop_init: %s", uv_strerror(rc));
        if (c)
            free(c->t);
        free(c);
        return NULL;
    }
    c->loop.data = c;
    c->n = n;
    for (uint32_t i = 0; i < n; i++)
        uv_timer_init(&c->loop, &c->t[i]);
    clock_virtual_leave();
    return c;
}

static void uvb_destroy(void *ctx)
{
    struct uv_ctx *c = ctx;

    clock_virtual_enter();
    for (uint32_t i = 0; i < c->n; i++)
        uv_close((uv_handle_t *)&c->t[i], NULL);
    uv_run(&c->loop, UV_RUN_DEFAULT); /* runs the closes */
    uv_loop_close(&c->loop);
    clock_virtual_leave();
    free(c->t);
    free(c);
}

/* libuv's timeout for deadline: whole ms from the loop's time. */
static uint64_t timeout_ms(struct uv_ctx *c, uint64_t deadline)
{
    uint64_t due = due_tick(deadline);
    uint64_t now = uv_now(&c->loop) - CLOCK_VIRTUAL_BASE_NS / BENCH_TICK_NS;

    return due > now ? due - now : 0;
}

static void uvb_schedule(void *ctx, uint32_t i, uint64_t deadline)
{
    struct uv_ctx *c = ctx;

    clock_virtual_enter();
    uv_timer_start(&c->t[i], on_fire, timeout_ms(c, deadline), 0);
    clock_virtual_leave();
}

static void uvb_cancel(void *ctx, uint32_t i)
{
    struct uv_ctx *c = ctx;

    clock_virtual_enter();
    uv_timer_stop(&c->t[i]);
    clock_virtual_leave();
}

/* uv_timer_start() on an active timer stops it first: libuv's re-arm. */
static void uvb_rearm(void *ctx, uint32_t i, uint64_t deadline)
{
    uvb_schedule(ctx, i, deadline);
}

static uint64_t uvb_advance(void *ctx, uint64_t now, uint64_t max_run)
{
    struct uv_ctx *c = ctx;
    uint64_t before = c->fired;

    (void)max_run;
    clock_virtual_set(now);
    clock_virtual_enter();
    uv_run(&c->loop, UV_RUN_NOWAIT);
    clock_virtual_leave();
    return c->fired - before;
}

/* uv_backend_timeout(): ms from the loop's time to its first timer. */
static uint64_t uvb_next_deadline(void *ctx)
{
    struct uv_ctx *c = ctx;
    uint64_t now;
    int ms;

    clock_virtual_enter();
    ms = uv_backend_timeout(&c->loop);
    now = uv_now(&c->loop) - CLOCK_VIRTUAL_BASE_NS / BENCH_TICK_NS;
    clock_virtual_leave();
    return ms < 0 ? UINT64_MAX : (now + (uint64_t)ms) * BENCH_TICK_NS;
}

static const char *luv_version(void)
{
    static char v[48];

    snprintf(v, sizeof(v), "%s (Debian)", uv_version_string());
    return v;
}

const struct impl impl_libuv = {
    .name = "libuv",
    .about = "libuv uv_timer_start/uv_timer_stop on one loop, fired by "
             "uv_run(UV_RUN_NOWAIT) (pointer-tree heap)",
    .node_size = sizeof(uv_timer_t),
    .bounded = false,
    .create = uvb_create,
    .destroy = uvb_destroy,
    .schedule = uvb_schedule,
    .cancel = uvb_cancel,
    .rearm = uvb_rearm,
    .advance = uvb_advance,
    .next_deadline = uvb_next_deadline,
    .version = luv_version,
};
