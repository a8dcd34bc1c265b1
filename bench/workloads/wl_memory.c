/*
 * memory: bytes per pending timer, node and structure together.
 */
#include <stdlib.h>

#include "memstat.h"
#include "ops.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

#define MIN_DELAY_NS UINT64_C(1000000)       /* 1 ms */
#define MAX_DELAY_NS UINT64_C(3600000000000) /* 1 h */
/* The figure is deterministic: a few repetitions show it is stable. */
#define MEMORY_REPS 3u

struct memory {
    struct ops ops;
    uint64_t n;
};

static void *memory_prepare(const struct bench_params *p, unsigned variant,
                            uint64_t n)
{
    struct memory *m = calloc(1, sizeof(*m));
    struct rng r;

    (void)variant;
    if (!m)
        return NULL;
    rng_init(&r, p->seed, "memory", n);
    m->n = n;
    for (uint64_t i = 0; i < n; i++)
        ops_push(&m->ops, OP_SCHEDULE, (uint32_t)i,
                 rng_range(&r, MIN_DELAY_NS, MAX_DELAY_NS));
    return m;
}

static void memory_once(struct memory *m, const struct impl *im,
                        struct wl_result *out)
{
    uint64_t before, after, slack, array = m->n * im->node_size;
    void *ctx;

    if (!memstat_allocated(&before)) {
        wl_note(out, 0, "not run: jemalloc's stats.allocated unreadable");
        return;
    }
    ctx = wl_create(im, m->n, 2, out);
    if (!ctx)
        return;
    ops_run(im, ctx, &m->ops, 0, m->n);
    memstat_allocated(&after);
    im->destroy(ctx);
    if (stop_hit())
        return;
    /* The node array is the benchmark's, standing for the embedder's own
     * objects: count its exact size, not jemalloc's size-class slack. */
    slack = memstat_usable(array) - array;
    wl_add(out, 0, (double)(after - before - slack) / (double)m->n);
    wl_add(out, 1, (double)im->node_size);
}

static void memory_run(void *seq, const struct impl *im, struct wl_plan *plan,
                       struct wl_result *out)
{
    for (unsigned r = 0; plan->round + r < MEMORY_REPS && wl_more(plan, r); r++)
        memory_once(seq, im, out);
}

static void memory_release(void *seq)
{
    struct memory *m = seq;

    ops_free(&m->ops);
    free(m);
}

static const struct wl_metric metrics[] = {
    {"bytes_per_timer", "bytes", false,
     "Memory in use, bytes per pending timer"},
    {"node_bytes", "bytes", false, "Timer node, bytes"},
};

const struct workload wl_memory = {
    .name = "memory",
    .about =
        "N timers are scheduled (delays uniform from 1 ms to 1 h) and the "
        "bytes the process allocated meanwhile are divided by N: the timer "
        "nodes (allocated by the benchmark in one array, as an embedder "
        "would) plus everything the structure allocates (wheel slots and "
        "bitmaps, heap arrays, libuv's loop, libevent's base). Measured with "
        "jemalloc's stats.allocated, which sees every malloc of the process, "
        "less the size-class slack of the node array itself (an embedder's "
        "timers live inside its own objects, so that slack is the "
        "benchmark's, not the implementation's). node_bytes is the size of "
        "one timer node alone.",
    .x_label = "pending timers",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {1000000},
              [SUITE_FULL] = {1000000, 10000000},
              [SUITE_SMOKE] = {10000}},
    WL_METRICS(metrics),
    .prepare = memory_prepare,
    .run = memory_run,
    .release = memory_release,
};
