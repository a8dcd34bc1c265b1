/*
 * The two traps of embedding the core in a loop, each shown
 * closed by the recipe of docs/embedding.md and shown to exist without it,
 * so that the test could fail.
 *
 *   sparse traffic: a loop that handles I/O before it advances and re-arms
 *   an idle timer with the core's tw_rearm_after() counts from the time it
 *   went to sleep, and closes busy connections early. Run on a virtual
 *   clock, so the answer is exact and no timing can disturb it.
 *
 *   a clock far from 0: a wheel created at the default start 0 and driven
 *   by CLOCK_MONOTONIC fires every relative timer at the first advance.
 *   Run on the real clocks.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "util.h"

static const enum tw_mode modes[] = {TW_HIER, TW_HASHED};

/* ---- sparse traffic ------------------------------------------------------ */

#define CONNS 8 /* the first BUSY send at random gaps, the rest once */
#define BUSY 4
#define IDLE (2 * SEC) /* the idle timeout */
#define TRAFFIC_END (15 * SEC)

struct conn {
    struct tw_timer idle;
    struct sim *sim;
    uint64_t last;      /* time of the last byte */
    uint64_t next_send; /* UINT64_MAX: sends no more */
    uint64_t closed_at; /* 0: open */
};

struct sim {
    struct tw_wheel *w;
    struct conn c[CONNS];
    uint64_t start;
    uint64_t rng;
    int early; /* closes before last + IDLE */
    int busy_closed;
};

/* A gap of 0.3 to 1.5 s, from a fixed-seed generator. */
static uint64_t gap(struct sim *s)
{
    s->rng = s->rng * 6364136223846793005u + 1442695040888963407u;
    return 300 * MS + (s->rng >> 33) % (1200 * MS + 1);
}

static void on_idle(struct tw_timer *t, void *arg)
{
    struct conn *c = TW_CONTAINER_OF(t, struct conn, idle);
    struct sim *s = arg;

    c->closed_at = tw_now(s->w);
    if (c->closed_at < c->last + IDLE)
        s->early++;
    if (c->next_send != UINT64_MAX)
        s->busy_closed++; /* closed while it was still sending */
    c->next_send = UINT64_MAX;
}

static uint64_t next_io(const struct sim *s)
{
    uint64_t at = UINT64_MAX;

    for (int i = 0; i < CONNS; i++)
        if (s->c[i].next_send < at)
            at = s->c[i].next_send;
    return at;
}

/* Every connection whose byte has arrived by now: the loop reads it and
 * re-arms the idle timer, from the reading (recipe) or from the wheel's
 * time (the trap). */
static void handle_io(struct sim *s, uint64_t now, bool recipe)
{
    for (int i = 0; i < CONNS; i++) {
        struct conn *c = &s->c[i];

        if (c->next_send > now)
            continue;
        c->last = c->next_send;
        if (recipe)
            cr_assert_geq(tw_loop_rearm_after(s->w, &c->idle, now, IDLE), 0);
        else
            cr_assert_geq(tw_rearm_after(s->w, &c->idle, IDLE), 0);
        c->next_send = i < BUSY && c->last < s->start + TRAFFIC_END
                           ? c->last + gap(s)
                           : UINT64_MAX;
    }
}

/* The loop: sleep as tw_loop_timeout_ms() says or until the next byte,
 * read the clock, handle I/O, then advance. */
static void run(struct sim *s, enum tw_mode mode, bool recipe)
{
    const uint64_t start = 1558 * SEC; /* the uptime of the report */
    struct tw_config cfg;
    uint64_t now = start;

    s->start = start;
    tw_config_init(&cfg, mode);
    cfg.start_ns = start;
    s->w = tw_create(&cfg, NULL);
    cr_assert_not_null(s->w);
    for (int i = 0; i < CONNS; i++) {
        s->c[i] = (struct conn){.sim = s, .next_send = start + i * MS};
        tw_timer_init(&s->c[i].idle, on_idle, s);
    }
    while (tw_pending(s->w) > 0 || next_io(s) != UINT64_MAX) {
        int ms = tw_loop_timeout_ms(s->w, now);
        uint64_t wake = next_io(s);

        if (ms >= 0 && now + (uint64_t)ms * MS < wake)
            wake = now + (uint64_t)ms * MS;
        now = wake;
        handle_io(s, now, recipe);
        cr_assert_geq(tw_advance(s->w, now), 0);
    }
    wheel_ok(s->w);
    tw_destroy(s->w);
}

