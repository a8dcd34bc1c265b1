/*
 * A new replica from a snapshot (suite store_snapshot, lib/store/
 * snapshot.c): a snapshot taken at an LSN, restored into a new follower,
 * then the log's tail applied from that LSN gives the leader's timers; a
 * snapshot is in deadline order; one of another replica set, damaged,
 * truncated or not a snapshot at all is refused, and a restore over a store
 * too.
 */
#include <sys/stat.h>

#include "rlog.h"

static char ldir[64], fdir[64];
static struct st_rec lrec, frec;
static struct rlog lg;

struct buf {
    unsigned char *p;
    size_t len, cap, pos;
};

static struct buf snap;

static void setup(void)
{
    st_mkdir(ldir, sizeof ldir);
    st_mkdir(fdir, sizeof fdir);
    st_rmdir(fdir); /* a restore makes it */
    st_rec_init(&lrec, false);
    st_rec_init(&frec, false);
    rlog_init(&lg);
    memset(&snap, 0, sizeof snap);
}

static void teardown(void)
{
    free(snap.p);
    rlog_fini(&lg);
    st_rmdir(ldir);
    st_rmdir(fdir);
}

TestSuite(store_snapshot, .init = setup, .fini = teardown, .timeout = 60);

static int put(const void *p, size_t len, void *ctx)
{
    struct buf *b = ctx;

    if (b->len + len > b->cap) {
        b->cap = (b->len + len) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    memcpy(b->p + b->len, p, len);
    b->len += len;
    return 0;
}

/* Reads in odd sizes, to cross every field. */
static long get(void *p, size_t len, void *ctx)
{
    struct buf *b = ctx;
    size_t n = b->len - b->pos;

    n = n < len ? n : len;
    n = n < 7 ? n : 7;
    memcpy(p, b->p + b->pos, n);
    b->pos += n;
    return (long)n;
}

/* A leader, after its first heartbeat (handed to the log at the start;
 * the next comes watermark_ns later, 30 s): no heartbeat moves its LSN
 * between a snapshot and a read of the LSN. Before, one that came late
 * under load did (make coverage: lsn != li.lsn). */
static struct tw_store *leader(void)
{
    struct tw_store_config cfg;
    struct tw_store *l;
    size_t before = rlog_count(&lg);

    rlog_cfg(&cfg, &lg);
    l = st_open_cfg(ldir, &lrec, &cfg);
    for (uint64_t end = st_mono() + 10000 * ST_MS;
         rlog_count(&lg) == before && st_mono() < end;)
        st_sleep_ms(1);
    cr_assert_gt(rlog_count(&lg), before, "no first heartbeat");
    return l;
}

static void fill(struct tw_store *s, int n, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        unsigned char p[3] = {(unsigned char)i, 1, 2};

        seed = seed * 1103515245u + 12345u;
        cr_assert_eq(tw_store_schedule_at(s,
                                          st_real() + UINT64_C(3600000000000) +
                                              (seed >> 4) % 100000000,
                                          p, 1 + i % 3, NULL, NULL, NULL),
                     0);
    }
    cr_assert_eq(tw_store_sync(s), 0);
}

static uint64_t take_snapshot(struct tw_store *s)
{
    uint64_t lsn = 0;

    snap.len = snap.pos = 0;
    cr_assert_eq(tw_store_snapshot(s, put, &snap, &lsn), 0);
    return lsn;
}

Test(store_snapshot, restore_then_the_tail_gives_the_leaders_timers)
{
    struct tw_store *l = leader(), *f;
    struct tw_store_replica li, fi;
    struct rlog_dump a, b;
    uint64_t lsn, got = 0;
    size_t n;

    fill(l, 500, 1);
    lsn = take_snapshot(l);
    cr_assert_eq(tw_store_replica_info(l, &li), 0);
    cr_assert_eq(lsn, li.lsn);
    fill(l, 300, 2); /* the tail */
    n = rlog_count(&lg);
    cr_assert_eq(tw_store_restore(fdir, li.set, get, &snap, &got), 0);
    cr_assert_eq(got, lsn);
    f = rlog_follower(fdir, &frec, NULL);
    cr_assert_eq(tw_store_count(f), 500);
    cr_assert_eq(tw_store_replica_info(f, &fi), 0);
    cr_assert_eq(fi.lsn, lsn);
    cr_assert_eq(fi.set, li.set);
    rlog_apply(&lg, f, 0, n); /* from the start: the old part is a replay */
    cr_assert_eq(tw_store_count(f), 800);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
    rlog_dump(ldir, &a);
    rlog_dump(fdir, &b);
    cr_assert_eq(a.n, 800);
    rlog_same(&a, &b);
}

