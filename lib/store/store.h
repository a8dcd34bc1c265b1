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
 *   fork.c    what a child of fork() may do with an inherited store:
 *             nothing but -ECHILD (a generation bumped by pthread_atfork).
 *   metrics.c tw_store_metrics() and its Prometheus text: figures kept
 *             where they change, read without a lock.
 *   witness.c dir/DURABLE, how far the durable commits reached, kept
 *             outside the database: a log that lost synced commits is
 *             reported at the next open.
 *
 *   key.c     the records' layout on disk, one codec (key.h): keys sort
 *             as time does, 'T' deadline seq -> payload, and the 'M'
 *             mark (next seq, timers held).
 *
 * On disk (RocksDB, default column family): key.h.
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
#include <string.h>

#include "clockns.h"
#include "key.h"
#include "repl.h"
#include "timewheel/core.h"
#include "timewheel/store.h"

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
/* The database's folder inside dir (a new string: tw__strfree()). */
char *tw__dir_db_path(const char *dir);

/* ---- witness.c -------------------------------------------------------------
 */
struct tw__witness {
    int fd;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t want;    /* the latest mark noted (under mu) */
    uint64_t written; /* the latest mark on disk (the thread's) */
    bool stop, inited, started;
};

/* The mark in dir/DURABLE, 0 if there is none; -EBADMSG if damaged. */
int tw__witness_read(const char *dir, uint64_t *seq);
/* Open (creating) dir/DURABLE, read its mark into w->written, start the
 * thread that writes the marks noted. */
int tw__witness_open(struct tw__witness *w, const char *dir);
/* A commit that set next_seq to seq is durable. */
void tw__witness_note(struct tw__witness *w, uint64_t seq);
/* Write the last mark noted, stop the thread, close; safe on a partial
 * open. */
void tw__witness_close(struct tw__witness *w);

/* ---- memory ----------------------------------------------------------------
 *
 * Every block the store allocates for itself comes from the library's
 * allocator (tw_alloc(), tw_free() with the size asked; tw_set_allocator()
 * routes them), as every layer's do. RocksDB's own allocations, inside
 * the database, are RocksDB's (its C++ operator new).
 */
static inline void *tw__zalloc(size_t n)
{
    void *p = tw_alloc(n);

    if (p)
        memset(p, 0, n);
    return p;
}

/* A copy of a string, given back with tw__strfree(). */
static inline char *tw__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tw_alloc(n);

    if (p)
        memcpy(p, s, n);
    return p;
}

static inline void tw__strfree(char *s)
{
    if (s)
        tw_free(s, strlen(s) + 1);
}

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

/* The figures of tw_store_metrics() (metrics.c). Each has one writer at a
 * time (the worker, or a producer under mu), which stores with a relaxed
 * load and store (tw__stat_add()), and readers load: no lock, no atomic
 * read-modify-write on the hot paths. */
struct tw__stats {
    _Atomic uint64_t accepted, finished; /* under mu: s->accepted, ... */
    _Atomic uint64_t commits, committed_ops, last_batch_ops;
    _Atomic uint64_t commit_ns, last_commit_ns, max_commit_ns;
    _Atomic uint64_t sync_failures;
    _Atomic uint64_t deliveries, unacked, in_memory;
};

static inline void tw__stat_set(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

static inline void tw__stat_add(_Atomic uint64_t *c, int64_t n)
{
    tw__stat_set(c,
                 atomic_load_explicit(c, memory_order_relaxed) + (uint64_t)n);
}

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
    struct tw__witness witness;
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
    unsigned fork_gen;      /* tw__fork_gen at the open (fork.c) */
    _Atomic uint64_t count; /* tw_store_count() */
    struct tw__stats stats; /* tw_store_metrics() */

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

/* fork.c: the fork generation now (watching for forks from the first
 * call on); a store notes it at its open. */
extern _Atomic unsigned tw__fork_gen;
unsigned tw__fork_watch(void);

/* Is this a child of fork() holding its parent's store? */
static inline bool tw__forked(const struct tw_store *s)
{
    return atomic_load_explicit(&tw__fork_gen, memory_order_relaxed) !=
           s->fork_gen;
}

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
