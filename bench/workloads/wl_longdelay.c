/*
 * longdelay: N timers due between 1 h and 30 days, then one simulated hour
 * of ticking. The hashed wheel visits every timer once per revolution of
 * its 512 slots; the hierarchical wheel leaves them alone.
 */
#include <stdlib.h>

#include "clock.h"
#include "ops.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

#define HOUR_NS UINT64_C(3600000000000)
#define MAX_DELAY_NS (720 * HOUR_NS) /* 30 days */

struct longdelay {
    struct ops ops; /* n schedules */
    uint64_t n;
    uint64_t span_ns; /* simulated time (1 h unless a suite shortens it) */
};

static void *longdelay_prepare(const struct bench_params *p, unsigned variant,
                               uint64_t n)
{
    struct longdelay *d = calloc(1, sizeof(*d));
    struct rng r;

    (void)variant;
    if (!d)
        return NULL;
    rng_init(&r, p->seed, "longdelay", n);
    d->n = n;
    d->span_ns = p->longdelay_span_ns;
    for (uint64_t i = 0; i < n; i++)
        ops_push(&d->ops, OP_SCHEDULE, (uint32_t)i,
                 rng_range(&r, HOUR_NS + BENCH_TICK_NS, MAX_DELAY_NS));
    return d;
}

/* Advance once per tick across the span. */
static void tick_through(const struct impl *im, void *ctx, uint64_t span)
{
    unsigned until_check = STOP_EVERY;

    for (uint64_t t = BENCH_TICK_NS; t <= span; t += BENCH_TICK_NS) {
        if (--until_check == 0) {
            until_check = STOP_EVERY;
            if (stop_check((double)t / (double)span))
                return;
        }
        im->advance(ctx, t, UINT64_MAX);
    }
}

/* Advance only when the implementation says work is due, as an event loop
 * sleeping until the next deadline would. */
static void sleep_through(const struct impl *im, void *ctx, uint64_t span)
{
    uint64_t now = 0, next;

    while ((next = im->next_deadline(ctx)) < span) {
        if (stop_check((double)now / (double)span))
            return;
        now = next > now ? next : now + BENCH_TICK_NS;
        im->advance(ctx, now, UINT64_MAX);
    }
    im->advance(ctx, span, UINT64_MAX);
}

/* CPU seconds per simulated hour of one way of driving the clock across
 * span, and in *wall_s the wall time of the driving alone; -1 when it could
 * not run (noted) or was stopped. */
static double drive(struct longdelay *d, const struct impl *im,
                    void (*how)(const struct impl *, void *, uint64_t),
                    uint64_t span, struct wl_result *out, double *wall_s)
{
    void *ctx = wl_create(im, d->n, 3, out);

    if (!ctx)
        return -1;
    ops_run(im, ctx, &d->ops, 0, d->n);
    uint64_t w0 = clock_now_ns(), c0 = clock_cpu_ns();
    how(im, ctx, span);
    uint64_t c1 = clock_cpu_ns();

    *wall_s = (double)(clock_now_ns() - w0) / 1e9;

    im->destroy(ctx);
    if (stop_hit())
        return -1;
    return (double)(c1 - c0) / 1e9 * (double)HOUR_NS / (double)span;
}

/* The span one repetition simulates: the suite's, or whole multiples of a
 * probe of a sixtieth of it when that probe (untimed, it is the warm-up)
 * shows that the whole span would not fit in the room below; *whole_s is
 * then that estimate, else 0. */
static uint64_t fit_span(struct longdelay *d, const struct impl *im,
                         const struct wl_plan *plan, struct wl_result *out,
                         double *whole_s)
{
    uint64_t probe = d->span_ns / 60 / BENCH_TICK_NS * BENCH_TICK_NS, k;
    /* Half the budget for a repetition: ticking, and driving by next
     * deadline (which can cost as much) when there is a next deadline. */
    double room = plan->budget_s / 2 / (im->next_deadline ? 2 : 1);
    double wall, whole;

    *whole_s = 0;
    if (probe == 0 || drive(d, im, tick_through, probe, out, &wall) < 0)
        return d->span_ns;
    whole = wall * (double)d->span_ns / (double)probe;
    if (whole <= room)
        return d->span_ns;
    *whole_s = whole;
    k = (uint64_t)(room / wall);
    return (k ? k : 1) * probe;
}

static void longdelay_run(void *seq, const struct impl *im,
                          struct wl_plan *plan, struct wl_result *out)
{
    struct longdelay *d = seq;
    double whole_s = 0;
    /* The span is the cell's, found by its first call (keep). */
    uint64_t span = plan->keep
                        ? plan->keep
                        : (plan->keep = fit_span(d, im, plan, out, &whole_s));

    for (unsigned r = 0; !stop_hit() && wl_more(plan, r); r++) {
        double wall;
        double s = drive(d, im, tick_through, span, out, &wall);

        if (s < 0)
            return;
        wl_add(out, 0, s);
        wl_add(out, 1, s * 1e9 / (double)d->n);
        /* Driving by next deadline costs at most as much as ticking; the
         * hard stop bounds it all the same. */
        if (im->next_deadline &&
            (s = drive(d, im, sleep_through, span, out, &wall)) >= 0)
            wl_add(out, 2, s);
    }
    if (!im->next_deadline)
        wl_note(out, 2, "not run: no public call tells the next timeout");
    for (unsigned m = 0; m < 3 && span != HOUR_NS && plan->round == 0; m++)
        if (out->nrep[m] && whole_s > 0)
            wl_note(out, m,
                    "simulated %.3g s, scaled to one hour: the whole %.3g s "
                    "would take about %.3g s of wall time, too much of the "
                    "%g s budget",
                    (double)span / 1e9, (double)d->span_ns / 1e9, whole_s,
                    plan->budget_s);
        else if (out->nrep[m])
            wl_note(out, m, "simulated %.3g s, scaled to one hour",
                    (double)span / 1e9);
}

static void longdelay_release(void *seq)
{
    struct longdelay *d = seq;

    ops_free(&d->ops);
    free(d);
}

static const struct wl_metric metrics[] = {
    {"cpu_s", "s", false, "Ticking through one hour, CPU s per simulated hour"},
    {"cpu_ns_per_timer", "ns", false,
     "Ticking through one hour, CPU ns per timer"},
    {"cpu_s_nextdl", "s", false,
     "Sleeping to each next deadline, CPU s per simulated hour"},
};

const struct workload wl_longdelay = {
    .name = "longdelay",
    .about =
        "N timers are scheduled with delays uniform from 1 h to 30 days "
        "(leases, session expiry, retention), then the clock runs for one "
        "simulated hour, advanced once per 1 ms tick (3.6 x 10^6 calls), as "
        "a loop driven by a 1 ms timer would. Nothing is due in that hour, "
        "so this is pure bookkeeping: the hashed wheel's weak spot, since it "
        "walks one of its 512 buckets every tick and so visits every timer "
        "once per 512 ms. Reported: CPU seconds per simulated hour "
        "(cpu_s), the same per timer (cpu_ns_per_timer), and cpu_s_nextdl: "
        "the same hour driven as an event loop that sleeps until the "
        "structure's next deadline (tw_next_deadline, the heap's top, "
        "uv_backend_timeout) instead of ticking.",
    .x_label = "pending timers",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {100000},
              [SUITE_FULL] = {10000, 100000, 1000000},
              [SUITE_SMOKE] = {1000}},
    WL_METRICS(metrics),
    .prepare = longdelay_prepare,
    .run = longdelay_run,
    .release = longdelay_release,
};
