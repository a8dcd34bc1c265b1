/*
 * Named cases of the advance contract, each run on both designs: exact tick
 * boundaries, the ends of time, order, callbacks that cancel and re-arm,
 * deferral, the bounded advance and advancing backwards.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "util.h"
#include "wheel.h"

static const enum tw_mode modes[] = {TW_HIER, TW_HASHED};
#define EACH_MODE(m)                                                           \
    for (size_t mi_ = 0; mi_ < 2; mi_++)                                       \
        for (enum tw_mode m = modes[mi_], once_ = 1; once_; once_ = 0)

/* A timer due exactly at d fires on the advance that reaches d, not one ns
 * before; timers one tick either side fire on their own ticks. */
static void exact_boundary(enum tw_mode mode, uint64_t d)
{
    struct tw_wheel *w = wheel_new(mode);
    struct rec before, at, after;
    uint64_t step = mode == TW_HIER ? d - 2 * MS : d - 3 * MS;

    rec_init(&before, w);
    rec_init(&at, w);
    rec_init(&after, w);
    cr_assert_eq(tw_schedule(w, &before.t, d - MS), 0);
    cr_assert_eq(tw_schedule(w, &at.t, d), 0);
    cr_assert_eq(tw_schedule(w, &after.t, d + MS), 0);
    /* The hashed wheel walks every tick: get close in one call first. */
    cr_assert_eq(tw_advance(w, step), 0);
    cr_assert_eq(tw_advance(w, d - MS - 1), 0);
    cr_assert_eq(tw_advance(w, d - MS), 1);
    cr_assert_eq(before.fired, 1);
    cr_assert_eq(tw_advance(w, d - 1), 0);
    cr_assert_eq(at.fired, 0);
    cr_assert_eq(tw_advance(w, d), 1);
    cr_assert_eq(at.fired, 1);
    cr_assert_eq(at.at, d);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, d + MS), 1);
    cr_assert_eq(after.fired, 1);
    cr_assert_eq(tw_pending(w), 0);
    tw_destroy(w);
}

Test(core_advance, exact_at_second_minute_hour_day)
{
    exact_boundary(TW_HIER, SEC);
    exact_boundary(TW_HIER, 60 * SEC);
    exact_boundary(TW_HIER, 3600 * SEC);
    exact_boundary(TW_HIER, 86400 * SEC);
    exact_boundary(TW_HASHED, SEC);
    exact_boundary(TW_HASHED, 60 * SEC);
    exact_boundary(TW_HASHED, 3600 * SEC);
    exact_boundary(TW_HASHED, 86400 * SEC);
}

Test(core_advance, deadline_between_boundaries_rounds_up)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_schedule(w, &r.t, 5 * MS + 1), 0);
        cr_assert_eq(tw_advance(w, 6 * MS - 1), 0);
        cr_assert_eq(tw_advance(w, 6 * MS), 1);
        tw_destroy(w);
    }
}

Test(core_advance, deadline_zero_and_past_run_on_next_advance)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec zero, past;

        rec_init(&zero, w);
        rec_init(&past, w);
        cr_assert_eq(tw_advance(w, 10 * MS), 0);
        cr_assert_eq(tw_schedule(w, &zero.t, 0), 0);
        cr_assert_eq(tw_schedule(w, &past.t, 3 * MS), 0);
        cr_assert_eq(tw_next_deadline(w), 10 * MS);
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, 10 * MS), 2);
        cr_assert_eq(zero.fired + past.fired, 2);
        tw_destroy(w);
    }
}

/* The wheel's time is 10.7 ms, inside tick 11: a deadline of 10.5 ms has
 * passed, but its tick boundary (11 ms) has not, so it waits for it like
 * any timer of that tick; never early, and not at the next advance. */
Test(core_advance, past_deadline_within_the_current_tick_waits_for_its_boundary)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_advance(w, 10 * MS + 700000), 0);
        cr_assert_eq(tw_schedule(w, &r.t, 10 * MS + 500000), 0);
        wheel_ok(w);
        cr_assert_eq(tw_advance(w, 10 * MS + 900000), 0);
        cr_assert_eq(r.fired, 0);
        cr_assert_eq(tw_advance(w, 11 * MS), 1);
        cr_assert_eq(r.fired, 1);
        tw_destroy(w);
    }
}

