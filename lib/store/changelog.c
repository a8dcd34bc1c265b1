/*
 * changelog.c: the change log, the leader's side of replication, and the
 * 'R' record (formats: repl.h; the contract: timewheel/store.h,
 * "Replication"; the design: docs/store.md, "Replication").
 *
 * LSNs. A batch's operations that took effect get the LSNs after the last
 * one, in the order they came, when the batch is resolved (commit.c); the
 * 'R' record with the new last LSN goes into the same synced write as the
 * entries, so the local disk never holds an entry without its LSN, and an
 * LSN is never handed out twice, crash or not. Only then are the entries
 * encoded into records of at most log_max_bytes and handed to cfg.log on
 * the worker, before the batch's done callbacks: a producer told "done"
 * under log_sync has its operation in the host's log.
 *
 * The watermark. Every watermark_ns the worker appends a record of one
 * entry, the fired-through watermark: a wall-clock time before which every
 * timer the leader holds has been handed out (the wheel's time less a tick,
 * no further than the window's end, and not moved while any due timer
 * waits: for the rate, or for the lease). It is also the heartbeat that
 * keeps an idle leader's lease alive, and it costs one synced write of 'R'.
 *
 * The lease. A replicated leader hands out a timer only while its lease
 * holds: lease_ns from the start of its last append the log confirmed
 * (log() returning 0 under log_sync; tw_store_renew() otherwise), read on
 * CLOCK_MONOTONIC, which runs on while the process is stopped. A leader
 * paused past a promotion thus wakes with its lease expired, and the log
 * refuses its next append (the host appends on the log's last sequence).
 * A promoted leader waits one lease_ns before its first delivery: the
 * deposed leader's last confirmed append was sent before the new epoch's,
 * so its lease has run out by then, and two leaders never deliver at once
 * (replicas must share lease_ns, and their monotonic clocks tick at one
 * rate, as those of one machine or of NTP-disciplined ones do).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "store.h"

#define ENTRY_LEN 17u             /* kind, deadline, seq */
#define TICK_NS UINT64_C(1000000) /* window.c's wheel tick */

uint64_t tw__fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

/* ---- the 'R' record ------------------------------------------------------ */

int tw__repl_read(struct tw_store *s, bool *found, bool *leader)
{
    unsigned char v[TW__REPL_LEN + 1];
    size_t vl = sizeof v;
    struct tw__repl_rec r;
    int rc = tw__db_get(s->db, tw__repl_key, TW__REPL_KEY_LEN, v, &vl);

    *found = rc == 1;
    if (rc <= 0)
        return rc;
    if (vl > sizeof v || tw__repl_decode(v, vl, &r) != 0)
        return -EBADMSG;
    s->repl.set = r.set;
    s->repl.epoch = r.epoch;
    s->repl.lsn = r.lsn;
    s->repl.watermark = r.watermark;
    *leader = r.leader;
    return 0;
}

/* At open, on the opener's thread: s->batch is free. */
static int write_r(struct tw_store *s, bool leader)
{
    unsigned char v[TW__REPL_LEN];
    int rc;

    tw__repl_put(s->repl.set, s->repl.epoch, s->repl.lsn, s->repl.watermark,
                 leader, v);
    tw__db_batch_clear(s->batch);
    tw__db_batch_put(s->batch, tw__repl_key, TW__REPL_KEY_LEN, v, sizeof v);
    rc = tw__db_write(s->db, s->batch);
    tw__db_batch_clear(s->batch);
    return rc;
}

static uint64_t new_set(void)
{
    uint64_t set = 0;

    while (set == 0)
        if (getrandom(&set, sizeof set, 0) != (ssize_t)sizeof set)
            set = tw__mono_ns() ^ tw__real_ns() << 17;
    return set;
}

static int settings(struct tw_store *s)
{
    struct tw__repl *r = &s->repl;
    const struct tw_store_config *c = &s->cfg;

    if (c->log_max_bytes && c->log_max_bytes < 4096)
        return -EINVAL;
    if (c->follower && c->log_sync && !c->log)
        return -EINVAL;
    r->lease_ns = c->lease_ns ? c->lease_ns
                  : c->log    ? TW_STORE_DEFAULT_LEASE_NS
                              : 0;
    r->watermark_ns =
        c->watermark_ns ? c->watermark_ns : TW_STORE_DEFAULT_WATERMARK_NS;
    r->max_bytes =
        c->log_max_bytes ? c->log_max_bytes : TW_STORE_DEFAULT_LOG_BYTES;
    /* The heartbeat must renew the lease before it runs out, with room
     * for one late append. */
    if (r->lease_ns && r->watermark_ns > r->lease_ns / 2)
        return -EINVAL;
    return 0;
}

