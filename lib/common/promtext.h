/*
 * The Prometheus text exposition format (version 0.0.4), written into a
 * caller's buffer, for every layer's metrics (lib/common/, never
 * installed). A layer's tw_<layer>_metrics_text() reads its figures, then
 * writes them here: one writer, so that every layer's text has the same
 * shape and a monitoring system scrapes it without glue.
 *
 * The writer behaves as snprintf() does: it never writes past the buffer,
 * always leaves it NUL-terminated when it has room for one byte, and counts
 * the bytes the whole text needs, so that a caller whose buffer was short
 * learns the size to ask for (tw__prom_end()). Names are the caller's
 * constants (never user input), so nothing is escaped; labels are written
 * as given.
 *
 * Times are written in seconds, the format's base unit, from the library's
 * nanoseconds; counts as integers.
 */
#ifndef TW_COMMON_PROMTEXT_H
#define TW_COMMON_PROMTEXT_H

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tw__prom {
    char *buf;
    size_t cap;
    size_t len; /* bytes the text needs so far, written or not */
};

static inline void tw__prom_init(struct tw__prom *p, char *buf, size_t cap)
{
    p->buf = buf;
    p->cap = buf ? cap : 0;
    p->len = 0;
    if (p->cap)
        buf[0] = '\0';
}

/* Append printf-style text; past the buffer's end only counted. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline void
tw__prom_printf(struct tw__prom *p, const char *fmt, ...)
{
    va_list ap;
    size_t room = p->len < p->cap ? p->cap - p->len : 0;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(room ? p->buf + p->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        p->len += (size_t)n;
}

/* The "# HELP" and "# TYPE" lines that open a metric family; type is
 * "counter", "gauge" or "histogram". */
static inline void tw__prom_family(struct tw__prom *p, const char *name,
                                   const char *type, const char *help)
{
    tw__prom_printf(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: `name{labels} value`, labels NULL or "" for none. */
static inline void tw__prom_u64(struct tw__prom *p, const char *name,
                                const char *labels, uint64_t v)
{
    if (labels && *labels)
        tw__prom_printf(p, "%s{%s} %" PRIu64 "\n", name, labels, v);
    else
        tw__prom_printf(p, "%s %" PRIu64 "\n", name, v);
}

/* ns as seconds, exactly (nine decimals, no rounding through a double). */
static inline void tw__prom_seconds(struct tw__prom *p, const char *name,
                                    const char *labels, uint64_t ns)
{
    const char *open = labels && *labels ? "{" : "";
    const char *close = labels && *labels ? "}" : "";

    tw__prom_printf(p, "%s%s%s%s %" PRIu64 ".%09" PRIu64 "\n", name, open,
                    labels && *labels ? labels : "", close,
                    ns / UINT64_C(1000000000), ns % UINT64_C(1000000000));
}

/* A histogram of n buckets of durations: counts[i] observations at most
 * upper_ns[i] and above upper_ns[i - 1] (not cumulative: the writer sums),
 * counts[n] those above upper_ns[n - 1]; sum_ns their total. Written as
 * the format wants it: cumulative `_bucket{le="..."}` lines ending with
 * le="+Inf", then `_sum` in seconds and `_count`. */
static inline void tw__prom_histogram(struct tw__prom *p, const char *name,
                                      const char *help,
                                      const uint64_t *upper_ns,
                                      const uint64_t *counts, size_t n,
                                      uint64_t sum_ns)
{
    uint64_t cum = 0;

    tw__prom_family(p, name, "histogram", help);
    for (size_t i = 0; i < n; i++) {
        cum += counts[i];
        tw__prom_printf(
            p, "%s_bucket{le=\"%" PRIu64 ".%09" PRIu64 "\"} %" PRIu64 "\n",
            name, upper_ns[i] / UINT64_C(1000000000),
            upper_ns[i] % UINT64_C(1000000000), cum);
    }
    cum += counts[n];
    tw__prom_printf(p, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
    tw__prom_printf(p, "%s_sum %" PRIu64 ".%09" PRIu64 "\n", name,
                    sum_ns / UINT64_C(1000000000),
                    sum_ns % UINT64_C(1000000000));
    tw__prom_printf(p, "%s_count %" PRIu64 "\n", name, cum);
}

/* The length of the whole text (what snprintf() would return), or -EOVERFLOW
 * when it would not fit in an int. The text was written whole only when
 * the result is below the buffer's size. */
static inline int tw__prom_end(const struct tw__prom *p)
{
    return p->len > INT_MAX ? -EOVERFLOW : (int)p->len;
}

#endif /* TW_COMMON_PROMTEXT_H */