Test(core_advance, uint64_max_is_held_not_wrapped)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec end, late;

    rec_init(&end, w);
    rec_init(&late, w);
    cr_assert_eq(tw_schedule(w, &end.t, UINT64_MAX), 0);
    /* now + delay overflows: saturates at UINT64_MAX. */
    cr_assert_eq(tw_advance(w, 5 * MS), 0);
    cr_assert_eq(tw_schedule_after(w, &late.t, UINT64_MAX - MS), 0);
    cr_assert_eq(tw_timer_deadline(&late.t), UINT64_MAX);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, UINT64_MAX - 1), 0);
    cr_assert_eq(tw_pending(w), 2);
    cr_assert_eq(tw_advance(w, UINT64_MAX), 2);
    cr_assert_eq(end.at, UINT64_MAX);
    tw_destroy(w);
}

Test(core_advance, hashed_holds_uint64_max_with_rounds)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec end;

    rec_init(&end, w);
    cr_assert_eq(tw_schedule(w, &end.t, UINT64_MAX), 0);
    cr_assert_eq(tw_advance(w, 10 * SEC), 0);
    cr_assert(tw_timer_pending(&end.t));
    wheel_ok(w);
    tw_destroy(w);
    cr_assert(!tw_timer_pending(&end.t));
}

Test(core_advance, thirty_days_in_one_call)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r[6];
    const uint64_t day = 86400 * SEC;
    const uint64_t when[6] = {
        MS,      SEC + 7 * MS, 59 * SEC, 3 * 3600 * SEC, 29 * day + 17 * MS,
        30 * day};

    for (int i = 5; i >= 0; i--) {
        rec_init(&r[i], w);
        cr_assert_eq(tw_schedule(w, &r[i].t, when[i]), 0);
    }
    cr_assert_eq(tw_advance(w, 30 * day), 6);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(r[i].fired, 1);
        cr_assert_eq(r[i].seq, r[0].seq + i, "fired out of order");
    }
    wheel_ok(w);
    tw_destroy(w);
}

/* A long jump over single timers in coarse slots takes them straight to
 * the expired list (hier.c, expire_singles). When that empties the wheel
 * the cursor goes straight to the target: a callback's timer at or before
 * the target is deferred to the next advance, one after it waits for its
 * own tick. */
struct jumper {
    struct rec r;
    struct rec *before, *after; /* scheduled by the callback */
    uint64_t target;
};

static void schedule_around_target(struct tw_timer *t, void *arg)
{
    struct jumper *j = arg;

    (void)t;
    j->r.fired++;
    j->r.at = tw_now(j->r.w);
    cr_assert_eq(tw_schedule(j->r.w, &j->before->t, j->target - MS), 0);
    cr_assert_eq(tw_schedule(j->r.w, &j->after->t, j->target + 10 * MS), 0);
}

Test(core_advance, long_jump_over_singles_ends_on_the_target)
{
    const uint64_t day = 86400 * SEC, target = 30 * day + 5 * MS;
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec b, c, before, after;
    struct jumper a = {.before = &before, .after = &after, .target = target};

    rec_init(&a.r, w);
    tw_timer_init(&a.r.t, schedule_around_target, &a);
    rec_init(&b, w);
    rec_init(&c, w);
    rec_init(&before, w);
    rec_init(&after, w);
    cr_assert_eq(tw_schedule(w, &a.r.t, 2 * day + 1), 0);
    cr_assert_eq(tw_schedule(w, &b.t, 5 * day + 3 * MS), 0);
    cr_assert_eq(tw_schedule(w, &c.t, 20 * day), 0);
    cr_assert_eq(tw_advance(w, target), 3);
    cr_assert_eq(w->cur, target / MS);
    cr_assert_lt(b.seq, c.seq);
    cr_assert_eq(a.r.at, target);
    cr_assert_eq(before.fired, 0, "deferred, not run by the advance");
    cr_assert_eq(tw_pending(w), 2);
    cr_assert_eq(tw_next_deadline(w), target);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, target), 1);
    cr_assert_eq(before.fired, 1);
    cr_assert_eq(tw_advance(w, target + 10 * MS - 1), 0);
    cr_assert_eq(tw_advance(w, target + 10 * MS), 1);
    cr_assert_eq(after.at, target + 10 * MS);
    wheel_ok(w);
    tw_destroy(w);
}

