/*
 * churn: N timers pending; pairs in which a random pending timer is
 * cancelled and scheduled again with a new delay. Time does not move.
 */
#include <stdlib.h>

#include "clock.h"
#include "ops.h"
#include "perfcount.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

#define MIN_DELAY_NS UINT64_C(1000000)       /* 1 ms */
#define MAX_DELAY_NS UINT64_C(3600000000000) /* 1 h */

struct churn {
    struct ops ops; /* n schedules, then pairs * slices cancel+schedule */
    uint64_t n, pairs;
};

static void *churn_prepare(const struct bench_params *p, unsigned variant,
                           uint64_t n)
{
    struct churn *c = calloc(1, sizeof(*c));
    unsigned slices = 2 * p->reps; /* a warm-up before each repetition */
    struct rng r;

    (void)variant;
    if (!c)
        return NULL;
    rng_init(&r, p->seed, "churn", n);
    c->n = n;
    c->pairs = p->churn_pairs;
    for (uint64_t i = 0; i < n; i++)
        ops_push(&c->ops, OP_SCHEDULE, (uint32_t)i,
                 rng_range(&r, MIN_DELAY_NS, MAX_DELAY_NS));
    for (uint64_t k = 0; k < c->pairs * slices; k++) {
        uint32_t i = (uint32_t)rng_range(&r, 0, n - 1);

        ops_push(&c->ops, OP_CANCEL, i, 0);
        ops_push(&c->ops, OP_SCHEDULE, i,
                 rng_range(&r, MIN_DELAY_NS, MAX_DELAY_NS));
    }
    return c;
}

/* Time one slice of pairs starting at op *at. */
static void churn_slice(struct churn *c, const struct impl *im, void *ctx,
                        size_t *at, struct wl_result *out, bool timed)
{
    size_t end = *at + 2 * c->pairs;
    uint64_t i0 = perfcount_read(), t0 = clock_now_ns();

    ops_run(im, ctx, &c->ops, *at, end);
    uint64_t t1 = clock_now_ns(), i1 = perfcount_read();

    *at = end;
    if (!timed || stop_hit())
        return;
    wl_add(out, 0, (double)(t1 - t0) / (double)c->pairs);
    if (perfcount_ok())
        wl_add(out, 1, (double)(i1 - i0) / (double)c->pairs);
}

static void churn_run(void *seq, const struct impl *im, struct wl_plan *plan,
                      struct wl_result *out)
{
    struct churn *c = seq;
    size_t at = (size_t)plan->keep;

    /* The cell's first call fills the timers; each repetition (one call)
     * then replays the next slices on the same context, from where the last
     * left off (plan->keep): an untimed one, so that the timed one finds
     * the caches as its own previous slice left them whatever ran between
     * the calls, then the timed one. */
    if (!plan->ctx) {
        plan->ctx = wl_create(im, c->n, 1, out);
        if (!plan->ctx)
            return;
        at = c->n;
        ops_run(im, plan->ctx, &c->ops, 0, at);
    }
    for (unsigned r = 0; at < c->ops.n && wl_more(plan, r); r++) {
        churn_slice(c, im, plan->ctx, &at, out, false);
        churn_slice(c, im, plan->ctx, &at, out, true);
    }
    plan->keep = at;
}

static void churn_release(void *seq)
{
    struct churn *c = seq;

    ops_free(&c->ops);
    free(c);
}

static const struct wl_metric metrics[] = {
    {"ns_per_pair", "ns", false, "Cancel + reschedule, ns per pair"},
    {"instructions_per_pair", WL_UNIT_INSTRUCTIONS, false,
     "Cancel + reschedule, instructions per pair"},
};

const struct workload wl_churn = {
    .name = "churn",
    .about =
        "N timers are pending, with delays uniform from 1 ms to 1 h at a 1 ms "
        "tick. Then, pair after pair, a pending timer chosen at random is "
        "cancelled and scheduled again with a new random delay, so N stays "
        "the same and the clock does not move. This is the RPC-timeout "
        "pattern: almost every timeout is cancelled because the reply came "
        "in time, and a new request takes its place. The timers live in one "
        "array and are picked at random, so the memory touched is as "
        "scattered as in a server. Reported: ns per cancel+schedule pair.",
    .x_label = "pending timers",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {1000, 10000, 100000, 1000000},
              [SUITE_FULL] = {1000, 10000, 100000, 1000000, 10000000},
              [SUITE_SMOKE] = {1000}},
    WL_METRICS(metrics),
    .prepare = churn_prepare,
    .run = churn_run,
    .release = churn_release,
};
