/*
 * The purgatory driven by a core wheel, single-threaded as in an event
 * loop: one named case per behaviour of watch, check, expiry, cancel_key
 * and stop (suite purgatory). The same behaviours over the service are in
 * test_service.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>

#include "preq.h"
#include "util.h"

struct fixture {
    struct tw_wheel *w;
    struct tw_purgatory *p;
};

static struct fixture fx_new(void)
{
    struct fixture f;

    f.w = wheel_new(TW_HIER);
    f.p = purgatory_on_wheel(f.w);
    return f;
}

static void fx_free(struct fixture *f)
{
    cr_assert_eq(tw_purgatory_destroy(f->p), 0);
    cr_assert_eq(tw_pending(f->w), 0, "a timeout left in the wheel");
    cr_assert_eq(tw_destroy(f->w), 0);
}

Test(purgatory_watch, completes_at_once_without_watching)
{
    struct fixture f = fx_new();
    struct tw_key k = pkey("orders-3");
    struct preq r;

    preq_init(&r, f.p);
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_watch(f.p, &r.op, &k, 1, 200 * MS), 1);
    cr_assert_eq(r.tries, 1);
    cr_assert_eq(r.completes, 1);
    cr_assert_eq(r.expires, 0);
    cr_assert_eq(r.state_in_complete, TW_DELAYED_COMPLETED);
    cr_assert_eq(tw_pending(f.w), 0, "no timeout armed");
    stats_are(f.p, 1, 1, 0, 0, 0, 0, 0);
    fx_free(&f);
}

Test(purgatory_watch, check_completes_a_watched_operation_once)
{
    struct fixture f = fx_new();
    struct tw_key k = pkey("orders-3");
    struct preq r;

    preq_init(&r, f.p);
    cr_assert_eq(tw_purgatory_watch(f.p, &r.op, &k, 1, 200 * MS), 0);
    cr_assert_eq(r.tries, 2, "tried at once and once more after watching");
    cr_assert_eq(tw_delayed_state(&r.op), TW_DELAYED_WATCHED);
    cr_assert_eq(tw_pending(f.w), 1, "the timeout is armed");
    stats_are(f.p, 1, 0, 0, 0, 0, 1, 1);
    /* Not ready: a check tries and leaves it watched. */
    cr_assert_eq(tw_purgatory_check(f.p, "orders-3", 8), 0);
    cr_assert_eq(r.tries, 3);
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(f.p, "orders-3", 8), 1);
    cr_assert_eq(r.completes, 1);
    cr_assert_eq(r.expires, 0);
    cr_assert_eq(r.state_in_complete, TW_DELAYED_COMPLETED);
    /* Completion removed it and cancelled its timeout at once. */
    cr_assert_eq(tw_pending(f.w), 0);
    stats_are(f.p, 1, 1, 0, 0, 0, 0, 0);
    cr_assert_eq(tw_purgatory_check(f.p, "orders-3", 8), 0);
    cr_assert_eq(r.tries, 4, "a completed operation is never tried again");
    tw_advance(f.w, SEC);
    cr_assert_eq(r.completes, 1);
    cr_assert_eq(r.expires, 0);
    fx_free(&f);
}

Test(purgatory_watch, check_of_another_key_does_not_try)
{
    struct fixture f = fx_new();
    struct tw_key k = pkey("orders-3");
    struct preq r;

    preq_init(&r, f.p);
    cr_assert_eq(tw_purgatory_watch(f.p, &r.op, &k, 1, 200 * MS), 0);
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(f.p, "orders-4", 8), 0);
    cr_assert_eq(tw_purgatory_check(f.p, "orders-", 7), 0);
    cr_assert_eq(r.tries, 2);
    cr_assert_eq(tw_purgatory_check(f.p, "orders-3", 8), 1);
    fx_free(&f);
}

Test(purgatory_watch, check_returns_how_many_completed)
{
    struct fixture f = fx_new();
    struct tw_key k = pkey("t-0");
    struct preq r[10];

    for (int i = 0; i < 10; i++) {
        preq_init(&r[i], f.p);
        cr_assert_eq(tw_purgatory_watch(f.p, &r[i].op, &k, 1, SEC), 0);
    }
    for (int i = 0; i < 10; i += 3)
        atomic_store(&r[i].ready, true);
    cr_assert_eq(tw_purgatory_check(f.p, "t-0", 3), 4);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(r[i].completes, i % 3 == 0);
    stats_are(f.p, 10, 4, 0, 0, 0, 6, 1);
    cr_assert_eq(tw_pending(f.w), 6);
    fx_free(&f);
}

