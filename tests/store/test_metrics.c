/*
 * What an operator reads (suite store_metrics, issue 30): each figure of
 * tw_store_metrics() against a workload whose answer is known, and the
 * same figures in the Prometheus text format, parsed back. A sync failure
 * is counted in store_errors (the fault interposer lives there).
 */
#include <inttypes.h>

#include "st.h"

ST_FIXTURE(store_metrics, 60, (void)0);

static struct tw_store_metrics metrics(struct tw_store *s)
{
    struct tw_store_metrics m;

    memset(&m, 0xa5, sizeof m);
    cr_assert_eq(tw_store_metrics(s, &m), 0);
    for (size_t i = 0; i < sizeof m.reserved / sizeof *m.reserved; i++)
        cr_assert_eq(m.reserved[i], 0, "reserved[%zu]", i);
    return m;
}

/* Wait until *field of a fresh read reaches want (5 s at most). */
#define WAIT_FOR(s, field, want)                                               \
    do {                                                                       \
        uint64_t end_ = st_mono() + 5000 * ST_MS;                              \
        while (metrics(s).field < (want) && st_mono() < end_)                  \
            st_sleep_ms(2);                                                    \
        cr_assert_eq(metrics(s).field, (want), #field);                        \
    } while (0)

/* Batches by count: commit_ops 100 and a time bound of an hour, so 250
 * schedules make two batches of 100 at once and leave 50 queued until
 * the sync closes the third. */
Test(store_metrics, queue_depth_and_batches)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_metrics m;

    tw_store_config_init(&cfg);
    cfg.commit_ops = 100;
    cfg.commit_ns = 3600 * UINT64_C(1000000000);
    s = st_open_cfg(dir, &rec, &cfg);
    m = metrics(s);
    cr_assert_eq(m.queue_depth + m.commits + m.committed_ops + m.deliveries +
                     m.unacked + m.held + m.sync_failures,
                 0, "a new store's figures");
    for (int i = 0; i < 250; i++)
        cr_assert_eq(tw_store_schedule_at(s, UINT64_MAX - (uint64_t)i, &i,
                                          sizeof i, NULL, NULL, NULL),
                     0);
    WAIT_FOR(s, commits, 2);
    /* A commit is counted when its write returns, the queue's depth when
     * its done callbacks have run, a moment later. */
    for (uint64_t end = st_mono() + 5000 * ST_MS;
         metrics(s).queue_depth > 50 && st_mono() < end;)
        st_sleep_ms(2);
    m = metrics(s);
    cr_assert_eq(m.queue_depth, 50);
    cr_assert_eq(m.committed_ops, 200);
    cr_assert_eq(m.last_batch_ops, 100);
    cr_assert_eq(m.held, 200);
    cr_assert_eq(tw_store_sync(s), 0);
    m = metrics(s);
    cr_assert_eq(m.queue_depth, 0);
    cr_assert_eq(m.commits, 3);
    cr_assert_eq(m.committed_ops, 250);
    cr_assert_eq(m.last_batch_ops, 50);
    cr_assert_eq(m.held, 250);
    cr_assert_eq(m.in_memory, 0, "all beyond the window");
    cr_assert_gt(m.last_commit_ns, 0);
    cr_assert_geq(m.max_commit_ns, m.last_commit_ns);
    cr_assert_geq(m.commit_ns, m.max_commit_ns);
    cr_assert_leq(m.max_commit_ns, 10 * UINT64_C(1000000000), "a 10 s sync?");
    cr_assert_eq(m.sync_failures, 0);
    cr_assert_eq(tw_store_close(s), 0);
}

static void take_and_ack(struct tw_store *s, struct tw_store_id id,
                         const void *payload, size_t len, void *arg)
{
    (void)payload, (void)len, (void)arg;
    cr_assert_eq(tw_store_ack(s, id, NULL, NULL), 0);
}

/* 30 overdue timers on a polled store: 30 delivered (queued for the
 * loop), 30 unacknowledged; the loop takes and acks 10, 5 more are
 * cancelled while they wait: 15 left unacknowledged, in memory and held. */
