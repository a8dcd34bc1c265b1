/*
 * A follower and its promotion (suites store_follower and store_promote,
 * lib/store/follower.c), through the in-memory log of rlog.h: an entry
 * applied twice or a replay from an older LSN changes nothing; a gap, a
 * record of an older epoch (a deposed leader's) or of another replica set
 * is refused and changes nothing; a follower delivers nothing and takes no
 * operation; it keeps its place across a reopen; a promoted follower
 * delivers every due timer not acknowledged in the log, none early, none
 * cancelled or acknowledged, the first within a second.
 */
#include "rlog.h"

static char ldir[64], fdir[64], gdir[64];
static struct st_rec lrec, frec, grec;
static struct rlog lg, lg2;

static void setup(void)
{
    st_mkdir(ldir, sizeof ldir);
    st_mkdir(fdir, sizeof fdir);
    st_mkdir(gdir, sizeof gdir);
    st_rec_init(&lrec, false);
    st_rec_init(&frec, false);
    st_rec_init(&grec, false);
    rlog_init(&lg);
    rlog_init(&lg2);
}

static void teardown(void)
{
    rlog_fini(&lg);
    rlog_fini(&lg2);
    st_rmdir(ldir);
    st_rmdir(fdir);
    st_rmdir(gdir);
}

TestSuite(store_follower, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(store_promote, .init = setup, .fini = teardown, .timeout = 60);

#define HOUR UINT64_C(3600000000000)

static struct tw_store *leader(void)
{
    struct tw_store_config cfg;

    rlog_cfg(&cfg, &lg);
    return st_open_cfg(ldir, &lrec, &cfg);
}

/* Schedules, cancels and acks of a fixed seed, in batches. */
static void workload(struct tw_store *s, unsigned seed, int n)
{
    struct tw_store_id id[256];
    int k = 0;

    for (int i = 0; i < n; i++) {
        unsigned r = (seed = seed * 1103515245u + 12345u) >> 8;
        unsigned char p = (unsigned char)r;

        if (k > 0 && r % 5 == 0) {
            cr_assert_eq(tw_store_cancel(s, id[--k], NULL, NULL), 0);
        } else if (k < 256) {
            cr_assert_eq(tw_store_schedule_at(s, st_real() + HOUR + r % 1000,
                                              &p, 1, NULL, NULL, &id[k++]),
                         0);
        }
        if (i % 17 == 16)
            cr_assert_eq(tw_store_sync(s), 0);
    }
    cr_assert_eq(tw_store_sync(s), 0);
}

static uint64_t applied(struct tw_store *f)
{
    struct tw_store_replica ri;

    cr_assert_eq(tw_store_replica_info(f, &ri), 0);
    return ri.lsn;
}

Test(store_follower, applied_twice_changes_nothing)
{
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, NULL);
    struct rlog_dump a, b;
    size_t n;
    uint64_t lsn, count;

    workload(l, 7, 300);
    n = rlog_count(&lg);
    cr_assert_gt(rlog_apply(&lg, f, 0, n), 0);
    lsn = applied(f);
    count = tw_store_count(f);
    cr_assert_eq(count, tw_store_count(l));
    for (size_t i = 0; i < n; i++) /* each again: nothing */
        cr_assert_eq(tw_store_apply(f, lg.r[i].data, lg.r[i].h.len), 0);
    cr_assert_eq(applied(f), lsn);
    cr_assert_eq(tw_store_count(f), count);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
    rlog_dump(ldir, &a);
    rlog_dump(fdir, &b);
    cr_assert_gt(a.n, 0);
    rlog_same(&a, &b);
}

Test(store_follower, replay_from_an_older_lsn_changes_nothing)
{
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, NULL);
    struct rlog_dump a, b;
    size_t n;

    workload(l, 11, 400);
    n = rlog_count(&lg);
    rlog_apply(&lg, f, 0, n / 2);
    rlog_apply(&lg, f, n / 4, n); /* from an older point */
    rlog_apply(&lg, f, 0, n);     /* and from the start */
    cr_assert_eq(applied(f), lg.r[n - 1].h.last_lsn);
    cr_assert_eq(tw_store_count(f), tw_store_count(l));
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
    rlog_dump(ldir, &a);
    rlog_dump(fdir, &b);
    rlog_same(&a, &b);
}

