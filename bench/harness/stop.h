/*
 * The hard stop of a cell: what makes the per-cell time budget a bound and
 * not only a plan.
 *
 * The runner arms it before each call of a cell (one per repetition) with
 * the deadline that what is left of the cell's budget gives. The replay loop
 * (ops_run) and the workloads' own long loops call stop_check() every so
 * often with how far through their loop they are; once the real clock is
 * past the deadline it returns true, and keeps doing so until the next
 * stop_arm(), so every loop of the repetition gives up at once. A workload
 * records nothing from a repetition during which stop_hit() became true, and
 * the runner notes the estimate of a whole repetition on the cell.
 */
#ifndef BENCH_STOP_H
#define BENCH_STOP_H

#include <stdbool.h>
#include <stdint.h>

/* Calls to stop_check() between two reads of the clock, in ops_run. */
#define STOP_EVERY 1024

/* A new cell that must end by deadline_ns (real clock); 0: no deadline. */
void stop_arm(uint64_t deadline_ns);
/* A repetition starts now (the estimate counts from here). */
void stop_rep_start(void);
/* Whether to give up, done being the fraction (0..1) of the running loop
 * already done; true once past the deadline. */
bool stop_check(double done);
/* Whether this cell was stopped. */
bool stop_hit(void);
/* Seconds a whole repetition would take, from the time spent in the stopped
 * one and the fraction of it that was done. */
double stop_estimate_s(void);

#endif /* BENCH_STOP_H */
