/*
 * The suites: sizes, repetitions and knobs for `make bench` (quick),
 * `make bench-full` (full) and the CI smoke test (smoke).
 */
#ifndef BENCH_SUITE_H
#define BENCH_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "workload.h"

#define SUITE_MAX_SIZES 8

struct suite_sizes {
    const char *workload;
    uint64_t n[SUITE_MAX_SIZES]; /* 0-terminated */
};

struct suite {
    const char *name;
    const char *about;
    struct bench_params p;
    const struct suite_sizes *sizes; /* one entry per workload */
};

const struct suite *suite_find(const char *name);
/* The suite's sizes for a workload; returns how many. */
size_t suite_sizes(const struct suite *s, const char *workload, uint64_t *out,
                   size_t max);
/* Every suite, for --help. */
extern const struct suite *const bench_suites[];
extern const unsigned bench_nsuites;

#endif /* BENCH_SUITE_H */