/* Which role the directory allows, and the 'R' record of a new member. */
static int take_role(struct tw_store *s)
{
    struct tw__repl *r = &s->repl;
    bool found = false, leader = false;
    int rc = tw__repl_read(s, &found, &leader);

    if (rc != 0)
        return rc;
    if (found) {
        if (leader && s->cfg.follower)
            return -EEXIST; /* may hold entries the log never got */
        if (!leader && !s->cfg.follower)
            return -EPERM; /* a follower leads only by tw_store_promote() */
        r->on = true;
        atomic_store(&r->follower, !leader);
        return 0;
    }
    if (s->cfg.follower) {
        if (s->next_seq > 1)
            return -EEXIST; /* a store of its own */
        r->on = true;
        atomic_store(&r->follower, true);
        return write_r(s, false);
    }
    if (!s->cfg.log)
        return 0;
    r->on = true;
    r->set = new_set();
    r->epoch = 1;
    return write_r(s, true);
}

int tw__repl_open(struct tw_store *s)
{
    struct tw__repl *r = &s->repl;
    int rc = settings(s);

    if (rc != 0)
        return rc;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->apply_mu, NULL);
    r->init = true;
    rc = take_role(s);
    if (rc != 0 || !r->on)
        return rc;
    r->cap = r->max_bytes;
    r->buf = tw_alloc(r->cap);
    r->abatch = tw__db_batch_new();
    return r->buf && r->abatch ? 0 : -ENOMEM;
}

void tw__repl_close(struct tw_store *s)
{
    struct tw__repl *r = &s->repl;

    if (!r->init)
        return;
    if (r->buf)
        tw_free(r->buf, r->cap);
    tw__db_batch_free(r->abatch);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->apply_mu);
    r->init = false;
}

int tw__repl_refuse(const struct tw_store *s)
{
    return atomic_load(&s->repl.follower) ? -EPERM : 0;
}

/* ---- records ------------------------------------------------------------- */

size_t tw__log_put_entry(unsigned char *p, enum tw_store_log_kind kind,
                         struct tw_store_id id, const void *payload, size_t len)
{
    p[0] = (unsigned char)kind;
    tw__put_be64(p + 1, id.deadline_ns);
    tw__put_be64(p + 9, id.seq);
    if (kind != TW_STORE_LOG_SCHEDULE)
        return ENTRY_LEN;
    p[17] = (unsigned char)(len >> 8);
    p[18] = (unsigned char)len;
    if (len)
        memcpy(p + 19, payload, len);
    return ENTRY_LEN + 2 + len;
}

static void renew(struct tw__repl *r, uint64_t sent)
{
    uint64_t until = sent + r->lease_ns;
    uint64_t cur = atomic_load(&r->lease_until);

    while (cur < until &&
           !atomic_compare_exchange_weak(&r->lease_until, &cur, until))
        ;
}

int tw__log_hand(struct tw_store *s, size_t end, uint64_t first_lsn,
                 uint32_t count)
{
    struct tw__repl *r = &s->repl;
    unsigned char *h = r->buf;
    struct tw_store_log_rec rec;
    uint64_t sent;
    int rc;

    if (!s->cfg.log)
        return 0;
    memcpy(h, TW__LOG_MAGIC, 4);
    tw__put_be64(h + 4, r->set);
    tw__put_be64(h + 12, r->epoch);
    tw__put_be64(h + 20, first_lsn);
    put_be32(h + 28, count);
    tw__put_be64(h + 32,
                 tw__fnv(TW__FNV_INIT, h + TW__LOG_HDR, end - TW__LOG_HDR));
    rec = (struct tw_store_log_rec){
        r->set, r->epoch, first_lsn, first_lsn + count - 1, h, end};
    sent = tw__mono_ns();
    rc = s->cfg.log(s, &rec, s->cfg.log_arg);
    if (rc == 0 && s->cfg.log_sync)
        renew(r, sent);
    if (rc == -ESTALE) {
        pthread_mutex_lock(&r->mu);
        r->fenced = true;
        pthread_mutex_unlock(&r->mu);
    }
    return rc;
}

/* ---- the leader's batches ------------------------------------------------ */

void tw__repl_resolve(struct tw_store *s, const struct tw__op *ops, size_t n)
{
    struct tw__repl *r = &s->repl;
    unsigned char v[TW__REPL_LEN];
    uint64_t k = 0;

    r->batch_entries = 0;
    if (!r->on)
        return;
    for (size_t i = 0; i < n; i++)
        k += ops[i].err == 0;
    if (k == 0)
        return;
    r->batch_entries = k;
    tw__repl_put(r->set, r->epoch, r->lsn + k, r->watermark, true, v);
    tw__db_batch_put(s->batch, tw__repl_key, TW__REPL_KEY_LEN, v, sizeof v);
}

