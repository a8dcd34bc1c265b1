/*
 * benchclock.h: what the store's benchmarks (storebench.c, replbench.c)
 * time and count alike: the two clocks in nanoseconds (the monotonic one
 * for durations, the wall clock for the store's deadlines) and the done
 * callback that counts the schedules reported durable and the errors
 * among them.
 */
#ifndef BENCH_STORE_BENCHCLOCK_H
#define BENCH_STORE_BENCHCLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "timewheel/store.h"

#define S UINT64_C(1000000000)

static atomic_ulong done_n, done_err;

static inline uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;

    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mono(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t real(void)
{
    return clock_ns(CLOCK_REALTIME);
}

static inline void on_done(struct tw_store_id id, int err, void *arg)
{
    (void)id;
    (void)arg;
    if (err)
        atomic_fetch_add(&done_err, 1);
    atomic_fetch_add(&done_n, 1);
}

#endif
