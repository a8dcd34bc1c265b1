/*
 * The change log and the leader's side of replication (suite
 * store_changelog, lib/store/changelog.c): committed operations handed to
 * cfg.log in commit order with consecutive LSNs, only those that took
 * effect; done callbacks after the hand-off; records bounded by
 * log_max_bytes; the watermark heartbeat; a log error failing the batch;
 * the lease and fencing; bad input.
 */
#include "rlog.h"

#define TW__LOG_HDR_TEST 40 /* a record's header, lib/store/repl.h */

static char dir[64];
static struct st_rec rec;
static struct rlog lg;

static void setup(void)
{
    st_mkdir(dir, sizeof dir);
    st_rec_init(&rec, false);
    rlog_init(&lg);
}

static void teardown(void)
{
    rlog_fini(&lg);
    st_rmdir(dir);
}

TestSuite(store_changelog, .init = setup, .fini = teardown, .timeout = 60);

struct seen {
    size_t n;
    uint64_t last_lsn;
    struct tw_store_log_entry e[64];
};

static int collect(const struct tw_store_log_entry *e, void *ctx)
{
    struct seen *s = ctx;

    cr_assert_eq(e->lsn, s->last_lsn + 1, "LSN %llu after %llu",
                 (unsigned long long)e->lsn, (unsigned long long)s->last_lsn);
    s->last_lsn = e->lsn;
    if (e->kind != TW_STORE_LOG_WATERMARK && s->n < 64)
        s->e[s->n++] = *e;
    return 0;
}

static void collect_all(struct seen *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < rlog_count(&lg); i++) {
        struct tw_store_log_rec h;

        cr_assert_eq(
            tw_store_log_decode(lg.r[i].data, lg.r[i].h.len, &h, collect, s),
            0);
        cr_assert_eq(h.first_lsn, lg.r[i].h.first_lsn);
        cr_assert_eq(h.last_lsn, lg.r[i].h.last_lsn);
        cr_assert_eq(h.set, lg.r[0].h.set);
    }
}

Test(store_changelog, committed_operations_in_order_with_consecutive_lsns)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_id a, b, c, ghost = {1, 999};
    uint64_t far = st_real() + UINT64_C(3600000000000);
    struct seen seen;

    rlog_cfg(&cfg, &lg);
    s = st_open_cfg(dir, &rec, &cfg);
    cr_assert_eq(tw_store_schedule_durable(s, far, "a", 1, &a), 0);
    cr_assert_eq(tw_store_schedule_durable(s, st_real(), "bb", 2, &b), 0);
    cr_assert_eq(tw_store_schedule_at(s, far + 1, "c", 1, NULL, NULL, &c), 0);
    cr_assert_eq(tw_store_cancel(s, a, NULL, NULL), 0);
    cr_assert_eq(tw_store_cancel(s, ghost, st_done, &rec), 0); /* -ENOENT */
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(st_wait(&rec, &rec.n, 1, 5000), 1);
    cr_assert_eq(tw_store_ack(s, b, NULL, NULL), 0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(rec.done_err[0], -ENOENT);
    collect_all(&seen);
    cr_assert_eq(seen.n, 5, "entries: %zu", seen.n);
    cr_assert_eq(seen.e[0].kind, TW_STORE_LOG_SCHEDULE);
    cr_assert_eq(seen.e[0].id.seq, a.seq);
    cr_assert_eq(seen.e[0].len, 1);
    cr_assert_eq(memcmp(seen.e[0].payload, "a", 1), 0);
    cr_assert_eq(seen.e[1].kind, TW_STORE_LOG_SCHEDULE);
    cr_assert_eq(seen.e[1].id.seq, b.seq);
    cr_assert_eq(seen.e[2].kind, TW_STORE_LOG_SCHEDULE);
    cr_assert_eq(seen.e[2].id.seq, c.seq);
    cr_assert_eq(seen.e[3].kind, TW_STORE_LOG_CANCEL);
    cr_assert_eq(seen.e[3].id.seq, a.seq);
    cr_assert_eq(seen.e[4].kind, TW_STORE_LOG_ACK);
    cr_assert_eq(seen.e[4].id.seq, b.seq);
    cr_assert_eq(seen.e[4].id.deadline_ns, b.deadline_ns);
    {
        struct tw_store_replica ri;

        cr_assert_eq(tw_store_replica_info(s, &ri), 0);
        cr_assert(ri.leader);
        cr_assert_eq(ri.epoch, 1);
        cr_assert_eq(ri.lsn, seen.last_lsn);
        cr_assert_neq(ri.set, 0);
    }
    cr_assert_eq(tw_store_close(s), 0);
}