Test(loop_traps, sparse_traffic_does_not_close_early)
{
    for (int m = 0; m < 2; m++) {
        struct sim s = {.rng = 20261123};

        run(&s, modes[m], true);
        cr_assert_eq(s.early, 0, "recipe: %d closed early", s.early);
        cr_assert_eq(s.busy_closed, 0);
        for (int i = 0; i < CONNS; i++) {
            struct conn *c = &s.c[i];

            /* Exact on a virtual clock: due at the first tick boundary at
             * or after the deadline (under 1 ms later), and the loop wakes
             * within 1 ms after that boundary (the timeout is rounded up
             * from a reading that is not on a boundary). */
            cr_assert_geq(c->closed_at, c->last + IDLE);
            cr_assert_lt(c->closed_at, c->last + IDLE + 2 * MS,
                         "conn %d: %llu ns late", i,
                         (unsigned long long)(c->closed_at - c->last - IDLE));
        }

        /* The same traffic with the core's tw_rearm_after(): the trap. */
        s = (struct sim){.rng = 20261123};
        run(&s, modes[m], false);
        cr_assert_gt(s.early, 0, "the trap should close some early");
        printf("loop_traps/sparse_traffic: %s: without the recipe %d of %d "
               "connections closed early, %d while busy\n",
               modes[m] == TW_HIER ? "hier" : "hashed", s.early, CONNS,
               s.busy_closed);
    }
}

/* ---- a clock far from 0 -------------------------------------------------- */

static void count(struct tw_timer *t, void *arg)
{
    (void)t;
    ++*(int *)arg;
}

/* A wheel started by tw_loop_config() on clock id, a 2 s timer counted from
 * a reading, and an advance to a later reading: nothing fires. */
static void far_from_zero(enum tw_mode mode, clockid_t id)
{
    struct tw_config cfg;
    struct tw_wheel *w;
    struct tw_timer t;
    uint64_t now = 0;
    int fired = 0;

    tw_config_init(&cfg, mode);
    cr_assert_eq(tw_loop_config(&cfg, id), 0);
    w = tw_create(&cfg, NULL);
    cr_assert_not_null(w);
    tw_timer_init(&t, count, &fired);
    cr_assert_eq(tw_loop_clock(id, &now), 0);
    cr_assert_eq(tw_loop_schedule_after(w, &t, now, 2 * SEC), 0);
    cr_assert_eq(tw_schedule_after(w, &t, 2 * SEC), -EBUSY);
    cr_assert_eq(tw_loop_clock(id, &now), 0);
    cr_assert_eq(tw_advance(w, now), 0, "fired at the first advance");
    cr_assert_eq(fired, 0);
    cr_assert(tw_timer_pending(&t));
    cr_assert_geq(tw_timer_deadline(&t), cfg.start_ns + 2 * SEC);
    wheel_ok(w);
    tw_destroy(w);
}

Test(loop_traps, clock_far_from_zero_fires_nothing_at_once)
{
    /* CLOCK_REALTIME is 1.7e18 ns from 0: a hashed wheel started at 0
     * would walk 1.7e12 ticks on its first advance, so this test ending at
     * all shows that it starts at the clock. */
    for (int m = 0; m < 2; m++) {
        far_from_zero(modes[m], CLOCK_MONOTONIC);
        far_from_zero(modes[m], CLOCK_REALTIME);
    }
}

Test(loop_traps, start_at_zero_is_the_trap)
{
    struct tw_wheel *w = wheel_new(TW_HIER); /* start 0 */
    struct tw_timer t;
    uint64_t now = 0;
    int fired = 0;

    cr_assert_eq(tw_loop_clock(CLOCK_REALTIME, &now), 0);
    tw_timer_init(&t, count, &fired);
    cr_assert_eq(tw_schedule_after(w, &t, 2 * SEC), 0);
    cr_assert_eq(tw_advance(w, now), 1, "the 2 s timer fires at once");
    tw_destroy(w);
}
