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
#include <sys/stat.h>

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

/* A snapshot (its buffer, its iterator) and a restore (the paths, the
 * directory's lock) with each of their allocations failing in turn: a
 * clean -ENOMEM each time, nothing held; a restore that failed leaves a
 * directory that is removed before the next try, as the header says. */
struct snapbuf {
    unsigned char p[4096];
    size_t len, pos;
};

static int snap_put(const void *p, size_t len, void *ctx)
{
    struct snapbuf *b = ctx;

    cr_assert_leq(b->len + len, sizeof b->p);
    memcpy(b->p + b->len, p, len);
    b->len += len;
    return 0;
}

static long snap_get(void *p, size_t len, void *ctx)
{
    struct snapbuf *b = ctx;
    size_t n = b->len - b->pos < len ? b->len - b->pos : len;

    memcpy(p, b->p + b->pos, n);
    b->pos += n;
    return (long)n;
}

static struct tw_store *snap_store;
static struct snapbuf snap_bytes;

static int snapshot_once(void *ctx)
{
    (void)ctx;
    snap_bytes.len = 0;
    return tw_store_snapshot(snap_store, snap_put, &snap_bytes, NULL);
}

static int restore_once(void *ctx)
{
    char sub[96];

    (void)ctx;
    snprintf(sub, sizeof sub, "%s/restored", dir);
    st_rmdir(sub);
    snap_bytes.pos = 0;
    return tw_store_restore(sub, 0, snap_get, &snap_bytes, NULL);
}

Test(store_alloc, every_allocation_of_a_snapshot_and_a_restore_failing_in_turn)
{
    struct tw_store_config cfg;
    char sub[96];
    int err = 1;

    alloc_install(false);
    /* A window of an hour: the worker's loader, which allocates, runs at
     * the open and not again during the test, so that every failure is
     * the snapshot's. */
    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    cfg.window_ns = UINT64_C(3600000000000);
    snap_store = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(snap_store, "open: %d", err);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(tw_store_schedule_at(snap_store, UINT64_MAX - (uint64_t)i,
                                          "s", 1, NULL, NULL, NULL),
                     0);
    cr_assert_eq(tw_store_sync(snap_store), 0);
    cr_assert_geq(alloc_fail_each(snapshot_once, NULL), 1);
    cr_assert_gt(snap_bytes.len, 20 * 19);
    cr_assert_eq(tw_store_close(snap_store), 0);
    cr_assert_geq(alloc_fail_each(restore_once, NULL), 2);
    snprintf(sub, sizeof sub, "%s/restored", dir);
    cr_assert_eq(st_on_disk(sub), 20);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
}

/* A directory with the marker and a table in db/ but no db/CURRENT is
 * damaged (-EBADMSG): a database created over it would drop the table
 * (RocksDB deletes a table file it does not know). With each allocation
 * of the open failing in turn, the answer is -ENOMEM or -EBADMSG, never a
 * store opened as new, and the table is still there. (The look into db/
 * once took a failed allocation for "no data".) */
Test(store_alloc, a_table_without_current_is_never_taken_for_new)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof path, "%s/STORE", dir);
    cr_assert_not_null(f = fopen(path, "w"));
    fputs("timewheel-store 1\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/db", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/db/000009.sst", dir);
    cr_assert_not_null(f = fopen(path, "w"));
    fputs("a table's bytes\n", f);
    fclose(f);
    alloc_install(false);
    for (unsigned long k = 1;; k++) {
        unsigned long calls = atomic_load(&alloc_log.calls);
        struct tw_store *s;

        cr_assert_lt(k, 100, "never got to the end of the open");
        alloc_fail_after(k);
        s = st_open_err(dir);
        cr_assert_null(s, "allocation %lu failing: opened as a new store", k);
        cr_assert(last_err == -ENOMEM || last_err == -EBADMSG,
                  "allocation %lu failing: %d", k, last_err);
        cr_assert_eq(access(path, F_OK), 0, "allocation %lu: table dropped", k);
        if (atomic_load(&alloc_log.calls) - calls < k) {
            cr_assert_eq(last_err, -EBADMSG);
            break; /* every allocation of the open was tried */
        }
    }
    alloc_fail_after(0);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
}

/* A store whose worker allocates nothing unasked for the test's length: a
 * window of an hour, so the loader runs at the open only. */
static struct tw_store *quiet_store(bool polled)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err = 1;

    tw_store_config_init(&cfg);
    if (polled) {
        cfg.polled = true;
    } else {
        cfg.deliver = st_deliver;
        cfg.deliver_arg = &rec;
    }
    cfg.window_ns = UINT64_C(3600000000000);
    s = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(s, "open: %d", err);
    return s;
}

static struct tw_store *sched_store;

static int schedule_once(void *ctx)
{
    (void)ctx;
    return tw_store_schedule_at(sched_store, UINT64_MAX, "m", 1, NULL, NULL,
                                NULL);
}

/* A schedule whose timer, or the first queue, cannot be allocated:
 * -ENOMEM, nothing queued, nothing held, and the store goes on. */
Test(store_alloc, a_schedule_without_memory_is_enomem)
{
    alloc_install(false);
    sched_store = quiet_store(false);
    cr_assert_eq(alloc_fail_each(schedule_once, NULL), 2);
    cr_assert_eq(tw_store_sync(sched_store), 0);
    cr_assert_eq(tw_store_count(sched_store), 1);
    cr_assert_eq(tw_store_close(sched_store), 0);
    cr_assert_eq(st_on_disk(dir), 1);
    cr_assert_eq(alloc_live(), 0, "%lu blocks held", alloc_live());
}

/* The copy of a polled delivery that cannot be allocated is made again
 * later: the timer is polled once, and the store does not fail. With the
 * queue allocated by a first schedule, the next schedule's timer is the
 * first allocation from here, the worker's copy for the poll the second. */
Test(store_alloc, a_polled_copy_without_memory_is_made_again)
{
    struct tw_store *s;
    int polled = 0;

    alloc_install(false);
    s = quiet_store(true);
    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "q", 1, NULL), 0);
    alloc_fail_after(2); /* the queue is there: no allocation of its own */
    cr_assert_eq(tw_store_schedule_at(s, st_real() - 1000 * ST_MS, "p", 1, NULL,
                                      NULL, NULL),
                 0);
    for (uint64_t end = st_mono() + 10000 * ST_MS;
         polled < 1 && st_mono() < end;) {
        cr_assert_geq(tw_store_poll(s, ack_polled, &polled, 8), 0);
        st_sleep_ms(2);
    }
    cr_assert_eq(polled, 1);
    cr_assert_geq(atomic_load(&alloc_log.calls), 3, "no second try");
    st_sleep_ms(20);
    cr_assert_eq(tw_store_poll(s, ack_polled, &polled, 8), 0);
    cr_assert_eq(polled, 1, "polled twice");
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(tw_store_close(s), 0);
    cr_assert_eq(st_on_disk(dir), 1);
}
