/*
 * burst: N timers all due in the same tick; the cost of the advance that
 * fires them, and the longest single call when a bounded advance spreads
 * them out.
 */
#include <stdlib.h>

#include "clock.h"
#include "ops.h"
#include "stop.h"
#include "workload.h"

/* Not on a second boundary, so that every layout demotes the burst on its
 * way down before it fires (the clock layout once, pow2 twice). */
#define BURST_AT_NS UINT64_C(30250000000) /* 30.25 s */

struct burst {
    struct ops ops; /* n schedules */
    uint64_t n;
    uint64_t max_run;
};

static void *burst_prepare(const struct bench_params *p, unsigned variant,
                           uint64_t n)
{
    struct burst *b = calloc(1, sizeof(*b));

    (void)variant;
    if (!b)
        return NULL;
    b->n = n;
    b->max_run = p->burst_max_run;
    for (uint64_t i = 0; i < n; i++)
        ops_push(&b->ops, OP_SCHEDULE, (uint32_t)i, BURST_AT_NS);
    return b;
}

/* One advance from 0 straight to the burst's tick. */
static void burst_whole(struct burst *b, const struct impl *im,
                        struct wl_result *out, bool timed)
{
    void *ctx = wl_create(im, b->n, 2, out);

    if (!ctx)
        return;
    ops_run(im, ctx, &b->ops, 0, b->n);
    uint64_t t0 = clock_now_ns();
    uint64_t fired = im->advance(ctx, BURST_AT_NS, UINT64_MAX);
    uint64_t t1 = clock_now_ns();

    im->destroy(ctx);
    if (stop_hit())
        return;
    wl_check_fired(out, 0, fired, b->n);
    if (timed)
        wl_add(out, 0, (double)(t1 - t0) / (double)b->n);
}

/* Bounded advances to the burst's tick until all fired; the longest. */
static void burst_bounded(struct burst *b, const struct impl *im,
                          struct wl_result *out, bool timed)
{
    void *ctx = wl_create(im, b->n, 2, out);
    uint64_t fired = 0, longest = 0, f;

    if (!ctx)
        return;
    ops_run(im, ctx, &b->ops, 0, b->n);
    do {
        uint64_t t0 = clock_now_ns();

        f = im->advance(ctx, BURST_AT_NS, b->max_run);
        uint64_t t = clock_now_ns() - t0;

        longest = t > longest ? t : longest;
        fired += f;
    } while (f > 0 && fired < b->n);
    im->destroy(ctx);
    if (stop_hit())
        return;
    wl_check_fired(out, 1, fired, b->n);
    if (timed)
        wl_add(out, 1, (double)longest / 1e3);
    if (!im->bounded)
        wl_note(out, 1,
                "cannot bound a run: its one call fires the whole "
                "burst");
}

static void burst_run(void *seq, const struct impl *im, struct wl_plan *plan,
                      struct wl_result *out)
{
    if (plan->warmup)
        burst_whole(seq, im, out, false);
    for (unsigned r = 0; wl_more(plan, r); r++) {
        burst_whole(seq, im, out, true);
        burst_bounded(seq, im, out, true);
    }
}

static void burst_release(void *seq)
{
    struct burst *b = seq;

    ops_free(&b->ops);
    free(b);
}

static const struct wl_metric metrics[] = {
    {"ns_per_timer", "ns", false,
     "Firing a burst in one advance, ns per timer"},
    {"max_call_us", "us", false,
     "Longest bounded advance (1000 callbacks), us per call"},
};

const struct workload wl_burst = {
    .name = "burst",
    .about = "N timers are all due in the same tick (30.25 s after they were "
             "scheduled: a server that accepted N connections at once, or a "
             "broker restarting with N sessions). Measured twice: the one "
             "advance from the scheduling time straight to that tick, which "
             "fires them all (ns per timer, demotions included); and, with the "
             "bounded advance (at most 1000 callbacks per call), the longest "
             "single call, which is what a latency-sensitive event loop cares "
             "about (max_call_us).",
    .x_label = "timers in the burst",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {1000, 10000, 100000, 1000000},
              [SUITE_FULL] = {1000, 10000, 100000, 1000000, 10000000},
              [SUITE_SMOKE] = {1000}},
    WL_METRICS(metrics),
    .prepare = burst_prepare,
    .run = burst_run,
    .release = burst_release,
};
