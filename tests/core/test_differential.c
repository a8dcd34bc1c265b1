/*
 * Randomised differential tests: the wheel against the reference model
 * (tests/model.c), for both designs and several layouts. A harness drives a
 * real wheel and the model through the same random operations and compares
 * them after every step. Together the tests run at least 10^6 random
 * operations per `make test` (TW_OPS changes the count per test, TW_SEED
 * the seed, which each test prints).
 *
 * For each timer the harness keeps whether it is pending, its deadline and
 * due tick (from the model) and the advance call it was scheduled in. Every
 * callback checks that its timer was pending, that it is not early, and
 * that it runs in order; after each complete advance nothing due may be left
 * behind; tw_check() and tw_next_deadline() are checked after every step.
 * Advances are unbounded, bounded in callbacks (tw_advance_bounded()), or
 * sliced (tw_advance_sliced() with a budget of a few units, so that a
 * coarse slot's demotion is spread over calls with random operations
 * between them, and a later unbounded advance finishes what one left).
 *
 * The owned-fields runs do the same through an embedder that owns its
 * timers' fields (timewheel/core.h): the wheel has an expiry function, the
 * timers have no callback, and the deadline of every timer that stops
 * being pending is written over with garbage, as the service keeps its
 * queue links there.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "wheel.h" /* only to count the demotions left for a next call */

#define OPS 180000
/* Timers per harness: enough to meet each other in slots and callbacks. */
#define NTIMERS 256

struct model_timer {
    struct tw_timer t;
    struct harness *h;
    size_t id;
    struct model_state m;
};

struct harness {
    const char *name;
    struct tw_wheel *w;
    struct tw_config cfg;
    struct model_timer *timers;
    size_t ntimers;
    size_t pending;
    uint64_t rng;
    long call; /* index of the advance running or last run */
    bool advancing;
    bool quiet;      /* callbacks do nothing (final drain) */
    bool owned;      /* expiry function, no callbacks, deadlines scribbled */
    uint64_t target; /* due tick reached by the running advance */
    uint64_t prev_target;
    uint64_t last_key; /* order key of the last timer fired in this call */
    uint64_t max_step; /* largest advance step, in ticks */
    uint64_t fired, ops;
    uint64_t spread; /* sliced calls that left a demotion for the next */
    char why[256];
};

/* The seed for this run: TW_SEED from the environment, or a fixed one;
 * printed so that a failure can be replayed. */
