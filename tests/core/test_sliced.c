/*
 * Named cases of the sliced advance (tw_advance_sliced()): a coarse slot's
 * demotion spread over calls of a bounded size, repeated calls that do
 * exactly what one tw_advance() does, the deferred flush bounded too,
 * operations between the calls, and the refusals. The random mix of all of
 * it against the model is in test_differential.c and the fuzz driver.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "list.h"
#include "util.h"
#include "wheel.h"

#define MIN (60 * SEC)

struct stamp {
    struct tw_timer t;
    size_t id;
    uint64_t fired_at; /* tw_now() when it ran; 0 never */
    int runs;
};

struct log {
    struct tw_wheel *w;
    size_t *order; /* ids in the order they ran */
    size_t n;
};

static void on_stamp(struct tw_timer *t, void *arg)
{
    struct stamp *s = TW_CONTAINER_OF(t, struct stamp, t);
    struct log *l = arg;

    s->fired_at = tw_now(l->w);
    s->runs++;
    cr_assert(t->deadline <= s->fired_at, "timer %zu early", s->id);
    l->order[l->n++] = s->id;
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *x >> 11;
}

static size_t list_len(const struct tw_link *head)
{
    size_t n = 0;

    for (const struct tw_link *l = head->next; l != head; l = l->next)
        n++;
    return n;
}

/* Call the sliced advance at now until no work is left there; returns the
 * calls made. Each moves at most work timers off the demoting list. With
 * check, tw_check() runs every 16 calls and at the end (it walks every
 * timer: too slow for every tick of a minute). */
static unsigned slice_until_done(struct tw_wheel *w, uint64_t now,
                                 uint64_t max_run, uint64_t work, bool check)
{
    unsigned calls = 0;

    do {
        size_t before = list_len(&w->demoting), after;

        cr_assert_geq(tw_advance_sliced(w, now, max_run, work), 0);
        after = list_len(&w->demoting);
        cr_assert(after <= before || before == 0,
                  "the demoting list grew while a demotion was under way");
        cr_assert(before - after <= work || after > before,
                  "%zu timers demoted by one call of budget %llu",
                  before - after, (unsigned long long)work);
        if (++calls % 16 == 0 && check)
            wheel_ok(w);
        cr_assert_lt(calls, 1000000, "the sliced advance makes no progress");
    } while (tw_next_deadline(w) <= now);
    if (check)
        wheel_ok(w);
    return calls;
}

/* 20,000 timers in the second minute sit in one slot of the minute level;
 * reaching its start takes about 20,000 / budget calls, none of which runs
 * a callback or demotes more than its budget; then every timer fires on
 * its own tick, in order, never early. */
Test(core_sliced, spreads_a_coarse_slot)
{
    enum { N = 20000, WORK = 500 };
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct stamp *s = calloc(N, sizeof(*s));
    struct log l = {w, calloc(N, sizeof(size_t)), 0};
    uint64_t x = 7, last = 0;
    unsigned calls;

    cr_assert(s && l.order);
    for (size_t i = 0; i < N; i++) {
        s[i].id = i;
        tw_timer_init(&s[i].t, on_stamp, &l);
        cr_assert_eq(tw_schedule(w, &s[i].t, MIN + 1 + lcg(&x) % MIN), 0);
    }
    cr_assert_eq(tw_advance_sliced(w, MIN - 1, 1, 1), 0);
    cr_assert_eq(tw_next_deadline(w), MIN);
    calls = slice_until_done(w, MIN, UINT64_MAX, WORK, true);
    cr_assert_eq(l.n, 0);
    cr_assert(calls >= N / WORK && calls <= N / WORK + 2, "%u calls", calls);
    for (uint64_t now = MIN + MS; now <= 2 * MIN; now += MS)
        slice_until_done(w, now, 64, WORK, now % (5 * SEC) == 0);
    cr_assert_eq(l.n, N);
    for (size_t k = 0; k < N; k++) {
        const struct stamp *f = &s[l.order[k]];

        cr_assert_eq(f->runs, 1);
        cr_assert(f->fired_at >= last, "out of order");
        cr_assert(f->fired_at - f->t.deadline < MS, "timer %zu late", f->id);
        last = f->fired_at;
    }
    tw_destroy(w);
    free(l.order);
    free(s);
}

/* One wheel advanced by tw_advance(), its twin by tw_advance_sliced() calls
 * of random small budgets repeated until no work is left: at every step
 * the same timers run, in order of due tick on both. */
