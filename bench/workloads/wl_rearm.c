/*
 * rearm: idle-connection timers, each moved later on every message of its
 * connection, while the clock advances tick by tick.
 */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "ops.h"
#include "perfcount.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

struct rearm {
    struct ops ops; /* n schedules, then slices of rearms and advances */
    uint64_t n;
    uint64_t msgs; /* messages per slice */
    size_t *slice; /* first op of each slice, and one past the last */
    unsigned nslices;
};

/* Shuffle perm in place (Fisher-Yates): the next round of messages. */
static void shuffle(uint32_t *perm, uint64_t n, struct rng *r)
{
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = rng_range(r, 0, i);
        uint32_t t = perm[i];

        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Messages come in rounds, each a random permutation of the connections,
 * at per_tick messages per tick; every connection's timer moves to its
 * message's tick + idle. */
static void rearm_messages(struct rearm *a, const struct bench_params *p,
                           uint32_t *perm, struct rng *r)
{
    uint64_t total = a->msgs * a->nslices;

    for (uint64_t m = 0; m < total; m++) {
        uint64_t now = (m / p->rearm_per_tick) * BENCH_TICK_NS;

        if (m % a->msgs == 0)
            a->slice[m / a->msgs] = a->ops.n;
        if (m % a->n == 0)
            shuffle(perm, a->n, r);
        if (m % p->rearm_per_tick == 0)
            ops_push(&a->ops, OP_ADVANCE, 0, now);
        ops_push(&a->ops, OP_REARM, perm[m % a->n], now + p->rearm_idle_ns);
    }
    a->slice[a->nslices] = a->ops.n;
}

static void *rearm_prepare(const struct bench_params *p, unsigned variant,
                           uint64_t n)
{
    struct rearm *a = calloc(1, sizeof(*a));
    uint32_t *perm = malloc(n * sizeof(*perm));
    struct rng r;

    (void)variant;
    /* Two rounds must fit in the idle timeout, or timers would fire. */
    if (2 * n / p->rearm_per_tick * BENCH_TICK_NS >= p->rearm_idle_ns)
        fprintf(stderr,
                "twbench: rearm: %llu connections are too many for "
                "the idle timeout; some timers will fire\n",
                (unsigned long long)n);
    a->nslices = 2 * p->reps; /* a warm-up before each repetition */
    a->slice = calloc(a->nslices + 1, sizeof(*a->slice));
    if (!perm || !a->slice) {
        fprintf(stderr, "twbench: out of memory\n");
        exit(1);
    }
    rng_init(&r, p->seed, "rearm", n);
    a->n = n;
    a->msgs = p->rearm_msgs;
    for (uint32_t i = 0; i < n; i++) {
        perm[i] = i;
        ops_push(&a->ops, OP_SCHEDULE, i, p->rearm_idle_ns);
    }
    rearm_messages(a, p, perm, &r);
    free(perm);
    return a;
}

static void rearm_slice(struct rearm *a, const struct impl *im, void *ctx,
                        unsigned s, struct wl_result *out, bool timed)
{
    uint64_t i0 = perfcount_read(), t0 = clock_now_ns();
    uint64_t fired = ops_run(im, ctx, &a->ops, a->slice[s], a->slice[s + 1]);
    uint64_t t1 = clock_now_ns(), i1 = perfcount_read();

    if (stop_hit())
        return;
    wl_check_fired(out, 0, fired, 0);
    if (!timed)
        return;
    wl_add(out, 0, (double)(t1 - t0) / (double)a->msgs);
    if (perfcount_ok())
        wl_add(out, 1, (double)(i1 - i0) / (double)a->msgs);
}

static void rearm_run(void *seq, const struct impl *im, struct wl_plan *plan,
                      struct wl_result *out)
{
    struct rearm *a = seq;
    unsigned s = (unsigned)plan->keep;

    /* The cell's first call schedules the timers; each repetition (one
     * call) then replays the next two slices on the same context
     * (plan->keep: which): an untimed one, so that the timed one finds the
     * caches as its own previous slice left them whatever ran between the
     * calls, then the timed one. */
    if (!plan->ctx) {
        plan->ctx = wl_create(im, a->n, 1, out);
        if (!plan->ctx)
            return;
        ops_run(im, plan->ctx, &a->ops, 0, a->n);
    }
    for (unsigned r = 0; s + 2 <= a->nslices && wl_more(plan, r); r++) {
        rearm_slice(a, im, plan->ctx, s++, out, false);
        rearm_slice(a, im, plan->ctx, s++, out, true);
    }
    plan->keep = s;
}

static void rearm_release(void *seq)
{
    struct rearm *a = seq;

    ops_free(&a->ops);
    free(a->slice);
    free(a);
}

static const struct wl_metric metrics[] = {
    {"ns_per_rearm", "ns", false, "Re-arm on every message, ns per re-arm"},
    {"instructions_per_rearm", WL_UNIT_INSTRUCTIONS, false,
     "Re-arm on every message, instructions per re-arm"},
};

const struct workload wl_rearm = {
    .name = "rearm",
    .about =
        "N connections each hold an idle timeout of 30 s. Messages arrive at "
        "1000 per 1 ms tick (10^6 per second), in rounds that are random "
        "permutations of the connections, and every message moves its "
        "connection's timer to 30 s after the message; the clock advances "
        "once per tick. Two rounds always fit within 30 s, so no timer ever "
        "fires: each one is moved later again and again (thousands of "
        "times at small N) and only the re-arming and the ticking are "
        "measured, including any demotion the advances do. Reported: ns per "
        "message (one re-arm, plus the tick's advance shared among the "
        "tick's 1000 messages).",
    .x_label = "connections (pending timers)",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {1000, 10000, 100000, 1000000},
              [SUITE_FULL] = {1000, 10000, 100000, 1000000, 10000000},
              [SUITE_SMOKE] = {1000}},
    WL_METRICS(metrics),
    .prepare = rearm_prepare,
    .run = rearm_run,
    .release = rearm_release,
};