Test(purgatory_watch, completion_leaves_every_key)
{
    struct fixture f = fx_new();
    struct tw_key k[3] = {pkey("a"), pkey("b"), pkey("c")};
    struct preq r;

    preq_init(&r, f.p);
    cr_assert_eq(tw_purgatory_watch(f.p, &r.op, k, 3, SEC), 0);
    stats_are(f.p, 1, 0, 0, 0, 0, 1, 3);
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(f.p, "b", 1), 1);
    /* Gone from a and c too, and their key nodes freed. */
    stats_are(f.p, 1, 1, 0, 0, 0, 0, 0);
    cr_assert_eq(tw_purgatory_check(f.p, "a", 1), 0);
    cr_assert_eq(tw_purgatory_check(f.p, "c", 1), 0);
    cr_assert_eq(r.completes, 1);
    fx_free(&f);
}

Test(purgatory_watch, timeout_expires_then_completes_once)
{
    struct fixture f = fx_new();
    struct tw_key k[2] = {pkey("a"), pkey("b")};
    struct preq r;

    preq_init(&r, f.p);
    cr_assert_eq(tw_purgatory_watch(f.p, &r.op, k, 2, 200 * MS), 0);
    cr_assert_eq(tw_advance(f.w, 199 * MS), 0);
    cr_assert_eq(r.completes, 0, "never early");
    cr_assert_eq(tw_advance(f.w, 200 * MS), 1);
    cr_assert_eq(r.expires, 1);
    cr_assert_eq(r.completes, 1);
    cr_assert(r.expired_first, "on_expire runs before on_complete");
    cr_assert_eq(r.state_in_complete, TW_DELAYED_EXPIRED);
    stats_are(f.p, 1, 0, 1, 0, 0, 0, 0);
    /* Expired operations are out of every list. */
    atomic_store(&r.ready, true);
    cr_assert_eq(tw_purgatory_check(f.p, "a", 1), 0);
    cr_assert_eq(r.completes, 1);
    fx_free(&f);
}

/* The event that makes the operation ready happens between the first try
 * and the watch: the try after watching catches it. */
Test(purgatory_watch, event_during_watch_is_not_missed)
{
    struct fixture f = fx_new();
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, f.p);
    r.ready_at_try = 2;
    cr_assert_eq(tw_purgatory_watch(f.p, &r.op, &k, 1, SEC), 1);
    cr_assert_eq(r.tries, 2);
    cr_assert_eq(r.completes, 1);
    cr_assert_eq(tw_pending(f.w), 0);
    stats_are(f.p, 1, 1, 0, 0, 0, 0, 0);
    fx_free(&f);
}

Test(purgatory_watch, cancel_key_hands_back_uncompleted)
{
    struct fixture f = fx_new();
    struct tw_key ab[2] = {pkey("a"), pkey("b")}, b = pkey("b");
    struct preq r[3];

    for (int i = 0; i < 3; i++)
        preq_init(&r[i], f.p);
    cr_assert_eq(tw_purgatory_watch(f.p, &r[0].op, ab, 2, SEC), 0);
    cr_assert_eq(tw_purgatory_watch(f.p, &r[1].op, ab, 1, SEC), 0);
    cr_assert_eq(tw_purgatory_watch(f.p, &r[2].op, &b, 1, SEC), 0);
    cr_assert_eq(tw_purgatory_cancel_key(f.p, "a", 1, preq_handback, NULL), 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(r[i].handed_back, 1);
        cr_assert_eq(r[i].completes + r[i].expires, 0);
    }
    /* r[0] left b too; r[2] is still watched on b, with its timeout. */
    stats_are(f.p, 3, 0, 0, 2, 0, 1, 1);
    cr_assert_eq(tw_pending(f.w), 1);
    cr_assert_eq(tw_purgatory_cancel_key(f.p, "a", 1, preq_handback, NULL), 0);
    tw_advance(f.w, 2 * SEC);
    cr_assert_eq(r[0].completes + r[1].completes, 0, "timeouts cancelled");
    cr_assert_eq(r[2].expires, 1);
    /* A handed-back operation is the caller's: initialise, watch again. */
    cr_assert_eq(tw_purgatory_watch(f.p, &r[0].op, &b, 1, SEC), -EALREADY);
    preq_init(&r[0], f.p);
    cr_assert_eq(tw_purgatory_watch(f.p, &r[0].op, &b, 1, SEC), 0);
    fx_free(&f);
}

