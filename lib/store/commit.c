/*
 * commit.c: group commit, on the worker. A batch of operations becomes one
 * RocksDB write batch, written and synced once; only then does memory
 * change and do the done callbacks run, so nothing is delivered, and no
 * producer told "durable", before the disk has it.
 *
 * In three passes over the batch, in the order the operations came:
 *  1. resolve: a schedule enters the table as NEW (so that a cancel later
 *     in the same batch finds it); a cancel or ack finds its target in the
 *     table (marking it dead) or, beyond the window, on disk; each notes
 *     its put or delete. The notes are sorted by key (operations on one key
 *     keep their order) and go into the write batch in that order: RocksDB
 *     inserts a sorted run into its memtable's skip list from the previous
 *     insert's position, where random keys cost a search from the top each
 *     (two thirds of a schedule's CPU, by perf, before). The sequence
 *     high-water mark goes in too, so ids are never reused after a
 *     restart, and the number of timers held, so that tw_store_count() is
 *     exact after a restart without a scan.
 *  2. write and sync.
 *  3. apply (on success: dead targets leave, then NEW timers inside the
 *     window are armed in key order, so that those already overdue reach
 *     the due queue oldest first, and the others leave memory) or undo (on
 *     failure: NEW timers leave memory, targets live again), then the done
 *     callbacks.
 */
#include <errno.h>
#include <stdlib.h>

#include "store.h"

static void note(struct tw_store *s, const struct tw__op *op, bool del)
{
    struct tw__write *w = &s->writes[s->nwrites];

    if (del)
        s->batch_count--;
    w->id = op->id;
    w->idx = (uint32_t)(op - s->wq);
    w->del = del;
    s->nwrites++;
}

