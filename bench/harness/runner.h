/*
 * The runner: every selected workload, variant and size, on every selected
 * implementation, within the per-cell budget, with a progress line.
 */
#ifndef BENCH_RUNNER_H
#define BENCH_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "impl.h"
#include "results.h"
#include "suite.h"
#include "workload.h"

#define RUNNER_MAX_SIZES 16
#define RUNNER_MAX_WORKLOADS 16
#define RUNNER_MAX_IMPLS 16

struct run_config {
    const struct suite *suite;
    struct bench_params p; /* the suite's, with options applied */
    const struct workload *wl[RUNNER_MAX_WORKLOADS];
    unsigned nwl;
    const struct impl *im[RUNNER_MAX_IMPLS];
    unsigned nim;
    uint64_t sizes[RUNNER_MAX_SIZES]; /* --sizes; nsizes 0: the suite's */
    unsigned nsizes;
    bool quiet;
    char cmdline[512]; /* how twbench was called, for the report */
};

/* Run everything the configuration selects, adding rows to rs. */
void runner_run(const struct run_config *cfg, struct results *rs);

#endif /* BENCH_RUNNER_H */
