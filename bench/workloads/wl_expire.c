/*
 * expire: N timers with delays uniform within a range (1 s, 1 min, 1 h),
 * then the clock advances in fixed steps until every one has fired.
 */
#include <stdlib.h>

#include "clock.h"
#include "ops.h"
#include "perfcount.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

static const char *const variants[] = {"1s", "1min", "1h"};
static const uint64_t range_ns[] = {UINT64_C(1000000000), UINT64_C(60000000000),
                                    UINT64_C(3600000000000)};
/* Steps: 1 ms for the 1 s range (a 1000-step run), else 1 s. */
static const uint64_t step_ns[] = {UINT64_C(1000000), UINT64_C(1000000000),
                                   UINT64_C(1000000000)};

struct expire {
    struct ops ops; /* n schedules, then the advances */
    uint64_t n;
};

static void *expire_prepare(const struct bench_params *p, unsigned variant,
                            uint64_t n)
{
    struct expire *e = calloc(1, sizeof(*e));
    struct rng r;

    if (!e)
        return NULL;
    rng_init(&r, p->seed, variants[variant], n);
    e->n = n;
    for (uint64_t i = 0; i < n; i++)
        ops_push(&e->ops, OP_SCHEDULE, (uint32_t)i,
                 rng_range(&r, BENCH_TICK_NS, range_ns[variant]));
    for (uint64_t t = step_ns[variant]; t <= range_ns[variant];
         t += step_ns[variant])
        ops_push(&e->ops, OP_ADVANCE, 0, t);
    return e;
}

/* One repetition: schedule everything, then advance until all fired. */
static void expire_once(struct expire *e, const struct impl *im,
                        struct wl_result *out, bool timed)
{
    void *ctx = wl_create(im, e->n, 2, out);

    if (!ctx)
        return;
    uint64_t t0 = clock_now_ns();
    ops_run(im, ctx, &e->ops, 0, e->n);
    uint64_t t1 = clock_now_ns(), i1 = perfcount_read();
    uint64_t fired = ops_run(im, ctx, &e->ops, e->n, e->ops.n);
    uint64_t i2 = perfcount_read(), t2 = clock_now_ns();

    im->destroy(ctx);
    if (stop_hit())
        return;
    wl_check_fired(out, 0, fired, e->n);
    if (!timed)
        return;
    wl_add(out, 0, (double)(t2 - t1) / (double)e->n);
    wl_add(out, 1, (double)(t1 - t0) / (double)e->n);
    if (perfcount_ok())
        wl_add(out, 2, (double)(i2 - i1) / (double)e->n);
}

static void expire_run(void *seq, const struct impl *im, struct wl_plan *plan,
                       struct wl_result *out)
{
    if (plan->warmup)
        expire_once(seq, im, out, false);
    for (unsigned r = 0; wl_more(plan, r); r++)
        expire_once(seq, im, out, true);
}

static void expire_release(void *seq)
{
    struct expire *e = seq;

    ops_free(&e->ops);
    free(e);
}

static const struct wl_metric metrics[] = {
    {"ns_per_timer", "ns", false, "Expiry until all fired, ns per timer"},
    {"ns_per_schedule", "ns", false, "Scheduling the timers, ns per timer"},
    {"instructions_per_timer", WL_UNIT_INSTRUCTIONS, false,
     "Expiry until all fired, instructions per timer"},
};

const struct workload wl_expire = {
    .name = "expire",
    .about =
        "N timers are scheduled with delays uniform within 1 s, 1 min or "
        "1 h (three runs), then the clock advances in steps of 1 ms (the 1 s "
        "run) or 1 s (the others) until every timer has fired. This is the "
        "cost of timeouts that do happen: heartbeats, retries, leases. "
        "Reported: ns per fired timer for the advances alone, every "
        "demotion between levels included (and, separately, ns per "
        "schedule while filling the structure).",
    .x_label = "pending timers",
    .nvariants = 3,
    .variants = variants,
    .sizes = {[SUITE_QUICK] = {1000, 10000, 100000, 1000000},
              [SUITE_FULL] = {1000, 10000, 100000, 1000000, 10000000},
              [SUITE_SMOKE] = {1000}},
    WL_METRICS(metrics),
    .prepare = expire_prepare,
    .run = expire_run,
    .release = expire_release,
};
