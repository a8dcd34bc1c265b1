/*
 * The hierarchical design's own promises: the default clock layout, the
 * demotion path of a timer (once per level, down to its exact tick), the
 * extra levels that reach UINT64_MAX, and layouts of every shape.
 */
#include <criterion/criterion.h>

#include "util.h"
#include "wheel.h"

/* The level whose slot list holds t, found by walking to the list head. */
static int level_of(const struct tw_wheel *w, const struct tw_timer *t)
{
    const struct tw_link *n = t->link.next;

    while (n && ((uintptr_t)n < (uintptr_t)w->slots ||
                 (uintptr_t)n >= (uintptr_t)(w->slots + w->nslots)))
        n = n->next;
    if (!n)
        return -1;
    for (unsigned k = 0; k < w->nlevels; k++)
        if ((size_t)(n - w->slots) < w->levels[k].first + w->levels[k].nslots)
            return (int)k;
    return -1;
}

Test(core_hier, default_layout_reads_like_a_clock)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    const uint32_t slots[] = {1000, 60, 60, 24};
    const uint64_t width[] = {1, 1000, 60000, 3600000};

    for (int k = 0; k < 4; k++) {
        cr_assert_eq(w->levels[k].nslots, slots[k]);
        cr_assert_eq(w->levels[k].width, width[k]);
    }
    /* 64-slot levels above the day wheel until UINT64_MAX ns fits. */
    cr_assert_eq(w->nlevels, 7);
    for (unsigned k = 4; k < w->nlevels; k++)
        cr_assert_eq(w->levels[k].nslots, 64);
    cr_assert_geq(w->levels[6].last, w->max_tick);
    cr_assert_lt(w->levels[5].last, w->max_tick);
    tw_destroy(w);
}

Test(core_hier, demoted_once_per_level_to_its_exact_tick)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    const uint64_t d = 3600 * SEC + 60 * SEC + SEC + MS;
    const uint64_t expect_at[] = {3600 * SEC, 3660 * SEC, 3661 * SEC, d};
    struct rec r;
    int level;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, d), 0);
    level = level_of(w, &r.t);
    cr_assert_eq(level, 3, "1 h 1 min 1 s 1 ms waits in the day wheel");
    for (int step = 0; step < 4; step++) {
        uint64_t next = tw_next_deadline(w);

        cr_assert_eq(next, expect_at[step]);
        cr_assert_eq(tw_advance(w, next - 1), 0);
        cr_assert_eq(level_of(w, &r.t), level, "moved early");
        cr_assert_eq(tw_advance(w, next), step == 3);
        if (step < 3) {
            cr_assert_eq(level_of(w, &r.t), level - 1, "one level down");
            level--;
        }
        wheel_ok(w);
    }
    cr_assert_eq(r.at, d);
    tw_destroy(w);
}

Test(core_hier, far_deadlines_need_no_rounds)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r[3];
    const uint64_t when[3] = {400 * 86400 * SEC, UINT64_MAX / 3,
                              UINT64_MAX - 1};

    for (int i = 0; i < 3; i++) {
        rec_init(&r[i], w);
        cr_assert_eq(tw_schedule(w, &r[i].t, when[i]), 0);
        cr_assert_geq(level_of(w, &r[i].t), 4);
    }
    wheel_ok(w);
    for (int i = 0; i < 3; i++) {
        /* The first boundary at or after the deadline; the last one is cut
         * short at UINT64_MAX. */
        uint64_t up = when[i] % MS ? when[i] + (MS - when[i] % MS) : when[i];

        if (up < when[i])
            up = UINT64_MAX;
        cr_assert_eq(tw_advance(w, up - 1), 0, "i=%d", i);
        cr_assert_eq(tw_advance(w, up), 1, "i=%d", i);
        cr_assert_eq(r[i].fired, 1);
        wheel_ok(w);
    }
    tw_destroy(w);
}

