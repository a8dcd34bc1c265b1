/*
 * The purgatory's answer to bad input (suite purgatory_badinput; the rows
 * of docs/api.md): each case asserts the error, that nothing changed (the
 * operation is idle and was never called, the counters did not move, no
 * timeout is armed) and that the same operation then works.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "preq.h"
#include "util.h"

static struct tw_wheel *wheel;
static struct tw_purgatory *purg;

static void setup(void)
{
    wheel = wheel_new(TW_HIER);
    purg = purgatory_on_wheel(wheel);
}

static void teardown(void)
{
    cr_assert_eq(tw_purgatory_destroy(purg), 0);
    cr_assert_eq(tw_destroy(wheel), 0);
}

TestSuite(purgatory_badinput, .init = setup, .fini = teardown);

/* Hand back what the test left watched (its operations live on its stack,
 * so they must be gone before the test returns). */
static void finish(int64_t watched)
{
    cr_assert_eq(tw_purgatory_stop(purg, preq_handback, NULL), watched);
}

/* Nothing happened to r, and it can be watched now. */
static void unharmed(struct preq *r)
{
    struct tw_key good = pkey("good");

    cr_assert_eq(tw_delayed_state(&r->op), TW_DELAYED_IDLE);
    cr_assert_eq(r->tries + r->completes + r->expires, 0);
    stats_are(purg, 0, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(tw_pending(wheel), 0);
    cr_assert_eq(tw_purgatory_watch(purg, &r->op, &good, 1, SEC), 0,
                 "the operation still works");
    finish(1);
}

Test(purgatory_badinput, null_purgatory_or_operation)
{
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, purg);
    cr_assert_eq(tw_purgatory_watch(NULL, &r.op, &k, 1, SEC), -EINVAL);
    cr_assert_eq(tw_purgatory_watch(purg, NULL, &k, 1, SEC), -EINVAL);
    unharmed(&r);
}

Test(purgatory_badinput, null_callbacks)
{
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, purg);
    r.op.try_complete = NULL;
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), -EINVAL);
    preq_init(&r, purg);
    r.op.on_complete = NULL;
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), -EINVAL);
    preq_init(&r, purg);
    unharmed(&r);
}

Test(purgatory_badinput, null_on_expire_is_allowed)
{
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, purg);
    r.op.on_expire = NULL;
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, MS), 0);
    tw_advance(wheel, 10 * MS);
    cr_assert_eq(r.completes, 1);
    cr_assert_eq(r.expires, 0);
    cr_assert_eq(r.state_in_complete, TW_DELAYED_EXPIRED);
}

Test(purgatory_badinput, no_keys)
{
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, purg);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, NULL, 1, SEC), -EINVAL);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 0, SEC), -EINVAL);
    unharmed(&r);
}

Test(purgatory_badinput, same_key_twice)
{
    struct tw_key k[3] = {pkey("a"), pkey("b"), pkey("a")};
    struct preq r;

    preq_init(&r, purg);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, k, 3, SEC), -EINVAL);
    /* Same bytes, other length: other keys. */
    k[2] = (struct tw_key){"ab", 2};
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, k, 3, SEC), 0);
    stats_are(purg, 1, 0, 0, 0, 0, 1, 3);
    finish(1);
}

Test(purgatory_badinput, empty_null_or_huge_key)
{
    static char huge[TW_PURGATORY_MAX_KEY_LEN + 1];
    struct tw_key k[2] = {pkey("a"), {"", 0}};
    struct preq r;

    preq_init(&r, purg);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, k, 2, SEC), -EINVAL);
    k[1] = (struct tw_key){NULL, 3};
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, k, 2, SEC), -EINVAL);
    k[1] = (struct tw_key){huge, sizeof(huge)};
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, k, 2, SEC), -E2BIG);
    cr_assert_eq(tw_purgatory_check(purg, "", 0), -EINVAL);
    cr_assert_eq(tw_purgatory_check(purg, NULL, 1), -EINVAL);
    cr_assert_eq(tw_purgatory_check(purg, huge, sizeof(huge)), -E2BIG);
    cr_assert_eq(
        tw_purgatory_cancel_key(purg, huge, sizeof(huge), preq_handback, NULL),
        -E2BIG);
    cr_assert_eq(tw_delayed_state(&r.op), TW_DELAYED_IDLE);
    cr_assert_eq(r.tries, 0);
    stats_are(purg, 0, 0, 0, 0, 0, 0, 0);
    /* The longest key is a key like any other. */
    memset(huge, 'h', sizeof(huge));
    preq_init(&r, purg);
    k[1] = (struct tw_key){huge, TW_PURGATORY_MAX_KEY_LEN};
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k[1], 1, SEC), 0);
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(purg, huge, TW_PURGATORY_MAX_KEY_LEN), 1);
}

