/*
 * The purgatory's memory (suite purgatory_alloc): every block comes from
 * the library's allocator (tw_alloc), every one goes back, and a failure
 * at any one allocation gives -ENOMEM (or NULL) and loses nothing.
 *
 * Each test installs a counting allocator with tw_set_allocator() before
 * the library's first allocation: Criterion runs each test in a process of
 * its own, so the allocator is this test's alone.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "preq.h"
#include "util.h"

static _Atomic long live_bytes, live_blocks, allocs;
/* Fail the allocation with this number (1-based, counted from arming);
 * 0: never. */
static _Atomic long fail_at;

static void *counting_alloc(void *ctx, size_t size)
{
    void *p;

    (void)ctx;
    if (atomic_load(&fail_at) &&
        atomic_fetch_add(&allocs, 1) + 1 == atomic_load(&fail_at))
        return NULL;
    p = malloc(size);
    if (p) {
        atomic_fetch_add(&live_bytes, (long)size);
        atomic_fetch_add(&live_blocks, 1);
    }
    return p;
}

static void counting_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (!p)
        return;
    atomic_fetch_sub(&live_bytes, (long)size);
    atomic_fetch_sub(&live_blocks, 1);
    free(p);
}

static void install(void)
{
    static const struct tw_allocator a = {counting_alloc, counting_free, NULL};

    cr_assert_eq(tw_set_allocator(&a), 0);
}

/* Arm a failure at the n-th allocation from now (0 disarms). */
static void fail_nth(long n)
{
    atomic_store(&allocs, 0);
    atomic_store(&fail_at, n);
}

Test(purgatory_alloc, memory_returns_to_baseline)
{
    struct tw_key k[3] = {pkey("a"), pkey("b"), pkey("c")};
    static struct preq r[300];
    struct tw_wheel *w;
    struct tw_purgatory *p;
    long base;

    install();
    w = wheel_new(TW_HIER);
    base = atomic_load(&live_bytes);
    p = purgatory_on_wheel(w);
    for (int round = 0; round < 3; round++) {
        long before = atomic_load(&live_bytes);

        for (int i = 0; i < 300; i++) {
            preq_init(&r[i], p);
            cr_assert_eq(tw_purgatory_watch(p, &r[i].op, &k[i % 3],
                                            1 + (size_t)(i % 2) * (i % 3 < 2),
                                            (uint64_t)(i + 1) * MS),
                         0);
        }
        cr_assert_gt(atomic_load(&live_bytes), before);
        for (int i = 0; i < 300; i += 2)
            atomic_store(&r[i].ready, true);
        cr_assert_eq(tw_purgatory_check(p, "a", 1) +
                         tw_purgatory_check(p, "b", 1) +
                         tw_purgatory_check(p, "c", 1),
                     150);
        tw_advance(w, tw_now(w) + SEC);
        /* Completed and expired operations left nothing behind. */
        cr_assert_eq(atomic_load(&live_bytes), before, "round %d", round);
    }
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(atomic_load(&live_bytes), base);
    cr_assert_eq(tw_destroy(w), 0);
    cr_assert_eq(atomic_load(&live_blocks), 0);
}

Test(purgatory_alloc, create_fails_cleanly_at_every_allocation)
{
    struct tw_wheel *w;
    struct tw_purgatory *p = NULL;
    long base, n;
    int err = 0;

    install();
    w = wheel_new(TW_HIER);
    base = atomic_load(&live_bytes);
    for (n = 1; !p; n++) {
        fail_nth(n);
        {
            struct tw_purgatory_config cfg;

            tw_purgatory_config_init(&cfg);
            cfg.wheel = w;
            cfg.now = wheel_clock;
            cfg.now_ctx = w;
            p = tw_purgatory_create(&cfg, &err);
        }
        if (!p) {
            cr_assert_eq(err, -ENOMEM, "allocation %ld", n);
            cr_assert_eq(atomic_load(&live_bytes), base, "leak at %ld", n);
        }
        cr_assert_lt(n, 1000);
    }
    fail_nth(0);
    cr_assert_gt(n, 3, "the object, its shards, their tables: all tried");
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(atomic_load(&live_bytes), base);
    cr_assert_eq(tw_destroy(w), 0);
}

/* A purgatory with one shard whose table is full: the next new key makes
 * it grow. */
static struct tw_purgatory *full_table(struct tw_wheel *w, struct preq *fill)
{
    struct tw_purgatory_config cfg;
    struct tw_purgatory *p;

