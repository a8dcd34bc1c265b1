/*
 * The results of a run: one row per (workload, metric, implementation, n),
 * summarised over the repetitions (median, min, max), or empty with a note.
 * The tables, the CSV, the report and the plots all read from here.
 */
#ifndef BENCH_RESULTS_H
#define BENCH_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "impl.h"
#include "workload.h"

struct result {
    const struct workload *wl;
    unsigned variant;
    unsigned metric; /* index in wl->metrics */
    char name[64];   /* metric name, with the variant appended */
    const struct impl *im;
    uint64_t n;
    unsigned reps; /* 0: empty, see note */
    double median, min, max;
    char note[WL_NOTE];
};

struct results {
    struct result *r;
    size_t n, cap;
};

/* Summarise one cell's measurements into rows. */
void results_add_cell(struct results *rs, const struct workload *wl,
                      unsigned variant, const struct impl *im, uint64_t n,
                      const struct wl_result *out);
/* Metric name of (wl, variant, metric), written into buf. */
void results_metric_name(const struct workload *wl, unsigned variant,
                         unsigned metric, char *buf, size_t len);
/* The row for these keys, or NULL. */
const struct result *results_find(const struct results *rs, const char *wl,
                                  const char *metric, const char *impl,
                                  uint64_t n);
/* Distinct sizes measured for one metric of a workload, ascending. */
size_t results_sizes(const struct results *rs, const char *wl,
                     const char *metric, uint64_t *sizes, size_t max);
/* The best median among implementations for (wl, metric, n); NAN if none. */
double results_best(const struct results *rs, const struct result *row);
void results_free(struct results *rs);

#endif /* BENCH_RESULTS_H */
