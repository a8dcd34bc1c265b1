/*
 * follower.c: a store that follows a leader through the host's log, and
 * its promotion (the contract: timewheel/store.h, "Replication").
 *
 * Apply. A record's entries above the applied LSN go into one write batch
 * (sorted by key, as the leader sorts its batch, order kept for one key)
 * with the 'M' record (the sequence high-water mark, the count) and the 'R'
 * record (the new applied LSN), written atomically without a sync: the
 * log holds them, and after a crash the follower's applied LSN is that of
 * the last write that reached its disk, so the host reads the log from
 * there and the replay of what was applied changes nothing (entries at or
 * below the applied LSN are skipped, one by one). The follower holds no
 * window: a promotion loads it from disk as a restart does.
 *
 * The checks, in order: a leader refuses (-EPERM); a record of another set
 * (-EXDEV); a record wholly applied already is a no-op; one of an epoch
 * older than one applied is a deposed leader's (-ESTALE); one that starts
 * beyond the applied LSN + 1 leaves a gap (-ERANGE). Nothing is written
 * unless all pass.
 *
 * Promote. Under the apply lock (no apply runs): the epoch record goes to
 * cfg.log first (the host's conditional append decides the leadership),
 * then 'R' says leader, synced (which syncs every apply before it), then
 * the worker is woken to load the window from key zero and deliver.
 */
#include <errno.h>
#include <stdlib.h> /* qsort */
#include <string.h>

#include "store.h"

struct apply {
    struct tw__db_batch *b;
    uint64_t from; /* applied LSN: entries at or below it are skipped */
    uint64_t next_seq, count, epoch, mark;
    int64_t n;
    struct put_or_del *w; /* the puts and deletes, sorted below */
    size_t nw, cap;
};

/* A put or a delete of the record, in its order (idx), as commit.c sorts
 * a batch's writes: by key, then in order for one key, so that RocksDB's
 * memtable inserts each from the previous position. */
struct put_or_del {
    struct tw_store_id id;
    uint32_t idx;
    uint16_t len;
    bool del;
    const void *payload; /* in the record, valid through the apply */
};

static int write_cmp(const void *x, const void *y)
{
    const struct put_or_del *a = x, *b = y;
    int c = tw__id_cmp(a->id, b->id);

    return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

static void note(struct apply *a, const struct tw_store_log_entry *e, bool del)
{
    struct put_or_del *w = &a->w[a->nw];

    w->id = e->id;
    w->idx = (uint32_t)a->nw++;
    w->len = (uint16_t)e->len;
    w->del = del;
    w->payload = e->payload;
}

static void fill_batch(struct apply *a)
{
    unsigned char key[TW__KEY_LEN];

    qsort(a->w, a->nw, sizeof *a->w, write_cmp);
    for (size_t i = 0; i < a->nw; i++) {
        tw__key_encode(key, a->w[i].id);
        if (a->w[i].del)
            tw__db_batch_del(a->b, key, sizeof key);
        else
            tw__db_batch_put(a->b, key, sizeof key, a->w[i].payload,
                             a->w[i].len);
    }
}

static int apply_entry(const struct tw_store_log_entry *e, void *ctx)
{
    struct apply *a = ctx;

    if (e->lsn <= a->from)
        return 0;
    a->n++;
    switch (e->kind) {
    case TW_STORE_LOG_SCHEDULE:
        note(a, e, false);
        a->count++;
        if (e->id.seq >= a->next_seq)
            a->next_seq = e->id.seq + 1;
        break;
    case TW_STORE_LOG_CANCEL:
    case TW_STORE_LOG_ACK:
        note(a, e, true);
        a->count -= a->count > 0; /* the leader logs only removals made */
        break;
    case TW_STORE_LOG_WATERMARK:
        a->mark = e->id.deadline_ns > a->mark ? e->id.deadline_ns : a->mark;
        break;
    case TW_STORE_LOG_EPOCH:
        a->epoch = e->id.deadline_ns > a->epoch ? e->id.deadline_ns : a->epoch;
        break;
    }
    return 0;
}

/* 0: apply; 1: applied already; or why not. Under apply_mu. */
static int check(struct tw_store *s, const struct tw_store_log_rec *rec)
{
    struct tw__repl *r = &s->repl;
    int rc = 0;

    if (!r->on || !atomic_load(&r->follower))
        return -EPERM;
    pthread_mutex_lock(&r->mu);
    if (r->set && rec->set != r->set)
        rc = -EXDEV;
    else if (rec->last_lsn <= r->lsn)
        rc = 1;
    else if (rec->epoch < r->epoch)
        rc = -ESTALE;
    else if (rec->first_lsn > r->lsn + 1)
        rc = -ERANGE;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* The 'M' and 'R' records of the state a shows, into its batch. */
static void put_marks(const struct apply *a, const struct tw_store_log_rec *rec)
{
    unsigned char m[TW__MARK_LEN], v[TW__REPL_LEN];

    tw__mark_encode(m, a->next_seq, a->count);
    tw__db_batch_put(a->b, tw__mark_key, TW__MARK_KEY_LEN, m, sizeof m);
    tw__repl_put(rec->set, a->epoch, rec->last_lsn, a->mark, false, v);
    tw__db_batch_put(a->b, tw__repl_key, TW__REPL_KEY_LEN, v, sizeof v);
}

static int64_t apply_record(struct tw_store *s,
                            const struct tw_store_log_rec *rec)
{
    struct tw__repl *r = &s->repl;
    struct apply a = {.b = r->abatch};
    int rc;

    pthread_mutex_lock(&s->mu);
    a.next_seq = s->next_seq;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&r->mu);
    a.from = r->lsn;
    a.epoch = rec->epoch > r->epoch ? rec->epoch : r->epoch;
    a.mark = r->watermark;
    pthread_mutex_unlock(&r->mu);
    a.count = atomic_load(&s->count);
    /* At most one write per entry: room for the record's count. */
    a.cap = (size_t)(rec->last_lsn - rec->first_lsn + 1);
    a.w = tw_alloc(a.cap * sizeof *a.w);
    if (!a.w)
        return -ENOMEM;
    tw__db_batch_clear(a.b);
    tw__log_visit(rec, apply_entry, &a); /* checked by tw_store_apply() */
    fill_batch(&a);
    tw_free(a.w, a.cap * sizeof *a.w);
    put_marks(&a, rec);
    rc = tw__db_write_nosync(s->db, a.b);
    tw__db_batch_clear(a.b);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&r->mu);
    r->set = rec->set;
    r->epoch = a.epoch;
    r->lsn = rec->last_lsn;
    r->watermark = a.mark;
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_lock(&s->mu);
    s->next_seq = a.next_seq;
    pthread_mutex_unlock(&s->mu);
    atomic_store(&s->count, a.count);
    return a.n;
}

