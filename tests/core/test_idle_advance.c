/*
 * The inline advance of timewheel/core.h (lib/core/advance.c): an advance
 * to a time before the head's idle_ns only records the time. These cases
 * check that the bound sits at the next piece of work (never after it),
 * that the wheel's cursor may wait behind the time without any answer
 * changing (tw_now, tw_next_deadline, a past deadline, errors, tw_check),
 * that the hashed wheel takes the inline path only within its current
 * tick, and that the exported functions answer as the inline ones.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util.h"
#include "wheel.h"

/* The library's exported twins of the inline functions, reached under
 * other names since the header defines tw_advance inline here. */
extern int64_t exported_advance(struct tw_wheel *w,
                                uint64_t now) __asm__("tw_advance");
extern int64_t
exported_advance_bounded(struct tw_wheel *w, uint64_t now,
                         uint64_t max_run) __asm__("tw_advance_bounded");

/* An advance that the inline path took: 0 ran, the time recorded, and the
 * cursor where it was. */
static void inline_advance(struct tw_wheel *w, uint64_t now)
{
    uint64_t cur = w->cur;

    cr_assert_lt(now, w->head.idle_ns, "not an idle advance: %llu",
                 (unsigned long long)now);
    cr_assert_eq(tw_advance(w, now), 0);
    cr_assert_eq(tw_now(w), now);
    cr_assert_eq(w->cur, cur, "the inline path moved the cursor");
}

/* One timer an hour away: the bound is the start of its slot (the hour
 * wheel's slot 1), every advance before it leaves the cursor behind, and
 * the one that reaches it runs the timer. */
Test(core_idle_advance, bound_is_the_next_work_and_cur_waits)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 3600 * SEC), 0);
    cr_assert_eq(w->head.idle_ns, 3600 * SEC);
    inline_advance(w, MS);
    for (uint64_t t = 2 * MS; t < 3600 * SEC; t += 7 * SEC + 3)
        inline_advance(w, t);
    inline_advance(w, 3600 * SEC - 1);
    wheel_ok(w);
    cr_assert_eq(w->cur, 0);
    cr_assert_eq(tw_next_deadline(w), 3600 * SEC);
    cr_assert_eq(tw_advance(w, 3600 * SEC), 1);
    cr_assert_eq(r.at, 3600 * SEC);
    cr_assert_eq(w->cur, 3600000);
    cr_assert_eq(w->head.idle_ns, UINT64_MAX, "empty: every advance idles");
    wheel_ok(w);
    tw_destroy(w);
}

/* A timer half a second into the hour needs a demotion at the hour: the
 * bound stops there first, then at the timer's own tick. */
Test(core_idle_advance, bound_stops_at_a_demotion)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 3600 * SEC + 500 * MS), 0);
    cr_assert_eq(w->head.idle_ns, 3600 * SEC);
    inline_advance(w, 3600 * SEC - 1);
    cr_assert_eq(tw_advance(w, 3600 * SEC), 0); /* the demotion */
    cr_assert_eq(w->head.idle_ns, 3600 * SEC + 500 * MS);
    inline_advance(w, 3600 * SEC + 500 * MS - 1);
    cr_assert_eq(r.fired, 0);
    cr_assert_eq(tw_advance(w, 3600 * SEC + 500 * MS), 1);
    wheel_ok(w);
    tw_destroy(w);
}

/* After a run of inline advances the cursor is far behind the time. A
 * deadline of 0, one between the cursor and the time, and one at the time
 * itself all run on the next advance, even one to the same time; a
 * deadline after the time but before the old bound lowers the bound. */
