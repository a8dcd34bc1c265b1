/*
 * stall: the longest single advance call an event loop would see, with N
 * timers spread over an hour.
 *
 * The loop ticks every 1 ms of virtual time through the hour. At each tick
 * it calls the advance until no work is left at that time: once with the
 * whole advance (variant "whole": tw_advance() for the wheels), or, with
 * the sliced advance (variant "sliced": tw_advance_sliced(), slice_run
 * callbacks and slice_work units per call), as many times as that takes.
 * Every call is timed on the real clock (variant "sliced-cpu": the same
 * calls timed by the thread's CPU clock, which leaves out the time other
 * programs take the processor, a few ms at a time on a shared machine);
 * reported: the median, 99th and 99.99th percentile and the longest call,
 * and for the sliced variants the longest stretch of calls at one tick
 * (the sum of its calls' times), which is how much later than
 * its tick a timer may fire when the loop calls again at once, and the most
 * calls one tick needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "rng.h"
#include "scale.h"
#include "stop.h"
#include "workload.h"

#define MIN_DELAY_NS UINT64_C(1000000)       /* 1 ms */
#define MAX_DELAY_NS UINT64_C(3600000000000) /* 1 h */

/* Reads per call of the floor variant: a twelfth of what one sliced call
 * may touch (64 callbacks and 128 units, each a cold timer at worst). */
#define FLOOR_READS 16

static const char *const variants[] = {"whole", "sliced", "sliced-cpu",
                                       "floor-cpu"};

struct stall {
    uint64_t n;
    uint64_t *deadline;
    uint64_t run, work; /* the sliced advance's budgets */
    bool sliced;
    bool cpu;   /* time calls by the thread's CPU clock */
    bool floor; /* the machine's floor: reads, no wheel */
};

/* The calls of one repetition, in ns. */
struct calls {
    uint32_t *ns;
    size_t n, cap;
    uint64_t spread_max; /* longest stretch of calls at one tick, ns */
    uint64_t calls_max;  /* most calls at one tick */
    uint64_t fired;
};

static void *stall_prepare(const struct bench_params *p, unsigned variant,
                           uint64_t n)
{
    struct stall *s = calloc(1, sizeof(*s));
    struct rng r;

    if (!s || !(s->deadline = malloc(n * sizeof(*s->deadline)))) {
        fprintf(stderr, "twbench: stall: out of memory at n=%llu\n",
                (unsigned long long)n);
        exit(1);
    }
    s->n = n;
    s->run = p->slice_run;
    s->work = p->slice_work;
    s->sliced = variant == 1 || variant == 2;
    s->cpu = variant >= 2;
    s->floor = variant == 3;
    rng_init(&r, p->seed, "stall", n);
    for (uint64_t i = 0; i < n; i++)
        s->deadline[i] = rng_range(&r, MIN_DELAY_NS, MAX_DELAY_NS);
    return s;
}