Test(store_metrics, deliveries_and_unacked)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    struct tw_store_id id[30];
    struct tw_store_metrics m;
    uint64_t now = st_real();
    int err = 1;

    tw_store_config_init(&cfg);
    cfg.polled = true;
    s = tw_store_open(dir, &cfg, &err);
    cr_assert_not_null(s, "open: %d", err);
    for (int i = 0; i < 30; i++)
        cr_assert_eq(tw_store_schedule_at(s, now - 1000 + (uint64_t)i, "", 0,
                                          NULL, NULL, &id[i]),
                     0);
    cr_assert_eq(tw_store_sync(s), 0);
    WAIT_FOR(s, deliveries, 30);
    cr_assert_eq(metrics(s).unacked, 30);
    cr_assert_eq(tw_store_poll(s, take_and_ack, NULL, 10), 10);
    for (int i = 10; i < 15; i++)
        cr_assert_eq(tw_store_cancel(s, id[i], NULL, NULL), 0);
    cr_assert_eq(tw_store_sync(s), 0);
    m = metrics(s);
    cr_assert_eq(m.deliveries, 30);
    cr_assert_eq(m.unacked, 15);
    cr_assert_eq(m.held, 15);
    cr_assert_eq(m.in_memory, 15);
    cr_assert_eq(tw_store_close(s), 0);
}

/* ---- the text --------------------------------------------------------- */

/* The sample named name in text, as ns when it is in seconds. */
static uint64_t sample(const char *text, const char *name, bool seconds)
{
    char want[96];
    const char *line = text;

    snprintf(want, sizeof want, "%s ", name);
    while (line && *line) {
        if (*line != '#' && !strncmp(line, want, strlen(want))) {
            const char *v = line + strlen(want);
            uint64_t a = 0, b = 0;

            if (seconds) {
                cr_assert_eq(sscanf(v, "%" SCNu64 ".%9" SCNu64, &a, &b), 2,
                             "%s", line);
                return a * UINT64_C(1000000000) + b;
            }
            cr_assert_eq(sscanf(v, "%" SCNu64, &a), 1, "%s", line);
            return a;
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    cr_assert_fail("no sample %s in\n%s", name, text);
    return 0;
}

Test(store_metrics, the_text_parses_back_to_the_figures)
{
    struct tw_store *s = st_open(dir, &rec);
    struct tw_store_metrics m;
    char small[16], *buf;
    int len, families = 0;

    for (int i = 0; i < 40; i++)
        cr_assert_eq(tw_store_schedule_at(s, UINT64_MAX - (uint64_t)i, "", 0,
                                          NULL, NULL, NULL),
                     0);
    cr_assert_eq(tw_store_sync(s), 0);
    len = tw_store_metrics_text(s, NULL, 0);
    cr_assert_gt(len, 200, "%d", len);
    cr_assert_eq(tw_store_metrics_text(s, small, sizeof small), len,
                 "a short buffer still gets the whole length");
    cr_assert_eq(strlen(small), sizeof small - 1);
    buf = malloc((size_t)len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(tw_store_metrics_text(s, buf, (size_t)len + 1), len);
    cr_assert_eq(strlen(buf), (size_t)len);
    cr_assert_eq(tw_store_metrics(s, &m), 0); /* quiet: the same figures */
    cr_assert_eq(sample(buf, "timewheel_store_queue_depth", false),
                 m.queue_depth);
    cr_assert_eq(sample(buf, "timewheel_store_commits_total", false),
                 m.commits);
    cr_assert_eq(
        sample(buf, "timewheel_store_committed_operations_total", false), 40);
    cr_assert_eq(sample(buf, "timewheel_store_last_batch_operations", false),
                 m.last_batch_ops);
    cr_assert_eq(sample(buf, "timewheel_store_commit_seconds_total", true),
                 m.commit_ns);
    cr_assert_eq(sample(buf, "timewheel_store_last_commit_seconds", true),
                 m.last_commit_ns);
    cr_assert_eq(sample(buf, "timewheel_store_max_commit_seconds", true),
                 m.max_commit_ns);
    cr_assert_eq(sample(buf, "timewheel_store_sync_failures_total", false), 0);
    cr_assert_eq(sample(buf, "timewheel_store_deliveries_total", false), 0);
    cr_assert_eq(sample(buf, "timewheel_store_unacked", false), 0);
    cr_assert_eq(sample(buf, "timewheel_store_in_memory", false), 0);
    cr_assert_eq(sample(buf, "timewheel_store_timers", false), 40);
    for (const char *p = buf; (p = strstr(p, "# TYPE ")); p++)
        families++;
    cr_assert_eq(families, 12, "one # TYPE per figure");
    cr_assert_eq(buf[len - 1], '\n');
    free(buf);
    cr_assert_eq(tw_store_close(s), 0);
}

Test(store_metrics, bad_input)
{
    struct tw_store *s = st_open(dir, &rec);
    struct tw_store_metrics m;
    char buf[8];

    cr_assert_eq(tw_store_metrics(NULL, &m), -EINVAL);
    cr_assert_eq(tw_store_metrics(s, NULL), -EINVAL);
    cr_assert_eq(tw_store_metrics_text(NULL, buf, sizeof buf), -EINVAL);
    cr_assert_eq(tw_store_metrics_text(s, NULL, 5), -EINVAL);
    cr_assert_eq(tw_store_close(s), 0);
}