Test(core_idle_advance, past_deadlines_after_inline_advances_run_next)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec far, zero, gap, at, soon;

    rec_init(&far, w);
    rec_init(&zero, w);
    rec_init(&gap, w);
    rec_init(&at, w);
    rec_init(&soon, w);
    cr_assert_eq(tw_schedule(w, &far.t, 7200 * SEC), 0);
    for (uint64_t t = 1; t <= 90000; t++)
        inline_advance(w, t * MS);
    cr_assert_eq(w->cur, 0);
    cr_assert_eq(tw_schedule(w, &zero.t, 0), 0);
    cr_assert_eq(tw_schedule(w, &gap.t, 45 * SEC + 1), 0);
    cr_assert_eq(tw_schedule(w, &at.t, 90 * SEC), 0);
    cr_assert_eq(tw_schedule(w, &soon.t, 90 * SEC + 5 * MS), 0);
    cr_assert_eq(tw_pending(w), 5);
    cr_assert_eq(tw_next_deadline(w), 90 * SEC, "work is due now");
    wheel_ok(w);
    cr_assert_eq(tw_advance(w, 90 * SEC), 3);
    cr_assert_eq(zero.fired + gap.fired + at.fired, 3);
    cr_assert_eq(gap.at, 90 * SEC);
    cr_assert_eq(soon.fired, 0);
    cr_assert_leq(w->head.idle_ns, 90 * SEC + 5 * MS);
    cr_assert_eq(tw_next_deadline(w), 90 * SEC + 5 * MS);
    inline_advance(w, 90 * SEC + 5 * MS - 1);
    cr_assert_eq(tw_advance(w, 90 * SEC + 5 * MS), 1);
    cr_assert_eq(soon.at, 90 * SEC + 5 * MS);
    cr_assert_eq(far.fired, 0);
    wheel_ok(w);
    tw_destroy(w);
}

/* Errors keep coming from the general path: backwards, NULL, max_run 0,
 * and an advance from a visitor, whatever the bound says. */
static int advance_from_visitor(struct tw_timer *t, void *ctx)
{
    struct rec *r = TW_CONTAINER_OF(t, struct rec, t);

    r->victim_rc = (int)tw_advance(r->w, tw_now(r->w) + *(uint64_t *)ctx);
    return 0;
}

Test(core_idle_advance, errors_come_through_the_inline_path)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;
    uint64_t step = MS;

    rec_init(&r, w);
    cr_assert_eq(tw_schedule(w, &r.t, 3600 * SEC), 0);
    cr_assert_eq(tw_advance(w, 10 * SEC), 0);
    cr_assert_eq(tw_advance(w, 10 * SEC - 1), -ERANGE);
    cr_assert_eq(tw_advance_bounded(w, 10 * SEC - 1, 1), -ERANGE);
    cr_assert_eq(tw_now(w), 10 * SEC);
    cr_assert_eq(tw_advance(NULL, 0), -EINVAL);
    cr_assert_eq(tw_advance_bounded(NULL, 0, 1), -EINVAL);
    cr_assert_eq(tw_advance_bounded(w, 11 * SEC, 0), -EINVAL);
    cr_assert_eq(tw_now(w), 10 * SEC);
    cr_assert_eq(tw_visit(w, advance_from_visitor, &step), 0);
    cr_assert_eq(r.victim_rc, -EBUSY);
    cr_assert_eq(tw_now(w), 10 * SEC);
    /* The visit gave the bound back. */
    inline_advance(w, 20 * SEC);
    cr_assert_eq(tw_advance_bounded(w, 21 * SEC, 1), 0);
    cr_assert_eq(tw_now(w), 21 * SEC);
    wheel_ok(w);
    tw_destroy(w);
}

/* The hashed wheel walks every tick: the inline path covers only advances
 * within the tick it has reached, and a timer scheduled meanwhile, even
 * one due at the next boundary, fires there and not before. */
