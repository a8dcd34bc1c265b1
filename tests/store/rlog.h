/*
 * A change log in memory for the replication tests (tests/store/
 * test_changelog.c, test_follower.c, test_snapshot.c): the records a
 * leader hands to cfg.log, copied in order, and helpers to apply them to a
 * follower and to compare two stores' timers. The real log (NATS
 * JetStream) is tests/store/replica/.
 */
#ifndef TESTS_STORE_RLOG_H
#define TESTS_STORE_RLOG_H

#include "st.h"

#define RLOG_MAX 4096

struct rlog {
    pthread_mutex_t mu;
    int fail; /* log() returns it when not 0 */
    size_t n;
    struct {
        struct tw_store_log_rec h;
        unsigned char *data;
    } r[RLOG_MAX];
    struct st_rec *rec; /* done_n seen at each hand-off, when set */
    size_t done_seen[RLOG_MAX];
};

static inline void rlog_init(struct rlog *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
}

static inline void rlog_fini(struct rlog *l)
{
    for (size_t i = 0; i < l->n && i < RLOG_MAX; i++)
        free(l->r[i].data);
}

static inline int rlog_fn(struct tw_store *s, const struct tw_store_log_rec *h,
                          void *arg)
{
    struct rlog *l = arg;
    int rc;

    (void)s;
    pthread_mutex_lock(&l->mu);
    rc = l->fail;
    if (rc == 0 && l->n < RLOG_MAX) {
        l->r[l->n].h = *h;
        l->r[l->n].data = malloc(h->len);
        memcpy(l->r[l->n].data, h->data, h->len);
        l->r[l->n].h.data = l->r[l->n].data;
        l->done_seen[l->n] = l->rec ? st_get(l->rec, &l->rec->done_n) : 0;
        l->n++;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* From now on log() returns rc (0: takes records again). */
static inline void rlog_fail(struct rlog *l, int rc)
{
    pthread_mutex_lock(&l->mu);
    l->fail = rc;
    pthread_mutex_unlock(&l->mu);
}

static inline size_t rlog_count(struct rlog *l)
{
    size_t n;

    pthread_mutex_lock(&l->mu);
    n = l->n;
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* Apply records [from, to) to f; each must return >= 0. Returns the
 * entries applied. */
static inline int64_t rlog_apply(struct rlog *l, struct tw_store *f,
                                 size_t from, size_t to)
{
    int64_t n = 0;

    for (size_t i = from; i < to; i++) {
        int64_t rc = tw_store_apply(f, l->r[i].data, l->r[i].h.len);

        cr_assert_geq(rc, 0, "apply of record %zu: %lld", i, (long long)rc);
        n += rc;
    }
    return n;
}

/* A leader's config: st_open_cfg() sets deliver; lease and watermark long
 * enough not to get in the way unless a test shortens them. */
static inline void rlog_cfg(struct tw_store_config *cfg, struct rlog *l)
{
    tw_store_config_init(cfg);
    cfg->log = rlog_fn;
    cfg->log_arg = l;
    cfg->log_sync = true;
    cfg->lease_ns = UINT64_C(60000000000);
    cfg->watermark_ns = UINT64_C(30000000000);
}

/* A follower in dir. */
static inline struct tw_store *rlog_follower(const char *dir, struct st_rec *r,
                                             struct rlog *promoted_log)
{
    struct tw_store_config cfg;

    tw_store_config_init(&cfg);
    cfg.follower = true;
    if (promoted_log) {
        cfg.log = rlog_fn;
        cfg.log_arg = promoted_log;
        cfg.log_sync = true;
    }
    return st_open_cfg(dir, r, &cfg);
}

/* Every timer of a closed store in dir, in key order. */
struct rlog_dump {
    size_t n;
    struct tw_store_id id[ST_MAX];
    size_t len[ST_MAX];
    unsigned char first[ST_MAX]; /* first payload byte */
};

static inline int rlog_dump_visit(struct tw_store_id id, const void *p,
                                  size_t len, void *ctx)
{
    struct rlog_dump *d = ctx;

    if (d->n < ST_MAX) {
        d->id[d->n] = id;
        d->len[d->n] = len;
        d->first[d->n] = len ? *(const unsigned char *)p : 0;
    }
    d->n++;
    return 0;
}

static inline void rlog_dump(const char *dir, struct rlog_dump *d)
{
    memset(d, 0, sizeof *d);
    cr_assert_geq(tw_store_scan(dir, rlog_dump_visit, d), 0);
}

static inline void rlog_same(const struct rlog_dump *a,
                             const struct rlog_dump *b)
{
    cr_assert_eq(a->n, b->n, "%zu timers against %zu", a->n, b->n);
    for (size_t i = 0; i < a->n && i < ST_MAX; i++) {
        cr_assert_eq(a->id[i].deadline_ns, b->id[i].deadline_ns);
        cr_assert_eq(a->id[i].seq, b->id[i].seq);
        cr_assert_eq(a->len[i], b->len[i]);
        cr_assert_eq(a->first[i], b->first[i]);
    }
}

/*
 * A record of the change log made by hand, from the format's description
 * (the top of lib/store/repl.h), not by the library's encoder: a header
 * "TWL1" set epoch first_lsn count(4) sum, then entries kind deadline seq
 * [len(2) payload], big-endian, sum FNV-1a 64 over the entries. Entries
 * (or any bytes) are appended, then rlog_forge_seal() writes the header
 * with whatever count the test claims.
 */
#define RLOG_FORGE_HDR 40

struct rlog_forge {
    unsigned char b[8192];
    size_t len;
};

static inline void rlog_put_be(unsigned char *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static inline void rlog_forge_init(struct rlog_forge *f)
{
    memset(f, 0, sizeof *f);
    f->len = RLOG_FORGE_HDR;
}

static inline void rlog_forge_bytes(struct rlog_forge *f, const void *p,
                                    size_t n)
{
    cr_assert_leq(f->len + n, sizeof f->b);
    memcpy(f->b + f->len, p, n);
    f->len += n;
}

/* One entry; a schedule's length and payload follow when kind is 1. */
static inline void rlog_forge_entry(struct rlog_forge *f, int kind,
                                    uint64_t deadline, uint64_t seq,
                                    const void *payload, size_t len)
{
    unsigned char e[19];

    e[0] = (unsigned char)kind;
    rlog_put_be(e + 1, deadline, 8);
    rlog_put_be(e + 9, seq, 8);
    rlog_put_be(e + 17, len, 2);
    rlog_forge_bytes(f, e, kind == TW_STORE_LOG_SCHEDULE ? 19 : 17);
    if (kind == TW_STORE_LOG_SCHEDULE && len)
        rlog_forge_bytes(f, payload, len);
}

/* The header, for count entries from first_lsn; the record's length. */
static inline size_t rlog_forge_seal(struct rlog_forge *f, uint64_t set,
                                     uint64_t epoch, uint64_t first_lsn,
                                     uint32_t count)
{
    uint64_t sum = UINT64_C(0xcbf29ce484222325);

    for (size_t i = RLOG_FORGE_HDR; i < f->len; i++)
        sum = (sum ^ f->b[i]) * UINT64_C(0x100000001b3);
    memcpy(f->b, "TWL1", 4);
    rlog_put_be(f->b + 4, set, 8);
    rlog_put_be(f->b + 12, epoch, 8);
    rlog_put_be(f->b + 20, first_lsn, 8);
    rlog_put_be(f->b + 28, count, 4);
    rlog_put_be(f->b + 32, sum, 8);
    return f->len;
}

#endif
