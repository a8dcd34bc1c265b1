/*
 * store.c: open (the directory, the database, recovery), the worker
 * thread, close, and tw_store_scan().
 *
 * Recovery is no separate pass: RocksDB replays its write-ahead log when
 * the database opens, and the window starts empty at key zero, so the
 * worker's first load reads the oldest timers first; those overdue go
 * straight to the due queue, in key order, and out at deliver_rate. The
 * time to the first delivery is RocksDB's open plus one read of the first
 * window_max keys, whatever the backlog.
 *
 * The worker loops: commit a batch when one is ready (full, old enough,
 * asked for by a sync, or the store closing), otherwise load, advance and
 * deliver (window.c), then sleep on work_cv until the first of the batch's
 * time bound, the window's next work, or a producer's signal.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reserved.h"
#include "store.h"

/* The store whose worker this thread is, if any: set by the worker itself,
 * so no other thread ever reads what it writes. */
static _Thread_local const struct tw_store *current;

bool tw__on_worker(const struct tw_store *s)
{
    return current == s;
}

void tw_store_config_init(struct tw_store_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->commit_ns = TW_STORE_DEFAULT_COMMIT_NS;
    cfg->commit_ops = TW_STORE_DEFAULT_COMMIT_OPS;
    cfg->window_ns = TW_STORE_DEFAULT_WINDOW_NS;
    cfg->window_max = TW_STORE_DEFAULT_WINDOW_MAX;
    cfg->deliver_rate = TW_STORE_DEFAULT_RATE;
    cfg->queue_max = TW_STORE_DEFAULT_QUEUE_MAX;
}

static bool config_ok(const struct tw_store_config *c)
{
    return c && !c->deliver == c->polled && c->commit_ns && c->commit_ops &&
           c->window_ns && c->window_max >= 16 && c->queue_max &&
           tw__reserved_zero(c->reserved);
}

/* Under s->mu: must the queue's batch be committed now? */
static bool batch_ready(const struct tw_store *s, uint64_t mono)
{
    return s->qlen > 0 &&
           (s->closing || s->err || s->qlen >= s->cfg.commit_ops ||
            s->flush_upto > s->finished ||
            mono - s->q_first_ns >= s->cfg.commit_ns);
}

/* Under s->mu: take up to commit_ops operations off the queue's head into
 * the worker's batch array. Returns how many. */
static size_t take_batch(struct tw_store *s)
{
    size_t n = s->qlen < s->cfg.commit_ops ? s->qlen : s->cfg.commit_ops;

    memcpy(s->wq, s->q, n * sizeof *s->q);
    memmove(s->q, s->q + n, (s->qlen - n) * sizeof *s->q);
    s->qlen -= n;
    s->q_first_ns = tw__mono_ns(); /* the rest waited long enough already */
    return n;
}

static void commit_one(struct tw_store *s)
{
    size_t n = take_batch(s);
    uint64_t first = s->finished;
    int rc;

    pthread_cond_broadcast(&s->space_cv);
    pthread_mutex_unlock(&s->mu);
    rc = tw__commit(s, s->wq, n);
    pthread_mutex_lock(&s->mu);
    if (rc != 0 && !s->err) {
        s->err = rc;
        s->fail_at = first;
    }
    s->finished += n;
    tw__stat_set(&s->stats.finished, s->finished);
    pthread_cond_broadcast(&s->done_cv);
}

static void sleep_until_work(struct tw_store *s, uint64_t wait)
{
    uint64_t mono = tw__mono_ns();
    struct timespec ts;

    if (s->qlen > 0) {
        uint64_t left = s->q_first_ns + s->cfg.commit_ns - mono;

        wait = left < wait ? left : wait;
    }
    if (wait == 0)
        return;
    if (wait == UINT64_MAX) {
        pthread_cond_wait(&s->work_cv, &s->mu);
        return;
    }
    mono += wait;
    ts.tv_sec = (time_t)(mono / 1000000000u);
    ts.tv_nsec = (long)(mono % 1000000000u);
    pthread_cond_timedwait(&s->work_cv, &s->mu, &ts);
}

/* The worker's turn when no batch is ready: replication's heartbeat
 * (changelog.c), then the window's deliveries and loads (window.c); the ns
 * it may sleep. Composed here so that neither file calls the other. */