Test(store_follower, gap_refused_and_nothing_changes)
{
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, NULL);
    size_t n;
    uint64_t lsn, count;

    workload(l, 3, 100);
    n = rlog_count(&lg);
    cr_assert_geq(n, 4);
    rlog_apply(&lg, f, 0, 2);
    lsn = applied(f);
    count = tw_store_count(f);
    cr_assert_eq(tw_store_apply(f, lg.r[3].data, lg.r[3].h.len), -ERANGE);
    cr_assert_eq(applied(f), lsn);
    cr_assert_eq(tw_store_count(f), count);
    rlog_apply(&lg, f, 2, n); /* the gap filled: on it goes */
    cr_assert_eq(tw_store_count(f), tw_store_count(l));
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
}

Test(store_follower, a_new_follower_needs_the_first_lsn)
{
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, NULL);

    workload(l, 5, 40);
    cr_assert_geq(rlog_count(&lg), 2);
    cr_assert_eq(tw_store_apply(f, lg.r[1].data, lg.r[1].h.len), -ERANGE);
    cr_assert_eq(applied(f), 0);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
}

Test(store_follower, another_sets_record_refused)
{
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, NULL);
    struct tw_store_config cfg;
    struct tw_store *other;
    uint64_t lsn;

    rlog_cfg(&cfg, &lg2);
    other = st_open_cfg(gdir, &grec, &cfg);
    workload(l, 5, 40);
    workload(other, 6, 40);
    rlog_apply(&lg, f, 0, rlog_count(&lg));
    lsn = applied(f);
    cr_assert_eq(tw_store_apply(f, lg2.r[0].data, lg2.r[0].h.len), -EXDEV);
    cr_assert_eq(applied(f), lsn);
    cr_assert_eq(tw_store_close(other), 0);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
}

Test(store_follower, delivers_nothing_takes_no_operation)
{
    struct tw_store *l, *f = rlog_follower(fdir, &frec, NULL);
    struct tw_store_id id = {1, 1};

    lrec.ack = true;
    l = leader();
    for (int i = 0; i < 20; i++)
        cr_assert_eq(tw_store_schedule_at(l, st_real() - ST_MS, "d", 1, NULL,
                                          NULL, NULL),
                     0);
    cr_assert_eq(tw_store_sync(l), 0);
    cr_assert_eq(st_wait(&lrec, &lrec.n, 20, 5000), 20);
    cr_assert_eq(tw_store_close(l), 0); /* the acks committed and logged */
    rlog_apply(&lg, f, 0, rlog_count(&lg));
    cr_assert_eq(tw_store_count(f), 0);
    /* Overdue timers on the follower, not acked: still not delivered. */
    rlog_fini(&lg);
    rlog_init(&lg);
    st_rmdir(ldir);
    st_mkdir(ldir, sizeof ldir);
    cr_assert_eq(tw_store_close(f), 0);
    st_rmdir(fdir);
    st_mkdir(fdir, sizeof fdir);
    f = rlog_follower(fdir, &frec, NULL);
    lrec.ack = false;
    l = leader();
    for (int i = 0; i < 20; i++)
        cr_assert_eq(tw_store_schedule_at(l, st_real() - ST_MS, "d", 1, NULL,
                                          NULL, NULL),
                     0);
    cr_assert_eq(tw_store_sync(l), 0);
    rlog_apply(&lg, f, 0, rlog_count(&lg));
    cr_assert_eq(tw_store_count(f), 20);
    st_sleep_ms(300);
    cr_assert_eq(st_get(&frec, &frec.n), 0, "a follower delivered");
    cr_assert_eq(tw_store_schedule_at(f, 1, NULL, 0, NULL, NULL, NULL), -EPERM);
    cr_assert_eq(tw_store_cancel(f, id, NULL, NULL), -EPERM);
    cr_assert_eq(tw_store_ack(f, id, NULL, NULL), -EPERM);
    cr_assert_eq(tw_store_renew(f, st_mono()), -EPERM);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
}

