/*
 * The real clocks and the clock_gettime() interposer (see clock.h).
 *
 * Defining clock_gettime in the executable makes the dynamic linker bind
 * libuv's and libevent's calls to it (the executable comes first in symbol
 * lookup); the C library's own function is found with dlsym(RTLD_NEXT).
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

typedef int clock_fn(clockid_t, struct timespec *);

static clock_fn *libc_clock;
static uint64_t virtual_now;
static unsigned virtual_depth;

static clock_fn *real_clock(void)
{
    if (!libc_clock) {
        /* memcpy: ISO C has no cast from an object to a function pointer. */
        void *sym = dlsym(RTLD_NEXT, "clock_gettime");

        memcpy(&libc_clock, &sym, sizeof(libc_clock));
        if (!libc_clock) {
            fprintf(stderr, "twbench: clock_gettime not found: %s\n",
                    dlerror());
            abort();
        }
    }
    return libc_clock;
}

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;

    real_clock()(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_now_ns(void)
{
    return read_ns(CLOCK_MONOTONIC);
}

uint64_t clock_cpu_ns(void)
{
    return read_ns(CLOCK_THREAD_CPUTIME_ID);
}

void clock_virtual_set(uint64_t now)
{
    virtual_now = now;
}

void clock_virtual_enter(void)
{
    virtual_depth++;
}

void clock_virtual_leave(void)
{
    virtual_depth--;
}

static int is_monotonic(clockid_t id)
{
    return id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE ||
           id == CLOCK_MONOTONIC_RAW || id == CLOCK_BOOTTIME;
}

/* The interposer: virtual monotonic time inside the brackets. */
int clock_gettime(clockid_t id, struct timespec *ts)
{
    uint64_t t;

    if (!virtual_depth || !is_monotonic(id))
        return real_clock()(id, ts);
    t = CLOCK_VIRTUAL_BASE_NS + virtual_now;
    ts->tv_sec = (time_t)(t / 1000000000u);
    ts->tv_nsec = (long)(t % 1000000000u);
    return 0;
}
