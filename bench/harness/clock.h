/*
 * Clocks: the real ones the benchmark measures with, and the virtual one that
 * libuv, libevent and libev read.
 *
 * The wheels and the heap take time as an argument; libuv, libevent and libev
 * read CLOCK_MONOTONIC themselves. So that all seven run the same operation
 * sequence on the same virtual time, twbench defines clock_gettime() itself
 * (clock.c): while a peer's code runs between clock_virtual_enter() and
 * clock_virtual_leave(), its monotonic clocks answer the virtual time set
 * with clock_virtual_set(); every other call, and every call outside those
 * brackets, goes to the C library. The peers' own code is unchanged.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stdint.h>

/* The virtual clock reads this many ns at virtual time 0, so that libevent
 * never sees a zero timeval (which it takes for "no cached time"). */
#define CLOCK_VIRTUAL_BASE_NS UINT64_C(1000000000000)

/* Real CLOCK_MONOTONIC, ns. */
uint64_t clock_now_ns(void);
/* CPU time of the calling thread, ns. */
uint64_t clock_cpu_ns(void);

/* Virtual time (ns from 0) that the monotonic clocks answer when virtual. */
void clock_virtual_set(uint64_t now);
/* Brackets around peer code that should see the virtual clock; they nest. */
void clock_virtual_enter(void);
void clock_virtual_leave(void);

#endif /* BENCH_CLOCK_H */