Test(store_follower, keeps_its_place_across_a_reopen)
{
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, NULL);
    size_t n;
    uint64_t lsn;
    struct rlog_dump a, b;

    workload(l, 9, 200);
    n = rlog_count(&lg);
    rlog_apply(&lg, f, 0, n / 2);
    lsn = applied(f);
    cr_assert_eq(tw_store_close(f), 0);
    f = rlog_follower(fdir, &frec, NULL);
    cr_assert_eq(applied(f), lsn);
    rlog_apply(&lg, f, 0, n);
    cr_assert_eq(tw_store_count(f), tw_store_count(l));
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
    rlog_dump(ldir, &a);
    rlog_dump(fdir, &b);
    rlog_same(&a, &b);
}

Test(store_follower, roles_kept_by_the_directory)
{
    struct tw_store_config cfg;
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, NULL);
    int err = 0;

    cr_assert_eq(tw_store_apply(l, "x", 1), -EBADMSG);
    workload(l, 2, 10);
    cr_assert_eq(tw_store_apply(l, lg.r[0].data, lg.r[0].h.len), -EPERM);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
    /* A leader's directory as a follower: it may hold what the log does
     * not. A follower's as a leader: only through a promotion. */
    tw_store_config_init(&cfg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &lrec;
    cfg.follower = true;
    cr_assert_null(tw_store_open(ldir, &cfg, &err));
    cr_assert_eq(err, -EEXIST);
    rlog_cfg(&cfg, &lg);
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &frec;
    cr_assert_null(tw_store_open(fdir, &cfg, &err));
    cr_assert_eq(err, -EPERM);
}

/* ---- promotion and fencing ----------------------------------------------- */

Test(store_promote, delivers_what_the_log_did_not_see_acked)
{
    struct tw_store *l, *f = rlog_follower(fdir, &frec, &lg2);
    struct tw_store_id id[40], gone;
    uint64_t t0, first;
    size_t n;

    l = leader();
    /* 0-19 due soon; even ones acked by the leader; 20-29 an hour away;
     * 30-39 in 1.5 s; one more cancelled. */
    for (int i = 0; i < 40; i++) {
        uint64_t at = i < 20   ? st_real() + (uint64_t)(10 + i) * ST_MS
                      : i < 30 ? st_real() + HOUR
                               : st_real() + 1500 * ST_MS;

        cr_assert_eq(tw_store_schedule_at(l, at, "p", 1, NULL, NULL, &id[i]),
                     0);
    }
    cr_assert_eq(tw_store_schedule_at(l, st_real() + 60 * ST_MS, "c", 1, NULL,
                                      NULL, &gone),
                 0);
    cr_assert_eq(tw_store_cancel(l, gone, NULL, NULL), 0); /* same batch */
    cr_assert_eq(tw_store_sync(l), 0);
    cr_assert_eq(st_wait(&lrec, &lrec.n, 20, 5000), 20);
    for (int i = 0; i < 20; i += 2)
        cr_assert_eq(tw_store_ack(l, id[i], NULL, NULL), 0);
    cr_assert_eq(tw_store_sync(l), 0);
    n = rlog_count(&lg);
    cr_assert_eq(tw_store_fence(l), 0); /* as good as dead */
    rlog_apply(&lg, f, 0, n);
    cr_assert_eq(tw_store_count(f), 30);

    t0 = st_real();
    cr_assert_eq(tw_store_promote(f, 0), 0);
    cr_assert_eq(rlog_count(&lg2), 1); /* the epoch record */
    cr_assert_eq(lg2.r[0].h.epoch, 2);
    cr_assert_eq(lg2.r[0].h.first_lsn, lg.r[n - 1].h.last_lsn + 1);
    cr_assert_eq(st_wait(&frec, &frec.n, 10, 5000), 10);
    first = frec.at[0];
    cr_assert_lt(first - t0, UINT64_C(1000000000), "first after %llu ns",
                 (unsigned long long)(first - t0));
    cr_assert_eq(st_wait(&frec, &frec.n, 20, 5000), 20);
    st_sleep_ms(200);
    cr_assert_eq(st_get(&frec, &frec.n), 20);
    for (size_t k = 0; k < 20; k++) {
        struct tw_store_id d = frec.id[k];
        int i = -1;

        for (int j = 0; j < 40; j++)
            if (id[j].seq == d.seq)
                i = j;
        cr_assert(i >= 0 && (i < 20 ? i % 2 == 1 : i >= 30),
                  "delivered %d (acked, cancelled or not due)", i);
        cr_assert_geq(frec.at[k], d.deadline_ns, "early");
    }
    /* The new leader takes operations; the old one's record is stale. */
    cr_assert_eq(tw_store_ack(f, id[1], NULL, NULL), 0);
    cr_assert_eq(tw_store_sync(f), 0);
    cr_assert_eq(tw_store_close(l), -ESTALE);
    cr_assert_eq(tw_store_close(f), 0);
}