/* The singles, from the day wheel and then the 64-day level, stop at a
 * slot of two timers: the cursor settles on the last single's tick (in
 * the 64-day level) and that slot is demoted as usual; a single after it
 * is taken by a later collect. All fire in order, each seeing a wheel that
 * passes tw_check() and its own tick reached. */
static int fired_order;

static void check_on_fire(struct tw_timer *t, void *arg)
{
    struct rec *r = arg;

    wheel_ok(r->w);
    cr_assert_leq(tw__due_tick(r->w, tw_timer_deadline(t)), r->w->cur);
    r->fired++;
    r->seq = ++fired_order;
}

Test(core_advance, long_jump_singles_then_a_shared_slot)
{
    const uint64_t day = 86400 * SEC;
    const uint64_t when[5] = {5 * 3600 * SEC, 2 * day + 1, 7 * day + MS,
                              7 * day + 2 * MS, 9 * day};
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r[5];

    for (int i = 4; i >= 0; i--) {
        rec_init(&r[i], w);
        tw_timer_init(&r[i].t, check_on_fire, &r[i]);
        cr_assert_eq(tw_schedule(w, &r[i].t, when[i]), 0);
    }
    cr_assert_eq(tw_advance(w, 30 * day), 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(r[i].seq, i + 1, "fired out of order");
    cr_assert_eq(w->cur, 30 * day / MS);
    wheel_ok(w);
    tw_destroy(w);
}

/* The singles are walked word by word through a level's bitmap: a level
 * of 200 slots (four words) with single timers in three of its words, a
 * shared slot in the third, more singles after it and one a level up. One
 * advance runs them all, in order of due tick, and leaves the wheel
 * checked. */
Test(core_advance, long_jump_singles_across_bitmap_words)
{
    static const uint32_t layout[] = {4, 200};
    const uint64_t slot[] = {3, 63, 64, 70, 130, 130, 131, 199, 260, 900};
    enum { N = sizeof(slot) / sizeof(slot[0]) };
    struct tw_config cfg;
    struct tw_wheel *w;
    struct rec r[N];
    int err;

    tw_config_init(&cfg, TW_HIER);
    cfg.slots = layout;
    cfg.levels = 2;
    w = tw_create(&cfg, &err);
    cr_assert_not_null(w);
    /* Tick 4 s + 1 of level 1's slot s (slots 200 and up: level 2); the
     * two timers of slot 130 one tick apart. */
    for (int i = N - 1; i >= 0; i--) {
        rec_init(&r[i], w);
        cr_assert_eq(tw_schedule(w, &r[i].t, (4 * slot[i] + 1 + (i == 5)) * MS),
                     0);
    }
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 4000 * MS), N);
    for (int i = 1; i < N; i++)
        cr_assert_eq(r[i].seq, r[i - 1].seq + 1, "timer %d out of order", i);
    cr_assert_eq(w->cur, 4000);
    wheel_ok(w);
    tw_destroy(w);
}

Test(core_advance, hashed_long_jump_steps_every_tick)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec a, b;

    rec_init(&a, w);
    rec_init(&b, w);
    cr_assert_eq(tw_schedule(w, &b.t, 600 * SEC + 3 * MS), 0);
    cr_assert_eq(tw_schedule(w, &a.t, 90 * SEC), 0);
    cr_assert_eq(tw_advance(w, 601 * SEC), 2);
    cr_assert_lt(a.seq, b.seq);
    tw_destroy(w);
}

Test(core_advance, backwards_changes_nothing)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec r;

        rec_init(&r, w);
        cr_assert_eq(tw_advance(w, 50 * MS), 0);
        cr_assert_eq(tw_schedule(w, &r.t, 10 * MS), 0);
        cr_assert_eq(tw_advance(w, 49 * MS), -ERANGE);
        cr_assert_eq(tw_now(w), 50 * MS);
        cr_assert_eq(r.fired, 0);
        cr_assert_eq(tw_pending(w), 1);
        cr_assert_eq(tw_advance(w, 50 * MS), 1);
        tw_destroy(w);
    }
}