    tw_purgatory_config_init(&cfg);
    cfg.wheel = w;
    cfg.now = wheel_clock;
    cfg.now_ctx = w;
    cfg.shards = 1;
    p = tw_purgatory_create(&cfg, NULL);
    cr_assert_not_null(p);
    for (int i = 0; i < 8; i++) {
        char name[8];
        struct tw_key fk = {name, (size_t)snprintf(name, 8, "f%d", i)};

        preq_init(&fill[i], p);
        cr_assert_eq(tw_purgatory_watch(p, &fill[i].op, &fk, 1, SEC), 0);
    }
    return p;
}

/* Watch three new keys (a record, three key nodes and a table that grows
 * on the way) with a failure at each allocation in turn, each time in a
 * fresh purgatory. A failed growth is no error (the old table serves); any
 * other failure is -ENOMEM with nothing changed (a table that grew before
 * the failure stays grown), and every block comes back with destroy. */
Test(purgatory_alloc, watch_fails_cleanly_at_every_allocation)
{
    static struct preq fill[8], r;
    struct tw_key k[3] = {pkey("x"), pkey("y"), pkey("z")};
    struct tw_wheel *w;
    int refused = 0;
    bool hit = true;

    install();
    w = wheel_new(TW_HIER);
    for (long n = 1; hit; n++) {
        long base = atomic_load(&live_bytes);
        struct tw_purgatory *p = full_table(w, fill);
        int rc;

        preq_init(&r, p);
        fail_nth(n);
        rc = tw_purgatory_watch(p, &r.op, k, 3, SEC);
        hit = atomic_load(&allocs) >= n;
        fail_nth(0);
        if (rc == -ENOMEM) {
            refused++;
            cr_assert_eq(tw_delayed_state(&r.op), TW_DELAYED_IDLE);
            stats_are(p, 8, 0, 0, 0, 0, 8, 8);
            cr_assert_eq(tw_pending(w), 8);
        } else {
            cr_assert_eq(rc, 0, "allocation %ld: %d", n, rc);
            stats_are(p, 9, 0, 0, 0, 0, 9, 11);
            atomic_store(&r.ready, true);
            cr_assert_eq(tw_purgatory_check(p, "y", 1), 1);
        }
        cr_assert_eq(tw_purgatory_stop(p, preq_handback, NULL), 8);
        cr_assert_eq(tw_purgatory_destroy(p), 0);
        cr_assert_eq(atomic_load(&live_bytes), base, "leak at %ld", n);
        cr_assert_lt(n, 100);
    }
    cr_assert_eq(refused, 4, "the record and the three keys");
    cr_assert_eq(tw_destroy(w), 0);
    cr_assert_eq(atomic_load(&live_blocks), 0);
}

/* Bytes that creating a purgatory with cfg takes (and destroying gives
 * back). */
static long create_bytes(struct tw_purgatory_config cfg)
{
    long before = atomic_load(&live_bytes), taken;
    struct tw_purgatory *p = tw_purgatory_create(&cfg, NULL);

    cr_assert_not_null(p);
    taken = atomic_load(&live_bytes) - before;
    cr_assert_eq(tw_purgatory_destroy(p), 0);
    cr_assert_eq(atomic_load(&live_bytes), before);
    return taken;
}

/* shards 0 is the mode's default: 512 over a service (threads take the
 * locks), 16 over a core wheel (one thread). Each count is told apart by
 * the memory its shards take. */
Test(purgatory_alloc, default_shards_follow_the_mode)
{
    struct tw_purgatory_config cfg;
    struct tw_service *s;
    struct tw_wheel *w;
    long dflt, few;

    install();
    s = default_service(TW_HIER);
    tw_purgatory_config_init(&cfg);
    cr_assert_eq(cfg.shards, 0u);
    cfg.service = s;
    dflt = create_bytes(cfg);
    cfg.shards = TW_PURGATORY_DEFAULT_SERVICE_SHARDS;
    cr_assert_eq(create_bytes(cfg), dflt);
    cfg.shards = TW_PURGATORY_DEFAULT_SHARDS;
    few = create_bytes(cfg);
    cr_assert_lt(few, dflt);
    cr_assert_eq(tw_service_destroy(s), 0);

    w = wheel_new(TW_HIER);
    tw_purgatory_config_init(&cfg);
    cfg.wheel = w;
    cfg.now = wheel_clock;
    cfg.now_ctx = w;
    dflt = create_bytes(cfg);
    cfg.shards = TW_PURGATORY_DEFAULT_SHARDS;
    cr_assert_eq(create_bytes(cfg), dflt);
    cfg.shards = TW_PURGATORY_DEFAULT_SERVICE_SHARDS;
    cr_assert_gt(create_bytes(cfg), dflt);
    cr_assert_eq(tw_destroy(w), 0);
}
