/*
 * Instructions retired by this thread, from perf_event_open(2), where the
 * kernel (or hypervisor) allows it. Workloads report instructions per
 * operation only when perfcount_ok(); otherwise the report says why not.
 */
#ifndef BENCH_PERFCOUNT_H
#define BENCH_PERFCOUNT_H

#include <stdbool.h>
#include <stdint.h>

/* Open the counter once; false (and perfcount_why() tells) if impossible. */
bool perfcount_open(void);
bool perfcount_ok(void);
/* Instructions counted so far in user space; 0 when not available. */
uint64_t perfcount_read(void);
/* Why the counter is not available, or "" when it is. */
const char *perfcount_why(void);

#endif /* BENCH_PERFCOUNT_H */
