/*
 * metrics.c: what an operator reads of a running store
 * (tw_store_metrics(), and the same in the Prometheus text format).
 *
 * The figures are kept where they change, in struct tw__stats: the
 * worker's (commits, deliveries, the window) by the worker, the queue's
 * two counts by producers and the worker under the store's mutex. Each
 * has one writer at a time, which stores a relaxed load plus its change,
 * so keeping them costs a few plain stores per batch or per delivery and
 * no atomic read-modify-write; a reader loads each once, without a lock,
 * stopping nothing. The queue's depth is accepted minus finished, loaded
 * in that order from the end: finished first, so the difference never
 * goes below zero.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "promtext.h"
#include "store.h"

static uint64_t get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

int tw_store_metrics(const struct tw_store *s, struct tw_store_metrics *m)
{
    const struct tw__stats *st;
    uint64_t finished;

    if (!s || !m)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    st = &s->stats;
    memset(m, 0, sizeof *m);
    finished = get(&st->finished);
    m->queue_depth = get(&st->accepted) - finished;
    m->commits = get(&st->commits);
    m->committed_ops = get(&st->committed_ops);
    m->last_batch_ops = get(&st->last_batch_ops);
    m->commit_ns = get(&st->commit_ns);
    m->last_commit_ns = get(&st->last_commit_ns);
    m->max_commit_ns = get(&st->max_commit_ns);
    m->sync_failures = get(&st->sync_failures);
    m->deliveries = get(&st->deliveries);
    m->unacked = get(&st->unacked);
    m->in_memory = get(&st->in_memory);
    m->held = get(&s->count);
    return 0;
}

/* One family per figure: its name, type, help, and where it is. */
static const struct family {
    const char *name, *type, *help;
    size_t at;    /* offsetof(struct tw_store_metrics, ...) */
    bool seconds; /* a time in ns, written in seconds */
} families[] = {
#define F(n, t, h, f, sec)                                                     \
    {                                                                          \
        "timewheel_store_" n, t, h, offsetof(struct tw_store_metrics, f), sec  \
    }
    F("queue_depth", "gauge",
      "Operations accepted and not yet durable or failed.", queue_depth, false),
    F("commits_total", "counter", "Batches written and synced.", commits,
      false),
    F("committed_operations_total", "counter",
      "Operations in the batches written and synced.", committed_ops, false),
    F("last_batch_operations", "gauge", "Operations in the latest batch.",
      last_batch_ops, false),
    F("commit_seconds_total", "counter", "Time in the batches' write and sync.",
      commit_ns, true),
    F("last_commit_seconds", "gauge", "The latest batch's write and sync.",
      last_commit_ns, true),
    F("max_commit_seconds", "gauge",
      "The longest batch write and sync since the open.", max_commit_ns, true),
    F("sync_failures_total", "counter", "Writes or syncs that failed.",
      sync_failures, false),
    F("deliveries_total", "counter",
      "Timers delivered (or queued for the poller).", deliveries, false),
    F("unacked", "gauge", "Timers delivered and not yet acknowledged.", unacked,
      false),
    F("in_memory", "gauge", "Timers in the in-memory window.", in_memory,
      false),
    F("timers", "gauge", "Timers the store holds on disk.", held, false),
#undef F
};

int tw_store_metrics_text(const struct tw_store *s, char *buf, size_t len)
{
    struct tw_store_metrics m;
    struct tw__prom p;
    int rc = tw_store_metrics(s, &m);

    if (rc != 0)
        return rc;
    if (!buf && len)
        return -EINVAL;
    tw__prom_init(&p, buf, len);
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
        const struct family *f = &families[i];
        uint64_t v;

        memcpy(&v, (const char *)&m + f->at, sizeof v);
        tw__prom_family(&p, f->name, f->type, f->help);
        if (f->seconds)
            tw__prom_seconds(&p, f->name, NULL, v);
        else
            tw__prom_u64(&p, f->name, NULL, v);
    }
    return tw__prom_end(&p);
}
