/*
 * The wheel object: configuration and its bad input, create and destroy,
 * the time and count queries, the next deadline, the visitor and the drain.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util.h"

static int create_err(struct tw_config *cfg)
{
    int err = 1;
    struct tw_wheel *w = tw_create(cfg, &err);

    if (w)
        cr_assert_eq(tw_destroy(w), 0);
    else
        cr_assert_neq(err, 0);
    return err;
}

Test(core_wheel, config_defaults)
{
    struct tw_config cfg;

    tw_config_init(&cfg, TW_HASHED);
    cr_assert_eq(cfg.mode, TW_HASHED);
    cr_assert_eq(cfg.tick_ns, TW_DEFAULT_TICK_NS);
    cr_assert_null(cfg.slots);
    tw_config_init(NULL, TW_HIER); /* no-op */
    cr_assert_eq(create_err(&cfg), 0);
    tw_config_init(&cfg, TW_HIER);
    cr_assert_eq(create_err(&cfg), 0);
}

Test(core_wheel, bad_configs_rejected)
{
    static const uint32_t zero[] = {0}, one[] = {1}, big[] = {4097},
                          two[] = {64, 64}, huge[] = {1u << 31};
    static const uint32_t wide[] = {4096, 4096, 4096, 4096, 4096, 4096};
    struct tw_config cfg;

    cr_assert_null(tw_create(NULL, NULL));
    cr_assert_eq(create_err(NULL), -EINVAL);
    for (int mode = 0; mode < 2; mode++) {
        tw_config_init(&cfg, (enum tw_mode)mode);
        cfg.tick_ns = 0;
        cr_assert_eq(create_err(&cfg), -EINVAL, "zero tick");
        tw_config_init(&cfg, (enum tw_mode)mode);
        cfg.slots = zero;
        cfg.levels = 1;
        cr_assert_eq(create_err(&cfg), -EINVAL, "zero slots");
        cfg.levels = 0;
        cr_assert_eq(create_err(&cfg), -EINVAL, "no levels");
        cfg.slots = two;
        cfg.levels = TW_MAX_LEVELS + 1;
        cr_assert_eq(create_err(&cfg), -EINVAL, "too many levels");
    }
    tw_config_init(&cfg, TW_HIER);
    cfg.mode = (enum tw_mode)7;
    cr_assert_eq(create_err(&cfg), -EINVAL, "unknown mode");
    tw_config_init(&cfg, TW_HIER);
    cfg.slots = one;
    cfg.levels = 1;
    cr_assert_eq(create_err(&cfg), -EINVAL, "1-slot level");
    cfg.slots = big;
    cr_assert_eq(create_err(&cfg), -EINVAL, "more than 4096 slots");
    cfg.slots = wide;
    cfg.levels = 6; /* 4096^5 ticks per slot of level 5 overflows ns */
    cr_assert_eq(create_err(&cfg), -EINVAL, "range overflow");
    tw_config_init(&cfg, TW_HIER);
    cfg.tick_ns = UINT64_MAX / 10; /* 1000 slots of it overflow */
    cr_assert_eq(create_err(&cfg), -EINVAL, "huge tick");
    cfg.slots = two;
    cfg.levels = 1;
    cr_assert_eq(create_err(&cfg), 0, "huge tick, one small level");
    tw_config_init(&cfg, TW_HASHED);
    cfg.levels = 2;
    cfg.slots = two;
    cr_assert_eq(create_err(&cfg), -EINVAL, "hashed with two levels");
    cfg.slots = huge;
    cfg.levels = 1;
    cr_assert_eq(create_err(&cfg), -EINVAL, "hashed over 2^30 slots");
    tw_config_init(&cfg, TW_HASHED);
    cfg.tick_ns = UINT64_C(1) << 56; /* x 512 overflows int64 */
    cr_assert_eq(create_err(&cfg), -EINVAL, "hashed tick x slots");
    cfg.slots = one; /* Netty accepts one tick per wheel */
    cfg.levels = 1;
    cr_assert_eq(create_err(&cfg), 0, "hashed with one slot");
}

Test(core_wheel, start_time_and_now)
{
    struct tw_config cfg;
    struct tw_wheel *w;
    struct rec r;

    tw_config_init(&cfg, TW_HIER);
    cfg.start_ns = 5 * SEC + 300;
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    cr_assert_eq(tw_now(w), cfg.start_ns);
    cr_assert_eq(tw_advance(w, cfg.start_ns - 1), -ERANGE);
    rec_init(&r, w);
    /* Boundaries are counted from the start: 5 s + 300 ns + k ms. */
    cr_assert_eq(tw_schedule(w, &r.t, cfg.start_ns + 2 * MS - 7), 0);
    cr_assert_eq(tw_next_deadline(w), cfg.start_ns + 2 * MS);
    cr_assert_eq(tw_advance(w, cfg.start_ns + 2 * MS - 1), 0);
    cr_assert_eq(tw_advance(w, cfg.start_ns + 2 * MS), 1);
    cr_assert_eq(tw_now(NULL), 0);
    cr_assert_eq(tw_pending(NULL), 0);
    tw_destroy(w);
}

