/*
 * The performance targets (docs/benchmarks.md), checked against the measured
 * results for the report (targets.c).
 */
#ifndef BENCH_TARGETS_H
#define BENCH_TARGETS_H

#include <stdio.h>

#include "results.h"

/* Markdown: one table of the targets, one of hier against hier-pow2. */
void targets_report(FILE *f, const struct results *rs);

#endif /* BENCH_TARGETS_H */