int64_t tw_store_apply(struct tw_store *s, const void *data, size_t len)
{
    struct tw_store_log_rec rec;
    int64_t rc;

    if (!s || !data)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    rc = tw_store_log_decode(data, len, &rec, NULL, NULL);
    if (rc != 0)
        return rc;
    if (!s->repl.init)
        return -EPERM;
    pthread_mutex_lock(&s->repl.apply_mu);
    rc = check(s, &rec);
    if (rc == 0)
        rc = apply_record(s, &rec);
    else if (rc == 1)
        rc = 0;
    pthread_mutex_unlock(&s->repl.apply_mu);
    return rc;
}

/* The epoch record to cfg.log, then 'R' as leader, synced. Under
 * apply_mu; r's set and epoch already the new leader's. */
static int take_lead(struct tw_store *s, uint64_t lsn)
{
    struct tw__repl *r = &s->repl;
    struct tw_store_id e = {r->epoch, 0};
    unsigned char v[TW__REPL_LEN];
    size_t end =
        TW__LOG_HDR +
        tw__log_put_entry(r->buf + TW__LOG_HDR, TW_STORE_LOG_EPOCH, e, NULL, 0);
    int rc = tw__log_hand(s, end, lsn, 1);

    if (rc != 0)
        return rc;
    tw__repl_put(r->set, r->epoch, lsn, r->watermark, true, v);
    tw__db_batch_clear(r->abatch);
    tw__db_batch_put(r->abatch, tw__repl_key, TW__REPL_KEY_LEN, v, sizeof v);
    rc = tw__db_write(s->db, r->abatch);
    tw__db_batch_clear(r->abatch);
    return rc;
}

static int promote(struct tw_store *s, uint64_t epoch)
{
    struct tw__repl *r = &s->repl;
    uint64_t old_epoch, old_set, lsn;
    int rc;

    if (!r->on || !atomic_load(&r->follower))
        return -EPERM;
    pthread_mutex_lock(&r->mu);
    old_epoch = r->epoch;
    old_set = r->set;
    lsn = r->lsn + 1;
    epoch = epoch ? epoch : old_epoch + 1;
    if (epoch > old_epoch) {
        r->epoch = epoch;
        r->set = old_set ? old_set : (tw__mono_ns() ^ tw__real_ns()) | 1;
    }
    pthread_mutex_unlock(&r->mu);
    if (epoch <= old_epoch)
        return -ESTALE;
    rc = take_lead(s, lsn);
    pthread_mutex_lock(&r->mu);
    if (rc == 0)
        r->lsn = lsn;
    else {
        r->epoch = old_epoch;
        r->set = old_set;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int tw_store_promote(struct tw_store *s, uint64_t epoch)
{
    int rc;

    if (!s)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    if (!s->repl.init)
        return -EPERM;
    pthread_mutex_lock(&s->repl.apply_mu);
    rc = promote(s, epoch);
    if (rc == 0) {
        s->repl.last_mark = tw__mono_ns(); /* the epoch is a heartbeat */
        atomic_store(&s->repl.deliver_from,
                     s->repl.last_mark + s->repl.lease_ns);
        pthread_mutex_lock(&s->mu);
        atomic_store(&s->repl.follower, false);
        pthread_cond_signal(&s->work_cv);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&s->repl.apply_mu);
    return rc;
}
