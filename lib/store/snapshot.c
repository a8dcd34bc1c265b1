/*
 * snapshot.c: a new replica from a snapshot (the contract:
 * timewheel/store.h, tw_store_snapshot(), tw_store_restore()).
 *
 * A snapshot is read through one database iterator, which sees the
 * database at one instant: the 'M' and 'R' records (they sort before the
 * timers) and every timer in key order, that is deadline order, all of
 * one LSN, since every batch writes its entries and its 'R' atomically.
 * So a store keeps working while its snapshot is taken.
 *
 * The stream (its own format, not the database's: key.h is that), big-endian:
 *   header  "TWS1" set(8) epoch(8) lsn(8) watermark(8) next_seq(8)
 *           count(8)
 *   timer   len(2) deadline(8) seq(8) payload(len)      (len <= 1024)
 *   end     0xffff timers(8) sum(8)
 * sum is FNV-1a over every byte before it, so a damaged or truncated
 * snapshot is refused (-EBADMSG) and leaves nothing that opens.
 *
 * A restore reads the header before it touches the directory, so a
 * snapshot of another set (-EXDEV) or none at all (-EBADMSG) leaves dir as
 * it was. The timers go in unsynced batches; 'M' and 'R' go last, in a
 * synced write: a restore cut short leaves a database without 'M', which
 * tw_store_open() refuses (-EBADMSG) rather than open half a replica.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

#define MAGIC "TWS1"
#define HDR_LEN (4 + 6 * 8)
#define END_MARK 0xffffu
#define OUT_BYTES (64u << 10)
#define RESTORE_BATCH 4096 /* timers per unsynced write */

struct out {
    tw_store_write_fn *fn;
    void *ctx;
    unsigned char buf[OUT_BYTES];
    size_t len;
    uint64_t sum;
    int rc;
};

static void emit(struct out *o, const void *p, size_t n)
{
    o->sum = tw__fnv(o->sum, p, n);
    if (o->rc == 0 && o->len + n > sizeof o->buf) {
        o->rc = o->fn(o->buf, o->len, o->ctx);
        o->len = 0;
    }
    if (o->rc == 0) {
        memcpy(o->buf + o->len, p, n);
        o->len += n;
    }
}

/* The header: 'M' and 'R' come before the timers in the iterator (key.h),
 * which is left on the first timer. */
static int emit_header(struct out *o, struct tw__db_iter *it)
{
    unsigned char h[HDR_LEN] = {0};
    struct tw__repl_rec r = {0};
    uint64_t next_seq = 1, count = 0;
    struct tw_store_id id;
    int rc = 0;

    memcpy(h, MAGIC, 4);
    for (; rc == 0 && tw__db_iter_valid(it); tw__db_iter_next(it)) {
        size_t kl, vl;
        const unsigned char *k = tw__db_iter_key(it, &kl);
        const unsigned char *v = tw__db_iter_value(it, &vl);

        if (kl == TW__MARK_KEY_LEN && !memcmp(k, tw__mark_key, kl))
            rc = tw__mark_decode(v, vl, &next_seq, &count);
        else if (kl == TW__REPL_KEY_LEN && !memcmp(k, tw__repl_key, kl))
            rc = tw__repl_decode(v, vl, &r);
        else if (tw__key_decode(k, kl, &id) != 0)
            break; /* a timer (or damage, which the loop reports) */
    }
    tw__put_be64(h + 4, r.set);
    tw__put_be64(h + 12, r.epoch);
    tw__put_be64(h + 20, r.lsn);
    tw__put_be64(h + 28, r.watermark);
    tw__put_be64(h + 36, next_seq);
    tw__put_be64(h + 44, count);
    emit(o, h, sizeof h);
    return rc;
}

/* Every timer from the iterator's place, in key order; their number. */
static int emit_timers(struct out *o, struct tw__db_iter *it, uint64_t *n)
{
    for (; o->rc == 0 && tw__db_iter_valid(it); tw__db_iter_next(it)) {
        size_t kl, vl;
        const void *k = tw__db_iter_key(it, &kl);
        const void *v = tw__db_iter_value(it, &vl);
        unsigned char rec[18];
        struct tw_store_id id;
        int rc = tw__key_decode(k, kl, &id);

        if (rc <= 0)
            return rc; /* past the timers, or damage */
        if (vl > TW_STORE_PAYLOAD_MAX)
            return -EBADMSG;
        rec[0] = (unsigned char)(vl >> 8);
        rec[1] = (unsigned char)vl;
        tw__put_be64(rec + 2, id.deadline_ns);
        tw__put_be64(rec + 10, id.seq);
        emit(o, rec, sizeof rec);
        emit(o, v, vl);
        (*n)++;
    }
    return 0;
}