Test(purgatory_watch, stop_hands_back_every_watched_operation)
{
    struct fixture f = fx_new();
    struct tw_key k[4] = {pkey("x"), pkey("y"), pkey("z"), pkey("w")};
    struct preq r[50], late;

    for (int i = 0; i < 50; i++) {
        preq_init(&r[i], f.p);
        cr_assert_eq(tw_purgatory_watch(f.p, &r[i].op, &k[i % 3],
                                        1 + (size_t)(i % 2), SEC),
                     0);
    }
    atomic_store(&r[7].ready, true);
    cr_assert_eq(tw_purgatory_check(f.p, k[7 % 3].bytes, 1), 1);
    cr_assert_eq(tw_purgatory_stop(f.p, preq_handback, NULL), 49);
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(r[i].handed_back, i != 7);
        cr_assert_eq(r[i].completes, i == 7);
    }
    stats_are(f.p, 50, 1, 0, 0, 49, 0, 0);
    cr_assert_eq(tw_pending(f.w), 0, "every timeout cancelled");
    cr_assert_eq(tw_purgatory_stop(f.p, preq_handback, NULL), 0,
                 "a second stop");
    preq_init(&late, f.p);
    cr_assert_eq(tw_purgatory_watch(f.p, &late.op, k, 1, SEC), -ESHUTDOWN);
    cr_assert_eq(tw_delayed_state(&late.op), TW_DELAYED_IDLE);
    cr_assert_eq(late.tries, 0);
    fx_free(&f);
}

/* Operations may be freed or watched again from on_complete. */
static void rewatch(struct tw_delayed *op, void *arg)
{
    struct preq *r = arg;
    struct tw_key k = pkey("again");

    atomic_fetch_add(&r->completes, 1);
    if (atomic_load(&r->completes) == 1) {
        tw_delayed_init(op, op->try_complete, rewatch, NULL, r);
        /* Still ready: it completes at once, from inside on_complete. */
        cr_assert_eq(tw_purgatory_watch(r->p, op, &k, 1, SEC), 1);
    }
}

Test(purgatory_watch, on_complete_may_watch_again)
{
    struct fixture f = fx_new();
    struct tw_key k = pkey("k");
    struct preq r;

    preq_init(&r, f.p);
    r.op.on_complete = rewatch;
    cr_assert_eq(tw_purgatory_watch(f.p, &r.op, &k, 1, SEC), 0);
    atomic_store(&r.ready, true);
    /* Completed on k, then (ready still true) at once on "again". */
    cr_assert_eq(tw_purgatory_check(f.p, "k", 1), 1);
    cr_assert_eq(r.completes, 2);
    stats_are(f.p, 2, 2, 0, 0, 0, 0, 0);
    fx_free(&f);
}

/* Many operations on many keys, a key count that makes the tables grow
 * and shrink, then all gone: no key and no timeout left behind. */
Test(purgatory_watch, many_keys_grow_and_shrink_the_tables)
{
    enum { N = 3000 };
    struct fixture f = fx_new();
    static struct preq r[N];
    char name[N][16];

    for (int i = 0; i < N; i++) {
        struct tw_key k;

        preq_init(&r[i], f.p);
        k.len = (size_t)snprintf(name[i], sizeof(name[i]), "key-%d", i);
        k.bytes = name[i];
        cr_assert_eq(tw_purgatory_watch(f.p, &r[i].op, &k, 1,
                                        (uint64_t)(i % 100 + 1) * MS),
                     0);
    }
    stats_are(f.p, N, 0, 0, 0, 0, N, N);
    for (int i = 0; i < N; i += 2) {
        atomic_store(&r[i].ready, true);
        cr_assert_eq(tw_purgatory_check(f.p, name[i], strlen(name[i])), 1);
    }
    tw_advance(f.w, 100 * MS);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].completes, 1);
        cr_assert_eq(r[i].expires, i % 2);
    }
    stats_are(f.p, N, N / 2, N / 2, 0, 0, 0, 0);
    fx_free(&f);
}