Test(purgatory_badinput, too_many_keys)
{
    struct tw_key k[TW_PURGATORY_MAX_KEYS + 1];
    char name[TW_PURGATORY_MAX_KEYS + 1][8];
    struct preq r;

    for (unsigned i = 0; i <= TW_PURGATORY_MAX_KEYS; i++) {
        k[i].len = (size_t)snprintf(name[i], sizeof(name[i]), "k%u", i);
        k[i].bytes = name[i];
    }
    preq_init(&r, purg);
    cr_assert_eq(
        tw_purgatory_watch(purg, &r.op, k, TW_PURGATORY_MAX_KEYS + 1, SEC),
        -E2BIG);
    cr_assert_eq(tw_delayed_state(&r.op), TW_DELAYED_IDLE);
    stats_are(purg, 0, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(
        tw_purgatory_watch(purg, &r.op, k + 1, TW_PURGATORY_MAX_KEYS, SEC), 0,
        "the most keys");
    finish(1);
}

Test(purgatory_badinput, watching_a_watched_operation)
{
    struct tw_key k = pkey("k"), other = pkey("other");
    struct preq r;

    preq_init(&r, purg);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), 0);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &other, 1, SEC), -EBUSY);
    stats_are(purg, 1, 0, 0, 0, 0, 1, 1);
    cr_assert_eq(tw_pending(wheel), 1);
    cr_assert_eq(r.tries, 2, "the refused watch did not try");
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(purg, "k", 1), 1);
    cr_assert_eq(r.completes, 1);
}

Test(purgatory_badinput, watching_a_finished_operation)
{
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, purg);
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), 1);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), -EALREADY);
    cr_assert_eq(r.tries, 1);
    cr_assert_eq(r.completes, 1);
    preq_init(&r, purg);
    r.op.on_expire = NULL;
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, MS), 0);
    tw_advance(wheel, SEC);
    cr_assert_eq(tw_delayed_state(&r.op), TW_DELAYED_EXPIRED);
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), -EALREADY);
    stats_are(purg, 2, 1, 1, 0, 0, 0, 0);
}

/* Calls into the same purgatory from try_complete: refused, and the try
 * itself goes on as if they had not been made. */
static int check_inside(struct preq *r)
{
    return (int)tw_purgatory_check(r->p, "k", 1);
}

static int watch_inside(struct preq *r)
{
    static struct preq other;
    struct tw_key k = pkey("k");

    preq_init(&other, r->p);
    return tw_purgatory_watch(r->p, &other.op, &k, 1, SEC);
}

static int cancel_inside(struct preq *r)
{
    return (int)tw_purgatory_cancel_key(r->p, "k", 1, preq_handback, NULL);
}

static int stop_inside(struct preq *r)
{
    return (int)tw_purgatory_stop(r->p, preq_handback, NULL);
}

static int destroy_inside(struct preq *r)
{
    return tw_purgatory_destroy(r->p);
}

Test(purgatory_badinput, calls_from_inside_try_complete)
{
    int (*call[])(struct preq *) = {check_inside, watch_inside, cancel_inside,
                                    stop_inside, destroy_inside};
    struct tw_key k = pkey("k");

    for (unsigned i = 0; i < sizeof(call) / sizeof(call[0]); i++) {
        struct preq r;

        preq_init(&r, purg);
        cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), 0);
        r.in_try = call[i];
        atomic_store(&r.ready, true);
        cr_assert_eq(tw_purgatory_check(purg, "k", 1), 1, "call %u", i);
        cr_assert_eq(r.in_try_rc, -EDEADLK, "call %u", i);
        cr_assert_eq(r.completes, 1);
        cr_assert_eq(r.handed_back, 0);
        stats_are(purg, i + 1, i + 1, 0, 0, 0, 0, 0);
    }
    /* Also from the first try, before the operation is watched. */
    {
        struct preq r;

        preq_init(&r, purg);
        r.in_try = check_inside;
        cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), 0);
        cr_assert_eq(r.in_try_rc, -EDEADLK);
        finish(1);
    }
}

/* A try_complete of one purgatory may use another. */
static struct tw_purgatory *second;

static int check_second(struct preq *r)
{
    /* Summed over both tries of the watch. */
    return r->in_try_rc + (int)tw_purgatory_check(second, "k", 1);
}