Test(store_snapshot, in_deadline_order)
{
    struct tw_store *l = leader();
    uint64_t prev = 0;
    size_t off = 4 + 6 * 8;
    int n = 0;

    fill(l, 200, 3);
    take_snapshot(l);
    while (off + 2 <= snap.len) {
        size_t len = (size_t)snap.p[off] << 8 | snap.p[off + 1];
        uint64_t d = 0;

        if (len == 0xffff)
            break;
        for (int k = 0; k < 8; k++)
            d = d << 8 | snap.p[off + 2 + k];
        cr_assert_geq(d, prev, "timer %d out of order", n);
        prev = d;
        off += 2 + 16 + len;
        n++;
    }
    cr_assert_eq(n, 200);
    cr_assert_eq(tw_store_close(l), 0);
}

Test(store_snapshot, foreign_damaged_or_truncated_refused)
{
    struct tw_store *l = leader();
    struct tw_store_replica li;
    struct buf junk = {(unsigned char *)"not a snapshot, this, not at all", 32,
                       32, 0};
    size_t full;

    fill(l, 100, 4);
    take_snapshot(l);
    cr_assert_eq(tw_store_replica_info(l, &li), 0);
    cr_assert_eq(tw_store_restore(fdir, li.set + 1, get, &snap, NULL), -EXDEV);
    cr_assert_eq(access(fdir, F_OK), -1, "a refused restore made the dir");
    snap.pos = 0;
    cr_assert_eq(tw_store_restore(fdir, 0, get, &junk, NULL), -EBADMSG);
    cr_assert_eq(access(fdir, F_OK), -1);
    /* Damaged: one byte of a payload. */
    snap.p[60] ^= 0x40;
    snap.pos = 0;
    cr_assert_eq(tw_store_restore(fdir, li.set, get, &snap, NULL), -EBADMSG);
    st_rmdir(fdir);
    snap.p[60] ^= 0x40;
    /* Truncated. */
    full = snap.len;
    snap.len = full - 5;
    snap.pos = 0;
    cr_assert_eq(tw_store_restore(fdir, li.set, get, &snap, NULL), -EBADMSG);
    {
        /* What is left opens as nothing or not at all: never as half a
         * replica (its 'M' goes last). */
        int err = 0;
        struct tw_store_config cfg;
        struct tw_store *h;

        tw_store_config_init(&cfg);
        cfg.follower = true;
        cfg.deliver = st_deliver;
        cfg.deliver_arg = &frec;
        h = tw_store_open(fdir, &cfg, &err);
        if (h) {
            cr_assert_eq(tw_store_count(h), 0);
            cr_assert_eq(tw_store_close(h), 0);
            cr_assert_eq(tw_store_scan(fdir, st_count_visit, &(int64_t){0}), 0,
                         "half a restore opened");
        } else {
            cr_assert_eq(err, -EBADMSG);
        }
    }
    st_rmdir(fdir);
    /* Whole: works; over a store: -EEXIST. */
    snap.len = full;
    snap.pos = 0;
    cr_assert_eq(tw_store_restore(fdir, li.set, get, &snap, NULL), 0);
    snap.pos = 0;
    cr_assert_eq(tw_store_restore(fdir, li.set, get, &snap, NULL), -EEXIST);
    cr_assert_eq(tw_store_snapshot(l, NULL, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_restore(fdir, 0, NULL, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_close(l), 0);
}

Test(store_snapshot, a_follower_snapshots_too)
{
    struct tw_store *l = leader(), *f, *g;
    struct rlog_dump a, b;
    char gdir[80];

    snprintf(gdir, sizeof gdir, "%s/g", ldir);
    cr_assert_eq(tw_store_restore(fdir, 0, get,
                                  &(struct buf){(unsigned char *)"", 0, 0, 0},
                                  NULL),
                 -EBADMSG);
    f = rlog_follower(fdir, &frec, NULL);
    fill(l, 150, 5);
    rlog_apply(&lg, f, 0, rlog_count(&lg));
    take_snapshot(f);
    cr_assert_eq(tw_store_restore(gdir, 0, get, &snap, NULL), 0);
    g = rlog_follower(gdir, &frec, NULL);
    cr_assert_eq(tw_store_count(g), 150);
    cr_assert_eq(tw_store_close(g), 0);
    cr_assert_eq(tw_store_close(f), 0);
    cr_assert_eq(tw_store_close(l), 0);
    rlog_dump(fdir, &a);
    rlog_dump(gdir, &b);
    rlog_same(&a, &b);
}

/* More than the snapshot's 64 KiB buffer and more than a restore's batch
 * of 4096 timers: written in several calls, restored whole. */
Test(store_snapshot, larger_than_its_buffer_and_a_batch_restores_whole)
{
    struct tw_store *l = leader(), *f;
    struct tw_store_replica li;
    struct rlog_dump a, b;

    fill(l, 4500, 6);
    take_snapshot(l);
    cr_assert_gt(snap.len, 64u << 10);
    cr_assert_eq(tw_store_replica_info(l, &li), 0);
    cr_assert_eq(tw_store_restore(fdir, li.set, get, &snap, NULL), 0);
    f = rlog_follower(fdir, &frec, NULL);
    cr_assert_eq(tw_store_count(f), 4500);
    cr_assert_eq(tw_store_close(f), 0);
    cr_assert_eq(tw_store_close(l), 0);
    rlog_dump(ldir, &a);
    rlog_dump(fdir, &b);
    rlog_same(&a, &b);
}

/* An empty store: a header, no timers, the end; restored, empty. */
Test(store_snapshot, an_empty_store_restores_empty)
{
    struct tw_store *l = leader(), *f;

    take_snapshot(l);
    cr_assert_eq(snap.len, 4 + 6 * 8 + 18);
    cr_assert_eq(tw_store_restore(fdir, 0, get, &snap, NULL), 0);
    f = rlog_follower(fdir, &frec, NULL);
    cr_assert_eq(tw_store_count(f), 0);
    cr_assert_eq(tw_store_close(f), 0);
    cr_assert_eq(tw_store_close(l), 0);
}

/* A writer that refuses after `left` calls, with -ENOSPC. */
static int left;

static int put_until_full(const void *p, size_t len, void *ctx)
{
    if (left-- == 0)
        return -ENOSPC;
    return put(p, len, ctx);
}

/* The writer's error ends the snapshot and is its answer: at the first of
 * several writes, at a later one, and at the one write of a small store. */
Test(store_snapshot, the_writers_error_is_the_answer)
{
    struct tw_store *l = leader();
    uint64_t lsn;

    fill(l, 4500, 7);
    left = 0;
    cr_assert_eq(tw_store_snapshot(l, put_until_full, &snap, &lsn), -ENOSPC);
    left = 1;
    snap.len = 0;
    cr_assert_eq(tw_store_snapshot(l, put_until_full, &snap, NULL), -ENOSPC);
    cr_assert(snap.len > 0 && snap.len <= 64u << 10,
              "%zu bytes taken: more than the first write", snap.len);
    cr_assert_eq(tw_store_close(l), 0);
    st_rmdir(ldir);
    l = leader();
    fill(l, 3, 8);
    left = 0;
    cr_assert_eq(tw_store_snapshot(l, put_until_full, &snap, NULL), -ENOSPC);
    cr_assert_eq(tw_store_close(l), 0);
}

/* A reader that fails with -EIO once `pos` reaches `fail_at`. */
static size_t fail_at;

static long get_until(void *p, size_t len, void *ctx)
{
    struct buf *b = ctx;

    if (b->pos >= fail_at)
        return -EIO;
    if (len > fail_at - b->pos)
        len = fail_at - b->pos;
    return get(p, len, ctx);
}

/* The reader's error ends the restore and is its answer: in the header
 * (the directory not made) and among the timers. */
Test(store_snapshot, the_readers_error_is_the_answer)
{
    struct tw_store *l = leader();

    fill(l, 10, 9);
    take_snapshot(l);
    cr_assert_eq(tw_store_close(l), 0);
    fail_at = 20;
    cr_assert_eq(tw_store_restore(fdir, 0, get_until, &snap, NULL), -EIO);
    cr_assert_eq(access(fdir, F_OK), -1,
                 "a restore that failed early made the dir");
    fail_at = 4 + 6 * 8 + 30;
    snap.pos = 0;
    cr_assert_eq(tw_store_restore(fdir, 0, get_until, &snap, NULL), -EIO);
}

/* A reader that says it read more than it was asked for is not believed. */
static long get_too_much(void *p, size_t len, void *ctx)
{
    long n = get(p, len, ctx);

    return n > 0 && (size_t)n == len ? n + 1 : n;
}

Test(store_snapshot, a_reader_that_overstates_is_ebadmsg)
{
    struct tw_store *l = leader();

    fill(l, 10, 10);
    take_snapshot(l);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_restore(fdir, 0, get_too_much, &snap, NULL),
                 -EBADMSG);
}

/* The first timer's length field: where it starts, and its value. */
#define FIRST_TIMER (4 + 6 * 8)

/* A timer whose length is beyond TW_STORE_PAYLOAD_MAX, and snapshots cut
 * inside a timer's length or its body: -EBADMSG, never a store that opens
 * with part of them. */
Test(store_snapshot, a_bad_length_or_a_cut_inside_a_timer_is_ebadmsg)
{
    struct tw_store *l = leader();
    size_t full;

    fill(l, 10, 11);
    take_snapshot(l);
    cr_assert_eq(tw_store_close(l), 0);
    full = snap.len;
    snap.p[FIRST_TIMER] = (TW_STORE_PAYLOAD_MAX + 1) >> 8;
    snap.p[FIRST_TIMER + 1] = (TW_STORE_PAYLOAD_MAX + 1) & 0xff;
    cr_assert_eq(tw_store_restore(fdir, 0, get, &snap, NULL), -EBADMSG);
    st_rmdir(fdir);
    take_snapshot(l = leader());
    cr_assert_eq(tw_store_close(l), 0);
    snap.len = FIRST_TIMER + 1; /* half the first length */
    cr_assert_eq(tw_store_restore(fdir, 0, get, &snap, NULL), -EBADMSG);
    st_rmdir(fdir);
    snap.len = full;
    snap.pos = 0;
    snap.len = FIRST_TIMER + 2 + 10; /* inside the first timer */
    cr_assert_eq(tw_store_restore(fdir, 0, get, &snap, NULL), -EBADMSG);
    st_rmdir(fdir);
    /* The end's count of timers one more than there are (the sum covers
     * the bytes before the end only). */
    snap.len = full;
    snap.pos = 0;
    snap.p[full - 8 - 1]++; /* the count's last byte */
    cr_assert_eq(tw_store_restore(fdir, 0, get, &snap, NULL), -EBADMSG);
}

/* A restore into a directory that is not a new one: a foreign one gets
 * -ENOTEMPTY and is left as it was. */
Test(store_snapshot, a_restore_into_a_foreign_directory_is_enotempty)
{
    struct tw_store *l = leader();
    char path[128];
    FILE *f;

    fill(l, 5, 12);
    take_snapshot(l);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(mkdir(fdir, 0755), 0);
    snprintf(path, sizeof path, "%s/mine", fdir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(tw_store_restore(fdir, 0, get, &snap, NULL), -ENOTEMPTY);
    cr_assert_eq(access(path, F_OK), 0);
}
