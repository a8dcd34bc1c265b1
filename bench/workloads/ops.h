/*
 * Operation sequences: what a workload asks of an implementation, written
 * down once before timing starts, then replayed identically on each one.
 */
#ifndef BENCH_OPS_H
#define BENCH_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "impl.h"

enum op_kind {
    OP_SCHEDULE, /* schedule timer idx at deadline time */
    OP_CANCEL,   /* cancel timer idx */
    OP_REARM,    /* move timer idx to deadline time */
    OP_ADVANCE,  /* advance to time, firing what is due */
};

struct op {
    uint64_t time;
    uint32_t idx;
    uint32_t kind;
};

struct ops {
    struct op *op;
    size_t n;
    size_t cap;
};

/* Append one operation; exits the program when memory runs out. */
void ops_push(struct ops *s, enum op_kind kind, uint32_t idx, uint64_t time);
void ops_free(struct ops *s);

/* Replay ops[from, to) on im; returns how many timers fired. Gives up
 * part-way once the cell's hard stop is hit (stop.h). */
uint64_t ops_run(const struct impl *im, void *ctx, const struct ops *s,
                 size_t from, size_t to);

#endif /* BENCH_OPS_H */