Test(core_advance, order_of_due_tick)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec r[50];

        /* Scheduled in a scrambled order, one tick apart or more. */
        for (int i = 0; i < 50; i++) {
            int k = (i * 17) % 50;

            rec_init(&r[k], w);
            cr_assert_eq(tw_schedule(w, &r[k].t, (uint64_t)(k + 1) * 37 * MS),
                         0);
        }
        cr_assert_eq(tw_advance(w, 50 * 37 * MS), 50);
        for (int i = 1; i < 50; i++)
            cr_assert_eq(r[i].seq, r[i - 1].seq + 1);
        tw_destroy(w);
    }
}

Test(core_advance, cancel_from_earlier_callback_in_same_tick)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec a, b;

        rec_init(&a, w);
        rec_init(&b, w);
        a.victim = &b;
        b.victim = &a;
        cr_assert_eq(tw_schedule(w, &a.t, 20 * MS), 0);
        cr_assert_eq(tw_schedule(w, &b.t, 20 * MS + 5), 0);
        cr_assert_eq(tw_advance(w, 21 * MS), 1);
        cr_assert_eq(a.fired + b.fired, 1, "cancelled timer ran");
        cr_assert_eq(a.fired ? a.victim_rc : b.victim_rc, 1);
        cr_assert_eq(tw_pending(w), 0);
        tw_destroy(w);
    }
}

Test(core_advance, periodic_self_rearm)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec r;

        rec_init(&r, w);
        r.period = 10 * MS;
        cr_assert_eq(tw_schedule_after(w, &r.t, 10 * MS), 0);
        for (uint64_t t = MS; t <= SEC; t += MS)
            cr_assert_geq(tw_advance(w, t), 0);
        cr_assert_eq(r.fired, 100);
        cr_assert_eq(r.at, SEC);
        /* After a stall, each fixed-rate re-arm lands in a tick this
         * advance already reached, so it runs once per advance. */
        cr_assert_eq(tw_advance(w, 5 * SEC), 1);
        cr_assert_eq(tw_advance(w, 5 * SEC), 1);
        cr_assert_eq(tw_advance(w, 5 * SEC), 1);
        cr_assert_eq(tw_timer_deadline(&r.t), SEC + 40 * MS);
        cr_assert(tw_timer_pending(&r.t));
        tw_destroy(w);
    }
}

static void rearm_now(struct tw_timer *t, void *arg)
{
    struct tw_wheel *w = arg;

    cr_assert_eq(tw_schedule(w, t, 0), 0);
    cr_assert_eq(tw_advance(w, tw_now(w)), -EBUSY);
    cr_assert_eq(tw_destroy(w), -EDEADLK);
}

Test(core_advance, rearm_into_the_past_cannot_livelock)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct tw_timer t;

        tw_timer_init(&t, rearm_now, w);
        cr_assert_eq(tw_schedule(w, &t, 0), 0);
        for (int i = 0; i < 5; i++)
            cr_assert_eq(tw_advance(w, 7 * MS), 1);
        cr_assert(tw_timer_pending(&t));
        cr_assert_eq(tw_cancel(w, &t), 1);
        tw_destroy(w);
    }
}

Test(core_advance, bounded_spreads_a_burst)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        static struct rec r[100], late;
        int64_t total = 0;

        for (int i = 0; i < 100; i++) {
            rec_init(&r[i], w);
            cr_assert_eq(tw_schedule(w, &r[i].t, 5 * MS), 0);
        }
        rec_init(&late, w);
        cr_assert_eq(tw_schedule(w, &late.t, 6 * MS), 0);
        cr_assert_eq(tw_advance_bounded(w, 10 * MS, 30), 30);
        cr_assert_eq(tw_pending(w), 71);
        cr_assert_eq(tw_next_deadline(w), 10 * MS);
        wheel_ok(w);
        cr_assert_eq(tw_advance_bounded(w, 10 * MS, 0), -EINVAL);
        for (int i = 0; i < 3; i++)
            total += tw_advance_bounded(w, 10 * MS, 30);
        cr_assert_eq(total, 71);
        cr_assert_eq(late.fired, 1);
        for (int i = 0; i < 100; i++)
            cr_assert_lt(r[i].seq, late.seq, "later tick ran first");
        cr_assert_eq(tw_advance_bounded(w, 10 * MS, 30), 0);
        tw_destroy(w);
    }
}