static uint64_t worker_step(struct tw_store *s)
{
    uint64_t wait, step;

    if (!tw__repl_step(s, &wait))
        return UINT64_MAX;
    step = tw__window_step(s);
    return step < wait ? step : wait;
}

static void *worker_main(void *arg)
{
    struct tw_store *s = arg;

    current = s;
    pthread_mutex_lock(&s->mu);
    while (!(s->closing && s->qlen == 0)) {
        uint64_t wait;
        int err;

        if (batch_ready(s, tw__mono_ns())) {
            commit_one(s);
            continue;
        }
        err = s->err; /* tw_store_fence() sets it from any thread */
        pthread_mutex_unlock(&s->mu);
        wait = err ? UINT64_MAX : worker_step(s);
        pthread_mutex_lock(&s->mu);
        if (!batch_ready(s, tw__mono_ns()) && !s->closing)
            sleep_until_work(s, wait);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static bool db_empty(struct tw__db *db)
{
    struct tw__db_iter *it = tw__db_iter_new(db, "", 0);
    bool empty = it && !tw__db_iter_valid(it) && tw__db_iter_error(it) == 0;

    tw__db_iter_free(it);
    return empty;
}

/* The sequence number to start from (the high-water mark of the last
 * commit, so an id is never handed out twice in the directory's life) and
 * the number of timers held, both from the 'M' record. */
static int read_seq(struct tw_store *s, bool created)
{
    unsigned char v[TW__MARK_LEN];
    size_t vl = sizeof v;
    uint64_t count;
    int rc = tw__db_get(s->db, tw__mark_key, TW__MARK_KEY_LEN, v, &vl);

    if (rc < 0)
        return rc;
    if (rc == 0) {
        /* A new database gets its mark at once. One without it that holds
         * any record is some other program's RocksDB; an empty one is ours,
         * its creator killed before it wrote the mark. */
        if (!created && !db_empty(s->db))
            return -EBADMSG;
        s->next_seq = 1;
        tw__mark_encode(v, 1, 0);
        tw__db_batch_put(s->batch, tw__mark_key, TW__MARK_KEY_LEN, v, sizeof v);
        rc = tw__db_write(s->db, s->batch);
        tw__db_batch_clear(s->batch);
        return rc;
    }
    rc = tw__mark_decode(v, vl, &s->next_seq, &count);
    atomic_store(&s->count, count);
    return rc;
}

/* The recovered high-water mark against the witness's (witness.c): below
 * it, the log lost commits that had been synced. */
static int check_witness(uint64_t next_seq, uint64_t witnessed)
{
    return next_seq < witnessed ? -EBADMSG : 0;
}

static int sync_init(struct tw_store *s)
{
    pthread_condattr_t ca;

    if (pthread_condattr_init(&ca) ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC))
        return -ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, &ca);
    pthread_cond_init(&s->done_cv, NULL);
    pthread_cond_init(&s->space_cv, NULL);
    pthread_condattr_destroy(&ca);
    return 0;
}

/* Everything open() acquired, in reverse; safe on a partial open. */
static void release(struct tw_store *s)
{
    tw__window_fini(s);
    tw__repl_close(s);
    tw__poll_fini(s);
    tw__db_batch_free(s->batch);
    tw__db_close(s->db);
    tw__witness_close(&s->witness);
    if (s->lockfd >= 0)
        close(s->lockfd); /* drops the lock */
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_cond_destroy(&s->space_cv);
    if (s->q)
        tw_free(s->q, s->qcap * sizeof *s->q);
    if (s->wq)
        tw_free(s->wq, s->cfg.commit_ops * sizeof *s->wq);
    if (s->writes)
        tw_free(s->writes, s->cfg.commit_ops * sizeof *s->writes);
    tw__strfree(s->dir);
    tw_free(s, sizeof *s);
}

static int open_parts(struct tw_store *s, const char *dir)
{
    char *path;
    bool create = false;
    int rc = tw__dir_open(dir, &s->lockfd, &create);

    if (rc != 0)
        return rc;
    path = tw__dir_db_path(dir);
    s->dir = tw__strdup(dir);
    s->batch = tw__db_batch_new();
    s->wq = tw_alloc(s->cfg.commit_ops * sizeof *s->wq);
    s->writes = tw_alloc(s->cfg.commit_ops * sizeof *s->writes);
    if (!path || !s->dir || !s->batch || !s->wq || !s->writes) {
        tw__strfree(path);
        return -ENOMEM;
    }
    rc = tw__witness_open(&s->witness, dir);
    if (rc == 0)
        rc = tw__db_open(path, create, &s->db);
    tw__strfree(path);
    if (rc == 0)
        rc = read_seq(s, create);
    if (rc == 0)
        rc = check_witness(s->next_seq, s->witness.written);
    if (rc == 0)
        rc = tw__repl_open(s); /* replication: the 'R' record */
    return rc ? rc : tw__window_init(s);
}

