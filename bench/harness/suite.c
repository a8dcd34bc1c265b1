/*
 * The three suites. The quick one must finish in about two and a half
 * minutes on a 2-core machine with all seven implementations, so its sizes
 * stop at 10^6 and its per-cell budget (a bound: harness/stop.h) cuts
 * repetitions, or the cell, when an implementation is slow; the full one
 * goes to 10^7.
 */
#include <string.h>

#include "suite.h"

#define SEC UINT64_C(1000000000)
#define HOUR (3600 * SEC)
#define DAY (24 * HOUR)

/* Knobs shared by every suite: the workloads' definitions. */
#define COMMON_PARAMS                                                          \
    .seed = 20261122, .rearm_per_tick = 1000, .rearm_idle_ns = 30 * SEC,       \
    .purg_rate = 100000, .purg_p50_ms = 20, .purg_p75_ms = 60,                 \
    .purg_timeout_ms = 200, .burst_max_run = 1000, .jump_span_ns = 30 * DAY,   \
    .slice_run = 64, .slice_work = 128

static const struct suite quick = {
    .name = "quick",
    .about = "sizes 10^3..10^6, 5 repetitions, 4 s per cell (make bench)",
    .p = {COMMON_PARAMS, .reps = 5, .budget_s = 4, .churn_pairs = 200000,
          .rearm_msgs = 200000, .longdelay_span_ns = HOUR,
          .scale_ops = 1000000},
    .id = SUITE_QUICK,
};

static const struct suite full = {
    .name = "full",
    .about = "sizes 10^3..10^7 (the scale workload to 10^8), 5 "
             "repetitions, 60 s per cell (make bench-full)",
    .p = {COMMON_PARAMS, .reps = 5, .budget_s = 60, .churn_pairs = 1000000,
          .rearm_msgs = 1000000, .longdelay_span_ns = HOUR,
          .scale_ops = 1000000},
    .id = SUITE_FULL,
};

static const struct suite smoke = {
    .name = "smoke",
    .about = "tiny sizes, 1 repetition, a simulated minute for longdelay "
             "(make bench-smoke, CI)",
    .p = {COMMON_PARAMS, .reps = 1, .budget_s = 2, .churn_pairs = 10000,
          .rearm_msgs = 10000, .longdelay_span_ns = 60 * SEC,
          .scale_ops = 10000},
    .id = SUITE_SMOKE,
};

const struct suite *const bench_suites[] = {&quick, &full, &smoke};
const unsigned bench_nsuites = sizeof(bench_suites) / sizeof(bench_suites[0]);

const struct suite *suite_find(const char *name)
{
    for (unsigned i = 0; i < bench_nsuites; i++)
        if (strcmp(bench_suites[i]->name, name) == 0)
            return bench_suites[i];
    return NULL;
}

size_t suite_sizes(const struct suite *s, const struct workload *wl,
                   uint64_t *out, size_t max)
{
    const uint64_t *n = wl->sizes[s->id];
    size_t k = 0;

    while (k < WL_MAX_SIZES && k < max && n[k])
        out[k] = n[k], k++;
    return k;
}