Test(store_promote, a_deposed_leaders_records_are_refused)
{
    struct tw_store *l = leader();
    struct tw_store *f = rlog_follower(fdir, &frec, &lg2);
    struct tw_store *g = rlog_follower(gdir, &grec, NULL);
    size_t n, m;
    uint64_t lsn, count;

    workload(l, 4, 60);
    n = rlog_count(&lg);
    rlog_apply(&lg, f, 0, n);
    rlog_apply(&lg, g, 0, n);
    cr_assert_eq(tw_store_promote(f, 0), 0);
    rlog_apply(&lg2, g, 0, rlog_count(&lg2)); /* the epoch record */
    lsn = applied(g);
    count = tw_store_count(g);
    /* The old leader, paused through all that, goes on. */
    workload(l, 8, 60);
    m = rlog_count(&lg);
    cr_assert_gt(m, n);
    for (size_t i = n; i < m; i++)
        cr_assert_eq(tw_store_apply(g, lg.r[i].data, lg.r[i].h.len), -ESTALE,
                     "record %zu of the deposed leader", i);
    cr_assert_eq(applied(g), lsn);
    cr_assert_eq(tw_store_count(g), count);
    /* The new leader's go on applying. */
    workload(f, 12, 30);
    rlog_apply(&lg2, g, 1, rlog_count(&lg2));
    cr_assert_eq(tw_store_count(g), tw_store_count(f));
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
    cr_assert_eq(tw_store_close(g), 0);
}

Test(store_promote, stale_leader_with_an_expired_lease_delivers_nothing)
{
    struct tw_store_config cfg;
    struct tw_store *l;

    rlog_cfg(&cfg, &lg);
    cfg.lease_ns = 100 * ST_MS;
    cfg.watermark_ns = 30 * ST_MS;
    l = st_open_cfg(ldir, &lrec, &cfg);
    cr_assert_eq(
        tw_store_schedule_durable(l, st_real() + 20 * ST_MS, "a", 1, NULL), 0);
    cr_assert_eq(st_wait(&lrec, &lrec.n, 1, 5000), 1);
    /* The log stops confirming (as a paused leader finds after a
     * promotion): the lease runs out, deliveries stop. */
    rlog_fail(&lg, -ETIMEDOUT);
    st_sleep_ms(250);
    cr_assert_eq(tw_store_schedule_at(l, st_real(), "b", 1, NULL, NULL, NULL),
                 -ETIMEDOUT);
    st_sleep_ms(200);
    cr_assert_eq(st_get(&lrec, &lrec.n), 1);
    cr_assert_eq(tw_store_close(l), -ETIMEDOUT);
}