Test(purgatory_badinput, try_complete_may_call_another_purgatory)
{
    struct tw_key k = pkey("k");
    struct preq r, s;

    second = purgatory_on_wheel(wheel);
    preq_init(&s, second);
    cr_assert_eq(tw_purgatory_watch(second, &s.op, &k, 1, SEC), 0);
    atomic_store(&s.ready, true);
    preq_init(&r, purg);
    r.in_try = check_second;
    cr_assert_eq(tw_purgatory_watch(purg, &r.op, &k, 1, SEC), 0);
    cr_assert_eq(r.in_try_rc, 1, "the other purgatory's check ran");
    cr_assert_eq(s.completes, 1);
    cr_assert_eq(tw_purgatory_destroy(second), 0);
    finish(1);
}

Test(purgatory_badinput, other_null_arguments)
{
    struct tw_purgatory_stats st;
    struct tw_purgatory_config cfg;
    int err = 1;

    cr_assert_eq(tw_purgatory_check(NULL, "k", 1), -EINVAL);
    cr_assert_eq(tw_purgatory_cancel_key(NULL, "k", 1, preq_handback, NULL),
                 -EINVAL);
    cr_assert_eq(tw_purgatory_cancel_key(purg, "k", 1, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_purgatory_stop(NULL, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_purgatory_destroy(NULL), 0);
    cr_assert_eq(tw_purgatory_stats(NULL, &st), -EINVAL);
    cr_assert_eq(tw_purgatory_stats(purg, NULL), -EINVAL);
    cr_assert_eq(tw_delayed_state(NULL), TW_DELAYED_IDLE);
    tw_delayed_init(NULL, NULL, NULL, NULL, NULL);
    tw_purgatory_config_init(NULL);
    cr_assert_null(tw_purgatory_create(NULL, &err));
    cr_assert_eq(err, -EINVAL);
    tw_purgatory_config_init(&cfg);
    cr_assert_null(tw_purgatory_create(&cfg, &err),
                   "neither wheel nor service");
    cr_assert_eq(err, -EINVAL);
    cfg.wheel = wheel;
    cfg.service = (struct tw_service *)wheel; /* never touched: refused */
    cr_assert_null(tw_purgatory_create(&cfg, &err), "both");
    cr_assert_eq(err, -EINVAL);
    cfg.service = NULL;
    err = 0;
    cr_assert_null(tw_purgatory_create(&cfg, &err), "a wheel without now");
    cr_assert_eq(err, -EINVAL);
    cfg.now = wheel_clock;
    cfg.now_ctx = wheel;
    cfg.shards = TW_PURGATORY_MAX_SHARDS + 1;
    cr_assert_null(tw_purgatory_create(&cfg, NULL));
    cfg.shards = 3; /* rounded up to 4 */
    second = tw_purgatory_create(&cfg, &err);
    cr_assert(second && err == 0);
    cr_assert_eq(tw_purgatory_destroy(second), 0);
}

Test(purgatory_badinput, timeouts_zero_and_huge)
{
    struct tw_key k = pkey("k");
    struct preq r[2];

    preq_init(&r[0], purg);
    preq_init(&r[1], purg);
    cr_assert_eq(tw_purgatory_watch(purg, &r[0].op, &k, 1, 0), 0);
    cr_assert_eq(tw_purgatory_watch(purg, &r[1].op, &k, 1, UINT64_MAX), 0);
    tw_advance(wheel, MS);
    cr_assert_eq(r[0].expires, 1, "a timeout of 0 expires at the next tick");
    cr_assert_eq(r[1].completes, 0);
    atomic_store(&r[1].ready, true);
    cr_assert_eq(tw_purgatory_check(purg, "k", 1), 1);
}

/* Over a core wheel the loop's clock is required, and only there: a wheel
 * alone would count timeouts from its last advance (issue 22, defect 1). */
Test(purgatory_badinput, a_wheel_needs_the_loops_clock)
{
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct tw_service *s = default_service(TW_HIER);
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p;
    int err = 0;

    tw_purgatory_config_init(&cfg);
    cr_assert_null(cfg.now, "no clock by default");
    cfg.wheel = w;
    cr_assert_null(tw_purgatory_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL, "a wheel without now");
    cfg.wheel = NULL;
    cfg.service = s;
    cfg.now = tw_purgatory_monotonic;
    err = 0;
    cr_assert_null(tw_purgatory_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL, "now with a service");
    cfg.service = NULL;
    cfg.wheel = w;
    p = tw_purgatory_create(&cfg, &err);
    cr_assert(p && err == 0, "a wheel with now: %d", err);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(tw_service_destroy(s), 0);
    cr_assert_eq(tw_destroy(w), 0);
}