Test(core_idle_advance, hashed_idles_only_within_its_tick)
{
    struct tw_wheel *w = wheel_new(TW_HASHED);
    struct rec next, past;

    rec_init(&next, w);
    rec_init(&past, w);
    cr_assert_eq(w->head.idle_ns, MS, "empty and new: tick 0 only");
    inline_advance(w, MS - 1);
    cr_assert_eq(tw_advance(w, 5 * MS + 100), 0);
    cr_assert_eq(w->cur, 5);
    cr_assert_eq(w->head.idle_ns, 6 * MS);
    inline_advance(w, 5 * MS + 500);
    cr_assert_eq(tw_schedule(w, &next.t, 5 * MS + 501), 0);
    cr_assert_eq(tw_schedule(w, &past.t, 5 * MS), 0); /* deferred */
    cr_assert_eq(w->head.idle_ns, 0, "a deferred timer closes the bound");
    cr_assert_eq(tw_advance(w, 5 * MS + 600), 1);
    cr_assert_eq(past.at, 5 * MS + 600);
    cr_assert_eq(w->head.idle_ns, 6 * MS);
    inline_advance(w, 6 * MS - 1);
    cr_assert_eq(next.fired, 0);
    cr_assert_eq(tw_advance(w, 6 * MS), 1);
    cr_assert_eq(next.at, 6 * MS);
    wheel_ok(w);
    tw_destroy(w);
}

/* The same random run through the inline functions on one wheel and the
 * exported ones on another: every answer, the time, the next deadline and
 * every firing agree, in both modes. */
struct pair_rec {
    struct tw_timer t;
    uint64_t *fired_at; /* this timer's slot in its wheel's log */
    struct tw_wheel *w;
};

static void log_fire(struct tw_timer *t, void *arg)
{
    struct pair_rec *p = arg;

    (void)t;
    *p->fired_at = tw_now(p->w);
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void exported_twins_agree(enum tw_mode mode)
{
    enum { N = 16 };
    struct tw_wheel *a = wheel_new(mode), *b = wheel_new(mode);
    struct pair_rec ta[N], tb[N];
    uint64_t fa[N] = {0}, fb[N] = {0}, s = 20261123, now = 0;

    for (int i = 0; i < N; i++) {
        ta[i] = (struct pair_rec){.fired_at = &fa[i], .w = a};
        tb[i] = (struct pair_rec){.fired_at = &fb[i], .w = b};
        tw_timer_init(&ta[i].t, log_fire, &ta[i]);
        tw_timer_init(&tb[i].t, log_fire, &tb[i]);
    }
    for (int step = 0; step < 20000; step++) {
        uint64_t r = next_rand(&s), i = r % N, d;

        switch ((r >> 8) % 8) {
        case 0: /* re-arm, from the past to a few seconds ahead */
            d = now + (r >> 16) % (4 * SEC);
            d = d > SEC ? d - SEC : 0;
            cr_assert_eq(tw_rearm(a, &ta[i].t, d), tw_rearm(b, &tb[i].t, d));
            break;
        case 1:
            cr_assert_eq(tw_cancel(a, &ta[i].t), tw_cancel(b, &tb[i].t));
            break;
        case 2: /* bounded, sometimes backwards */
            d = now + (r >> 16) % (3 * MS);
            d = d > MS / 2 ? d - MS / 2 : 0;
            cr_assert_eq(tw_advance_bounded(a, d, 1 + (r >> 40) % 3),
                         exported_advance_bounded(b, d, 1 + (r >> 40) % 3));
            break;
        default: /* mostly less than a tick, sometimes much more */
            d = now + ((r >> 16) % 16 ? (r >> 20) % (MS / 3)
                                      : (r >> 20) % (40 * SEC));
            cr_assert_eq(tw_advance(a, d), exported_advance(b, d));
        }
        now = tw_now(a);
        cr_assert_eq(tw_now(b), now);
        cr_assert_eq(tw_next_deadline(a), tw_next_deadline(b));
        cr_assert_eq(tw_pending(a), tw_pending(b));
        cr_assert_eq(memcmp(fa, fb, sizeof(fa)), 0, "step %d", step);
        if (step % 64 == 0) {
            wheel_ok(a);
            wheel_ok(b);
        }
    }
    tw_destroy(a);
    tw_destroy(b);
}

Test(core_idle_advance, exported_functions_answer_as_the_inline_ones)
{
    exported_twins_agree(TW_HIER);
    exported_twins_agree(TW_HASHED);
}