Test(store_changelog, done_runs_after_the_log_has_the_record)
{
    struct tw_store_config cfg;
    struct tw_store *s;

    rlog_cfg(&cfg, &lg);
    lg.rec = &rec;
    s = st_open_cfg(dir, &rec, &cfg);
    while (rlog_count(&lg) == 0) /* the first heartbeat, at the start */
        st_sleep_ms(1);
    for (int i = 0; i < 3; i++) {
        size_t before = rlog_count(&lg);

        cr_assert_eq(tw_store_schedule_after(s, UINT64_C(3600000000000), "x", 1,
                                             st_done, &rec, NULL),
                     0);
        cr_assert_eq(tw_store_sync(s), 0);
        cr_assert_eq(rlog_count(&lg), before + 1);
        cr_assert_eq(lg.done_seen[before], (size_t)i,
                     "done ran before the log had its record");
        cr_assert_eq(st_get(&rec, &rec.done_n), (size_t)i + 1);
    }
    cr_assert_eq(tw_store_close(s), 0);
}

Test(store_changelog, records_bounded_by_log_max_bytes)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    char payload[100] = {0};
    struct seen seen;

    rlog_cfg(&cfg, &lg);
    cfg.log_max_bytes = 4096;
    cfg.commit_ns = UINT64_C(5000000000); /* one batch: the sync closes it */
    s = st_open_cfg(dir, &rec, &cfg);
    while (rlog_count(&lg) == 0) /* the first heartbeat, at the start */
        st_sleep_ms(1);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(tw_store_schedule_after(s, UINT64_C(3600000000000),
                                             payload, sizeof payload, NULL,
                                             NULL, NULL),
                     0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_gt(rlog_count(&lg), 25, "records: %zu", rlog_count(&lg));
    for (size_t i = 0; i < rlog_count(&lg); i++)
        cr_assert_leq(lg.r[i].h.len, 4096);
    collect_all(&seen);
    cr_assert_eq(seen.last_lsn, 1000 + 1); /* the first heartbeat's */
    cr_assert_eq(tw_store_close(s), 0);
}

static uint64_t last_watermark(void)
{
    uint64_t w = 0;

    for (size_t i = 0; i < rlog_count(&lg); i++) {
        const unsigned char *p = lg.r[i].data;

        if (lg.r[i].h.first_lsn == lg.r[i].h.last_lsn &&
            p[TW__LOG_HDR_TEST] == TW_STORE_LOG_WATERMARK) {
            uint64_t v = 0;

            for (int k = 1; k <= 8; k++)
                v = v << 8 | p[TW__LOG_HDR_TEST + k];
            w = v;
        }
    }
    return w;
}

Test(store_changelog, watermark_heartbeat_follows_deliveries)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_id id;
    size_t n0;

    rlog_cfg(&cfg, &lg);
    cfg.watermark_ns = 20 * ST_MS;
    s = st_open_cfg(dir, &rec, &cfg);
    st_sleep_ms(300);
    n0 = rlog_count(&lg);
    cr_assert_geq(n0, 3, "heartbeats in 300 ms: %zu", n0);
    cr_assert_eq(
        tw_store_schedule_durable(s, st_real() + 30 * ST_MS, "w", 1, &id), 0);
    cr_assert_eq(st_wait(&rec, &rec.n, 1, 5000), 1);
    st_sleep_ms(200);
    cr_assert_gt(last_watermark(), id.deadline_ns,
                 "the watermark did not pass a delivered timer");
    cr_assert_leq(last_watermark(), st_real());
    cr_assert_eq(tw_store_close(s), 0);
}

Test(store_changelog, log_error_fails_the_batch_and_the_store)
{
    struct tw_store_config cfg;
    struct tw_store *s;

    rlog_cfg(&cfg, &lg);
    s = st_open_cfg(dir, &rec, &cfg);
    cr_assert_eq(tw_store_schedule_durable(
                     s, st_real() + UINT64_C(3600000000000), "ok", 2, NULL),
                 0);
    rlog_fail(&lg, -EIO);
    cr_assert_eq(tw_store_schedule_durable(
                     s, st_real() + UINT64_C(3600000000000), "no", 2, NULL),
                 -EIO);
    cr_assert_eq(tw_store_schedule_at(s, 1, NULL, 0, NULL, NULL, NULL), -EIO);
    cr_assert_eq(tw_store_close(s), -EIO);
}

Test(store_changelog, no_lease_no_delivery)
{
    struct tw_store_config cfg;
    struct tw_store *s;

    rlog_cfg(&cfg, &lg);
    cfg.log_sync = false; /* the host renews: this one does not, yet */
    cfg.lease_ns = 200 * ST_MS;
    cfg.watermark_ns = 50 * ST_MS;
    s = st_open_cfg(dir, &rec, &cfg);
    cr_assert_eq(tw_store_schedule_durable(s, st_real(), "l", 1, NULL), 0);
    st_sleep_ms(300);
    cr_assert_eq(st_get(&rec, &rec.n), 0, "delivered without a lease");
    cr_assert_eq(tw_store_renew(s, st_mono()), 0);
    cr_assert_eq(st_wait(&rec, &rec.n, 1, 5000), 1);
    cr_assert_eq(tw_store_close(s), 0);
}