int tw_store_snapshot(struct tw_store *s, tw_store_write_fn *fn, void *ctx,
                      uint64_t *lsn)
{
    struct out *o;
    struct tw__db_iter *it;
    unsigned char end[18];
    uint64_t n = 0;
    int rc;

    if (!s || !fn)
        return -EINVAL;
    if (tw__forked(s))
        return -ECHILD;
    o = tw__zalloc(sizeof *o);
    it = o ? tw__db_iter_new(s->db, "", 0) : NULL;
    if (!it) {
        if (o)
            tw_free(o, sizeof *o);
        return -ENOMEM;
    }
    o->fn = fn;
    o->ctx = ctx;
    o->sum = TW__FNV_INIT;
    rc = emit_header(o, it);
    if (lsn)
        *lsn = tw__get_be64(o->buf + 20);
    if (rc == 0)
        rc = emit_timers(o, it, &n);
    rc = rc ? rc : o->rc ? o->rc : tw__db_iter_error(it);
    end[0] = end[1] = 0xff;
    tw__put_be64(end + 2, n);
    tw__put_be64(end + 10, o->sum);
    if (rc == 0)
        emit(o, end, sizeof end);
    rc = rc ? rc : o->rc;
    if (rc == 0 && o->len)
        rc = fn(o->buf, o->len, ctx);
    tw__db_iter_free(it);
    tw_free(o, sizeof *o);
    return rc;
}

/* ---- restore ------------------------------------------------------------- */

struct in {
    tw_store_read_fn *fn;
    void *ctx;
    uint64_t sum;
};

/* Exactly n bytes, or -EBADMSG at an early end. */
static int take(struct in *in, void *p, size_t n, bool sum)
{
    unsigned char *b = p;
    size_t got = 0;

    while (got < n) {
        long r = in->fn(b + got, n - got, in->ctx);

        if (r < 0)
            return (int)r;
        if (r == 0 || (size_t)r > n - got)
            return -EBADMSG;
        got += (size_t)r;
    }
    if (sum)
        in->sum = tw__fnv(in->sum, p, n);
    return 0;
}

struct restore {
    struct in in;
    struct tw__db *db;
    struct tw__db_batch *b;
    unsigned char h[HDR_LEN];
    uint64_t n;
};

static int restore_timers(struct restore *r)
{
    unsigned char rec[2 + 16 + TW_STORE_PAYLOAD_MAX], key[TW__KEY_LEN];
    unsigned char end[16], mark[TW__MARK_LEN];
    int rc;

    for (;;) {
        size_t len;

        if ((rc = take(&r->in, rec, 2, false)) != 0)
            return rc;
        len = (size_t)rec[0] << 8 | rec[1];
        if (len == END_MARK)
            break;
        r->in.sum = tw__fnv(r->in.sum, rec, 2);
        if (len > TW_STORE_PAYLOAD_MAX)
            return -EBADMSG;
        if ((rc = take(&r->in, rec + 2, 16 + len, true)) != 0)
            return rc;
        tw__key_encode(key, (struct tw_store_id){tw__get_be64(rec + 2),
                                                 tw__get_be64(rec + 10)});
        tw__db_batch_put(r->b, key, sizeof key, rec + 18, len);
        if (++r->n % RESTORE_BATCH == 0) {
            if ((rc = tw__db_write_nosync(r->db, r->b)) != 0)
                return rc;
            tw__db_batch_clear(r->b);
        }
    }
    if ((rc = take(&r->in, end, sizeof end, false)) != 0)
        return rc;
    if (tw__get_be64(end) != r->n || tw__get_be64(end + 8) != r->in.sum)
        return -EBADMSG;
    tw__mark_encode(mark, tw__get_be64(r->h + 36), tw__get_be64(r->h + 44));
    tw__db_batch_put(r->b, tw__mark_key, TW__MARK_KEY_LEN, mark, sizeof mark);
    return 0;
}

static int restore_into(struct restore *r, const char *dir)
{
    unsigned char v[TW__REPL_LEN];
    char *path;
    bool create = false;
    int rc, lockfd = -1;

    rc = tw__dir_open(dir, &lockfd, &create);
    if (rc != 0)
        return rc;
    path = tw__dir_db_path(dir);
    rc = !path ? -ENOMEM : !create ? -EEXIST : tw__db_open(path, true, &r->db);
    tw__strfree(path);
    if (rc == 0 && !(r->b = tw__db_batch_new()))
        rc = -ENOMEM;
    if (rc == 0)
        rc = restore_timers(r);
    if (rc == 0) {
        tw__repl_put(tw__get_be64(r->h + 4), tw__get_be64(r->h + 12),
                     tw__get_be64(r->h + 20), tw__get_be64(r->h + 28), false,
                     v);
        tw__db_batch_put(r->b, tw__repl_key, TW__REPL_KEY_LEN, v, sizeof v);
        rc = tw__db_write(r->db, r->b);
    }
    tw__db_batch_free(r->b);
    tw__db_close(r->db);
    close(lockfd);
    return rc;
}

int tw_store_restore(const char *dir, uint64_t set, tw_store_read_fn *fn,
                     void *ctx, uint64_t *lsn)
{
    struct restore r = {.in = {fn, ctx, TW__FNV_INIT}};
    int rc;

    if (!dir || !fn)
        return -EINVAL;
    rc = take(&r.in, r.h, sizeof r.h, true);
    if (rc == -EBADMSG || (rc == 0 && memcmp(r.h, MAGIC, 4) != 0))
        return -EBADMSG;
    if (rc != 0)
        return rc;
    if (set && tw__get_be64(r.h + 4) != set)
        return -EXDEV;
    rc = restore_into(&r, dir);
    if (rc == 0 && lsn)
        *lsn = tw__get_be64(r.h + 20);
    return rc;
}