static enum tw_store_log_kind kind_of(const struct tw__op *op)
{
    return op->kind == TW__OP_SCHEDULE ? TW_STORE_LOG_SCHEDULE
           : op->kind == TW__OP_CANCEL ? TW_STORE_LOG_CANCEL
                                       : TW_STORE_LOG_ACK;
}

/* The batch's entries, in the order they came, in records of at most
 * max_bytes (one entry always fits: max_bytes >= 4096). */
static int hand_batch(struct tw_store *s, const struct tw__op *ops, size_t n)
{
    struct tw__repl *r = &s->repl;
    uint64_t first = r->lsn + 1;
    size_t off = TW__LOG_HDR;
    uint32_t count = 0;
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct tw__op *op = &ops[i];
        bool sched = op->kind == TW__OP_SCHEDULE;
        size_t len = sched ? op->e->len : 0;

        if (op->err != 0)
            continue;
        if (off + ENTRY_LEN + 2 + len > r->cap) {
            rc = tw__log_hand(s, off, first, count);
            first += count;
            off = TW__LOG_HDR;
            count = 0;
        }
        off += tw__log_put_entry(r->buf + off, kind_of(op), op->id,
                                 sched ? op->e->payload : NULL, len);
        count++;
    }
    if (rc == 0 && count)
        rc = tw__log_hand(s, off, first, count);
    return rc;
}

int tw__repl_commit(struct tw_store *s, const struct tw__op *ops, size_t n)
{
    struct tw__repl *r = &s->repl;
    int rc;

    if (!r->on || r->batch_entries == 0)
        return 0;
    rc = s->cfg.log ? hand_batch(s, ops, n) : 0;
    pthread_mutex_lock(&r->mu);
    r->lsn += r->batch_entries; /* on disk already, handed or not */
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* ---- the watermark, the lease, fencing ----------------------------------- */

/* Before it, every timer held has been handed out (see the top). */
static uint64_t fired_through(const struct tw_store *s)
{
    uint64_t w = s->repl.watermark, t = tw_now(s->wheel);

    if (s->due_head)
        return w;
    t = t > TICK_NS ? t - TICK_NS : 0;
    if (t > s->window_end.deadline_ns)
        t = s->window_end.deadline_ns;
    return t > w ? t : w;
}

/* One watermark entry: 'R' first (synced), then the log. */
static int heartbeat(struct tw_store *s)
{
    struct tw__repl *r = &s->repl;
    unsigned char v[TW__REPL_LEN];
    struct tw_store_id w = {fired_through(s), 0};
    uint64_t lsn = r->lsn + 1;
    size_t end;
    int rc;

    tw__repl_put(r->set, r->epoch, lsn, w.deadline_ns, true, v);
    tw__db_batch_clear(s->batch);
    tw__db_batch_put(s->batch, tw__repl_key, TW__REPL_KEY_LEN, v, sizeof v);
    rc = tw__db_write(s->db, s->batch);
    tw__db_batch_clear(s->batch);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&r->mu);
    r->lsn = lsn;
    r->watermark = w.deadline_ns;
    pthread_mutex_unlock(&r->mu);
    end = TW__LOG_HDR + tw__log_put_entry(r->buf + TW__LOG_HDR,
                                          TW_STORE_LOG_WATERMARK, w, NULL, 0);
    return tw__log_hand(s, end, lsn, 1);
}

/* Every operation not finished fails too: the worker commits none now. */
static void fail(struct tw_store *s, int rc)
{
    pthread_mutex_lock(&s->mu);
    if (!s->err) {
        s->err = rc;
        s->fail_at = s->finished;
    }
    pthread_mutex_unlock(&s->mu);
}

uint64_t tw__repl_step(struct tw_store *s)
{
    struct tw__repl *r = &s->repl;
    uint64_t wait = UINT64_MAX, now, step;

    if (atomic_load(&r->follower))
        return UINT64_MAX; /* delivers nothing; promotion wakes it */
    if (r->on && s->cfg.log) {
        now = tw__mono_ns();
        if (now - r->last_mark >= r->watermark_ns) {
            int rc = heartbeat(s);

            r->last_mark = now;
            if (rc != 0) {
                fail(s, rc);
                return UINT64_MAX;
            }
        }
        wait = r->last_mark + r->watermark_ns - now;
    }
    step = tw__window_step(s);
    return step < wait ? step : wait;
}

bool tw__repl_may_deliver(struct tw_store *s)
{
    const struct tw__repl *r = &s->repl;

    uint64_t now;

    if (!r->on || !r->lease_ns || !s->cfg.log)
        return true;
    now = tw__mono_ns();
    return now < atomic_load(&s->repl.lease_until) &&
           now >= atomic_load(&s->repl.deliver_from);
}

