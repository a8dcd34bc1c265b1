/*
 * jump: 10 timers pending, one advance across a long stretch of time.
 */
#include <stdlib.h>

#include "clock.h"
#include "ops.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

#define HOUR_NS UINT64_C(3600000000000)

struct jump {
    struct ops hour; /* n schedules within 1 h */
    struct ops span; /* n schedules within the long span */
    uint64_t n;
    uint64_t span_ns;
};

static void fill(struct ops *s, uint64_t n, uint64_t range, struct rng *r)
{
    for (uint64_t i = 0; i < n; i++)
        ops_push(s, OP_SCHEDULE, (uint32_t)i,
                 rng_range(r, BENCH_TICK_NS, range));
}

static void *jump_prepare(const struct bench_params *p, unsigned variant,
                          uint64_t n)
{
    struct jump *j = calloc(1, sizeof(*j));
    struct rng r;

    (void)variant;
    if (!j)
        return NULL;
    rng_init(&r, p->seed, "jump", n);
    j->n = n;
    j->span_ns = p->jump_span_ns;
    fill(&j->hour, n, HOUR_NS, &r);
    fill(&j->span, n, j->span_ns, &r);
    return j;
}

/* Schedule s, then time one advance to `to`; ns, or 0 on failure. */
static uint64_t jump_once(struct jump *j, const struct ops *s, uint64_t to,
                          const struct impl *im, unsigned m,
                          struct wl_result *out)
{
    void *ctx = wl_create(im, j->n, 2, out);

    if (!ctx)
        return 0;
    ops_run(im, ctx, s, 0, s->n);
    uint64_t t0 = clock_now_ns();
    uint64_t fired = im->advance(ctx, to, UINT64_MAX);
    uint64_t t1 = clock_now_ns();

    im->destroy(ctx);
    if (stop_hit())
        return 0;
    wl_check_fired(out, m, fired, j->n);
    return t1 - t0;
}

static void jump_run(void *seq, const struct impl *im, struct wl_plan *plan,
                     struct wl_result *out)
{
    struct jump *j = seq;
    double hour_s = 0;

    if (plan->round == 0 || plan->warmup)
        jump_once(j, &j->hour, HOUR_NS, im, 1, out); /* warm-up */
    for (unsigned r = 0; wl_more(plan, r); r++) {
        uint64_t t = jump_once(j, &j->hour, HOUR_NS, im, 1, out);

        if (t == 0)
            return;
        wl_add(out, 1, (double)t / 1e3);
        hour_s = hour_s > (double)t / 1e9 ? hour_s : (double)t / 1e9;
    }
    /* A design that steps through every tick takes span / 1 h times as
     * long for the long jump: do it only if that fits the budget, as the
     * cell's first call found (keep: 1 + how many fit). */
    double predicted = hour_s * (double)j->span_ns / (double)HOUR_NS;

    if (plan->keep == 0) {
        plan->keep =
            1 + (predicted > 0 ? (uint64_t)(plan->budget_s / predicted) : 0);
        if (plan->keep == 1)
            wl_note(out, 0,
                    "not run: a 1 h jump took %.3g ms, so this one "
                    "would take about %.3g s if linear in ticks, over the "
                    "cell budget of %g s",
                    hour_s * 1e3, predicted, plan->budget_s);
    }
    for (unsigned r = 0; plan->round + r + 1 < plan->keep && r < plan->reps;
         r++) {
        uint64_t t = jump_once(j, &j->span, j->span_ns, im, 0, out);

        if (t == 0)
            return;
        wl_add(out, 0, (double)t / 1e3);
    }
}

static void jump_release(void *seq)
{
    struct jump *j = seq;

    ops_free(&j->hour);
    ops_free(&j->span);
    free(j);
}

static const struct wl_metric metrics[] = {
    {"us_per_call", "us", false, "One advance over 30 days, us per call"},
    {"us_per_call_1h", "us", false, "One advance over 1 hour, us per call"},
};

const struct workload wl_jump = {
    .name = "jump",
    .about =
        "10 timers are pending, spread uniformly over the next 30 days, and "
        "the clock makes one advance over the whole 30 days at a 1 ms tick "
        "(2.6 x 10^9 ticks), firing all ten: an embedder that slept, a "
        "suspended laptop, a simulation that skips ahead. Reported: us for "
        "that one call (us_per_call), and for the same over 1 h "
        "(us_per_call_1h), which is also what decides whether the 30-day "
        "jump fits the time budget.",
    .x_label = "pending timers",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {10}, [SUITE_FULL] = {10}, [SUITE_SMOKE] = {10}},
    .fixed_size = true, /* defined by its 10 timers; --sizes does not apply */
    WL_METRICS(metrics),
    .prepare = jump_prepare,
    .run = jump_run,
    .release = jump_release,
};
