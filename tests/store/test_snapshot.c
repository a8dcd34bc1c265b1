/*
 * A new replica from a snapshot (suite store_snapshot, lib/store/
 * snapshot.c): a snapshot taken at an LSN, restored into a new follower,
 * then the log's tail applied from that LSN gives the leader's timers; a
 * snapshot is in deadline order; one of another replica set, damaged,
 * truncated or not a snapshot at all is refused, and a restore over a store
 * too.
 */
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

static struct tw_store *leader(void)
{
    struct tw_store_config cfg;

    rlog_cfg(&cfg, &lg);
    return st_open_cfg(ldir, &lrec, &cfg);
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