static int write_cmp(const void *a, const void *b)
{
    const struct tw__write *x = a, *y = b;
    int c = tw__id_cmp(x->id, y->id);

    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The notes, sorted, into the write batch. */
static void fill_batch(struct tw_store *s)
{
    unsigned char key[TW__KEY_LEN];

    qsort(s->writes, s->nwrites, sizeof *s->writes, write_cmp);
    for (size_t i = 0; i < s->nwrites; i++) {
        const struct tw__write *w = &s->writes[i];
        const struct tw__entry *e = s->wq[w->idx].e;

        tw__key_encode(key, w->id);
        if (w->del)
            tw__db_batch_del(s->batch, key, sizeof key);
        else
            tw__db_batch_put(s->batch, key, sizeof key, e->payload, e->len);
    }
}

/* A schedule's turn in pass 1. */
static void resolve_schedule(struct tw_store *s, struct tw__op *op)
{
    op->e->state = TW__NEW;
    tw__table_insert(&s->table, op->e); /* room: sized for a batch more */
    note(s, op, false);
    s->batch_count++;
}

/* A target beyond the window: on disk or nowhere. Only a delivered timer
 * can be acked, and none beyond the window has been. */
static int resolve_on_disk(struct tw_store *s, struct tw__op *op,
                           const unsigned char *key)
{
    unsigned char v[TW_STORE_PAYLOAD_MAX];
    size_t vl = sizeof v;
    int rc;

    if (tw__id_cmp(op->id, s->window_end) < 0)
        return -ENOENT; /* the window holds all of its range */
    rc = tw__db_get(s->db, key, TW__KEY_LEN, v, &vl);
    if (rc <= 0)
        return rc == 0 ? -ENOENT : rc;
    if (op->kind == TW__OP_ACK)
        return -EAGAIN;
    note(s, op, true);
    /* A dead placeholder in the table, so that a second cancel in this
     * batch answers -ENOENT; it leaves in pass 3. */
    op->e = tw__entry_new(op->id, NULL, 0);
    if (op->e) {
        op->e->state = TW__NEW;
        op->e->dead = true;
        tw__table_insert(&s->table, op->e);
    }
    return 0;
}

static void resolve_removal(struct tw_store *s, struct tw__op *op)
{
    struct tw__entry *e = tw__table_find(&s->table, op->id);
    unsigned char key[TW__KEY_LEN];

    tw__key_encode(key, op->id);
    op->e = NULL;
    if (!e) {
        op->err = resolve_on_disk(s, op, key);
        return;
    }
    if (e->dead) {
        op->err = -ENOENT;
    } else if (op->kind == TW__OP_ACK && e->state != TW__DELIVERED) {
        op->err = -EAGAIN;
    } else {
        e->dead = true;
        note(s, op, true);
        op->err = 0;
        if (e->state != TW__NEW)
            op->e = e; /* a NEW one leaves with its schedule, pass 3 */
    }
}

static void resolve(struct tw_store *s, struct tw__op *ops, size_t n,
                    uint64_t next_seq)
{
    unsigned char mark[TW__MARK_LEN];

    tw__db_batch_clear(s->batch);
    s->nwrites = 0;
    s->batch_count = atomic_load_explicit(&s->count, memory_order_relaxed);
    for (size_t i = 0; i < n; i++) {
        ops[i].err = 0;
        if (ops[i].kind == TW__OP_SCHEDULE)
            resolve_schedule(s, &ops[i]);
        else
            resolve_removal(s, &ops[i]);
    }
    fill_batch(s);
    tw__mark_encode(mark, next_seq, s->batch_count);
    tw__db_batch_put(s->batch, tw__mark_key, TW__MARK_KEY_LEN, mark,
                     sizeof mark);
    tw__repl_resolve(s, ops, n); /* replication: LSNs and 'R' */
}

/* Pass 3 for a durable schedule. */
static void apply_schedule(struct tw_store *s, struct tw__op *op, uint64_t now)
{
    struct tw__entry *e = op->e;
    bool inside = tw__id_cmp(e->id, s->window_end) < 0, dead = e->dead;

    if (dead || !inside || s->loaded >= s->cfg.window_max) {
        /* A timer inside a full window shrinks the window to it, so that
         * the invariant holds: the loader reads it again later. */
        if (!dead && inside)
            s->window_end = e->id;
        tw__table_remove(&s->table, e);
        tw__entry_free(e);
    } else {
        s->loaded++;
        tw__window_arm(s, e, now);
    }
    op->e = NULL;
}

/* Removals first, in the order they came (each has its own target), so
 * that the room they free is there for the schedules. Then the schedules
 * in key order, the order of the sorted notes (one put each): those
 * already overdue go to the due queue in the order they are armed, and
 * armed in the order they came they would go out a later deadline before
 * an earlier one (a batch whose sync outlasted its deadlines). */
static void apply(struct tw_store *s, struct tw__op *ops, size_t n)
{
    uint64_t now = tw__real_ns();

    for (size_t i = 0; i < n; i++) {
        struct tw__op *op = &ops[i];

        if (op->kind != TW__OP_SCHEDULE && op->err == 0 && op->e) {
            tw__table_remove(&s->table, op->e);
            if (op->e->state == TW__NEW)
                tw__entry_free(op->e); /* a placeholder */
            else
                tw__window_drop(s, op->e);
        }
    }
    for (size_t i = 0; i < s->nwrites; i++)
        if (!s->writes[i].del)
            apply_schedule(s, &s->wq[s->writes[i].idx], now);
}

static void undo(struct tw_store *s, struct tw__op *ops, size_t n, int rc)
{
    for (size_t i = 0; i < n; i++) {
        struct tw__op *op = &ops[i];

        if (op->kind == TW__OP_SCHEDULE) {
            tw__table_remove(&s->table, op->e);
            tw__entry_free(op->e);
            op->e = NULL;
        } else if (op->e && op->e->state == TW__NEW) {
            tw__table_remove(&s->table, op->e); /* a placeholder */
            tw__entry_free(op->e);
            op->e = NULL;
        } else if (op->e) {
            op->e->dead = false;
        }
        op->err = rc;
    }
}

/* A batch's write and sync for tw_store_metrics() (the worker's). */
static void count_commit(struct tw_store *s, size_t n, int rc, uint64_t ns)
{
    struct tw__stats *st = &s->stats;

    if (rc != 0) {
        tw__stat_add(&st->sync_failures, 1);
        return;
    }
    tw__stat_add(&st->commits, 1);
    tw__stat_add(&st->committed_ops, (int64_t)n);
    tw__stat_set(&st->last_batch_ops, n);
    tw__stat_add(&st->commit_ns, (int64_t)ns);
    tw__stat_set(&st->last_commit_ns, ns);
    if (ns > atomic_load_explicit(&st->max_commit_ns, memory_order_relaxed))
        tw__stat_set(&st->max_commit_ns, ns);
}

int tw__commit(struct tw_store *s, struct tw__op *ops, size_t n)
{
    uint64_t next_seq;
    int rc;

    pthread_mutex_lock(&s->mu);
    next_seq = s->next_seq;
    rc = s->err;
    pthread_mutex_unlock(&s->mu);
    if (rc == 0) {
        uint64_t t0;

        resolve(s, ops, n, next_seq);
        t0 = tw__mono_ns();
        rc = tw__db_write(s->db, s->batch);
        count_commit(s, n, rc, tw__mono_ns() - t0);
        if (rc == 0)
            rc = tw__repl_commit(s, ops, n); /* replication: to cfg.log */
        if (rc == 0) {
            tw__witness_note(&s->witness, next_seq);
            atomic_store_explicit(&s->count, s->batch_count,
                                  memory_order_relaxed);
            apply(s, ops, n);
            tw__stat_set(&s->stats.in_memory, s->loaded);
        } else
            undo(s, ops, n, rc);
    } else {
        undo(s, ops, n, rc);
    }
    for (size_t i = 0; i < n; i++)
        if (ops[i].done)
            ops[i].done(ops[i].id, ops[i].err, ops[i].arg);
    return rc;
}