Test(store_promote, bad_promotions)
{
    struct tw_store *l = leader(), *f = rlog_follower(fdir, &frec, &lg2);
    struct tw_store_replica ri;

    cr_assert_eq(tw_store_promote(l, 5), -EPERM);
    workload(l, 1, 20);
    rlog_apply(&lg, f, 0, rlog_count(&lg));
    cr_assert_eq(tw_store_promote(f, 1), -ESTALE); /* not above epoch 1 */
    rlog_fail(&lg2, -EIO);
    cr_assert_eq(tw_store_promote(f, 3), -EIO);
    cr_assert_eq(tw_store_replica_info(f, &ri), 0);
    cr_assert(!ri.leader);
    cr_assert_eq(ri.epoch, 1);
    rlog_fail(&lg2, 0);
    cr_assert_eq(tw_store_promote(f, 3), 0);
    cr_assert_eq(tw_store_replica_info(f, &ri), 0);
    cr_assert(ri.leader);
    cr_assert_eq(ri.epoch, 3);
    cr_assert_eq(tw_store_promote(f, 4), -EPERM);
    cr_assert_eq(tw_store_apply(f, lg.r[0].data, lg.r[0].h.len), -EPERM);
    cr_assert_eq(tw_store_close(l), 0);
    cr_assert_eq(tw_store_close(f), 0);
    /* A promoted follower reopens as the leader of its epoch. */
    {
        struct tw_store_config cfg;

        rlog_cfg(&cfg, &lg2);
        f = st_open_cfg(fdir, &frec, &cfg);
        cr_assert_eq(tw_store_replica_info(f, &ri), 0);
        cr_assert(ri.leader);
        cr_assert_eq(ri.epoch, 3);
        cr_assert_eq(tw_store_close(f), 0);
    }
}

/* Records made by hand (rlog.h's forge), of every kind and overlapping:
 * the entries at or below the follower's LSN are skipped, a schedule's
 * sequence number raises the next one the follower would give, a cancel
 * or an ack removes, the watermark and the epoch only rise; then a record
 * of the old epoch is stale. */
Test(store_follower, hand_made_records_apply_entry_by_entry)
{
    struct tw_store *f = rlog_follower(fdir, &frec, &lg2);
    struct tw_store_replica ri;
    struct rlog_forge r;
    struct rlog_dump d;
    struct tw_store_id id;
    uint64_t t = st_real() + HOUR;

    rlog_forge_init(&r);
    rlog_forge_entry(&r, TW_STORE_LOG_SCHEDULE, t, 5, "ab", 2);     /* 1 */
    rlog_forge_entry(&r, TW_STORE_LOG_SCHEDULE, t + 1, 3, "c", 1);  /* 2 */
    rlog_forge_entry(&r, TW_STORE_LOG_WATERMARK, 1000, 0, NULL, 0); /* 3 */
    cr_assert_eq(tw_store_apply(f, r.b, rlog_forge_seal(&r, 42, 1, 1, 3)), 3);
    cr_assert_eq(tw_store_count(f), 2);
    rlog_forge_init(&r);
    rlog_forge_entry(&r, TW_STORE_LOG_SCHEDULE, t + 1, 3, "c", 1); /* 2 */
    rlog_forge_entry(&r, TW_STORE_LOG_WATERMARK, 500, 0, NULL, 0); /* 3 */
    rlog_forge_entry(&r, TW_STORE_LOG_EPOCH, 7, 0, NULL, 0);       /* 4 */
    rlog_forge_entry(&r, TW_STORE_LOG_WATERMARK, 900, 0, NULL, 0); /* 5 */
    rlog_forge_entry(&r, TW_STORE_LOG_ACK, t, 5, NULL, 0);         /* 6 */
    cr_assert_eq(tw_store_apply(f, r.b, rlog_forge_seal(&r, 42, 1, 2, 5)), 3);
    cr_assert_eq(tw_store_count(f), 1);
    cr_assert_eq(tw_store_replica_info(f, &ri), 0);
    cr_assert_eq(ri.set, 42);
    cr_assert_eq(ri.lsn, 6);
    cr_assert_eq(ri.epoch, 7);
    cr_assert_eq(ri.watermark_ns, 1000);
    rlog_forge_init(&r);
    rlog_forge_entry(&r, TW_STORE_LOG_CANCEL, t + 1, 3, NULL, 0); /* 7 */
    cr_assert_eq(tw_store_apply(f, r.b, rlog_forge_seal(&r, 42, 6, 7, 1)),
                 -ESTALE);
    cr_assert_eq(tw_store_count(f), 1);
    /* Promoted, it numbers its own timers after the highest it applied. */
    cr_assert_eq(tw_store_promote(f, 0), 0);
    cr_assert_eq(tw_store_schedule_at(f, t + 2, "n", 1, NULL, NULL, &id), 0);
    cr_assert_geq(id.seq, 6);
    cr_assert_eq(tw_store_close(f), 0);
    rlog_dump(fdir, &d);
    cr_assert_eq(d.n, 2);
    cr_assert_eq(d.id[0].deadline_ns, t + 1);
    cr_assert_eq(d.id[0].seq, 3);
}

