/*
 * What an operator reads of a purgatory: its counters (tw_purgatory_stats())
 * in the Prometheus text format, through lib/common/promtext.h, as the
 * service's and the store's are written. The two figures Kafka's purgatory
 * publishes map onto them: NumDelayedOperations is tw_purgatory_delayed
 * (operations watched now), PurgatorySize's growth is
 * tw_purgatory_watched_total; the outcomes are counters of their own.
 * Reading takes each shard's lock for as long as it takes to read its key
 * count (tw_purgatory_stats()), and stops nothing.
 */
#include <errno.h>
#include <stddef.h>

#include "promtext.h"
#include "purgatory.h"

/* The counters, each a family of one sample. */
static void counters(struct tw__prom *p, const struct tw_purgatory_stats *st)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } rows[] = {
        {"tw_purgatory_watched_total", "Operations accepted by watch.",
         offsetof(struct tw_purgatory_stats, watched)},
        {"tw_purgatory_completed_at_once_total",
         "Operations watch completed itself.",
         offsetof(struct tw_purgatory_stats, at_once)},
        {"tw_purgatory_completed_total", "Operations completed.",
         offsetof(struct tw_purgatory_stats, completed)},
        {"tw_purgatory_expired_total", "Operations whose timeout won.",
         offsetof(struct tw_purgatory_stats, expired)},
        {"tw_purgatory_cancelled_total",
         "Operations handed back by cancel_key.",
         offsetof(struct tw_purgatory_stats, cancelled)},
        {"tw_purgatory_returned_total", "Operations handed back by stop.",
         offsetof(struct tw_purgatory_stats, returned)},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const uint64_t *v = (const uint64_t *)((const char *)st + rows[i].off);

        tw__prom_family(p, rows[i].name, "counter", rows[i].help);
        tw__prom_u64(p, rows[i].name, NULL, *v);
    }
}

TW_PUBLIC int tw_purgatory_metrics_text(struct tw_purgatory *p, char *buf,
                                        size_t len)
{
    struct tw_purgatory_stats st;
    struct tw__prom t;
    int rc;

    if (!p || (!buf && len))
        return -EINVAL;
    if ((rc = tw_purgatory_stats(p, &st)) < 0)
        return rc;
    tw__prom_init(&t, buf, len);
    tw__prom_family(&t, "tw_purgatory_delayed", "gauge",
                    "Operations watched now (Kafka's NumDelayedOperations).");
    tw__prom_u64(&t, "tw_purgatory_delayed", NULL, st.watching);
    tw__prom_family(&t, "tw_purgatory_keys", "gauge",
                    "Distinct keys with at least one watcher.");
    tw__prom_u64(&t, "tw_purgatory_keys", NULL, st.keys);
    counters(&t, &st);
    return tw__prom_end(&t);
}
