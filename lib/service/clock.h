/*
 * The producers' clock (clock.c): the reading that tw_service_schedule(),
 * tw_service_schedule_periodic() and tw_handle_rearm() add a delay to.
 * Never below CLOCK_MONOTONIC as read on the calling thread at the call
 * (unless an instruction before it still waited on memory more than
 * TW__CLOCK_EARLY_NS after the TSC was read), and never more than
 * tw__clock_max_ahead() above it. The design, and why each of those
 * holds, is at the top of clock.c. Never installed.
 */
#ifndef TW_SERVICE_CLOCK_H
#define TW_SERVICE_CLOCK_H

#include <stdint.h>

#include "service.h"

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define TW__CLOCK_TSC 1
#include <x86intrin.h>
#else
#define TW__CLOCK_TSC 0
#endif

/* Added to every reading from a base: the most a bare rdtsc is assumed to
 * run ahead of the instructions before it (clock.c). */
#define TW__CLOCK_EARLY_NS UINT64_C(1000)

/* A thread's base: one real reading and the TSC just before it. */
struct tw__clock_base {
    uint64_t tsc;   /* the TSC, read (ordered) just before `ns` */
    uint64_t ns;    /* CLOCK_MONOTONIC then (or the last plain reading) */
    uint64_t span;  /* TSC cycles the base may be extrapolated; 0: read */
    uint64_t mult;  /* ns per cycle << 32, rounded up, with the margin */
    uint64_t last;  /* the last reading this thread was given */
    uint32_t calls; /* readings the base has served */
};

extern _Thread_local struct tw__clock_base tw__clock_mine;

/* The slow path (clock.c): a real reading, which becomes the thread's new
 * base when the TSC may be used. */
uint64_t tw__clock_refresh(void);

/* How the producers' clock reads, for the tests: TW__CLOCK_REAL (plain
 * clock_gettime: not x86-64 Linux, no invariant TSC, a clocksource other
 * than tsc, TW_SERVICE_CLOCK=monotonic, or tw__clock_disable()),
 * TW__CLOCK_CALIBRATING (the TSC's rate is not known yet: real readings),
 * TW__CLOCK_ON (extrapolated from the TSC). */
enum { TW__CLOCK_REAL, TW__CLOCK_CALIBRATING, TW__CLOCK_ON };
int tw__clock_mode(void);
/* The most a reading can be above CLOCK_MONOTONIC read just after it, in
 * ns: 0 unless TW__CLOCK_ON. */
uint64_t tw__clock_max_ahead(void);
/* Plain readings from now on: on this thread at once (the next may be
 * below its last, by tw__clock_max_ahead() at most), on other threads at
 * their next refresh, and clamped to their last reading meanwhile. */
void tw__clock_disable(void);

/*
 * CLOCK_MONOTONIC in ns, or an estimate of it at most tw__clock_max_ahead()
 * above and not below (as the top of this file says). Per thread,
 * readings never go backwards. Any thread; no failure.
 */
static inline uint64_t tw__svc_clock_upper(void)
{
#if TW__CLOCK_TSC
    struct tw__clock_base *b = &tw__clock_mine;

    if (b->span) {
        uint64_t d, t;

        /* Not fenced: + TW__CLOCK_EARLY_NS below covers a read that
         * runs ahead of older instructions (clock.c). */
        d = __rdtsc() - b->tsc; /* huge if the TSC went backwards */
        if (d < b->span) {
            /* d * mult < span * mult < 2^64 (clock.c); +1 rounds up. */
            t = b->ns + (d * b->mult >> 32) + 1 + TW__CLOCK_EARLY_NS;
            if (t < b->last)
                t = b->last;
            b->last = t;
            b->calls++;
            return t;
        }
    }
    return tw__clock_refresh();
#else
    return tw__mono_ns();
#endif
}

#endif /* TW_SERVICE_CLOCK_H */
