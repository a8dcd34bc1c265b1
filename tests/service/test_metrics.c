/*
 * tw_service_metrics() and tw_service_metrics_text() (lib/service/
 * metrics.c), each figure against a workload whose answer is known: a
 * worker deliberately held up in a callback for HOLD makes the timers due
 * meanwhile fire at least HOLD - DUE late, and shows a lag of at least the
 * time it has been held while it is; an idle worker shows none. The text
 * is parsed back.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "timewheel.h"
#include "util.h"

#define HOLD (300 * MS)
#define DUE (50 * MS) /* the held-up timers' delay */
#define K 10

static struct hold hd;

/* Sum of the lateness buckets whose lower bound is at least lo ns. */
static uint64_t at_least(const struct tw_service_metrics *m, uint64_t lo)
{
    uint64_t n = 0;

    for (unsigned i = 1; i <= TW_SERVICE_LATE_BUCKETS; i++)
        if (TW_SERVICE_LATE_NS(i - 1) >= lo)
            n += m->late[i];
    return n;
}

static uint64_t total(const struct tw_service_metrics *m)
{
    uint64_t n = 0;

    for (unsigned i = 0; i <= TW_SERVICE_LATE_BUCKETS; i++)
        n += m->late[i];
    return n;
}

Test(service_metrics, lateness_and_lag_of_a_held_up_worker)
{
    struct tw_service *s = default_service(TW_HIER);
    struct tw_service_metrics m;
    uint64_t held_at;

    cr_assert_eq(tw_service_metrics(s, &m), 0);
    cr_assert_eq(m.fired, 0);
    cr_assert_eq(total(&m), 0);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(m.reserved[i], 0);
    for (int i = 0; i < K; i++)
        cr_assert_eq(tw_service_schedule(s, DUE, count_run, NULL, NULL), 0);
    cr_assert_eq(tw_service_schedule(s, 0, hold_cb, &hd, NULL), 0);
    wait_for(&hd.in, 1, "the worker held up");
    held_at = now_ns();
    sleep_ns(HOLD / 2);
    cr_assert_eq(tw_service_metrics(s, &m), 0);
    cr_assert_geq(
        m.lag_ns, HOLD / 2, "lag %llu ns while the worker was held up %llu ns",
        (unsigned long long)m.lag_ns, (unsigned long long)(now_ns() - held_at));
    sleep_ns(HOLD / 2);
    atomic_store(&hd.go, 1);
    wait_for(&runs, K, "the held-up timers");
    sleep_ns(20 * MS);
    cr_assert_eq(tw_service_metrics(s, &m), 0);
    cr_assert_eq(m.fired, K + 1); /* and the holder */
    cr_assert_eq(total(&m), m.fired);
    /* Due DUE after the schedule, fired after the hold ended, HOLD after
     * the holder started, which was after the schedules: at least
     * HOLD - DUE late, in buckets above that. */
    cr_assert_geq(at_least(&m, (HOLD - DUE) / 2), K,
                  "%llu of %d timers in the buckets of %llu ns and more",
                  (unsigned long long)at_least(&m, (HOLD - DUE) / 2), K,
                  (unsigned long long)((HOLD - DUE) / 2));
    cr_assert_geq(m.late_sum_ns, (uint64_t)K * (HOLD - DUE));
    /* Idle now: no lag. */
    sleep_ns(20 * MS);
    cr_assert_eq(tw_service_metrics(s, &m), 0);
    cr_assert_eq(m.lag_ns, 0, "an idle worker lags %llu ns",
                 (unsigned long long)m.lag_ns);
    cr_assert_eq(tw_service_destroy(s), 0);
}

/* The value of the sample line that starts with `name ` in text. */
static double sample(const char *text, const char *name)
{
    size_t n = strlen(name);

    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
        if (!strncmp(l, name, n) && l[n] == ' ')
            return strtod(l + n + 1, NULL);
    cr_assert_fail("no sample %s in:\n%s", name, text);
    return -1;
}

Test(service_metrics, text_parses_back_with_snprintf_contract)
{
    struct tw_service *s = default_service(TW_HIER);
    struct tw_service_metrics m;
    char small[16], *buf;
    int n, again;

    for (int i = 0; i < K; i++)
        cr_assert_eq(tw_service_schedule(s, 0, count_run, NULL, NULL), 0);
    cr_assert_eq(tw_service_schedule(s, 3600 * SEC, count_run, NULL, NULL), 0);
    wait_for(&runs, K, "the timers");
    sleep_ns(20 * MS);
    n = tw_service_metrics_text(s, small, sizeof(small));
    cr_assert_gt(n, (int)sizeof(small));
    cr_assert_eq(strlen(small), sizeof(small) - 1, "NUL-terminated, cut");
    cr_assert_eq(tw_service_metrics_text(s, NULL, 0), n);
    buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    again = tw_service_metrics_text(s, buf, (size_t)n + 1);
    cr_assert_eq(again, n);
    cr_assert_eq(strlen(buf), (size_t)n);
    cr_assert_eq(tw_service_metrics(s, &m), 0);
    cr_assert_eq(sample(buf, "tw_service_lateness_seconds_count"), K);
    cr_assert_eq(sample(buf, "tw_service_lateness_seconds_bucket{le=\"+Inf\"}"),
                 K);
    cr_assert_eq(sample(buf, "tw_service_scheduled_total"), K + 1);
    cr_assert_eq(sample(buf, "tw_service_runs_total"), K);
    cr_assert_eq(sample(buf, "tw_service_pending"), 1);
    cr_assert_eq(sample(buf, "tw_service_lag_seconds"), 0);
    cr_assert(strstr(buf, "# TYPE tw_service_lateness_seconds histogram\n"));
    free(buf);
    cr_assert_eq(tw_service_metrics_text(NULL, small, sizeof(small)), -EINVAL);
    cr_assert_eq(tw_service_metrics(s, NULL), -EINVAL);
    cr_assert_eq(tw_service_destroy(s), 0);
}
