/*
 * ops.c: the operation queue, fed by any thread, drained by the worker.
 * One mutex guards it: an operation is a few stores under the lock, and
 * the worker takes up to commit_ops of them at once, so the lock is held
 * briefly on both sides. A producer wakes the worker when the queue's
 * first operation arrives (to start the batch's clock) and when the queue
 * reaches commit_ops (to close the batch early). Beyond queue_max a
 * producer waits for room; the worker (a callback acking) never waits, so
 * a callback cannot deadlock the store.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "sat.h"
#include "store.h"

/* Room for n more operations in the queue; under s->mu. */
int tw__ops_reserve(struct tw_store *s, size_t n)
{
    size_t cap = s->qcap ? s->qcap : 64;
    struct tw__op *q;

    if (s->qlen + n <= s->qcap)
        return 0;
    while (cap < s->qlen + n)
        cap *= 2;
    q = tw_alloc(cap * sizeof *q);
    if (!q)
        return -ENOMEM;
    if (s->q) {
        memcpy(q, s->q, s->qlen * sizeof *q);
        tw_free(s->q, s->qcap * sizeof *q);
    }
    s->q = q;
    s->qcap = cap;
    return 0;
}

/* Wait for room (not on the worker), then check the store can take it. */
static int admit(struct tw_store *s)
{
    bool worker = tw__on_worker(s);

    while (!worker && !s->closing && !s->err && s->qlen >= s->cfg.queue_max)
        pthread_cond_wait(&s->space_cv, &s->mu);
    if (s->closing)
        return -ESHUTDOWN;
    if (s->err)
        return s->err;
    if (tw__repl_refuse(s)) /* replication: a follower takes none */
        return tw__repl_refuse(s);
    return tw__ops_reserve(s, 1);
}

/* Queue op (its id already set, for a schedule under the lock); 0 or why
 * it was refused. */
static int submit(struct tw_store *s, struct tw__op *op, bool new_id)
{
    int rc;

    pthread_mutex_lock(&s->mu);
    rc = admit(s);
    if (rc == 0) {
        if (new_id) {
            op->id.seq = s->next_seq++;
            op->e->id = op->id;
        }
        if (s->qlen == 0)
            s->q_first_ns = tw__mono_ns();
        s->q[s->qlen++] = *op;
        s->accepted++;
        tw__stat_set(&s->stats.accepted, s->accepted);
        if (s->qlen == 1 || s->qlen == s->cfg.commit_ops)
            pthread_cond_signal(&s->work_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int tw_store_schedule_at(struct tw_store *s, uint64_t deadline_ns,
                         const void *payload, size_t len,
                         tw_store_done_fn *done, void *arg,
                         struct tw_store_id *id)
{
    struct tw__op op = {.kind = TW__OP_SCHEDULE, .done = done, .arg = arg};
    int rc;

    if (!s || (!payload && len) || len > TW_STORE_PAYLOAD_MAX)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    op.id.deadline_ns = deadline_ns;
    op.e = tw__entry_new(op.id, payload, len);
    if (!op.e)
        return -ENOMEM;
    /* The sequence number is taken under the lock, in submit(). */
    rc = submit(s, &op, true);
    if (rc != 0) {
        tw__entry_free(op.e);
        return rc;
    }
    if (id)
        *id = op.id;
    return 0;
}

int tw_store_schedule_after(struct tw_store *s, uint64_t delay_ns,
                            const void *payload, size_t len,
                            tw_store_done_fn *done, void *arg,
                            struct tw_store_id *id)
{
    uint64_t now = tw__real_ns();
    uint64_t at = tw__add_sat(now, delay_ns);

    return tw_store_schedule_at(s, at, payload, len, done, arg, id);
}

static int removal(struct tw_store *s, uint8_t kind, struct tw_store_id id,
                   tw_store_done_fn *done, void *arg)
{
    struct tw__op op = {.kind = kind, .id = id, .done = done, .arg = arg};

    if (!s)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    return submit(s, &op, false);
}

int tw_store_cancel(struct tw_store *s, struct tw_store_id id,
                    tw_store_done_fn *done, void *arg)
{
    return removal(s, TW__OP_CANCEL, id, done, arg);
}

int tw_store_ack(struct tw_store *s, struct tw_store_id id,
                 tw_store_done_fn *done, void *arg)
{
    return removal(s, TW__OP_ACK, id, done, arg);
}

int tw_store_sync(struct tw_store *s)
{
    uint64_t upto;
    int rc = 0;

    if (!s)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    if (tw__on_worker(s))
        return -EDEADLK;
    pthread_mutex_lock(&s->mu);
    upto = s->accepted;
    if (upto > s->flush_upto) {
        s->flush_upto = upto;
        pthread_cond_signal(&s->work_cv);
    }
    while (s->finished < upto)
        pthread_cond_wait(&s->done_cv, &s->mu);
    if (s->err && s->fail_at < upto)
        rc = s->err;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int tw_store_schedule_durable(struct tw_store *s, uint64_t deadline_ns,
                              const void *payload, size_t len,
                              struct tw_store_id *id)
{
    int rc;

    if (s && tw__forked(s))
        return -ECHILD;
    if (s && tw__on_worker(s))
        return -EDEADLK;
    rc = tw_store_schedule_at(s, deadline_ns, payload, len, NULL, NULL, id);
    return rc ? rc : tw_store_sync(s);
}

uint64_t tw_store_count(const struct tw_store *s)
{
    return s ? atomic_load_explicit(&s->count, memory_order_relaxed) : 0;
}
