/*
 * The store's own memory through the library's allocator (suite
 * store_alloc, issue 30): with the test allocator of tests/util.c
 * installed (tw_set_allocator(), before the first allocation: Criterion
 * runs each test in a process of its own), every block the store takes
 * for itself -- the store, its queues, the id table, the timers, the
 * polled copies, paths, the database's handles -- is counted, given back
 * with the size it was asked for, and none is left after the close.
 * RocksDB's own allocations are not the store's and are not counted.
 * Then every allocation of an open failing in turn: a clean -ENOMEM each
 * time, nothing held.
 */
#include "st.h"
#include "util.h"

ST_FIXTURE(store_alloc, 60, (void)0);

static void ack_polled(struct tw_store *s, struct tw_store_id id,
                       const void *payload, size_t len, void *arg)
{
    (void)payload, (void)len;
    (*(int *)arg)++;
    cr_assert_eq(tw_store_ack(s, id, NULL, NULL), 0);
}

Test(store_alloc, every_block_through_the_hook_and_back)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_id id[100];
    uint64_t now = st_real();
    unsigned long before;
    int err = 1, polled = 0;

    alloc_install(false);
    tw_store_config_init(&cfg);
    cfg.polled = true;
    cfg.window_max = 64;
    cfg.commit_ops = 16;
    s = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(s, "open: %d", err);
    before = atomic_load(&alloc_log.allocs);
    cr_assert_gt(before, 4, "the open took %lu blocks through the hook",
                 before);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(tw_store_schedule_at(s,
                                          i < 50 ? now - 100 + (uint64_t)i
                                                 : UINT64_MAX - (uint64_t)i,
                                          &i, sizeof i, NULL, NULL, &id[i]),
                     0);
    cr_assert_eq(tw_store_sync(s), 0);
    for (int i = 50; i < 60; i++)
        cr_assert_eq(tw_store_cancel(s, id[i], NULL, NULL), 0);
    for (uint64_t end = st_mono() + 5000 * ST_MS;
         polled < 50 && st_mono() < end;) {
        cr_assert_geq(tw_store_poll(s, ack_polled, &polled, 8), 0);
        st_sleep_ms(2);
    }
    cr_assert_eq(polled, 50);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_count(s), 40);
    cr_assert_gt(atomic_load(&alloc_log.allocs), before + 100,
                 "the timers and the copies did not come through the hook");
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_eq(st_on_disk(dir), 40);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held after the close",
                 alloc_live());
    cr_assert_eq(atomic_load(&alloc_log.bad_frees), 0,
                 "a block given back with another size");
}

/* A store opened on d, or NULL and the open's error in last_err. */
static int last_err;

static struct tw_store *st_open_err(const char *d)
{
    struct tw_store_config cfg;
    struct tw_store *s;

    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    last_err = 1;
    s = tw_store_open(d, &cfg, &last_err);
    return s;
}

static int open_close(void *ctx)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err = 1, rc;

    (void)ctx;
    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    s = tw_store_open(dir, &cfg, &err);
    if (!s)
        return err;
    /* An allocation of the worker (the loader's iterator) failing fails
     * the store, with -ENOMEM, as any failure of the worker does. */
    err = tw_store_schedule_durable(s, UINT64_MAX, "a", 1, NULL);
    rc = tw_store_close(s);
    return err ? err : rc;
}

Test(store_alloc, every_allocation_of_an_open_failing_in_turn)
{
    unsigned long tries;

    alloc_install(false);
    tries = alloc_fail_each(open_close, NULL);
    cr_assert_gt(tries, 4, "%lu allocations in an open", tries);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
    cr_assert_eq(atomic_load(&alloc_log.bad_frees), 0);
    cr_assert_geq(st_on_disk(dir), 1);
}

/* The same for a store made anew (the marker, the witness, the database
 * created: a fresh directory each try) and for a scan of an existing one. */
static int fresh_open_close(void *ctx)
{
    char sub[96];
    int *n = ctx;

    snprintf(sub, sizeof sub, "%s/new%d", dir, (*n)++);
    struct tw_store *s = st_open_err(sub);

    return s ? tw_store_close(s) : last_err;
}

static int scan_once(void *ctx)
{
    int64_t n = 0, rc = tw_store_scan(dir, st_count_visit, &n);

    (void)ctx;
    return rc < 0 ? (int)rc : 0;
}

Test(store_alloc, every_allocation_of_a_new_store_and_a_scan_failing_in_turn)
{
    int n = 0;

    alloc_install(false);
    cr_assert_eq(open_close(NULL), 0); /* dir a store: new ones inside */
    cr_assert_gt(alloc_fail_each(fresh_open_close, &n), 4);
    cr_assert_gt(alloc_fail_each(scan_once, NULL), 2);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
}