Test(core_wheel, next_deadline)
{
    struct tw_wheel *h = wheel_new(TW_HIER), *x = wheel_new(TW_HASHED);
    struct rec a, b;

    cr_assert_eq(tw_next_deadline(NULL), UINT64_MAX);
    cr_assert_eq(tw_next_deadline(h), UINT64_MAX);
    cr_assert_eq(tw_next_deadline(x), UINT64_MAX);
    rec_init(&a, h);
    rec_init(&b, x);
    cr_assert_eq(tw_schedule(h, &a.t, 300 * MS + 5), 0);
    cr_assert_eq(tw_schedule(x, &b.t, 300 * MS + 5), 0);
    cr_assert_eq(tw_next_deadline(h), 301 * MS, "exact at level 0");
    cr_assert_eq(tw_next_deadline(x), MS, "hashed: the next tick");
    cr_assert_eq(tw_rearm(h, &a.t, 90 * SEC), 1);
    /* 90 s differs from 0 in its minute digit, so it waits in the hour
     * wheel's slot for minute 1: the next work is its demotion at 60 s. */
    cr_assert_eq(tw_next_deadline(h), 60 * SEC);
    cr_assert_eq(tw_advance(h, 60 * SEC), 0);
    cr_assert_eq(tw_next_deadline(h), 90 * SEC);
    cr_assert_eq(tw_rearm(h, &a.t, 3 * 3600 * SEC + 1), 1);
    cr_assert_leq(tw_next_deadline(h), 3 * 3600 * SEC + MS);
    cr_assert_geq(tw_next_deadline(h), 3600 * SEC);
    tw_destroy(h);
    tw_destroy(x);
}

Test(core_wheel, destroy_detaches_pending_timers)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct rec r[4];

        for (int i = 0; i < 4; i++)
            rec_init(&r[i], w);
        cr_assert_eq(tw_schedule(w, &r[0].t, 0), 0); /* deferred */
        cr_assert_eq(tw_schedule(w, &r[1].t, 5 * MS), 0);
        cr_assert_eq(tw_schedule(w, &r[2].t, 5 * SEC), 0);
        cr_assert_eq(tw_schedule(w, &r[3].t, UINT64_MAX), 0);
        cr_assert_eq(tw_destroy(w), 0);
        for (int i = 0; i < 4; i++) {
            cr_assert(!tw_timer_pending(&r[i].t));
            cr_assert_eq(r[i].fired, 0);
        }
    }
    cr_assert_eq(tw_destroy(NULL), 0);
}

struct tally {
    size_t n;
    uint64_t sum;
    struct tw_wheel *w;
};

static int tally(struct tw_timer *t, void *ctx)
{
    struct tally *v = ctx;

    v->n++;
    v->sum += tw_timer_deadline(t);
    cr_assert_eq(tw_schedule(v->w, t, 1), -EBUSY);
    cr_assert_eq(tw_rearm(v->w, t, 1), -EBUSY);
    cr_assert_eq(tw_cancel(v->w, t), -EBUSY);
    cr_assert_eq(tw_advance(v->w, UINT64_MAX), -EBUSY);
    cr_assert_eq(tw_destroy(v->w), -EDEADLK);
    return 0;
}

static int stop_at_two(struct tw_timer *t, void *ctx)
{
    (void)t;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

Test(core_wheel, visit_every_pending_timer)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct tally v = {0, 0, w};
        struct rec r[5];
        uint64_t sum = 0;
        int seen = 0;

        for (int i = 0; i < 5; i++) {
            uint64_t d = (uint64_t)i * i * i * 997 * SEC;

            rec_init(&r[i], w);
            cr_assert_eq(tw_schedule(w, &r[i].t, d), 0);
            sum += d;
        }
        cr_assert_eq(tw_visit(w, tally, &v), 0);
        cr_assert_eq(v.n, 5);
        cr_assert_eq(v.sum, sum);
        cr_assert_eq(tw_visit(w, stop_at_two, &seen), 42);
        cr_assert_eq(seen, 2);
        cr_assert_eq(tw_visit(NULL, tally, &v), -EINVAL);
        cr_assert_eq(tw_visit(w, NULL, &v), -EINVAL);
        cr_assert_eq(tw_pending(w), 5);
        wheel_ok(w);
        tw_destroy(w);
    }
}

struct drained {
    struct tw_wheel *w;
    struct tw_wheel *other; /* fn moves each timer here */
    size_t n;
    struct tw_timer *list; /* through the owner's deadline field */
};

