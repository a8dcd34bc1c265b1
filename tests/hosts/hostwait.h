/*
 * hostwait.h: what the host matrix's programs (host.c, dlcycle.c) share to
 * see a timer of a threaded layer fire: a sleep, a wait on a flag the
 * timer's callback sets (from the layer's own thread, hence atomics), and
 * the purgatory operation that never completes, so that it can only
 * expire. C and C++ alike (host.c is built as both).
 */
#ifndef TESTS_HOSTS_HOSTWAIT_H
#define TESTS_HOSTS_HOSTWAIT_H

#include <stdbool.h>
#include <time.h>

#include <timewheel.h>

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Wait up to 10 s, a millisecond at a time, for *flag to be set. */
static inline int wait_for(int *flag)
{
    for (int i = 0; i < 10000; i++) {
        if (__atomic_load_n(flag, __ATOMIC_SEQ_CST))
            return 1;
        sleep_ms(1);
    }
    return 0;
}

static inline bool never(struct tw_delayed *op, void *arg)
{
    (void)op;
    (void)arg;
    return false;
}

static inline void on_expire(struct tw_delayed *op, void *arg)
{
    (void)op;
    __atomic_store_n((int *)arg, 1, __ATOMIC_SEQ_CST);
}

#endif
