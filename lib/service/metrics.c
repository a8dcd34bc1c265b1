/*
 * What an operator reads: the worker's lag behind its clock and the
 * lateness of the timers it fired (tw_service_metrics()), and those with
 * the counters of tw_service_stats() in the Prometheus text format
 * (tw_service_metrics_text(), through lib/common/promtext.h).
 *
 * The worker writes the figures as it goes, with plain stores to a line
 * of its own (service_inlines.h, metrics.c's group): the clock reading of
 * its turn in progress (0 while it sleeps), and per timer it fires, one
 * bucket of a histogram of powers of two from 65.5 us, the sum and the
 * count, some ten instructions. A reader loads them, relaxed, from any
 * thread, stopping nothing; a snapshot is not one instant (a timer fired
 * between two loads may be in the count and not yet in its bucket).
 */
#include <errno.h>
#include <string.h>

#include "promtext.h"
#include "service.h"

TW_PUBLIC int tw_service_metrics(const struct tw_service *s,
                                 struct tw_service_metrics *out)
{
    uint64_t at, now;

    if (!s || !out)
        return -EINVAL;
    if (s->forked)
        return -ECHILD; /* fork.c */
    memset(out, 0, sizeof(*out));
    at = atomic_load_explicit(&s->turn_at, memory_order_relaxed);
    now = tw__mono_ns();
    out->lag_ns = at && now > at ? now - at : 0;
    out->fired = atomic_load_explicit(&s->fired, memory_order_relaxed);
    out->late_sum_ns = atomic_load_explicit(&s->late_sum, memory_order_relaxed);
    for (unsigned i = 0; i <= TW_SERVICE_LATE_BUCKETS; i++)
        out->late[i] = atomic_load_explicit(&s->late[i], memory_order_relaxed);
    return 0;
}

static void counters(struct tw__prom *p, const struct tw_service_stats *st)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } c[] = {
        {"tw_service_scheduled_total", "Timers accepted.",
         offsetof(struct tw_service_stats, scheduled)},
        {"tw_service_runs_total", "Callbacks started.",
         offsetof(struct tw_service_stats, runs)},
        {"tw_service_completed_total", "One-shot timers whose callback ran.",
         offsetof(struct tw_service_stats, completed)},
        {"tw_service_cancelled_total", "Timers cancelled.",
         offsetof(struct tw_service_stats, cancelled)},
        {"tw_service_returned_total", "Timers handed back by stop.",
         offsetof(struct tw_service_stats, returned)},
        {"tw_service_rejected_total", "Schedules refused with -EAGAIN.",
         offsetof(struct tw_service_stats, rejected)},
        {"tw_service_wakeups_total", "Times the worker woke from a sleep.",
         offsetof(struct tw_service_stats, wakeups)},
    };

    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        uint64_t v;

        memcpy(&v, (const char *)st + c[i].off, sizeof(v));
        tw__prom_family(p, c[i].name, "counter", c[i].help);
        tw__prom_u64(p, c[i].name, NULL, v);
    }
}

TW_PUBLIC int tw_service_metrics_text(const struct tw_service *s, char *buf,
                                      size_t len)
{
    uint64_t upper[TW_SERVICE_LATE_BUCKETS];
    struct tw_service_metrics m;
    struct tw_service_stats st;
    struct tw__prom p;
    int rc;

    if (!s || (!buf && len))
        return -EINVAL;
    if ((rc = tw_service_metrics(s, &m)) < 0 ||
        (rc = tw_service_stats((struct tw_service *)s, &st)) < 0)
        return rc;
    for (unsigned i = 0; i < TW_SERVICE_LATE_BUCKETS; i++)
        upper[i] = TW_SERVICE_LATE_NS(i);
    tw__prom_init(&p, buf, len);
    tw__prom_family(&p, "tw_service_lag_seconds", "gauge",
                    "How far the worker is behind its clock.");
    tw__prom_seconds(&p, "tw_service_lag_seconds", NULL, m.lag_ns);
    tw__prom_histogram(&p, "tw_service_lateness_seconds",
                       "Fire time minus deadline of the timers fired.", upper,
                       m.late, TW_SERVICE_LATE_BUCKETS, m.late_sum_ns);
    tw__prom_family(&p, "tw_service_pending", "gauge",
                    "Timers accepted and not yet let go of.");
    tw__prom_u64(&p, "tw_service_pending", NULL, st.pending);
    counters(&p, &st);
    return tw__prom_end(&p);
}
