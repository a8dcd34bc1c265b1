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

/* ---- records made by hand (rlog.h's forge) ------------------------------- */

struct kinds {
    size_t n;
    int kind[8];
    uint64_t lsn[8];
    size_t len[8];
    int stop_at; /* the visit that answers -ECANCELED (0: none) */
};

static int note_kind(const struct tw_store_log_entry *e, void *ctx)
{
    struct kinds *k = ctx;

    if (k->n < 8) {
        k->kind[k->n] = (int)e->kind;
        k->lsn[k->n] = e->lsn;
        k->len[k->n] = e->len;
    }
    k->n++;
    return (int)k->n == k->stop_at ? -ECANCELED : 0;
}

/* One entry of every kind, from LSN 7. */
static size_t every_kind(struct rlog_forge *f)
{
    rlog_forge_init(f);
    rlog_forge_entry(f, TW_STORE_LOG_SCHEDULE, 100, 1, "abc", 3);
    rlog_forge_entry(f, TW_STORE_LOG_CANCEL, 100, 1, NULL, 0);
    rlog_forge_entry(f, TW_STORE_LOG_ACK, 200, 2, NULL, 0);
    rlog_forge_entry(f, TW_STORE_LOG_WATERMARK, 300, 0, NULL, 0);
    rlog_forge_entry(f, TW_STORE_LOG_EPOCH, 4, 0, NULL, 0);
    return rlog_forge_seal(f, 42, 3, 7, 5);
}

Test(store_changelog, a_record_of_every_kind_decodes_in_order)
{
    struct rlog_forge f;
    struct tw_store_log_rec h;
    struct kinds k = {0};
    size_t len = every_kind(&f);

    cr_assert_eq(tw_store_log_decode(f.b, len, &h, note_kind, &k), 0);
    cr_assert_eq(h.set, 42);
    cr_assert_eq(h.epoch, 3);
    cr_assert_eq(h.first_lsn, 7);
    cr_assert_eq(h.last_lsn, 11);
    cr_assert_eq(k.n, 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(k.kind[i], TW_STORE_LOG_SCHEDULE + i);
        cr_assert_eq(k.lsn[i], 7 + (uint64_t)i);
    }
    cr_assert_eq(k.len[0], 3);
}

/* The visitor's answer other than 0 stops the walk and is the decode's. */
Test(store_changelog, the_visitors_error_stops_the_walk)
{
    struct rlog_forge f;
    struct kinds k = {.stop_at = 2};
    size_t len = every_kind(&f);

    cr_assert_eq(tw_store_log_decode(f.b, len, NULL, note_kind, &k),
                 -ECANCELED);
    cr_assert_eq(k.n, 2);
}

/* Refused whole, before any visit: what the sum cannot catch, since a
 * record made (or damaged) before its sum was taken has a good one. */
static void refused(struct rlog_forge *f, uint64_t first, uint32_t count,
                    const char *what)
{
    struct kinds k = {0};
    size_t len = rlog_forge_seal(f, 42, 3, first, count);

    cr_assert_eq(tw_store_log_decode(f->b, len, NULL, note_kind, &k), -EBADMSG,
                 "%s", what);
    cr_assert_eq(k.n, 0, "%s: %zu entries visited", what, k.n);
}

Test(store_changelog, malformed_records_are_ebadmsg_whole)
{
    struct rlog_forge f;
    unsigned char big[TW_STORE_PAYLOAD_MAX + 1] = {0};

    every_kind(&f);
    refused(&f, 7, 0, "no entries counted");
    refused(&f, 0, 5, "LSN 0");
    refused(&f, UINT64_MAX - 1, 5, "LSNs past 2^64");
    refused(&f, 7, 6, "one entry fewer than counted");
    refused(&f, 7, 4, "one entry more than counted");
    rlog_forge_init(&f);
    rlog_forge_entry(&f, 0, 1, 1, NULL, 0);
    refused(&f, 1, 1, "kind 0");
    rlog_forge_init(&f);
    rlog_forge_entry(&f, TW_STORE_LOG_EPOCH + 1, 1, 1, NULL, 0);
    refused(&f, 1, 1, "a kind past the last");
    rlog_forge_init(&f);
    rlog_forge_entry(&f, TW_STORE_LOG_CANCEL, 1, 1, NULL, 0);
    f.len -= 1;
    refused(&f, 1, 1, "an entry cut short");
    rlog_forge_init(&f);
    rlog_forge_entry(&f, TW_STORE_LOG_SCHEDULE, 1, 1, NULL, 0);
    f.len -= 2;
    refused(&f, 1, 1, "a schedule without its length");
    rlog_forge_init(&f);
    rlog_forge_entry(&f, TW_STORE_LOG_SCHEDULE, 1, 1, big, sizeof big);
    refused(&f, 1, 1, "a payload past TW_STORE_PAYLOAD_MAX");
    rlog_forge_init(&f);
    rlog_forge_entry(&f, TW_STORE_LOG_SCHEDULE, 1, 1, "abcdefgh", 8);
    f.len -= 5;
    refused(&f, 1, 1, "a payload longer than the record");
}

/* A batch whose operations all failed (a cancel of an unknown timer) took
 * no LSN and hands nothing to the log. */
Test(store_changelog, a_batch_of_failed_operations_hands_nothing)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_replica before, after;
    struct tw_store_id nobody = {st_real() + UINT64_C(3600000000000), 999};
    size_t n;

    rlog_cfg(&cfg, &lg);
    s = st_open_cfg(dir, &rec, &cfg);
    while (rlog_count(&lg) == 0) /* the first heartbeat, at the start */
        st_sleep_ms(1);
    n = rlog_count(&lg);
    cr_assert_eq(tw_store_replica_info(s, &before), 0);
    cr_assert_eq(tw_store_cancel(s, nobody, st_done, &rec), 0);
    cr_assert_eq(tw_store_sync(s), 0);
    cr_assert_eq(st_wait(&rec, &rec.done_n, 1, 10000), 1);
    cr_assert_eq(rec.done_err[0], -ENOENT);
    cr_assert_eq(tw_store_replica_info(s, &after), 0);
    cr_assert_eq(after.lsn, before.lsn);
    cr_assert_eq(rlog_count(&lg), n);
    cr_assert_eq(tw_store_close(s), 0);
}

/* A renewal dated before the last one confirmed does not shorten the
 * lease: the leader goes on delivering. */
Test(store_changelog, an_older_renewal_does_not_shorten_the_lease)
{
    struct tw_store_config cfg;
    struct tw_store *s;

    rlog_cfg(&cfg, &lg);
    s = st_open_cfg(dir, &rec, &cfg);
    cr_assert_eq(
        tw_store_schedule_durable(s, st_real() + 20 * ST_MS, "r", 1, NULL), 0);
    cr_assert_eq(tw_store_renew(s, 1), 0);
    cr_assert_eq(st_wait(&rec, &rec.n, 1, 10000), 1);
    cr_assert_eq(tw_store_close(s), 0);
}

/* A follower with log_sync has nothing to sync to without a log. */
Test(store_changelog, a_follower_with_log_sync_and_no_log_is_einval)
{
    struct tw_store_config cfg;
    int err = 0;

    tw_store_config_init(&cfg);
    cfg.follower = true;
    cfg.log_sync = true;
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &rec;
    cr_assert_null(tw_store_open(dir, &cfg, &err));
    cr_assert_eq(err, -EINVAL);
}
