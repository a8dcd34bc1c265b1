/*
 * The purgatory over a timer of the caller's (suite purgatory_timer): a toy
 * timer that records what was armed and disarmed, fired by hand with
 * tw_purgatory_expire(), as the benchmark fires a heap's or libuv's.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "preq.h"
#include "util.h"

struct toy {
    int armed, disarmed, fail_next;
    uint64_t last_timeout;
};

static int toy_arm(void *ctx, struct tw_delayed *op, uint64_t timeout_ns)
{
    struct toy *t = ctx;

    (void)op;
    if (t->fail_next) {
        t->fail_next = 0;
        return -EAGAIN;
    }
    t->armed++;
    t->last_timeout = timeout_ns;
    return 0;
}

static void toy_disarm(void *ctx, struct tw_delayed *op)
{
    (void)op;
    ((struct toy *)ctx)->disarmed++;
}

static struct tw_purgatory *on_toy(struct toy *t)
{
    struct tw_purgatory_timer tm = {toy_arm, toy_disarm, t};
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p;
    int err = 1;

    tw_purgatory_config_init(&cfg);
    cfg.timer = &tm; /* copied */
    p = tw_purgatory_create(&cfg, &err);
    cr_assert(p && err == 0);
    return p;
}

Test(purgatory_timer, expire_and_complete_through_the_callers_timer)
{
    struct toy t = {0};
    struct tw_purgatory *p = on_toy(&t);
    struct tw_key k = pkey("k");
    struct preq r[2];

    preq_init(&r[0], p);
    preq_init(&r[1], p);
    cr_assert_eq(tw_purgatory_watch(p, &r[0].op, &k, 1, 200 * MS), 0);
    cr_assert_eq(tw_purgatory_watch(p, &r[1].op, &k, 1, 200 * MS), 0);
    cr_assert_eq(t.armed, 2);
    cr_assert_eq(t.last_timeout, 200 * MS);
    cr_assert_eq(tw_purgatory_expire(p, &r[0].op), 1);
    cr_assert_eq(r[0].expires, 1);
    cr_assert_eq(r[0].completes, 1);
    cr_assert(r[0].expired_first);
    cr_assert_eq(t.disarmed, 1, "disarmed after it fired too");
    atomic_store(&r[1].ready, true);
    cr_assert_eq(tw_purgatory_check(p, "k", 1), 1);
    cr_assert_eq(t.disarmed, 2);
    /* Late or repeated timers are harmless. */
    cr_assert_eq(tw_purgatory_expire(p, &r[1].op), 0);
    cr_assert_eq(tw_purgatory_expire(p, &r[0].op), 0);
    cr_assert_eq(r[1].expires, 0);
    stats_are(p, 2, 1, 1, 0, 0, 0, 0);
    cr_assert_eq(tw_purgatory_destroy(p), 0);
}

Test(purgatory_timer, bad_input)
{
    struct toy t = {.fail_next = 1};
    struct tw_purgatory_timer half = {toy_arm, NULL, &t};
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p = on_toy(&t), *other;
    struct tw_key k = pkey("k");
    struct tw_wheel *w = wheel_new(TW_HIER);
    struct preq r;

    tw_purgatory_config_init(&cfg);
    cfg.timer = &half;
    cr_assert_null(tw_purgatory_create(&cfg, NULL), "no disarm");
    cfg.wheel = w;
    cfg.timer = NULL;
    cfg.now = wheel_clock;
    cfg.now_ctx = w;
    other = tw_purgatory_create(&cfg, NULL);
    cr_assert_not_null(other);
    preq_init(&r, p);
    /* The caller's arm refuses: watch returns its code, nothing changes. */
    cr_assert_eq(tw_purgatory_watch(p, &r.op, &k, 1, SEC), -EAGAIN);
    cr_assert_eq(tw_delayed_state(&r.op), TW_DELAYED_IDLE);
    stats_are(p, 0, 0, 0, 0, 0, 0, 0);
    cr_assert_eq(tw_purgatory_expire(NULL, &r.op), -EINVAL);
    cr_assert_eq(tw_purgatory_expire(p, NULL), -EINVAL);
    cr_assert_eq(tw_purgatory_expire(other, &r.op), -EINVAL,
                 "a purgatory over a wheel expires by itself");
    cr_assert_eq(tw_purgatory_expire(p, &r.op), 0, "not watched");
    cr_assert_eq(tw_purgatory_watch(p, &r.op, &k, 1, SEC), 0);
    cr_assert_eq(tw_purgatory_stop(p, preq_handback, NULL), 1);
    cr_assert_eq(t.disarmed, 1);
    cr_assert_eq(tw_purgatory_expire(p, &r.op), 0, "handed back");
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(tw_purgatory_destroy(other), 0);
    cr_assert_eq(tw_destroy(w), 0);
}

static int expire_self(struct preq *r)
{
    return tw_purgatory_expire(r->p, &r->op);
}

/* tw_purgatory_expire() of an operation another purgatory watches, or
 * called from inside a try_complete: the first is no timer of this
 * purgatory's (0, nothing changes), the second -EDEADLK. A timer with no
 * arm, as one with no disarm, is refused at the create. */
Test(purgatory_timer, expire_of_anothers_operation_or_from_a_try)
{
    struct toy t1 = {0}, t2 = {0};
    struct tw_purgatory_timer no_arm = {NULL, toy_disarm, &t1};
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p1 = on_toy(&t1), *p2 = on_toy(&t2);
    struct tw_key k = pkey("k");
    struct preq r;
    int err = 0;

    tw_purgatory_config_init(&cfg);
    cfg.timer = &no_arm;
    cr_assert_null(tw_purgatory_create(&cfg, &err));
    cr_assert_eq(err, -EINVAL);
    preq_init(&r, p1);
    cr_assert_eq(tw_purgatory_watch(p1, &r.op, &k, 1, SEC), 0);
    cr_assert_eq(tw_purgatory_expire(p2, &r.op), 0);
    cr_assert_eq(r.expires, 0);
    cr_assert_eq(tw_delayed_state(&r.op), TW_DELAYED_WATCHED);
    r.in_try = expire_self;
    cr_assert_eq(tw_purgatory_check(p1, "k", 1), 0);
    cr_assert_eq(r.in_try_rc, -EDEADLK);
    cr_assert_eq(r.expires, 0);
    cr_assert_eq(tw_purgatory_expire(p1, &r.op), 1);
    cr_assert_eq(r.expires, 1);
    cr_assert_eq(tw_purgatory_destroy(p1), 0);
    cr_assert_eq(tw_purgatory_destroy(p2), 0);
}
