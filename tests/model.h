/*
 * A reference model of the wheel's contract, and a harness that drives a real
 * wheel and the model through the same random operations and compares them
 * after every step. Used by the differential tests of both designs.
 *
 * The model knows nothing of slots: for each timer it keeps whether it is
 * pending, its deadline and due tick (computed independently, in 128-bit
 * arithmetic), and the advance call it was scheduled in. Every callback
 * checks that its timer was pending, that it is not early, and that it runs
 * in order; after each complete advance nothing due may be left behind.
 */
#ifndef TW_TEST_MODEL_H
#define TW_TEST_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel.h"

struct model_timer {
    struct tw_timer t;
    struct harness *h;
    size_t id;
    bool pending;
    uint64_t deadline;
    uint64_t due;
    long sched_call; /* advance call that scheduled it, -1 if none */
};

struct harness {
    const char *name;
    struct tw_wheel *w;
    struct tw_config cfg;
    uint64_t max_tick;
    struct model_timer *timers;
    size_t ntimers;
    size_t pending;
    uint64_t rng;
    long call; /* index of the advance running or last run */
    bool advancing;
    bool quiet;      /* callbacks do nothing (final drain) */
    uint64_t target; /* due tick reached by the running advance */
    uint64_t prev_target;
    uint64_t last_key; /* order key of the last timer fired in this call */
    uint64_t max_step; /* largest advance step, in ticks */
    uint64_t fired, ops, check_every;
    char why[256];
};

/* Wheel and model with `ntimers` timers; cfg describes the wheel. */
void harness_init(struct harness *h, const char *name,
                  const struct tw_config *cfg, size_t ntimers,
                  uint64_t max_step);
void harness_fini(struct harness *h);
/* `ops` random operations, checking everything after each. */
void harness_run(struct harness *h, uint64_t ops);

/* The seed for this run: TW_SEED from the environment, or a fixed one;
 * printed so that a failure can be replayed. */
uint64_t test_seed(const char *test);
/* Number of random operations per differential test: TW_OPS or `dflt`. */
uint64_t test_ops(uint64_t dflt);

/* Independent arithmetic of the contract (128-bit, no saturation tricks). */
uint64_t model_due(const struct tw_config *cfg, uint64_t deadline);
uint64_t model_target(const struct tw_config *cfg, uint64_t now);
uint64_t model_boundary(const struct tw_config *cfg, uint64_t tick);

#endif /* TW_TEST_MODEL_H */