Test(core_hier, many_layouts_hold_every_range)
{
    static const uint32_t l1[] = {2}, l2[] = {4096, 4096},
                          l3[] = {64, 64, 64, 64, 64, 64, 64, 64};
    static const uint32_t *layouts[] = {l1, l2, l3};
    static const unsigned levels[] = {1, 2, 8};
    static const uint64_t ticks[] = {1, 1000, MS};

    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            struct tw_config cfg;
            struct tw_wheel *w;
            struct rec r;

            tw_config_init(&cfg, TW_HIER);
            cfg.slots = layouts[i];
            cfg.levels = levels[i];
            cfg.tick_ns = ticks[j];
            w = tw_create(&cfg, NULL);
            cr_assert_not_null(w);
            cr_assert_geq(w->levels[w->nlevels - 1].last, w->max_tick);
            rec_init(&r, w);
            cr_assert_eq(tw_schedule(w, &r.t, UINT64_MAX / 7), 0);
            wheel_ok(w);
            cr_assert_eq(tw_advance(w, UINT64_MAX / 7 - 1), 0);
            cr_assert_eq(tw_advance(w, UINT64_MAX / 7 + ticks[j]), 1);
            tw_destroy(w);
        }
    }
}

Test(core_hier, empty_slots_leave_no_bits)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r[3];

    for (int i = 0; i < 3; i++) {
        rec_init(&r[i], w);
        cr_assert_eq(tw_schedule(w, &r[i].t, (uint64_t)(i + 1) * 3 * SEC), 0);
    }
    cr_assert_neq(w->occupied, 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tw_cancel(w, &r[i].t), 1);
    cr_assert_eq(w->occupied, 0);
    for (unsigned k = 0; k < w->nlevels; k++)
        cr_assert_eq(w->levels[k].bits.summary, 0);
    cr_assert_eq(tw_next_deadline(w), UINT64_MAX);
    tw_destroy(w);
}

/* The slot list that holds t (NULL if none), found by walking to its head. */
static const struct tw_link *slot_of(const struct tw_wheel *w,
                                     const struct tw_timer *t)
{
    const struct tw_link *n = t->link.next;

    while (n && ((uintptr_t)n < (uintptr_t)w->slots ||
                 (uintptr_t)n >= (uintptr_t)(w->slots + w->nslots)))
        n = n->next;
    return n;
}

/* Re-arm takes a fast path only when no occupancy bit changes (the timer's
 * list keeps others, the new slot is occupied); every other case goes the
 * general way. Each case must leave the same wheel. */
Test(core_hier, rearm_fast_and_general_paths_agree)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec a, b, c;

    rec_init(&a, w);
    rec_init(&b, w);
    rec_init(&c, w);
    cr_assert_eq(tw_schedule(w, &a.t, 5 * SEC), 0); /* level 1, slot 5 */
    cr_assert_eq(tw_schedule(w, &b.t, 5 * SEC + 300 * MS), 0);
    cr_assert_eq(tw_schedule(w, &c.t, 9 * SEC), 0); /* level 1, slot 9 */
    /* Fast: a leaves a list that keeps b, for c's occupied slot. */
    cr_assert_eq(tw_rearm(w, &a.t, 9 * SEC + 1), 1);
    cr_assert_eq(slot_of(w, &a.t), slot_of(w, &c.t));
    wheel_ok(w);
    /* Fast, within one list: a moves inside slot 9 (to its tail). */
    cr_assert_eq(tw_rearm(w, &a.t, 9 * SEC + 2), 1);
    cr_assert_eq(c.t.link.next, &a.t.link);
    wheel_ok(w);
    /* General: the new slot (7) is empty; a goes back where it was first. */
    cr_assert_eq(tw_rearm(w, &a.t, 7 * SEC), 1);
    cr_assert_eq(slot_of(w, &a.t), &w->slots[w->levels[1].first + 7]);
    cr_assert_eq(slot_of(w, &c.t), &w->slots[w->levels[1].first + 9]);
    wheel_ok(w);
    /* General: b is alone in slot 5, whose bit must clear. */
    cr_assert_eq(tw_rearm(w, &b.t, 9 * SEC), 1);
    cr_assert(!tw__bitmap_test(&w->levels[1].bits, 5));
    wheel_ok(w);
    /* General: a deadline already due is deferred. */
    cr_assert_eq(tw_rearm(w, &c.t, 0), 1);
    cr_assert_eq(c.t.link.next, &w->deferred);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 9 * SEC), 3);
    cr_assert_eq(a.fired + b.fired + c.fired, 3);
    cr_assert_lt(c.seq, a.seq, "the deferred timer runs first");
    cr_assert_lt(a.seq, b.seq);
    tw_destroy(w);
}

/* Levels whose span times the tick passes 2^64 place timers by due tick
 * (their width_ns is 0); the levels below them in ns. Both must agree with
 * the checker at the edges of the range, in a wheel started late in time
 * with a tick that divides nothing evenly. */
