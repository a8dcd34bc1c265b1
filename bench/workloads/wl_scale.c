/*
 * scale: the cost of each operation from 10^3 to 10^8 pending timers.
 *
 * One repetition creates the structure, schedules N timers (delays uniform
 * from 1 ms to 1 h), then, the clock standing still, cancels timers and
 * schedules them back, makes cancel+schedule pairs and re-arms (each
 * scale_ops of them on timers picked at random), and finally advances in
 * 1 s steps until every timer has fired. Each phase is timed apart, and the
 * bytes allocated by creating and filling the structure are counted. Only
 * the implementations that can hold 10^8 timers are run (hier, hashed,
 * heap, libev); a size that would not fit in the memory available, or in
 * the cell's budget, is noted as not run with the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "memstat.h"
#include "rng.h"
#include "scale.h"
#include "stop.h"
#include "workload.h"

#define MIN_DELAY_NS UINT64_C(1000000)       /* 1 ms */
#define MAX_DELAY_NS UINT64_C(3600000000000) /* 1 h */
#define STEP_NS UINT64_C(1000000000)         /* the expiry's 1 s steps */

struct scale {
    uint64_t n, ops;
    uint64_t *deadline; /* n: the fill */
    uint32_t *pick;     /* ops: timers picked at random */
    uint64_t *later;    /* ops: their new deadlines */
    uint32_t *victim;   /* ncancel distinct timers, scattered */
    uint32_t ncancel;   /* distinct timers cancelled per round */
};

static void *scale_prepare(const struct bench_params *p, unsigned variant,
                           uint64_t n)
{
    struct scale *s = calloc(1, sizeof(*s));
    struct rng r;

    (void)variant;
    if (!s)
        return NULL;
    s->n = n;
    s->ops = p->scale_ops;
    s->ncancel = (uint32_t)(n < s->ops ? n : s->ops);
    s->deadline = malloc(n * sizeof(*s->deadline));
    s->pick = malloc(s->ops * sizeof(*s->pick));
    s->later = malloc(s->ops * sizeof(*s->later));
    s->victim = malloc(s->ncancel * sizeof(*s->victim));
    if (!s->deadline || !s->pick || !s->later || !s->victim) {
        fprintf(stderr, "twbench: scale: out of memory at n=%llu\n",
                (unsigned long long)n);
        exit(1);
    }
    rng_init(&r, p->seed, "scale", n);
    for (uint64_t i = 0; i < n; i++)
        s->deadline[i] = rng_range(&r, MIN_DELAY_NS, MAX_DELAY_NS);
    for (uint64_t k = 0; k < s->ops; k++) {
        s->pick[k] = (uint32_t)rng_range(&r, 0, n - 1);
        s->later[k] = rng_range(&r, MIN_DELAY_NS, MAX_DELAY_NS);
    }
    scale_distinct(s->victim, s->ncancel, n);
    return s;
}

/* Cancel ncancel distinct timers and schedule them back, in rounds, until
 * ops cancels were made; returns the ns spent in the cancels alone. */
static uint64_t cancels(const struct scale *s, const struct impl *im, void *ctx)
{
    uint64_t spent = 0, done = 0;

    while (done < s->ops && !stop_hit()) {
        uint64_t t0 = clock_now_ns();

        for (uint32_t k = 0; k < s->ncancel; k++)
            im->cancel(ctx, s->victim[k]);
        spent += clock_now_ns() - t0;
        for (uint32_t k = 0; k < s->ncancel; k++)
            im->schedule(ctx, s->victim[k], s->later[k]);
        done += s->ncancel;
        stop_check(0.2 + 0.1 * (double)done / (double)s->ops);
    }
    return spent * s->ops / (done ? done : 1);
}

static uint64_t pairs(const struct scale *s, const struct impl *im, void *ctx)
{
    uint64_t t0 = clock_now_ns();

    for (uint64_t k = 0; k < s->ops; k++) {
        im->cancel(ctx, s->pick[k]);
        im->schedule(ctx, s->pick[k], s->later[s->ops - 1 - k]);
    }
    return clock_now_ns() - t0;
}

static uint64_t rearms(const struct scale *s, const struct impl *im, void *ctx)
{
    uint64_t t0 = clock_now_ns();

    for (uint64_t k = 0; k < s->ops; k++)
        im->rearm(ctx, s->pick[s->ops - 1 - k], s->later[k]);
    return clock_now_ns() - t0;
}

/* Schedule all n; returns the ns spent. */
static uint64_t fill(const struct scale *s, const struct impl *im, void *ctx)
{
    uint64_t t0 = clock_now_ns();

    for (uint64_t i = 0; i < s->n; i++) {
        im->schedule(ctx, (uint32_t)i, s->deadline[i]);
        if ((i & 0xfffff) == 0 && stop_check(0.2 * (double)i / (double)s->n))
            break;
    }
    return clock_now_ns() - t0;
}

