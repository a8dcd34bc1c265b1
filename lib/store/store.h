/*
 * lib/store/: the durable timer store (timewheel/store.h). Private header.
 *
 * Files, one concept each:
 *   db.c      the one seam over the database (RocksDB): open, a synced
 *             write of a batch, a point read, an ordered iterator, and the
 *             translation of its errors into negative errno codes. Nothing
 *             else includes <rocksdb/c.h>.
 *   dir.c     the directory: its lock file, its marker, telling a store
 *             from a foreign or damaged directory.
 *   store.c   configuration, open and recovery, close, the worker thread.
 *   ops.c     the operation queue that any thread feeds: schedule, cancel,
 *             ack, sync; back-pressure.
 *   commit.c  group commit: a batch of operations to the database in one
 *             synced write, then to memory, then the done callbacks.
 *   table.c   the id table: every timer in memory by id (open addressing).
 *   window.c  the in-memory window: loading from disk in deadline order,
 *             the core wheel, the due queue, rate-bounded delivery.
 *   poll.c    polled delivery: a FIFO of copies and an eventfd for an
 *             event loop's thread (cfg.polled).
 *   changelog.c, follower.c, snapshot.c  replication: the change log,
 *             the follower and its promotion, snapshots (their index and
 *             formats: repl.h).
 *
 * On disk (RocksDB, default column family), keys sort as time does:
 *   'T' deadline(8, big-endian) seq(8, big-endian) -> payload bytes
 *   'M'                   -> next seq, timers held (8 + 8, big-endian)
 *
 * The window's invariant: every timer on disk whose key is below
 * window_end is in memory (in the table), and so is every timer delivered
 * and not yet acknowledged. A timer in memory is in one state:
 *   NEW        in the batch being committed; not in the wheel
 *   ARMED      in the core wheel, its deadline ahead
 *   DUE        in the due queue, waiting for its turn (rate, order)
 *   DELIVERED  handed to the callback (or queued for the poller, a copy);
 *              waiting for an ack
 * A cancel or ack removes it from whichever it is in once durable.
 */
#ifndef TW_STORE_PRIVATE_H
#define TW_STORE_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clockns.h"
#include "repl.h"
#include "timewheel/core.h"
#include "timewheel/store.h"

#define TW__KEY_LEN 17 /* 'T', deadline, seq */

/* ---- db.c ------------------------------------------------------------------
 */
struct tw__db;
struct tw__db_batch;
struct tw__db_iter;

int tw__db_open(const char *path, bool create, struct tw__db **out);
void tw__db_close(struct tw__db *db);
struct tw__db_batch *tw__db_batch_new(void);
void tw__db_batch_free(struct tw__db_batch *b);
void tw__db_batch_clear(struct tw__db_batch *b);
void tw__db_batch_put(struct tw__db_batch *b, const void *k, size_t kl,
                      const void *v, size_t vl);
void tw__db_batch_del(struct tw__db_batch *b, const void *k, size_t kl);
/* Write b and sync it to disk. 0 or a negative errno. */
int tw__db_write(struct tw__db *db, struct tw__db_batch *b);
/* Write b without a sync (a follower's apply: the log holds it). */
int tw__db_write_nosync(struct tw__db *db, struct tw__db_batch *b);
/* 1 and up to *vl bytes of the value into v (*vl set to its length), 0 if
 * absent, or a negative errno. */
int tw__db_get(struct tw__db *db, const void *k, size_t kl, void *v,
               size_t *vl);
/* An iterator positioned at the first key >= k. */
struct tw__db_iter *tw__db_iter_new(struct tw__db *db, const void *k,
                                    size_t kl);
bool tw__db_iter_valid(struct tw__db_iter *it);
const void *tw__db_iter_key(struct tw__db_iter *it, size_t *kl);
const void *tw__db_iter_value(struct tw__db_iter *it, size_t *vl);
void tw__db_iter_next(struct tw__db_iter *it);
/* The iterator's error once it is no longer valid: 0 or a negative errno. */
int tw__db_iter_error(struct tw__db_iter *it);
void tw__db_iter_free(struct tw__db_iter *it);
/* A database error message as a negative errno. */
int tw__db_errno(const char *msg);

/* ---- dir.c -----------------------------------------------------------------
 */
/* Check or create the store in dir and take its lock: the lock's fd in
 * *lockfd, whether the database must be created in *create. */
int tw__dir_open(const char *dir, int *lockfd, bool *create);
/* The database's folder inside dir (a new string, free() it). */
char *tw__dir_db_path(const char *dir);

/* ---- keys ------------------------------------------------------------------
 */
static inline void tw__put_be64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static inline uint64_t tw__get_be64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static inline void tw__key(unsigned char k[TW__KEY_LEN], struct tw_store_id id)
{
    k[0] = 'T';
    tw__put_be64(k + 1, id.deadline_ns);
    tw__put_be64(k + 9, id.seq);
}

static inline int tw__id_cmp(struct tw_store_id a, struct tw_store_id b)
{
    if (a.deadline_ns != b.deadline_ns)
        return a.deadline_ns < b.deadline_ns ? -1 : 1;
    return a.seq < b.seq ? -1 : a.seq > b.seq;
}

/* ---- memory ----------------------------------------------------------------
 */
