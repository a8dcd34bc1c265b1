/*
 * The suites: sizes, repetitions and knobs for `make bench` (quick),
 * `make bench-full` (full) and the CI smoke test (smoke).
 */
#ifndef BENCH_SUITE_H
#define BENCH_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "workload.h"

struct suite {
    const char *name;
    const char *about;
    struct bench_params p;
    enum suite_id id; /* which of each workload's size lists */
};

const struct suite *suite_find(const char *name);
/* The suite's sizes for a workload (its own list); returns how many. */
size_t suite_sizes(const struct suite *s, const struct workload *wl,
                   uint64_t *out, size_t max);
/* Every suite, for --help. */
extern const struct suite *const bench_suites[];
extern const unsigned bench_nsuites;

#endif /* BENCH_SUITE_H */
