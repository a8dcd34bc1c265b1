/*
 * purgatory: a model of Kafka's purgatory performance test on the virtual
 * clock. Requests arrive as a Poisson process; each completes after a
 * log-normal latency and cancels its timeout, unless the timeout fires
 * first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "ops.h"
#include "rng.h"
#include "stop.h"
#include "workload.h"

/* The 75th percentile of a standard normal: fixes sigma from p75 / p50. */
#define Z75 0.6744897501960817
/* An expired request's timer slot is reused only this long after its
 * timeout, when an advance has certainly fired it. */
#define SLOT_GRACE_NS (2 * BENCH_TICK_NS)

enum { EV_DONE, EV_ARRIVE }; /* at equal times, slots free up first */

struct event {
    uint64_t time;
    uint32_t req;
    uint32_t kind; /* EV_DONE: completion (cancel) or slot release */
};

struct purgatory {
    struct ops ops;
    uint64_t requests;
    uint64_t slots;    /* timers needed: the most requests waiting at once */
    uint64_t expected; /* timeouts that fire */
};

static int by_time(const void *a, const void *b)
{
    const struct event *x = a, *y = b;

    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

/* Arrivals and completions of every request; returns the events, sorted. */
static struct event *make_events(const struct bench_params *p, uint64_t n,
                                 struct purgatory *g, uint8_t *cancels)
{
    struct event *ev = malloc(2 * n * sizeof(*ev));
    double mu = log(p->purg_p50_ms * 1e6);
    double sigma = log(p->purg_p75_ms / p->purg_p50_ms) / Z75;
    double t = 0, timeout = p->purg_timeout_ms * 1e6;
    struct rng r;

    if (!ev)
        return NULL;
    rng_init(&r, p->seed, "purgatory", n);
    for (uint64_t i = 0; i < n; i++) {
        double latency = exp(mu + sigma * rng_normal(&r));

        t += rng_exp(&r, 1e9 / p->purg_rate);
        cancels[i] = latency < timeout;
        g->expected += !cancels[i];
        ev[2 * i] = (struct event){(uint64_t)t, (uint32_t)i, EV_ARRIVE};
        ev[2 * i + 1] =
            (struct event){(uint64_t)(t + (cancels[i] ? latency : timeout)) +
                               (cancels[i] ? 0 : SLOT_GRACE_NS),
                           (uint32_t)i, EV_DONE};
    }
    qsort(ev, 2 * n, sizeof(*ev), by_time);
    return ev;
}

/* Turn the events into operations: a timer slot per waiting request, an
 * advance whenever an event falls in a later tick. */
static void make_ops(struct purgatory *g, const struct bench_params *p,
                     const struct event *ev, const uint8_t *cancels,
                     uint32_t *slot_of, uint32_t *free_slots)
{
    uint64_t tick = 0, nfree = 0,
             timeout = (uint64_t)(p->purg_timeout_ms * 1e6);

    for (uint64_t k = 0; k < 2 * g->requests; k++) {
        const struct event *e = &ev[k];

        if (e->time / BENCH_TICK_NS > tick) {
            tick = e->time / BENCH_TICK_NS;
            ops_push(&g->ops, OP_ADVANCE, 0, tick * BENCH_TICK_NS);
        }
        if (e->kind == EV_ARRIVE) {
            slot_of[e->req] =
                nfree ? free_slots[--nfree] : (uint32_t)g->slots++;
            ops_push(&g->ops, OP_SCHEDULE, slot_of[e->req], e->time + timeout);
            continue;
        }
        if (cancels[e->req])
            ops_push(&g->ops, OP_CANCEL, slot_of[e->req], 0);
        free_slots[nfree++] = slot_of[e->req];
    }
    ops_push(&g->ops, OP_ADVANCE, 0, (tick + 1) * BENCH_TICK_NS);
}

static void *purgatory_prepare(const struct bench_params *p, unsigned variant,
                               uint64_t n)
{
    struct purgatory *g = calloc(1, sizeof(*g));
    uint8_t *cancels = malloc(n);
    uint32_t *slot_of = malloc(n * sizeof(*slot_of));
    uint32_t *free_slots = malloc(n * sizeof(*free_slots));
    struct event *ev = g && cancels ? make_events(p, n, g, cancels) : NULL;

    (void)variant;
    if (!ev || !slot_of || !free_slots) {
        fprintf(stderr, "twbench: purgatory: out of memory\n");
        exit(1);
    }
    g->requests = n;
    make_ops(g, p, ev, cancels, slot_of, free_slots);
    free(ev);
    free(cancels);
    free(slot_of);
    free(free_slots);
    return g;
}

static void purgatory_once(struct purgatory *g, const struct impl *im,
                           struct wl_result *out, bool timed)
{
    void *ctx = wl_create(im, g->slots, 2, out);

    if (!ctx)
        return;
    uint64_t t0 = clock_now_ns();
    uint64_t fired = ops_run(im, ctx, &g->ops, 0, g->ops.n);
    uint64_t t1 = clock_now_ns();

    im->destroy(ctx);
    if (stop_hit())
        return;
    wl_check_fired(out, 0, fired, g->expected);
    if (!timed)
        return;
    wl_add(out, 0, (double)g->requests * 1e9 / (double)(t1 - t0));
    wl_add(out, 1, (double)(t1 - t0) / (double)g->requests);
}

static void purgatory_run(void *seq, const struct impl *im,
                          struct wl_plan *plan, struct wl_result *out)
{
    if (plan->warmup)
        purgatory_once(seq, im, out, false);
    for (unsigned r = 0; wl_more(plan, r); r++)
        purgatory_once(seq, im, out, true);
}

static void purgatory_release(void *seq)
{
    struct purgatory *g = seq;

    ops_free(&g->ops);
    free(g);
}

static const struct wl_metric metrics[] = {
    {"requests_per_s", "requests/s", true,
     "Purgatory throughput, requests per second"},
    {"ns_per_request", "ns", false, "Purgatory, ns per request"},
};

const struct workload wl_purgatory = {
    .name = "purgatory",
    .about =
        "A model of Kafka's purgatory performance test. Requests arrive as a "
        "Poisson process (100,000 per virtual second by default); each one "
        "schedules a timeout (200 ms) and completes after a log-normal "
        "latency fixed by its median and 75th percentile (20 ms and 60 ms); "
        "a request that completes in time cancels its timeout, the others "
        "(about 8%) expire. The clock advances to each event's tick. The "
        "run goes as fast as the implementation allows on the virtual "
        "clock; reported are the requests handled per second of real time "
        "and the ns per request (one schedule, and one cancel or one "
        "expiry, plus a share of the ticking).",
    .x_label = "requests",
    .nvariants = 1,
    .sizes = {[SUITE_QUICK] = {1000000},
              [SUITE_FULL] = {1000000, 10000000},
              [SUITE_SMOKE] = {10000}},
    WL_METRICS(metrics),
    .prepare = purgatory_prepare,
    .run = purgatory_run,
    .release = purgatory_release,
};