static void drain_one(struct tw_timer *t, void *ctx)
{
    struct drained *d = ctx;
    char why[200] = "";

    cr_assert(!tw_timer_pending(t), "pending when given to the drain's fn");
    cr_assert_eq(tw_check(d->w, why, sizeof(why)), 0, "mid-drain: %s", why);
    cr_assert_eq(tw_schedule(d->w, t, 1), -EBUSY);
    cr_assert_eq(tw_rearm(d->w, t, 1), -EBUSY);
    cr_assert_eq(tw_cancel(d->w, t), -EBUSY);
    cr_assert_eq(tw_advance(d->w, UINT64_MAX), -EBUSY);
    cr_assert_eq(tw_drain(d->w, drain_one, d), -EBUSY);
    cr_assert_eq(tw_destroy(d->w), -EDEADLK);
    d->n++;
    if (d->other) {
        cr_assert_eq(tw_schedule(d->other, t, 7 * MS), 0);
    } else {
        /* The deadline is the owner's now: keep a list through it. */
        memcpy(&t->deadline, &d->list, sizeof(d->list));
        d->list = t;
    }
}

/* Every pending timer (deferred, due, in slots of every level) is taken
 * out once and is no longer pending when fn gets it; the wheel is empty,
 * consistent and usable afterwards. */
Test(core_wheel, drain_takes_every_pending_timer)
{
    for (int mode = 0; mode < 2; mode++) {
        struct tw_wheel *w = wheel_new((enum tw_mode)mode);
        struct tw_wheel *other = wheel_new((enum tw_mode)mode);
        struct drained d = {.w = w};
        struct rec r[6];
        size_t n = 0;

        for (int i = 0; i < 6; i++)
            rec_init(&r[i], w);
        cr_assert_eq(tw_schedule(w, &r[0].t, 5 * MS), 0);
        cr_assert_eq(tw_schedule(w, &r[1].t, 6 * MS), 0);
        /* r[0] and r[1] due and left over by a bounded advance */
        cr_assert_eq(tw_advance_bounded(w, 10 * MS, 1), 1);
        cr_assert_eq(tw_schedule(w, &r[2].t, 0), 0); /* deferred */
        cr_assert_eq(tw_schedule(w, &r[3].t, 5 * SEC), 0);
        cr_assert_eq(tw_schedule(w, &r[4].t, 3 * 3600 * SEC), 0);
        cr_assert_eq(tw_schedule(w, &r[5].t, UINT64_MAX), 0);
        cr_assert_eq(tw_pending(w), 5);
        cr_assert_eq(tw_drain(w, drain_one, &d), 5);
        cr_assert_eq(d.n, 5);
        for (struct tw_timer *t = d.list; t; n++) {
            struct tw_timer *next;

            memcpy(&next, &t->deadline, sizeof(next));
            cr_assert(!tw_timer_pending(t));
            t = next;
        }
        cr_assert_eq(n, 5, "each timer given once");
        cr_assert_eq(tw_pending(w), 0);
        cr_assert_eq(tw_next_deadline(w), UINT64_MAX);
        wheel_ok(w);
        cr_assert_eq(tw_drain(w, drain_one, &d), 0, "an empty wheel");
        /* Still a working wheel. */
        cr_assert_eq(tw_schedule(w, &r[3].t, 20 * MS), 0);
        cr_assert_eq(tw_advance(w, 30 * MS), 1);
        cr_assert_eq(r[3].fired, 1);
        /* fn may schedule what it is given on another wheel. */
        for (int i = 0; i < 6; i++)
            cr_assert_eq(tw_rearm(w, &r[i].t, (uint64_t)(i + 1) * SEC), 0);
        d = (struct drained){.w = w, .other = other};
        cr_assert_eq(tw_drain(w, drain_one, &d), 6);
        cr_assert_eq(tw_pending(other), 6);
        wheel_ok(w);
        wheel_ok(other);
        tw_destroy(other);
        tw_destroy(w);
    }
}

static void drain_nothing(struct tw_timer *t, void *ctx)
{
    (void)t;
    (void)ctx;
    cr_assert_fail("drained from a callback or visitor");
}

static void drain_from_callback(struct tw_timer *t, void *arg)
{
    struct rec *r = arg;

    (void)t;
    r->victim_rc = (int)tw_drain(r->w, drain_nothing, NULL);
}

static int drain_from_visitor(struct tw_timer *t, void *ctx)
{
    (void)t;
    cr_assert_eq(tw_drain(ctx, drain_nothing, NULL), -EBUSY);
    return 0;
}

Test(core_wheel, drain_bad_input)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r[2];

    cr_assert_eq(tw_drain(NULL, drain_nothing, NULL), -EINVAL);
    cr_assert_eq(tw_drain(w, NULL, NULL), -EINVAL);
    rec_init(&r[0], w);
    rec_init(&r[1], w);
    tw_timer_init(&r[0].t, drain_from_callback, &r[0]);
    cr_assert_eq(tw_schedule(w, &r[0].t, MS), 0);
    cr_assert_eq(tw_schedule(w, &r[1].t, SEC), 0);
    cr_assert_eq(tw_drain(w, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_pending(w), 2, "nothing taken");
    cr_assert_eq(tw_visit(w, drain_from_visitor, w), 0);
    cr_assert_eq(tw_advance(w, 2 * MS), 1);
    cr_assert_eq(r[0].victim_rc, -EBUSY);
    cr_assert(tw_timer_pending(&r[1].t));
    wheel_ok(w);
    tw_destroy(w);
}
