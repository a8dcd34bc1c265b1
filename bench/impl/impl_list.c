/*
 * The "list" implementation: an unsorted doubly linked list of pending
 * timers, walked whole whenever one may be due. It models the expire
 * queue of nng's aio layer (a list of every aio with a deadline, which one
 * expire thread scans on each wake-up, expiring what is due and taking the
 * earliest of the rest as its next wake-up): the structure the nng work
 * (docs/brokers.md) replaces with a wheel, measured here as its baseline.
 * Our own code, written from that description.
 *
 * Schedule appends and cancel unlinks, both O(1). The earliest due tick is
 * kept as a lower bound: lowered by every schedule and re-arm, never raised
 * by a cancel (as nng's thread, which only learns of a cancel when it next
 * wakes). advance() returns at once while that bound is ahead (the expire
 * thread sleeps until then), and otherwise walks every pending timer,
 * firing the due ones and setting the bound to the earliest of the others:
 * O(n) per wake-up, which is the cost this peer exists to show.
 */
#include <stdio.h>
#include <stdlib.h>

#include "impl.h"

struct list_node {
    struct list_node *prev, *next; /* both NULL: not pending */
    uint64_t tick;                 /* the due tick */
};

struct list_ctx {
    struct list_node head;   /* circular: head.next is the first */
    struct list_node *nodes; /* the n timers, one array */
    uint64_t min_tick;       /* no pending timer is due before it */
    uint64_t fired;
};

static void *list_create(uint32_t n, char *why, size_t len)
{
    struct list_ctx *c = calloc(1, sizeof(*c));

    if (c)
        c->nodes = calloc(n ? n : 1, sizeof(*c->nodes));
    if (!c || !c->nodes) {
        free(c);
        snprintf(why, len, "out of memory for %u timers", (unsigned)n);
        return NULL;
    }
    c->head.prev = c->head.next = &c->head;
    c->min_tick = UINT64_MAX;
    return c;
}

static void list_destroy(void *ctx)
{
    struct list_ctx *c = ctx;

    free(c->nodes);
    free(c);
}

static void unlink_node(struct list_node *x)
{
    x->prev->next = x->next;
    x->next->prev = x->prev;
    x->prev = x->next = NULL;
}

static void list_schedule(void *ctx, uint32_t i, uint64_t deadline)
{
    struct list_ctx *c = ctx;
    struct list_node *x = &c->nodes[i];

    x->tick = due_tick(deadline);
    x->prev = c->head.prev;
    x->next = &c->head;
    c->head.prev->next = x;
    c->head.prev = x;
    if (x->tick < c->min_tick)
        c->min_tick = x->tick;
}

static void list_cancel(void *ctx, uint32_t i)
{
    struct list_ctx *c = ctx;

    if (c->nodes[i].next)
        unlink_node(&c->nodes[i]);
}

/* A pending timer only changes its deadline: it keeps its place. */
static void list_rearm(void *ctx, uint32_t i, uint64_t deadline)
{
    struct list_ctx *c = ctx;
    struct list_node *x = &c->nodes[i];

    if (!x->next) {
        list_schedule(ctx, i, deadline);
        return;
    }
    x->tick = due_tick(deadline);
    if (x->tick < c->min_tick)
        c->min_tick = x->tick;
}

/* The walk: fire what is due (at most max_run), and take the earliest due
 * tick of the rest. Cut short by max_run, the bound stays at now so that
 * the next call walks again. */
static uint64_t list_advance(void *ctx, uint64_t now, uint64_t max_run)
{
    struct list_ctx *c = ctx;
    uint64_t tick = now / BENCH_TICK_NS, ran = 0, min = UINT64_MAX;
    struct list_node *x, *next;

    if (c->min_tick > tick)
        return 0;
    for (x = c->head.next; x != &c->head; x = next) {
        next = x->next;
        if (x->tick > tick) {
            if (x->tick < min)
                min = x->tick;
            continue;
        }
        if (ran == max_run) {
            min = tick;
            break;
        }
        unlink_node(x);
        c->fired++; /* the callback: timers only count themselves */
        ran++;
    }
    c->min_tick = min;
    return ran;
}

static uint64_t list_next_deadline(void *ctx)
{
    struct list_ctx *c = ctx;

    if (c->head.next == &c->head || c->min_tick == UINT64_MAX)
        return UINT64_MAX;
    return c->min_tick * BENCH_TICK_NS;
}

const struct impl impl_list = {
    .name = "list",
    .about = "unsorted doubly linked list walked whole on each wake-up, the "
             "earliest deadline kept as a lower bound (nng's aio expire "
             "queue, written for the benchmark): the baseline of the nng work",
    .node_size = sizeof(struct list_node),
    .bounded = true,
    .create = list_create,
    .destroy = list_destroy,
    .schedule = list_schedule,
    .cancel = list_cancel,
    .rearm = list_rearm,
    .advance = list_advance,
    .next_deadline = list_next_deadline,
};