Test(core_hier, wide_levels_place_by_due_tick)
{
    static const uint64_t starts[] = {0, UINT64_MAX / 3, UINT64_MAX - 1000};
    struct tw_config cfg;

    for (int i = 0; i < 3; i++) {
        const uint64_t d[] = {starts[i] + 1, starts[i] + 7777777,
                              UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX};
        struct rec r[5];
        struct tw_wheel *w;

        tw_config_init(&cfg, TW_HIER);
        cfg.tick_ns = 999983; /* a prime */
        cfg.start_ns = starts[i];
        w = tw_create(&cfg, NULL);
        cr_assert_not_null(w);
        /* Near the end of time few ticks are left: every level fits. */
        cr_assert(i == 2 || w->nexact < w->nlevels);
        for (int j = 0; j < 5; j++) {
            rec_init(&r[j], w);
            cr_assert_eq(
                tw_schedule(w, &r[j].t, d[j] < starts[i] ? UINT64_MAX : d[j]),
                0);
            wheel_ok(w);
        }
        cr_assert_eq(tw_advance(w, UINT64_MAX), 5);
        tw_destroy(w);
    }
}

/* The slot of a deadline comes from a multiplication by a reciprocal
 * (wheel.h); it must equal the division it replaces for every offset a
 * level holds, the largest (span_ns - 1, the bound add_level() checks)
 * included: at each slot's first and last ns and at pseudo-random offsets,
 * for layouts whose widths are powers of two, odd, one tick of 1 ns, or as
 * wide as 64-bit time allows. */
Test(core_hier, reciprocal_slot_equals_the_division)
{
    static const uint32_t clock[] = {1000, 60, 60, 24};
    static const uint32_t odd[] = {3, 7, 2, 5, 11};
    static const uint32_t pow2[] = {64, 64, 64, 64, 64, 64};
    static const uint32_t wide[] = {4096, 4096, 4096};
    static const struct {
        const uint32_t *slots;
        unsigned levels;
        uint64_t tick, start;
    } cases[] = {
        {clock, 4, MS, 0},  {clock, 4, 999983, UINT64_MAX / 3},
        {odd, 5, 1, 12345}, {pow2, 6, MS, 1},
        {wide, 3, 1, 0},    {wide, 3, UINT64_MAX / 4097 / 4097 / 4097, 7},
    };
    uint64_t x = 88172645463325252u; /* xorshift64 state */

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tw_config cfg;
        struct tw_wheel *w;

        tw_config_init(&cfg, TW_HIER);
        cfg.slots = cases[i].slots;
        cfg.levels = cases[i].levels;
        cfg.tick_ns = cases[i].tick;
        cfg.start_ns = cases[i].start;
        w = tw_create(&cfg, NULL);
        cr_assert_not_null(w);
        cr_assert_geq(w->nexact, 2, "case %zu", i);
        for (unsigned k = 0; k < w->nexact; k++) {
            const struct tw__place *p = &w->place[k];
            uint64_t span = w->levels[k].nslots * p->width_ns;

            for (uint64_t s = 0; s < w->levels[k].nslots; s++) {
                uint64_t lo = s * p->width_ns, hi = lo + p->width_ns - 1;

                cr_assert_eq(tw__place_slot(p, p->org_ns + lo), s);
                cr_assert_eq(tw__place_slot(p, p->org_ns + hi), s,
                             "case %zu level %u slot %llu", i, k,
                             (unsigned long long)s);
            }
            /* As the wheel advances, org_ns moves and wraps (mod 2^64). */
            for (uint64_t org = 0; org < 3; org++) {
                struct tw__place q = *p;

                q.org_ns = UINT64_MAX - org;
                q.org2_ns = 2 * q.org_ns;
                cr_assert_eq(tw__place_slot(&q, q.org_ns + span - 1),
                             (span - 1) / p->width_ns);
            }
            for (int j = 0; j < 4096; j++) {
                uint64_t n;

                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                n = x % span;
                cr_assert_eq(tw__place_slot(p, p->org_ns + n), n / p->width_ns);
            }
        }
        tw_destroy(w);
    }
}

/* The fast paths of schedule and re-arm do not test whether a level is
 * placed by due tick: such a level computes its slot 0, always empty, and
 * the call takes the general path (timer.c). Timers moved into, within
 * and out of those levels, with company in every list they leave, must
 * land where the checker expects and fire. */
