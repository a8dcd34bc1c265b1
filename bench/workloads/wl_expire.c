/*
 * expire: N timers with delays uniform within a range (1 s, 1 min, 1 h),
 * then the clock advances in fixed steps until every one has fired.
 *
 * One such cycle at 10^3 lasts tens of microseconds: a repetition of one
 * cycle measured a single scheduler tick or cache refill as much as the
 * timers (the heap's 10^3 cell ranged 19.5 to 113.7 ns per timer over the
 * repetitions of one run). So a timed repetition runs whole cycles, each
 * on a fresh context as before, until it has fired at least MIN_TIMERS;
 * every implementation runs the same number of cycles at a size, and the
 * figures are the cycles' summed time over the timers they fired.
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

/* Timers one timed repetition fires at least: 100 cycles at 10^3, 10 at
 * 10^4, one from 10^5 up (where a cycle lasts milliseconds). */
#define MIN_TIMERS UINT64_C(100000)

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

/* What the cycles of one repetition took, summed. */
struct expire_sum {
    uint64_t schedule_ns, advance_ns, advance_instr;
};

/* One cycle: a fresh context, schedule everything, then advance until all
 * fired; false when it could not run or the budget stopped it. */
static bool expire_cycle(struct expire *e, const struct impl *im,
                         struct wl_result *out, struct expire_sum *sum)
{
    void *ctx = wl_create(im, e->n, 2, out);

    if (!ctx)
        return false;
    uint64_t t0 = clock_now_ns();
    ops_run(im, ctx, &e->ops, 0, e->n);
    uint64_t t1 = clock_now_ns(), i1 = perfcount_read();
    uint64_t fired = ops_run(im, ctx, &e->ops, e->n, e->ops.n);
    uint64_t i2 = perfcount_read(), t2 = clock_now_ns();

    im->destroy(ctx);
    if (stop_hit())
        return false;
    wl_check_fired(out, 0, fired, e->n);
    sum->schedule_ns += t1 - t0;
    sum->advance_ns += t2 - t1;
    sum->advance_instr += i2 - i1;
    return true;
}

/* One repetition: as many cycles as make MIN_TIMERS (the top of the
 * file). */
static void expire_once(struct expire *e, const struct impl *im,
                        struct wl_result *out, bool timed)
{
    uint64_t cycles = wl_rep_work(&wl_expire, e->n) / e->n;
    struct expire_sum sum = {0};
    double timers = (double)(cycles * e->n);

    for (uint64_t c = 0; c < cycles; c++)
        if (!expire_cycle(e, im, out, &sum))
            return;
    if (!timed)
        return;
    wl_add(out, 0, (double)sum.advance_ns / timers);
    wl_add(out, 1, (double)sum.schedule_ns / timers);
    if (perfcount_ok())
        wl_add(out, 2, (double)sum.advance_instr / timers);
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
        "schedule while filling the structure). Below 10^5 timers a "
        "repetition repeats the whole cycle, each time on a fresh "
        "structure, until 10^5 timers have fired, and reports the sum.",
    .x_label = "pending timers",
    .nvariants = 3,
    .variants = variants,
    .sizes = {[SUITE_QUICK] = {1000, 10000, 100000, 1000000},
              [SUITE_FULL] = {1000, 10000, 100000, 1000000, 10000000},
              [SUITE_SMOKE] = {1000}},
    .rep_min = MIN_TIMERS,
    WL_METRICS(metrics),
    .prepare = expire_prepare,
    .run = expire_run,
    .release = expire_release,
};