/* A store of its own (no replica set) is no follower: apply is -EPERM,
 * NULL data -EINVAL, and its directory cannot be opened as a follower's
 * (it holds timers no log has). */
Test(store_follower, a_store_of_its_own_refuses_records_and_the_follower_role)
{
    struct tw_store_config cfg;
    struct tw_store *s = st_open(gdir, &grec);
    struct rlog_forge r;
    int err = 0;

    rlog_forge_init(&r);
    rlog_forge_entry(&r, TW_STORE_LOG_WATERMARK, 1, 0, NULL, 0);
    cr_assert_eq(tw_store_apply(s, r.b, rlog_forge_seal(&r, 42, 1, 1, 1)),
                 -EPERM);
    cr_assert_eq(tw_store_apply(s, NULL, 0), -EINVAL);
    cr_assert_eq(tw_store_schedule_durable(s, UINT64_MAX, "o", 1, NULL), 0);
    cr_assert_eq(tw_store_close(s), 0);
    tw_store_config_init(&cfg);
    cfg.follower = true;
    cfg.deliver = st_deliver;
    cfg.deliver_arg = &grec;
    cr_assert_null(tw_store_open(gdir, &cfg, &err));
    cr_assert_eq(err, -EEXIST);
    cr_assert_eq(st_on_disk(gdir), 1);
}

/* A follower that never applied a record belongs to no set yet: promoted,
 * it founds one (a set id not 0) at the next epoch. */
Test(store_promote, a_new_follower_promoted_founds_a_set)
{
    struct tw_store *f = rlog_follower(fdir, &frec, &lg2);
    struct tw_store_replica ri;

    cr_assert_eq(tw_store_replica_info(f, &ri), 0);
    cr_assert_eq(ri.set, 0);
    cr_assert_eq(tw_store_promote(f, 0), 0);
    cr_assert_eq(tw_store_replica_info(f, &ri), 0);
    cr_assert_neq(ri.set, 0);
    cr_assert_eq(ri.epoch, 1);
    cr_assert(ri.leader);
    cr_assert_eq(rlog_count(&lg2), 1, "the epoch record");
    cr_assert_eq(lg2.r[0].h.set, ri.set);
    cr_assert_eq(tw_store_close(f), 0);
}

/* A follower opened without a log, promoted, leads on its own: no record
 * to hand, no lease to wait for (tw_store_renew() is -EPERM), it delivers
 * what is due and commits what it is given. */
Test(store_promote, a_follower_without_a_log_promoted_leads_alone)
{
    struct tw_store *f = rlog_follower(fdir, &frec, NULL);
    struct rlog_forge r;

    rlog_forge_init(&r);
    rlog_forge_entry(&r, TW_STORE_LOG_SCHEDULE, st_real() - 1000 * ST_MS, 1,
                     "d", 1);
    cr_assert_eq(tw_store_apply(f, r.b, rlog_forge_seal(&r, 42, 1, 1, 1)), 1);
    st_sleep_ms(50);
    cr_assert_eq(st_get(&frec, &frec.n), 0, "a follower delivered");
    cr_assert_eq(tw_store_promote(f, 0), 0);
    cr_assert_eq(st_wait(&frec, &frec.n, 1, 10000), 1);
    cr_assert_eq(tw_store_renew(f, st_mono()), -EPERM);
    cr_assert_eq(tw_store_ack(f, frec.id[0], NULL, NULL), 0);
    cr_assert_eq(tw_store_schedule_durable(f, UINT64_MAX, "n", 1, NULL), 0);
    cr_assert_eq(tw_store_count(f), 1);
    cr_assert_eq(tw_store_close(f), 0);
    cr_assert_eq(st_on_disk(fdir), 1);
}