int tw_store_fence(struct tw_store *s)
{
    if (!s)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    if (s->repl.init) {
        pthread_mutex_lock(&s->repl.mu);
        s->repl.fenced = true;
        pthread_mutex_unlock(&s->repl.mu);
    }
    atomic_store(&s->repl.lease_until, 0);
    fail(s, -ESTALE);
    return 0;
}

int tw_store_renew(struct tw_store *s, uint64_t sent_mono_ns)
{
    if (!s)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    if (!s->repl.on || atomic_load(&s->repl.follower) || !s->cfg.log)
        return -EPERM;
    renew(&s->repl, sent_mono_ns);
    return 0;
}

int tw_store_replica_info(struct tw_store *s, struct tw_store_replica *out)
{
    struct tw__repl *r;

    if (!s || !out)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    r = &s->repl;
    memset(out, 0, sizeof *out);
    out->leader = !atomic_load(&r->follower);
    if (!r->init)
        return 0;
    pthread_mutex_lock(&r->mu);
    out->set = r->set;
    out->epoch = r->epoch;
    out->lsn = r->lsn;
    out->watermark_ns = r->watermark;
    out->fenced = r->fenced;
    pthread_mutex_unlock(&r->mu);
    return 0;
}

/* ---- decoding ------------------------------------------------------------ */

/* Walk the entries of p[0..len): -EBADMSG unless exactly count entries
 * fill it; each visited when fn is not NULL. */
static int walk(const unsigned char *p, size_t len, uint64_t lsn,
                uint32_t count, tw_store_log_visit_fn *fn, void *ctx)
{
    size_t off = 0;

    for (uint32_t i = 0; i < count; i++, lsn++) {
        struct tw_store_log_entry e = {.lsn = lsn};
        int rc;

        if (len - off < ENTRY_LEN || p[off] < TW_STORE_LOG_SCHEDULE ||
            p[off] > TW_STORE_LOG_EPOCH)
            return -EBADMSG;
        e.kind = (enum tw_store_log_kind)p[off];
        e.id.deadline_ns = tw__get_be64(p + off + 1);
        e.id.seq = tw__get_be64(p + off + 9);
        off += ENTRY_LEN;
        if (e.kind == TW_STORE_LOG_SCHEDULE) {
            if (len - off < 2)
                return -EBADMSG;
            e.len = (size_t)p[off] << 8 | p[off + 1];
            e.payload = p + off + 2;
            off += 2;
            if (e.len > TW_STORE_PAYLOAD_MAX || len - off < e.len)
                return -EBADMSG;
            off += e.len;
        }
        if (fn && (rc = fn(&e, ctx)) != 0)
            return rc;
    }
    return off == len ? 0 : -EBADMSG;
}

int tw__log_visit(const struct tw_store_log_rec *rec, tw_store_log_visit_fn *fn,
                  void *ctx)
{
    return walk((const unsigned char *)rec->data + TW__LOG_HDR,
                rec->len - TW__LOG_HDR, rec->first_lsn,
                (uint32_t)(rec->last_lsn - rec->first_lsn + 1), fn, ctx);
}

int tw_store_log_decode(const void *data, size_t len,
                        struct tw_store_log_rec *rec, tw_store_log_visit_fn *fn,
                        void *ctx)
{
    const unsigned char *p = data;
    struct tw_store_log_rec h;
    uint32_t count;
    int rc;

    if (!data || len == 0)
        return -EINVAL;
    if (len < TW__LOG_HDR || memcmp(p, TW__LOG_MAGIC, 4) != 0)
        return -EBADMSG;
    count = get_be32(p + 28);
    h = (struct tw_store_log_rec){tw__get_be64(p + 4),
                                  tw__get_be64(p + 12),
                                  tw__get_be64(p + 20),
                                  0,
                                  data,
                                  len};
    if (count == 0 || h.first_lsn == 0 || h.first_lsn + count < h.first_lsn ||
        tw__get_be64(p + 32) !=
            tw__fnv(TW__FNV_INIT, p + TW__LOG_HDR, len - TW__LOG_HDR))
        return -EBADMSG;
    h.last_lsn = h.first_lsn + count - 1;
    /* Whole before any visit: a damaged record is refused whole. */
    rc = walk(p + TW__LOG_HDR, len - TW__LOG_HDR, h.first_lsn, count, NULL,
              NULL);
    if (rc == 0 && fn)
        rc = walk(p + TW__LOG_HDR, len - TW__LOG_HDR, h.first_lsn, count, fn,
                  ctx);
    if (rc == 0 && rec)
        *rec = h;
    return rc;
}