Test(store_changelog, fenced_leader_delivers_nothing)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_replica ri;

    rlog_cfg(&cfg, &lg);
    s = st_open_cfg(dir, &rec, &cfg);
    cr_assert_eq(
        tw_store_schedule_durable(s, st_real() + 200 * ST_MS, "f", 1, NULL), 0);
    cr_assert_eq(tw_store_fence(s), 0);
    cr_assert_eq(tw_store_fence(s), 0);
    st_sleep_ms(400);
    cr_assert_eq(st_get(&rec, &rec.n), 0, "a fenced leader delivered");
    cr_assert_eq(tw_store_schedule_at(s, 1, NULL, 0, NULL, NULL, NULL),
                 -ESTALE);
    cr_assert_eq(tw_store_replica_info(s, &ri), 0);
    cr_assert(ri.fenced);
    cr_assert_eq(tw_store_close(s), -ESTALE);
}

Test(store_changelog, log_refusing_as_stale_fences)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_replica ri;

    rlog_cfg(&cfg, &lg);
    s = st_open_cfg(dir, &rec, &cfg);
    rlog_fail(&lg, -ESTALE);
    cr_assert_eq(tw_store_schedule_durable(s, st_real(), "s", 1, NULL),
                 -ESTALE);
    st_sleep_ms(200);
    cr_assert_eq(st_get(&rec, &rec.n), 0);
    cr_assert_eq(tw_store_replica_info(s, &ri), 0);
    cr_assert(ri.fenced);
    cr_assert_eq(tw_store_close(s), -ESTALE);
}

Test(store_changelog, bad_input)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_replica ri;
    unsigned char junk[64] = "not a record at all, but long enough to look";
    size_t b;
    int err = 0;

    cr_assert_eq(tw_store_log_decode(NULL, 10, NULL, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_log_decode(junk, 0, NULL, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_log_decode(junk, sizeof junk, NULL, NULL, NULL),
                 -EBADMSG);
    cr_assert_eq(tw_store_renew(NULL, 0), -EINVAL);
    cr_assert_eq(tw_store_fence(NULL), -EINVAL);
    cr_assert_eq(tw_store_replica_info(NULL, &ri), -EINVAL);
    cr_assert_eq(tw_store_apply(NULL, junk, sizeof junk), -EINVAL);
    cr_assert_eq(tw_store_promote(NULL, 0), -EINVAL);
    cr_assert_eq(tw_store_snapshot(NULL, NULL, NULL, NULL), -EINVAL);
    cr_assert_eq(tw_store_restore(NULL, 0, NULL, NULL, NULL), -EINVAL);

    rlog_cfg(&cfg, &lg);
    cfg.deliver = st_deliver;
    cfg.log_max_bytes = 100;
    cr_assert_null(tw_store_open(dir, &cfg, &err));
    cr_assert_eq(err, -EINVAL);
    cfg.log_max_bytes = 0;
    cfg.watermark_ns = cfg.lease_ns; /* no room to renew the lease */
    cr_assert_null(tw_store_open(dir, &cfg, &err));
    cr_assert_eq(err, -EINVAL);
    cfg.watermark_ns = cfg.lease_ns / 2;

    /* A store of its own: no renew, no apply, no promotion. */
    s = st_open(dir, &rec);
    cr_assert_eq(tw_store_renew(s, st_mono()), -EPERM);
    cr_assert_eq(tw_store_promote(s, 0), -EPERM);
    cr_assert_eq(tw_store_replica_info(s, NULL), -EINVAL);
    cr_assert_eq(tw_store_replica_info(s, &ri), 0);
    cr_assert(ri.leader);
    cr_assert_eq(ri.lsn, 0);
    cr_assert_eq(tw_store_close(s), 0);

    /* A leader: damaged records refused whole, apply refused. */
    cfg.log_max_bytes = 0;
    s = st_open_cfg(dir, &rec, &cfg);
    while (rlog_count(&lg) == 0) /* the first heartbeat, at the start */
        st_sleep_ms(1);
    b = rlog_count(&lg);
    cr_assert_eq(tw_store_schedule_durable(
                     s, st_real() + UINT64_C(3600000000000), "abc", 3, NULL),
                 0);
    cr_assert_eq(rlog_count(&lg), b + 1);
    cr_assert_eq(tw_store_apply(s, lg.r[b].data, lg.r[b].h.len), -EPERM);
    lg.r[b].data[lg.r[b].h.len - 1] ^= 1;
    cr_assert_eq(
        tw_store_log_decode(lg.r[b].data, lg.r[b].h.len, NULL, NULL, NULL),
        -EBADMSG);
    lg.r[b].data[lg.r[b].h.len - 1] ^= 1;
    cr_assert_eq(
        tw_store_log_decode(lg.r[b].data, lg.r[b].h.len - 1, NULL, NULL, NULL),
        -EBADMSG);
    cr_assert_eq(
        tw_store_log_decode(lg.r[b].data, lg.r[b].h.len, NULL, NULL, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
}
