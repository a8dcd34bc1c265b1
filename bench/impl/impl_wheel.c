/*
 * The library's wheels: "hier" (the default clock layout), "hier-pow2"
 * (six 64-slot levels) and "hashed" (Netty's 512 slots), all at a 1 ms tick.
 * The three tables share every function; only the configuration differs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "impl.h"
#include "timewheel.h"

struct wheel_ctx {
    struct tw_wheel *w;
    struct tw_timer *t; /* the n timers, one array */
    uint64_t fired;
};

/* The callback: timers only count themselves. */
static void on_fire(struct tw_timer *t, void *arg)
{
    struct wheel_ctx *c = arg;

    (void)t;
    c->fired++;
}

static void *wheel_new(const struct tw_config *cfg, uint32_t n, char *why,
                       size_t len)
{
    struct wheel_ctx *c = calloc(1, sizeof(*c));
    int err = -ENOMEM; /* unless tw_create says otherwise */

    if (c)
        c->t = malloc((n ? n : 1) * sizeof(*c->t));
    if (c && c->t)
        c->w = tw_create(cfg, &err);
    if (!c || !c->t || !c->w) {
        snprintf(why, len, "cannot create the wheel: %s", tw_strerror(err));
        if (c)
            free(c->t);
        free(c);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        tw_timer_init(&c->t[i], on_fire, c);
    return c;
}

static void *hier_create(uint32_t n, char *why, size_t len)
{
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    return wheel_new(&cfg, n, why, len);
}

static void *pow2_create(uint32_t n, char *why, size_t len)
{
    static const uint32_t pow2[] = {64, 64, 64, 64, 64, 64};
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HIER);
    cfg.slots = pow2;
    cfg.levels = sizeof(pow2) / sizeof(pow2[0]);
    return wheel_new(&cfg, n, why, len);
}

static void *hashed_create(uint32_t n, char *why, size_t len)
{
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HASHED);
    return wheel_new(&cfg, n, why, len);
}

static void wheel_destroy(void *ctx)
{
    struct wheel_ctx *c = ctx;

    tw_destroy(c->w);
    free(c->t);
    free(c);
}

static void wheel_schedule(void *ctx, uint32_t i, uint64_t deadline)
{
    struct wheel_ctx *c = ctx;

    tw_schedule(c->w, &c->t[i], deadline);
}

static void wheel_cancel(void *ctx, uint32_t i)
{
    struct wheel_ctx *c = ctx;

    tw_cancel(c->w, &c->t[i]);
}

static void wheel_rearm(void *ctx, uint32_t i, uint64_t deadline)
{
    struct wheel_ctx *c = ctx;

    tw_rearm(c->w, &c->t[i], deadline);
}

static uint64_t wheel_advance(void *ctx, uint64_t now, uint64_t max_run)
{
    struct wheel_ctx *c = ctx;
    int64_t ran = tw_advance_bounded(c->w, now, max_run);

    return ran > 0 ? (uint64_t)ran : 0;
}

static uint64_t wheel_next_deadline(void *ctx)
{
    struct wheel_ctx *c = ctx;

    return tw_pending(c->w) ? tw_next_deadline(c->w) : UINT64_MAX;
}

static uint64_t wheel_advance_sliced(void *ctx, uint64_t now, uint64_t max_run,
                                     uint64_t work, bool *more)
{
    struct wheel_ctx *c = ctx;
    int64_t ran = tw_advance_sliced(c->w, now, max_run, work);

    *more = tw_next_deadline(c->w) <= now;
    return ran > 0 ? (uint64_t)ran : 0;
}

#define WHEEL_OPS                                                              \
    .node_size = sizeof(struct tw_timer), .bounded = true,                     \
    .destroy = wheel_destroy, .schedule = wheel_schedule,                      \
    .cancel = wheel_cancel, .rearm = wheel_rearm, .advance = wheel_advance,    \
    .next_deadline = wheel_next_deadline,                                      \
    .advance_sliced = wheel_advance_sliced

const struct impl impl_hier = {
    .name = "hier",
    .about = "timewheel TW_HIER, default clock layout 1000/60/60/24 slots "
             "(then 64-slot levels), 1 ms tick",
    .create = hier_create,
    WHEEL_OPS,
    .scale = true,
};

const struct impl impl_hier_pow2 = {
    .name = "hier-pow2",
    .about = "timewheel TW_HIER, six 64-slot levels (then 64-slot levels), "
             "1 ms tick",
    .create = pow2_create,
    WHEEL_OPS,
};

const struct impl impl_hashed = {
    .name = "hashed",
    .about = "timewheel TW_HASHED, Netty's 512 slots with round counting, "
             "1 ms tick",
    .create = hashed_create,
    WHEEL_OPS,
    .scale = true,
};