Test(core_advance, bounded_then_schedule_inside_the_gap)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec a, b, c;

        rec_init(&a, w);
        rec_init(&b, w);
        rec_init(&c, w);
        cr_assert_eq(tw_schedule(w, &a.t, 2 * MS), 0);
        cr_assert_eq(tw_schedule(w, &c.t, 8 * MS), 0);
        cr_assert_eq(tw_advance_bounded(w, 10 * MS, 1), 1);
        /* The wheel stopped at a's tick; b lands between a and c. */
        cr_assert_eq(tw_schedule(w, &b.t, 5 * MS), 0);
        cr_assert_eq(tw_advance(w, 10 * MS), 2);
        cr_assert_lt(b.seq, c.seq);
        tw_destroy(w);
    }
}

Test(core_advance, rearm_later_does_not_block_others)
{
    EACH_MODE(mode)
    {
        struct tw_wheel *w = wheel_new(mode);
        struct rec head, behind;

        /* Same slot at every level, head first: the FIFO pitfall. */
        rec_init(&head, w);
        rec_init(&behind, w);
        cr_assert_eq(tw_schedule(w, &head.t, 70 * SEC), 0);
        cr_assert_eq(tw_schedule(w, &behind.t, 70 * SEC + 1), 0);
        cr_assert_eq(tw_rearm(w, &head.t, 200 * SEC), 1);
        cr_assert_eq(tw_pending(w), 2);
        cr_assert_eq(tw_advance(w, 71 * SEC), 1);
        cr_assert_eq(behind.fired, 1);
        cr_assert_eq(head.fired, 0);
        /* And earlier again. */
        cr_assert_eq(tw_rearm(w, &head.t, 72 * SEC), 1);
        cr_assert_eq(tw_advance(w, 72 * SEC), 1);
        cr_assert_eq(head.at, 72 * SEC);
        cr_assert_eq(tw_advance(w, 300 * SEC), 0);
        tw_destroy(w);
    }
}

/* An advance before the next piece of work is one comparison (advance.c):
 * it records the time and leaves cur behind. Everything afterwards must
 * behave as if cur had moved: errors, timers scheduled into the gap between
 * cur and the wheel's time, and work that arrives earlier than the bound. */
Test(core_advance, idle_advances_keep_every_promise)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec far, past, near;

    rec_init(&far, w);
    rec_init(&past, w);
    rec_init(&near, w);
    cr_assert_eq(tw_schedule(w, &far.t, 3600 * SEC), 0);
    cr_assert_eq(tw_advance(w, MS), 0); /* general: computes the bound */
    for (uint64_t t = 2; t <= 5000; t++) {
        cr_assert_eq(tw_advance(w, t * MS), 0);
        cr_assert_eq(tw_now(w), t * MS);
    }
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 4999 * MS), -ERANGE);
    cr_assert_eq(tw_advance_bounded(w, 5001 * MS, 0), -EINVAL);
    cr_assert_eq(tw_now(w), 5000 * MS);
    /* Between cur and the wheel's time: runs at the next advance. */
    cr_assert_eq(tw_schedule(w, &past.t, 4000 * MS), 0);
    wheel_ok(w);
    cr_assert_eq(tw_next_deadline(w), 5000 * MS);
    /* Earlier than the bound, but after the wheel's time. */
    cr_assert_eq(tw_schedule(w, &near.t, 5003 * MS), 0);
    cr_assert_eq(tw_advance(w, 5000 * MS), 1);
    cr_assert_eq(past.fired, 1);
    cr_assert_eq(tw_advance(w, 5002 * MS), 0);
    cr_assert_eq(tw_advance(w, 5003 * MS), 1);
    cr_assert_eq(near.fired, 1);
    cr_assert_eq(far.fired, 0);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 3600 * SEC), 1);
    cr_assert_eq(far.at, 3600 * SEC);
    tw_destroy(w);
}