static void twins(enum tw_mode mode, uint64_t span, unsigned steps)
{
    enum { N = 3000 };
    struct tw_wheel *a = wheel_new(mode), *b = wheel_new(mode);
    struct stamp *sa = calloc(N, sizeof(*sa)), *sb = calloc(N, sizeof(*sb));
    struct log la = {a, calloc(N, sizeof(size_t)), 0};
    struct log lb = {b, calloc(N, sizeof(size_t)), 0};
    uint64_t x = 11, now = 0;

    cr_assert(sa && sb && la.order && lb.order);
    for (size_t i = 0; i < N; i++) {
        uint64_t d = lcg(&x) % (i % 3 ? span : span / 50 + 1);

        sa[i].id = sb[i].id = i;
        tw_timer_init(&sa[i].t, on_stamp, &la);
        tw_timer_init(&sb[i].t, on_stamp, &lb);
        cr_assert_eq(tw_schedule(a, &sa[i].t, d), 0);
        cr_assert_eq(tw_schedule(b, &sb[i].t, d), 0);
    }
    for (unsigned k = 0; k < steps; k++) {
        size_t from = la.n;

        now += lcg(&x) % (2 * span / steps + 1);
        tw_advance(a, now);
        do
            cr_assert_geq(
                tw_advance_sliced(b, now, 1 + lcg(&x) % 7, 1 + lcg(&x) % 40),
                0);
        while (tw_next_deadline(b) <= now);
        cr_assert_eq(la.n, lb.n, "step %u: %zu ran, %zu sliced", k, la.n, lb.n);
        for (size_t i = from; i < la.n; i++) {
            cr_assert_eq(sb[la.order[i]].runs, 1, "step %u: timer %zu", k,
                         la.order[i]);
            if (i > from)
                cr_assert_geq(sb[lb.order[i]].t.deadline / MS +
                                  (sb[lb.order[i]].t.deadline % MS != 0),
                              sb[lb.order[i - 1]].t.deadline / MS +
                                  (sb[lb.order[i - 1]].t.deadline % MS != 0),
                              "step %u: out of order", k);
        }
        wheel_ok(b);
    }
    cr_assert_eq(tw_pending(a), tw_pending(b));
    tw_destroy(a);
    tw_destroy(b);
    free(la.order);
    free(lb.order);
    free(sa);
    free(sb);
}

Test(core_sliced, repeated_calls_do_what_one_advance_does)
{
    twins(TW_HIER, 2 * 3600 * SEC, 300);
    twins(TW_HIER, 40 * 24 * 3600 * SEC, 100);
    twins(TW_HASHED, 20 * SEC, 200);
}

/* Timers scheduled in the past wait on the deferred list (as many as a
 * callback may schedule); the next sliced calls re-insert them a budget
 * at a time. */
Test(core_sliced, bounds_the_deferred_flush)
{
    enum { N = 1000, WORK = 10 };
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct stamp *s = calloc(N, sizeof(*s));
    struct log l = {w, calloc(N, sizeof(size_t)), 0};
    unsigned calls = 0;

    cr_assert(s && l.order);
    cr_assert_eq(tw_advance(w, 5 * MS), 0);
    for (size_t i = 0; i < N; i++) {
        s[i].id = i;
        tw_timer_init(&s[i].t, on_stamp, &l);
        cr_assert_eq(tw_schedule(w, &s[i].t, 0), 0);
    }
    cr_assert_eq(list_len(&w->deferred), N);
    while (l.n < N) {
        int64_t ran = tw_advance_sliced(w, 5 * MS, UINT64_MAX, WORK);

        cr_assert(ran >= 0 && ran <= WORK, "call %u ran %lld", calls,
                  (long long)ran);
        cr_assert_lt(++calls, N);
        wheel_ok(w);
    }
    cr_assert_eq(calls, N / WORK);
    cr_assert_gt(tw_next_deadline(w), 5 * MS);
    tw_destroy(w);
    free(l.order);
    free(s);
}

static size_t drained;

static void count_drained(struct tw_timer *t, void *ctx)
{
    (void)t;
    (void)ctx;
    drained++;
}

static int count_visit(struct tw_timer *t, void *ctx)
{
    (void)t;
    ++*(size_t *)ctx;
    return 0;
}

/* Between the calls of a spread demotion every operation works on the
 * timers still waiting: cancel, re-arm later, earlier or into the past,
 * schedule into the slot, visit; a general advance then finishes the
 * demotion, and each timer still pending runs once, never early. */