static uint64_t test_seed(const char *test)
{
    const char *env = getenv("TW_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : UINT64_C(20261122);

    fprintf(stderr, "%s: seed %" PRIu64 " (rerun with TW_SEED=%" PRIu64 ")\n",
            test, seed, seed);
    return seed;
}

/* Number of random operations per test: TW_OPS or `dflt`. */
static uint64_t test_ops(uint64_t dflt)
{
    const char *env = getenv("TW_OPS");
    return env ? strtoull(env, NULL, 0) : dflt;
}

/* splitmix64: small, fast, and good enough to drive a test. */
static uint64_t rnd(struct harness *h)
{
    uint64_t z = (h->rng += UINT64_C(0x9E3779B97F4A7C15));

    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t below(struct harness *h, uint64_t n)
{
    return n ? rnd(h) % n : 0;
}

/* A deadline from every region that matters: the past, now, the next few
 * ticks, exact tick boundaries and one ns either side, each level's range,
 * the far future and the very end of time. */
static uint64_t random_deadline(struct harness *h)
{
    uint64_t now = tw_now(h->w), tick = h->cfg.tick_ns;
    uint64_t b;

    switch (below(h, 12)) {
    case 0:
        return now - below(h, now < 5 * tick ? now + 1 : 5 * tick);
    case 1:
        return now;
    case 2:
    case 3:
        return sat_add(now, below(h, 3 * tick));
    case 4:
        b = model_boundary(&h->cfg, model_target(&h->cfg, now) + below(h, 5));
        return sat_add(b, below(h, 3)) - (b > 0 ? below(h, 2) : 0);
    case 5:
    case 6:
        return sat_add(now, sat_mul(tick, below(h, 4000)));
    case 7:
        return sat_add(now, sat_mul(tick, below(h, 8000000)));
    case 8:
        return sat_add(now, sat_mul(tick, below(h, UINT64_C(1) << 36)));
    case 9:
        return rnd(h);
    case 10:
        return UINT64_MAX - below(h, 2 * tick);
    default:
        return sat_add(now, below(h, tick * 70));
    }
}

static void model_schedule(struct harness *h, struct model_timer *mt,
                           uint64_t deadline, bool rearm)
{
    int rc = rearm ? tw_rearm(h->w, &mt->t, deadline)
                   : tw_schedule(h->w, &mt->t, deadline);

    cr_assert_eq(rc, model_expect(&mt->m, rearm), "%s: %s of a%s timer: %d",
                 h->name, rearm ? "rearm" : "schedule",
                 mt->m.pending ? " pending" : "n idle", rc);
    if (rc >= 0)
        h->pending += model_scheduled(&mt->m, &h->cfg, deadline,
                                      h->advancing ? h->call : -1);
}

/* A timer has stopped being pending: an owner of its fields may write
 * over its deadline. */
static void left_wheel(struct harness *h, struct model_timer *mt)
{
    if (h->owned)
        mt->t.deadline = rnd(h);
}

static void model_cancel(struct harness *h, struct model_timer *mt)
{
    int rc = tw_cancel(h->w, &mt->t), want = model_cancelled(&mt->m);

    cr_assert_eq(rc, want, "%s: cancel returned %d", h->name, rc);
    h->pending -= (size_t)want;
    if (rc == 1)
        left_wheel(h, mt);
}

static struct model_timer *any_timer(struct harness *h)
{
    return &h->timers[below(h, h->ntimers)];
}

/* What a firing timer's callback does to the wheel, chosen at random. */
static void callback_action(struct harness *h, struct model_timer *mt)
{
    struct model_timer *other = any_timer(h);

    switch (below(h, 10)) {
    case 0:
    case 1:
        model_schedule(h, mt, random_deadline(h), below(h, 2));
        break;
    case 2:
        model_cancel(h, other);
        break;
    case 3:
        model_schedule(h, other, random_deadline(h), true);
        break;
    case 4:
        model_schedule(h, mt, tw_now(h->w), false);
        break;
    case 5:
        cr_assert_eq(tw_advance(h->w, tw_now(h->w)), -EBUSY);
        cr_assert_eq(tw_destroy(h->w), -EDEADLK);
        break;
    default:
        break;
    }
}

static struct model_timer *of_timer(struct tw_timer *t)
{
    return TW_CONTAINER_OF(t, struct model_timer, t);
}

static void fire(struct tw_timer *t, struct model_timer *mt)
{
    struct harness *h = mt->h;
    uint64_t key = mt->m.due > h->prev_target ? mt->m.due : h->prev_target;

    cr_assert(t == &mt->t && h->advancing, "%s: callback outside advance",
              h->name);
    cr_assert(mt->m.pending, "%s: timer %zu fired but was not pending", h->name,
              mt->id);
    cr_assert(!tw_timer_pending(t), "%s: timer pending in its callback",
              h->name);
    cr_assert(mt->m.sched_call != h->call,
              "%s: timer %zu fired in the advance that scheduled it", h->name,
              mt->id);
    cr_assert(mt->m.due <= h->target,
              "%s: timer %zu early: due tick %" PRIu64 ", reached %" PRIu64,
              h->name, mt->id, mt->m.due, h->target);
    cr_assert(key >= h->last_key,
              "%s: timer %zu out of order: key %" PRIu64 " after %" PRIu64,
              h->name, mt->id, key, h->last_key);
    h->last_key = key;
    mt->m.pending = false;
    h->pending--;
    h->fired++;
    left_wheel(h, mt);
    if (!h->quiet)
        callback_action(h, mt);
}

static void on_fire(struct tw_timer *t, void *arg)
{
    cr_assert_eq(arg, of_timer(t));
    fire(t, arg);
}

/* The expiry function of an owned-fields harness. */
static void on_expire(struct tw_timer *t, void *ctx)
{
    struct model_timer *mt = of_timer(t);

    cr_assert_eq(ctx, mt->h, "expiry function with another wheel's ctx");
    fire(t, mt);
}

static void harness_init(struct harness *h, const char *name,
                         const struct tw_config *cfg, size_t ntimers,
                         uint64_t max_step, bool owned)
{
    int err = 1;

    memset(h, 0, sizeof(*h));
    h->name = name;
    h->cfg = *cfg;
    h->w = tw_create(cfg, &err);
    cr_assert(h->w && err == 0, "%s: create failed: %d", name, err);
    h->timers = calloc(ntimers, sizeof(*h->timers));
    cr_assert(h->timers);
    h->ntimers = ntimers;
    for (size_t i = 0; i < ntimers; i++) {
        h->timers[i].h = h;
        h->timers[i].id = i;
        h->timers[i].m.sched_call = -1;
        if (owned)
            tw_timer_init(&h->timers[i].t, NULL, NULL);
        else
            tw_timer_init(&h->timers[i].t, on_fire, &h->timers[i]);
    }
    h->owned = owned;
    if (owned)
        cr_assert_eq(tw_set_expiry(h->w, on_expire, h), 0);
    h->rng = test_seed(name);
    h->max_step = max_step;
    h->call = -1;
}

static void harness_fini(struct harness *h)
{
    cr_assert_eq(tw_destroy(h->w), 0);
    for (size_t i = 0; i < h->ntimers; i++)
        cr_assert(!tw_timer_pending(&h->timers[i].t),
                  "%s: timer still pending after destroy", h->name);
    free(h->timers);
}

/* After a complete advance, only timers scheduled during it may be due. */
static void check_none_left(struct harness *h)
{
    for (size_t i = 0; i < h->ntimers; i++) {
        struct model_timer *mt = &h->timers[i];

        cr_assert(!mt->m.pending || mt->m.due > h->target ||
                      mt->m.sched_call == h->call,
                  "%s: timer %zu late: due tick %" PRIu64 " <= %" PRIu64,
                  h->name, mt->id, mt->m.due, h->target);
    }
}

/* Advance to now: budget 0 is unbounded; work 0 is tw_advance_bounded()
 * (or tw_advance()), else tw_advance_sliced() with budget callbacks and
 * work units (which may leave a demotion, or deferred timers, for the next
 * call: then the advance is complete only once tw_next_deadline() says no
 * work is left at now). */
static void do_advance(struct harness *h, uint64_t now, uint64_t budget,
                       uint64_t work)
{
    uint64_t fired = h->fired;
    int64_t ran;
    bool complete;

    h->call++;
    h->prev_target = h->target;
    h->target = model_target(&h->cfg, now);
    h->last_key = 0;
    h->advancing = true;
    if (work)
        ran = tw_advance_sliced(h->w, now, budget, work);
    else if (budget)
        ran = tw_advance_bounded(h->w, now, budget);
    else
        ran = tw_advance(h->w, now);
    h->advancing = false;
    cr_assert_eq((uint64_t)ran, h->fired - fired,
                 "%s: advance ran %" PRId64 ", callbacks counted %" PRIu64,
                 h->name, ran, h->fired - fired);
    if (work)
        complete = tw_next_deadline(h->w) > now;
    else
        complete = !budget || (uint64_t)ran < budget;
    if (work && h->w->demoting.next != &h->w->demoting)
        h->spread++;
    if (complete)
        check_none_left(h);
}

static uint64_t random_step(struct harness *h)
{
    uint64_t tick = h->cfg.tick_ns, now = tw_now(h->w);

    switch (below(h, 20)) {
    case 0:
        return 0;
    case 1:
        /* Days in one call, while the clock has room for it. */
        if (now < UINT64_MAX / 4)
            return sat_mul(tick, below(h, h->max_step));
        return tick;
    case 2:
    case 3:
        return sat_mul(tick, below(h, h->max_step / 1000 + 2));
    default:
        return sat_mul(tick, below(h, 4)) + below(h, tick);
    }
}

static void check_next_deadline(struct harness *h)
{
    uint64_t nd = tw_next_deadline(h->w), now = tw_now(h->w);
    uint64_t first = UINT64_MAX, bound;

    if (h->pending == 0) {
        cr_assert_eq(nd, UINT64_MAX, "%s: next deadline with none pending",
                     h->name);
        return;
    }
    for (size_t i = 0; i < h->ntimers; i++)
        if (h->timers[i].m.pending && h->timers[i].m.due < first)
            first = h->timers[i].m.due;
    bound = model_boundary(&h->cfg, first);
    bound = bound < now ? now : bound;
    cr_assert(nd >= now && nd <= bound,
              "%s: next deadline %" PRIu64 " outside [%" PRIu64 ", %" PRIu64
              "]",
              h->name, nd, now, bound);
}

static int count_visit(struct tw_timer *t, void *ctx)
{
    struct model_timer *mt = of_timer(t);
    size_t *n = ctx;

    cr_assert(mt->m.pending, "visit reported a timer that is not pending");
    cr_assert_eq(tw_cancel(mt->h->w, t), -EBUSY);
    ++*n;
    return 0;
}

static void check_all(struct harness *h)
{
    struct model_timer *mt = any_timer(h);

    cr_assert_eq(tw_pending(h->w), h->pending, "%s: pending %zu, model %zu",
                 h->name, tw_pending(h->w), h->pending);
    cr_assert_eq(tw_timer_pending(&mt->t), mt->m.pending);
    if (mt->m.pending)
        cr_assert_eq(tw_timer_deadline(&mt->t), mt->m.deadline);
    cr_assert_eq(tw_check(h->w, h->why, sizeof(h->why)), 0,
                 "%s: after op %" PRIu64 ": %s", h->name, h->ops, h->why);
    check_next_deadline(h);
}

static void random_op(struct harness *h)
{
    struct model_timer *mt = any_timer(h);
    uint64_t now = tw_now(h->w);
    size_t n = 0;

    switch (below(h, 18)) {
    case 0:
    case 1:
    case 2:
    case 3:
        model_schedule(h, mt, random_deadline(h), false);
        break;
    case 4:
    case 5:
    case 6:
        model_schedule(h, mt, random_deadline(h), true);
        break;
    case 7:
    case 8:
        model_cancel(h, mt);
        break;
    case 9:
        do_advance(h, sat_add(now, random_step(h)), 1 + below(h, 4), 0);
        break;
    case 10:
        if (now > h->cfg.start_ns) {
            cr_assert_eq(
                tw_advance(h->w, now - 1 - below(h, now - h->cfg.start_ns)),
                -ERANGE);
            cr_assert_eq(tw_now(h->w), now);
        }
        break;
    case 11:
        cr_assert_eq(tw_visit(h->w, count_visit, &n), 0);
        cr_assert_eq(n, h->pending);
        break;
    case 12:
    case 13:
        /* Sliced: a coarse slot's demotion, or the deferred timers, spread
         * over several calls, with operations between them. */
        do_advance(h, sat_add(now, random_step(h)), 1 + below(h, 8),
                   1 + below(h, 6));
        break;
    default:
        do_advance(h, sat_add(now, random_step(h)), 0, 0);
        break;
    }
}

static void harness_run(struct harness *h, uint64_t ops)
{
    for (uint64_t i = 0; i < ops; i++) {
        h->ops++;
        random_op(h);
        check_all(h);
    }
    if (h->cfg.mode == TW_HIER) {
        /* Run everything to the end of time: nothing may be lost. With
         * callbacks quiet, the second call runs what the first deferred. */
        h->quiet = true;
        do_advance(h, UINT64_MAX, 0, 0);
        do_advance(h, UINT64_MAX, 0, 0);
    } else {
        /* The hashed wheel steps through every tick, so the end of time is
         * out of reach: every timer still pending must cancel. */
        for (size_t i = 0; i < h->ntimers; i++)
            model_cancel(h, &h->timers[i]);
    }
    cr_assert_eq(h->pending, 0, "%s: %zu timers never fired", h->name,
                 h->pending);
    cr_assert_eq(tw_pending(h->w), 0);
    /* The sliced advances did spread demotions, with operations between
     * the calls, when the run was long enough to meet coarse slots (a run
     * started near the end of time has few left to meet). */
    if (h->cfg.mode == TW_HIER && h->ops >= OPS &&
        h->cfg.start_ns < UINT64_MAX / 2)
        cr_assert_gt(h->spread, 100, "%s: only %" PRIu64 " spread demotions",
                     h->name, h->spread);
    fprintf(stderr, "%s: %" PRIu64 " sliced calls left a demotion\n", h->name,
            h->spread);
}

/* ---- the layouts ----------------------------------------------------------
 */

/* Layout i of model_layouts, starting at start_ns, through `OPS` random
 * operations whose advances go at most max_step ticks. */
static void run_as(unsigned i, uint64_t start_ns, uint64_t max_step, bool owned)
{
    const struct model_layout *l = &model_layouts[i];
    struct tw_config cfg =
        model_config(l->mode, l->slots, l->levels, l->tick_ns);
    struct harness h;

    cfg.start_ns = start_ns;
    harness_init(&h, l->name, &cfg, NTIMERS, max_step, owned);
    harness_run(&h, test_ops(OPS));
    harness_fini(&h);
}

static void run(unsigned i, uint64_t start_ns, uint64_t max_step)
{
    run_as(i, start_ns, max_step, false);
}

#define DAYS_40_MS (UINT64_C(40) * 24 * 3600 * 1000)

Test(core_differential, hier_clock_layout)
{
    run(0, 123456789, DAYS_40_MS);
}

Test(core_differential, hier_pow2_layout)
{
    run(1, 0, DAYS_40_MS);
}

Test(core_differential, hier_tiny_layout)
{
    run(2, 0, UINT64_C(1) << 40);
}

Test(core_differential, hier_odd_layout_ns_tick)
{
    run(3, UINT64_C(1) << 40, UINT64_C(1) << 50);
}

Test(core_differential, hashed_netty_defaults)
{
    run(4, 987654321, 20000);
}

Test(core_differential, hashed_small_wheel)
{
    run(5, 0, 2000);
}

Test(core_differential, hier_clock_layout_owned_fields)
{
    run_as(0, 123456789, DAYS_40_MS, true);
}

Test(core_differential, hashed_netty_defaults_owned_fields)
{
    run_as(4, 987654321, 20000, true);
}

/* Every layout started 10 s before the end of time, where the last levels'
 * revolutions are cut short and deadlines saturate (issue 22's defect 6 was
 * found by a differential run started there). */
#define END_START (UINT64_MAX - UINT64_C(10000000000))

Test(core_differential, every_layout_near_the_end_of_time)
{
    for (unsigned i = 0; i < MODEL_LAYOUTS; i++)
        run(i, END_START, 1000);
}
