/*
 * The "heap" implementation: the binary min-heap of heap.h, driven by time
 * as an argument like the wheels.
 */
#include <stdio.h>
#include <stdlib.h>

#include "heap.h"
#include "impl.h"

struct heap_ctx {
    struct heap h;
    struct heap_node *nodes; /* the n timers, one array */
    uint64_t fired;
};

static void *heap_create(uint32_t n, char *why, size_t len)
{
    struct heap_ctx *c = calloc(1, sizeof(*c));

    if (c)
        c->nodes = malloc((n ? n : 1) * sizeof(*c->nodes));
    if (!c || !c->nodes) {
        free(c);
        snprintf(why, len, "out of memory for %u timers", (unsigned)n);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        c->nodes[i].pos = HEAP_NONE;
    return c;
}

static void heap_destroy(void *ctx)
{
    struct heap_ctx *c = ctx;

    free(c->h.a);
    free(c->nodes);
    free(c);
}

static void heap_schedule(void *ctx, uint32_t i, uint64_t deadline)
{
    struct heap_ctx *c = ctx;

    if (!heap_push(&c->h, &c->nodes[i], due_tick(deadline)))
        abort(); /* the benchmark cannot go on without its timers */
}

static void heap_cancel(void *ctx, uint32_t i)
{
    struct heap_ctx *c = ctx;

    if (c->nodes[i].pos != HEAP_NONE)
        heap_remove(&c->h, &c->nodes[i]);
}

static void heap_rearm(void *ctx, uint32_t i, uint64_t deadline)
{
    struct heap_ctx *c = ctx;

    if (c->nodes[i].pos != HEAP_NONE)
        heap_rekey(&c->h, &c->nodes[i], due_tick(deadline));
    else
        heap_schedule(ctx, i, deadline);
}

/* The callback: timers only count themselves. */
static void on_fire(struct heap_ctx *c, struct heap_node *x)
{
    (void)x;
    c->fired++;
}

static uint64_t heap_advance(void *ctx, uint64_t now, uint64_t max_run)
{
    struct heap_ctx *c = ctx;
    uint64_t tick = now / BENCH_TICK_NS, ran = 0;
    struct heap_node *x;

    while (ran < max_run && (x = heap_top(&c->h)) && x->key <= tick) {
        heap_remove(&c->h, x);
        on_fire(c, x);
        ran++;
    }
    return ran;
}

static uint64_t heap_next_deadline(void *ctx)
{
    struct heap_ctx *c = ctx;
    struct heap_node *x = heap_top(&c->h);

    return x ? x->key * BENCH_TICK_NS : UINT64_MAX;
}

const struct impl impl_heap = {
    .name = "heap",
    .about = "binary min-heap written for the benchmark (bench/impl/heap.h): "
             "intrusive 24-byte node, array of node pointers",
    .node_size = sizeof(struct heap_node),
    .bounded = true,
    .create = heap_create,
    .destroy = heap_destroy,
    .schedule = heap_schedule,
    .cancel = heap_cancel,
    .rearm = heap_rearm,
    .advance = heap_advance,
    .next_deadline = heap_next_deadline,
    .scale = true,
};