Test(core_hier, rearm_into_and_out_of_levels_placed_by_due_tick)
{
    const uint64_t far = UINT64_MAX / 2, near = 5 * SEC;
    struct tw_config cfg;
    struct tw_wheel *w;
    struct rec r[4];

    tw_config_init(&cfg, TW_HIER);
    cfg.tick_ns = 999983;
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    cr_assert_lt(w->nexact, w->nlevels);
    cr_assert_gt(far, w->place[w->nexact - 1].last_ns, "far is placed by tick");
    for (int i = 0; i < 4; i++)
        rec_init(&r[i], w);
    cr_assert_eq(tw_schedule(w, &r[0].t, near), 0);
    cr_assert_eq(tw_schedule(w, &r[1].t, near + 1), 0);
    cr_assert_eq(tw_schedule(w, &r[2].t, far), 0);
    cr_assert_eq(tw_schedule(w, &r[3].t, far + 1), 0);
    wheel_ok(w);
    cr_assert_eq(tw_rearm(w, &r[0].t, far + 2), 1); /* into */
    wheel_ok(w);
    cr_assert_eq(tw_rearm(w, &r[0].t, far + 3), 1); /* within */
    wheel_ok(w);
    cr_assert_eq(tw_rearm(w, &r[2].t, near + 2), 1); /* out of */
    wheel_ok(w);
    cr_assert_eq(tw_timer_deadline(&r[0].t), far + 3);
    cr_assert_eq(tw_advance(w, near + SEC), 2);
    cr_assert(r[1].fired && r[2].fired && !r[0].fired);
    cr_assert_eq(tw_advance(w, UINT64_MAX), 2);
    cr_assert(r[0].fired && r[3].fired);
    tw_destroy(w);
}

#define DAY (24 * 3600 * SEC)

struct chain {
    struct tw_timer t;
    struct tw_wheel *w;
    int order;            /* position in the firing order, from 1 */
    struct tw_timer *add; /* scheduled by this callback, if set */
    uint64_t add_at;
};

static int fired_so_far;

static void chain_fire(struct tw_timer *t, void *arg)
{
    struct chain *c = TW_CONTAINER_OF(t, struct chain, t);

    (void)arg;
    wheel_ok(c->w);
    c->order = ++fired_so_far;
    if (c->add)
        cr_assert_eq(tw_schedule(c->w, c->add, c->add_at), 0);
    wheel_ok(c->w);
}

/* A 30-day jump over timers alone in their day slots takes each straight to
 * the expired list (hier.c, expire_single): they must still run in order,
 * with the wheel whole in every callback, and what a callback schedules
 * must land where the contract says, even inside the jumped span. */
Test(core_hier, single_timers_expire_in_order_across_a_jump)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct chain c[6];
    struct rec later, inside;
    const uint64_t at[6] = {5 * DAY + 7,       2 * DAY + 3 * SEC, 9 * DAY,
                            29 * DAY + 1 * MS, 2 * DAY + 4 * SEC, 17 * DAY};

    fired_so_far = 0;
    rec_init(&later, w);
    rec_init(&inside, w);
    for (int i = 0; i < 6; i++) {
        c[i] = (struct chain){.w = w};
        tw_timer_init(&c[i].t, chain_fire, NULL);
        cr_assert_eq(tw_schedule(w, &c[i].t, at[i]), 0);
    }
    /* The first to run adds one inside the span (deferred: the next
     * advance) and one after it. */
    c[1].add = &inside.t;
    c[1].add_at = 3 * DAY;
    c[4].add = &later.t;
    c[4].add_at = 31 * DAY;
    cr_assert_eq(tw_advance(w, 30 * DAY), 6);
    cr_assert_eq(c[1].order, 1);
    cr_assert_eq(c[4].order, 2);
    cr_assert_eq(c[0].order, 3);
    cr_assert_eq(c[2].order, 4);
    cr_assert_eq(c[5].order, 5);
    cr_assert_eq(c[3].order, 6);
    cr_assert_eq(inside.fired + later.fired, 0);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 30 * DAY), 1);
    cr_assert_eq(inside.fired, 1);
    cr_assert_eq(tw_advance(w, 31 * DAY - 1), 0);
    cr_assert_eq(tw_advance(w, 31 * DAY), 1);
    cr_assert_eq(later.fired, 1);
    tw_destroy(w);
}