static void record(struct calls *c, uint64_t ns)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1 << 22;
        uint32_t *p = realloc(c->ns, cap * sizeof(*p));

        if (!p) {
            fprintf(stderr, "twbench: stall: out of memory\n");
            exit(1);
        }
        c->ns = p;
        c->cap = cap;
    }
    c->ns[c->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* One tick's calls: one whole advance, or sliced ones until none is left.
 * Each call is timed alone: recording it (which may grow the array and
 * fault in its pages) happens between the clock readings, not inside. */
static void tick(const struct stall *s, const struct impl *im, void *ctx,
                 uint64_t now, struct calls *c)
{
    uint64_t (*now_ns)(void) = s->cpu ? clock_cpu_ns : clock_now_ns;
    uint64_t spent = 0, k = 0;
    bool more;

    do {
        uint64_t t0 = now_ns(), t1;

        more = false;
        if (s->sliced)
            c->fired += im->advance_sliced(ctx, now, s->run, s->work, &more);
        else
            c->fired += im->advance(ctx, now, UINT64_MAX);
        t1 = now_ns();
        record(c, t1 - t0);
        spent += t1 - t0;
        k++;
    } while (more);
    if (spent > c->spread_max && k > 1)
        c->spread_max = spent;
    if (k > c->calls_max)
        c->calls_max = k;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

static double pct(const struct calls *c, double p)
{
    size_t i = (size_t)(p * (double)(c->n - 1) + 0.5);

    return c->ns[i];
}

/* The loop through the hour over the implementation's timers. */
static void wheel_calls(const struct stall *s, const struct impl *im,
                        struct wl_result *out, struct calls *c)
{
    void *ctx = wl_create(im, s->n, 6, out);

    if (!ctx)
        return;
    for (uint64_t i = 0; i < s->n; i++)
        im->schedule(ctx, (uint32_t)i, s->deadline[i]);
    for (uint64_t now = MIN_DELAY_NS; now <= MAX_DELAY_NS;
         now += MIN_DELAY_NS) {
        tick(s, im, ctx, now, c);
        if (now % (1000 * MIN_DELAY_NS) == 0 &&
            stop_check((double)now / (double)MAX_DELAY_NS))
            break;
    }
    im->destroy(ctx);
    if (!stop_hit())
        wl_check_fired(out, 0, c->fired, s->n);
}

/* The floor: one call a tick of the hour (fewer below 10^6 timers), each
 * FLOOR_READS dependent reads along a random cycle through n nodes of
 * node_size bytes (Sattolo's shuffle: one cycle through them all). */
static void floor_calls(const struct stall *s, const struct impl *im,
                        struct calls *c)
{
    size_t stride = im->node_size / sizeof(uint32_t);
    uint64_t ticks = MAX_DELAY_NS / MIN_DELAY_NS, at = 0;
    uint64_t calls = s->n >= 1000000 ? ticks : ticks * s->n / 1000000;
    uint32_t *mem = calloc(s->n, stride * sizeof(uint32_t));
    struct rng r;

    if (!mem) {
        fprintf(stderr, "twbench: stall: out of memory at n=%llu\n",
                (unsigned long long)s->n);
        exit(1);
    }
    rng_init(&r, 1, "stall-floor", s->n);
    for (uint64_t i = 0; i < s->n; i++)
        mem[i * stride] = (uint32_t)i;
    for (uint64_t i = s->n - 1; i > 0; i--) {
        uint64_t j = rng_range(&r, 0, i - 1);
        uint32_t t = mem[i * stride];

        mem[i * stride] = mem[j * stride];
        mem[j * stride] = t;
    }
    for (uint64_t k = 0; k < calls && !stop_hit(); k++) {
        uint64_t t0 = clock_cpu_ns(), t1;

        for (unsigned i = 0; i < FLOOR_READS; i++)
            at = mem[at * stride];
        t1 = clock_cpu_ns();
        record(c, t1 - t0);
        if (k % 3600 == 0)
            stop_check((double)k / (double)calls);
    }
    c->fired = at; /* keeps the reads */
    free(mem);
}

static void stall_once(const struct stall *s, const struct impl *im,
                       struct wl_result *out, bool timed)
{
    struct calls c = {0};

    if (s->floor)
        floor_calls(s, im, &c);
    else
        wheel_calls(s, im, out, &c);
    if (!c.n) {
        free(c.ns);
        return;
    }
    if (!stop_hit())
        qsort(c.ns, c.n, sizeof(*c.ns), cmp_u32);
    if (!stop_hit() && timed) {
        wl_add(out, 0, c.ns[c.n - 1]);
        wl_add(out, 1, pct(&c, 0.9999));
        wl_add(out, 2, pct(&c, 0.99));
        wl_add(out, 3, pct(&c, 0.5));
        if (s->sliced) {
            wl_add(out, 4, (double)c.spread_max / 1e3);
            wl_add(out, 5, (double)c.calls_max);
        }
    }
    free(c.ns);
}

static void stall_run(void *seq, const struct impl *im, struct wl_plan *plan,
                      struct wl_result *out)
{
    struct stall *s = seq;

    if (!scale_covers(im)) {
        wl_note_all(out, &wl_stall, "not run: %s", SCALE_IMPLS_NOTE);
        return;
    }
    if (strcmp(im->name, "hashed") == 0) {
        /* Its advance walks a bucket of n / 512 timers at every tick, so
         * every call is long (the scale workload's ns_per_fire shows it). */
        wl_note_all(out, &wl_stall,
                    "not run: each tick walks a bucket of N/512 timers, "
                    "3.6 million buckets an hour (see scale, ns_per_fire)");
        return;
    }
    if (s->floor && strcmp(im->name, "hier") != 0) {
        wl_note_all(out, &wl_stall,
                    "not run: the machine's floor, once, in hier's row");
        return;
    }
    if (s->sliced && !im->advance_sliced) {
        wl_note_all(out, &wl_stall,
                    "not run: no sliced advance (its whole advance is the "
                    "other variant)");
        return;
    }
    if (!scale_fits(im, s->n, 8, out, &wl_stall))
        return;
    if (s->floor) {
        wl_note(out, 0,
                "no wheel: %d dependent reads at random in N "
                "timers' bytes per call",
                FLOOR_READS);
        wl_note(out, 4, "only for the sliced advance");
        wl_note(out, 5, "only for the sliced advance");
    } else if (!s->sliced) {
        wl_note(out, 4, "only for the sliced advance");
        wl_note(out, 5, "only for the sliced advance");
    } else {
        wl_note(out, 0, "%llu callbacks and %llu units per call",
                (unsigned long long)s->run, (unsigned long long)s->work);
    }
    if (plan->warmup)
        stall_once(s, im, out, false);
    for (unsigned r = 0; wl_more(plan, r); r++)
        stall_once(s, im, out, true);
}

static void stall_release(void *seq)
{
    struct stall *s = seq;

    free(s->deadline);
    free(s);
}

static const struct wl_metric metrics[] = {
    {"max_ns", "ns", false, "Advance call, longest, ns per call"},
    {"p9999_ns", "ns", false, "Advance call, 99.99th percentile, ns per call"},
    {"p99_ns", "ns", false, "Advance call, 99th percentile, ns per call"},
    {"p50_ns", "ns", false, "Advance call, median, ns per call"},
    {"spread_max_us", "us", false,
     "Calls needed at one tick, longest stretch, us"},
    {"calls_max", "calls", false, "Calls needed at one tick, most, calls"},
};

const struct workload wl_stall = {
    .name = "stall",
    .about =
        "What an event loop's worst iteration costs (make bench-full, make "
        "bench-scale). N timers are scheduled with delays uniform from 1 ms "
        "to 1 h; then the loop ticks every 1 ms of virtual time through the "
        "hour and, at each tick, calls the advance until nothing is left to "
        "do at that time: one whole advance (variant whole), or the wheels' "
        "sliced advance, tw_advance_sliced(), with 64 callbacks and 128 "
        "units of work per call, called again while work is left (variant "
        "sliced). Every call is timed on the real clock: median, 99th, "
        "99.99th percentile and longest call; variant sliced-cpu times the "
        "same calls by the thread's CPU clock, which leaves out the time "
        "other programs hold the processor; variant floor-cpu (hier's row) "
        "is the machine's own figure, no wheel: calls of 16 dependent "
        "reads at random in as many bytes as the N timers, timed alike. "
        "For the sliced advance also "
        "the longest stretch of calls one tick needed (the most a timer "
        "fires after its tick when the loop calls again at once, beyond the "
        "tick itself) and the most calls.",
    .x_label = "pending timers",
    .nvariants = sizeof(variants) / sizeof(variants[0]),
    .variants = variants,
    .sizes = {[SUITE_FULL] = {1000000, 10000000}, [SUITE_SMOKE] = {1000}},
    WL_METRICS(metrics),
    .prepare = stall_prepare,
    .run = stall_run,
    .release = stall_release,
};
