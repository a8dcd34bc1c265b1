/*
 * Building and replaying operation sequences. The replay loop is the only
 * code between the clock reads and the implementations, and it is the same
 * for all of them: one switch and one indirect call per operation.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"
#include "stop.h"

void ops_push(struct ops *s, enum op_kind kind, uint32_t idx, uint64_t time)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        struct op *op = realloc(s->op, cap * sizeof(*op));

        if (!op) {
            fprintf(stderr, "twbench: out of memory for %zu operations\n", cap);
            exit(1);
        }
        s->op = op;
        s->cap = cap;
    }
    s->op[s->n++] = (struct op){.time = time, .idx = idx, .kind = kind};
}

void ops_free(struct ops *s)
{
    free(s->op);
    *s = (struct ops){0};
}

uint64_t ops_run(const struct impl *im, void *ctx, const struct ops *s,
                 size_t from, size_t to)
{
    uint64_t fired = 0;
    unsigned until_check = STOP_EVERY;

    for (const struct op *o = s->op + from; o < s->op + to; o++) {
        if (--until_check == 0) {
            until_check = STOP_EVERY;
            if (stop_check((double)(o - s->op - from) / (double)(to - from)))
                break;
        }
        switch (o->kind) {
        case OP_SCHEDULE:
            im->schedule(ctx, o->idx, o->time);
            break;
        case OP_CANCEL:
            im->cancel(ctx, o->idx);
            break;
        case OP_REARM:
            im->rearm(ctx, o->idx, o->time);
            break;
        default:
            fired += im->advance(ctx, o->time, UINT64_MAX);
            break;
        }
    }
    return fired;
}