/* A bounded advance still demotes, to stop on the timer's own tick. */
Test(core_hier, bounded_advance_stops_on_a_single_timers_tick)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec a, b;

    rec_init(&a, w);
    rec_init(&b, w);
    cr_assert_eq(tw_schedule(w, &a.t, 2 * DAY + 5 * MS), 0);
    cr_assert_eq(tw_schedule(w, &b.t, 2 * DAY + 7 * MS), 0);
    cr_assert_eq(tw_advance_bounded(w, 3 * DAY, 1), 1);
    cr_assert_eq(w->cur, (2 * DAY + 5 * MS) / MS);
    wheel_ok(w);
    cr_assert_eq(tw_advance_bounded(w, 3 * DAY, 1), 1);
    cr_assert_eq(b.fired, 1);
    tw_destroy(w);
}

/* A re-arm within the timer's own slot only changes its deadline: the
 * list is untouched (the timer keeps its place), and it fires at the new
 * deadline, also when that moves it to another tick of the slot. */
Test(core_hier, rearm_within_its_slot_touches_no_neighbour)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec x, y;

    rec_init(&x, w);
    rec_init(&y, w);
    cr_assert_eq(tw_schedule(w, &x.t, 5 * SEC + 100 * MS), 0); /* slot 5 */
    cr_assert_eq(tw_schedule(w, &y.t, 5 * SEC + 200 * MS), 0);
    cr_assert_eq(tw_rearm(w, &x.t, 5 * SEC + 900 * MS), 1);
    cr_assert_eq(x.t.link.next, &y.t.link, "x kept its place before y");
    cr_assert_eq(tw_timer_deadline(&x.t), 5 * SEC + 900 * MS);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 5 * SEC + 899 * MS), 1);
    cr_assert_eq(y.fired, 1);
    cr_assert_eq(x.fired, 0);
    cr_assert_eq(tw_advance(w, 5 * SEC + 900 * MS), 1);
    cr_assert_eq(x.at, 5 * SEC + 900 * MS);
    tw_destroy(w);
}

/* A deferred timer re-armed to a later deadline in the slot range of its
 * old one stays on the deferred list (timer.c): the next advance must
 * place it by its new deadline. */
static struct rec *moved, *company;

static void defer_then_move(struct tw_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    /* The advance runs to 3.05 s: 3 s is deferred, 3.6 s is in the same
     * level-1 slot (second 3) as 3 s. The company keeps the deferred
     * list from emptying, which would take the general path. */
    cr_assert_eq(tw_rearm(company->w, &company->t, 2 * SEC), 1);
    cr_assert_eq(tw_rearm(moved->w, &moved->t, 3 * SEC), 1);
    cr_assert_eq(moved->t.link.next, &moved->w->deferred);
    cr_assert_eq(tw_rearm(moved->w, &moved->t, 3 * SEC + 600 * MS), 1);
    cr_assert_eq(moved->t.link.next, &moved->w->deferred, "stayed deferred");
    wheel_ok(moved->w);
}

Test(core_hier, rearm_of_a_deferred_timer_is_placed_by_the_next_advance)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec a, b, c;
    struct tw_timer pin;

    rec_init(&a, w);
    rec_init(&b, w);
    rec_init(&c, w);
    moved = &b;
    company = &c;
    cr_assert_eq(tw_schedule(w, &c.t, 9 * SEC), 0);
    tw_timer_init(&pin, defer_then_move, NULL);
    cr_assert_eq(tw_schedule(w, &pin, 2 * SEC + 500 * MS), 0);
    cr_assert_eq(tw_schedule(w, &a.t, 3 * SEC), 0);
    cr_assert_eq(tw_schedule(w, &b.t, 9 * SEC), 0);
    /* Bounded, so that each timer is demoted to its own tick and pin's
     * callback sees cur at 2.5 s, with second 3 still a level-1 slot. */
    cr_assert_eq(tw_advance_bounded(w, 3 * SEC + 50 * MS, 100), 2);
    cr_assert_eq(a.fired, 1);
    cr_assert_eq(b.fired, 0);
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 3 * SEC + 599 * MS), 1); /* c, deferred */
    cr_assert_eq(c.fired, 1);
    cr_assert_neq(b.t.link.next, &w->deferred, "placed by the advance");
    cr_assert_eq(tw_advance(w, 3 * SEC + 600 * MS), 1);
    cr_assert_eq(b.at, 3 * SEC + 600 * MS);
    wheel_ok(w);
    tw_destroy(w);
}
