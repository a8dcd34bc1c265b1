/*
 * Bytes the process has allocated, from jemalloc's statistics: twbench is
 * linked with jemalloc, which then serves every malloc() of the process,
 * libuv's and libevent's included.
 */
#ifndef BENCH_MEMSTAT_H
#define BENCH_MEMSTAT_H

#include <stdbool.h>
#include <stdint.h>

/* jemalloc's stats.allocated, fresh; false when it cannot be read. */
bool memstat_allocated(uint64_t *bytes);
/* The bytes jemalloc really reserves for a malloc(size): its size class. */
uint64_t memstat_usable(uint64_t size);
/* jemalloc's version string, or "unknown". */
const char *memstat_version(void);

#endif /* BENCH_MEMSTAT_H */