struct tw_store *tw_store_open(const char *dir,
                               const struct tw_store_config *cfg, int *err)
{
    struct tw_store *s;
    int rc = -EINVAL;

    if (!dir || !config_ok(cfg) || !(s = tw__zalloc(sizeof *s))) {
        if (err)
            *err = dir && config_ok(cfg) ? -ENOMEM : -EINVAL;
        return NULL;
    }
    s->cfg = *cfg;
    s->fork_gen = tw__store_fork_watch();
    s->lockfd = -1;
    s->evfd = -1;
    s->witness.fd = -1;
    rc = sync_init(s);
    if (rc == 0)
        rc = tw__poll_init(s);
    if (rc == 0)
        rc = open_parts(s, dir);
    if (rc == 0 && pthread_create(&s->worker, NULL, worker_main, s) != 0)
        rc = -EAGAIN;
    if (rc != 0) {
        release(s);
        s = NULL;
    }
    if (err)
        *err = rc;
    return s;
}

int tw_store_close(struct tw_store *s)
{
    int rc;

    if (!s)
        return 0;
    if (tw__forked(s))
        return -ECHILD; /* the parent's: fork.c */
    if (tw__on_worker(s))
        return -EDEADLK;
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_cond_signal(&s->work_cv);
    pthread_cond_broadcast(&s->space_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
    rc = s->err;
    release(s);
    return rc;
}

/* The scan's check of the witness: the 'M' record against dir/DURABLE
 * (db NULL: the database does not exist yet). */
static int scan_witness(struct tw__db *db, const char *dir)
{
    unsigned char v[TW__MARK_LEN];
    size_t vl = sizeof v;
    uint64_t witnessed, next_seq = 1, count;
    int rc = tw__witness_read(dir, &witnessed);

    if (rc == 0 && db)
        rc = tw__db_get(db, tw__mark_key, TW__MARK_KEY_LEN, v, &vl);
    if (rc == 1) /* else no 'M': a database about to be made, mark 1 */
        rc = tw__mark_decode(v, vl, &next_seq, &count);
    return rc < 0 ? rc : check_witness(next_seq, witnessed);
}

/* A store opened for reading only: the directory's checks and lock, the
 * database, and nothing of the worker's. */
int64_t tw_store_scan(const char *dir, tw_store_visit_fn *fn, void *ctx)
{
    unsigned char low[TW__KEY_MIN_LEN];
    struct tw__db_iter *it;
    struct tw__db *db = NULL;
    char *path;
    bool create = false;
    struct stat st;
    int64_t n = 0;
    int rc, lockfd = -1;

    if (!dir || !fn)
        return -EINVAL;
    if (stat(dir, &st) != 0)
        return -errno;
    rc = tw__dir_open(dir, &lockfd, &create);
    if (rc != 0)
        return rc;
    path = tw__dir_db_path(dir);
    rc = !path ? -ENOMEM : create ? 0 : tw__db_open(path, false, &db);
    tw__strfree(path);
    if (rc == 0)
        rc = scan_witness(db, dir);
    it = db && rc == 0 ? tw__db_iter_new(db, low, tw__key_first(low)) : NULL;
    for (; it && tw__db_iter_valid(it); tw__db_iter_next(it)) {
        size_t kl, vl;
        const void *k = tw__db_iter_key(it, &kl);
        const void *v = tw__db_iter_value(it, &vl);
        struct tw_store_id id;

        rc = tw__key_decode(k, kl, &id);
        if (rc <= 0)
            break;
        n++; /* visited, the one that stops the scan included */
        if (fn(id, v, vl, ctx))
            break;
    }
    if (it) {
        if (rc >= 0)
            rc = tw__db_iter_error(it);
        tw__db_iter_free(it);
    }
    tw__db_close(db);
    close(lockfd);
    return rc ? rc : n;
}