enum tw__state { TW__NEW, TW__ARMED, TW__DUE, TW__DELIVERED };

struct tw__entry {
    struct tw_timer timer; /* in the wheel while ARMED */
    union {
        struct tw__entry *next;  /* the due queue's link while DUE */
        struct tw__polled *copy; /* DELIVERED, polled: its copy waiting
                                  * for the loop, or NULL (poll.c) */
    };
    struct tw_store_id id;
    uint8_t state; /* enum tw__state */
    bool dead;     /* cancelled: leaves when its batch is durable */
    uint16_t len;
    unsigned char payload[];
};

struct tw__table {
    struct tw__entry **slot;
    size_t mask; /* capacity - 1, a power of two */
    size_t used;
};

int tw__table_init(struct tw__table *t, size_t max);
void tw__table_fini(struct tw__table *t);
struct tw__entry *tw__table_find(const struct tw__table *t,
                                 struct tw_store_id id);
int tw__table_insert(struct tw__table *t, struct tw__entry *e);
void tw__table_remove(struct tw__table *t, struct tw__entry *e);

struct tw__entry *tw__entry_new(struct tw_store_id id, const void *payload,
                                size_t len);
void tw__entry_free(struct tw__entry *e);

/* ---- the store -------------------------------------------------------------
 */
enum tw__op_kind { TW__OP_SCHEDULE, TW__OP_CANCEL, TW__OP_ACK };

struct tw__op {
    uint8_t kind;
    int err;
    struct tw_store_id id;
    tw_store_done_fn *done;
    void *arg;
    struct tw__entry *e; /* schedule: the new timer; cancel, ack: the
                          * target in memory that leaves, or NULL */
};

/* A put or delete of a batch, before the batch is sorted (commit.c). */
struct tw__write {
    struct tw_store_id id;
    uint32_t idx; /* the operation's place in the batch */
    bool del;
};

struct tw_store {
    struct tw_store_config cfg;
    char *dir;
    int lockfd;
    struct tw__db *db;
    pthread_t worker;

    /* Shared: under mu. */
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* the worker: operations, flush, close */
    pthread_cond_t done_cv;  /* sync waiters: a batch finished */
    pthread_cond_t space_cv; /* producers: the queue has room */
    struct tw__op *q;
    size_t qlen, qcap;
    uint64_t q_first_ns; /* CLOCK_MONOTONIC when the queue's first op came */
    uint64_t next_seq;   /* the next id's sequence number */
    uint64_t accepted;   /* operations accepted so far */
    uint64_t finished;   /* of which committed or failed */
    uint64_t flush_upto; /* sync asked that ops before this close now */
    uint64_t fail_at;    /* ops from this index on failed (when err) */
    int err;             /* sticky failure, 0 while healthy */
    bool closing;
    _Atomic uint64_t count; /* tw_store_count() */

    /* The worker's alone. */
    struct tw__op *wq; /* the batch being committed */
    size_t wqcap;
    struct tw__db_batch *batch;
    struct tw__write *writes; /* commit_ops of them */
    size_t nwrites;
    uint64_t batch_count; /* the count once the batch is durable */
    struct tw_wheel *wheel;
    struct tw__table table;
    struct tw__entry *due_head, *due_tail;
    struct tw_store_id window_end;
    size_t loaded;      /* entries in memory in ARMED, DUE or DELIVERED */
    double tokens;      /* deliveries the rate allows now */
    uint64_t tokens_at; /* CLOCK_MONOTONIC of the last refill */

    /* Replication (repl.h: changelog.c, follower.c, snapshot.c). */
    struct tw__repl repl;

    /* Polled delivery (poll.c): the FIFO under poll_mu, and its eventfd. */
    pthread_mutex_t poll_mu;
    struct tw__polled *polled_head, *polled_tail;
    int evfd;
};

bool tw__on_worker(const struct tw_store *s);

/* ops.c */
int tw__ops_reserve(struct tw_store *s, size_t n);

/* commit.c: commit ops[0..n) (the worker's batch); sets each op's err,
 * runs the done callbacks; returns 0 or the write's failure. */
int tw__commit(struct tw_store *s, struct tw__op *ops, size_t n);

/* poll.c: set up and release polled delivery (no-ops on a store that
 * calls a function); queue a copy of e's delivery, false if no memory. */
int tw__poll_init(struct tw_store *s);
void tw__poll_fini(struct tw_store *s);
bool tw__poll_push(struct tw_store *s, struct tw__entry *e);
/* e is leaving (a durable cancel or ack): its copy, if still waiting, is
 * withdrawn, so the loop never gets it. */
void tw__poll_withdraw(struct tw_store *s, struct tw__entry *e);

/* window.c */
int tw__window_init(struct tw_store *s);
void tw__window_fini(struct tw_store *s);
/* Put a durable timer of memory where it belongs (wheel or due queue). */
void tw__window_arm(struct tw_store *s, struct tw__entry *e, uint64_t now);
/* Take a timer that is leaving (cancel, ack) out of wherever it is. */
void tw__window_drop(struct tw_store *s, struct tw__entry *e);
/* Load, advance, deliver: the worker's turn; returns the ns it may sleep
 * before it has more to do (UINT64_MAX: until woken). */
uint64_t tw__window_step(struct tw_store *s);

#endif /* TW_STORE_PRIVATE_H */
