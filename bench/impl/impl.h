/*
 * The table of operations every implementation under test offers.
 *
 * Each workload drives every implementation through these calls only, with
 * one operation sequence generated before timing starts, so that every
 * implementation does exactly the same work. A new one is a file
 * impl_X.c defining `const struct impl impl_X` and a line in impls.c. A timer
 * is named by its index in an array that the implementation allocates in
 * create() (the workloads never see the node type), and times are virtual
 * nanoseconds counted from 0, the time of create(). Every callback only counts
 * itself, so the figures are the cost of the timer structure and nothing else.
 */
#ifndef BENCH_IMPL_H
#define BENCH_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The tick of every implementation: 1 ms, the wheels' default. */
#define BENCH_TICK_NS UINT64_C(1000000)

struct impl {
    const char *name;  /* as in results.csv */
    const char *about; /* one line for the report */
    size_t node_size;  /* bytes of one timer node */
    /* advance() honours max_run; when false one call fires everything due. */
    bool bounded;
    /* n timers 0..n-1, none pending, at virtual time 0; or NULL with the
     * reason written to why. */
    void *(*create)(uint32_t n, char *why, size_t len);
    void (*destroy)(void *ctx);
    /* Timer i (not pending) fires at the first tick at or after deadline. */
    void (*schedule)(void *ctx, uint32_t i, uint64_t deadline);
    /* Timer i stops being pending; a no-op when it is not. */
    void (*cancel)(void *ctx, uint32_t i);
    /* Timer i moves to deadline, pending or not. */
    void (*rearm)(void *ctx, uint32_t i, uint64_t deadline);
    /* Time moves to now (never back); due timers fire, at most max_run of
     * them when bounded. Returns how many fired. */
    uint64_t (*advance)(void *ctx, uint64_t now, uint64_t max_run);
    /* When advance() must next be called (UINT64_MAX: nothing pending).
     * NULL when the implementation has no way to tell. */
    uint64_t (*next_deadline)(void *ctx);
    /* An advance to now that also bounds the structure's own work to
     * `work` units, firing at most max_run; *more is set when work is left
     * at now (call again). NULL when the implementation has none (the
     * wheels: tw_advance_sliced()). */
    uint64_t (*advance_sliced)(void *ctx, uint64_t now, uint64_t max_run,
                               uint64_t work, bool *more);
    /* The version of the code measured, for the report's machine table
     * ("1.44.2 (Debian)"), read from the library actually linked; NULL for
     * code of this repository (the timewheel row covers the wheels). */
    const char *(*version)(void);
    /* Run by the workloads at 10^7 and 10^8 timers (scale, stall), which
     * take minutes a cell: the wheels and one heap of each kind. */
    bool scale;
};

/* Every implementation, in the order of the tables. */
extern const struct impl *const bench_impls[];
extern const unsigned bench_nimpls;

/* The implementation called name, or NULL. */
const struct impl *impl_find(const char *name);

/* The due tick of a deadline, as the wheels count it. */
static inline uint64_t due_tick(uint64_t deadline)
{
    return deadline / BENCH_TICK_NS + (deadline % BENCH_TICK_NS != 0);
}

#endif /* BENCH_IMPL_H */