/* A callback may not advance its wheel, even when the advance it asks for
 * would have nothing to do. */
static void advance_inside(struct tw_timer *t, void *arg)
{
    struct rec *r = TW_CONTAINER_OF(t, struct rec, t);

    (void)arg;
    r->victim_rc = (int)tw_advance(r->w, tw_now(r->w));
    r->fired++;
}

Test(core_advance, idle_path_refuses_advance_from_callback)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec a, b;

    rec_init(&a, w);
    rec_init(&b, w);
    tw_timer_init(&a.t, advance_inside, NULL);
    cr_assert_eq(tw_schedule(w, &a.t, 10 * MS), 0);
    cr_assert_eq(tw_schedule(w, &b.t, 3600 * SEC), 0);
    cr_assert_eq(tw_advance(w, 10 * MS), 1);
    cr_assert_eq(a.victim_rc, -EBUSY);
    tw_destroy(w);
}

/* An advance to now that takes the general path (a deferred timer opens
 * it) ends with cur at floor((now - start) / tick): the tick the advance
 * computes, by level 0's multiplier inside that level's revolution
 * (advance.c, target_tick()), by a division elsewhere. */
static void target_tick_is(struct tw_wheel *w, const struct tw_config *cfg,
                           struct rec *poke, uint64_t now)
{
    uint64_t want = now == UINT64_MAX ? w->max_tick
                    : now <= cfg->start_ns
                        ? 0
                        : (now - cfg->start_ns) / cfg->tick_ns;

    if (now < tw_now(w))
        return;
    cr_assert_eq(tw_schedule(w, &poke->t, 0), 0);
    cr_assert_eq(tw_advance(w, now), 1, "tick %llu start %llu now %llu",
                 (unsigned long long)cfg->tick_ns,
                 (unsigned long long)cfg->start_ns, (unsigned long long)now);
    cr_assert_eq(w->cur, want, "tick %llu start %llu now %llu: cur %llu",
                 (unsigned long long)cfg->tick_ns,
                 (unsigned long long)cfg->start_ns, (unsigned long long)now,
                 (unsigned long long)w->cur);
    wheel_ok(w);
}

/* Around tick boundaries k * tick + {-1, 0, 1} from the start to past
 * level 0's second revolution, for ticks that are not powers of ten, a
 * start that is not a tick boundary and one a few seconds before the end
 * of time (where the tick limit saturates). */
Test(core_advance, target_tick_by_multiplication_matches_division)
{
    static const uint64_t ticks[] = {1, 3, 7, 1000, 999983, MS};
    static const uint64_t ks[] = {0,    1,    2,    998,   999,   1000, 1001,
                                  1999, 2000, 2001, 59999, 60000, 60001};

    for (size_t ti = 0; ti < sizeof(ticks) / sizeof(ticks[0]); ti++) {
        const uint64_t starts[] = {0, 5, 123456789,
                                   UINT64_MAX - 2500 * ticks[ti]};

        for (size_t si = 0; si < sizeof(starts) / sizeof(starts[0]); si++) {
            struct tw_config cfg;
            struct tw_wheel *w;
            struct rec poke;

            tw_config_init(&cfg, TW_HIER);
            cfg.tick_ns = ticks[ti];
            cfg.start_ns = starts[si];
            w = tw_create(&cfg, NULL);
            cr_assert_not_null(w);
            rec_init(&poke, w);
            for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++) {
                uint64_t b = cfg.start_ns + ks[ki] * ticks[ti];

                if (ks[ki] * ticks[ti] > UINT64_MAX - cfg.start_ns - 1)
                    break;
                target_tick_is(w, &cfg, &poke, b ? b - 1 : b);
                target_tick_is(w, &cfg, &poke, b);
                target_tick_is(w, &cfg, &poke, b + 1);
            }
            target_tick_is(w, &cfg, &poke, UINT64_MAX);
            tw_destroy(w);
        }
    }
}