Test(core_sliced, operations_between_the_calls)
{
    enum { N = 4000 };
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct stamp *s = calloc(N + 1, sizeof(*s));
    struct log l = {w, calloc(N + 1, sizeof(size_t)), 0};
    uint64_t x = 3;
    size_t seen = 0, cancelled = 0;

    cr_assert(s && l.order);
    for (size_t i = 0; i < N; i++) {
        s[i].id = i;
        tw_timer_init(&s[i].t, on_stamp, &l);
        cr_assert_eq(tw_schedule(w, &s[i].t, MIN + 1 + lcg(&x) % MIN), 0);
    }
    cr_assert_eq(tw_advance_sliced(w, MIN, UINT64_MAX, 100), 0);
    cr_assert(!tw__list_empty(&w->demoting));
    for (size_t i = 0; i < N; i += 7) {
        switch (i % 4) {
        case 0:
            cancelled += (size_t)tw_cancel(w, &s[i].t);
            break;
        case 1:
            cr_assert_eq(tw_rearm(w, &s[i].t, 5 * MIN), 1);
            break;
        case 2:
            cr_assert_eq(tw_rearm(w, &s[i].t, MIN + 2 * MS), 1);
            break;
        default:
            cr_assert_eq(tw_rearm(w, &s[i].t, MS), 1);
            break;
        }
        wheel_ok(w);
    }
    s[N].id = N;
    tw_timer_init(&s[N].t, on_stamp, &l);
    cr_assert_eq(tw_schedule(w, &s[N].t, MIN + 3 * MS), 0);
    cr_assert_eq(tw_visit(w, count_visit, &seen), 0);
    cr_assert_eq(seen, N + 1 - cancelled);
    cr_assert_eq(tw_pending(w), seen);
    cr_assert_geq(tw_advance_sliced(w, MIN, UINT64_MAX, 100), 0);
    wheel_ok(w);
    cr_assert_geq(tw_advance(w, MIN + 3 * MS), 3);
    cr_assert(tw__list_empty(&w->demoting));
    wheel_ok(w);
    for (size_t i = 0; i <= N; i++)
        cr_assert_eq(
            s[i].runs,
            tw_timer_pending(&s[i].t) || (i % 7 == 0 && i % 4 == 0) ? 0 : 1,
            "timer %zu", i);
    for (size_t i = 0; i <= N; i++)
        cr_assert_eq(tw_timer_pending(&s[i].t),
                     !(i % 7 == 0 && i % 4 == 0) &&
                         s[i].t.deadline > MIN + 3 * MS,
                     "timer %zu", i);
    cr_assert_geq(tw_advance(w, 10 * MIN), 0);
    cr_assert_eq(l.n, N + 1 - cancelled);
    for (size_t i = 0; i <= N; i++)
        cr_assert_eq(s[i].runs, i % 7 == 0 && i % 4 == 0 ? 0 : 1);
    tw_destroy(w);
    free(l.order);
    free(s);
}

/* A drain in the middle of a spread demotion takes the waiting timers
 * too, and leaves a wheel that works on. */
Test(core_sliced, drain_between_the_calls)
{
    enum { N = 1000 };
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct stamp *s = calloc(N, sizeof(*s));
    struct log l = {w, calloc(N, sizeof(size_t)), 0};
    uint64_t x = 5;

    cr_assert(s && l.order);
    for (size_t i = 0; i < N; i++) {
        tw_timer_init(&s[i].t, on_stamp, &l);
        cr_assert_eq(tw_schedule(w, &s[i].t, MIN + 1 + lcg(&x) % MIN), 0);
    }
    cr_assert_eq(tw_advance_sliced(w, MIN, 1, 10), 0);
    cr_assert(!tw__list_empty(&w->demoting));
    cr_assert_eq(tw_drain(w, count_drained, NULL), N);
    cr_assert_eq(drained, N);
    wheel_ok(w);
    cr_assert_eq(tw_schedule(w, &s[0].t, MIN + MS), 0);
    cr_assert_eq(tw_advance_sliced(w, MIN + MS, 1, 1), 1);
    wheel_ok(w);
    cr_assert_eq(tw_destroy(w), 0);
    free(l.order);
    free(s);
}

static void reenter(struct tw_timer *t, void *arg)
{
    struct rec *r = TW_CONTAINER_OF(t, struct rec, t);

    (void)arg;
    r->victim_rc = (int)tw_advance_sliced(r->w, tw_now(r->w), 1, 1);
    r->fired++;
}

Test(core_sliced, refusals)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct rec r;

    cr_assert_eq(tw_advance_sliced(NULL, 0, 1, 1), -EINVAL);
    cr_assert_eq(tw_advance_sliced(w, 0, 0, 1), -EINVAL);
    cr_assert_eq(tw_advance_sliced(w, 0, 1, 0), -EINVAL);
    cr_assert_eq(tw_advance_sliced(w, 10 * MS, 1, 1), 0);
    cr_assert_eq(tw_advance_sliced(w, 9 * MS, 1, 1), -ERANGE);
    cr_assert_eq(tw_now(w), 10 * MS);
    rec_init(&r, w);
    tw_timer_init(&r.t, reenter, NULL);
    cr_assert_eq(tw_schedule(w, &r.t, 11 * MS), 0);
    cr_assert_eq(tw_advance_sliced(w, 11 * MS, 1, 1), 1);
    cr_assert_eq(r.victim_rc, -EBUSY);
    tw_destroy(w);
}
