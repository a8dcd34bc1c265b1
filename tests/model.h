/*
 * The reference model of the wheel's contract, shared by the differential
 * tests (tests/core/test_differential.c) and the fuzz driver
 * (tests/fuzz/driver.c), so that both check the library against the same
 * independent arithmetic.
 *
 * The model knows nothing of slots or levels: it is written from the
 * contract in include/timewheel/core.h, in 128-bit arithmetic, and shares
 * no code with lib/. It answers when a deadline is due (its tick), which
 * tick an advance to a time reaches, where a tick begins, and whether
 * tw_create() must accept a configuration; it keeps its view of each timer
 * (struct model_state) and says what schedule, re-arm and cancel must
 * return. It needs no test framework, so
 * the libFuzzer build links it as it is.
 */
#ifndef TW_TEST_MODEL_H
#define TW_TEST_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timewheel/core.h"

/* a + b and a * b, saturating at UINT64_MAX: the tests' only copies. */
static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static inline uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* A config of mode: the given levels (slots NULL: the mode's default
 * layout) and tick, start 0. */
struct tw_config model_config(enum tw_mode mode, const uint32_t *slots,
                              unsigned levels, uint64_t tick_ns);

/* The fixed layouts that the differential tests and the fuzz driver (as
 * its layouts 0 to MODEL_LAYOUTS - 1) both drive: the clock layout, four
 * levels of 64, four of 4, odd counts at a 1 ns tick, Netty's 512 buckets,
 * and 5 buckets (rounded up to 8) of 7 ns. */
struct model_layout {
    const char *name;
    enum tw_mode mode;
    const uint32_t *slots; /* NULL: the mode's default layout */
    unsigned levels;
    uint64_t tick_ns;
};

#define MODEL_LAYOUTS 6
extern const struct model_layout model_layouts[MODEL_LAYOUTS];

/* The model's view of one timer: set by model_scheduled() and
 * model_cancelled(), cleared by the harness when the timer runs. */
struct model_state {
    bool pending;
    uint64_t deadline; /* as scheduled, saturated */
    uint64_t due;      /* its due tick (model_due()) */
    long sched_call;   /* the advance call that scheduled it, -1 if none */
};

/* What tw_schedule() (rearm false) or tw_rearm() must return for a timer
 * in state m: -EBUSY for a schedule of a pending timer, else 0, or 1 for a
 * re-arm of a pending one. */
int model_expect(const struct model_state *m, bool rearm);
/* Record an accepted schedule or re-arm to deadline, made during advance
 * call `call` (-1 outside one). Returns 1 if the timer was not pending
 * (the count of pending timers grows), else 0. */
size_t model_scheduled(struct model_state *m, const struct tw_config *cfg,
                       uint64_t deadline, long call);
/* Record a cancel. Returns what tw_cancel() must return: 1 if the timer was
 * pending (the count shrinks), else 0. */
int model_cancelled(struct model_state *m);

/* The due tick of deadline: the first tick boundary at or after it,
 * counted from the start (0 for a deadline at or before the start). */
uint64_t model_due(const struct tw_config *cfg, uint64_t deadline);
/* The tick an advance to now reaches; UINT64_MAX reaches every due tick. */
uint64_t model_target(const struct tw_config *cfg, uint64_t now);
/* The time tick begins at, saturating at UINT64_MAX. */
uint64_t model_boundary(const struct tw_config *cfg, uint64_t tick);

/*
 * Whether tw_create() must accept (1), must refuse (0) or may do either
 * (-1) cfg: a zero tick, a hierarchical level whose slots are wider than
 * 64-bit ns, a hashed tick x slots (rounded up to a power of two) beyond
 * INT64_MAX are refused. A slot width of exactly UINT64_MAX ns is at the
 * edge and may go either way. The slot counts themselves (2..4096 a
 * hierarchical level, 1..2^30 hashed, one hashed level) are the caller's to
 * keep in range: this answers for the arithmetic only.
 */
int model_config_valid(const struct tw_config *cfg);

#endif /* TW_TEST_MODEL_H */