/* Advance in 1 s steps until past the last deadline; *fired counts. */
static uint64_t expire(const struct impl *im, void *ctx, uint64_t *fired)
{
    uint64_t t0 = clock_now_ns();

    for (uint64_t now = STEP_NS; now <= MAX_DELAY_NS + STEP_NS;
         now += STEP_NS) {
        *fired += im->advance(ctx, now, UINT64_MAX);
        if (stop_check(0.4 + 0.6 * (double)now / (double)MAX_DELAY_NS))
            break;
    }
    return clock_now_ns() - t0;
}

/* One repetition: every phase on a new structure. */
static void scale_once(const struct scale *s, const struct impl *im,
                       struct wl_result *out, bool timed)
{
    uint64_t before = 0, after = 0, t_fill, t_cancel, t_pair, t_rearm, t_fire;
    uint64_t fired = 0, array = s->n * im->node_size;
    bool mem = memstat_allocated(&before);
    void *ctx = wl_create(im, s->n, 6, out);

    if (!ctx)
        return;
    t_fill = fill(s, im, ctx);
    mem = mem && memstat_allocated(&after);
    t_cancel = cancels(s, im, ctx);
    t_pair = pairs(s, im, ctx);
    t_rearm = rearms(s, im, ctx);
    t_fire = expire(im, ctx, &fired);
    im->destroy(ctx);
    if (stop_hit())
        return;
    wl_check_fired(out, 4, fired, s->n);
    if (!timed)
        return;
    wl_add(out, 0, (double)t_fill / (double)s->n);
    wl_add(out, 1, (double)t_cancel / (double)s->ops);
    wl_add(out, 2, (double)t_pair / (double)s->ops);
    wl_add(out, 3, (double)t_rearm / (double)s->ops);
    wl_add(out, 4, (double)t_fire / (double)s->n);
    /* As the memory workload: the node array is the embedder's, counted
     * at its exact size, not jemalloc's size class. */
    if (mem)
        wl_add(out, 5,
               (double)(after - before - (memstat_usable(array) - array)) /
                   (double)s->n);
}

static void scale_run(void *seq, const struct impl *im, struct wl_plan *plan,
                      struct wl_result *out)
{
    struct scale *s = seq;
    const struct workload *wl = &wl_scale;

    if (!scale_covers(im)) {
        wl_note_all(out, wl, "not run: %s", SCALE_IMPLS_NOTE);
        return;
    }
    if (!scale_fits(im, s->n, 16, out, wl))
        return;
    if (plan->warmup)
        scale_once(s, im, out, false);
    for (unsigned r = 0; wl_more(plan, r); r++)
        scale_once(s, im, out, true);
}

static void scale_release(void *seq)
{
    struct scale *s = seq;

    free(s->deadline);
    free(s->pick);
    free(s->later);
    free(s->victim);
    free(s);
}

static const struct wl_metric metrics[] = {
    {"ns_per_schedule", "ns", false, "Schedule into N pending, ns per timer"},
    {"ns_per_cancel", "ns", false, "Cancel among N pending, ns per cancel"},
    {"ns_per_pair", "ns", false,
     "Cancel + schedule among N pending, ns per pair"},
    {"ns_per_rearm", "ns", false, "Re-arm among N pending, ns per re-arm"},
    {"ns_per_fire", "ns", false, "Expiry of N over 1 h, ns per timer"},
    {"bytes_per_timer", "bytes", false, "Memory, bytes per pending timer"},
};

const struct workload wl_scale = {
    .name = "scale",
    .about =
        "The cost curve from 10^3 to 10^8 pending timers (make bench-full, "
        "make bench-scale). N timers are scheduled with delays uniform from "
        "1 ms to 1 h; then, the clock standing still, 10^6 cancels (of "
        "distinct timers, each scheduled back untimed), 10^6 cancel + "
        "schedule pairs and 10^6 re-arms of timers picked at random; then "
        "the clock advances in 1 s steps until all N have fired. Each phase "
        "is timed apart: ns per schedule, cancel, pair, re-arm and fired "
        "timer, and the bytes allocated for the structure and the nodes, "
        "per timer. Run on hier, hashed, heap and libev only; a size that "
        "does not fit in the memory available or the cell's budget is noted "
        "as not run.",
    .x_label = "pending timers",
    .nvariants = 1,
    .sizes = {[SUITE_FULL] = {1000, 10000, 100000, 1000000, 10000000,
                              100000000},
              [SUITE_SMOKE] = {1000}},
    .log_values = true,
    .plot_each_metric = true,
    WL_METRICS(metrics),
    .prepare = scale_prepare,
    .run = scale_run,
    .release = scale_release,
};
