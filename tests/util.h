/*
 * Small helpers shared by the named-case tests: wheels of each mode, a
 * timer that records when and in which order it fired, and the real clock.
 */
#ifndef TW_TEST_UTIL_H
#define TW_TEST_UTIL_H

#include <stdint.h>

#include "timewheel.h"

#define MS UINT64_C(1000000)
#define SEC (1000 * MS)

struct rec {
    struct tw_timer t;
    struct tw_wheel *w;
    int fired;          /* times the callback ran */
    int seq;            /* global firing order of the last run */
    uint64_t at;        /* tw_now() when it last ran */
    uint64_t period;    /* > 0: re-arm itself this far after each run */
    struct rec *victim; /* cancelled by this timer's callback, if set */
    int victim_rc;
};

/* A wheel of mode with the default layout and 1 ms tick, start 0. */
struct tw_wheel *wheel_new(enum tw_mode mode);
/* Initialise r on w with the recording callback. */
void rec_init(struct rec *r, struct tw_wheel *w);
/* Assert that tw_check() passes. */
void wheel_ok(const struct tw_wheel *w);
/* CLOCK_MONOTONIC in ns, and a sleep of ns, for the service's tests. */
uint64_t now_ns(void);
void sleep_ns(uint64_t ns);

#endif /* TW_TEST_UTIL_H */
